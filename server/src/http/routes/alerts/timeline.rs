//! The incident timeline: the markers of a time range for the statistics and security charts — changes from the
//! audit log (configuration versions, purges, network-list changes, and lockouts for those who read the audit
//! log) and the alert rules' changes of state — each with the address of its record.

use axum::extract::State;
use edge_api::{
    ErrorBody, Permission,
    alerts::{MAX_MARKERS, Marker, MarkerKind, Timeline},
    paths, perm,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::parse_iso;
use crate::{
    clock::iso_ms,
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
        extract::Query,
    },
    state::AppState,
    store::{Actor, AuditEntry, AuditFilter, EventFilter},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(timeline))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct TimelineQuery {
    /// From (ISO 8601 with `Z` or an offset), inclusive.
    #[param(max_length = 64)]
    from: String,
    /// Until (ISO 8601), exclusive; later than `from`.
    #[param(max_length = 64)]
    to: String,
}

/// The kinds of audit operations the timeline shows: (operation or prefix, kind, needs the audit log's reader).
const CHANGES: [(&str, MarkerKind, bool); 5] = [
    ("property.config", MarkerKind::Config, false),
    ("property.create", MarkerKind::Config, false),
    ("cache.purge", MarkerKind::Purge, false),
    ("networklist", MarkerKind::List, false),
    ("login.lockout", MarkerKind::Lockout, true),
];

fn marker_of(base: &str, kind: MarkerKind, r: &AuditEntry) -> Marker {
    let e = &r.event;
    let actor = match &e.actor {
        Actor::User { name, .. } | Actor::Unknown(name) => name.clone(),
        Actor::System => "system".into(),
    };
    let mut details = Map::new();
    let (title, uri) = match kind {
        MarkerKind::Config => {
            let to = e.details.get("to_version").cloned().unwrap_or(Value::Null);
            details.insert("property".into(), json!(e.target_id));
            details.insert("from_version".into(), e.details.get("from_version").cloned().unwrap_or(Value::Null));
            details.insert("to_version".into(), to.clone());
            let uri = to
                .as_u64()
                .map(|v| format!("{base}/properties/{}/config/versions/{v}", e.target_id))
                .or_else(|| Some(format!("{base}/properties/{}/config", e.target_id)));
            let what = if e.operation.ends_with("rollback") { "rolled back" } else { "configuration" };
            let version = to.as_u64().map(|v| format!(" version {v}")).unwrap_or_default();
            (format!("{}: {what}{version}", e.target_name), uri)
        }
        MarkerKind::Purge => (format!("Purge {}", e.target_id), Some(format!("{base}/transactions/{}", e.target_id))),
        MarkerKind::List => (
            format!("{}: {}", e.target_name, e.operation.trim_start_matches("networklist.").replace('.', " ")),
            r.target_exists.then(|| format!("{base}/config/networklists/{}", e.target_id)),
        ),
        _ => (format!("Logins locked: {}", e.target_name), None),
    };
    Marker { time: iso_ms(e.time_ms), kind, title, operation: e.operation.clone(), actor, uri, details }
}

/// The markers of a range, oldest first: configuration versions, purges, network-list changes (and lockouts for
/// the audit log's readers) from the audit log, and the alert rules' changes of state. At most 500: the
/// newest of the range, with `truncated` when there were more.
#[utoipa::path(
    get, path = "/alerts/timeline", tag = "alerts",
    params(TimelineQuery),
    responses(
        (status = 200, description = "The range's markers", body = Timeline),
        (status = 400, description = "Missing or invalid times, or `to` not after `from` (`invalid_parameter`)", body = ErrorBody),
        (status = 403, description = "The caller's role may not read statistics", body = ErrorBody),
    )
)]
async fn timeline(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadStats>,
    Query(q): Query<TimelineQuery>,
) -> AppResult<axum::Json<Timeline>> {
    let (from, to) = (parse_iso("from", &q.from)?, parse_iso("to", &q.to)?);
    if to <= from {
        return Err(AppError::invalid_parameter("to: later than from"));
    }
    let base = paths::base(&caller.customer.name);
    let reader = caller.role.allows(Permission::ReadAudit);
    let mut markers = Vec::new();
    let mut truncated = false;
    for (operation, kind, needs_reader) in CHANGES {
        if needs_reader && !reader {
            continue;
        }
        let filter = AuditFilter {
            from_ms: Some(from),
            to_ms: Some(to),
            operation: Some(operation.to_string()),
            ..AuditFilter::default()
        };
        let (records, total) = state.store.audit_records(caller.customer.id, &filter, 0, MAX_MARKERS as u64).await?;
        truncated |= total > records.len() as u64;
        markers.extend(records.iter().map(|r| (r.event.time_ms, marker_of(&base, kind, r))));
    }
    if caller.role.allows(Permission::ReadAlerts) {
        let filter = EventFilter { from_ms: Some(from), to_ms: Some(to), ..EventFilter::default() };
        let (events, total) = state.store.alert_events(caller.customer.id, &filter, 0, MAX_MARKERS as u64).await?;
        truncated |= total > events.len() as u64;
        markers.extend(events.iter().map(|e| {
            let event = super::event_body(e, reader);
            let mut details = Map::new();
            details.insert("rule_id".into(), json!(e.rule_id));
            details.insert("severity".into(), json!(e.severity));
            details.insert("state".into(), json!(e.to_state));
            details.insert("value".into(), json!(event.value));
            let marker = Marker {
                time: iso_ms(e.time_ms),
                kind: MarkerKind::Alert,
                title: format!("{}: {}", e.rule_name, e.to_state),
                operation: format!("alert.{}", e.to_state),
                actor: e.rule_name.clone(),
                uri: Some(format!("{base}/alerts/rules/{}", e.rule_id)),
                details,
            };
            (e.time_ms, marker)
        }));
    }
    markers.sort_by_key(|(t, _)| std::cmp::Reverse(*t));
    truncated |= markers.len() > MAX_MARKERS;
    markers.truncate(MAX_MARKERS);
    markers.reverse();
    Ok(axum::Json(Timeline {
        from: iso_ms(from),
        to: iso_ms(to),
        markers: markers.into_iter().map(|(_, m)| m).collect(),
        truncated,
    }))
}
