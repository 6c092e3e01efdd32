//! API tokens: the caller's own (an administrator's view: any user's), made, rolled and revoked.

use edge_api::{ApiToken, TokenInput, TokenPage, paths};
use gloo_net::http::{Request, RequestBuilder};

use super::*;

fn tokens(customer: &str) -> String {
    format!("{}/tokens", base(customer))
}

/// The tokens of `user` (an administrator may name anyone), or the caller's own; the newest 1,000.
pub fn tokens_url(customer: &str, user: Option<&str>) -> String {
    match user {
        Some(u) => format!("{}?count=1000&user={}", tokens(customer), encode(u)),
        None => format!("{}?count=1000", tokens(customer)),
    }
}

pub async fn list_tokens(customer: &str, user: Option<&str>) -> ApiResult<TokenPage> {
    get_json(&tokens_url(customer, user)).await
}

/// With two-factor on, making a token or a secret takes a current code (`X-OTP-Token`).
fn with_code(request: RequestBuilder, otp: Option<&str>) -> RequestBuilder {
    match otp {
        Some(code) => request.header(paths::OTP_HEADER, code),
        None => request,
    }
}

/// Sends a request that may need a one-time code: a 401 is a missing or wrong code, not a lost session.
async fn send_with_code<T: serde::de::DeserializeOwned>(request: gloo_net::http::Request) -> ApiResult<T> {
    let _in_flight = super::InFlight::start();
    decode(request.send().await.map_err(ApiError::network)?).await
}

/// Makes a token of the caller; the answer holds its secret, this once.
pub async fn create_token(customer: &str, input: &TokenInput, otp: Option<&str>) -> ApiResult<ApiToken> {
    send_with_code(with_json(with_code(Request::post(&tokens(customer)), otp), input)?).await
}

/// A new secret for one of the caller's tokens; the answer holds it, this once.
pub async fn roll_token(customer: &str, id: &str, otp: Option<&str>) -> ApiResult<ApiToken> {
    let request = with_code(Request::post(&format!("{}/{}/roll", tokens(customer), encode(id))), otp);
    send_with_code(request.build().map_err(ApiError::network)?).await
}

pub async fn revoke_token(customer: &str, id: &str) -> ApiResult<()> {
    send_empty(Request::delete(&format!("{}/{}", tokens(customer), encode(id)))).await
}
