//! Alerting's rows: the records as stored, their row mappers and the statements that insert them.

use super::super::{
    CustomerId, StoreError, StoreResult,
    db::{Query, Row, Tx, query},
};

/// A rule as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub name: String,
    /// The rule's definition: the JSON of `AlertRuleInput`.
    pub definition: String,
    pub enabled: bool,
    pub created_ms: i64,
    pub modified_ms: i64,
    pub author: String,
    /// `ok`, `pending`, `firing` or `resolved`.
    pub state: String,
    /// The rest of the evaluation state, JSON (see `domain::alerts::Status`).
    pub status: String,
    /// The round that last evaluated it (0: none yet).
    pub evaluated_ms: i64,
}

/// A channel as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub name: String,
    /// `email` or `webhook`.
    pub kind: String,
    pub addresses: Vec<String>,
    pub url: Option<String>,
    pub secret: Option<String>,
    pub created_ms: i64,
    pub modified_ms: i64,
}

/// A silence as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SilenceRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub comment: String,
    pub rule_id: Option<String>,
    /// JSON object of label matchers.
    pub labels: String,
    pub starts_ms: i64,
    pub ends_ms: i64,
    /// `daily` or `weekly`.
    pub repeat: Option<String>,
    pub repeat_until_ms: Option<i64>,
    /// When no window lies ahead any more; None: never.
    pub expires_ms: Option<i64>,
    pub created_ms: i64,
    pub author: String,
}

/// A rule's change of state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub rule_id: String,
    pub rule_name: String,
    pub severity: String,
    pub time_ms: i64,
    pub from_state: String,
    pub to_state: String,
    /// The value, written as a number (text, so that both databases keep it exactly).
    pub value: Option<String>,
    pub silenced: bool,
    /// JSON object.
    pub details: String,
}

/// A notification to one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub channel_id: String,
    pub rule_id: Option<String>,
    pub rule_name: String,
    /// `firing`, `renotify`, `resolved` or `test`.
    pub kind: String,
    pub created_ms: i64,
    /// `pending`, `sending`, `sent`, `failed` or `silenced`.
    pub status: String,
    pub attempts: u32,
    pub next_attempt_ms: i64,
    pub lease_ms: i64,
    pub response_status: Option<u16>,
    pub error: Option<String>,
    pub sent_ms: Option<i64>,
    /// The webhook body (JSON), made once so that every attempt sends the same bytes.
    pub payload: String,
}

/// A delivery a sender claimed, with the channel to send it to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    pub delivery: DeliveryRecord,
    pub channel: ChannelRecord,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptOutcome {
    /// `sent`, `failed`, or `pending` (to be tried again at `next_attempt_ms`).
    pub status: String,
    pub next_attempt_ms: i64,
    pub response_status: Option<u16>,
    pub error: Option<String>,
    pub sent_ms: Option<i64>,
}

/// One rule's evaluation, written only if the rule was last evaluated at `expected_ms` (compare-and-swap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    pub customer_id: CustomerId,
    pub rule_id: String,
    pub expected_ms: i64,
    pub evaluated_ms: i64,
    pub state: String,
    pub status: String,
    pub events: Vec<EventRecord>,
    pub deliveries: Vec<DeliveryRecord>,
}

/// Which events to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    pub rule_id: Option<String>,
    pub from_ms: Option<i64>,
    pub to_ms: Option<i64>,
    /// Only transitions into this state.
    pub to_state: Option<String>,
}

/// Counts of a customer's rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuleCounts {
    pub rules: u64,
    pub firing: u64,
    pub pending: u64,
}

/// The columns of a rule, in the order of its insert.
pub(super) const RULE_COLUMNS: &str =
    "id, customer_id, name, definition, enabled, created_ms, modified_ms, author, state, status, evaluated_ms";

pub(super) fn rule_from_row(row: &Row) -> Result<RuleRecord, sqlx::Error> {
    Ok(RuleRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        name: row.get("name")?,
        definition: row.get("definition")?,
        enabled: row.get("enabled")?,
        created_ms: row.get("created_ms")?,
        modified_ms: row.get("modified_ms")?,
        author: row.get("author")?,
        state: row.get("state")?,
        status: row.get("status")?,
        evaluated_ms: row.get("evaluated_ms")?,
    })
}

pub(super) fn channel_from_row(row: &Row) -> Result<ChannelRecord, sqlx::Error> {
    let addresses: String = row.get("addresses")?;
    Ok(ChannelRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        name: row.get("name")?,
        kind: row.get("kind")?,
        addresses: serde_json::from_str(&addresses).unwrap_or_default(),
        url: row.get("url")?,
        secret: row.get("secret")?,
        created_ms: row.get("created_ms")?,
        modified_ms: row.get("modified_ms")?,
    })
}

