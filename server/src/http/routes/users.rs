//! Users: list, create (local accounts, or a role association for a remote identity source), read, update,
//! delete.

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::{
    ErrorBody, Link, Role, User, UserInput, UserPage,
    audit::op,
    limits::{MAX_NAME_CHARS, MAX_PHONE_CHARS, over_chars},
    paths, perm,
};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    domain::admin,
    http::{
        caller::{Allowed, SelfOr},
        error::{AppError, AppResult},
        extract::{Json, Query},
        paging::{DEFAULT_COUNT, Page, filters},
    },
    state::AppState,
    store::{self, AuditEvent, Customer, NewUser, StoreError, Target, UserRecord, UserUpdate},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_users, create_user)).routes(routes!(get_user, update_user, delete_user))
}

#[derive(Deserialize)]
pub struct UserPath {
    pub user_id: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct UserListQuery {
    /// Page number, from 1 (default 1).
    page: Option<u64>,
    /// Users per page (default 100, at most 1000).
    count: Option<u64>,
    /// Only users whose username or full name contains this text (case-insensitive).
    #[param(max_length = 2048)]
    q: Option<String>,
}

/// The API's view of a stored user.
pub fn user_body(customer: &str, u: &UserRecord) -> User {
    let base = paths::base(customer);
    let uri = format!("{base}/users/{}", u.id);
    User {
        id: u.id.clone(),
        username: u.username.clone(),
        full_name: u.full_name.clone(),
        email: u.email.clone(),
        phone_number: u.phone_number.clone(),
        enabled: u.enabled,
        role: Link { id: u.role.clone(), uri: format!("{base}/roles/{}", u.role) },
        source: Link { id: u.source.clone(), uri: format!("{base}/idps/{}", u.source) },
        otp_enabled: u.otp_enabled,
        otp_uri: format!("{uri}/otp"),
        password_uri: format!("{uri}/password"),
        uri,
    }
}

/// The user `id` of the caller's customer, or 404.
pub async fn find_user(state: &AppState, customer: &Customer, id: &str) -> AppResult<UserRecord> {
    state.store.user_by_id(customer.id, id).await?.ok_or(AppError::NotFound("user"))
}

/// Problems with the detail fields of a local user, one sentence each.
fn detail_problems(full_name: Option<&str>, email: Option<&str>, phone: Option<&str>) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(name) = full_name
        && (over_chars(name, MAX_NAME_CHARS) || name.chars().any(char::is_control))
    {
        problems.push(format!("full_name: at most {MAX_NAME_CHARS} characters, without control characters."));
    }
    if let Some(email) = email.filter(|e| !e.is_empty())
        && !is_email(email)
    {
        problems.push(format!("email: {email:?} is not an e-mail address."));
    }
    if let Some(phone) = phone.filter(|p| !p.is_empty())
        && (over_chars(phone, MAX_PHONE_CHARS) || !is_phone(phone))
    {
        problems.push(format!(
            "phone_number: {phone:?} is not a phone number (digits, spaces, '-', '(', ')', an optional leading '+'; 5 to 15 digits; at most {MAX_PHONE_CHARS} characters)."
        ));
    }
    problems
}

/// A plausible e-mail address: one `@`, a non-empty local part, a dotted domain, no spaces, at most 254
/// characters.
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else { return false };
    s.len() <= 254
        && !local.is_empty()
        && local.len() <= 64
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
        && s.chars().all(|c| c.is_ascii_graphic() || (!c.is_ascii() && !c.is_control()))
        && domain.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '.')
}

/// A plausible phone number: optional `+`, then digits, spaces, `-`, `(`, `)`, with 5 to 15 digits (E.164).
pub fn is_phone(s: &str) -> bool {
    let body = s.strip_prefix('+').unwrap_or(s);
    let digits = body.chars().filter(char::is_ascii_digit).count();
    (5..=15).contains(&digits) && body.chars().all(|c| c.is_ascii_digit() || matches!(c, ' ' | '-' | '(' | ')'))
}

fn invalid_user(problems: Vec<String>) -> AppError {
    AppError::BadRequest { kind: "invalid_user", message: "The user is not valid.".into(), details: problems }
}

fn parse_role(link: &Link) -> AppResult<Role> {
    Role::parse(&link.id).ok_or_else(|| {
        AppError::bad_request("invalid_user", format!("Unknown role {:?}: use admin, operator or viewer.", link.id))
    })
}

fn username_taken(e: StoreError) -> AppError {
    match e {
        StoreError::Conflict(_) => AppError::bad_request("username_taken", "Another user already has this username."),
        other => other.into(),
    }
}

