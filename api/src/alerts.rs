//! Alerting on the wire: rules over a statistics query or the audit log, the channels that notify (e-mail,
//! signed webhooks), silences, the events of each rule's state, the webhook's body, and the incident timeline's
//! markers. The bounds are here too, shared by the server (which checks them) and the console (which says them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::paging::paged;

/// Rules one customer may have.
pub const MAX_RULES: u64 = 200;
/// Channels one customer may have.
pub const MAX_CHANNELS: u64 = 50;
/// Silences one customer may have that have not ended.
pub const MAX_SILENCES: u64 = 200;
/// Channels one rule notifies.
pub const MAX_RULE_CHANNELS: usize = 10;
/// Labels of a rule, or matchers of a silence.
pub const MAX_LABELS: usize = 20;
/// A label's name: 1 to 64 of `a-z`, `0-9`, `_`, `-`, `.`, starting with a letter.
pub const LABEL_NAME_PATTERN: &str = "^[a-z][a-z0-9_.-]{0,63}$";
/// A label's value, in characters.
pub const MAX_LABEL_VALUE_CHARS: usize = 200;
/// Addresses of one e-mail channel.
pub const MAX_EMAIL_ADDRESSES: usize = 20;
/// Audit operations one rule watches.
pub const MAX_AUDIT_OPERATIONS: usize = 20;
/// Deliveries each channel's log keeps (the newest; those still being sent are kept whatever their number).
pub const DELIVERY_LOG_PER_CHANNEL: u64 = 200;
/// Days alert events and finished deliveries are kept.
pub const EVENT_RETENTION_DAYS: i64 = 90;
/// Alert events one customer keeps at most (the oldest go first).
pub const MAX_EVENTS_PER_CUSTOMER: u64 = 20_000;
/// A statistics rule's window, in minutes: 5 minutes to a day, in whole 5 minutes.
pub const MIN_WINDOW_MINUTES: u32 = 5;
pub const MAX_WINDOW_MINUTES: u32 = 1440;
/// How long a condition must hold before the rule fires, in minutes.
pub const MAX_FOR_MINUTES: u32 = 1440;
/// Re-notification of a firing rule, in minutes (0: never), at most a week.
pub const MAX_RENOTIFY_MINUTES: u32 = 10_080;
/// Previous weeks an anomaly rule compares the window with.
pub const MAX_ANOMALY_WEEKS: u32 = 4;
/// Markers one timeline answer holds (the newest of the range when there are more).
pub const MAX_MARKERS: usize = 500;
/// How far back a draft rule's preview looks.
pub const PREVIEW_DAYS: i64 = 7;

/// The statistics paths a rule may watch: every family's path relative to the customer base, with `{category}`
/// standing for a WAF or traffic-shaping top-K category.
pub const WATCHABLE_PATHS: [&str; 7] = [
    "/stats",
    "/stats/security/waf/trends",
    "/stats/security/request/trends",
    "/stats/security/trafficshaping/trends",
    "/stats/security/events",
    "/stats/security/waf/topk/{category}",
    "/stats/security/trafficshaping/topk/{category}",
];

/// How serious a rule's firing is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Critical];

    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }

    pub fn parse(s: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// A comparison of a threshold rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Comparison {
    #[serde(rename = ">")]
    Above,
    #[serde(rename = ">=")]
    AtLeast,
    #[serde(rename = "<")]
    Below,
    #[serde(rename = "<=")]
    AtMost,
}

impl Comparison {
    pub const ALL: [Comparison; 4] = [Comparison::Above, Comparison::AtLeast, Comparison::Below, Comparison::AtMost];

    pub const fn as_str(self) -> &'static str {
        match self {
            Comparison::Above => ">",
            Comparison::AtLeast => ">=",
            Comparison::Below => "<",
            Comparison::AtMost => "<=",
        }
    }

    pub fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Comparison::Above => value > threshold,
            Comparison::AtLeast => value >= threshold,
            Comparison::Below => value < threshold,
            Comparison::AtMost => value <= threshold,
        }
    }

    /// Whether larger values are worse (so the worst group of a query is its largest value).
    pub const fn upward(self) -> bool {
        matches!(self, Comparison::Above | Comparison::AtLeast)
    }
}