pub(super) fn silence_from_row(row: &Row) -> Result<SilenceRecord, sqlx::Error> {
    Ok(SilenceRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        comment: row.get("comment")?,
        rule_id: row.get("rule_id")?,
        labels: row.get("labels")?,
        starts_ms: row.get("starts_ms")?,
        ends_ms: row.get("ends_ms")?,
        repeat: row.get("repeat")?,
        repeat_until_ms: row.get("repeat_until_ms")?,
        expires_ms: row.get("expires_ms")?,
        created_ms: row.get("created_ms")?,
        author: row.get("author")?,
    })
}

pub(super) fn event_from_row(row: &Row) -> Result<EventRecord, sqlx::Error> {
    Ok(EventRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        rule_id: row.get("rule_id")?,
        rule_name: row.get("rule_name")?,
        severity: row.get("severity")?,
        time_ms: row.get("time_ms")?,
        from_state: row.get("from_state")?,
        to_state: row.get("to_state")?,
        value: row.get("value")?,
        silenced: row.get("silenced")?,
        details: row.get("details")?,
    })
}

pub(super) fn delivery_from_row(row: &Row) -> Result<DeliveryRecord, sqlx::Error> {
    let attempts: i64 = row.get("attempts")?;
    let response_status: Option<i64> = row.get("response_status")?;
    Ok(DeliveryRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        channel_id: row.get("channel_id")?,
        rule_id: row.get("rule_id")?,
        rule_name: row.get("rule_name")?,
        kind: row.get("kind")?,
        created_ms: row.get("created_ms")?,
        status: row.get("status")?,
        attempts: attempts.clamp(0, u32::MAX.into()) as u32,
        next_attempt_ms: row.get("next_attempt_ms")?,
        lease_ms: row.get("lease_ms")?,
        response_status: response_status.and_then(|s| u16::try_from(s).ok()),
        error: row.get("error")?,
        sent_ms: row.get("sent_ms")?,
        payload: row.get("payload")?,
    })
}

pub(super) fn insert_event(e: &EventRecord) -> Query {
    query(
        "INSERT INTO alert_events (id, customer_id, rule_id, rule_name, severity, time_ms, from_state, to_state,
                                   value, silenced, details)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&e.id)
    .bind(e.customer_id)
    .bind(&e.rule_id)
    .bind(&e.rule_name)
    .bind(&e.severity)
    .bind(e.time_ms)
    .bind(&e.from_state)
    .bind(&e.to_state)
    .bind(&e.value)
    .bind(e.silenced)
    .bind(&e.details)
}

pub(super) fn insert_delivery_query(d: &DeliveryRecord) -> Query {
    query(
        "INSERT INTO alert_deliveries (id, customer_id, channel_id, rule_id, rule_name, kind, created_ms, status,
                                       attempts, next_attempt_ms, lease_ms, response_status, error, sent_ms, payload)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(&d.id)
    .bind(d.customer_id)
    .bind(&d.channel_id)
    .bind(&d.rule_id)
    .bind(&d.rule_name)
    .bind(&d.kind)
    .bind(d.created_ms)
    .bind(&d.status)
    .bind(d.attempts)
    .bind(d.next_attempt_ms)
    .bind(d.lease_ms)
    .bind(d.response_status.map(i64::from))
    .bind(&d.error)
    .bind(d.sent_ms)
    .bind(&d.payload)
}

/// Counts the customer's rows of `table` (with `extra` as a further condition on `$2`) under the customer's
/// lock, and refuses with [`StoreError::Limit`] at `max`.
pub(super) async fn within_limit(
    tx: &mut Tx,
    table: &str,
    customer: CustomerId,
    extra: Option<(&str, i64)>,
    max: u64,
    what: &str,
) -> StoreResult<()> {
    tx.lock_row("customers", "id", customer).await?;
    let count: i64 = match extra {
        Some((condition, value)) => {
            query(format!("SELECT COUNT(*) FROM {table} WHERE customer_id = $1 AND {condition}"))
                .bind(customer)
                .bind(value)
                .scalar(&mut *tx)
                .await?
        }
        None => {
            query(format!("SELECT COUNT(*) FROM {table} WHERE customer_id = $1"))
                .bind(customer)
                .scalar(&mut *tx)
                .await?
        }
    };
    if count.max(0) as u64 >= max {
        return Err(StoreError::Limit(format!("An account may have at most {max} {what}; delete one first.")));
    }
    Ok(())
}

pub(super) fn addresses_json(addresses: &[String]) -> String {
    serde_json::to_string(addresses).unwrap_or_else(|_| "[]".into())
}
