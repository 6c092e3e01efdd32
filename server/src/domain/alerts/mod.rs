//! Alerting's rules without HTTP: a rule's definition checked ([`check_rule`]), its evaluation state
//! ([`Status`]) and how it moves ([`advance`]), the words that describe a condition, and silences (`silence`),
//! statistics measured for a rule (`measure`), notifications made and sent (`notify`, `webhook`).

pub mod measure;
pub mod notify;
pub mod silence;
pub mod webhook;

use std::collections::BTreeMap;

use edge_api::{
    alerts::{
        AlertRuleInput, AlertState, Comparison, Condition, Direction, LABEL_NAME_PATTERN, MAX_AUDIT_OPERATIONS,
        MAX_FOR_MINUTES, MAX_LABEL_VALUE_CHARS, MAX_LABELS, MAX_RENOTIFY_MINUTES, MAX_RULE_CHANNELS,
        MAX_WINDOW_MINUTES, MIN_WINDOW_MINUTES, NotificationKind, Watch,
    },
    audit::AUDIT_OPERATIONS,
    limits::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, over_chars},
    stats::{Family, Granularity},
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where a rule stands besides its state: kept as JSON with the rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// Since when the rule is in its state.
    #[serde(default)]
    pub since_ms: i64,
    #[serde(default)]
    pub value: Option<f64>,
    #[serde(default)]
    pub group: Map<String, Value>,
    #[serde(default)]
    pub error: Option<String>,
    /// When the condition began to hold (pending).
    #[serde(default)]
    pub pending_since_ms: Option<i64>,
    /// When the rule last notified while firing.
    #[serde(default)]
    pub last_notified_ms: Option<i64>,
    /// An audit rule: records before this were looked at.
    #[serde(default)]
    pub cursor_ms: Option<i64>,
    #[serde(default)]
    pub evaluated_ms: Option<i64>,
}

impl Status {
    pub fn new(now_ms: i64) -> Status {
        Status { since_ms: now_ms, cursor_ms: Some(now_ms), ..Status::default() }
    }

    pub fn parse(json: &str) -> Status {
        serde_json::from_str(json).unwrap_or_default()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }
}

/// What one evaluation found: whether the condition holds (None: no data, or it could not be evaluated), the
/// value, and what it was made of.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Finding {
    pub holds: Option<bool>,
    pub value: Option<f64>,
    pub group: Map<String, Value>,
    pub details: Map<String, Value>,
    pub error: Option<String>,
}

/// How a rule moves on one evaluation: its new state, the transition to record (from, to), and what to notify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub state: AlertState,
    pub transition: Option<(AlertState, AlertState)>,
    pub notify: Option<NotificationKind>,
}

/// The state machine of a statistics rule: ok → pending (the condition holds) → firing (it held for
/// `for_ms`; notified) → resolved (it stopped holding; notified) → pending again when it holds again. While
/// firing, the rule notifies again every `renotify_ms` (0: never). With no data the state stays as it is.
pub fn advance(
    state: AlertState,
    status: &mut Status,
    holds: Option<bool>,
    now_ms: i64,
    for_ms: i64,
    renotify_ms: i64,
) -> Step {
    let stay = Step { state, transition: None, notify: None };
    let Some(holds) = holds else { return stay };
    let to = |to: AlertState, notify: Option<NotificationKind>, status: &mut Status| {
        status.since_ms = now_ms;
        if to == AlertState::Firing {
            status.last_notified_ms = Some(now_ms);
        }
        if to != AlertState::Pending {
            status.pending_since_ms = None;
        }
        Step { state: to, transition: Some((state, to)), notify }
    };
    match (state, holds) {
        (AlertState::Ok | AlertState::Resolved, true) if for_ms <= 0 => {
            to(AlertState::Firing, Some(NotificationKind::Firing), status)
        }
        (AlertState::Ok | AlertState::Resolved, true) => {
            status.pending_since_ms = Some(now_ms);
            to(AlertState::Pending, None, status)
        }
        (AlertState::Pending, true) => {
            let since = status.pending_since_ms.unwrap_or(status.since_ms);
            if now_ms - since >= for_ms { to(AlertState::Firing, Some(NotificationKind::Firing), status) } else { stay }
        }
        (AlertState::Firing, true) => {
            let last = status.last_notified_ms.unwrap_or(status.since_ms);
            if renotify_ms > 0 && now_ms - last >= renotify_ms {
                status.last_notified_ms = Some(now_ms);
                Step { state, transition: None, notify: Some(NotificationKind::Renotify) }
            } else {
                stay
            }
        }
        (AlertState::Pending, false) => to(AlertState::Ok, None, status),
        (AlertState::Firing, false) => to(AlertState::Resolved, Some(NotificationKind::Resolved), status),
        (AlertState::Ok | AlertState::Resolved, false) => stay,
    }
}

