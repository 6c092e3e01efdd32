//! Sessions: log in, find the current session, log out.

use base64::Engine;
use edge_api::{Session, SessionList, paths};
use gloo_net::http::Request;

use super::*;

/// The `Authorization` header value for HTTP Basic credentials.
pub fn basic_auth(username: &str, password: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}")))
}

/// Logs in; the server sets the session cookie. `otp` is the one-time password when two-factor is on.
pub async fn create_session(customer: &str, username: &str, password: &str, otp: Option<&str>) -> ApiResult<Session> {
    let mut request =
        Request::post(&format!("{}/sessions", base(customer))).header("Authorization", &basic_auth(username, password));
    if let Some(token) = otp {
        request = request.header(paths::OTP_HEADER, token);
    }
    // Not `send`: a 401 here is a wrong password, not a lost session.
    let _in_flight = super::InFlight::start();
    decode(request.send().await.map_err(ApiError::network)?).await
}

/// The session the browser's cookie holds for `customer`, or `None` when there is no valid one.
pub async fn current_session(customer: &str) -> ApiResult<Option<Session>> {
    let _in_flight = super::InFlight::start();
    let response =
        Request::get(&format!("{}/sessions/current", base(customer))).send().await.map_err(ApiError::network)?;
    match response.status() {
        201 | 200 => response.json::<Session>().await.map(Some).map_err(|e| ApiError::unreadable(201, e)),
        404 | 401 => Ok(None),
        _ => Err(error_of(response).await),
    }
}

/// Keeps the current session alive (PUT on it) and returns it with its new expiry.
pub async fn keep_alive(customer: &str, session_id: &str) -> ApiResult<Session> {
    send_json(Request::put(&format!("{}/sessions/{session_id}", base(customer)))).await
}

/// Logs out: ends the current session and unsets the cookie.
pub async fn delete_current_session(customer: &str) -> ApiResult<()> {
    send_empty(Request::delete(&format!("{}/sessions/current", base(customer)))).await
}

/// The user's own live sessions (references, never ids).
pub async fn own_sessions(customer: &str) -> ApiResult<SessionList> {
    get_json(&format!("{}/sessions", base(customer))).await
}

/// Ends one of the user's own sessions by its reference.
pub async fn end_own_session(customer: &str, reference: &str) -> ApiResult<()> {
    send_empty(Request::delete(&format!("{}/sessions/refs/{}", base(customer), encode(reference)))).await
}