/// Which side of its history an anomaly rule watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Up,
    Down,
    Both,
}

/// The part of a ratio below the line: a metric of the same statistics path, with filters of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Denominator {
    /// A metric of the path (`hits`, `bytes`, …).
    #[cfg_attr(feature = "openapi", schema(max_length = 64))]
    pub metric: String,
    /// Filters as the statistics endpoints take them (`dim==v,dim!=w` or `dim==v;dim!=w`); none: every row.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 512))]
    pub filters: Option<String>,
}

/// A statistics query a rule watches: a path (family), a metric with filters, optionally divided by another
/// (a ratio), grouped by dimensions, summed over a window that ends at the last complete bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Watch {
    /// One of [`WATCHABLE_PATHS`], with a top-K category in place of `{category}`.
    #[cfg_attr(feature = "openapi", schema(max_length = 128))]
    pub path: String,
    /// Dimensions to group by (a grouping set of the path); the rule looks at the worst group. None: totals.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 4))]
    pub dimensions: Vec<String>,
    /// The metric (`hits`, `bytes`, …); security events are counted as `events`.
    #[cfg_attr(feature = "openapi", schema(max_length = 64))]
    pub metric: String,
    /// Filters as the statistics endpoints take them.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 512))]
    pub filters: Option<String>,
    /// With a denominator the value is metric / denominator (a ratio, e.g. 5xx hits / hits).
    #[serde(default)]
    pub denominator: Option<Denominator>,
    /// The window summed, in minutes: 5 to 1440, a multiple of 5.
    #[cfg_attr(feature = "openapi", schema(minimum = 5, maximum = 1440, multiple_of = 5))]
    pub window_minutes: u32,
}

/// What a rule watches, and when it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Condition {
    /// The watched value compared with a threshold (a ratio as a fraction: 0.02 is 2 %).
    Threshold {
        watch: Watch,
        operator: Comparison,
        #[cfg_attr(feature = "openapi", schema(minimum = -1e15, maximum = 1e15))]
        value: f64,
    },
    /// The window's value against the same window of the previous weeks: it holds when its z-score (its
    /// distance from their mean in standard deviations) reaches `z_score` in the direction watched, and the
    /// window's volume (the denominator of a ratio, else the value) is at least `min_volume`.
    Anomaly {
        watch: Watch,
        #[cfg_attr(feature = "openapi", schema(minimum = 0.5, maximum = 100))]
        z_score: f64,
        /// Previous weeks compared (1 to 4).
        #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 4))]
        weeks: u32,
        #[serde(default)]
        #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1e15))]
        min_volume: f64,
        #[serde(default)]
        direction: Direction,
    },
    /// Audit records: any record of one of the operations (exact, or a prefix ending in `.*`, or `*`), on the
    /// target named when one is. Fires at the minute such a record is written; resolves at the next minute
    /// without one. Needs the role that reads the audit log.
    Audit {
        #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 20))]
        operations: Vec<String>,
        #[serde(default)]
        #[cfg_attr(feature = "openapi", schema(max_length = 64))]
        target_type: Option<String>,
        #[serde(default)]
        #[cfg_attr(feature = "openapi", schema(max_length = 256))]
        target_id: Option<String>,
    },
}

impl Condition {
    pub fn watch(&self) -> Option<&Watch> {
        match self {
            Condition::Threshold { watch, .. } | Condition::Anomaly { watch, .. } => Some(watch),
            Condition::Audit { .. } => None,
        }
    }
}

fn enabled_by_default() -> bool {
    true
}

/// Body of POST /alerts/rules and PUT /alerts/rules/{rule_id} (the whole rule), and of the preview.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertRuleInput {
    /// 1 to 200 characters.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
        )
    )]
    pub name: String,
    /// At most 2,000 characters.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 2000))]
    pub description: String,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    pub severity: Severity,
    pub condition: Condition,
    /// Minutes the condition must hold before the rule fires (pending meanwhile); 0 fires at once. Audit rules
    /// fire at once.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 1440))]
    pub for_minutes: u32,
    /// While firing, notify again every this many minutes; 0: once.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10080))]
    pub renotify_minutes: u32,
    /// Ids of the customer's channels to notify (at most 10).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 10))]
    pub channels: Vec<String>,
    /// Labels for silences and receivers: at most 20, names as [`LABEL_NAME_PATTERN`], values up to 200
    /// characters.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// A rule's state: ok, pending (the condition holds, not yet for its for-duration), firing, or resolved (ok