/// The state machine of an audit rule: firing (notified) at each evaluation that found matching records, and
/// resolved (not notified: nothing ended that anyone waits for) at the first without.
pub fn advance_audit(state: AlertState, status: &mut Status, matched: bool, now_ms: i64) -> Step {
    match (state, matched) {
        (_, true) => {
            status.last_notified_ms = Some(now_ms);
            if state == AlertState::Firing {
                Step { state, transition: None, notify: Some(NotificationKind::Firing) }
            } else {
                status.since_ms = now_ms;
                Step {
                    state: AlertState::Firing,
                    transition: Some((state, AlertState::Firing)),
                    notify: Some(NotificationKind::Firing),
                }
            }
        }
        (AlertState::Firing, false) => {
            status.since_ms = now_ms;
            Step { state: AlertState::Resolved, transition: Some((state, AlertState::Resolved)), notify: None }
        }
        (_, false) => Step { state, transition: None, notify: None },
    }
}

/// A watched statistics path resolved: its family, and the granularity its window is summed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub family: Family,
    /// None for the families without one (top-K categories, events).
    pub granularity: Option<Granularity>,
    pub window_ms: i64,
}

impl Target {
    /// The length of a step of evaluation and of a preview's points: the bucket, or an hour where the family has
    /// no buckets.
    pub fn step_ms(&self) -> i64 {
        self.granularity.map(Granularity::millis).unwrap_or(3_600_000)
    }
}

/// The family a watchable path names.
pub fn family_of(path: &str) -> Option<Family> {
    match path {
        "/stats" => Some(Family::Delivery),
        "/stats/security/waf/trends" => Some(Family::WafTrends),
        "/stats/security/request/trends" => Some(Family::RequestTrends),
        "/stats/security/trafficshaping/trends" => Some(Family::ShapingTrends),
        "/stats/security/events" => Some(Family::Events),
        _ => {
            if let Some(c) = path.strip_prefix("/stats/security/waf/topk/") {
                Family::topk(true, c)
            } else {
                Family::topk(false, path.strip_prefix("/stats/security/trafficshaping/topk/")?)
            }
        }
    }
}

/// The metric that counts security events (which have no metrics of their own).
pub const EVENTS_METRIC: &str = "events";

