//! Network lists: IP or GEO lists with paged entries, each change tracked by a deployment task.

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::{
    AddEntriesResult, EntryInput, EntryPage, EntryRef, ErrorBody, MAX_ENTRIES_PER_CALL, MAX_ENTRIES_PER_LIST,
    NetworkList, NetworkListEntry, NetworkListPage, NetworkListUpdate, NetworkListUsage, NewNetworkList, PropertyUse,
    RuleUse, Task, USAGE_MAX_PROPERTIES, USAGE_MAX_RULES,
    audit::op,
    config::PropertyConfig,
    limits::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, over_chars},
    normalize_entry, paths, perm,
};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    domain::{
        auth::Caller,
        tasks::{NETWORK_LIST_DEPLOY, TaskTarget, new_task, task_body},
    },
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
        extract::{Json, Query},
        paging::{DEFAULT_COUNT, Page, filters},
    },
    state::AppState,
    store::{self, AuditEvent, Customer, EntryRecord, NetworkListRecord, Target},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_lists, create_list))
        .routes(routes!(get_list, add_entries, update_list, delete_list))
        .routes(routes!(list_entries, add_entries_at_entries))
        .routes(routes!(get_entry, delete_entry_at_entries))
        .routes(routes!(delete_entry))
        .routes(routes!(delete_all_entries))
        .routes(routes!(list_usage))
        // No entry has the id `usage` either: removing it answers 404 like any missing entry, as before the
        // usage was readable there.
        .route(
            "/config/networklists/{network_list_id}/usage",
            axum::routing::delete(|state, allowed, Path(p): Path<ListPath>| async move {
                delete_entry_named(state, allowed, &p.network_list_id, "usage").await
            }),
        )
        .route(
            "/config/networklists/{network_list_id}/entries/deletions",
            axum::routing::get(get_entry_named_deletions).delete(delete_entry_named_deletions),
        )
}

/// `YYYY-MM-DDTHH:MM:SSZ`
fn timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn list_uri(customer: &Customer, id: &str) -> String {
    format!("{}/config/networklists/{id}", paths::base(&customer.name))
}

fn list_body(customer: &Customer, l: &NetworkListRecord, entries: Option<Vec<String>>) -> NetworkList {
    let uri = list_uri(customer, &l.id);
    NetworkList {
        id: l.id.clone(),
        list_type: l.list_type.clone(),
        list: entries,
        name: l.name.clone(),
        description: l.description.clone(),
        deprecated: l.deprecated,
        entries_uri: format!("{uri}/entries"),
        entries_batch_deletion_uri: format!("{uri}/entries/deletions"),
        creation_timestamp: timestamp(l.created_ms),
        modified_timestamp: l.modified_ms.map(timestamp),
        uri,
    }
}

/// The deployment task of a change to `list`.
fn deploy_task(state: &AppState, caller: &Caller, list: &NetworkListRecord) -> store::TaskRecord {
    let uri = list_uri(&caller.customer, &list.id);
    new_task(state, caller, NETWORK_LIST_DEPLOY, TaskTarget { id: &list.id, uri: &uri, name: &list.name })
}

async fn find_list(state: &AppState, customer: &Customer, id: &str) -> AppResult<NetworkListRecord> {
    state.store.network_list(customer.id, id).await?.ok_or(AppError::NotFound("network list"))
}

fn check_call_size(n: usize) -> AppResult<()> {
    if n > MAX_ENTRIES_PER_CALL {
        return Err(AppError::bad_request(
            "limit_exceeded",
            format!("At most {MAX_ENTRIES_PER_CALL} entries per call; this one has {n}."),
        ));
    }
    Ok(())
}

/// Validates and normalises entries: all valid, or 400 naming every invalid one.
fn normalize_all(list_type: &str, values: &[&str]) -> AppResult<Vec<String>> {
    check_call_size(values.len())?;
    let mut good = Vec::with_capacity(values.len());
    let mut problems = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match normalize_entry(list_type, v) {
            Ok(n) => good.push(n),
            Err(p) => problems.push(format!("[{i}]: {p}")),
        }
    }
    if !problems.is_empty() {
        return Err(AppError::BadRequest {
            kind: "invalid_entries",
            message: format!("{} of {} entries are invalid; nothing was added.", problems.len(), values.len()),
            details: problems,
        });
    }
    Ok(good)
}

