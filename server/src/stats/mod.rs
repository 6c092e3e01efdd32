//! Statistics behind one interface, [`StatsEngine`]: ingestion of access logs and security events, rollups,
//! retention and queries. The embedded engine ([`memory::MemoryEngine`], in `memory/`) keeps dictionary-encoded
//! columnar rollups in memory, made durable by a write-ahead log and snapshots in the data dir; the ClickHouse
//! engine ([`clickhouse::ClickHouseEngine`], in `clickhouse/`, chosen with `--stats-url`) keeps the same rollups
//! in ClickHouse tables. Neither imports the other: both take their vocabulary from `rollups` (dimensions and
//! metrics, the rollups kept, which one answers a query, how a filter applies) and their batches from
//! [`ingest`] (NDJSON bodies parsed into columns); [`demo`] makes the demo account's traffic.

pub mod clickhouse;
pub mod demo;
pub mod ingest;
pub mod memory;
mod rollups;

use edge_api::stats::Query;

use crate::store::CustomerId;

pub use ingest::{AccessBatch, AccessRecord, SecurityBatch, SecurityRecord};
pub use rollups::{DIMS, dim_id};

/// A value in an answer row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(std::sync::Arc<str>),
    Int(i64),
    /// Milliseconds since the epoch, written `YYYY-MM-DDTHH:MM:SS`.
    Time(i64),
}

/// The rows of an answer, in the order of `columns`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answer {
    /// Column name and whether its values are integers (`long`).
    pub columns: Vec<(String, bool)>,
    pub rows: Vec<Vec<Cell>>,
    pub total: u64,
}

/// What a customer's statistics may hold (the embedded engine's memory; ClickHouse keeps everything on disk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Distinct values of one dimension a customer may hold; new values past it are stored as
    /// [`edge_api::stats::OTHER_VALUE`] (0 for integer dimensions).
    pub max_values: usize,
    /// Rollup rows and raw security events a customer may hold; a batch that comes when it holds as many is
    /// refused ([`IngestError::Full`]).
    pub max_rows: u64,
    /// Days of daily rollups kept (None: for ever).
    pub daily_retention_days: Option<u32>,
}

impl Limits {
    /// No limit but the engine's own (2^25 values a dimension).
    pub const NONE: Limits = Limits { max_values: usize::MAX, max_rows: u64::MAX, daily_retention_days: None };
    /// The server's defaults (see the README's flag table).
    pub const DEFAULT: Limits = Limits { max_values: 1_000_000, max_rows: 50_000_000, daily_retention_days: None };
    /// The fewest distinct values a dimension may be limited to: more than any integer dimension but
    /// `client_asn` can take (HTTP status codes are 100–599), so that only open-ended values are ever folded.
    pub const MIN_VALUES: usize = 1_000;

    /// The first bucket of `granularity` kept at `now_ms`: the granularity's retention, and for daily rollups
    /// the configured one.
    pub fn kept_from(&self, granularity: edge_api::stats::Granularity, now_ms: i64) -> Option<i64> {
        match (granularity, self.daily_retention_days) {
            (edge_api::stats::Granularity::Day, Some(days)) => {
                Some(now_ms.saturating_sub(i64::from(days) * 86_400_000).saturating_sub(86_400_000))
            }
            (g, _) => g.kept_from(now_ms),
        }
    }
}

/// What storing a batch did besides storing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stored {
    /// Per dimension (by name), how many records' values were folded into [`edge_api::stats::OTHER_VALUE`].
    pub folded: Vec<(&'static str, u64)>,
}

/// The ingestion endpoint a batch came to: an `Idempotency-Key` is scoped to the customer and this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    AccessLogs,
    SecurityEvents,
}

impl Endpoint {
    pub fn code(self) -> u8 {
        match self {
            Endpoint::AccessLogs => 0,
            Endpoint::SecurityEvents => 1,
        }
    }

    pub fn from_code(code: u8) -> Option<Endpoint> {
        match code {
            0 => Some(Endpoint::AccessLogs),
            1 => Some(Endpoint::SecurityEvents),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Endpoint::AccessLogs => "accesslogs",
            Endpoint::SecurityEvents => "securityevents",
        }
    }
}

/// An ingestion request's `Idempotency-Key`, with the SHA-256 of its decoded body: the engine stores the
/// batch and keeps the key in one step, so that a retry of the same request is answered from what is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyed {
    pub endpoint: Endpoint,
    pub key: String,
    pub body_hash: [u8; 32],
}

