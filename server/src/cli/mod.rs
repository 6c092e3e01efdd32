//! The commands' implementations, one module each: serving (`serve`), loading statistics (`ingest`), and the
//! operator's commands on customers, hosts and identity sources (`operator`).

pub mod ingest;
pub mod operator;
pub mod serve;

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use edge_server::{Settings, stats::Limits, store::Location};

/// Where the state is kept, when not in the data dir.
#[derive(Args, Clone)]
pub struct DatabaseArgs {
    /// PostgreSQL instead of SQLite in the data dir, shared by every replica of the server:
    /// postgres://USER[:PASS]@HOST:PORT/DB (libpq's URL; e.g. ?sslmode=require, ?options=-csearch_path%3Dedge).
    #[arg(long, env = "EDGE_DATABASE_URL")]
    pub database_url: Option<String>,
}

impl DatabaseArgs {
    pub fn location(&self, data_dir: &std::path::Path) -> Location {
        let mut settings = Settings::new(data_dir, "");
        settings.database_url = self.database_url.clone();
        settings.location()
    }
}

/// What one customer's statistics may hold in the embedded engine (the server and `ingest` apply the same).
#[derive(Args, Clone)]
pub struct StatsLimitArgs {
    /// Distinct values of one dimension (domains, URLs, client addresses …) one customer's statistics may
    /// hold; new values past it are stored as `(other)` (0 for integer dimensions), and the ingestion answer
    /// says so. At least 1000.
    #[arg(long, env = "EDGE_STATS_MAX_VALUES", default_value_t = Limits::DEFAULT.max_values as u64,
          value_parser = clap::value_parser!(u64).range(Limits::MIN_VALUES as u64..(1 << 25)))]
    stats_max_values: u64,
    /// Rollup rows and raw security events one customer's statistics may hold; a batch that comes when they
    /// hold as many is refused (409 statistics_full).
    #[arg(long, env = "EDGE_STATS_MAX_ROWS", default_value_t = Limits::DEFAULT.max_rows,
          value_parser = clap::value_parser!(u64).range(1000..))]
    stats_max_rows: u64,
    /// Days daily rollups are kept [default: for ever].
    #[arg(long, env = "EDGE_STATS_DAILY_RETENTION_DAYS", value_parser = clap::value_parser!(u32).range(1..=36500))]
    stats_daily_retention_days: Option<u32>,
}

impl StatsLimitArgs {
    pub fn limits(&self) -> Limits {
        Limits {
            max_values: self.stats_max_values as usize,
            max_rows: self.stats_max_rows,
            daily_retention_days: self.stats_daily_retention_days,
        }
    }
}

/// Takes the data dir for this process alone (released when the process ends).
pub fn lock_data_dir(data_dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use anyhow::Context;
    std::fs::create_dir_all(data_dir).with_context(|| format!("creating the data dir {}", data_dir.display()))?;
    let path = data_dir.join(".lock");
    let lock =
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).with_context(|| {
            format!("the data dir {} must be writable: opening {}", data_dir.display(), path.display())
        })?;
    lock.try_lock().map_err(|_| anyhow::anyhow!("another edge-server process is using {}", data_dir.display()))?;
    Ok(lock)
}

/// The store alone, for the commands that need no statistics engine.
pub async fn open_store(location: &Location) -> anyhow::Result<edge_server::store::SqlStore> {
    edge_server::store::open(location, Duration::ZERO).await.context("opening the store")
}