/// again after firing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum AlertState {
    #[default]
    Ok,
    Pending,
    Firing,
    Resolved,
}

impl AlertState {
    pub const ALL: [AlertState; 4] = [AlertState::Ok, AlertState::Pending, AlertState::Firing, AlertState::Resolved];

    pub const fn as_str(self) -> &'static str {
        match self {
            AlertState::Ok => "ok",
            AlertState::Pending => "pending",
            AlertState::Firing => "firing",
            AlertState::Resolved => "resolved",
        }
    }

    pub fn parse(s: &str) -> Option<AlertState> {
        AlertState::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// Where a rule stands, as of its last evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuleStatus {
    pub state: AlertState,
    /// Since when (ISO 8601, UTC).
    pub since: String,
    /// The value last evaluated (a ratio as a fraction; an anomaly's z-score); null before the first
    /// evaluation or without data.
    #[serde(default)]
    pub value: Option<f64>,
    /// The group the value is of, when the rule groups by dimensions (`{"country": "DE"}`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub group: Map<String, Value>,
    /// When the rule was last evaluated; null before.
    #[serde(default)]
    pub evaluated: Option<String>,
    /// Why the last evaluation failed (the query cannot be answered, too many groups); null when it did not.
    #[serde(default)]
    pub error: Option<String>,
}

/// A stored rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertRule {
    pub id: String,
    pub uri: String,
    pub name: String,
    pub description: String,
    pub enabled: bool,
    pub severity: Severity,
    pub condition: Condition,
    pub for_minutes: u32,
    pub renotify_minutes: u32,
    pub channels: Vec<String>,
    pub labels: BTreeMap<String, String>,
    pub status: RuleStatus,
    pub created: String,
    pub modified: String,
    /// Who last changed it.
    pub author: String,
}

paged!(
    /// A page of alert rules, by name.
    AlertRulePage,
    AlertRule
);

/// Body of POST /alerts/channels and PUT /alerts/channels/{channel_id}.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertChannelInput {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"
        )
    )]
    pub name: String,
    /// `email` or `webhook` (a channel keeps its type: PUT with another is 400).
    #[serde(rename = "type")]
    pub kind: ChannelKind,
    /// E-mail: 1 to 20 addresses.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 20))]
    pub addresses: Vec<String>,
    /// Webhook: an `http://` or `https://` URL, at most 2,048 characters.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 2048))]
    pub url: Option<String>,
    /// PUT only: make a new signing secret (shown once, in the answer); the old one stops at once.
    #[serde(default)]
    pub rotate_secret: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    Email,
    Webhook,
}

impl ChannelKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Email => "email",
            ChannelKind::Webhook => "webhook",
        }
    }

    pub fn parse(s: &str) -> Option<ChannelKind> {
        [ChannelKind::Email, ChannelKind::Webhook].into_iter().find(|k| k.as_str() == s)
    }
}

/// A stored channel. A webhook's signing secret is never shown again after the answer that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertChannel {
    pub id: String,
    pub uri: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ChannelKind,
    pub addresses: Vec<String>,
    #[serde(default)]
    pub url: Option<String>,
    /// A webhook's signing secret (HMAC-SHA256 key of `X-Edge-Signature`): only in the answer of its creation
    /// or of a PUT with `rotate_secret`; null everywhere else.
    #[serde(default)]
    pub secret: Option<String>,
    /// The channel's delivery log.
    pub deliveries_uri: String,
    /// POST here to send a test notification.
    pub test_uri: String,
    pub created: String,
    pub modified: String,
}

paged!(
    /// A page of alert channels, by name.
    AlertChannelPage,
    AlertChannel
);

