//! The audit log: who changed what, from where, when; failed logins and lockouts (administrators only).

use axum::extract::State;
use edge_api::{
    AuditActor, AuditPage, AuditRecord, AuditTarget, ErrorBody, OUTCOME_FAILURE, OUTCOME_SUCCESS, paths, perm,
};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::tasks::time_param;
use crate::{
    clock::iso_ms,
    http::{
        caller::Allowed,
        error::AppResult,
        extract::Query,
        paging::{DEFAULT_COUNT, Page, filters},
    },
    state::AppState,
    store::{Actor, AuditEntry, AuditFilter, Customer},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_audit))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct AuditQuery {
    /// Records at or after this time: `yyyy-MM-dd'T'HH:mm:ss.SSSZ` (`Z`, `+00:00` and no milliseconds are
    /// accepted too).
    #[param(max_length = 2048)]
    from: Option<String>,
    /// Records before this time (same format).
    #[param(max_length = 2048)]
    to: Option<String>,
    /// Who acted: a user id or a username (`system` for the server and its operator).
    #[param(max_length = 2048)]
    actor: Option<String>,
    /// An operation (`user.create`), or the start of operations up to a dot (`user`, `networklist.entries`).
    #[param(max_length = 2048)]
    operation: Option<String>,
    /// What was changed: its id (a user or list id, a property name, a transaction id), or `type:id`.
    #[param(max_length = 2048)]
    target: Option<String>,
    /// Page number, from 1 (default 1).
    page: Option<u64>,
    /// Records per page (default 100, at most 1000).
    count: Option<u64>,
}

/// The API address of an audit record's target, while it exists.
fn target_uri(customer: &Customer, e: &AuditEntry) -> Option<String> {
    let base = paths::base(&customer.name);
    let id = &e.event.target_id;
    let uri = match e.event.target_type.as_str() {
        "user" => format!("{base}/users/{id}"),
        "property" => format!("{base}/properties/{id}/config"),
        "network_list" => format!("{base}/config/networklists/{id}"),
        "purge" => format!("{base}/transactions/{id}"),
        "identity_source" => format!("{base}/idps/{id}"),
        "account" => format!("{base}/account"),
        "token" => format!("{base}/tokens/{id}"),
        _ => return None,
    };
    e.target_exists.then_some(uri)
}

fn record_body(customer: &Customer, e: AuditEntry) -> AuditRecord {
    let uri = target_uri(customer, &e);
    let ev = e.event;
    let actor = match ev.actor {
        Actor::User { id, name } => AuditActor { kind: "user".into(), id: Some(id), name },
        Actor::Unknown(name) => AuditActor { kind: "user".into(), id: None, name },
        Actor::System => AuditActor { kind: "system".into(), id: None, name: "system".into() },
    };
    AuditRecord {
        id: e.id,
        time: iso_ms(ev.time_ms),
        customer: customer.name.clone(),
        actor,
        source_address: ev.source,
        operation: ev.operation,
        target: AuditTarget { kind: ev.target_type, id: ev.target_id, name: ev.target_name, uri },
        outcome: if ev.success { OUTCOME_SUCCESS } else { OUTCOME_FAILURE }.into(),
        details: ev.details,
    }
}

/// The account's audit log, newest first: every change of users, sessions, two-factor, passwords, property
/// configurations, purges, network lists and the account, and every failed login and lockout — each written in
/// the transaction of its change. Kept for the audit retention (400 days unless the server is told otherwise).
#[utoipa::path(
    get, path = "/audit", tag = "audit",
    params(AuditQuery),
    responses(
        (status = 200, description = "A page of audit records", body = AuditPage),
        (status = 400, description = "Invalid from, to, page or count", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 403, description = "Only administrators read the audit log", body = ErrorBody),
    )
)]
async fn list_audit(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAudit>,
    Query(q): Query<AuditQuery>,
) -> AppResult<axum::Json<AuditPage>> {
    let page = Page::of(q.page, q.count, DEFAULT_COUNT)?;
    let text = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
    let (target_type, target_id) = match text(&q.target) {
        Some(t) => match t.split_once(':') {
            Some((kind, id)) => (Some(kind.to_string()), Some(id.to_string())),
            None => (None, Some(t)),
        },
        None => (None, None),
    };
    let filter = AuditFilter {
        from_ms: time_param("from", q.from.as_deref())?,
        to_ms: time_param("to", q.to.as_deref())?,
        actor: text(&q.actor),
        operation: text(&q.operation),
        target_type,
        target_id,
    };
    let (entries, total) = state.store.audit_records(caller.customer.id, &filter, page.offset(), page.count).await?;
    let items = entries.into_iter().map(|e| record_body(&caller.customer, e)).collect();
    let sent = filters(&[
        ("from", q.from.as_deref()),
        ("to", q.to.as_deref()),
        ("actor", q.actor.as_deref()),
        ("operation", q.operation.as_deref()),
        ("target", q.target.as_deref()),
    ]);
    let path = format!("{}/audit", paths::base(&caller.customer.name));
    Ok(axum::Json(page.paged(&path, &sent, items, total).into()))
}
