//! Two-factor authentication of a user: settings, seed, pairing (enable) and unpairing (disable, by an
//! administrator).

use axum::extract::{Path, State};
use edge_api::{ErrorBody, OtpPairing, OtpSeed, OtpSettings, audit::op, paths, perm};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::users::{UserPath, find_user};
use crate::{
    domain::otp,
    http::{
        caller::{Allowed, OwnWithPassword},
        error::{AppError, AppResult},
        extract::Json,
    },
    state::AppState,
    store::{self, AuditEvent, Customer, OtpSeedRecord, Target, UserRecord},
};

/// A seed must be paired within this time.
const SEED_VALID_MS: i64 = 15 * 60 * 1000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_otp))
        .routes(routes!(get_pairing, put_pairing, delete_pairing))
        .routes(routes!(create_seed))
}

fn otp_uri(customer: &Customer, user_id: &str) -> String {
    format!("{}/users/{user_id}/otp", paths::base(&customer.name))
}

fn settings_body(customer: &Customer, user: &UserRecord) -> OtpSettings {
    let uri = otp_uri(customer, &user.id);
    OtpSettings {
        pairing_uri: format!("{uri}/pairing"),
        seeds_uri: format!("{uri}/seeds"),
        enabled: user.otp_enabled,
        uri,
    }
}

/// Two-factor settings of the caller. Needs the caller's own username and password (HTTP Basic).
#[utoipa::path(
    get, path = "/users/{user_id}/otp", tag = "two-factor",
    params(("user_id" = String, Path, description = "User id (the caller's own)")),
    responses(
        (status = 200, description = "Two-factor settings", body = OtpSettings),
        (status = 401, description = "Not authenticated with HTTP Basic credentials of this user (`password_required`)", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
    security(("basic" = []))
)]
async fn get_otp(
    State(state): State<AppState>,
    OwnWithPassword(caller): OwnWithPassword,
    Path(p): Path<UserPath>,
) -> AppResult<axum::Json<OtpSettings>> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    Ok(axum::Json(settings_body(&caller.customer, &user)))
}

/// An empty pairing to fill in with the seed id and two sequential codes.
#[utoipa::path(
    get, path = "/users/{user_id}/otp/pairing", tag = "two-factor",
    params(("user_id" = String, Path, description = "User id (the caller's own)")),
    responses(
        (status = 200, description = "Pairing template", body = OtpPairing),
        (status = 401, description = "Not authenticated with HTTP Basic credentials of this user (`password_required`)", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
    security(("basic" = []))
)]
async fn get_pairing(
    State(state): State<AppState>,
    OwnWithPassword(caller): OwnWithPassword,
    Path(p): Path<UserPath>,
) -> AppResult<axum::Json<OtpPairing>> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    Ok(axum::Json(OtpPairing { uri: format!("{}/pairing", otp_uri(&caller.customer, &user.id)), ..Default::default() }))
}

/// Enable two-factor: the seed id and two sequential codes computed from that seed.
#[utoipa::path(
    put, path = "/users/{user_id}/otp/pairing", tag = "two-factor",
    params(
        ("user_id" = String, Path, description = "User id (the caller's own)"),
        ("X-OTP-Token" = Option<String>, Header, description = "One-time code; required when two-factor is already on"),
    ),
    request_body = OtpPairing,
    responses(
        (status = 200, description = "Two-factor is enabled", body = OtpPairing),
        (status = 400, description = "Unknown or expired seed (`invalid_seed`), or fewer than two valid sequential codes (`invalid_tokens`)", body = ErrorBody),
        (status = 401, description = "Not authenticated with HTTP Basic credentials of this user (`password_required`)", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
    security(("basic" = []))
)]
async fn put_pairing(
    State(state): State<AppState>,
    OwnWithPassword(caller): OwnWithPassword,
    Path(p): Path<UserPath>,
    Json(pairing): Json<OtpPairing>,
) -> AppResult<axum::Json<OtpPairing>> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    let now = state.clock.now_ms();
    let seed = state
        .store
        .otp_seed(&user.id, &pairing.seed_id)
        .await?
        .filter(|s| now - s.created_ms < SEED_VALID_MS)
        .ok_or_else(|| {
        AppError::bad_request("invalid_seed", "This seed is unknown or expired: generate a new one.")
    })?;
    let step = otp::verify_pair(&seed.secret, &pairing.first_token, &pairing.second_token, now).ok_or_else(|| {
        AppError::bad_request(
            "invalid_tokens",
            "The two codes are not two valid sequential codes of this seed: enter the current code, wait for the next one and enter it too.",
        )
    })?;
    let audit = AuditEvent::by(&caller, now, op::OTP_PAIR, Target::user(&user));
    if !state.store.enable_otp(&user.id, &seed.secret, step, &audit).await? {
        return Err(AppError::Conflict { kind: "already_paired", message: "Two-factor is already enabled.".into() });
    }
    Ok(axum::Json(OtpPairing {
        first_token: String::new(),
        second_token: String::new(),
        seed_id: seed.id,
        uri: format!("{}/pairing", otp_uri(&caller.customer, &user.id)),
    }))
}

