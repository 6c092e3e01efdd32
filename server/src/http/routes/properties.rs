//! Properties and their configuration: read with an ETag, update with If-Match (optimistic concurrency),
//! version history and diffs.

use std::collections::{HashMap, HashSet};

use axum::{
    extract::{Path, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::{
    ErrorBody,
    audit::op,
    config::{
        Change, ConfigDocument, ConfigVersion, HostPattern, MAX_NODES, NewProperty, PropertyConfig, PropertySummary,
        ReadOnly, UpdatePropertyModel, diff, is_valid_property_name,
    },
    limits::{MAX_COMMENT_CHARS, over_chars},
    paths, perm,
};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    clock::iso_ms,
    domain::{
        auth::Caller,
        property_config::{
            Stamp, apply_update, content_hash, etag, new_readonly_parts, parse, public_suffix_problems, stamp_new,
            unknown_readonly_parts,
        },
        tasks::{CONFIG_DEPLOY, TaskTarget, new_task},
    },
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
        extract::{Json, Query},
    },
    state::AppState,
    store::{AuditEvent, ConfigVersionRecord, Customer, PropertyRecord, Target},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_properties, create_property))
        .routes(routes!(get_config, put_config))
        .routes(routes!(list_versions))
        .routes(routes!(get_version))
        .routes(routes!(diff_versions))
}

#[derive(Deserialize)]
struct PropertyPath {
    property_name: String,
}

fn config_uri(customer: &Customer, name: &str) -> String {
    format!("{}/properties/{name}/config", paths::base(&customer.name))
}

fn document(v: &ConfigVersionRecord) -> AppResult<ConfigDocument> {
    let config: PropertyConfig = serde_json::from_str(&v.config).map_err(|e| anyhow::anyhow!("stored config: {e}"))?;
    Ok(ConfigDocument {
        config,
        etag: v.etag.clone(),
        version: v.version,
        author: v.author.clone(),
        modified: iso_ms(v.created_ms),
        comment: v.comment.clone(),
    })
}

fn with_etag(doc: ConfigDocument) -> Response {
    let etag = HeaderValue::from_str(&doc.etag).unwrap_or_else(|_| HeaderValue::from_static("\"\""));
    ([(header::ETAG, etag)], axum::Json(doc)).into_response()
}

async fn find(state: &AppState, caller: &Caller, name: &str) -> AppResult<(PropertyRecord, ConfigVersionRecord)> {
    state.store.property(caller.customer.id, name).await?.ok_or(AppError::NotFound("property"))
}

/// Stores a new version of a property (the first when `existing` is None), with its deployment task. A
/// configuration equal to an earlier version's is recorded as a rollback to that version.
async fn save(
    state: &AppState,
    caller: &Caller,
    name: &str,
    existing: Option<&PropertyRecord>,
    config: &PropertyConfig,
    new_nodes: &[ReadOnly],
    comment: &str,
) -> AppResult<Option<ConfigVersionRecord>> {
    let json = serde_json::to_string(config).map_err(anyhow::Error::from)?;
    let version = existing.map_or(1, |p| p.version + 1);
    let restored = match existing {
        Some(p) => {
            state.store.config_version_with_content(p.id, &content_hash(&json)).await?.filter(|v| *v < p.version)
        }
        None => None,
    };
    let record = ConfigVersionRecord {
        version,
        etag: etag(version, &json),
        config: json,
        author: caller.user.username.clone(),
        created_ms: state.clock.now_ms(),
        comment: comment.to_string(),
    };
    let uri = config_uri(&caller.customer, name);
    let task = new_task(state, caller, CONFIG_DEPLOY, TaskTarget { id: name, uri: &uri, name });
    let operation = match (existing, restored) {
        (None, _) => op::PROPERTY_CREATE,
        (Some(_), None) => op::CONFIG_UPDATE,
        (Some(_), Some(_)) => op::CONFIG_ROLLBACK,
    };
    let mut audit = AuditEvent::by(caller, record.created_ms, operation, Target::property(name));
    if let Some(p) = existing {
        audit = audit.detail("from_version", p.version);
    }
    audit = audit.detail("to_version", version);
    if let Some(v) = restored {
        audit = audit.detail("restored_version", v);
    }
    match existing {
        Some(p) => {
            let stored = state.store.update_property_config(p.id, p.version, &record, new_nodes, &task, &audit).await?;
            Ok(stored.then_some(record))
        }
        None => {
            let stored = state.store.create_property(caller.customer.id, name, &record, new_nodes, &task, &audit).await;
            stored.map_err(|e| match e {
                crate::store::StoreError::Conflict(_) => {
                    AppError::Conflict { kind: "conflict", message: format!("A property {name:?} already exists.") }
                }
                other => other.into(),
            })?;
            Ok(Some(record))
        }
    }
}

