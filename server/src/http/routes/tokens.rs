//! API tokens: made, changed and rolled by their own user (with a one-time code when two-factor is on), listed and
//! revoked by their user or an administrator of the customer. Tokens themselves cannot call these operations.

use axum::{
    extract::{Path, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::{ApiToken, ErrorBody, Link, Role, TokenInput, TokenPage, audit::op, paths};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    clock::iso_ms,
    domain::{
        auth::{Caller, PasswordLogin, token_hash},
        tokens::{self, check_cidrs, check_expiry, check_name, check_scopes},
    },
    http::{
        caller::Authed,
        error::{AppError, AppResult},
        extract::{Json, Query},
        paging::{DEFAULT_COUNT, Page, filters},
    },
    state::AppState,
    store::{self, AuditEvent, NewToken, Target, TokenChange, TokenRecord},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tokens, create_token))
        .routes(routes!(get_token, update_token, delete_token))
        .routes(routes!(roll_token))
}

#[derive(Deserialize)]
struct TokenPath {
    token_id: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct TokenListQuery {
    /// Page number, from 1 (default 1).
    page: Option<u64>,
    /// Tokens per page (default 100, at most 1000).
    count: Option<u64>,
    /// Only the tokens of this user (an id). Without it: an administrator's answer holds every token of the
    /// customer, anyone else's their own; anyone but an administrator may name only themselves.
    #[param(max_length = 128)]
    user: Option<String>,
}

/// The API's view of a stored token (with `secret` only where one was just made).
fn token_body(customer: &str, t: &TokenRecord, now_ms: i64, secret: Option<String>) -> ApiToken {
    let base = paths::base(customer);
    ApiToken {
        id: t.id.clone(),
        name: t.name.clone(),
        user: Link { id: t.user_id.clone(), uri: format!("{base}/users/{}", t.user_id) },
        username: t.username.clone(),
        scopes: t.scopes.clone(),
        expires: t.expires_ms.map(iso_ms),
        expired: t.expires_ms.is_some_and(|e| now_ms >= e),
        allowed_cidrs: t.allowed_cidrs.clone(),
        created: iso_ms(t.created_ms),
        last_used_at: t.last_used_ms.map(iso_ms),
        last_used_from: t.last_used_from.clone(),
        hint: t.hint.clone(),
        uri: format!("{base}/tokens/{}", t.id),
        secret,
    }
}

fn invalid_token(problems: Vec<String>) -> AppError {
    AppError::BadRequest { kind: "invalid_token", message: "The API token is not valid.".into(), details: problems }
}

/// The token `id` of the caller's customer, if the caller may see it: their own, or any when they are an
/// administrator; 404 otherwise (an id of another customer, or of another user, tells nothing).
async fn visible_token(state: &AppState, caller: &Caller, id: &str) -> AppResult<TokenRecord> {
    let well_formed = id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let token = if well_formed { state.store.token(caller.customer.id, id).await? } else { None };
    token.filter(|t| t.user_id == caller.user.id || caller.role == Role::Admin).ok_or(AppError::NotFound("token"))
}

/// The token, if it is the caller's own: what makes or widens credentials is its user's alone (an administrator
/// revokes others' tokens, and cannot make one act as someone else).
async fn own_token(state: &AppState, caller: &Caller, id: &str) -> AppResult<TokenRecord> {
    let token = visible_token(state, caller, id).await?;
    if token.user_id != caller.user.id {
        return Err(AppError::Forbidden(
            "Only the token's own user may change or roll it; an administrator may revoke it.".into(),
        ));
    }
    Ok(token)
}

/// With two-factor on, making credentials needs a current one-time code on this request (`X-OTP-Token`), also
/// from a session made with one: a session left open must not be enough to mint a long-lived token. Basic
/// credentials reach here only with their code checked (the password alone is refused first).
async fn confirm_code(state: &AppState, caller: &Caller, headers: &HeaderMap) -> AppResult<()> {
    if !caller.user.otp_enabled || caller.session.is_none() {
        return Ok(());
    }
    let login = PasswordLogin {
        customer_name: &caller.customer.name,
        customer: Some(&caller.customer),
        username: &caller.user.username,
        password: "",
        addr: caller.addr,
        token: headers.get(paths::OTP_HEADER).and_then(|v| v.to_str().ok()),
    };
    login.confirm_code(state, &caller.user).await
}

/// API tokens of the customer, newest first: an administrator sees every user's, anyone else their own.
#[utoipa::path(
    get, path = "/tokens", tag = "tokens",
    params(TokenListQuery),
    responses(
        (status = 200, description = "A page of tokens (never their secrets)", body = TokenPage),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Another user's tokens asked for by someone not an administrator, or an API token used (tokens cannot list tokens)", body = ErrorBody),
    )
)]
async fn list_tokens(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Query(q): Query<TokenListQuery>,
) -> AppResult<axum::Json<TokenPage>> {
    let page = Page::of(q.page, q.count, DEFAULT_COUNT)?;
    let named = q.user.as_deref().filter(|u| !u.is_empty());
    if caller.role != Role::Admin && named.is_some_and(|u| u != caller.user.id) {
        return Err(AppError::Forbidden("Only administrators list the tokens of other users.".into()));
    }
    let user = if caller.role == Role::Admin { named } else { Some(caller.user.id.as_str()) };
    let (records, total) = state.store.list_tokens(caller.customer.id, user, page.offset(), page.count).await?;
    let now = state.clock.now_ms();
    let items = records.iter().map(|t| token_body(&caller.customer.name, t, now, None)).collect();
    let path = format!("{}/tokens", paths::base(&caller.customer.name));
    Ok(axum::Json(page.paged(&path, &filters(&[("user", named)]), items, total).into()))
}

