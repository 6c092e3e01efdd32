//! State storage behind one trait per resource, each in its own file with its records, row mappers and SQL:
//! [`Customers`], [`Users`] (and identity sources), [`Sessions`], [`Logins`] (login throttling), [`Properties`]
//! (and host claims), [`NetworkLists`], [`Tasks`] (and purges), [`AuditLog`], [`Tokens`] (API tokens); handlers
//! never see SQL.
//!
//! [`Store`] is their sum, a supertrait with a blanket impl: `AppState` holds one `Arc<dyn Store>` on which
//! every method of every resource is called, and an implementation implements each resource's trait beside that
//! resource. (A struct of one trait object per resource would let each come from its own implementation, which
//! nothing needs: one database holds them all, and one change of several — a property with its deployment task
//! and its audit record — is one transaction.) The one implementation, [`SqlStore`], runs on the embedded
//! SQLite file (the default) or on PostgreSQL shared by several replicas of the server; [`open`] picks it from
//! the flags, in one place.

mod alerts;
mod audit;
mod customers;
pub mod db;
mod logins;
mod networklists;
pub mod postgres;
mod properties;
mod sessions;
mod sql;
pub mod sqlite;
mod tasks;
mod tokens;
mod users;

use std::{path::PathBuf, time::Duration};

use async_trait::async_trait;

pub use alerts::{
    Alerts, AttemptOutcome, ChannelRecord, ClaimedDelivery, DeliveryRecord, Evaluation, EventFilter, EventRecord,
    RuleCounts, RuleRecord, SilenceRecord,
};
pub use audit::{Actor, AuditEntry, AuditEvent, AuditFilter, AuditLog, Target};
pub use customers::{AccountChange, Customer, Customers, NewCustomer};
pub use logins::Logins;
pub use networklists::{AddedEntries, EntryRecord, NetworkListRecord, NetworkListUpdate, NetworkLists};
pub use properties::{ConfigVersionRecord, Properties, PropertyRecord};
pub use sessions::{SessionRecord, Sessions};
pub use sql::SqlStore;
pub use tasks::{PurgeRecord, PurgeSummary, TaskFilter, TaskRecord, TaskStatus, Tasks};
pub use tokens::{NewToken, TokenChange, TokenRecord, Tokens};
pub use users::{NewUser, OtpSeedRecord, PasswordReset, UserRecord, UserUpdate, Users};

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

/// What every database answers besides the resources: which it is, and whether it answers and takes writes
/// (for readiness checks).
#[async_trait]
pub trait Health: Send + Sync {
    /// Which database: `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
    /// Answers when the database does (for readiness checks).
    async fn ping(&self) -> StoreResult<()>;
    /// Writes a row of `server`'s (one small transaction): whether the database takes writes now, for readiness
    /// checks (a full or read-only disk still answers reads).
    async fn probe_write(&self, server: &str, now_ms: i64) -> StoreResult<()>;
}

/// Every resource's storage in one: what `AppState` holds (see the module's documentation).
pub trait Store:
    Health
    + Customers
    + Users
    + Sessions
    + Logins
    + Properties
    + NetworkLists
    + Tasks
    + AuditLog
    + Tokens
    + Alerts
    + Send
    + Sync
    + 'static
{
}

impl<T> Store for T where
    T: Health
        + Customers
        + Users
        + Sessions
        + Logins
        + Properties
        + NetworkLists
        + Tasks
        + AuditLog
        + Tokens
        + Alerts
        + Send
        + Sync
        + 'static
{
}