/// What a notification says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum NotificationKind {
    /// The rule started firing (an audit rule: matching records were written).
    Firing,
    /// The rule is still firing (its re-notify interval passed).
    Renotify,
    /// The rule resolved.
    Resolved,
    /// A test sent from the channel's "send test".
    Test,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    /// Waiting to be sent (or for its next attempt).
    Pending,
    /// Being sent now.
    Sending,
    Sent,
    /// Given up: a 4xx answer, or every attempt failed.
    Failed,
    /// A silence matched: recorded, not sent.
    Silenced,
}

impl DeliveryStatus {
    pub const ALL: [DeliveryStatus; 5] = [
        DeliveryStatus::Pending,
        DeliveryStatus::Sending,
        DeliveryStatus::Sent,
        DeliveryStatus::Failed,
        DeliveryStatus::Silenced,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Sending => "sending",
            DeliveryStatus::Sent => "sent",
            DeliveryStatus::Failed => "failed",
            DeliveryStatus::Silenced => "silenced",
        }
    }

    pub fn parse(s: &str) -> Option<DeliveryStatus> {
        DeliveryStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl NotificationKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            NotificationKind::Firing => "firing",
            NotificationKind::Renotify => "renotify",
            NotificationKind::Resolved => "resolved",
            NotificationKind::Test => "test",
        }
    }

    pub fn parse(s: &str) -> Option<NotificationKind> {
        [NotificationKind::Firing, NotificationKind::Renotify, NotificationKind::Resolved, NotificationKind::Test]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// One notification to one channel, in its delivery log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Delivery {
    pub id: String,
    /// When it was made (ISO 8601, UTC).
    pub time: String,
    pub kind: NotificationKind,
    /// The rule it is about; null for a test.
    #[serde(default)]
    pub rule_id: Option<String>,
    pub rule_name: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    /// The last attempt's HTTP status (webhooks); null otherwise.
    #[serde(default)]
    pub response_status: Option<u16>,
    /// Why the last attempt failed; null when it did not.
    #[serde(default)]
    pub error: Option<String>,
    /// When it was sent, or when the next attempt is due while pending; null otherwise.
    #[serde(default)]
    pub next_attempt: Option<String>,
    #[serde(default)]
    pub sent: Option<String>,
}

paged!(
    /// A page of a channel's delivery log, newest first.
    DeliveryPage,
    Delivery
);

/// How a silence repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Repeat {
    Daily,
    Weekly,
}

impl Repeat {
    pub const fn millis(self) -> i64 {
        match self {
            Repeat::Daily => 86_400_000,
            Repeat::Weekly => 7 * 86_400_000,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Repeat::Daily => "daily",
            Repeat::Weekly => "weekly",
        }
    }

    pub fn parse(s: &str) -> Option<Repeat> {
        [Repeat::Daily, Repeat::Weekly].into_iter().find(|v| v.as_str() == s)
    }
}

/// Body of POST /alerts/silences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SilenceInput {
    /// Why (a maintenance, a known incident): at most 1,000 characters.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 1000))]
    pub comment: String,
    /// Silence this rule (an id of the customer's rules)…
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 64))]
    pub rule_id: Option<String>,
    /// …and/or every rule with all of these labels (at least one of the two).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// From (ISO 8601 with `Z` or an offset).
    #[cfg_attr(feature = "openapi", schema(max_length = 64))]
    pub starts: String,
    /// Until, later than `starts`; a repeating silence's window is shorter than its period.
    #[cfg_attr(feature = "openapi", schema(max_length = 64))]
    pub ends: String,
    /// Repeat the window every day or week (a maintenance window), in UTC.
    #[serde(default)]
    pub repeat: Option<Repeat>,
    /// The last window begins before this (ISO 8601); none: for ever.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 64))]
    pub repeat_until: Option<String>,
}

/// A stored silence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Silence {
    pub id: String,
    pub uri: String,
    pub comment: String,
    #[serde(default)]
    pub rule_id: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub starts: String,
    pub ends: String,
    #[serde(default)]
    pub repeat: Option<Repeat>,
    #[serde(default)]
    pub repeat_until: Option<String>,
    /// Silencing now.
    pub active: bool,
    /// No window of it lies ahead.
    pub expired: bool,
    pub created: String,
    pub author: String,
}

paged!(
    /// A page of silences, newest first.
    SilencePage,
    Silence
);

