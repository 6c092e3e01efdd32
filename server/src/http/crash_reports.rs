//! `POST /_console/errors`: the console reports its own crash (a panic in the browser) to the server's log.
//!
//! The console sends it with `navigator.sendBeacon` from its panic hook, when nothing else of it still runs, so
//! it needs no session: a crash on the login page or right after a session ended is reported too. Being open,
//! it is bounded so that it cannot be used to fill the log: a body of at most [`MAX_BODY_BYTES`], at most
//! [`PER_ADDRESS`] reports a minute per client address (an IPv6 client by its /64) and [`OVERALL`] a minute
//! in all (per replica); beyond that 429 with `Retry-After`, and the log says once per minute how many were
//! dropped. The logged text is cut short and its control characters escaped (no forged log lines).

use std::{collections::HashMap, net::SocketAddr, sync::Mutex};

use axum::{
    body::Bytes,
    extract::{ConnectInfo, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;

use crate::{
    domain::net::throttle_key,
    http::{error::AppError, web},
    state::AppState,
};

/// The path the console posts to (outside the API and outside every customer's addresses: a customer's name
/// has no `_`).
pub const PATH: &str = "/_console/errors";
/// The largest report accepted.
pub const MAX_BODY_BYTES: usize = 4096;
/// Reports a minute from one client address.
pub const PER_ADDRESS: u32 = 5;
/// Reports a minute from everyone.
pub const OVERALL: u32 = 60;
/// Client addresses remembered within a minute; more are counted under the overall limit only.
const ADDRESSES: usize = 10_000;
const WINDOW_MS: i64 = 60_000;
/// The most of a message (and of a path) that is logged.
const LOGGED_CHARS: usize = 2000;

/// What the console sends; every field is optional (a report is never refused for its shape).
#[derive(Deserialize, Default)]
struct Report {
    #[serde(default)]
    message: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    version: String,
}

/// Counts of the current minute.
#[derive(Default)]
pub struct Limiter {
    inner: Mutex<Window>,
}

#[derive(Default)]
struct Window {
    /// Start of the minute counted.
    start: i64,
    overall: u32,
    by_address: HashMap<std::net::IpAddr, u32>,
    dropped: u64,
}

impl Limiter {
    /// Counts a report from `addr` at `now_ms`: `Ok` to log it, or the seconds until the next minute.
    fn admit(&self, addr: std::net::IpAddr, now_ms: i64) -> Result<(), u64> {
        let mut w = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let minute = now_ms - now_ms.rem_euclid(WINDOW_MS);
        if minute != w.start {
            if w.dropped > 0 {
                tracing::warn!(dropped = w.dropped, "console error reports over the limit were not logged");
            }
            *w = Window { start: minute, ..Window::default() };
        }
        let retry = || ((minute + WINDOW_MS - now_ms) as u64).div_ceil(1000).max(1);
        let known = w.by_address.len() < ADDRESSES || w.by_address.contains_key(&addr);
        let from_addr = if known { w.by_address.get(&addr).copied().unwrap_or(0) } else { 0 };
        if w.overall >= OVERALL || from_addr >= PER_ADDRESS {
            w.dropped += 1;
            return Err(retry());
        }
        w.overall += 1;
        if known {
            *w.by_address.entry(addr).or_default() += 1;
        }
        Ok(())
    }
}

/// Text safe for one log line: at most [`LOGGED_CHARS`] characters, control characters escaped.
fn loggable(text: &str) -> String {
    text.chars().take(LOGGED_CHARS).flat_map(char::escape_default).collect::<String>()
}

/// Receives one report: 204 when logged, 413 over [`MAX_BODY_BYTES`], 429 over the limits.
pub async fn receive(
    State(state): State<AppState>,
    limiter: axum::Extension<std::sync::Arc<Limiter>>,
    connect: Option<axum::Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if body.len() > MAX_BODY_BYTES {
        return AppError::PayloadTooLarge.into_response();
    }
    let peer = connect
        .map(|axum::Extension(ConnectInfo(a))| a.ip())
        .unwrap_or(std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED));
    let addr = state.settings.trusted_proxies.client_addr(peer, &headers);
    if let Err(secs) = limiter.admit(throttle_key(addr), state.clock.now_ms()) {
        return AppError::TooManyRequests {
            message: "Too many error reports from this address; try again later.".into(),
            retry_after_secs: secs,
        }
        .into_response();
    }
    // sendBeacon sends text/plain: the body is read as JSON whatever its type, and as the message otherwise.
    let report = serde_json::from_slice::<Report>(&body)
        .unwrap_or_else(|_| Report { message: String::from_utf8_lossy(&body).into_owned(), ..Report::default() });
    let agent = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    tracing::error!(
        client = %addr,
        path = %loggable(&web::redact_path(&report.path)),
        version = %loggable(&report.version),
        agent = %loggable(agent),
        message = %loggable(&report.message),
        "the console crashed"
    );
    StatusCode::NO_CONTENT.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_gets_its_share_of_a_minute_and_everyone_the_overall_limit() {
        let l = Limiter::default();
        let a: std::net::IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..PER_ADDRESS {
            assert!(l.admit(a, 1_000).is_ok());
        }
        assert_eq!(l.admit(a, 1_000), Err(59));
        // The next minute starts afresh.
        assert!(l.admit(a, 60_000).is_ok());
        let mut n = 1;
        for i in 0..=255u8 {
            let b = std::net::IpAddr::from([198, 51, 100, i]);
            if l.admit(b, 61_000).is_ok() {
                n += 1;
            }
        }
        assert_eq!(n, OVERALL);
    }

    #[test]
    fn logged_text_is_one_line_and_cut_short() {
        assert_eq!(loggable("a\nb\u{1b}[31m"), "a\\nb\\u{1b}[31m");
        assert_eq!(loggable(&"x".repeat(5000)).len(), LOGGED_CHARS);
    }
}
