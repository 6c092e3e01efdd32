//! The customer account and its features.

use axum::extract::State;
use edge_api::{Account, AccountUpdate, ErrorBody, Feature, audit::op, paths, perm};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::users::is_email;
use crate::{
    clock::iso_ms,
    http::{
        caller::{Allowed, AllowedElseNotFound},
        error::{AppError, AppResult},
        extract::Json,
    },
    state::AppState,
    store::{AccountChange, AuditEvent, Customer, Target},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_account, put_account)).routes(routes!(list_features))
}

fn account_body(c: &Customer) -> Account {
    Account {
        name: c.name.clone(),
        display_name: c.display_name.clone(),
        contact_email: c.contact_email.clone(),
        timezone: c.timezone.clone(),
        created: iso_ms(c.created_ms),
        uri: format!("{}/account", paths::base(&c.name)),
    }
}

/// `UTC`, or a zone of the IANA time zone database such as `Europe/Berlin` (its links included, e.g.
/// `Asia/Calcutta`), spelt exactly.
fn is_timezone(tz: &str) -> bool {
    tz == "UTC" || tz.parse::<chrono_tz::Tz>().is_ok()
}

#[utoipa::path(
    get, path = "/account", tag = "account",
    responses(
        (status = 200, description = "The account", body = Account),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not read the account", body = ErrorBody),
    )
)]
async fn get_account(Allowed(caller, _): Allowed<perm::ReadAccount>) -> AppResult<axum::Json<Account>> {
    Ok(axum::Json(account_body(&caller.customer)))
}

/// Change the account's display name, contact e-mail and time zone; fields left out keep their value (each
/// field is written on its own, so concurrent partial updates do not undo each other). The name cannot change.
#[utoipa::path(
    put, path = "/account", tag = "account",
    request_body = AccountUpdate,
    responses(
        (status = 200, description = "The updated account", body = Account),
        (status = 400, description = "Invalid information (`invalid_account` with details), or a different name (`immutable_field`)", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "The caller is not an administrator (the API answers 404 to an issuer not authorized to change the account)", body = ErrorBody),
    )
)]
async fn put_account(
    State(state): State<AppState>,
    AllowedElseNotFound(caller, _): AllowedElseNotFound<perm::WriteAccount>,
    Json(update): Json<AccountUpdate>,
) -> AppResult<axum::Json<Account>> {
    let c = &caller.customer;
    if let Some(name) = update.name.as_deref()
        && name != c.name
    {
        return Err(AppError::bad_request(
            "immutable_field",
            format!("The account name is {:?} and cannot change.", c.name),
        ));
    }
    let mut problems = Vec::new();
    if let Some(display_name) = &update.display_name
        && (display_name.trim().is_empty()
            || display_name.chars().count() > 200
            || display_name.chars().any(char::is_control))
    {
        problems.push("display_name: 1 to 200 characters, without control characters.".to_string());
    }
    if let Some(contact_email) = &update.contact_email
        && !contact_email.is_empty()
        && !is_email(contact_email)
    {
        problems.push(format!("contact_email: {contact_email:?} is not an e-mail address."));
    }
    if let Some(timezone) = &update.timezone
        && !is_timezone(timezone)
    {
        problems.push(format!(
            "timezone: {timezone:?} is not UTC or a time zone of the IANA database such as Europe/Berlin."
        ));
    }
    if !problems.is_empty() {
        return Err(AppError::BadRequest {
            kind: "invalid_account",
            message: "The account is not valid.".into(),
            details: problems,
        });
    }
    let change = AccountChange {
        display_name: update.display_name.map(|d| d.trim().to_string()),
        contact_email: update.contact_email,
        timezone: update.timezone,
    };
    let mut audit = AuditEvent::by(&caller, state.clock.now_ms(), op::ACCOUNT_UPDATE, Target::account(c));
    for (field, value) in [
        ("display_name", &change.display_name),
        ("contact_email", &change.contact_email),
        ("timezone", &change.timezone),
    ] {
        if let Some(v) = value {
            audit = audit.detail(field, v.as_str());
        }
    }
    let updated = state.store.update_customer(c.id, &change, &audit).await?.ok_or(AppError::NotFound("account"))?;
    Ok(axum::Json(account_body(&updated)))
}

/// The features of the account and whether each is enabled.
#[utoipa::path(
    get, path = "/features", tag = "account",
    responses(
        (status = 200, description = "The features", body = Vec<Feature>),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not read the account", body = ErrorBody),
    )
)]
async fn list_features(Allowed(_, _): Allowed<perm::ReadAccount>) -> AppResult<axum::Json<Vec<Feature>>> {
    let feature = |id: &str, name: &str, description: &str| Feature {
        id: id.into(),
        name: name.into(),
        description: description.into(),
        enabled: true,
    };
    Ok(axum::Json(vec![
        feature(
            "delivery_statistics",
            "Delivery statistics",
            "Hits, bandwidth and timing by dimension, and the top URLs.",
        ),
        feature(
            "security_statistics",
            "Security statistics",
            "Security events, WAF and traffic-shaping trends and top-K reports.",
        ),
        feature("waf", "Web application firewall", "WAF rules per property, blocking or warning."),
        feature(
            "traffic_shaping",
            "Traffic shaping",
            "Blocking, rate-limiting or warning by IP, range, country or network list.",
        ),
        feature("cache_purge", "Cache purge", "Purging or expiring cached content, limited to 2 requests per second."),
        feature("network_lists", "Network lists", "Up to 50,000 IP or country entries per list."),
        feature("two_factor", "Two-factor authentication", "Time-based one-time passwords for the console's users."),
        feature("log_ingestion", "Log ingestion", "Access logs and security events sent as NDJSON."),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_zones_look_like_iana_names() {
        for ok in
            ["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "Asia/Kolkata", "Asia/Calcutta"]
        {
            assert!(is_timezone(ok), "{ok}");
        }
        for bad in [
            "",
            "Berlin",
            "europe/berlin",
            "Europe/",
            "Europe//Berlin",
            "Europe/Ber lin",
            "Europe/Springfield",
            "Mars/Olympus_Mons",
        ] {
            assert!(!is_timezone(bad), "{bad}");
        }
    }
}