/// A rule's change of state, with what caused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertEvent {
    pub id: String,
    pub time: String,
    pub rule_id: String,
    pub rule_name: String,
    pub severity: Severity,
    pub from: AlertState,
    pub to: AlertState,
    /// The value that caused it (see [`RuleStatus::value`]).
    #[serde(default)]
    pub value: Option<f64>,
    /// Its notifications were silenced (recorded, not sent).
    pub silenced: bool,
    /// What the value was made of: the group, numerator and denominator, an anomaly's mean and deviation, an
    /// audit rule's records (their ids, operations and targets; who acted only to the audit log's readers).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub details: Map<String, Value>,
}

paged!(
    /// A page of alert events, newest first.
    AlertEventPage,
    AlertEvent
);

/// One point of a preview: the rule's value at an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PreviewPoint {
    pub time: String,
    /// Null without data.
    #[serde(default)]
    pub value: Option<f64>,
    /// The condition held.
    pub holds: bool,
}

/// A span in which the draft would have fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PreviewFiring {
    pub from: String,
    /// Null when it would still be firing.
    #[serde(default)]
    pub until: Option<String>,
}

/// When a draft rule would have fired over the last days.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RulePreview {
    pub from: String,
    pub to: String,
    /// Minutes between points (the query's bucket: 5 or 60; an audit rule's hour).
    pub step_minutes: u32,
    /// The value compared (`threshold`), or the z-score (`anomaly`), or records an hour (`audit`).
    pub points: Vec<PreviewPoint>,
    /// The threshold drawn with them (a z-score's bound for an anomaly); null for an audit rule.
    #[serde(default)]
    pub threshold: Option<f64>,
    pub firings: Vec<PreviewFiring>,
}

/// The JSON body a webhook receives (`Content-Type: application/json`), signed in `X-Edge-Signature:
/// sha256=<hex HMAC-SHA256 of the body with the channel's secret>`; `X-Edge-Delivery` repeats `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookPayload {
    /// 1: the version of this body.
    pub version: u32,
    /// The delivery's id: the same on every retry of it (receivers deduplicate by it).
    pub id: String,
    pub kind: NotificationKind,
    /// When the notification was made (ISO 8601, UTC); receivers may refuse old ones.
    pub time: String,
    pub customer: String,
    /// Null for a test.
    #[serde(default)]
    pub rule: Option<WebhookRule>,
    /// The rule's state now, and before.
    pub state: AlertState,
    pub previous_state: AlertState,
    #[serde(default)]
    pub value: Option<f64>,
    /// The condition in words (`5xx hits / hits > 0.02 over 5 minutes`).
    pub summary: String,
    /// The console's page of the rule.
    pub console_url: String,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub details: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookRule {
    pub id: String,
    pub name: String,
    pub severity: Severity,
    pub labels: BTreeMap<String, String>,
    pub uri: String,
}

/// What a timeline marker marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum MarkerKind {
    /// A configuration version (an update or a rollback) or a new property.
    Config,
    Purge,
    /// A network list created, changed or deleted, or its entries.
    List,
    /// Logins locked after repeated failures (only to the audit log's readers).
    Lockout,
    /// An alert rule's change of state.
    Alert,
}

/// A marker of the incident timeline: a change from the audit log or an alert's transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Marker {
    pub time: String,
    pub kind: MarkerKind,
    /// In words: `www: configuration version 7`, `5xx ratio firing`.
    pub title: String,
    /// The audit operation, or `alert.<state>`.
    pub operation: String,
    /// Who: a username, `system`, or the rule's name.
    pub actor: String,
    /// The record's address: a configuration version, a purge transaction, a network list, an alert rule.
    #[serde(default)]
    pub uri: Option<String>,
    /// A configuration marker's property and versions (`property`, `from_version`, `to_version`); an alert
    /// marker's `rule_id`, `severity`, `state`, `value`.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub details: Map<String, Value>,
}

/// The markers of a time range, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Timeline {
    pub from: String,
    pub to: String,
    pub markers: Vec<Marker>,
    /// More markers fell in the range than [`MAX_MARKERS`]: the newest are given.
    pub truncated: bool,
}

/// The summary of alerts for the navigation: how many rules fire now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlertSummary {
    pub firing: u64,
    pub pending: u64,
    pub rules: u64,
}
