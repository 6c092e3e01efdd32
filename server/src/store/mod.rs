//! State storage behind one interface, [`Store`]: handlers never see SQL. One implementation, [`SqlStore`],
//! runs on the embedded SQLite file (the default) or on PostgreSQL shared by several replicas of the server;
//! [`open`] picks it from the flags, in one place.

pub mod db;
pub mod postgres;
pub mod sql;
pub mod sqlite;

use std::{path::PathBuf, time::Duration};

use async_trait::async_trait;
use std::borrow::Cow;

use edge_api::{
    config::ReadOnly,
    limits::{MAX_AUDIT_TEXT_BYTES, cut},
};
use serde_json::{Map, Value};

pub use sql::SqlStore;

use crate::throttle::policy::{Decision, Lockout, LoginKey, Outcome};

/// Where the state is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `edge.db` in this data dir (one process at a time).
    Sqlite(PathBuf),
    /// A PostgreSQL database, by URL: `postgres://USER[:PASS]@HOST:PORT/DB`.
    Postgres(String),
}

impl std::fmt::Display for Location {
    /// The data dir, or the PostgreSQL URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(dir) => write!(f, "{}", dir.display()),
            Location::Postgres(url) => f.write_str(&postgres::redact(url)),
        }
    }
}

/// Opens the store at `location`, bringing its schema up to date. PostgreSQL is waited for up to `wait` when it
/// does not answer yet.
pub async fn open(location: &Location, wait: Duration) -> anyhow::Result<SqlStore> {
    let db = match location {
        Location::Sqlite(dir) => sqlite::open(dir).await?,
        Location::Postgres(url) => postgres::connect(url, wait).await?,
    };
    Ok(SqlStore::new(db))
}

pub type CustomerId = i64;

/// A new random resource id: 64 bits, hex. Random rather than a sequence, so an id tells nothing of how many
/// others there are (of this customer or another).
pub fn new_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 8];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Customer {
    pub id: CustomerId,
    pub name: String,
    pub display_name: String,
    pub contact_email: String,
    pub timezone: String,
    pub created_ms: i64,
}

#[derive(Debug, Clone)]
pub struct NewCustomer {
    pub name: String,
    pub display_name: String,
    pub contact_email: String,
}

/// Changes to a customer's account; `None` keeps the value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountChange {
    pub display_name: Option<String>,
    pub contact_email: Option<String>,
    pub timezone: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub username: String,
    pub source: String,
    pub full_name: String,
    pub email: String,
    pub phone_number: String,
    pub enabled: bool,
    pub role: String,
    pub password_hash: Option<String>,
    pub otp_enabled: bool,
    pub otp_secret: Option<String>,
    pub otp_last_step: i64,
    pub created_ms: i64,
}

/// Changes to a user; `None` keeps the value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserUpdate {
    pub username: Option<String>,
    pub full_name: Option<String>,
    pub email: Option<String>,
    pub phone_number: Option<String>,
    pub enabled: Option<bool>,
    pub role: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswordReset {
    pub token_hash: String,
    pub customer_id: CustomerId,
    pub user_id: String,
    pub expires_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtpSeedRecord {
    pub id: String,
    pub user_id: String,
    pub secret: String,
    pub created_ms: i64,
}

/// A user to create; the store adds the customer and the creation time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    pub id: String,
    pub username: String,
    pub source: String,
    pub full_name: String,
    pub email: String,
    pub phone_number: String,
    pub enabled: bool,
    pub role: String,
    pub password_hash: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// Hex SHA-256 of the session id; the id itself is never stored.
    pub token_hash: String,
    pub customer_id: CustomerId,
    pub user_id: String,
    pub created_ms: i64,
    pub last_seen_ms: i64,
}

/// A task: what is stored of a long-running change (its progress comes from the fleet's schedule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub operation: String,
    pub user_id: String,
    pub target_id: String,
    pub target_uri: String,
    pub begin_ms: i64,
    pub end_ms: i64,
    /// JSON error_info when the task fails.
    pub error_info: Option<String>,
}

/// A task's status at a moment: QUEUED before its beginning, RUNNING until its end, then COMPLETED or FAILED
/// (when it has error_info).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Queued,
    Running,
    Completed,
    Failed,
}

impl TaskStatus {
    pub fn parse(s: &str) -> Option<TaskStatus> {
        Some(match s {
            "QUEUED" => TaskStatus::Queued,
            "RUNNING" => TaskStatus::Running,
            "COMPLETED" => TaskStatus::Completed,
            "FAILED" => TaskStatus::Failed,
            _ => return None,
        })
    }
}