/// Checks a watch: its path, window, metric and dimensions (the statistics validator, as the statistics
/// endpoints run it, checks the rest when the rule is measured: see [`measure::check`]). `anomaly`: it is
/// compared with previous weeks, which hourly data reaches.
pub fn check_watch(watch: &Watch, anomaly: bool, problems: &mut Vec<String>) -> Option<Target> {
    let Some(family) = family_of(&watch.path) else {
        problems.push(format!(
            "condition.watch.path: {:?} is not a statistics path a rule can watch ({})",
            cut_for_message(&watch.path),
            edge_api::alerts::WATCHABLE_PATHS.join(", ")
        ));
        return None;
    };
    let minutes = watch.window_minutes;
    if !(MIN_WINDOW_MINUTES..=MAX_WINDOW_MINUTES).contains(&minutes) || !minutes.is_multiple_of(5) {
        problems.push(format!("condition.watch.window_minutes: {minutes} is not 5 to 1440 minutes in whole 5 minutes"));
        return None;
    }
    let hours = minutes.is_multiple_of(60);
    let granularity = match family {
        Family::WafTopK(_) | Family::ShapingTopK(_) | Family::Events => None,
        _ if hours => Some(Granularity::Hour),
        _ => Some(Granularity::FiveMinute),
    };
    if granularity.is_none() && !hours {
        problems.push(
            "condition.watch.window_minutes: top-K reports and security events are watched over whole hours".into(),
        );
    }
    if anomaly && !hours {
        problems.push("condition.watch.window_minutes: an anomaly is compared over whole hours (60, 120, …)".into());
    }
    if family == Family::Events {
        if anomaly {
            problems.push("condition: security events are kept three days, too few for an anomaly's weeks".into());
        }
        if !watch.dimensions.is_empty() {
            problems.push("condition.watch.dimensions: security events are counted whole, without dimensions".into());
        }
        let metrics = std::iter::once(&watch.metric).chain(watch.denominator.iter().map(|d| &d.metric));
        if metrics.into_iter().any(|m| m != EVENTS_METRIC) {
            problems.push(format!("condition.watch.metric: security events are counted as {EVENTS_METRIC:?}"));
        }
    }
    for filters in std::iter::once(&watch.filters).chain(watch.denominator.iter().map(|d| &d.filters)) {
        if filters.as_deref().is_some_and(|f| over_chars(f, 512)) {
            problems.push("condition.watch.filters: at most 512 characters".into());
        }
    }
    if watch.dimensions.len() > 4 {
        problems.push("condition.watch.dimensions: at most 4".into());
    }
    Some(Target { family, granularity, window_ms: i64::from(minutes) * 60_000 })
}

/// Whether `pattern` (an operation, a prefix ending in `.*`, or `*`) names at least one operation.
fn known_operation_pattern(pattern: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    match pattern.strip_suffix(".*") {
        Some(prefix) => AUDIT_OPERATIONS.iter().any(|(op, _)| op.starts_with(&format!("{prefix}."))),
        None => AUDIT_OPERATIONS.iter().any(|(op, _)| *op == pattern),
    }
}

/// Whether an audit operation matches one of `patterns`.
pub fn operation_matches(patterns: &[String], operation: &str) -> bool {
    patterns.iter().any(|p| {
        p == "*"
            || p == operation
            || p.strip_suffix(".*").is_some_and(|prefix| {
                operation.len() > prefix.len() + 1
                    && operation.starts_with(prefix)
                    && operation.as_bytes()[prefix.len()] == b'.'
            })
    })
}

/// The label name rule ([`LABEL_NAME_PATTERN`]) without a regex engine.
pub fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'))
}

/// Checks labels (a rule's, or a silence's matchers) into `problems`, each prefixed by `field`.
pub fn check_labels(field: &str, labels: &BTreeMap<String, String>, problems: &mut Vec<String>) {
    if labels.len() > MAX_LABELS {
        problems.push(format!("{field}: at most {MAX_LABELS}"));
        return;
    }
    for (name, value) in labels {
        if !valid_label_name(name) {
            problems.push(format!("{field}: {:?} is not a label name ({LABEL_NAME_PATTERN})", cut_for_message(name)));
        }
        if over_chars(value, MAX_LABEL_VALUE_CHARS) || value.chars().any(char::is_control) {
            problems.push(format!(
                "{field}.{}: at most {MAX_LABEL_VALUE_CHARS} characters, without control characters",
                cut_for_message(name)
            ));
        }
    }
}

/// A name: 1 to 200 characters, not only spaces, no control characters.
pub fn check_name(field: &str, name: &str, problems: &mut Vec<String>) {
    if name.trim().is_empty() || over_chars(name, MAX_NAME_CHARS) || name.chars().any(char::is_control) {
        problems.push(format!("{field}: 1 to {MAX_NAME_CHARS} characters, without control characters"));
    }
}

/// At most 60 characters of what someone sent, for a message.
pub fn cut_for_message(text: &str) -> String {
    edge_api::limits::cut(text, 60).into_owned()
}

