//! Sessions: create with Basic credentials, read, keep alive, make current (sets the cookie), delete; the
//! caller's own sessions listed by public reference, and ended by it.

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::{ErrorBody, Link, Session, SessionInfo, SessionList, SessionModel, audit::op, paths};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    clock::iso_ms,
    domain::auth::{self, Caller, PasswordLogin},
    http::{
        caller::{Authed, PathCustomer, basic_credentials, session_cookie},
        error::{AppError, AppResult},
        extract::Json,
    },
    state::AppState,
    store::{Actor, AuditEvent, Customer, SessionRecord, Target, UserRecord},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_session, list_own_sessions))
        .routes(routes!(delete_own_session))
        .routes(routes!(get_current_session, put_current_session, delete_current_session))
        .routes(routes!(get_session, put_session, delete_session))
}

#[derive(Deserialize)]
struct SessionPath {
    session_id: String,
}

#[derive(Deserialize)]
struct RefPath {
    #[serde(rename = "ref")]
    reference: String,
}

/// At most this many sessions are listed (the most recently used).
const LISTED_SESSIONS: u32 = 100;

/// A session's public reference: the first 16 hex digits of the SHA-256 of its id, as in the audit log.
fn session_ref(s: &SessionRecord) -> String {
    s.token_hash.chars().take(16).collect()
}

/// The caller's own live sessions, most recently used first.
async fn own_sessions(state: &AppState, caller: &Caller) -> AppResult<(Vec<SessionRecord>, u64)> {
    let now = state.clock.now_ms();
    Ok(state
        .store
        .user_sessions(&caller.user.id, now - auth::SESSION_IDLE_MS, now - auth::SESSION_MAX_AGE_MS, LISTED_SESSIONS)
        .await?)
}

fn session_body(customer: &Customer, session_id: &str, s: &SessionRecord) -> Session {
    let base = paths::base(&customer.name);
    Session {
        expires: iso_ms(auth::session_expiry_ms(s)),
        id: session_id.to_string(),
        uri: format!("{base}/sessions/{session_id}"),
        user: Link { id: s.user_id.clone(), uri: format!("{base}/users/{}", s.user_id) },
    }
}

/// True when the client reached us over TLS (directly or through a proxy that says so).
fn set_cookie(session_id: &str, headers: &HeaderMap) -> HeaderValue {
    let secure = if crate::http::web::over_tls(headers) { "; Secure" } else { "" };
    let value = format!("{}={session_id}; Path=/; HttpOnly; SameSite=Strict{secure}", paths::SESSION_COOKIE);
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn clear_cookie(headers: &HeaderMap) -> HeaderValue {
    let secure = if crate::http::web::over_tls(headers) { "; Secure" } else { "" };
    let value = format!("{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}", paths::SESSION_COOKIE);
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The session named by `session_id` and its user, if it is live, belongs to the caller's customer, and the
/// caller may see it (their own, or any of the customer's when they are an administrator).
async fn visible_session(
    state: &AppState,
    caller: &Caller,
    session_id: &str,
) -> AppResult<(SessionRecord, UserRecord)> {
    let (session, _, user) = auth::live_session(state, session_id).await?.ok_or(AppError::NotFound("session"))?;
    let visible = session.customer_id == caller.customer.id
        && (session.user_id == caller.user.id || caller.role == edge_api::Role::Admin);
    if !visible {
        return Err(AppError::NotFound("session"));
    }
    Ok((session, user))
}

/// Ends a session, with its record.
async fn end_session(state: &AppState, caller: &Caller, session: &SessionRecord, username: &str) -> AppResult<()> {
    let target = Target::session(&session.token_hash, username);
    let audit = AuditEvent::by(caller, state.clock.now_ms(), op::SESSION_DELETE, target);
    state.store.delete_session(&session.token_hash, &audit).await?;
    Ok(())
}

/// Log in: create a session from HTTP Basic credentials. The answer also sets the `authtoken` cookie, so a
/// browser is logged in at once. Failed attempts are counted over 15 minutes per username from the client's
/// address (locked after 10), per address (locked after 100) and per username (slowed down, never locked);
/// behind `--trusted-proxies` the address is the one in `X-Forwarded-For`, IPv6 by its /64.
#[utoipa::path(
    post, path = "/sessions", tag = "sessions",
    params(("X-OTP-Token" = Option<String>, Header, description = "Six-digit one-time password; required when the user has two-factor enabled")),
    responses(
        (status = 201, description = "Session created", body = Session),
        (status = 401, description = "Missing or wrong credentials, or a one-time password is required (`otp_required`) or wrong (`otp_invalid`)", body = ErrorBody),
        (status = 429, description = "Too many failed logins for this username or address; see Retry-After", body = ErrorBody),
    ),
    security(("basic" = []))
)]
async fn create_session(State(state): State<AppState>, path: PathCustomer, headers: HeaderMap) -> AppResult<Response> {
    let Some((username, password)) = basic_credentials(&headers)? else {
        return Err(AppError::unauthorized("Creating a session needs HTTP Basic credentials."));
    };
    let login = PasswordLogin {
        customer_name: &path.name,
        customer: path.customer.as_ref(),
        username: &username,
        password: &password,
        addr: path.addr,
        token: headers.get(paths::OTP_HEADER).and_then(|v| v.to_str().ok()),
    };
    let (customer, user) = login.check(&state).await?;
    login.finish(&state, &user, true).await?;
    let session_id = auth::new_session_id();
    let now = state.clock.now_ms();
    let record = SessionRecord {
        token_hash: auth::token_hash(&session_id),
        customer_id: customer.id,
        user_id: user.id.clone(),
        created_ms: now,
        last_seen_ms: now,
    };
    let actor = Actor::User { id: user.id.clone(), name: user.username.clone() };
    let target = Target::session(&record.token_hash, &user.username);
    let audit = AuditEvent::new(customer.id, now, actor, path.addr.to_string(), op::SESSION_CREATE, target);
    state.store.create_session(&record, &audit).await?;
    let body = session_body(&customer, &session_id, &record);
    Ok((StatusCode::CREATED, [(header::SET_COOKIE, set_cookie(&session_id, &headers))], axum::Json(body))
        .into_response())
}