fn entry_records(caller: &Caller, values: Vec<String>, now: i64) -> Vec<EntryRecord> {
    values
        .into_iter()
        .map(|value| EntryRecord {
            id: store::new_id(),
            value,
            added_by: caller.user.username.clone(),
            created_ms: now,
        })
        .collect()
}

fn check_name(name: &str) -> AppResult<()> {
    if name.trim().is_empty() || over_chars(name, MAX_NAME_CHARS) || name.chars().any(char::is_control) {
        return Err(AppError::bad_request(
            "invalid_network_list",
            format!("name: 1 to {MAX_NAME_CHARS} characters, without control characters."),
        ));
    }
    Ok(())
}

/// Every listing carries the description, so it is bounded before anything is stored.
fn check_description(description: &str) -> AppResult<()> {
    if over_chars(description, MAX_DESCRIPTION_CHARS) {
        return Err(AppError::bad_request(
            "invalid_network_list",
            format!("description: at most {MAX_DESCRIPTION_CHARS} characters."),
        ));
    }
    Ok(())
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Page number, from 1 (default 1).
    page: Option<u64>,
    /// Lists per page (default 10, at most 1000).
    count: Option<u64>,
    /// `IP` or `GEO`; both when absent.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    list_type: Option<String>,
    /// Include deprecated lists (default false).
    deprecated: Option<bool>,
}

/// The customer's network lists, by name, a page at a time (without their entries).
#[utoipa::path(
    get, path = "/config/networklists", tag = "network lists",
    params(ListQuery),
    responses(
        (status = 200, description = "A page of network lists", body = NetworkListPage),
        (status = 400, description = "Invalid query parameters", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not read network lists", body = ErrorBody),
    )
)]
async fn list_lists(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadLists>,
    Query(q): Query<ListQuery>,
) -> AppResult<axum::Json<NetworkListPage>> {
    let page = Page::of(q.page, q.count, 10)?;
    if let Some(t) = q.list_type.as_deref()
        && !["IP", "GEO"].contains(&t)
    {
        return Err(AppError::invalid_parameter(format!("type: {t:?} is not IP or GEO.")));
    }
    let deprecated = q.deprecated.unwrap_or(false);
    let (lists, total) = state
        .store
        .network_lists(caller.customer.id, q.list_type.as_deref(), deprecated, page.offset(), page.count)
        .await?;
    let items = lists.iter().map(|l| list_body(&caller.customer, l, None)).collect();
    let sent = filters(&[("type", q.list_type.as_deref()), ("deprecated", deprecated.then_some("true"))]);
    let path = format!("{}/config/networklists", paths::base(&caller.customer.name));
    Ok(axum::Json(page.paged(&path, &sent, items, total).into()))
}

/// Create a network list, optionally with its first entries.
#[utoipa::path(
    post, path = "/config/networklists", tag = "network lists",
    request_body = edge_api::schema::NewNetworkListSchema,
    responses(
        (status = 201, description = "The new list, with its entries; its deployment is a task", body = NetworkList),
        (status = 400, description = "Invalid name or type (`invalid_network_list`), invalid entries (`invalid_entries`, each in details) or too many (`limit_exceeded`)", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change network lists", body = ErrorBody),
    )
)]
async fn create_list(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteLists>,
    Json(input): Json<NewNetworkList>,
) -> AppResult<Response> {
    check_name(&input.name)?;
    check_description(&input.description)?;
    if !["IP", "GEO"].contains(&input.list_type.as_str()) {
        return Err(AppError::bad_request(
            "invalid_network_list",
            format!("type: {:?} is not IP or GEO.", input.list_type),
        ));
    }
    let values: Vec<&str> = input.list.iter().map(String::as_str).collect();
    let mut normalized = normalize_all(&input.list_type, &values)?;
    let mut seen = std::collections::HashSet::new();
    normalized.retain(|v| seen.insert(v.clone()));
    let now = state.clock.now_ms();
    let record = NetworkListRecord {
        id: format!("{}_{}", input.list_type.to_lowercase(), store::new_id()),
        customer_id: caller.customer.id,
        name: input.name.trim().to_string(),
        list_type: input.list_type.clone(),
        description: input.description,
        deprecated: false,
        created_ms: now,
        modified_ms: None,
        entry_count: 0,
    };
    let uri = list_uri(&caller.customer, &record.id);
    let task = deploy_task(&state, &caller, &record);
    let entries = entry_records(&caller, normalized.clone(), now);
    let audit = AuditEvent::by(&caller, now, op::LIST_CREATE, Target::network_list(&record.id, &record.name))
        .detail("type", record.list_type.as_str())
        .detail("entries", entries.len());
    state.store.create_network_list(&record, &entries, &task, &audit).await?;
    let body = list_body(&caller.customer, &record, Some(normalized));
    Ok((StatusCode::CREATED, [(header::LOCATION, uri)], axum::Json(body)).into_response())
}

