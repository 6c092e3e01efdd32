//! Alerting: rules (and their preview), the rules' state and events, the incident timeline; channels and
//! silences in their own files. Administrators and operators manage, viewers read (`ManageAlerts`,
//! `ReadAlerts`); a rule on the audit log also needs the right to read it.

mod channels;
mod silences;
mod timeline;

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::{
    ErrorBody, Permission,
    alerts::{
        AlertEvent, AlertEventPage, AlertRule, AlertRuleInput, AlertRulePage, AlertState, AlertSummary, Condition,
        PREVIEW_DAYS, PreviewFiring, PreviewPoint, RulePreview, RuleStatus,
    },
    audit::op,
    paths, perm,
};
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    clock::iso_ms,
    domain::{
        alerts::{Status, Target, advance, advance_audit, check_rule, measure},
        auth::Caller,
    },
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
        extract::{Json, Query},
        paging::{Page, PageQuery, filters},
    },
    state::AppState,
    store::{self, AuditEvent, AuditFilter, Customer, EventFilter, EventRecord, RuleRecord, Target as AuditTarget},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_rules, create_rule))
        .routes(routes!(get_rule, update_rule, delete_rule))
        .routes(routes!(preview_rule))
        .routes(routes!(summary))
        .routes(routes!(list_events))
        .merge(channels::router())
        .merge(silences::router())
        .merge(timeline::router())
}

fn rule_uri(customer: &Customer, id: &str) -> String {
    format!("{}/alerts/rules/{id}", paths::base(&customer.name))
}

/// 400 `invalid_alert_rule` (or another kind) with every problem.
pub(super) fn invalid(kind: &'static str, what: &str, problems: Vec<String>) -> AppError {
    AppError::BadRequest { kind, message: format!("The {what} is not valid; nothing was changed."), details: problems }
}

fn rule_body(customer: &Customer, r: &RuleRecord) -> AppResult<AlertRule> {
    let def: AlertRuleInput =
        serde_json::from_str(&r.definition).map_err(|e| anyhow::anyhow!("rule {} cannot be read: {e}", r.id))?;
    let status = Status::parse(&r.status);
    Ok(AlertRule {
        id: r.id.clone(),
        uri: rule_uri(customer, &r.id),
        name: r.name.clone(),
        description: def.description,
        enabled: r.enabled,
        severity: def.severity,
        condition: def.condition,
        for_minutes: def.for_minutes,
        renotify_minutes: def.renotify_minutes,
        channels: def.channels,
        labels: def.labels,
        status: RuleStatus {
            state: AlertState::parse(&r.state).unwrap_or_default(),
            since: iso_ms(status.since_ms),
            value: status.value,
            group: status.group,
            evaluated: status.evaluated_ms.map(iso_ms),
            error: status.error,
        },
        created: iso_ms(r.created_ms),
        modified: iso_ms(r.modified_ms),
        author: r.author.clone(),
    })
}

/// Checks a definition: its own rules, its statistics query as the statistics endpoints validate it, its
/// channels (the customer's), and that an audit rule's author may read the audit log. Returns the watched
/// target, for statistics rules.
async fn check(state: &AppState, caller: &Caller, input: &AlertRuleInput) -> AppResult<Option<Target>> {
    let target = check_rule(input).map_err(|p| invalid("invalid_alert_rule", "alert rule", p))?;
    if let (Some(target), Some(watch)) = (&target, input.condition.watch()) {
        measure::check(target, watch, state.clock.now_ms())
            .map_err(|p| invalid("invalid_alert_rule", "alert rule", p))?;
    }
    if matches!(input.condition, Condition::Audit { .. }) && !caller.role.allows(Permission::ReadAudit) {
        return Err(AppError::Forbidden(format!(
            "Your role ({}) does not read the audit log, so it cannot watch it: ask an administrator.",
            caller.role.as_str()
        )));
    }
    let mut missing = Vec::new();
    for id in &input.channels {
        if edge_api::limits::over_chars(id, 64) || state.store.alert_channel(caller.customer.id, id).await?.is_none() {
            missing.push(format!("channels: no channel {:?}", crate::domain::alerts::cut_for_message(id)));
        }
    }
    if !missing.is_empty() {
        return Err(invalid("invalid_alert_rule", "alert rule", missing));
    }
    Ok(target)
}

