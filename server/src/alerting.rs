//! Alerting at work: a round of evaluation every minute, claimed by one replica at a time (a row moved forward
//! under a database lock; each rule's result then written by compare-and-swap, so a cluster notifies once), and
//! a sender that claims due deliveries and makes their attempts. Both run on tasks of their own: evaluation
//! never holds up a request, and a slow or failing channel only holds up its own deliveries, never evaluation.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, OnceLock},
    time::Duration,
};

use edge_api::{
    alerts::{AlertRuleInput, AlertState, Condition, NotificationKind, WebhookPayload, WebhookRule},
    paths,
};
use serde_json::{Map, Value, json};

use crate::{
    clock::iso_ms,
    domain::alerts::{
        Finding, Status, advance, advance_audit, check_watch,
        measure::measure,
        notify::{self, LEASE_MS},
        operation_matches,
        silence::{self, Silence},
    },
    state::AppState,
    store::{
        self, AttemptOutcome, AuditFilter, ChannelRecord, ClaimedDelivery, CustomerId, DeliveryRecord, Evaluation,
        EventRecord, RuleRecord,
    },
};

/// Audit records are looked at once they are this old: a change's record carries the time its transaction
/// began, and is seen by others only when it commits.
pub const AUDIT_LAG_MS: i64 = 10_000;
/// Audit records one evaluation of an audit rule reads at most (the rest wait for the next minute).
const AUDIT_PAGE: u64 = 1_000;
/// Records an audit rule's event and notification name.
const AUDIT_RECORDS_NAMED: usize = 20;
/// Deliveries a sender claims at once.
const CLAIM: u64 = 32;

/// This process's name in the round it claims.
fn server_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| format!("{}-{}", std::process::id(), store::new_id()))
}

/// Runs evaluation every `interval` and the sender every few seconds (and at once after a round that made
/// deliveries), until the task is aborted.
pub async fn run(state: AppState) {
    let wake = Arc::new(tokio::sync::Notify::new());
    let sender = {
        let (state, wake) = (state.clone(), wake.clone());
        tokio::spawn(async move {
            loop {
                while deliver_due(&state).await > 0 {}
                let _ = tokio::time::timeout(Duration::from_secs(5), wake.notified()).await;
            }
        })
    };
    let mut tick = tokio::time::interval(state.settings.alert_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    struct AbortOnDrop(tokio::task::JoinHandle<()>);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let _sender = AbortOnDrop(sender);
    loop {
        tick.tick().await;
        match evaluate_round(&state).await {
            Ok(Some(report)) if report.deliveries > 0 => wake.notify_one(),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "alert evaluation failed"),
        }
    }
}

/// What one round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    pub rules: usize,
    pub transitions: usize,
    pub deliveries: usize,
}

/// The round the clock is in: its start, in whole intervals.
fn round_of(state: &AppState) -> i64 {
    let interval = (state.settings.alert_interval.as_millis() as i64).max(1);
    state.clock.now_ms().div_euclid(interval) * interval
}