/// The caller's own live sessions (an administrator's too: only their own), most recently used first, at most
/// 100, each with a public reference instead of its secret id; `current` marks the one of this request.
#[utoipa::path(
    get, path = "/sessions", tag = "sessions",
    responses(
        (status = 200, description = "The caller's own live sessions", body = SessionList),
        (status = 401, description = "Not authenticated", body = ErrorBody),
    )
)]
async fn list_own_sessions(
    State(state): State<AppState>,
    Authed(caller): Authed,
) -> AppResult<axum::Json<SessionList>> {
    let (sessions, total) = own_sessions(&state, &caller).await?;
    let base = paths::base(&caller.customer.name);
    let current = caller.session.as_ref().map(|s| s.token_hash.as_str());
    let items = sessions
        .iter()
        .map(|s| {
            let reference = session_ref(s);
            SessionInfo {
                uri: format!("{base}/sessions/refs/{reference}"),
                reference,
                created: iso_ms(s.created_ms),
                last_access: iso_ms(s.last_seen_ms),
                expires: iso_ms(auth::session_expiry_ms(s)),
                current: Some(s.token_hash.as_str()) == current,
            }
        })
        .collect();
    Ok(axum::Json(SessionList { items, total }))
}

/// End one of the caller's own sessions, named by its public reference (from `GET /sessions`). Ending the
/// session of this request also unsets the cookie.
#[utoipa::path(
    delete, path = "/sessions/refs/{ref}", tag = "sessions",
    params(("ref" = String, Path, description = "The session's reference: 16 hex digits, as listed by GET /sessions")),
    responses(
        (status = 204, description = "Session ended"),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No live session of the caller has this reference", body = ErrorBody),
    )
)]
async fn delete_own_session(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    Path(p): Path<RefPath>,
) -> AppResult<Response> {
    let valid = p.reference.len() == 16 && p.reference.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !valid {
        return Err(AppError::NotFound("session"));
    }
    // Looked up among the caller's own sessions only, so a reference of anyone else's is not found.
    let (sessions, _) = own_sessions(&state, &caller).await?;
    let session = sessions.iter().find(|s| session_ref(s) == p.reference).ok_or(AppError::NotFound("session"))?;
    end_session(&state, &caller, session, &caller.user.username).await?;
    let current = caller.session.as_ref().is_some_and(|s| s.token_hash == session.token_hash);
    if current && session_cookie(&headers).is_some() {
        return Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, clear_cookie(&headers))]).into_response());
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The session that authenticated this request (by its cookie). Answers 201, as the API has always done.
#[utoipa::path(
    get, path = "/sessions/current", tag = "sessions",
    responses(
        (status = 201, description = "The current session", body = Session),
        (status = 404, description = "The request was not authenticated by a valid session", body = ErrorBody),
    )
)]
async fn get_current_session(
    State(state): State<AppState>,
    caller: Result<Caller, AppError>,
    headers: HeaderMap,
) -> AppResult<Response> {
    let (caller, session_id) = current(caller, &headers)?;
    let mut session = caller.session.ok_or(AppError::NotFound("session"))?;
    auth::touch_session(&state, &mut session, true).await?;
    Ok((StatusCode::CREATED, axum::Json(session_body(&caller.customer, &session_id, &session))).into_response())
}