/// Make an API token of the caller: `name` and `scopes` (each within the caller's role), optionally `expires`
/// and `allowed_cidrs` (client ranges; behind `--trusted-proxies`, the forwarded address counts). The answer
/// holds the secret, `edge_` and 46 characters of `0-9A-Za-z` (the last 6 a CRC-32 checksum), shown this once:
/// the server keeps only its SHA-256. With two-factor on, the request needs a current one-time code
/// (`X-OTP-Token`), also with a session. A user holds at most 100 tokens.
#[utoipa::path(
    post, path = "/tokens", tag = "tokens",
    params(("X-OTP-Token" = Option<String>, Header, description = "Six-digit one-time password; required when the caller has two-factor on")),
    request_body = edge_api::schema::NewTokenSchema,
    responses(
        (status = 201, description = "The token, with its secret (shown once)", body = ApiToken),
        (status = 400, description = "Invalid token (`invalid_token`, every problem in details), or the user holds 100 tokens (`limit_exceeded`)", body = ErrorBody),
        (status = 401, description = "Not authenticated, or a one-time code is needed (`otp_required`) or wrong (`otp_invalid`)", body = ErrorBody),
        (status = 403, description = "An API token was used: tokens cannot make tokens", body = ErrorBody),
    )
)]
async fn create_token(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    Json(input): Json<TokenInput>,
) -> AppResult<Response> {
    let now = state.clock.now_ms();
    let mut problems = Vec::new();
    let name = input.name.unwrap_or_default();
    check_name(&name, &mut problems);
    let scopes = check_scopes(input.scopes.as_deref().unwrap_or_default(), caller.role, &mut problems);
    let allowed_cidrs = check_cidrs(input.allowed_cidrs.as_deref().unwrap_or_default(), &mut problems);
    let expires_ms = input.expires.flatten().and_then(|e| check_expiry(&e, now, &mut problems));
    if !problems.is_empty() {
        return Err(invalid_token(problems));
    }
    confirm_code(&state, &caller, &headers).await?;
    let secret = tokens::new_secret();
    let token = NewToken {
        id: store::new_id(),
        customer_id: caller.customer.id,
        user_id: caller.user.id.clone(),
        secret_hash: token_hash(&secret),
        hint: tokens::hint(&secret),
        name,
        scopes,
        allowed_cidrs,
        expires_ms,
        created_ms: now,
    };
    let target = Target { kind: "token", id: token.id.clone(), name: token.name.clone() };
    let audit = AuditEvent::by(&caller, now, op::TOKEN_CREATE, target)
        .detail("scopes", token.scopes.clone())
        .detail("expires", token.expires_ms.map(iso_ms))
        .detail("allowed_cidrs", token.allowed_cidrs.clone());
    let record = state.store.create_token(&token, &audit).await?.ok_or(AppError::NotFound("user"))?;
    let body = token_body(&caller.customer.name, &record, now, Some(secret));
    Ok((StatusCode::CREATED, [(header::LOCATION, body.uri.clone())], axum::Json(body)).into_response())
}