fn definition_json(input: &AlertRuleInput) -> AppResult<String> {
    let mut input = input.clone();
    input.name = input.name.trim().to_string();
    Ok(serde_json::to_string(&input).map_err(|e| anyhow::anyhow!("{e}"))?)
}

/// The customer's alert rules, by name, with their state.
#[utoipa::path(
    get, path = "/alerts/rules", tag = "alerts",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of alert rules", body = AlertRulePage),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn list_rules(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
    Query(q): Query<PageQuery>,
) -> AppResult<axum::Json<AlertRulePage>> {
    let page = q.resolve()?;
    let (rules, total) = state.store.alert_rules(caller.customer.id, page.offset(), page.count).await?;
    let items = rules.iter().map(|r| rule_body(&caller.customer, r)).collect::<AppResult<Vec<_>>>()?;
    let path = format!("{}/alerts/rules", paths::base(&caller.customer.name));
    Ok(axum::Json(page.paged(&path, "", items, total).into()))
}

/// Create an alert rule: a threshold or an anomaly on a statistics query, or audit records to watch.
#[utoipa::path(
    post, path = "/alerts/rules", tag = "alerts",
    request_body = AlertRuleInput,
    responses(
        (status = 201, description = "The new rule (state ok until its first evaluation, within a minute)", body = AlertRule),
        (status = 400, description = "An invalid definition (`invalid_alert_rule`, every problem in details: the statistics query is checked as the statistics endpoints check it; channels must be the customer's), or the customer has 200 rules (`limit_exceeded`)", body = ErrorBody),
        (status = 403, description = "The caller's role may not manage alerts, or an audit rule by a role that does not read the audit log", body = ErrorBody),
    )
)]
async fn create_rule(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageAlerts>,
    Json(input): Json<AlertRuleInput>,
) -> AppResult<Response> {
    check(&state, &caller, &input).await?;
    let now = state.clock.now_ms();
    let record = RuleRecord {
        id: store::new_id(),
        customer_id: caller.customer.id,
        name: input.name.trim().to_string(),
        definition: definition_json(&input)?,
        enabled: input.enabled,
        created_ms: now,
        modified_ms: now,
        author: caller.user.username.clone(),
        state: AlertState::Ok.as_str().into(),
        status: Status::new(now).to_json(),
        evaluated_ms: 0,
    };
    let audit =
        AuditEvent::by(&caller, now, op::ALERT_RULE_CREATE, AuditTarget::alert("alert_rule", &record.id, &record.name))
            .detail("severity", input.severity.as_str())
            .detail("condition", crate::domain::alerts::describe(&input.condition));
    state.store.create_alert_rule(&record, &audit).await?;
    let uri = rule_uri(&caller.customer, &record.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, uri)], axum::Json(rule_body(&caller.customer, &record)?))
        .into_response())
}

#[derive(Deserialize)]
struct RulePath {
    rule_id: String,
}

async fn find_rule(state: &AppState, caller: &Caller, id: &str) -> AppResult<RuleRecord> {
    state.store.alert_rule(caller.customer.id, id).await?.ok_or(AppError::NotFound("alert rule"))
}