#[derive(Deserialize)]
struct ListPath {
    network_list_id: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct GetListQuery {
    /// Include the entries (default true).
    includelist: Option<bool>,
}

#[utoipa::path(
    get, path = "/config/networklists/{network_list_id}", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id"), GetListQuery),
    responses(
        (status = 200, description = "The list", body = NetworkList),
        (status = 400, description = "Invalid query parameters", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not read network lists", body = ErrorBody),
        (status = 404, description = "No such list", body = ErrorBody),
    )
)]
async fn get_list(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadLists>,
    Path(p): Path<ListPath>,
    Query(q): Query<GetListQuery>,
) -> AppResult<axum::Json<NetworkList>> {
    let list = find_list(&state, &caller.customer, &p.network_list_id).await?;
    let entries = match q.includelist.unwrap_or(true) {
        true => Some(state.store.entry_values(&list.id).await?),
        false => None,
    };
    Ok(axum::Json(list_body(&caller.customer, &list, entries)))
}

/// Rename, describe, deprecate or undeprecate a list.
#[utoipa::path(
    put, path = "/config/networklists/{network_list_id}", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id")),
    request_body = NetworkListUpdate,
    responses(
        (status = 200, description = "The updated list (without entries)", body = NetworkList),
        (status = 400, description = "Invalid name", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change network lists", body = ErrorBody),
        (status = 404, description = "No such list", body = ErrorBody),
    )
)]
async fn update_list(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteLists>,
    Path(p): Path<ListPath>,
    Json(u): Json<NetworkListUpdate>,
) -> AppResult<axum::Json<NetworkList>> {
    if let Some(name) = &u.name {
        check_name(name)?;
    }
    if let Some(description) = &u.description {
        check_description(description)?;
    }
    let update = store::NetworkListUpdate {
        name: u.name.map(|n| n.trim().to_string()),
        description: u.description,
        deprecated: u.deprecated,
    };
    let list = find_list(&state, &caller.customer, &p.network_list_id).await?;
    let now = state.clock.now_ms();
    let mut audit = AuditEvent::by(&caller, now, op::LIST_UPDATE, Target::network_list(&list.id, &list.name));
    if let Some(name) = &update.name {
        audit = audit.detail("name", name.as_str());
    }
    if let Some(description) = &update.description {
        audit = audit.detail("description", description.as_str());
    }
    if let Some(deprecated) = update.deprecated {
        audit = audit.detail("deprecated", deprecated);
    }
    let list = state
        .store
        .update_network_list(caller.customer.id, &list.id, &update, now, &audit)
        .await?
        .ok_or(AppError::NotFound("network list"))?;
    Ok(axum::Json(list_body(&caller.customer, &list, None)))
}

/// Delete a list with all its entries. Its removal from the edge is tracked by a task (see GET /tasks).
#[utoipa::path(
    delete, path = "/config/networklists/{network_list_id}", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change network lists", body = ErrorBody),
        (status = 404, description = "No such list", body = ErrorBody),
    )
)]
async fn delete_list(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteLists>,
    Path(p): Path<ListPath>,
) -> AppResult<Response> {
    let list = find_list(&state, &caller.customer, &p.network_list_id).await?;
    let task = deploy_task(&state, &caller, &list);
    let audit =
        AuditEvent::by(&caller, state.clock.now_ms(), op::LIST_DELETE, Target::network_list(&list.id, &list.name));
    if !state.store.delete_network_list(caller.customer.id, &list.id, &task, &audit).await? {
        return Err(AppError::NotFound("network list"));
    }
    let task_uri = format!("{}/tasks/{}", paths::base(&caller.customer.name), task.id);
    Ok((StatusCode::NO_CONTENT, [("x-task-uri", task_uri)]).into_response())
}