#[utoipa::path(
    get, path = "/tokens/{token_id}", tag = "tokens",
    params(("token_id" = String, Path, description = "Token id (16 hex digits)")),
    responses(
        (status = 200, description = "The token (never its secret)", body = ApiToken),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "An API token was used: tokens cannot read tokens", body = ErrorBody),
        (status = 404, description = "No such token among those the caller may see", body = ErrorBody),
    )
)]
async fn get_token(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Path(p): Path<TokenPath>,
) -> AppResult<axum::Json<ApiToken>> {
    let token = visible_token(&state, &caller, &p.token_id).await?;
    Ok(axum::Json(token_body(&caller.customer.name, &token, state.clock.now_ms(), None)))
}

/// Change one's own token: the fields present (`expires` null: never). A change of scopes, ranges or expiry
/// needs a one-time code with two-factor on, as making a token does; its secret stays.
#[utoipa::path(
    put, path = "/tokens/{token_id}", tag = "tokens",
    params(
        ("token_id" = String, Path, description = "Token id (16 hex digits)"),
        ("X-OTP-Token" = Option<String>, Header, description = "Six-digit one-time password; required when the caller has two-factor on and scopes, ranges or expiry change"),
    ),
    request_body = edge_api::schema::TokenUpdateSchema,
    responses(
        (status = 200, description = "The changed token", body = ApiToken),
        (status = 400, description = "Invalid change (`invalid_token`, every problem in details)", body = ErrorBody),
        (status = 401, description = "Not authenticated, or a one-time code is needed (`otp_required`) or wrong (`otp_invalid`)", body = ErrorBody),
        (status = 403, description = "Another user's token, or an API token was used", body = ErrorBody),
        (status = 404, description = "No such token among those the caller may see", body = ErrorBody),
    )
)]
async fn update_token(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    Path(p): Path<TokenPath>,
    Json(input): Json<TokenInput>,
) -> AppResult<axum::Json<ApiToken>> {
    let token = own_token(&state, &caller, &p.token_id).await?;
    let now = state.clock.now_ms();
    let mut problems = Vec::new();
    if let Some(name) = &input.name {
        check_name(name, &mut problems);
    }
    let scopes = input.scopes.as_deref().map(|s| check_scopes(s, caller.role, &mut problems));
    let allowed_cidrs = input.allowed_cidrs.as_deref().map(|c| check_cidrs(c, &mut problems));
    let expires_ms = input.expires.map(|e| e.and_then(|e| check_expiry(&e, now, &mut problems)));
    if !problems.is_empty() {
        return Err(invalid_token(problems));
    }
    // Only what differs counts, so a client may send back the token it read.
    let change = TokenChange {
        name: input.name.filter(|n| *n != token.name),
        scopes: scopes.filter(|s| *s != token.scopes),
        allowed_cidrs: allowed_cidrs.filter(|c| *c != token.allowed_cidrs),
        expires_ms: expires_ms.filter(|e| *e != token.expires_ms),
    };
    if change == TokenChange::default() {
        return Ok(axum::Json(token_body(&caller.customer.name, &token, now, None)));
    }
    if change.scopes.is_some() || change.allowed_cidrs.is_some() || change.expires_ms.is_some() {
        confirm_code(&state, &caller, &headers).await?;
    }
    let mut audit = AuditEvent::by(&caller, now, op::TOKEN_UPDATE, Target::token(&token));
    if let Some(name) = &change.name {
        audit = audit.detail("name", name.as_str());
    }
    if let Some(scopes) = &change.scopes {
        audit = audit.detail("scopes", scopes.clone()).detail("previous_scopes", token.scopes.clone());
    }
    if let Some(cidrs) = &change.allowed_cidrs {
        audit = audit.detail("allowed_cidrs", cidrs.clone());
    }
    if let Some(expires) = change.expires_ms {
        audit = audit.detail("expires", expires.map(iso_ms));
    }
    let updated = state
        .store
        .update_token(caller.customer.id, &token.id, &change, &audit)
        .await?
        .ok_or(AppError::NotFound("token"))?;
    Ok(axum::Json(token_body(&caller.customer.name, &updated, now, None)))
}