/// One alert rule, with its state.
#[utoipa::path(
    get, path = "/alerts/rules/{rule_id}", tag = "alerts",
    params(("rule_id" = String, Path, description = "The rule's id", max_length = 64)),
    responses(
        (status = 200, description = "The rule", body = AlertRule),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn get_rule(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
    Path(p): Path<RulePath>,
) -> AppResult<axum::Json<AlertRule>> {
    Ok(axum::Json(rule_body(&caller.customer, &find_rule(&state, &caller, &p.rule_id).await?)?))
}

/// Replace an alert rule's definition. A rule whose condition changes, or that is disabled, starts over at ok
/// (without notifying); otherwise its state is kept.
#[utoipa::path(
    put, path = "/alerts/rules/{rule_id}", tag = "alerts",
    params(("rule_id" = String, Path, description = "The rule's id", max_length = 64)),
    request_body = AlertRuleInput,
    responses(
        (status = 200, description = "The rule as changed", body = AlertRule),
        (status = 400, description = "An invalid definition (`invalid_alert_rule`, every problem in details)", body = ErrorBody),
        (status = 403, description = "The caller's role may not manage alerts (or watch the audit log)", body = ErrorBody),
    )
)]
async fn update_rule(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageAlerts>,
    Path(p): Path<RulePath>,
    Json(input): Json<AlertRuleInput>,
) -> AppResult<axum::Json<AlertRule>> {
    let old = find_rule(&state, &caller, &p.rule_id).await?;
    check(&state, &caller, &input).await?;
    let old_def: Option<AlertRuleInput> = serde_json::from_str(&old.definition).ok();
    let now = state.clock.now_ms();
    let restart = !input.enabled || old_def.is_none_or(|d| d.condition != input.condition);
    let (rule_state, status) = if restart {
        (AlertState::Ok.as_str().to_string(), Status::new(now).to_json())
    } else {
        (old.state.clone(), old.status.clone())
    };
    let record = RuleRecord {
        name: input.name.trim().to_string(),
        definition: definition_json(&input)?,
        enabled: input.enabled,
        modified_ms: now,
        author: caller.user.username.clone(),
        state: rule_state,
        status,
        ..old
    };
    let audit =
        AuditEvent::by(&caller, now, op::ALERT_RULE_UPDATE, AuditTarget::alert("alert_rule", &record.id, &record.name))
            .detail("enabled", record.enabled)
            .detail("condition", crate::domain::alerts::describe(&input.condition));
    if !state.store.update_alert_rule(&record, &audit).await? {
        return Err(AppError::NotFound("alert rule"));
    }
    Ok(axum::Json(rule_body(&caller.customer, &record)?))
}