/// The customer's properties, by name, with their current version.
#[utoipa::path(
    get, path = "/properties", tag = "properties",
    responses(
        (status = 200, description = "The properties", body = Vec<PropertySummary>),
        (status = 401, description = "Not authenticated", body = ErrorBody),
    )
)]
async fn list_properties(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadConfig>,
) -> AppResult<axum::Json<Vec<PropertySummary>>> {
    let items = state
        .store
        .properties(caller.customer.id)
        .await?
        .into_iter()
        .map(|(p, v)| PropertySummary {
            uri: config_uri(&caller.customer, &p.name),
            host_patterns: serde_json::from_str::<PropertyConfig>(&v.config)
                .map(|c| c.host_patterns.into_iter().map(|h| h.pattern).collect())
                .unwrap_or_default(),
            name: p.name,
            version: p.version,
            etag: v.etag,
            modified: iso_ms(v.created_ms),
        })
        .collect();
    Ok(axum::Json(items))
}

/// Create a property with its host patterns (beyond the original API; at most 5,000).
#[utoipa::path(
    post, path = "/properties", tag = "properties",
    request_body = NewProperty,
    responses(
        (status = 201, description = "The property's first configuration", body = ConfigDocument),
        (status = 400, description = "Invalid name or host patterns (`invalid_config`)", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change configurations", body = ErrorBody),
        (status = 409, description = "A property of this name exists (`conflict`), or a host pattern is claimed by another property or overlaps another account's (`host_claimed`)", body = ErrorBody),
    )
)]
async fn create_property(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteConfig>,
    Json(input): Json<NewProperty>,
) -> AppResult<Response> {
    if input.host_patterns.len() > MAX_NODES {
        return Err(AppError::bad_request(
            "invalid_config",
            format!(
                "host_patterns: {} patterns; a configuration holds at most {MAX_NODES} nodes.",
                input.host_patterns.len()
            ),
        ));
    }
    if !is_valid_property_name(&input.name) {
        return Err(AppError::bad_request(
            "invalid_config",
            "name: 1 to 63 of a-z, 0-9, '-', '_', '.', starting with a letter or digit.",
        ));
    }
    let mut config = PropertyConfig {
        id: String::new(),
        name: input.name.clone(),
        readonly: ReadOnly::default(),
        host_patterns: input
            .host_patterns
            .iter()
            .map(|p| HostPattern { id: String::new(), readonly: ReadOnly::default(), pattern: p.trim().to_lowercase() })
            .collect(),
        origins: Vec::new(),
        cache_rules: Vec::new(),
        security: Default::default(),
    };
    let mut problems = edge_api::config::validate(&config, &|_| false);
    problems.extend(public_suffix_problems(&config));
    if !problems.is_empty() {
        return Err(AppError::BadRequest {
            kind: "invalid_config",
            message: "The property is not valid.".into(),
            details: problems,
        });
    }
    let now = iso_ms(state.clock.now_ms());
    stamp_new(&mut config, &Stamp { author: &caller.user.username, now: &now });
    let nodes = new_readonly_parts(None, &config);
    let record = save(&state, &caller, &input.name, None, &config, &nodes, "Created")
        .await?
        .ok_or_else(|| anyhow::anyhow!("not stored"))?;
    let mut response = with_etag(document(&record)?);
    *response.status_mut() = StatusCode::CREATED;
    response.headers_mut().insert(
        header::LOCATION,
        HeaderValue::from_str(&config_uri(&caller.customer, &input.name)).unwrap_or(HeaderValue::from_static("")),
    );
    Ok(response)
}

