//! Passwords: read the (empty) password model, change one's own password, reset by an administrator, and
//! complete a reset from the e-mailed link.

use axum::{
    extract::{Path, State},
    http::{HeaderMap, StatusCode},
};
use edge_api::{ErrorBody, Password, PasswordResetCompletion, audit::op, check_password_policy, paths, perm};
use rand::RngCore;
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::users::{UserPath, find_user, is_email};
use crate::{
    domain::auth,
    http::{
        caller::{Allowed, OwnLocal, OwnLocalWithPassword, PathCustomer, session_cookie},
        error::{AppError, AppResult},
        extract::Json,
    },
    state::AppState,
    store::{Actor, AuditEvent, Customer, PasswordReset, Target, UserRecord},
};

/// A reset link works this long.
pub const RESET_VALID_MS: i64 = 60 * 60 * 1000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_password, put_password))
        .routes(routes!(reset_password))
        .routes(routes!(complete_reset))
}

fn password_body(customer: &Customer, user_id: &str) -> Password {
    let uri = format!("{}/users/{user_id}/password", paths::base(&customer.name));
    Password { password: String::new(), reset_uri: format!("{uri}/resets"), uri }
}

fn policy(user: &UserRecord, password: &str) -> AppResult<()> {
    check_password_policy(&user.username, password).map_err(|m| AppError::bad_request("password_policy", m))
}

/// The caller's password model; `password` is always empty.
#[utoipa::path(
    get, path = "/users/{user_id}/password", tag = "passwords",
    params(("user_id" = String, Path, description = "User id (the caller's own)")),
    responses(
        (status = 200, description = "The password model, with an empty password", body = Password),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Another user's password", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 405, description = "The user is from a remote identity source", body = ErrorBody),
    )
)]
async fn get_password(
    State(state): State<AppState>,
    OwnLocal(caller): OwnLocal,
    Path(p): Path<UserPath>,
) -> AppResult<axum::Json<Password>> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    Ok(axum::Json(password_body(&caller.customer, &user.id)))
}

/// Change one's own password. Needs HTTP Basic credentials of that user (the current password); ends all of
/// the user's sessions except the one whose cookie came with the request, so a console stays logged in.
#[utoipa::path(
    put, path = "/users/{user_id}/password", tag = "passwords",
    params(
        ("user_id" = String, Path, description = "User id (the caller's own)"),
        ("X-OTP-Token" = Option<String>, Header, description = "One-time code; required when the user has two-factor on"),
    ),
    request_body = edge_api::schema::PasswordChangeSchema,
    responses(
        (status = 200, description = "Changed; the answer's password is empty", body = Password),
        (status = 400, description = "Invalid JSON, or the password breaks the policy (`password_policy`): at least 12 characters, not the username", body = ErrorBody),
        (status = 401, description = "Not authenticated with HTTP Basic credentials of the user whose password this is (`password_required`), or two-factor is on and no valid one-time code came (`otp_required`, `otp_invalid`)", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 405, description = "The user is from a remote identity source", body = ErrorBody),
    ),
    security(("basic" = []))
)]
async fn put_password(
    State(state): State<AppState>,
    OwnLocalWithPassword(caller): OwnLocalWithPassword,
    Path(p): Path<UserPath>,
    headers: HeaderMap,
    Json(body): Json<Password>,
) -> AppResult<axum::Json<Password>> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    policy(&user, &body.password)?;
    let hash = state.passwords.hash(&body.password).await?;
    let keep = session_cookie(&headers).map(|id| auth::token_hash(&id));
    let audit = AuditEvent::by(&caller, state.clock.now_ms(), op::PASSWORD_CHANGE, Target::user(&user));
    state.store.set_password(caller.customer.id, &user.id, &hash, keep.as_deref(), &audit).await?;
    Ok(axum::Json(password_body(&caller.customer, &user.id)))
}