/// Delete an alert rule (its events stay until their retention).
#[utoipa::path(
    delete, path = "/alerts/rules/{rule_id}", tag = "alerts",
    params(("rule_id" = String, Path, description = "The rule's id", max_length = 64)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "The caller's role may not manage alerts", body = ErrorBody),
    )
)]
async fn delete_rule(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageAlerts>,
    Path(p): Path<RulePath>,
) -> AppResult<StatusCode> {
    let old = find_rule(&state, &caller, &p.rule_id).await?;
    let now = state.clock.now_ms();
    let audit =
        AuditEvent::by(&caller, now, op::ALERT_RULE_DELETE, AuditTarget::alert("alert_rule", &old.id, &old.name));
    if !state.store.delete_alert_rule(caller.customer.id, &old.id, &audit).await? {
        return Err(AppError::NotFound("alert rule"));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// When a draft rule would have fired over the last 7 days (nothing is stored): its value at each step
/// (bucket) and the spans it would have fired in, with its for-duration.
#[utoipa::path(
    post, path = "/alerts/rules/preview", tag = "alerts",
    request_body = AlertRuleInput,
    responses(
        (status = 200, description = "The preview", body = RulePreview),
        (status = 400, description = "An invalid definition (`invalid_alert_rule`), or a query with too many rows", body = ErrorBody),
        (status = 403, description = "The caller's role may not read alerts (or the audit log, for an audit rule)", body = ErrorBody),
        (status = 503, description = "The statistics cannot be reached (`database_unavailable`)", body = ErrorBody),
    )
)]
async fn preview_rule(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
    Json(mut input): Json<AlertRuleInput>,
) -> AppResult<axum::Json<RulePreview>> {
    // A draft's channels are not the preview's concern.
    input.channels.clear();
    let target = check(&state, &caller, &input).await?;
    let now = state.clock.now_ms();
    let for_ms = i64::from(input.for_minutes) * 60_000;
    let (points, step_ms) = match target {
        Some(target) => {
            let step = target.step_ms();
            let to = now.div_euclid(step) * step;
            let mut from = to - PREVIEW_DAYS * 86_400_000;
            // 5-minute data is kept a week: the first windows start where it does.
            if let Some(kept) = target.granularity.and_then(|g| state.stats.limits().kept_from(g, now)) {
                let first = (kept + measure::lookback_ms(&input.condition, &target)).div_euclid(step) * step + step;
                from = from.max(first);
            }
            let (engine, name, condition) =
                (state.stats.clone(), caller.customer.name.clone(), input.condition.clone());
            let id = caller.customer.id;
            let found = tokio::task::spawn_blocking(move || {
                measure::preview(engine.as_ref(), (id, &name), &condition, &target, (from, to), now)
            })
            .await
            .map_err(|e| anyhow::anyhow!("preview task: {e}"))?
            .map_err(|e| AppError::bad_request("invalid_alert_rule", e))?;
            (found.into_iter().map(|(t, f)| (t, f.holds, f.value)).collect::<Vec<_>>(), step)
        }
        None => (audit_preview(&state, &caller, &input.condition, now).await?, 3_600_000),
    };
    // The state machine over the points: where the rule would have fired.
    let mut firings: Vec<PreviewFiring> = Vec::new();
    let (mut rule_state, mut status) = (AlertState::Ok, Status::new(points.first().map(|p| p.0).unwrap_or(now)));
    for (t, holds, _) in &points {
        let step = match input.condition {
            Condition::Audit { .. } => advance_audit(rule_state, &mut status, holds == &Some(true), *t),
            _ => advance(rule_state, &mut status, *holds, *t, for_ms, 0),
        };
        match step.transition {
            Some((_, AlertState::Firing)) => firings.push(PreviewFiring { from: iso_ms(*t), until: None }),
            Some((AlertState::Firing, _)) => {
                if let Some(last) = firings.last_mut() {
                    last.until = Some(iso_ms(*t));
                }
            }
            _ => {}
        }
        rule_state = step.state;
    }
    let to = points.last().map(|p| p.0).unwrap_or(now);
    Ok(axum::Json(RulePreview {
        from: iso_ms(points.first().map(|p| p.0).unwrap_or(now)),
        to: iso_ms(to),
        step_minutes: (step_ms / 60_000) as u32,
        threshold: measure::drawn_threshold(&input.condition),
        points: points
            .into_iter()
            .map(|(t, holds, value)| PreviewPoint { time: iso_ms(t), value, holds: holds == Some(true) })
            .collect(),
        firings,
    }))
}

/// An audit rule's preview: matching records an hour over the last days (at most 10,000 records read).
async fn audit_preview(
    state: &AppState,
    caller: &Caller,
    condition: &Condition,
    now: i64,
) -> AppResult<Vec<(i64, Option<bool>, Option<f64>)>> {
    let Condition::Audit { operations, target_type, target_id } = condition else { return Ok(Vec::new()) };
    const HOUR: i64 = 3_600_000;
    let to = now.div_euclid(HOUR) * HOUR + HOUR;
    let from = to - PREVIEW_DAYS * 86_400_000;
    let filter = AuditFilter { from_ms: Some(from), to_ms: Some(to), ..AuditFilter::default() };
    let mut counts = vec![0u64; ((to - from) / HOUR) as usize];
    for page in 0..10u64 {
        let (records, total) = state.store.audit_records(caller.customer.id, &filter, page * 1000, 1000).await?;
        for r in &records {
            let e = &r.event;
            if crate::domain::alerts::operation_matches(operations, &e.operation)
                && target_type.as_ref().is_none_or(|t| *t == e.target_type)
                && target_id.as_ref().is_none_or(|t| *t == e.target_id)
                && let Some(c) = counts.get_mut(((e.time_ms - from) / HOUR) as usize)
            {
                *c += 1;
            }
        }
        if (page + 1) * 1000 >= total {
            break;
        }
    }
    Ok(counts.into_iter().enumerate().map(|(i, n)| (from + i as i64 * HOUR, Some(n > 0), Some(n as f64))).collect())
}