/// What is kept of a batch stored with a key: enough to answer a retry as the first attempt was answered
/// (the rejected lines are the body's own, read again from the retry's identical body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub body_hash: [u8; 32],
    pub accepted: u64,
    pub folded: Vec<(&'static str, u64)>,
}

/// How long, and how many per customer and engine, keys of stored batches are kept; an older key (or one
/// past the count, oldest first) is forgotten, and a retry with it is stored again.
pub const KEYS_KEPT_MS: i64 = 24 * 3_600_000;
pub const KEYS_KEPT_PER_CUSTOMER: usize = 100_000;

/// What one customer's statistics hold (the embedded engine).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    pub customer: CustomerId,
    /// Rollup rows and raw security events (what [`Limits::max_rows`] limits).
    pub rows: u64,
    /// Memory they take, with the dictionaries, in bytes.
    pub bytes: u64,
    /// Distinct values held, per dimension with any (by name).
    pub values: Vec<(&'static str, u64)>,
    /// Records whose value was folded since the server started, per dimension with any.
    pub folded: Vec<(&'static str, u64)>,
}

/// Size of what the engine holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    pub rollup_rows: u64,
    pub event_rows: u64,
    pub bytes: u64,
}

pub trait StatsEngine: Send + Sync + 'static {
    /// Stores a batch of parsed access-log records; durable when it returns Ok. On an error nothing of the
    /// batch is stored. A batch sent with an `Idempotency-Key` comes with its `key`: the batch and the key are
    /// stored together (both or neither, also across a crash), so that [`StatsEngine::kept`] finds the key
    /// exactly when the batch is stored. The caller has checked that the key is not kept already, and holds
    /// it alone in this process.
    fn ingest_access(
        &self,
        customer: CustomerId,
        batch: &AccessBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError>;
    /// [`StatsEngine::ingest_access`] for security events.
    fn ingest_security(
        &self,
        customer: CustomerId,
        batch: &SecurityBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError>;
    /// What is kept of the batch stored with `key` for this customer and endpoint, if any.
    fn kept(&self, customer: CustomerId, endpoint: Endpoint, key: &str) -> Result<Option<Kept>, IngestError>;
    /// Answers a validated query for `customer` (named `customer_name`, the value of the `customer` dimension).
    fn query(&self, customer: CustomerId, customer_name: &str, query: &Query) -> Result<Answer, QueryError>;
    /// Drops what is older than the retention of each granularity, and raw events before the previous three
    /// days. Runs every ten minutes; the embedded engine also compacts what ingestion left open since the
    /// last run.
    fn enforce_retention(&self, now_ms: i64) -> anyhow::Result<()>;
    /// Writes a snapshot so the log can be emptied.
    fn checkpoint(&self) -> anyhow::Result<()>;
    /// One round of the periodic upkeep, every minute: with `retention` (every ten minutes)
    /// [`StatsEngine::enforce_retention`]; an engine with a log of its own also checkpoints when the log calls
    /// for it.
    fn maintain(&self, now_ms: i64, retention: bool) -> anyhow::Result<()> {
        if retention {
            self.enforce_retention(now_ms)?;
        }
        Ok(())
    }
    /// Bytes logged since the last checkpoint.
    fn log_bytes(&self) -> u64;
    fn footprint(&self) -> Footprint;
    /// Whether every replica sees the same statistics (an engine in another process), rather than each its own.
    fn shared(&self) -> bool {
        false
    }
    /// What each customer's statistics hold in this process's memory (empty for an engine in another
    /// process).
    fn usage(&self) -> Vec<Usage> {
        Vec::new()
    }
    /// The limits the engine applies.
    fn limits(&self) -> Limits {
        Limits::NONE
    }
    /// Whether the engine can answer queries now (`/readyz`); an engine in another process checks that it
    /// answers. The embedded engine is ready once opened.
    fn ready(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Why a batch was not stored (none of it was).
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The customer's statistics hold as many rows as the engine allows.
    #[error("{0}")]
    Full(String),
    /// The engine's database cannot be reached just now (nothing was stored); worth retrying.
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// A valid query the engine cannot answer as asked.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("{0}")]
    Unsupported(String),
    /// The engine's database cannot be reached just now; worth retrying.
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}