/// Users of the customer, ordered by username, a page at a time.
#[utoipa::path(
    get, path = "/users", tag = "users",
    params(UserListQuery),
    responses(
        (status = 200, description = "A page of users", body = UserPage),
        (status = 400, description = "Invalid page or count", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators list users", body = ErrorBody),
    )
)]
async fn list_users(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadUsers>,
    Query(q): Query<UserListQuery>,
) -> AppResult<axum::Json<UserPage>> {
    let page = Page::of(q.page, q.count, DEFAULT_COUNT)?;
    let search = q.q.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let (users, total) = state.store.list_users(caller.customer.id, search, page.offset(), page.count).await?;
    let items = users.iter().map(|u| user_body(&caller.customer.name, u)).collect();
    let path = format!("{}/users", paths::base(&caller.customer.name));
    Ok(axum::Json(page.paged(&path, &filters(&[("q", search)]), items, total).into()))
}

/// Create a user. With source `local` (the default) a local account with username, password and details; with
/// another registered source, a remote user of which only the role association is held.
#[utoipa::path(
    post, path = "/users", tag = "users",
    request_body = edge_api::schema::NewUserSchema,
    responses(
        (status = 201, description = "The user was created", body = User),
        (status = 400, description = "Invalid user (`invalid_user`, with every problem in details), username taken (`username_taken`), unknown source (`unknown_source`) or password policy (`password_policy`)", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators create users", body = ErrorBody),
    )
)]
async fn create_user(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageUsers>,
    Json(input): Json<UserInput>,
) -> AppResult<Response> {
    let customer = &caller.customer;
    let source = input.source.as_ref().map(|s| s.id.clone()).unwrap_or_else(|| "local".into());
    if !super::roles::source_exists(&state, customer, &source).await? {
        return Err(AppError::bad_request("unknown_source", format!("There is no identity source {source:?}.")));
    }
    let username = input.username.clone().unwrap_or_default();
    let mut problems = Vec::new();
    if let Err(p) = admin::check_username(&username) {
        problems.push(format!("username: {p}"));
    }
    let role = match &input.role {
        Some(link) => Some(parse_role(link)?),
        None => {
            problems.push("role: a role is required (admin, operator or viewer).".into());
            None
        }
    };
    let local = source == "local";
    if local {
        problems.extend(detail_problems(
            input.full_name.as_deref(),
            input.email.as_deref(),
            input.phone_number.as_deref(),
        ));
        if input.password.as_deref().unwrap_or_default().is_empty() {
            problems.push("password: a local user needs an initial password.".into());
        }
    } else {
        let set: Vec<&str> = [
            ("password", input.password.as_deref()),
            ("full_name", input.full_name.as_deref()),
            ("email", input.email.as_deref()),
            ("phone_number", input.phone_number.as_deref()),
        ]
        .into_iter()
        .filter(|(_, v)| v.is_some_and(|v| !v.is_empty()))
        .map(|(k, _)| k)
        .collect();
        if !set.is_empty() {
            problems.push(format!(
                "Users of a remote identity source hold only a role; these fields cannot be set: {}.",
                set.join(", ")
            ));
        }
    }
    let (Some(role), true) = (role, problems.is_empty()) else { return Err(invalid_user(problems)) };
    let password_hash = if local {
        let password = input.password.as_deref().unwrap_or_default();
        edge_api::check_password_policy(&username, password)
            .map_err(|m| AppError::bad_request("password_policy", m))?;
        Some(state.passwords.hash(password).await?)
    } else {
        None
    };
    let user = NewUser {
        id: store::new_id(),
        username,
        source,
        full_name: if local { input.full_name.unwrap_or_default() } else { String::new() },
        email: if local { input.email.unwrap_or_default() } else { String::new() },
        phone_number: if local { input.phone_number.unwrap_or_default() } else { String::new() },
        enabled: input.enabled.unwrap_or(true),
        role: role.as_str().into(),
        password_hash,
    };
    let now = state.clock.now_ms();
    let target = Target { kind: "user", id: user.id.clone(), name: user.username.clone() };
    let audit = AuditEvent::by(&caller, now, op::USER_CREATE, target)
        .detail("role", user.role.as_str())
        .detail("source", user.source.as_str())
        .detail("enabled", user.enabled);
    let record = state.store.create_user(customer.id, &user, now, &audit).await.map_err(username_taken)?;
    let body = user_body(&customer.name, &record);
    Ok((StatusCode::CREATED, [(header::LOCATION, body.uri.clone())], axum::Json(body)).into_response())
}

/// One user, inside the `{has_more, uri, items}` envelope. Any user may read themselves.
#[utoipa::path(
    get, path = "/users/{user_id}", tag = "users",
    params(("user_id" = String, Path, description = "User id")),
    responses(
        (status = 200, description = "The user, as the only item of the envelope", body = UserPage),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators read other users", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
    )
)]
async fn get_user(
    State(state): State<AppState>,
    SelfOr(caller, _): SelfOr<perm::ReadUsers>,
    Path(p): Path<UserPath>,
) -> AppResult<axum::Json<UserPage>> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    let body = user_body(&caller.customer.name, &user);
    Ok(axum::Json(UserPage { has_more: false, uri: body.uri.clone(), items: vec![body], total: 1, page_index: 1 }))
}

