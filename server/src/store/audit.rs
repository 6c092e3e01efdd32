//! The audit log: the record every change writes in its own transaction (who did what to what, from where,
//! when), and the reading and pruning of it.

use std::borrow::Cow;

use async_trait::async_trait;
use edge_api::limits::{MAX_AUDIT_TEXT_BYTES, cut};
use serde_json::{Map, Value};

use super::{
    CustomerId, StoreResult,
    db::{Query, Row, Tx, query},
    new_id,
    sql::{SqlStore, escape_like, filtered_page, prune_in_batches},
};

/// Who an audit record names as having acted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A user of the customer.
    User { id: String, name: String },
    /// A username that names no user (a failed login).
    Unknown(String),
    /// The server itself or its operator (expiry, the command line, demo data).
    System,
}

/// One record of the audit log, as written: who did what to what, from where, when, and how it ended. Every
/// method of [`Store`](super::Store) that changes something takes one and writes it in the transaction of the change.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    pub customer_id: CustomerId,
    pub time_ms: i64,
    pub actor: Actor,
    /// The client's address; empty for [`Actor::System`].
    pub source: String,
    pub operation: String,
    pub target_type: String,
    pub target_id: String,
    pub target_name: String,
    /// False for failed logins and lockouts.
    pub success: bool,
    /// What changed, as a JSON object.
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// What a change is made to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub kind: &'static str,
    pub id: String,
    pub name: String,
}

impl Target {
    /// A session, named by the start of its stored hash (which cannot be used to log in) and its user's name.
    pub fn session(token_hash: &str, username: &str) -> Target {
        Target { kind: "session", id: token_hash.chars().take(16).collect(), name: username.to_string() }
    }

    pub fn property(name: &str) -> Target {
        Target { kind: "property", id: name.to_string(), name: name.to_string() }
    }

    pub fn network_list(id: &str, name: &str) -> Target {
        Target { kind: "network_list", id: id.to_string(), name: name.to_string() }
    }

    /// A purge; its id, the transaction id, is filled in by the store.
    pub fn purge(action: &str) -> Target {
        Target { kind: "purge", id: String::new(), name: action.to_string() }
    }

    /// An alert rule, channel or silence (`kind` `alert_rule`, `alert_channel`, `alert_silence`).
    pub fn alert(kind: &'static str, id: &str, name: &str) -> Target {
        Target { kind, id: id.to_string(), name: name.to_string() }
    }

    pub fn identity_source(id: &str) -> Target {
        Target { kind: "identity_source", id: id.to_string(), name: id.to_string() }
    }
}

impl AuditEvent {
    /// A change made by the server itself or its operator.
    pub fn system(customer_id: CustomerId, now_ms: i64, operation: &str, target: Target) -> AuditEvent {
        AuditEvent::new(customer_id, now_ms, Actor::System, String::new(), operation, target)
    }

    pub fn new(
        customer_id: CustomerId,
        time_ms: i64,
        actor: Actor,
        source: String,
        operation: &str,
        target: Target,
    ) -> AuditEvent {
        AuditEvent {
            customer_id,
            time_ms,
            actor,
            source,
            operation: operation.to_string(),
            target_type: target.kind.to_string(),
            target_id: target.id,
            target_name: target.name,
            success: true,
            details: Map::new(),
        }
    }

    /// Adds a detail: what changed, a count, a version number.
    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> AuditEvent {
        self.details.insert(key.to_string(), value.into());
        self
    }