async fn add(state: &AppState, caller: &Caller, list_id: &str, input: &[EntryInput]) -> AppResult<AddEntriesResult> {
    let list = find_list(state, &caller.customer, list_id).await?;
    // The limit first: a huge body of empty items must not turn into as many problems.
    check_call_size(input.len())?;
    let missing: Vec<String> = input
        .iter()
        .enumerate()
        .filter(|(_, e)| e.text().is_none())
        .map(|(i, _)| format!("[{i}]: no entry or value"))
        .collect();
    if !missing.is_empty() {
        return Err(AppError::BadRequest {
            kind: "invalid_entries",
            message: "Each item needs an `entry` (or `value`).".into(),
            details: missing,
        });
    }
    let values: Vec<&str> = input.iter().filter_map(EntryInput::text).collect();
    let normalized = normalize_all(&list.list_type, &values)?;
    let now = state.clock.now_ms();
    let task = deploy_task(state, caller, &list);
    let audit = AuditEvent::by(caller, now, op::ENTRIES_ADD, Target::network_list(&list.id, &list.name));
    let outcome = state
        .store
        .add_entries(&list.id, &entry_records(caller, normalized, now), MAX_ENTRIES_PER_LIST, now, &task, &audit)
        .await?;
    let list = find_list(state, &caller.customer, list_id).await?;
    Ok(AddEntriesResult {
        added: outcome.added,
        already_present: outcome.already_present,
        list: list_body(&caller.customer, &list, None),
        task: task_body(state, &caller.customer, &task, now),
    })
}

/// Add entries: `[{"entry": v}]` or `[{"value": v}]`, at most 5,000 per call and 50,000 per list. Entries are
/// normalised (see docs/api.md); ones already in the list are merged (counted, not refused).
#[utoipa::path(
    post, path = "/config/networklists/{network_list_id}", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id")),
    request_body = Vec<EntryInput>,
    responses(
        (status = 200, description = "Added; the deployment is a task", body = AddEntriesResult),
        (status = 400, description = "Invalid entries (`invalid_entries`, each in details; nothing added) or a limit exceeded (`limit_exceeded`)", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change network lists", body = ErrorBody),
        (status = 404, description = "No such list", body = ErrorBody),
    )
)]
async fn add_entries(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteLists>,
    Path(p): Path<ListPath>,
    Json(input): Json<Vec<EntryInput>>,
) -> AppResult<axum::Json<AddEntriesResult>> {
    Ok(axum::Json(add(&state, &caller, &p.network_list_id, &input).await?))
}

/// The same as POST /config/networklists/{network_list_id}.
#[utoipa::path(
    post, path = "/config/networklists/{network_list_id}/entries", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id")),
    request_body = Vec<EntryInput>,
    responses(
        (status = 200, description = "Added; the deployment is a task", body = AddEntriesResult),
        (status = 400, description = "Invalid entries or a limit exceeded", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change network lists", body = ErrorBody),
        (status = 404, description = "No such list", body = ErrorBody),
    )
)]
async fn add_entries_at_entries(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteLists>,
    Path(p): Path<ListPath>,
    Json(input): Json<Vec<EntryInput>>,
) -> AppResult<axum::Json<AddEntriesResult>> {
    Ok(axum::Json(add(&state, &caller, &p.network_list_id, &input).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct EntryQuery {
    /// Page number, from 1 (default 1).
    page: Option<u64>,
    /// Entries per page (default 100, at most 1000).
    count: Option<u64>,
    /// Only entries containing this text (beyond the original API).
    #[param(max_length = 2048)]
    q: Option<String>,
}

/// A list's entries, oldest first, a page at a time.
#[utoipa::path(
    get, path = "/config/networklists/{network_list_id}/entries", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id"), EntryQuery),
    responses(
        (status = 200, description = "A page of entries", body = EntryPage),
        (status = 400, description = "Invalid query parameters", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not read network lists", body = ErrorBody),
        (status = 404, description = "No such list", body = ErrorBody),
    )
)]
async fn list_entries(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadLists>,
    Path(p): Path<ListPath>,
    Query(q): Query<EntryQuery>,
) -> AppResult<axum::Json<EntryPage>> {
    let page = Page::of(q.page, q.count, DEFAULT_COUNT)?;
    let list = find_list(&state, &caller.customer, &p.network_list_id).await?;
    let search = q.q.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let (entries, total) = state.store.entries(&list.id, search, page.offset(), page.count).await?;
    let base = list_uri(&caller.customer, &list.id);
    let items = entries
        .into_iter()
        .map(|e| NetworkListEntry {
            uri: format!("{base}/entries/{}", e.id),
            id: e.id,
            entry: e.value,
            added_by: e.added_by,
            creation_timestamp: timestamp(e.created_ms),
        })
        .collect();
    Ok(axum::Json(page.paged(&format!("{base}/entries"), &filters(&[("q", search)]), items, total).into()))
}

#[derive(Deserialize)]
struct EntryPath {
    network_list_id: String,
    entry_id: String,
}

/// One entry: its address, id, the list's type and address (and, beyond the original API, its value).
#[utoipa::path(
    get, path = "/config/networklists/{network_list_id}/entries/{entry_id}", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id"), ("entry_id" = String, Path, description = "Entry id")),
    responses(
        (status = 200, description = "The entry", body = EntryRef),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not read network lists", body = ErrorBody),
        (status = 404, description = "No such list or entry", body = ErrorBody),
    )
)]
async fn get_entry(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadLists>,
    Path(p): Path<EntryPath>,
) -> AppResult<axum::Json<EntryRef>> {
    let list = find_list(&state, &caller.customer, &p.network_list_id).await?;
    let entry = state.store.entry(&list.id, &p.entry_id).await?.ok_or(AppError::NotFound("entry"))?;
    let network_list_uri = list_uri(&caller.customer, &list.id);
    Ok(axum::Json(EntryRef {
        uri: format!("{network_list_uri}/entries/{}", entry.id),
        id: entry.id,
        list_type: list.list_type,
        network_list_uri,
        entry: Some(entry.value),
    }))
}