/// Checks everything of a rule's definition that needs nothing stored (the channels' existence and the
/// statistics query are checked by the caller); every problem, each `field: problem`.
pub fn check_rule(rule: &AlertRuleInput) -> Result<Option<Target>, Vec<String>> {
    let mut problems = Vec::new();
    check_name("name", &rule.name, &mut problems);
    if over_chars(&rule.description, MAX_DESCRIPTION_CHARS) {
        problems.push(format!("description: at most {MAX_DESCRIPTION_CHARS} characters"));
    }
    if rule.for_minutes > MAX_FOR_MINUTES {
        problems.push(format!("for_minutes: at most {MAX_FOR_MINUTES}"));
    }
    if rule.renotify_minutes > MAX_RENOTIFY_MINUTES {
        problems.push(format!("renotify_minutes: at most {MAX_RENOTIFY_MINUTES} (a week)"));
    }
    if rule.channels.len() > MAX_RULE_CHANNELS {
        problems.push(format!("channels: at most {MAX_RULE_CHANNELS}"));
    }
    let mut seen = std::collections::HashSet::new();
    if rule.channels.iter().any(|c| !seen.insert(c)) {
        problems.push("channels: a channel is listed twice".into());
    }
    check_labels("labels", &rule.labels, &mut problems);
    let finite = |field: &str, v: f64, min: f64, max: f64, problems: &mut Vec<String>| {
        if !v.is_finite() || v < min || v > max {
            problems.push(format!("{field}: a number from {min} to {max}"));
        }
    };
    let target = match &rule.condition {
        Condition::Threshold { watch, value, .. } => {
            finite("condition.value", *value, -1e15, 1e15, &mut problems);
            check_watch(watch, false, &mut problems)
        }
        Condition::Anomaly { watch, z_score, weeks, min_volume, .. } => {
            finite("condition.z_score", *z_score, 0.5, 100.0, &mut problems);
            finite("condition.min_volume", *min_volume, 0.0, 1e15, &mut problems);
            if !(1..=edge_api::alerts::MAX_ANOMALY_WEEKS).contains(weeks) {
                problems.push("condition.weeks: 1 to 4".into());
            }
            check_watch(watch, true, &mut problems)
        }
        Condition::Audit { operations, target_type, target_id } => {
            if operations.is_empty() || operations.len() > MAX_AUDIT_OPERATIONS {
                problems.push(format!("condition.operations: 1 to {MAX_AUDIT_OPERATIONS}"));
            }
            for op in operations {
                if over_chars(op, 64) || !known_operation_pattern(op) {
                    problems.push(format!(
                        "condition.operations: {:?} names no audit operation (an operation, a prefix ending in .*, or *)",
                        cut_for_message(op)
                    ));
                }
            }
            if target_type.as_deref().is_some_and(|t| over_chars(t, 64)) {
                problems.push("condition.target_type: at most 64 characters".into());
            }
            if target_id.as_deref().is_some_and(|t| over_chars(t, 256)) {
                problems.push("condition.target_id: at most 256 characters".into());
            }
            if rule.for_minutes != 0 {
                problems.push("for_minutes: an audit rule fires when a record is written: 0".into());
            }
            None
        }
    };
    if problems.is_empty() { Ok(target) } else { Err(problems) }
}