/// Disable two-factor of a user (administrators only). No effect when it is already disabled. An
/// administrator turning off their own two-factor proves it is them again: their password as HTTP Basic
/// credentials and, while two-factor is on, a current code (X-OTP-Token) — a session alone is refused, so a
/// browser left open cannot strip the account of its second factor.
#[utoipa::path(
    delete, path = "/users/{user_id}/otp/pairing", tag = "two-factor",
    params(
        ("user_id" = String, Path, description = "User id"),
        ("X-OTP-Token" = Option<String>, Header, description = "One-time code; required to turn off one's own two-factor"),
    ),
    responses(
        (status = 200, description = "Two-factor is disabled", body = OtpSettings),
        (status = 401, description = "Not authenticated; or the caller's own two-factor without their password and code on the request (`password_required`, `otp_required`, `otp_invalid`)", body = ErrorBody),
        (status = 403, description = "Only administrators disable two-factor", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
    )
)]
async fn delete_pairing(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::DisableOtp>,
    Path(p): Path<UserPath>,
) -> AppResult<axum::Json<OtpSettings>> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    // Basic credentials with a valid code make a caller with no session (the access rules have refused the
    // password alone); a session, however made, or an API token is not enough for one's own second factor.
    if user.id == caller.user.id && !caller.by_password() {
        return Err(AppError::Unauthorized {
            kind: "password_required",
            message: "Turning off your own two-factor needs your password and a current one-time code again \
                      (HTTP Basic credentials and X-OTP-Token)."
                .into(),
        });
    }
    let audit = AuditEvent::by(&caller, state.clock.now_ms(), op::OTP_UNPAIR, Target::user(&user));
    state.store.disable_otp(&user.id, &audit).await?;
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    Ok(axum::Json(settings_body(&caller.customer, &user)))
}

/// Generate a seed for pairing. Answers 409 once two-factor is enabled.
#[utoipa::path(
    post, path = "/users/{user_id}/otp/seeds", tag = "two-factor",
    params(
        ("user_id" = String, Path, description = "User id (the caller's own)"),
        ("X-OTP-Token" = Option<String>, Header, description = "One-time code; required when two-factor is already on"),
    ),
    responses(
        (status = 200, description = "A new seed (base32) and its id; valid for 15 minutes", body = OtpSeed),
        (status = 401, description = "Not authenticated with HTTP Basic credentials of this user (`password_required`), or two-factor is on and no valid one-time code came (`otp_required`)", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "Two-factor is already enabled (`already_paired`)", body = ErrorBody),
    ),
    security(("basic" = []))
)]
async fn create_seed(
    State(state): State<AppState>,
    OwnWithPassword(caller): OwnWithPassword,
    Path(p): Path<UserPath>,
) -> AppResult<axum::Json<OtpSeed>> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    if user.otp_enabled {
        return Err(AppError::Conflict {
            kind: "already_paired",
            message: "Two-factor is already enabled; an administrator can disable it.".into(),
        });
    }
    let seed = OtpSeedRecord {
        id: store::new_id(),
        user_id: user.id.clone(),
        secret: otp::new_secret(),
        created_ms: state.clock.now_ms(),
    };
    let audit = AuditEvent::by(&caller, seed.created_ms, op::OTP_SEED, Target::user(&user));
    state.store.create_otp_seed(&seed, &audit).await?;
    Ok(axum::Json(OtpSeed { seed: seed.secret, id: seed.id }))
}