/// The caller and its session id, when a session authenticated the request; 404 otherwise. A failure of storage
/// stays what it is (503): a client that takes 404 for "logged out" must not sign its user out during a fault.
fn current(caller: Result<Caller, AppError>, headers: &HeaderMap) -> AppResult<(Caller, String)> {
    let caller = caller.map_err(|e| match e {
        AppError::Unavailable { .. } | AppError::Internal(_) => e,
        _ => AppError::NotFound("session"),
    })?;
    match (&caller.session, session_cookie(headers)) {
        (Some(_), Some(id)) => Ok((caller, id)),
        _ => Err(AppError::NotFound("session")),
    }
}

/// Make the session in the body the current one: the answer sets the `authtoken` cookie to it.
#[utoipa::path(
    put, path = "/sessions/current", tag = "sessions",
    request_body = SessionModel,
    responses(
        (status = 200, description = "The session is now current; the cookie is set", body = Session),
        (status = 400, description = "Invalid JSON, or no live session of the caller has this id", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
    )
)]
async fn put_current_session(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    Json(model): Json<SessionModel>,
) -> AppResult<Response> {
    let unknown = || AppError::bad_request("unknown_session", "No live session of yours has this id.");
    let session_id = model.id.ok_or_else(unknown)?;
    let (mut session, _) = visible_session(&state, &caller, &session_id).await.map_err(|_| unknown())?;
    if session.user_id != caller.user.id {
        return Err(unknown());
    }
    auth::touch_session(&state, &mut session, true).await?;
    let body = session_body(&caller.customer, &session_id, &session);
    Ok(([(header::SET_COOKIE, set_cookie(&session_id, &headers))], axum::Json(body)).into_response())
}

/// Log out: end the session that authenticated this request and unset the cookie.
#[utoipa::path(
    delete, path = "/sessions/current", tag = "sessions",
    responses(
        (status = 204, description = "Session ended; cookie unset"),
        (status = 404, description = "No session authenticated the request", body = ErrorBody),
    )
)]
async fn delete_current_session(
    State(state): State<AppState>,
    caller: Result<Caller, AppError>,
    headers: HeaderMap,
) -> AppResult<Response> {
    let (caller, _) = current(caller, &headers)?;
    let session = caller.session.as_ref().ok_or(AppError::NotFound("session"))?;
    end_session(&state, &caller, session, &caller.user.username).await?;
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, clear_cookie(&headers))]).into_response())
}

#[utoipa::path(
    get, path = "/sessions/{session_id}", tag = "sessions",
    params(("session_id" = String, Path, description = "Session id")),
    responses(
        (status = 200, description = "The session", body = Session),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No such live session visible to the caller", body = ErrorBody),
    )
)]
async fn get_session(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Path(p): Path<SessionPath>,
) -> AppResult<Response> {
    let (session, _) = visible_session(&state, &caller, &p.session_id).await?;
    Ok(axum::Json(session_body(&caller.customer, &p.session_id, &session)).into_response())
}

/// Keep-alive: refreshes the session's last-access time. No field can be set; an empty body is accepted.
#[utoipa::path(
    put, path = "/sessions/{session_id}", tag = "sessions",
    params(("session_id" = String, Path, description = "Session id")),
    request_body(content = Option<SessionModel>, description = "Ignored apart from being valid JSON"),
    responses(
        (status = 200, description = "The session, with its new expiry", body = Session),
        (status = 400, description = "Invalid JSON", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No such live session visible to the caller", body = ErrorBody),
    )
)]
async fn put_session(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Path(p): Path<SessionPath>,
    body: Bytes,
) -> AppResult<Response> {
    // As documented: no body, `null`, or a session model.
    if !body.iter().all(u8::is_ascii_whitespace) {
        serde_json::from_slice::<Option<SessionModel>>(&body).map_err(|e| AppError::BadRequest {
            kind: "invalid_json",
            message: "The request body is not a valid session model.".into(),
            details: vec![e.to_string()],
        })?;
    }
    let (mut session, _) = visible_session(&state, &caller, &p.session_id).await?;
    auth::touch_session(&state, &mut session, true).await?;
    Ok(axum::Json(session_body(&caller.customer, &p.session_id, &session)).into_response())
}

#[utoipa::path(
    delete, path = "/sessions/{session_id}", tag = "sessions",
    params(("session_id" = String, Path, description = "Session id")),
    responses(
        (status = 204, description = "Session ended"),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No such live session visible to the caller", body = ErrorBody),
    )
)]
async fn delete_session(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    Path(p): Path<SessionPath>,
) -> AppResult<Response> {
    let (session, user) = visible_session(&state, &caller, &p.session_id).await?;
    end_session(&state, &caller, &session, &user.username).await?;
    if session_cookie(&headers).as_deref() == Some(p.session_id.as_str()) {
        return Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, clear_cookie(&headers))]).into_response());
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