/// Update a user: details, role and enabled state of a local user; only the role of a remote one. Fields left
/// out keep their value; read-only fields sent back as read are ignored.
#[utoipa::path(
    put, path = "/users/{user_id}", tag = "users",
    params(("user_id" = String, Path, description = "User id")),
    request_body = edge_api::schema::UserUpdateSchema,
    responses(
        (status = 200, description = "The updated user", body = User),
        (status = 400, description = "Invalid change (`invalid_user` with details, `username_taken`)", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators update users", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "The change would leave no enabled administrator (`last_admin`)", body = ErrorBody),
    )
)]
async fn update_user(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageUsers>,
    Path(p): Path<UserPath>,
    Json(input): Json<UserInput>,
) -> AppResult<axum::Json<User>> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    let mut problems = Vec::new();
    if input.password.as_deref().is_some_and(|p| !p.is_empty()) {
        problems.push("password: passwords change only through the user's password resource.".to_string());
    }
    if input.source.as_ref().is_some_and(|s| s.id != user.source) {
        problems.push("source: the identity source of a user cannot change.".to_string());
    }
    let role = input.role.as_ref().map(parse_role).transpose()?;
    // Only what actually changes counts, so a client can send back the user as it read it.
    let changed = |new: &Option<String>, old: &str| new.as_deref().filter(|v| *v != old).map(str::to_string);
    let update = UserUpdate {
        username: changed(&input.username, &user.username),
        full_name: changed(&input.full_name, &user.full_name),
        email: changed(&input.email, &user.email),
        phone_number: changed(&input.phone_number, &user.phone_number),
        enabled: input.enabled.filter(|e| *e != user.enabled),
        role: role.map(|r| r.as_str().to_string()).filter(|r| *r != user.role),
    };
    if user.source == "local" {
        if let Some(name) = &update.username
            && let Err(p) = admin::check_username(name)
        {
            problems.push(format!("username: {p}"));
        }
        problems.extend(detail_problems(
            update.full_name.as_deref(),
            update.email.as_deref(),
            update.phone_number.as_deref(),
        ));
    } else if update.username.is_some()
        || update.full_name.is_some()
        || update.email.is_some()
        || update.phone_number.is_some()
        || update.enabled.is_some()
    {
        problems.push("Only the role of a user from a remote identity source can change.".to_string());
    }
    if !problems.is_empty() {
        return Err(invalid_user(problems));
    }
    if update == UserUpdate::default() {
        // Nothing differs: nothing to write, nothing to record.
        return Ok(axum::Json(user_body(&caller.customer.name, &user)));
    }
    let operation = if update.role.is_some() { op::USER_ROLE_CHANGE } else { op::USER_UPDATE };
    let mut audit = AuditEvent::by(&caller, state.clock.now_ms(), operation, Target::user(&user));
    for (field, value) in [
        ("username", &update.username),
        ("full_name", &update.full_name),
        ("email", &update.email),
        ("phone_number", &update.phone_number),
        ("role", &update.role),
    ] {
        if let Some(v) = value {
            audit = audit.detail(field, v.as_str());
        }
    }
    if update.role.is_some() {
        audit = audit.detail("previous_role", user.role.as_str());
    }
    if let Some(enabled) = update.enabled {
        audit = audit.detail("enabled", enabled);
    }
    let updated = state
        .store
        .update_user(caller.customer.id, &user.id, &update, &audit)
        .await
        .map_err(username_taken)?
        .ok_or(AppError::NotFound("user"))?;
    Ok(axum::Json(user_body(&caller.customer.name, &updated)))
}

/// Delete a user: a local user completely, a remote user's role association.
#[utoipa::path(
    delete, path = "/users/{user_id}", tag = "users",
    params(("user_id" = String, Path, description = "User id")),
    responses(
        (status = 204, description = "Deleted; the user's sessions end at once"),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators delete users", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "The last enabled administrator cannot be deleted (`last_admin`)", body = ErrorBody),
    )
)]
async fn delete_user(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageUsers>,
    Path(p): Path<UserPath>,
) -> AppResult<StatusCode> {
    let user = find_user(&state, &caller.customer, &p.user_id).await?;
    let audit = AuditEvent::by(&caller, state.clock.now_ms(), op::USER_DELETE, Target::user(&user));
    if !state.store.delete_user(caller.customer.id, &user.id, &audit).await? {
        return Err(AppError::NotFound("user"));
    }
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_and_phones_are_checked_for_shape() {
        for ok in ["a@b.co", "first.last+tag@sub.example.org", "ü@exämple.de"] {
            assert!(is_email(ok), "{ok}");
        }
        for bad in ["", "a", "a@b", "@b.co", "a@b..co", "a b@c.co", "a@b@c.co", "a@.b.co", "a@b.co.", "a@b_c.co"] {
            assert!(!is_email(bad), "{bad}");
        }
        for ok in ["+44 20 7946 0958", "(030) 123-456", "12345"] {
            assert!(is_phone(ok), "{ok}");
        }
        for bad in ["", "1234", "+1 234 567 890 123 456", "phone", "12345x", "++12345"] {
            assert!(!is_phone(bad), "{bad}");
        }
    }
}
