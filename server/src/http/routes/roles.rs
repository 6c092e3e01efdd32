//! Roles and identity sources.

use axum::{
    Json,
    extract::{Path, State},
};
use edge_api::{ErrorBody, IdentitySource, Link, LinkPage, Role, RoleBody, paths, perm};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
        extract::Query,
        paging::PageQuery,
    },
    state::AppState,
    store::Customer,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_roles))
        .routes(routes!(get_role))
        .routes(routes!(list_sources))
        .routes(routes!(get_source))
}

/// The configuration of the local identity source.
pub fn local_configuration() -> serde_json::Map<String, serde_json::Value> {
    let serde_json::Value::Object(map) = serde_json::json!({
        "type": "local",
        "password_min_length": edge_api::PASSWORD_MIN_LENGTH,
        "otp": "optional",
    }) else {
        unreachable!("a JSON object literal")
    };
    map
}

/// Whether `id` names an identity source of the customer.
pub async fn source_exists(state: &AppState, customer: &Customer, id: &str) -> AppResult<bool> {
    Ok(id == "local" || state.store.identity_sources(customer.id).await?.iter().any(|(s, _)| s == id))
}

#[derive(Deserialize)]
struct RolePath {
    role_id: String,
}

#[derive(Deserialize)]
struct SourcePath {
    source_id: String,
}

/// The roles: `admin`, `operator`, `viewer`.
#[utoipa::path(
    get, path = "/roles", tag = "users",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of roles", body = LinkPage),
        (status = 400, description = "Invalid page or count", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators read roles", body = ErrorBody),
    )
)]
async fn list_roles(
    State(_): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadRoles>,
    Query(q): Query<PageQuery>,
) -> AppResult<Json<LinkPage>> {
    let base = paths::base(&caller.customer.name);
    let all =
        Role::ALL.iter().map(|r| Link { id: r.as_str().into(), uri: format!("{base}/roles/{}", r.as_str()) }).collect();
    Ok(Json(q.resolve()?.of_all(&format!("{base}/roles"), all).into()))
}

#[utoipa::path(
    get, path = "/roles/{role_id}", tag = "users",
    params(("role_id" = String, Path, description = "admin, operator or viewer")),
    responses(
        (status = 200, description = "The role", body = RoleBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators read roles", body = ErrorBody),
        (status = 404, description = "No such role", body = ErrorBody),
    )
)]
async fn get_role(
    State(_): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadRoles>,
    Path(p): Path<RolePath>,
) -> AppResult<Json<RoleBody>> {
    let role = Role::parse(&p.role_id).ok_or(AppError::NotFound("role"))?;
    let uri = format!("{}/roles/{}", paths::base(&caller.customer.name), role.as_str());
    Ok(Json(RoleBody { name: role.as_str().into(), id: role.as_str().into(), uri }))
}

/// Identity sources: `local` (always) and any registered remote source.
#[utoipa::path(
    get, path = "/idps", tag = "users",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of identity sources", body = LinkPage),
        (status = 400, description = "Invalid page or count", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators read identity sources", body = ErrorBody),
    )
)]
async fn list_sources(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadRoles>,
    Query(q): Query<PageQuery>,
) -> AppResult<Json<LinkPage>> {
    let base = paths::base(&caller.customer.name);
    let ids = std::iter::once("local".to_string())
        .chain(state.store.identity_sources(caller.customer.id).await?.into_iter().map(|(id, _)| id));
    let all = ids.map(|id| Link { uri: format!("{base}/idps/{id}"), id }).collect();
    Ok(Json(q.resolve()?.of_all(&format!("{base}/idps"), all).into()))
}

#[utoipa::path(
    get, path = "/idps/{source_id}", tag = "users",
    params(("source_id" = String, Path, description = "Identity source id, e.g. local")),
    responses(
        (status = 200, description = "The identity source", body = IdentitySource),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators read identity sources", body = ErrorBody),
        (status = 404, description = "No such identity source", body = ErrorBody),
    )
)]
async fn get_source(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadRoles>,
    Path(p): Path<SourcePath>,
) -> AppResult<Json<IdentitySource>> {
    let uri = format!("{}/idps/{}", paths::base(&caller.customer.name), p.source_id);
    let configuration = if p.source_id == "local" {
        local_configuration()
    } else {
        let sources = state.store.identity_sources(caller.customer.id).await?;
        let (_, config) =
            sources.into_iter().find(|(id, _)| *id == p.source_id).ok_or(AppError::NotFound("identity source"))?;
        serde_json::from_str(&config).unwrap_or_default()
    };
    Ok(Json(IdentitySource { configuration, id: p.source_id, uri }))
}