/// A property's current configuration; its etag is in the ETag header and the body.
#[utoipa::path(
    get, path = "/properties/{property_name}/config", tag = "properties",
    params(("property_name" = String, Path, description = "Property name")),
    responses(
        (status = 200, description = "The configuration, with its etag", body = ConfigDocument,
         headers(("ETag" = String, description = "Strong entity tag; send it in If-Match to update"))),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No such property", body = ErrorBody),
    )
)]
async fn get_config(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadConfig>,
    Path(p): Path<PropertyPath>,
) -> AppResult<Response> {
    let (_, current) = find(&state, &caller, &p.property_name).await?;
    Ok(with_etag(document(&current)?))
}

/// Replace a property's configuration. `If-Match` must carry the etag read (missing: 428; stale: 409 with the
/// current etag). Nodes are matched by the key of the read-only part they send, else restored when that
/// read-only part is one this property's nodes had in an earlier version (a rollback brings removed nodes back
/// as they were), else by id; new nodes may not set read-only fields and existing ones may not change theirs.
/// At most 5,000 nodes (host patterns, origins, cache rules, WAF and traffic-shaping rules together).
#[utoipa::path(
    put, path = "/properties/{property_name}/config", tag = "properties",
    params(
        ("property_name" = String, Path, description = "Property name"),
        ("If-Match" = String, Header, description = "The etag of the configuration this update is based on"),
    ),
    request_body = UpdatePropertyModel,
    responses(
        (status = 200, description = "Updated; the new etag", body = ConfigDocument,
         headers(("ETag" = String, description = "The new entity tag"))),
        (status = 400, description = "Invalid JSON, or an invalid configuration (`invalid_config`, every problem by node path)", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change configurations", body = ErrorBody),
        (status = 404, description = "No such property", body = ErrorBody),
        (status = 409, description = "The etag is stale: someone else updated meanwhile (`stale_etag`); the current etag is in the ETag header. Or a host pattern is claimed by another property or overlaps another account's (`host_claimed`)", body = ErrorBody),
        (status = 428, description = "No If-Match header (`precondition_required`)", body = ErrorBody),
    )
)]
async fn put_config(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteConfig>,
    Path(p): Path<PropertyPath>,
    headers: HeaderMap,
    Json(update): Json<UpdatePropertyModel>,
) -> AppResult<Response> {
    if over_chars(&update.comment, MAX_COMMENT_CHARS) {
        return Err(AppError::bad_request(
            "invalid_config",
            format!("comment: at most {MAX_COMMENT_CHARS} characters (every version keeps its comment)."),
        ));
    }
    let (property, current) = find(&state, &caller, &p.property_name).await?;
    let if_match = headers.get(header::IF_MATCH).and_then(|v| v.to_str().ok()).map(str::trim);
    let Some(if_match) = if_match.filter(|v| !v.is_empty() && *v != "*") else {
        return Err(AppError::PreconditionRequired(
            "Send the etag of the configuration you edited in If-Match (read it with GET).".into(),
        ));
    };
    let unquoted = |s: &str| s.trim_matches('"').to_string();
    if unquoted(if_match) != unquoted(&current.etag) {
        return Err(AppError::StaleEtag { etag: Some(current.etag) });
    }
    let existing = document(&current)?.config;
    let lists: HashSet<String> = {
        let (lists, _) = state.store.network_lists(caller.customer.id, None, true, 0, u64::MAX / 2).await?;
        lists.into_iter().map(|l| l.id).collect()
    };
    let invalid = |problems: Vec<String>| AppError::BadRequest {
        kind: "invalid_config",
        message: format!("The configuration is not valid: {} problem(s).", problems.len()),
        details: problems,
    };
    // Reading, matching and checking are linear in the nodes (at most MAX_NODES), but a large configuration
    // still takes milliseconds: off the async threads.
    let incoming = update.config;
    let next = off_runtime(move || parse(&incoming)).await?.map_err(invalid)?;
    // Read-only parts that no current node has may be ones of nodes removed since (a rollback): those the
    // server issued to this property come back as they were.
    let earlier: HashMap<String, ReadOnly> = state
        .store
        .property_nodes(property.id, &unknown_readonly_parts(&existing, &next))
        .await?
        .into_iter()
        .map(|r| (r.key.clone(), r))
        .collect();
    let (author, now) = (caller.user.username.clone(), iso_ms(state.clock.now_ms()));
    let (next, new_nodes) = off_runtime(move || {
        let stamp = Stamp { author: &author, now: &now };
        let next =
            apply_update(&existing, next, &stamp, &|id| lists.contains(id), &|r| earlier.get(&r.key) == Some(r))?;
        let public_suffixes = public_suffix_problems(&next);
        if !public_suffixes.is_empty() {
            return Err(public_suffixes);
        }
        let new_nodes = new_readonly_parts(Some(&existing), &next);
        Ok((next, new_nodes))
    })
    .await?
    .map_err(invalid)?;
    match save(&state, &caller, &property.name, Some(&property), &next, &new_nodes, update.comment.trim()).await? {
        Some(record) => Ok(with_etag(document(&record)?)),
        None => {
            // Another update was stored between our read and our write.
            let now = state.store.property(caller.customer.id, &property.name).await?;
            Err(AppError::StaleEtag { etag: now.map(|(_, current)| current.etag) })
        }
    }
}

