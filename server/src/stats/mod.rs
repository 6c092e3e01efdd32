//! Statistics behind one interface, [`StatsEngine`]: ingestion of access logs and security events, rollups,
//! retention and queries. The embedded engine ([`memory::MemoryEngine`]) keeps dictionary-encoded columnar
//! rollups in memory, made durable by a write-ahead log and snapshots in the data dir; the ClickHouse engine
//! ([`clickhouse::ClickHouseEngine`], chosen with `--stats-url`) keeps the same rollups in ClickHouse tables.

pub mod clickhouse;
pub mod demo;
pub mod ingest;
pub mod memory;

use edge_api::stats::Query;

use crate::store::CustomerId;

pub use ingest::{AccessBatch, AccessRecord, SecurityBatch, SecurityRecord};

/// Every dimension the engine knows, across families. Its position is the dimension's id.
pub const DIMS: [&str; 26] = [
    "browser_name",
    "cache_status",
    "content_type",
    "country",
    "country_code",
    "device_os",
    "device_type",
    "domain",
    "gna_cache_status",
    "http_status_code",
    "property",
    "request_type",
    "scheme",
    "request_url",
    "event_severity",
    "event_type",
    "event_action",
    "client_connection_remote_ip",
    "client_ip",
    "client_browser",
    "client_country_code",
    "client_asn",
    "rule_id",
    "request_path",
    "waf_action",
    "source",
];

pub fn dim_id(name: &str) -> Option<usize> {
    DIMS.iter().position(|d| *d == name)
}

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

/// Size of what the engine holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    pub rollup_rows: u64,
    pub event_rows: u64,
    pub bytes: u64,
}

pub trait StatsEngine: Send + Sync + 'static {
    /// Stores a batch of parsed access-log records; durable when it returns Ok. On an error nothing of the
    /// batch is stored.
    fn ingest_access(&self, customer: CustomerId, batch: &AccessBatch) -> Result<(), IngestError>;
    /// Stores a batch of parsed security events; durable when it returns Ok. On an error nothing of the batch
    /// is stored.
    fn ingest_security(&self, customer: CustomerId, batch: &SecurityBatch) -> Result<(), IngestError>;
    /// Answers a validated query for `customer` (named `customer_name`, the value of the `customer` dimension).
    fn query(&self, customer: CustomerId, customer_name: &str, query: &Query) -> Result<Answer, QueryError>;
    /// Drops what is older than the retention of each granularity, and raw events before the previous three
    /// days. Runs every ten minutes; the embedded engine also compacts what ingestion left open since the
    /// last run.
    fn enforce_retention(&self, now_ms: i64) -> anyhow::Result<()>;
    /// Writes a snapshot so the log can be emptied.
    fn checkpoint(&self) -> anyhow::Result<()>;
    /// Bytes logged since the last checkpoint.
    fn log_bytes(&self) -> u64;
    fn footprint(&self) -> Footprint;
    /// Whether the engine can answer queries now (`/readyz`); an engine in another process checks that it
    /// answers. The embedded engine is ready once opened.
    fn ready(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Why a batch was not stored (none of it was).
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The engine cannot hold more of this customer's data (a dictionary of distinct values is full).
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