/// Reset a user's password (administrators only): the current password stops working at once, the user's
/// sessions end, and the user is e-mailed a link, valid for one hour, to set a new one.
#[utoipa::path(
    post, path = "/users/{user_id}/password/resets", tag = "passwords",
    params(("user_id" = String, Path, description = "User id")),
    responses(
        (status = 204, description = "Reset; the e-mail is sent"),
        (status = 400, description = "The user has no e-mail address and no username in e-mail form (`no_email`)", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators reset passwords", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 405, description = "The user is from a remote identity source", body = ErrorBody),
    )
)]
async fn reset_password(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ResetPasswords>,
    Path(p): Path<UserPath>,
) -> AppResult<StatusCode> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    // Password resources exist only for local users.
    if user.source != "local" {
        return Err(AppError::MethodNotAllowed);
    }
    let to = [user.email.as_str(), user.username.as_str()].into_iter().find(|a| is_email(a)).ok_or_else(|| {
        AppError::bad_request(
            "no_email",
            "This user has no e-mail address to send the reset link to: add one to the user first.",
        )
    })?;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token = hex::encode(bytes);
    let now = state.clock.now_ms();
    let reset = PasswordReset {
        token_hash: auth::token_hash(&token),
        customer_id: caller.customer.id,
        user_id: user.id.clone(),
        expires_ms: now + RESET_VALID_MS,
    };
    let link = format!("{}/reset-password?customer={}&token={token}", state.settings.public_url, caller.customer.name);
    let body = format!(
        "Hello {name},\r\n\r\nAn administrator of the Edge Console account \"{customer}\" reset your password.\r\n\
         Set a new one within the next hour at:\r\n\r\n{link}\r\n\r\nYour username is {username}.\r\n",
        name = if user.full_name.is_empty() { &user.username } else { &user.full_name },
        customer = caller.customer.name,
        username = user.username,
    );
    // The mail first: if it cannot be sent, nothing changes. The link works once the reset is stored; should
    // storing fail after the mail went out, the answer is 500 and the mailed link answers 404.
    state
        .mailer
        .send(to, "Set your new Edge Console password", &body)
        .await
        .map_err(|e| AppError::from(e.context("sending the password-reset mail")))?;
    let audit = AuditEvent::by(&caller, now, op::PASSWORD_RESET, Target::user(&user)).detail("mailed_to", to);
    if !state.store.reset_password(&reset, &audit).await? {
        return Err(AppError::NotFound("user"));
    }
    // The old password no longer works, so whoever guessed codes with it is shut out: the account's code
    // checks (locked after wrong codes from anywhere) are open again to the user who sets the new one.
    if let Err(e) = state.store.forgive_logins(&caller.customer.name, &user.username).await {
        tracing::warn!(error = %e, "forgetting the failed logins of a reset user failed");
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct ResetPath {
    token: String,
}

/// Complete a password reset with the token from the e-mailed link. Needs no authentication; the token works
/// once, for one hour.
#[utoipa::path(
    put, path = "/password-resets/{token}", tag = "passwords",
    params(("token" = String, Path, description = "The token from the reset link")),
    request_body = PasswordResetCompletion,
    responses(
        (status = 204, description = "The new password is set; the link no longer works"),
        (status = 400, description = "Invalid JSON, or the password breaks the policy (`password_policy`)", body = ErrorBody),
        (status = 404, description = "The link is unknown, used or expired", body = ErrorBody),
        (status = 503, description = "Too many password hashes at once (`overloaded`); see Retry-After", body = ErrorBody),
    ),
    security(())
)]
async fn complete_reset(
    State(state): State<AppState>,
    path: PathCustomer,
    Path(p): Path<ResetPath>,
    Json(body): Json<PasswordResetCompletion>,
) -> AppResult<StatusCode> {
    let gone = || AppError::NotFound("password reset link (it may be used or expired)");
    let hash = auth::token_hash(&p.token);
    let customer = path.customer.ok_or_else(gone)?;
    let reset = state
        .store
        .password_reset(&hash)
        .await?
        .filter(|r| r.customer_id == customer.id && r.expires_ms > state.clock.now_ms())
        .ok_or_else(gone)?;
    let user = find_user(&state, &customer, &reset.user_id).await.map_err(|_| gone())?;
    policy(&user, &body.password)?;
    let new_hash = state.passwords.hash(&body.password).await?;
    let actor = Actor::User { id: user.id.clone(), name: user.username.clone() };
    let audit = AuditEvent::new(
        customer.id,
        state.clock.now_ms(),
        actor,
        path.addr.to_string(),
        op::PASSWORD_RESET_COMPLETE,
        Target::user(&user),
    );
    if !state.store.finish_password_reset(&hash, &new_hash, &audit).await? {
        return Err(gone());
    }
    Ok(StatusCode::NO_CONTENT)
}