/// Revoke a token: its own user, or an administrator of the customer. It stops working at once, on every
/// replica.
#[utoipa::path(
    delete, path = "/tokens/{token_id}", tag = "tokens",
    params(("token_id" = String, Path, description = "Token id (16 hex digits)")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "An API token was used: tokens cannot revoke tokens", body = ErrorBody),
        (status = 404, description = "No such token among those the caller may see", body = ErrorBody),
    )
)]
async fn delete_token(
    State(state): State<AppState>,
    Authed(caller): Authed,
    Path(p): Path<TokenPath>,
) -> AppResult<StatusCode> {
    let token = visible_token(&state, &caller, &p.token_id).await?;
    let audit = AuditEvent::by(&caller, state.clock.now_ms(), op::TOKEN_DELETE, Target::token(&token))
        .detail("user", token.username.as_str());
    if !state.store.delete_token(caller.customer.id, &token.id, &audit).await? {
        return Err(AppError::NotFound("token"));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Give one's own token a new secret, shown once; the old one stops working at once. Name, scopes, ranges and
/// expiry stay. With two-factor on, the request needs a current one-time code.
#[utoipa::path(
    post, path = "/tokens/{token_id}/roll", tag = "tokens",
    params(
        ("token_id" = String, Path, description = "Token id (16 hex digits)"),
        ("X-OTP-Token" = Option<String>, Header, description = "Six-digit one-time password; required when the caller has two-factor on"),
    ),
    responses(
        (status = 200, description = "The token, with its new secret (shown once)", body = ApiToken),
        (status = 401, description = "Not authenticated, or a one-time code is needed (`otp_required`) or wrong (`otp_invalid`)", body = ErrorBody),
        (status = 403, description = "Another user's token, or an API token was used", body = ErrorBody),
        (status = 404, description = "No such token among those the caller may see", body = ErrorBody),
    )
)]
async fn roll_token(
    State(state): State<AppState>,
    Authed(caller): Authed,
    headers: HeaderMap,
    Path(p): Path<TokenPath>,
) -> AppResult<axum::Json<ApiToken>> {
    let token = own_token(&state, &caller, &p.token_id).await?;
    confirm_code(&state, &caller, &headers).await?;
    let now = state.clock.now_ms();
    let secret = tokens::new_secret();
    let hint = tokens::hint(&secret);
    let audit = AuditEvent::by(&caller, now, op::TOKEN_ROLL, Target::token(&token))
        .detail("previous_hint", token.hint.as_str())
        .detail("hint", hint.as_str());
    let rolled = state
        .store
        .roll_token(caller.customer.id, &token.id, &token_hash(&secret), &hint, &audit)
        .await?
        .ok_or(AppError::NotFound("token"))?;
    Ok(axum::Json(token_body(&caller.customer.name, &rolled, now, Some(secret))))
}