/// Which tasks to list, at `now_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFilter {
    pub now_ms: i64,
    /// Tasks updated after this time: queued ones that begin after it, running ones (their progress moves until
    /// they end, so they have updates after it when they end after it), ended ones that ended after it.
    pub since_ms: Option<i64>,
    pub status: Option<TaskStatus>,
    pub operation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyRecord {
    pub id: i64,
    pub customer_id: CustomerId,
    pub name: String,
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigVersionRecord {
    pub version: u64,
    pub etag: String,
    /// The configuration, JSON.
    pub config: String,
    pub author: String,
    pub created_ms: i64,
    pub comment: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeRecord {
    pub id: i64,
    pub customer_id: CustomerId,
    pub task_id: String,
    pub action: String,
    pub uri_count: u64,
    /// The URI patterns, JSON.
    pub uris: String,
    pub username: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkListRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub name: String,
    pub list_type: String,
    pub description: String,
    pub deprecated: bool,
    pub created_ms: i64,
    pub modified_ms: Option<i64>,
    pub entry_count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRecord {
    pub id: String,
    pub value: String,
    pub added_by: String,
    pub created_ms: i64,
}

/// What adding entries did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddedEntries {
    pub added: u64,
    pub already_present: u64,
}

/// Changes to a network list; `None` keeps the value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkListUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub deprecated: Option<bool>,
}

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
/// method of [`Store`] that changes something takes one and writes it in the transaction of the change.
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
    pub fn user(u: &UserRecord) -> Target {
        Target { kind: "user", id: u.id.clone(), name: u.username.clone() }
    }

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

    pub fn account(c: &Customer) -> Target {
        Target { kind: "account", id: c.name.clone(), name: c.display_name.clone() }
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
    /// Its target still exists (users, properties, network lists, purges, identity sources, the account).
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

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule refused the write (the string names what already exists).
    #[error("{0} already exists")]
    Conflict(&'static str),
    /// The change would leave the customer without an enabled administrator.
    #[error("the last administrator")]
    LastAdmin,
    /// A host pattern is claimed by another property (of this customer or another) or overlaps another
    /// customer's; nothing was written. The text names the pattern, never the other customer.
    #[error("{0}")]
    HostClaimed(String),
    /// A limit would be exceeded; nothing was written.
    #[error("{0}")]
    Limit(String),
    /// A value the store cannot hold (text with the NUL character); nothing was written.
    #[error("{0}")]
    Invalid(String),
    /// The database cannot be reached (or is too busy) now; nothing was written. It may answer again soon.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// The storage under the database refuses to write (disk full, read-only file system, I/O error); nothing
    /// was written. It works again once the cause is gone, without a restart.
    #[error("storage is unavailable: {0}")]
    Storage(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::Encode(cause) if cause.is::<db::NulInText>() => StoreError::Invalid(cause.to_string()),
            e if unavailable(&e) => StoreError::Unavailable(e.to_string()),
            e if storage_failure(&e) => StoreError::Storage(e.to_string()),
            e => StoreError::Other(e.into()),
        }
    }
}

/// Whether an error says the database is out of reach for now (rather than that the request was wrong): the
/// connection failed or was lost, no connection came within the pool's timeout, PostgreSQL is shutting down,
/// starting or out of connections, or SQLite stayed locked beyond its busy timeout. In a transaction that
/// failed so, nothing was committed.
fn unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            // PostgreSQL: connection exceptions (08…), shutdown and start-up (57P01–57P03), too many
            // connections (53300). SQLite: SQLITE_BUSY and its extended codes.
            code.starts_with("08")
                || matches!(&*code, "57P01" | "57P02" | "57P03" | "53300")
                || matches!(&*code, "5" | "261" | "517" | "773")
        }
        _ => false,
    }
}