/// `entries/deletions` (POST) shadows `entries/{entry_id}` for the id `deletions`: reading or deleting it
/// answers as for any entry id (404, as no entry has that id), not 405 (found by schemathesis).
async fn get_entry_named_deletions(
    state: State<AppState>,
    allowed: Allowed<perm::ReadLists>,
    Path(p): Path<ListPath>,
) -> AppResult<axum::Json<EntryRef>> {
    get_entry(state, allowed, Path(EntryPath { network_list_id: p.network_list_id, entry_id: "deletions".into() }))
        .await
}

async fn delete_entry_named_deletions(
    state: State<AppState>,
    allowed: Allowed<perm::WriteLists>,
    Path(p): Path<ListPath>,
) -> AppResult<axum::Json<Task>> {
    delete_entry_named(state, allowed, &p.network_list_id, "deletions").await
}

/// Removing the entry `entry_id` of a path another operation shares.
async fn delete_entry_named(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteLists>,
    list_id: &str,
    entry_id: &str,
) -> AppResult<axum::Json<Task>> {
    Ok(axum::Json(remove_entry(&state, &caller, list_id, entry_id).await?))
}

async fn remove_entry(state: &AppState, caller: &Caller, list_id: &str, entry_id: &str) -> AppResult<Task> {
    let list = find_list(state, &caller.customer, list_id).await?;
    let entry = state.store.entry(&list.id, entry_id).await?.ok_or(AppError::NotFound("entry"))?;
    let task = deploy_task(state, caller, &list);
    let now = state.clock.now_ms();
    let audit = AuditEvent::by(caller, now, op::ENTRY_DELETE, Target::network_list(&list.id, &list.name))
        .detail("entry", entry.value.as_str());
    if !state.store.delete_entry(&list.id, entry_id, now, &task, &audit).await? {
        return Err(AppError::NotFound("entry"));
    }
    Ok(task_body(state, &caller.customer, &task, state.clock.now_ms()))
}

/// Remove one entry; answers the task tracking the deployment of the updated list.
#[utoipa::path(
    delete, path = "/config/networklists/{network_list_id}/{entry_id}", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id"), ("entry_id" = String, Path, description = "Entry id")),
    responses(
        (status = 200, description = "Removed; the deployment task", body = Task),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change network lists", body = ErrorBody),
        (status = 404, description = "No such list or entry", body = ErrorBody),
    )
)]
async fn delete_entry(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteLists>,
    Path(p): Path<EntryPath>,
) -> AppResult<axum::Json<Task>> {
    Ok(axum::Json(remove_entry(&state, &caller, &p.network_list_id, &p.entry_id).await?))
}

