//! What surrounds the API: the console's static files (precompressed) with the client-side-route fallback, JSON answers for
//! every API error (including those produced outside handlers), security headers and request logging.

use axum::{
    Json,
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

use edge_api::limits::{MAX_HEADER_VALUE_BYTES, MAX_URI_BYTES};

use crate::{http::error::body_for_status, state::AppState};

/// True for paths in the API's address space, `/{customer}/v<N>` and below, which must never be answered with
/// the console's index.html.
pub fn is_api_path(path: &str) -> bool {
    let mut segments = path.trim_start_matches('/').split('/');
    let _customer = segments.next();
    matches!(segments.next(), Some(v) if v.len() > 1 && v.starts_with('v') && v[1..].bytes().all(|b| b.is_ascii_digit()))
}

/// The sign-in app's document (see the console's src/signin.rs), and the addresses it answers.
const SIGNIN_INDEX: &str = "signin/index.html";
const SIGNIN_PATHS: [&str; 3] = ["/", "/login", "/reset-password"];

/// The fallback of the whole router: a JSON 404 for API paths, otherwise a static file of the console or, for a
/// client-side route, its index.html.
pub async fn static_or_not_found(State(state): State<AppState>, req: Request) -> Response {
    if is_api_path(req.uri().path()) {
        return (StatusCode::NOT_FOUND, Json(body_for_status(StatusCode::NOT_FOUND))).into_response();
    }
    let dir = &state.settings.static_dir;
    // The build writes brotli and gzip copies beside each file (`FILE.br`, `FILE.gz`); the browser gets the
    // smallest it accepts, the file itself otherwise.
    let file = |path: std::path::PathBuf| ServeFile::new(path).precompressed_br().precompressed_gzip();
    let is_index = matches!(req.uri().path(), "/" | "/index.html");
    // The first view (the login form, a password-reset link) is its own small app when the build has one.
    let signin = dir.join(SIGNIN_INDEX);
    let answer = if SIGNIN_PATHS.contains(&req.uri().path()) && signin.is_file() {
        file(signin).oneshot(req).await
    } else {
        ServeDir::new(dir)
            .precompressed_br()
            .precompressed_gzip()
            .fallback(file(dir.join("index.html")))
            .oneshot(req)
            .await
    };
    let mut response = match answer {
        Ok(r) => r.map(Body::new),
        Err(never) => match never {},
    };
    // The answer depends on Accept-Encoding: caches must keep one copy per encoding.
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    // Trunk names the wasm and js by content hash, so they may be cached for good; index.html and client routes
    // must be revalidated so a new build is picked up.
    let immutable = !is_index
        && response.status() == StatusCode::OK
        && response.headers().get(header::CONTENT_TYPE).is_some_and(|ct| ct != "text/html");
    let cache = if immutable { "public, max-age=31536000, immutable" } else { "no-cache" };
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

/// Gives every error answer of the API the JSON error body, whoever produced it (router 405s, body limits,
/// timeouts), keeping its status and headers such as Allow and Retry-After.
pub async fn json_errors(req: Request, next: Next) -> Response {
    let purge_style = crate::http::routes::purge::is_purge_path(req.uri().path());
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let error = body_for_status(status);
    let body = if purge_style {
        let code = if status.is_server_error() { 503 } else { status.as_u16() };
        serde_json::to_vec(&edge_api::PurgeError { code, description: error.message, details: vec![] })
    } else {
        serde_json::to_vec(&error)
    }
    .unwrap_or_default();
    Response::from_parts(parts, Body::from(body))
}

/// Refuses, before anything else reads it, a request whose target (path and query) is longer than
/// [`MAX_URI_BYTES`] (414 `uri_too_long`) or one of whose header values is longer than
/// [`MAX_HEADER_VALUE_BYTES`] (431 `header_too_large`): a credential, cookie, code or proxy header of any size
/// would otherwise reach the handlers, the throttle keys and the logs. The body is JSON (purge paths: the
/// purge body).
pub async fn bounded_request(req: Request, next: Next) -> Response {
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    let refused = if target > MAX_URI_BYTES {
        Some((
            StatusCode::URI_TOO_LONG,
            edge_api::ErrorBody::new(
                "uri_too_long",
                format!("The request's path and query have {target} bytes; at most {MAX_URI_BYTES} are accepted."),
            ),
        ))
    } else {
        req.headers().iter().find(|(_, v)| v.len() > MAX_HEADER_VALUE_BYTES).map(|(name, v)| {
            (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                edge_api::ErrorBody::new(
                    "header_too_large",
                    format!(
                        "The {name} header has {} bytes; a header value has at most {MAX_HEADER_VALUE_BYTES}.",
                        v.len()
                    ),
                ),
            )
        })
    };
    let Some((status, body)) = refused else { return next.run(req).await };
    if crate::http::routes::purge::is_purge_path(req.uri().path()) {
        let purge = edge_api::PurgeError { code: status.as_u16(), description: body.message, details: vec![] };
        return (status, Json(purge)).into_response();
    }
    (status, Json(body)).into_response()
}

/// Whether the request reached the proxy in front of the server over TLS (`X-Forwarded-Proto: https`).
pub fn over_tls(headers: &axum::http::HeaderMap) -> bool {
    headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()).is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// Headers on every answer (unless the handler set them): no sniffing, no referrer, no framing, no
/// cross-origin use of the window or the resources, no powerful browser features.
const SECURITY_HEADERS: [(&str, &str); 6] = [
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
    ("permissions-policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=(), interest-cohort=()"),
];

/// Adds [`SECURITY_HEADERS`]; behind a TLS-terminating proxy (see [`over_tls`], as for the cookie's `Secure`)
/// also tells browsers to use HTTPS only for a year.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let tls = over_tls(req.headers());
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.entry(name).or_insert(HeaderValue::from_static(value));
    }
    if tls {
        headers.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static("max-age=31536000"));
    }
    response
}