/// How many rules fire now (the console's navigation shows it).
#[utoipa::path(
    get, path = "/alerts/summary", tag = "alerts",
    responses(
        (status = 200, description = "Firing and pending rules, and all rules", body = AlertSummary),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn summary(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
) -> AppResult<axum::Json<AlertSummary>> {
    let c = state.store.alert_rule_counts(caller.customer.id).await?;
    Ok(axum::Json(AlertSummary { firing: c.firing, pending: c.pending, rules: c.rules }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct EventQuery {
    /// Page number, from 1 (default 1).
    page: Option<u64>,
    /// Events per page (default 100, at most 1000).
    count: Option<u64>,
    /// Only this rule's events.
    #[param(max_length = 64)]
    rule_id: Option<String>,
    /// From this time (ISO 8601 with `Z` or an offset), inclusive.
    #[param(max_length = 64)]
    from: Option<String>,
    /// Before this time (ISO 8601).
    #[param(max_length = 64)]
    to: Option<String>,
    /// Only transitions into this state: `ok`, `pending`, `firing` or `resolved`.
    #[param(max_length = 16)]
    state: Option<String>,
}

/// Parses an ISO 8601 time with `Z` or an offset into milliseconds; 400 naming `field` otherwise.
pub(super) fn parse_iso(field: &str, text: &str) -> AppResult<i64> {
    chrono::DateTime::parse_from_rfc3339(text.trim()).map(|t| t.timestamp_millis()).map_err(|_| {
        AppError::invalid_parameter(format!("{field}: an ISO 8601 time with Z or an offset, as 2026-11-27T10:00:00Z"))
    })
}

pub(super) fn event_body(e: &EventRecord, audit_reader: bool) -> AlertEvent {
    let mut details: Map<String, Value> = serde_json::from_str(&e.details).unwrap_or_default();
    // Who acted is the audit log's: only its readers see it.
    if !audit_reader && let Some(Value::Array(records)) = details.get_mut("records") {
        for r in records.iter_mut() {
            if let Value::Object(o) = r {
                o.remove("actor");
            }
        }
    }
    AlertEvent {
        id: e.id.clone(),
        time: iso_ms(e.time_ms),
        rule_id: e.rule_id.clone(),
        rule_name: e.rule_name.clone(),
        severity: edge_api::alerts::Severity::parse(&e.severity).unwrap_or(edge_api::alerts::Severity::Warning),
        from: AlertState::parse(&e.from_state).unwrap_or_default(),
        to: AlertState::parse(&e.to_state).unwrap_or_default(),
        value: e.value.as_deref().and_then(|v| v.parse().ok()),
        silenced: e.silenced,
        details,
    }
}

/// The rules' changes of state, newest first, with the values that caused them.
#[utoipa::path(
    get, path = "/alerts/events", tag = "alerts",
    params(EventQuery),
    responses(
        (status = 200, description = "A page of events", body = AlertEventPage),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn list_events(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
    Query(q): Query<EventQuery>,
) -> AppResult<axum::Json<AlertEventPage>> {
    let page = Page::of(q.page, q.count, 100)?;
    if let Some(s) = q.state.as_deref()
        && AlertState::parse(s).is_none()
    {
        return Err(AppError::invalid_parameter("state: ok, pending, firing or resolved"));
    }
    let filter = EventFilter {
        rule_id: q.rule_id.clone(),
        from_ms: q.from.as_deref().map(|t| parse_iso("from", t)).transpose()?,
        to_ms: q.to.as_deref().map(|t| parse_iso("to", t)).transpose()?,
        to_state: q.state.clone(),
    };
    let (events, total) = state.store.alert_events(caller.customer.id, &filter, page.offset(), page.count).await?;
    let reader = caller.role.allows(Permission::ReadAudit);
    let items = events.iter().map(|e| event_body(e, reader)).collect();
    let sent = filters(&[
        ("rule_id", q.rule_id.as_deref()),
        ("from", q.from.as_deref()),
        ("to", q.to.as_deref()),
        ("state", q.state.as_deref()),
    ]);
    let path = format!("{}/alerts/events", paths::base(&caller.customer.name));
    Ok(axum::Json(page.paged(&path, &sent, items, total).into()))
}