/// A condition in words: `hits [http_status_code==503] / hits > 0.02 over 5 minutes (/stats)`.
pub fn describe(condition: &Condition) -> String {
    let watched = |w: &Watch| {
        let part = |metric: &str, filters: &Option<String>| match filters.as_deref().filter(|f| !f.is_empty()) {
            Some(f) => format!("{metric} [{f}]"),
            None => metric.to_string(),
        };
        let mut s = part(&w.metric, &w.filters);
        if let Some(d) = &w.denominator {
            s = format!("{s} / {}", part(&d.metric, &d.filters));
        }
        if !w.dimensions.is_empty() {
            s = format!("{s} by {}", w.dimensions.join(", "));
        }
        (s, format!("over {} ({})", minutes_in_words(w.window_minutes), w.path))
    };
    match condition {
        Condition::Threshold { watch, operator, value } => {
            let (what, over) = watched(watch);
            format!("{what} {} {value} {over}", operator.as_str())
        }
        Condition::Anomaly { watch, z_score, weeks, direction, .. } => {
            let (what, over) = watched(watch);
            let side = match direction {
                Direction::Up => "above",
                Direction::Down => "below",
                Direction::Both => "above or below",
            };
            format!("{what} {z_score} standard deviations {side} the same hours of the previous {weeks} weeks, {over}")
        }
        Condition::Audit { operations, target_type, target_id } => {
            let on = match (target_type, target_id) {
                (Some(t), Some(i)) => format!(" on {t} {i}"),
                (Some(t), None) => format!(" on any {t}"),
                (None, Some(i)) => format!(" on {i}"),
                (None, None) => String::new(),
            };
            format!("audit records of {}{on}", operations.join(", "))
        }
    }
}

fn minutes_in_words(minutes: u32) -> String {
    match minutes {
        m if m % 60 == 0 && m >= 120 => format!("{} hours", m / 60),
        60 => "1 hour".into(),
        m => format!("{m} minutes"),
    }
}

/// Whether the comparison of a threshold rule holds.
pub fn threshold_holds(operator: Comparison, value: f64, threshold: f64) -> bool {
    operator.holds(value, threshold)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_goes_pending_then_firing_then_resolved() {
        let mut status = Status::new(0);
        let s = advance(AlertState::Ok, &mut status, Some(true), 60_000, 120_000, 0);
        assert_eq!((s.state, s.notify), (AlertState::Pending, None));
        let s = advance(s.state, &mut status, Some(true), 120_000, 120_000, 0);
        assert_eq!(s.state, AlertState::Pending);
        let s = advance(s.state, &mut status, Some(true), 180_000, 120_000, 0);
        assert_eq!((s.state, s.notify), (AlertState::Firing, Some(NotificationKind::Firing)));
        let s = advance(s.state, &mut status, None, 240_000, 120_000, 0);
        assert_eq!((s.state, s.transition), (AlertState::Firing, None));
        let s = advance(s.state, &mut status, Some(false), 300_000, 120_000, 0);
        assert_eq!((s.state, s.notify), (AlertState::Resolved, Some(NotificationKind::Resolved)));
        let s = advance(s.state, &mut status, Some(true), 360_000, 0, 0);
        assert_eq!(s.transition, Some((AlertState::Resolved, AlertState::Firing)));
    }

    #[test]
    fn a_firing_rule_notifies_again_after_its_interval() {
        let mut status = Status::new(0);
        let s = advance(AlertState::Ok, &mut status, Some(true), 0, 0, 600_000);
        assert_eq!(s.notify, Some(NotificationKind::Firing));
        assert_eq!(advance(s.state, &mut status, Some(true), 540_000, 0, 600_000).notify, None);
        assert_eq!(
            advance(s.state, &mut status, Some(true), 600_000, 0, 600_000).notify,
            Some(NotificationKind::Renotify)
        );
        assert_eq!(advance(s.state, &mut status, Some(true), 660_000, 0, 600_000).notify, None);
    }

    #[test]
    fn operation_patterns_match_whole_segments() {
        let p = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(operation_matches(&p(&["property.config.*"]), "property.config.update"));
        assert!(!operation_matches(&p(&["property.config.*"]), "property.create"));
        assert!(!operation_matches(&p(&["user.*"]), "userx.create"));
        assert!(operation_matches(&p(&["*"]), "cache.purge"));
        assert!(known_operation_pattern("property.config.*") && known_operation_pattern("login.lockout"));
        assert!(!known_operation_pattern("property.conf.*") && !known_operation_pattern("nothing"));
    }

    #[test]
    fn label_names_follow_their_pattern() {
        assert!(valid_label_name("team") && valid_label_name("a.b-c_1"));
        assert!(!valid_label_name("") && !valid_label_name("1a") && !valid_label_name("Team"));
        assert!(!valid_label_name(&"a".repeat(65)));
    }
}
