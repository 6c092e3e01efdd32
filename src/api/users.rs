//! Users, two-factor and passwords.

use edge_api::{OtpPairing, OtpSeed, OtpSettings, Password, PasswordResetCompletion, User, UserInput, UserPage};
use gloo_net::http::{Request, RequestBuilder};

use super::*;

fn users(customer: &str) -> String {
    format!("{}/users", base(customer))
}

/// Percent-encodes a query parameter value.
pub fn encode(value: &str) -> String {
    String::from(js_sys::encode_uri_component(value))
}

pub fn users_url(customer: &str, page: u64, count: u64, search: &str) -> String {
    let mut url = format!("{}?page={page}&count={count}", users(customer));
    if !search.trim().is_empty() {
        url.push_str(&format!("&q={}", encode(search.trim())));
    }
    url
}

/// One user (the API wraps it in an envelope).
pub async fn get_user(customer: &str, id: &str) -> ApiResult<User> {
    let page: UserPage = send_json(Request::get(&format!("{}/{id}", users(customer)))).await?;
    page.items.into_iter().next().ok_or_else(|| ApiError::unreadable(200, "the envelope holds no user"))
}

pub async fn create_user(customer: &str, input: &UserInput) -> ApiResult<User> {
    send_json(with_json(Request::post(&users(customer)), input)?).await
}

pub async fn update_user(customer: &str, id: &str, input: &UserInput) -> ApiResult<User> {
    send_json(with_json(Request::put(&format!("{}/{id}", users(customer))), input)?).await
}

pub async fn delete_user(customer: &str, id: &str) -> ApiResult<()> {
    send_empty(Request::delete(&format!("{}/{id}", users(customer)))).await
}

/// Administrator: invalidate the user's password and e-mail them a reset link.
pub async fn reset_password(customer: &str, id: &str) -> ApiResult<()> {
    send_empty(Request::post(&format!("{}/{id}/password/resets", users(customer)))).await
}

/// Administrator: turn a user's two-factor authentication off. One's own needs `confirm` (the password and a
/// current code): the server refuses a session alone for it.
pub async fn disable_otp(customer: &str, id: &str, confirm: Option<&Confirm>) -> ApiResult<OtpSettings> {
    let request = Request::delete(&format!("{}/{id}/otp/pairing", users(customer)));
    match confirm {
        Some(c) => send_confirmed(c.apply(request).build().map_err(ApiError::network)?).await,
        None => send_json(request).await,
    }
}

/// Credentials that confirm an operation on one's own password or two-factor: the password, and the one-time
/// code when two-factor is on.
#[derive(Debug, Clone)]
pub struct Confirm {
    pub username: String,
    pub password: String,
    pub otp: Option<String>,
}

impl Confirm {
    fn apply(&self, request: RequestBuilder) -> RequestBuilder {
        let request = request.header("Authorization", &basic_auth(&self.username, &self.password));
        match &self.otp {
            Some(code) => request.header(edge_api::paths::OTP_HEADER, code),
            None => request,
        }
    }
}

/// Sends a request confirmed with the caller's password: a 401 is a wrong password, not a lost session.
async fn send_confirmed<T: serde::de::DeserializeOwned>(request: gloo_net::http::Request) -> ApiResult<T> {
    let _in_flight = super::InFlight::start();
    decode(request.send().await.map_err(ApiError::network)?).await
}

pub async fn change_password(customer: &str, id: &str, confirm: &Confirm, new_password: &str) -> ApiResult<Password> {
    let body = Password { password: new_password.to_string(), ..Default::default() };
    let request = confirm.apply(Request::put(&format!("{}/{id}/password", users(customer))));
    send_confirmed(request.json(&body).map_err(ApiError::network)?).await
}

pub async fn create_otp_seed(customer: &str, id: &str, confirm: &Confirm) -> ApiResult<OtpSeed> {
    let request = confirm.apply(Request::post(&format!("{}/{id}/otp/seeds", users(customer))));
    send_confirmed(request.build().map_err(ApiError::network)?).await
}

pub async fn pair_otp(customer: &str, id: &str, confirm: &Confirm, pairing: &OtpPairing) -> ApiResult<OtpPairing> {
    let request = confirm.apply(Request::put(&format!("{}/{id}/otp/pairing", users(customer))));
    send_confirmed(request.json(pairing).map_err(ApiError::network)?).await
}

/// Sets a new password with the token of a reset link (no login needed).
pub async fn complete_password_reset(customer: &str, token: &str, password: &str) -> ApiResult<()> {
    let body = PasswordResetCompletion { password: password.to_string() };
    let request = Request::put(&format!("{}/password-resets/{}", base(customer), encode(token)))
        .json(&body)
        .map_err(ApiError::network)?;
    let _in_flight = super::InFlight::start();
    let response = request.send().await.map_err(ApiError::network)?;
    if (200..300).contains(&response.status()) { Ok(()) } else { Err(error_of(response).await) }
}