    /// The record as stored: each text of it — the actor's name, the source, the target's id and name, the
    /// texts of the details — at most [`MAX_AUDIT_TEXT_BYTES`], cut ones ending with `…` and named in the detail
    /// `cut` (e.g. `["actor.name"]`). Much of it was typed by someone else (a failed login's username, a
    /// purge's first URI), and each record is kept for the audit retention.
    pub fn bounded(mut self) -> AuditEvent {
        let mut cut_fields: Vec<Value> = Vec::new();
        let mut bound = |text: &mut String, field: &str| {
            if let Cow::Owned(cut) = cut(text, MAX_AUDIT_TEXT_BYTES) {
                *text = cut;
                cut_fields.push(field.into());
            }
        };
        if let Actor::User { name, .. } | Actor::Unknown(name) = &mut self.actor {
            bound(name, "actor.name");
        }
        bound(&mut self.source, "source_address");
        bound(&mut self.target_id, "target.id");
        bound(&mut self.target_name, "target.name");
        for (key, value) in self.details.iter_mut() {
            if let Value::String(text) = value {
                bound(text, &format!("details.{key}"));
            }
        }
        if !cut_fields.is_empty() {
            self.details.insert("cut".into(), Value::Array(cut_fields));
        }
        self
    }

    /// Marks a failed login or a lockout.
    pub fn failure(mut self) -> AuditEvent {
        self.success = false;
        self
    }
}

/// A stored audit record.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// Random (16 hex digits); records from before migration 0009 keep their number.
    pub id: String,
    pub event: AuditEvent,
    /// Its target still exists (users, properties, network lists, purges, identity sources, the account, tokens).
    pub target_exists: bool,
}

/// Which audit records to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// From this time (inclusive).
    pub from_ms: Option<i64>,
    /// Before this time.
    pub to_ms: Option<i64>,
    /// A user id or a name.
    pub actor: Option<String>,
    /// An operation, or a prefix of operations ending before a dot (`user` is `user.create`, `user.update`, …).
    pub operation: Option<String>,
    /// A target type, when the filter was `type:id`.
    pub target_type: Option<String>,
    /// A target id.
    pub target_id: Option<String>,
}

/// The audit log.
#[async_trait]
pub trait AuditLog: Send + Sync {
    /// Writes an audit record of something that changes nothing else (a failed login, a lockout).
    async fn record_audit(&self, event: &AuditEvent) -> StoreResult<()>;
    /// A page of the customer's audit records, newest first, and how many match.
    async fn audit_records(
        &self,
        customer: CustomerId,
        filter: &AuditFilter,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<AuditEntry>, u64)>;
    /// Deletes audit records older than `before_ms`; returns how many.
    async fn prune_audit(&self, before_ms: i64) -> StoreResult<u64>;
}

#[async_trait]
impl AuditLog for SqlStore {
    async fn record_audit(&self, event: &AuditEvent) -> StoreResult<()> {
        audit_insert(event).execute(&self.db).await?;
        Ok(())
    }

    async fn audit_records(
        &self,
        customer: CustomerId,
        f: &AuditFilter,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<AuditEntry>, u64)> {
        let filter = "a.customer_id = $1 AND ($2 IS NULL OR a.time_ms >= $2) AND ($3 IS NULL OR a.time_ms < $3)
             AND ($4 IS NULL OR (CASE WHEN $4 = 'system' THEN a.actor_type = 'system'
                                      ELSE (a.actor_id = $4 OR a.actor_name = $4) END))
             AND ($5 IS NULL OR a.operation = $5 OR a.operation LIKE $6 ESCAPE '\\')
             AND ($7 IS NULL OR a.target_type = $7) AND ($8 IS NULL OR a.target_id = $8)";
        let prefix = f.operation.as_deref().map(|op| format!("{}.%", escape_like(op)));
        let count = format!("SELECT COUNT(*) FROM audit_log a WHERE {filter}");
        let page = format!(
            "SELECT a.*, {TARGET_EXISTS} AS target_exists FROM audit_log a WHERE {filter}
             ORDER BY a.time_ms DESC, a.id DESC LIMIT $9 OFFSET $10"
        );
        let bound = |sql: String| audit_filter(sql, customer, f, &prefix);
        filtered_page(&self.db, bound, count, page, (limit, offset), audit_from_row).await
    }

    async fn prune_audit(&self, before_ms: i64) -> StoreResult<u64> {
        prune_in_batches(&self.db, "audit_log", "id", "time_ms", before_ms).await
    }
}