/// The same as DELETE /config/networklists/{network_list_id}/{entry_id}.
#[utoipa::path(
    delete, path = "/config/networklists/{network_list_id}/entries/{entry_id}", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id"), ("entry_id" = String, Path, description = "Entry id")),
    responses(
        (status = 200, description = "Removed; the deployment task", body = Task),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change network lists", body = ErrorBody),
        (status = 404, description = "No such list or entry", body = ErrorBody),
    )
)]
async fn delete_entry_at_entries(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteLists>,
    Path(p): Path<EntryPath>,
) -> AppResult<axum::Json<Task>> {
    Ok(axum::Json(remove_entry(&state, &caller, &p.network_list_id, &p.entry_id).await?))
}

/// Delete every entry while keeping the list; answers the deployment task.
#[utoipa::path(
    post, path = "/config/networklists/{network_list_id}/entries/deletions", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id")),
    responses(
        (status = 200, description = "All entries removed; the deployment task", body = Task),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not change network lists", body = ErrorBody),
        (status = 404, description = "No such list", body = ErrorBody),
    )
)]
async fn delete_all_entries(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::WriteLists>,
    Path(p): Path<ListPath>,
) -> AppResult<axum::Json<Task>> {
    let list = find_list(&state, &caller.customer, &p.network_list_id).await?;
    let task = deploy_task(&state, &caller, &list);
    let audit =
        AuditEvent::by(&caller, state.clock.now_ms(), op::ENTRIES_CLEAR, Target::network_list(&list.id, &list.name));
    state.store.clear_entries(&list.id, state.clock.now_ms(), &task, &audit).await?;
    Ok(axum::Json(task_body(&state, &caller.customer, &task, state.clock.now_ms())))
}

/// Configurations read per batch when looking for a list's users: a bound on what is held at once.
const USAGE_BATCH: u64 = 20;

/// Where a list is used: the properties whose current configuration has a traffic-shaping rule matching it, by
/// name, with those rules (beyond the original API). At most 100 properties and 100 rules each; configurations
/// are read a batch at a time, only those whose text holds the list's id, each off the request threads.
#[utoipa::path(
    get, path = "/config/networklists/{network_list_id}/usage", tag = "network lists",
    params(("network_list_id" = String, Path, description = "Network list id")),
    responses(
        (status = 200, description = "The properties and rules that use the list", body = NetworkListUsage),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "The caller's role may not read configurations", body = ErrorBody),
        (status = 404, description = "No such list", body = ErrorBody),
    )
)]
async fn list_usage(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadConfig>,
    Path(p): Path<ListPath>,
) -> AppResult<axum::Json<NetworkListUsage>> {
    let list = find_list(&state, &caller.customer, &p.network_list_id).await?;
    // The id as the stored JSON writes it, quotes included: a configuration without it uses no such list.
    let needle = serde_json::to_string(&list.id).map_err(|e| AppError::Internal(e.into()))?;
    let mut found: Vec<PropertyUse> = Vec::new();
    let mut after = String::new();
    loop {
        let batch = state.store.properties_containing(caller.customer.id, &needle, &after, USAGE_BATCH).await?;
        let Some((last, _)) = batch.last() else { break };
        after = last.name.clone();
        let full = batch.len() as u64 == USAGE_BATCH;
        let (id, base) = (list.id.clone(), paths::base(&caller.customer.name));
        let uses = super::properties::off_runtime(move || {
            batch
                .into_iter()
                .filter_map(|(property, current)| property_use(&base, &property.name, &current, &id))
                .collect::<Vec<_>>()
        })
        .await?;
        for u in uses {
            if found.len() == USAGE_MAX_PROPERTIES {
                return Ok(axum::Json(NetworkListUsage { properties: found, has_more: true }));
            }
            found.push(u);
        }
        if !full {
            break;
        }
    }
    Ok(axum::Json(NetworkListUsage { properties: found, has_more: false }))
}

/// How a property's current configuration uses the list `list_id`, if it does.
fn property_use(base: &str, name: &str, current: &store::ConfigVersionRecord, list_id: &str) -> Option<PropertyUse> {
    let config: PropertyConfig = serde_json::from_str(&current.config).ok()?;
    let rules: Vec<RuleUse> = config
        .rules_using_list(list_id)
        .map(|r| RuleUse { id: r.id.clone(), name: r.name.clone(), action: r.action.clone(), enabled: r.enabled })
        .collect();
    (!rules.is_empty()).then(|| PropertyUse {
        property: name.to_string(),
        uri: format!("{base}/properties/{name}/config"),
        version: current.version,
        rule_count: rules.len() as u64,
        rules: rules.into_iter().take(USAGE_MAX_RULES).collect(),
    })
}