/// Whether an error says the storage refuses to write for now: SQLite's SQLITE_FULL, SQLITE_READONLY,
/// SQLITE_IOERR and SQLITE_CANTOPEN (with their extended codes), PostgreSQL's disk full (53100), out of
/// memory (53200) and read-only transaction (25006); and a pooled connection left inside a transaction by a
/// failed commit (sqlx refuses to begin on it; the pools now close such connections on release: `sqlite::open`).
fn storage_failure(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::InvalidSavePointStatement | sqlx::Error::BeginFailed => true,
        sqlx::Error::Database(db) => {
            let code = db.code().unwrap_or_default();
            match code.parse::<i64>() {
                Ok(sqlite) => matches!(sqlite & 0xff, 8 | 10 | 13 | 14),
                Err(_) => matches!(&*code, "53100" | "53200" | "25006"),
            }
        }
        _ => false,
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Which database: `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
    /// Answers when the database does (for readiness checks).
    async fn ping(&self) -> StoreResult<()>;
    /// Writes a row of `server`'s (one small transaction): whether the database takes writes now, for readiness
    /// checks (a full or read-only disk still answers reads).
    async fn probe_write(&self, server: &str, now_ms: i64) -> StoreResult<()>;

    async fn customer_count(&self) -> StoreResult<u64>;
    /// Creates a customer and its first users in one transaction: all of them or nothing. The audit record is
    /// written under the new customer (its `customer_id` is ignored).
    async fn create_customer(
        &self,
        customer: NewCustomer,
        users: &[NewUser],
        created_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<Customer>;
    async fn customer_by_name(&self, name: &str) -> StoreResult<Option<Customer>>;

    async fn create_user(
        &self,
        customer: CustomerId,
        user: &NewUser,
        created_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<UserRecord>;
    async fn user_by_username(&self, customer: CustomerId, username: &str) -> StoreResult<Option<UserRecord>>;
    async fn user_by_id(&self, customer: CustomerId, id: &str) -> StoreResult<Option<UserRecord>>;
    /// A page of users ordered by username, optionally only those whose username or full name contains
    /// `search` (case-insensitive), and the total that match.
    async fn list_users(
        &self,
        customer: CustomerId,
        search: Option<&str>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<UserRecord>, u64)>;
    /// Applies `update`; `Ok(None)` when the user does not exist; [`StoreError::LastAdmin`] (and no change) when
    /// it would leave no enabled administrator; [`StoreError::Conflict`] when the new username is taken.
    async fn update_user(
        &self,
        customer: CustomerId,
        id: &str,
        update: &UserUpdate,
        audit: &AuditEvent,
    ) -> StoreResult<Option<UserRecord>>;
    /// Deletes a user with its sessions; false when it did not exist; [`StoreError::LastAdmin`] as above.
    async fn delete_user(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool>;
    /// Sets a user's password and ends all its sessions but `keep_session` (a token hash).
    async fn set_password(
        &self,
        customer: CustomerId,
        user_id: &str,
        hash: &str,
        keep_session: Option<&str>,
        audit: &AuditEvent,
    ) -> StoreResult<bool>;

    /// An administrator's reset: stores the reset token, and voids the user's password and ends its sessions.
    /// False when the user does not exist (and nothing is stored).
    async fn reset_password(&self, reset: &PasswordReset, audit: &AuditEvent) -> StoreResult<bool>;
    async fn password_reset(&self, token_hash: &str) -> StoreResult<Option<PasswordReset>>;
    /// Uses a reset token: sets the password, ends the user's sessions and removes all its reset tokens, at once.
    /// False when the token is gone (used meanwhile).
    async fn finish_password_reset(&self, token_hash: &str, hash: &str, audit: &AuditEvent) -> StoreResult<bool>;

    /// Stores a seed handed out for pairing, replacing earlier ones of the user.
    async fn create_otp_seed(&self, seed: &OtpSeedRecord, audit: &AuditEvent) -> StoreResult<()>;
    async fn otp_seed(&self, user_id: &str, seed_id: &str) -> StoreResult<Option<OtpSeedRecord>>;
    /// Turns two-factor on with `secret`, its last used step `last_step`, and drops the user's seeds. False when
    /// it was already on (and nothing is written).
    async fn enable_otp(&self, user_id: &str, secret: &str, last_step: i64, audit: &AuditEvent) -> StoreResult<bool>;
    /// Turns two-factor off; false when it was off (and nothing is written).
    async fn disable_otp(&self, user_id: &str, audit: &AuditEvent) -> StoreResult<bool>;
    /// Records that the code of `step` was used; false when that step or a later one was used already. Part of
    /// a login (whose session is recorded), not audited on its own.
    async fn consume_otp_step(&self, user_id: &str, step: i64) -> StoreResult<bool>;

    /// Sets the fields of `change` that are present, each on its own (a concurrent change of another field
    /// is kept).
    async fn update_customer(
        &self,
        id: CustomerId,
        change: &AccountChange,
        audit: &AuditEvent,
    ) -> StoreResult<Option<Customer>>;

    async fn task(&self, customer: CustomerId, id: &str) -> StoreResult<Option<TaskRecord>>;
    /// A page of the customer's tasks that `filter` keeps, newest first, and how many it keeps.
    async fn tasks(
        &self,
        customer: CustomerId,
        filter: &TaskFilter,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<TaskRecord>, u64)>;
    /// Deletes tasks that ended before `ended_before_ms`, with the purge transactions they track; returns how
    /// many tasks.
    async fn prune_tasks(&self, ended_before_ms: i64) -> StoreResult<u64>;

    /// The customer's properties with their current configuration, by name.
    async fn properties(&self, customer: CustomerId) -> StoreResult<Vec<(PropertyRecord, ConfigVersionRecord)>>;
    async fn property(
        &self,
        customer: CustomerId,
        name: &str,
    ) -> StoreResult<Option<(PropertyRecord, ConfigVersionRecord)>>;
    /// Creates a property with its first configuration (version 1) and its deployment task; `nodes` are the
    /// read-only parts of its nodes (see [`Store::property_nodes`]). The configuration's host patterns become
    /// the property's claims in the same transaction: [`StoreError::HostClaimed`] (and nothing stored) when
    /// another property of the customer claims one of them, or another customer the same or an overlapping
    /// pattern (`*.example.com` overlaps `a.example.com`).
    async fn create_property(
        &self,
        customer: CustomerId,
        name: &str,
        first: &ConfigVersionRecord,
        nodes: &[ReadOnly],
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<PropertyRecord>;
    /// Stores `next` as the property's new current configuration if the current version is still
    /// `expected_version` (compare and swap), with its deployment task and the read-only parts of its new
    /// nodes, and its host patterns as the property's claims (released when no longer listed; refused as for
    /// [`Store::create_property`]). False when another update came first.
    async fn update_property_config(
        &self,
        property_id: i64,
        expected_version: u64,
        next: &ConfigVersionRecord,
        new_nodes: &[ReadOnly],
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<bool>;
    /// Of the read-only parts with these keys, those the property's nodes ever had (the server issued them).
    async fn property_nodes(&self, property_id: i64, keys: &[String]) -> StoreResult<Vec<ReadOnly>>;
    /// The history, newest first (without the configurations).
    async fn config_versions(&self, property_id: i64) -> StoreResult<Vec<ConfigVersionRecord>>;
    async fn config_version(&self, property_id: i64, version: u64) -> StoreResult<Option<ConfigVersionRecord>>;
    /// The newest version whose content has this hash (see [`crate::config::content_hash`]), if any.
    async fn config_version_with_content(&self, property_id: i64, content_hash: &str) -> StoreResult<Option<u64>>;

    /// The host patterns the customer's properties claim (see [`Store::create_property`]), in order.
    async fn host_claims(&self, customer: CustomerId) -> StoreResult<Vec<String>>;
    /// Who claims a host pattern: the customer and its property.
    async fn host_claim(&self, pattern: &str) -> StoreResult<Option<(Customer, PropertyRecord)>>;

    /// Stores a purge with its task; returns the transaction id — the customer's next number, from 1, so it
    /// tells nothing of other customers — which is also the audit record's target id.
    async fn create_purge(&self, purge: &PurgeRecord, task: &TaskRecord, audit: &AuditEvent) -> StoreResult<i64>;
    async fn purge(&self, customer: CustomerId, id: i64) -> StoreResult<Option<(PurgeRecord, TaskRecord)>>;
    /// The newest purges first.
    async fn recent_purges(&self, customer: CustomerId, limit: u64) -> StoreResult<Vec<(PurgeRecord, TaskRecord)>>;

    /// A page of network lists by name, of one type or both, with or without deprecated ones, and the total.
    async fn network_lists(
        &self,
        customer: CustomerId,
        list_type: Option<&str>,
        include_deprecated: bool,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<NetworkListRecord>, u64)>;
    async fn network_list(&self, customer: CustomerId, id: &str) -> StoreResult<Option<NetworkListRecord>>;
    /// Creates a list with its first entries and the deployment task.
    async fn create_network_list(
        &self,
        list: &NetworkListRecord,
        entries: &[EntryRecord],
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<()>;
    async fn update_network_list(
        &self,
        customer: CustomerId,
        id: &str,
        update: &NetworkListUpdate,
        modified_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<Option<NetworkListRecord>>;
    /// Deletes a list and its entries, with the deployment task of the deletion.
    async fn delete_network_list(
        &self,
        customer: CustomerId,
        id: &str,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<bool>;
    /// Adds entries (values already present are counted, not added), unless the list would hold more than
    /// `max_entries` ([`StoreError::Limit`], nothing written); with the deployment task.
    async fn add_entries(
        &self,
        list_id: &str,
        entries: &[EntryRecord],
        max_entries: u64,
        modified_ms: i64,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<AddedEntries>;
    /// A page of entries, oldest first, optionally only those containing `search`, and the total that match.
    async fn entries(
        &self,
        list_id: &str,
        search: Option<&str>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<EntryRecord>, u64)>;
    /// Every entry value, oldest first.
    async fn entry_values(&self, list_id: &str) -> StoreResult<Vec<String>>;
    async fn entry(&self, list_id: &str, entry_id: &str) -> StoreResult<Option<EntryRecord>>;
    /// Removes one entry with the deployment task; false when it did not exist (and no task is stored).
    async fn delete_entry(
        &self,
        list_id: &str,
        entry_id: &str,
        modified_ms: i64,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<bool>;
    /// Removes every entry, keeping the list, with the deployment task; returns how many there were.
    async fn clear_entries(
        &self,
        list_id: &str,
        modified_ms: i64,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<u64>;

    /// Identity sources registered besides `local`: id and configuration (JSON object text).
    async fn identity_sources(&self, customer: CustomerId) -> StoreResult<Vec<(String, String)>>;
    async fn add_identity_source(
        &self,
        customer: CustomerId,
        id: &str,
        configuration: &str,
        audit: &AuditEvent,
    ) -> StoreResult<()>;

    async fn create_session(&self, session: &SessionRecord, audit: &AuditEvent) -> StoreResult<()>;
    /// A session with its customer and user, in one read: every request with the session cookie needs all
    /// three. `None` when the session does not exist.
    async fn session_with_user(&self, token_hash: &str) -> StoreResult<Option<(SessionRecord, Customer, UserRecord)>>;
    /// A user's live sessions (used after `idle_after_ms` and created after `created_after_ms`), most recently
    /// used first, at most `limit`, and how many there are.
    async fn user_sessions(
        &self,
        user_id: &str,
        idle_after_ms: i64,
        created_after_ms: i64,
        limit: u32,
    ) -> StoreResult<(Vec<SessionRecord>, u64)>;
    /// Records the last use of a session (bookkeeping, not audited).
    async fn touch_session(&self, token_hash: &str, last_seen_ms: i64) -> StoreResult<()>;
    /// Deletes a session; false when there was none (and nothing is written).
    async fn delete_session(&self, token_hash: &str, audit: &AuditEvent) -> StoreResult<bool>;
    /// Deletes sessions idle since before `idle_before_ms` or created before `created_before_ms`, each with a
    /// `session.expire` record by the system at `now_ms`.
    async fn purge_sessions(&self, idle_before_ms: i64, created_before_ms: i64, now_ms: i64) -> StoreResult<u64>;

    /// Login throttling (see [`crate::throttle`]): decides on an attempt from the counts of its keys and, when
    /// it may go on, counts it as pending and makes it the keys' latest activity, in one step.
    async fn reserve_login(&self, now_ms: i64, key: &LoginKey) -> StoreResult<Decision>;
    /// Settles an attempt counted by [`Store::reserve_login`]: a failure is counted on each key (a wrong
    /// password not under the account's codes; returning the locks it brings about, each reported once per
    /// window), a success clears the username's failures (from this address, from anywhere, and of its codes), a
    /// released attempt is only taken back.
    async fn settle_login(&self, now_ms: i64, key: &LoginKey, outcome: Outcome) -> StoreResult<Vec<Lockout>>;
    /// What [`Store::reserve_login`] would decide now, read without reserving anything or taking the write
    /// lock (a waiting attempt asks this first).
    async fn login_decision(&self, now_ms: i64, key: &LoginKey) -> StoreResult<Decision>;
    /// Forgets the failures of a username from every address and of its one-time codes (an administrator reset
    /// its password: whoever guessed with the old one is shut out anyway). Locks of the username from single
    /// addresses stay.
    async fn forgive_logins(&self, customer: &str, username: &str) -> StoreResult<()>;
    /// Forgets counts whose window has passed and pending attempts that expired; returns how many.
    async fn prune_logins(&self, now_ms: i64) -> StoreResult<u64>;
    /// Takes a token from the customer's purge bucket (see [`crate::throttle::purge`]); when there is none, the
    /// milliseconds until there will be.
    async fn take_purge_token(&self, customer: CustomerId, now_ms: i64) -> StoreResult<Result<(), i64>>;

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