/// The version history, newest first. A rollback is an update with an old version's configuration.
#[utoipa::path(
    get, path = "/properties/{property_name}/config/versions", tag = "properties",
    params(("property_name" = String, Path, description = "Property name")),
    responses(
        (status = 200, description = "Every version: author, time, comment", body = Vec<ConfigVersion>),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No such property", body = ErrorBody),
    )
)]
async fn list_versions(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadConfig>,
    Path(p): Path<PropertyPath>,
) -> AppResult<axum::Json<Vec<ConfigVersion>>> {
    let (property, _) = find(&state, &caller, &p.property_name).await?;
    let versions = state.store.config_versions(property.id).await?;
    Ok(axum::Json(
        versions
            .into_iter()
            .map(|v| ConfigVersion {
                version: v.version,
                etag: v.etag,
                author: v.author,
                created: iso_ms(v.created_ms),
                comment: v.comment,
            })
            .collect(),
    ))
}

#[derive(Deserialize)]
struct VersionPath {
    property_name: String,
    version: u64,
}

#[utoipa::path(
    get, path = "/properties/{property_name}/config/versions/{version}", tag = "properties",
    params(("property_name" = String, Path, description = "Property name"), ("version" = u64, Path, description = "Version number")),
    responses(
        (status = 200, description = "That version's configuration", body = ConfigDocument),
        (status = 400, description = "The version is not a number", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No such property or version", body = ErrorBody),
    )
)]
async fn get_version(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadConfig>,
    p: Result<Path<VersionPath>, axum::extract::rejection::PathRejection>,
) -> AppResult<axum::Json<ConfigDocument>> {
    let Path(p) = p.map_err(|_| AppError::invalid_parameter("The version is a number."))?;
    let (property, _) = find(&state, &caller, &p.property_name).await?;
    let v = state.store.config_version(property.id, p.version).await?.ok_or(AppError::NotFound("version"))?;
    Ok(axum::Json(document(&v)?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct DiffQuery {
    /// The older version.
    from: u64,
    /// The newer version.
    to: u64,
}

/// The differences between two versions; nodes are named by id (`$.cache_rules[id=…].ttl_seconds`).
#[utoipa::path(
    get, path = "/properties/{property_name}/config/diff", tag = "properties",
    params(("property_name" = String, Path, description = "Property name"), DiffQuery),
    responses(
        (status = 200, description = "The changes from `from` to `to`", body = Vec<Change>),
        (status = 400, description = "Missing or invalid from/to", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No such property or version", body = ErrorBody),
    )
)]
async fn diff_versions(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadConfig>,
    Path(p): Path<PropertyPath>,
    Query(q): Query<DiffQuery>,
) -> AppResult<axum::Json<Vec<Change>>> {
    let (property, _) = find(&state, &caller, &p.property_name).await?;
    let load = |v: u64| {
        let state = state.clone();
        async move {
            let record = state.store.config_version(property.id, v).await?.ok_or(AppError::NotFound("version"))?;
            serde_json::from_str::<serde_json::Value>(&record.config).map_err(|e| AppError::Internal(e.into()))
        }
    };
    let (a, b) = (load(q.from).await?, load(q.to).await?);
    Ok(axum::Json(off_runtime(move || diff(&a, &b)).await?))
}

/// Runs CPU work that grows with a configuration's size on a blocking thread.
pub(super) async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> AppResult<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| AppError::Internal(anyhow::anyhow!("configuration work: {e}")))
}
