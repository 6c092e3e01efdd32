//! The typed API client: one async function per operation, edge-api types in and out, one error type.
//! Pages never build URLs or call fetch themselves.

mod alerts;
mod ops;
mod sessions;
mod stats;
mod tokens;
mod users;

use std::{cell::RefCell, rc::Rc};

use edge_api::ErrorBody;
use gloo_net::http::{RequestBuilder, Response};
use serde::de::DeserializeOwned;

pub use alerts::*;
pub use ops::*;
pub use sessions::*;
pub use stats::*;
pub use tokens::*;
pub use users::*;

/// A failed API call: the status (0 when the server could not be reached) and the API's error body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub body: ErrorBody,
}

impl ApiError {
    pub fn kind(&self) -> &str {
        &self.body.kind
    }

    fn network(e: impl std::fmt::Display) -> Self {
        let text = e.to_string();
        if text.contains("AbortError") {
            return ApiError { status: 0, body: ErrorBody::new(CANCELLED, "The request was cancelled.") };
        }
        ApiError {
            status: 0,
            body: ErrorBody::new(
                "network",
                format!("The server could not be reached ({text}). Check your connection."),
            ),
        }
    }

    /// True for a request the console cancelled itself (a superseded read): not a failure to show.
    pub fn is_cancelled(&self) -> bool {
        self.body.kind == CANCELLED
    }

    pub(crate) fn unreadable(status: u16, e: impl std::fmt::Display) -> Self {
        ApiError {
            status,
            body: ErrorBody::new("unreadable_response", format!("The server's answer was unreadable: {e}")),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.body.fmt(f)
    }
}

impl std::error::Error for ApiError {}

pub type ApiResult<T> = Result<T, ApiError>;

const CANCELLED: &str = "cancelled";

/// The command that makes a read from a shell: `curl` with the session cookie as a placeholder (the cookie
/// itself is HttpOnly and never shown), so an administrator can script what the console shows.
pub fn curl(path_and_query: &str) -> String {
    let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
    format!(
        "curl -sS --cookie \"{}=$EDGE_SESSION\" '{origin}{}'",
        edge_api::paths::SESSION_COOKIE,
        path_and_query.replace('\'', "%27")
    )
}

thread_local! {
    static ON_SESSION_LOST: RefCell<Option<Rc<dyn Fn()>>> = const { RefCell::new(None) };
}

/// Registers what to do when an authenticated call answers 401 (the session expired or was ended elsewhere):
/// the app returns to the login page once, instead of every view showing its own error.
pub fn on_session_lost(f: impl Fn() + 'static) {
    ON_SESSION_LOST.with(|cell| *cell.borrow_mut() = Some(Rc::new(f)));
}

fn session_lost() {
    if let Some(f) = ON_SESSION_LOST.with(|cell| cell.borrow().clone()) {
        f();
    }
}

/// The base of every API path of `customer`.
pub fn base(customer: &str) -> String {
    edge_api::paths::base(customer)
}

/// Turns an answer into the expected body, or the API's error.
async fn decode<T: DeserializeOwned>(response: Response) -> ApiResult<T> {
    let status = response.status();
    if (200..300).contains(&status) {
        return response.json::<T>().await.map_err(|e| ApiError::unreadable(status, e));
    }
    Err(error_of(response).await)
}

/// Turns a non-2xx answer into an [`ApiError`], keeping the API's message when the body has one.
async fn error_of(response: Response) -> ApiError {
    let status = response.status();
    let body = response.json::<ErrorBody>().await.unwrap_or_else(|_| {
        ErrorBody::new("http_error", format!("The server answered {status} {}.", response.status_text()))
    });
    ApiError { status, body }
}

/// A request ready to send, with or without a body.
pub enum Sendable {
    Bare(RequestBuilder),
    Built(gloo_net::http::Request),
}

impl From<RequestBuilder> for Sendable {
    fn from(r: RequestBuilder) -> Self {
        Sendable::Bare(r)
    }
}

impl From<gloo_net::http::Request> for Sendable {
    fn from(r: gloo_net::http::Request) -> Self {
        Sendable::Built(r)
    }
}

/// The console's requests under way: sent, and their answer not yet read (or the request dropped). Mirrored to
/// `<html data-requests>`, so that a test can wait until the console has nothing in flight instead of
/// waiting a while.
pub struct InFlight;

thread_local! {
    static IN_FLIGHT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl InFlight {
    pub fn start() -> InFlight {
        Self::count(1);
        InFlight
    }

    fn count(change: isize) {
        let n = IN_FLIGHT.with(|c| {
            c.set(c.get().saturating_add_signed(change));
            c.get()
        });
        if let Some(html) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
            let _ = html.set_attribute("data-requests", &n.to_string());
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        Self::count(-1);
    }
}

/// Sends an authenticated request (the session cookie goes along by itself). A 401 means the session is gone.
async fn send(request: impl Into<Sendable>) -> ApiResult<Response> {
    let response = match request.into() {
        Sendable::Bare(r) => r.send().await,
        Sendable::Built(r) => r.send().await,
    }
    .map_err(ApiError::network)?;
    if response.status() == 401 {
        session_lost();
    }
    Ok(response)
}

/// A request with a JSON body.
fn with_json(request: RequestBuilder, body: &impl serde::Serialize) -> ApiResult<gloo_net::http::Request> {
    request.json(body).map_err(ApiError::network)
}

/// Reads `url` (an address made by one of the `…_url` functions).
pub async fn get_json<T: DeserializeOwned>(url: &str) -> ApiResult<T> {
    send_json(gloo_net::http::Request::get(url)).await
}

async fn send_json<T: DeserializeOwned>(request: impl Into<Sendable>) -> ApiResult<T> {
    let _in_flight = InFlight::start();
    decode(send(request).await?).await
}

/// Sends a request whose success has no body.
async fn send_empty(request: impl Into<Sendable>) -> ApiResult<()> {
    let _in_flight = InFlight::start();
    let response = send(request).await?;
    if (200..300).contains(&response.status()) { Ok(()) } else { Err(error_of(response).await) }
}