/// Evaluates every enabled rule once, if this process claims the current round (None when another did).
pub async fn evaluate_round(state: &AppState) -> anyhow::Result<Option<Round>> {
    let round_ms = round_of(state);
    if !state.store.claim_alert_round(round_ms, server_id()).await? {
        return Ok(None);
    }
    let rules = state.store.rules_to_evaluate().await?;
    let names: HashMap<CustomerId, String> = state.store.customer_names().await?.into_iter().collect();
    let mut silences: HashMap<CustomerId, Vec<Silence>> = HashMap::new();
    let mut round = Round { rules: rules.len(), ..Round::default() };
    for rule in rules {
        if rule.evaluated_ms >= round_ms {
            continue;
        }
        let Some(name) = names.get(&rule.customer_id) else { continue };
        if let std::collections::hash_map::Entry::Vacant(e) = silences.entry(rule.customer_id) {
            let now = state.clock.now_ms();
            let (records, _) = state.store.alert_silences(rule.customer_id, Some(now), 0, 1_000).await?;
            e.insert(records.iter().map(Silence::of).collect());
        }
        let silences = silences.get(&rule.customer_id).map(Vec::as_slice).unwrap_or_default();
        match evaluate_rule(state, &rule, name, round_ms, silences).await {
            Ok(Some(evaluation)) => {
                let (t, d) = (evaluation.events.len(), evaluation.deliveries.len());
                if state.store.record_evaluation(&evaluation).await? {
                    round.transitions += t;
                    round.deliveries += d;
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(rule = %rule.id, error = %e, "evaluating an alert rule failed"),
        }
    }
    Ok(Some(round))
}

/// A rule's evaluation at `round_ms`, ready to be written; None when its definition cannot be read.
async fn evaluate_rule(
    state: &AppState,
    rule: &RuleRecord,
    customer: &str,
    round_ms: i64,
    silences: &[Silence],
) -> anyhow::Result<Option<Evaluation>> {
    let Ok(def) = serde_json::from_str::<AlertRuleInput>(&rule.definition) else { return Ok(None) };
    let mut status = Status::parse(&rule.status);
    let was = AlertState::parse(&rule.state).unwrap_or_default();
    let now = state.clock.now_ms();
    let (step, finding) = match &def.condition {
        Condition::Audit { operations, target_type, target_id } => {
            let from = status.cursor_ms.unwrap_or(rule.created_ms);
            let to = (now - AUDIT_LAG_MS).max(from);
            let filter = AuditFilter { from_ms: Some(from), to_ms: Some(to), ..AuditFilter::default() };
            let (newest, total) = state.store.audit_records(rule.customer_id, &filter, 0, AUDIT_PAGE).await?;
            // Newest first. When more than a page came, the oldest page is read now and the rest next time,
            // from the newest time of that page on (records of that very millisecond are read then).
            let (records, cursor) = if total > AUDIT_PAGE {
                let offset = total - AUDIT_PAGE;
                let (oldest, _) = state.store.audit_records(rule.customer_id, &filter, offset, AUDIT_PAGE).await?;
                let last = oldest.first().map(|r| r.event.time_ms).unwrap_or(to);
                let first = oldest.last().map(|r| r.event.time_ms).unwrap_or(from);
                let cursor = if last > first { last } else { last + 1 };
                (oldest.into_iter().filter(|r| r.event.time_ms < cursor).collect::<Vec<_>>(), cursor)
            } else {
                (newest, to)
            };
            let matched: Vec<_> = records
                .iter()
                .filter(|r| operation_matches(operations, &r.event.operation))
                .filter(|r| target_type.as_ref().is_none_or(|t| *t == r.event.target_type))
                .filter(|r| target_id.as_ref().is_none_or(|t| *t == r.event.target_id))
                .collect();
            status.cursor_ms = Some(cursor);
            let listed: Vec<Value> = matched
                .iter()
                .take(AUDIT_RECORDS_NAMED)
                .map(|r| {
                    let actor = match &r.event.actor {
                        store::Actor::User { name, .. } | store::Actor::Unknown(name) => name.clone(),
                        store::Actor::System => "system".into(),
                    };
                    json!({"id": r.id, "time": iso_ms(r.event.time_ms), "operation": r.event.operation,
                           "target": {"type": r.event.target_type, "id": r.event.target_id,
                                      "name": r.event.target_name}, "actor": actor})
                })
                .collect();
            let finding = Finding {
                holds: Some(!matched.is_empty()),
                value: Some(matched.len() as f64),
                details: Map::from_iter([
                    ("records".into(), Value::Array(listed)),
                    ("count".into(), json!(matched.len())),
                ]),
                ..Finding::default()
            };
            (advance_audit(was, &mut status, !matched.is_empty(), now), finding)
        }
        condition => {
            let mut problems = Vec::new();
            let Some(watch) = condition.watch() else { return Ok(None) };
            let Some(target) = check_watch(watch, matches!(condition, Condition::Anomaly { .. }), &mut problems) else {
                return Ok(None);
            };
            let step_ms = target.step_ms();
            let end = now.div_euclid(step_ms) * step_ms;
            let (engine, name, condition) = (state.stats.clone(), customer.to_string(), condition.clone());
            let id = rule.customer_id;
            let finding = tokio::task::spawn_blocking(move || {
                measure(engine.as_ref(), (id, &name), &condition, &target, end, now)
            })
            .await?;
            let for_ms = i64::from(def.for_minutes) * 60_000;
            let renotify_ms = i64::from(def.renotify_minutes) * 60_000;
            (advance(was, &mut status, finding.holds, now, for_ms, renotify_ms), finding)
        }
    };
    status.evaluated_ms = Some(now);
    status.error = finding.error.clone();
    if finding.holds.is_some() {
        status.value = finding.value;
        status.group = finding.group.clone();
    }
    let silenced = step.notify.is_some() && silence::silenced(silences, &rule.id, &def.labels, now);
    let mut details = finding.details.clone();
    if !finding.group.is_empty() {
        details.insert("group".into(), Value::Object(finding.group.clone()));
    }
    let events: Vec<EventRecord> = step
        .transition
        .map(|(from, to)| EventRecord {
            id: store::new_id(),
            customer_id: rule.customer_id,
            rule_id: rule.id.clone(),
            rule_name: rule.name.clone(),
            severity: def.severity.as_str().into(),
            time_ms: now,
            from_state: from.as_str().into(),
            to_state: to.as_str().into(),
            value: finding.value.map(|v| v.to_string()),
            silenced,
            details: Value::Object(details.clone()).to_string(),
        })
        .into_iter()
        .collect();
    let deliveries = match step.notify {
        Some(kind) => {
            let previous = step.transition.map(|(from, _)| from).unwrap_or(was);
            let n = Notice { kind, state: step.state, previous, value: finding.value, details };
            def.channels
                .iter()
                .map(|channel| delivery(state, rule, &def, customer, channel, &n, silenced, now))
                .collect()
        }
        None => Vec::new(),
    };
    Ok(Some(Evaluation {
        customer_id: rule.customer_id,
        rule_id: rule.id.clone(),
        expected_ms: rule.evaluated_ms,
        evaluated_ms: round_ms,
        state: step.state.as_str().into(),
        status: status.to_json(),
        events,
        deliveries,
    }))
}

/// What a notification tells.
pub struct Notice {
    pub kind: NotificationKind,
    pub state: AlertState,
    pub previous: AlertState,
    pub value: Option<f64>,
    pub details: Map<String, Value>,
}

/// The console's page of a rule (or of the alerts).
pub fn console_url(state: &AppState, customer: &str, rule_id: Option<&str>) -> String {
    let base = format!("{}/{customer}/alerts", state.settings.public_url.trim_end_matches('/'));
    match rule_id {
        Some(id) => format!("{base}?rule={id}"),
        None => base,
    }
}

/// The webhook body of a notice about `rule` (None: a test).
pub fn payload(
    state: &AppState,
    id: &str,
    customer: &str,
    rule: Option<(&RuleRecord, &AlertRuleInput)>,
    notice: &Notice,
    now_ms: i64,
) -> String {
    let body = WebhookPayload {
        version: 1,
        id: id.to_string(),
        kind: notice.kind,
        time: iso_ms(now_ms),
        customer: customer.to_string(),
        rule: rule.map(|(r, def)| WebhookRule {
            id: r.id.clone(),
            name: r.name.clone(),
            severity: def.severity,
            labels: def.labels.clone(),
            uri: format!("{}/alerts/rules/{}", paths::base(customer), r.id),
        }),
        state: notice.state,
        previous_state: notice.previous,
        value: notice.value,
        summary: match rule {
            Some((_, def)) => crate::domain::alerts::describe(&def.condition),
            None => "A test notification from Edge Console: this channel works.".into(),
        },
        console_url: console_url(state, customer, rule.map(|(r, _)| r.id.as_str())),
        details: notice.details.clone(),
    };
    serde_json::to_string(&body).unwrap_or_default()
}

#[allow(clippy::too_many_arguments)]
fn delivery(
    state: &AppState,
    rule: &RuleRecord,
    def: &AlertRuleInput,
    customer: &str,
    channel: &str,
    notice: &Notice,
    silenced: bool,
    now_ms: i64,
) -> DeliveryRecord {
    let id = store::new_id();
    DeliveryRecord {
        payload: payload(state, &id, customer, Some((rule, def)), notice, now_ms),
        id,
        customer_id: rule.customer_id,
        channel_id: channel.to_string(),
        rule_id: Some(rule.id.clone()),
        rule_name: rule.name.clone(),
        kind: notice.kind.as_str().into(),
        created_ms: now_ms,
        status: if silenced { "silenced" } else { "pending" }.into(),
        attempts: 0,
        next_attempt_ms: now_ms,
        lease_ms: 0,
        response_status: None,
        error: None,
        sent_ms: None,
    }
}

/// A test notification to `channel`, as a delivery (pending: the sender makes it).
pub fn test_delivery(state: &AppState, customer: &str, channel: &ChannelRecord, now_ms: i64) -> DeliveryRecord {
    let id = store::new_id();
    let (state_now, previous) = notify::test_states();
    let notice = Notice { kind: NotificationKind::Test, state: state_now, previous, value: None, details: Map::new() };
    DeliveryRecord {
        payload: payload(state, &id, customer, None, &notice, now_ms),
        id,
        customer_id: channel.customer_id,
        channel_id: channel.id.clone(),
        rule_id: None,
        rule_name: String::new(),
        kind: NotificationKind::Test.as_str().into(),
        created_ms: now_ms,
        status: "pending".into(),
        attempts: 0,
        next_attempt_ms: now_ms,
        lease_ms: 0,
        response_status: None,
        error: None,
        sent_ms: None,
    }
}

/// Claims the deliveries due now and makes one attempt of each, at the same time (each bounded by its own
/// timeout); returns how many were claimed.
pub async fn deliver_due(state: &AppState) -> usize {
    let now = state.clock.now_ms();
    let claimed = match state.store.claim_deliveries(now, now + LEASE_MS, CLAIM).await {
        Ok(claimed) => claimed,
        Err(e) => {
            tracing::warn!(error = %e, "claiming alert deliveries failed");
            return 0;
        }
    };
    let n = claimed.len();
    let mut attempts = tokio::task::JoinSet::new();
    for c in claimed {
        let state = state.clone();
        attempts.spawn(async move { attempt(&state, c).await });
    }
    while attempts.join_next().await.is_some() {}
    n
}

/// One attempt of a claimed delivery, and its outcome written.
pub async fn attempt(state: &AppState, c: ClaimedDelivery) -> Option<DeliveryRecord> {
    let allow = state.settings.alert_webhooks_to_private;
    let sent = match tokio::time::timeout(
        Duration::from_secs(30),
        notify::attempt(&state.mailer, &c.channel, &c.delivery.payload, allow),
    )
    .await
    {
        Ok(sent) => sent,
        Err(_) => notify::Sent { ok: false, retry: true, response_status: None, error: Some("timed out".into()) },
    };
    let now = state.clock.now_ms();
    let retry = if sent.retry { notify::retry_after(c.delivery.attempts) } else { None };
    let outcome = AttemptOutcome {
        status: match (sent.ok, retry) {
            (true, _) => "sent",
            (false, Some(_)) => "pending",
            (false, None) => "failed",
        }
        .into(),
        next_attempt_ms: now + retry.unwrap_or(0),
        response_status: sent.response_status,
        error: sent.error.clone(),
        sent_ms: sent.ok.then_some(now),
    };
    if !sent.ok {
        tracing::info!(delivery = %c.delivery.id, channel = %c.channel.id, error = ?sent.error, "an alert delivery failed");
    }
    match state.store.finish_delivery(&c.delivery.id, c.delivery.lease_ms, &outcome).await {
        Ok(true) => Some(DeliveryRecord {
            status: outcome.status,
            next_attempt_ms: outcome.next_attempt_ms,
            response_status: outcome.response_status,
            error: outcome.error,
            sent_ms: outcome.sent_ms,
            ..c.delivery
        }),
        Ok(false) => None,
        Err(e) => {
            tracing::warn!(error = %e, "recording an alert delivery failed");
            None
        }
    }
}

/// Labels of a rule, for callers that have only its definition's JSON.
pub fn labels_of(definition: &str) -> BTreeMap<String, String> {
    serde_json::from_str::<AlertRuleInput>(definition).map(|d| d.labels).unwrap_or_default()
}