/// Hides secrets that the API carries in paths (session ids, password-reset tokens) from the request log, and
/// keeps the first 512 bytes of a longer path.
pub fn redact_path(path: &str) -> String {
    let path = edge_api::limits::cut(path, 512);
    let mut out = Vec::new();
    let mut hide_next = false;
    for segment in path.split('/') {
        if hide_next && !segment.is_empty() && segment != "current" {
            out.push("***");
        } else {
            out.push(segment);
        }
        hide_next = matches!(segment, "sessions" | "password-resets");
    }
    out.join("/")
}

/// The Content-Security-Policy of the console: its own scripts and WebAssembly only, plus trunk's inline
/// loader scripts by their hashes (read from index.html and the sign-in app's), no framing.
pub fn content_security_policy(static_dir: &std::path::Path) -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    let mut index = std::fs::read_to_string(static_dir.join("index.html")).unwrap_or_default();
    index.push_str(&std::fs::read_to_string(static_dir.join(SIGNIN_INDEX)).unwrap_or_default());
    let mut hashes = String::new();
    let mut rest = index.as_str();
    while let Some(start) = rest.find("<script type=\"module\">") {
        let body = &rest[start + "<script type=\"module\">".len()..];
        let Some(end) = body.find("</script>") else { break };
        let digest = Sha256::digest(&body.as_bytes()[..end]);
        hashes.push_str(&format!(" 'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(digest)));
        rest = &body[end..];
    }
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{hashes}; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'"
    )
}

/// How long a readiness check waits for each dependency.
const READINESS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// `GET /readyz`: 200 when this replica can serve requests — its database answers and takes writes, its data
/// dir has free space above the threshold, its statistics engine answers, and it is not stopping — and 503
/// with the JSON error body naming what is not, so a load balancer sends it no traffic until it is.
/// `/healthz` only says the process is alive.
pub async fn readiness(State(state): State<AppState>) -> Response {
    let mut problems = Vec::new();
    if state.draining.load(std::sync::atomic::Ordering::Relaxed) {
        problems.push("stopping: finishing the requests in flight".to_string());
    }
    let kind = state.store.kind();
    match tokio::time::timeout(READINESS_TIMEOUT, state.store.ping()).await {
        Ok(Ok(())) => {
            let server = readiness_id(&state);
            match tokio::time::timeout(READINESS_TIMEOUT, state.store.probe_write(&server, state.clock.now_ms())).await
            {
                Ok(Ok(())) => {}
                Ok(Err(e)) => problems.push(format!("database ({kind}) refuses writes: {e}")),
                Err(_) => problems.push(format!("database ({kind}): a write took over {READINESS_TIMEOUT:?}")),
            }
        }
        Ok(Err(e)) => problems.push(format!("database ({kind}): {e}")),
        Err(_) => problems.push(format!("database ({kind}): no answer within {READINESS_TIMEOUT:?}")),
    }
    match crate::disk::free_bytes(&state.settings.data_dir) {
        Some(free) if free < state.settings.min_free_disk_bytes => problems.push(format!(
            "data dir {}: {} MiB free, below the {} MiB this server needs",
            state.settings.data_dir.display(),
            free >> 20,
            state.settings.min_free_disk_bytes >> 20
        )),
        _ => {}
    }
    let stats = state.stats.clone();
    match tokio::time::timeout(READINESS_TIMEOUT, tokio::task::spawn_blocking(move || stats.ready())).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => problems.push(format!("statistics engine: {e}")),
        Ok(Err(e)) => problems.push(format!("statistics engine: {e}")),
        Err(_) => problems.push(format!("statistics engine: no answer within {READINESS_TIMEOUT:?}")),
    }
    let no_store = [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))];
    if problems.is_empty() {
        return (no_store, Json(serde_json::json!({"status": "ready", "database": kind}))).into_response();
    }
    let body = edge_api::ErrorBody::new("not_ready", "This server cannot serve requests now.").with_details(problems);
    (StatusCode::SERVICE_UNAVAILABLE, no_store, Json(body)).into_response()
}

/// While the server drains before stopping, every answer says `Connection: close`, so that no client sends a
/// further request on a connection the server is about to close (it would get no answer).
pub async fn close_when_draining(
    State(draining): State<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    if draining.load(std::sync::atomic::Ordering::Relaxed) {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// The row this server's readiness probe writes: its host and data dir (replicas share the database).
fn readiness_id(state: &AppState) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let dir = std::fs::canonicalize(&state.settings.data_dir).unwrap_or_else(|_| state.settings.data_dir.clone());
    format!("{}:{}", host.trim(), dir.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_paths_are_customer_then_version() {
        assert!(is_api_path("/demo/v1"));
        assert!(is_api_path("/demo/v1/sessions"));
        assert!(is_api_path("/demo/v2/sessions"));
        assert!(!is_api_path("/demo/users"));
        assert!(!is_api_path("/login"));
        assert!(!is_api_path("/"));
        assert!(!is_api_path("/demo/v"));
        assert!(!is_api_path("/demo/vx/a"));
    }

    #[test]
    fn session_ids_and_reset_tokens_are_not_logged() {
        assert_eq!(redact_path("/demo/v1/sessions/abc123"), "/demo/v1/sessions/***");
        assert_eq!(redact_path("/demo/v1/sessions/current"), "/demo/v1/sessions/current");
        assert_eq!(redact_path("/demo/v1/password-resets/tok"), "/demo/v1/password-resets/***");
        assert_eq!(redact_path("/demo/v1/users/u1"), "/demo/v1/users/u1");
    }
}