pub(super) async fn insert_audit(tx: &mut Tx, e: &AuditEvent) -> StoreResult<()> {
    audit_insert(e).execute(tx).await?;
    Ok(())
}

fn audit_insert(e: &AuditEvent) -> Query {
    let e = &e.clone().bounded();
    let (actor_type, actor_id, actor_name) = match &e.actor {
        Actor::User { id, name } => ("user", Some(id.as_str()), name.as_str()),
        Actor::Unknown(name) => ("user", None, name.as_str()),
        Actor::System => ("system", None, "system"),
    };
    query(
        "INSERT INTO audit_log (customer_id, time_ms, actor_type, actor_id, actor_name, source, operation,
                                target_type, target_id, target_name, success, details, public_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(e.customer_id)
    .bind(e.time_ms)
    .bind(actor_type)
    .bind(actor_id)
    .bind(actor_name)
    .bind(&e.source)
    .bind(&e.operation)
    .bind(&e.target_type)
    .bind(&e.target_id)
    .bind(&e.target_name)
    .bind(e.success)
    .bind(serde_json::Value::Object(e.details.clone()).to_string())
    // Random, not the row's number: a global sequence would tell a customer how much the others do.
    .bind(new_id())
}

/// Whether an audit record's target still exists (`a` is the record).
const TARGET_EXISTS: &str = "CASE a.target_type
    WHEN 'user' THEN EXISTS (SELECT 1 FROM users t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'property' THEN EXISTS
        (SELECT 1 FROM properties t WHERE t.customer_id = a.customer_id AND t.name = a.target_id)
    WHEN 'network_list' THEN EXISTS
        (SELECT 1 FROM network_lists t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'purge' THEN EXISTS
        (SELECT 1 FROM purge_transactions t
         WHERE t.customer_id = a.customer_id AND CAST(t.number AS TEXT) = a.target_id)
    WHEN 'identity_source' THEN EXISTS
        (SELECT 1 FROM identity_sources t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'alert_rule' THEN EXISTS
        (SELECT 1 FROM alert_rules t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'alert_channel' THEN EXISTS
        (SELECT 1 FROM alert_channels t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'alert_silence' THEN EXISTS
        (SELECT 1 FROM alert_silences t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'account' THEN TRUE
    WHEN 'token' THEN EXISTS (SELECT 1 FROM api_tokens t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    ELSE FALSE END";

/// `sql` with the parameters $1 to $8 of an audit filter bound.
fn audit_filter(sql: String, customer: CustomerId, f: &AuditFilter, operation_prefix: &Option<String>) -> Query {
    query(sql)
        .bind(customer)
        .bind(f.from_ms)
        .bind(f.to_ms)
        .bind(&f.actor)
        .bind(&f.operation)
        .bind(operation_prefix)
        .bind(&f.target_type)
        .bind(&f.target_id)
}

fn audit_from_row(row: &Row) -> Result<AuditEntry, sqlx::Error> {
    let actor_type: String = row.get("actor_type")?;
    let actor_id: Option<String> = row.get("actor_id")?;
    let actor_name: String = row.get("actor_name")?;
    let actor = match (actor_type.as_str(), actor_id) {
        ("system", _) => Actor::System,
        (_, Some(id)) => Actor::User { id, name: actor_name },
        (_, None) => Actor::Unknown(actor_name),
    };
    let details: String = row.get("details")?;
    Ok(AuditEntry {
        id: row.get("public_id")?,
        event: AuditEvent {
            customer_id: row.get("customer_id")?,
            time_ms: row.get("time_ms")?,
            actor,
            source: row.get("source")?,
            operation: row.get("operation")?,
            target_type: row.get("target_type")?,
            target_id: row.get("target_id")?,
            target_name: row.get("target_name")?,
            success: row.get("success")?,
            details: serde_json::from_str(&details).unwrap_or_default(),
        },
        target_exists: row.get("target_exists")?,
    })
}
