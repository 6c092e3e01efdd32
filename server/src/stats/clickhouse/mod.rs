//! The ClickHouse statistics engine: raw access-log and security-event tables (MergeTree, one partition a day,
//! ordered by customer and time) and the rollups both engines keep ([`super::rollups`]) — the same grouping
//! sets and granularities, one AggregatingMergeTree table per kind and granularity holding the grouping sets
//! of both (a `grouping` column tells them apart). The server sums each batch into the rollups as the
//! embedded engine does (its plan) and inserts the summed rows; only a rollup that no other of its table
//! contains is written, the others are summed from it at query time ([`schema::stand_ins`]), so a query
//! answers the same rows in the same order as the embedded engine. Few tables keep inserts cheap: each
//! insert creates one part per table and day.
//!
//! Order where the embedded engine has no value to sort by is the order it first saw things in: each stored
//! record carries a sequence number (when its batch arrived, then its place in the batch); a rollup row keeps
//! the smallest of its records', and the `dict` table keeps, per customer, dimension and value, the smallest
//! sequence number of the records that carried the value (the embedded engine's dictionary ids).
//!
//! Several servers are shards: each customer's statistics live on one of them, chosen by a fixed hash of the
//! customer id ([`shard_of`]); every request of a customer goes to its shard, so answers are the same as on
//! one server. Each shard records its place (`edge_shards`); a server started with another number of shards,
//! or the shards in another order, refuses to start rather than look for a customer on the wrong one.
//!
//! Written for ClickHouse 18.16 (Debian 12's) and later: no GROUPING SETS, TTL, DateTime64 or
//! LowCardinality; retention drops whole day partitions. Values from requests are bound as parameters (the
//! client library escapes them); only names from fixed lists are written into SQL.
//!
//! Here: the engine, its runtime and the [`StatsEngine`] calls. The parts: `url` (`--stats-url`), `schema`
//! (tables, views, migration), `sql` (statements and their values), `insert` (storing a request's batch),
//! `spool` (batches acknowledged on disk, written in large groups), `group` (keyed batches of concurrent
//! requests written together), `rows` (records summed into their rows), `write` (inserts), `repair` (what a
//! cut-off attempt of a batch lacks), and `query`.

use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use edge_api::stats::{Family, Granularity, Query};
use serde::Deserialize;

use super::{
    AccessBatch, Answer, Endpoint, Footprint, IngestError, Kept, Keyed, Limits, QueryError, SecurityBatch, StatsEngine,
    Stored, memory,
    rollups::{self, EVENT_DAYS, Spec},
};
use crate::{clock::Clock, store::CustomerId};

mod days;
mod group;
mod insert;
mod order;
mod query;
mod repair;
mod rows;
mod schema;
mod spool;
mod sql;
mod url;
mod write;

pub use schema::SCHEMA_VERSION;
use schema::{feeds, table_name};
pub use url::StatsUrl;

/// A query or insert that takes longer is abandoned (and answered 503).
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

pub struct ClickHouseEngine {
    /// One client a shard (`--stats-url` order), the rollup tables, and writing to them.
    writer: Arc<write::Writer>,
    /// Each shard's HTTP address, for messages.
    addresses: Vec<String>,
    /// Each shard's inserts of access logs and of security events ([`schema::Source`] order), written in groups.
    lanes: Vec<[group::Lane; 2]>,
    /// Where batches sent without a key wait on this server's disk for ClickHouse ([`spool`]); without one,
    /// every request waits for its batch to be stored in ClickHouse.
    spool: Option<spool::Spool>,
    database: String,
    runtime: Option<tokio::runtime::Runtime>,
    clock: Arc<dyn Clock>,
    specs: Vec<Spec>,
    /// The rollup table of each spec.
    tables: Vec<String>,
    /// The rollup whose rows stand for each spec's ([`schema::stand_ins`]).
    stand_in: Vec<usize>,
    /// The last millisecond of the sequence handed out.
    last_slot: Mutex<u64>,
    /// Days daily rollups are kept (None: for ever), as the embedded engine keeps them.
    daily_retention_days: Option<u32>,
    /// Each day's top URLs, kept from query to query while the day's parts stay the same.
    top_days: Mutex<days::Days<query::OutRow>>,
    /// Each day of time series read by query-time grouping, kept the same way.
    series_days: Mutex<days::Days<query::SeriesRow>>,
}

impl Drop for ClickHouseEngine {
    fn drop(&mut self) {
        // The spool's threads write on the runtime: stopped first.
        if let Some(spool) = &mut self.spool {
            spool.stop();
        }
        // Dropped from async code too, where an ordinary runtime drop would panic.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// How long a readiness probe waits for ClickHouse.
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1500);

/// Why a request to ClickHouse failed.
enum Failure {
    /// It could not be reached, or did not answer in time: worth retrying later.
    Unavailable(String),
    Internal(anyhow::Error),
}

impl From<clickhouse::error::Error> for Failure {
    fn from(e: clickhouse::error::Error) -> Self {
        match e {
            clickhouse::error::Error::Network(_) | clickhouse::error::Error::TimedOut => {
                Failure::Unavailable(format!("The statistics database cannot be reached ({e}); try again shortly."))
            }
            e => Failure::Internal(anyhow::Error::new(e).context("statistics database")),
        }
    }
}

impl From<Failure> for QueryError {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Unavailable(m) => QueryError::Unavailable(m),
            Failure::Internal(e) => QueryError::Internal(e),
        }
    }
}

impl From<Failure> for IngestError {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Unavailable(m) => IngestError::Unavailable(m),
            Failure::Internal(e) => IngestError::Internal(e),
        }
    }
}

impl From<Failure> for anyhow::Error {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Unavailable(m) => anyhow::anyhow!(m),
            Failure::Internal(e) => e,
        }
    }
}

#[derive(Deserialize, clickhouse::Row)]
struct KeptRow {
    body_hash: String,
    accepted: u64,
}

#[derive(Deserialize, clickhouse::Row)]
struct PartRow {
    table: String,
    partition: String,
}

#[derive(Deserialize, clickhouse::Row)]
struct SizeRow {
    table: String,
    rows: u64,
    bytes: u64,
}

/// The shard (of `shards`) that holds a customer's statistics: a fixed mix of the id (splitmix64), so that
/// customers spread evenly whatever their ids, and stays the same from run to run and version to version.
pub fn shard_of(customer: CustomerId, shards: usize) -> usize {
    let mut z = (customer as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z % shards.max(1) as u64) as usize
}

#[derive(Deserialize, clickhouse::Row)]
struct ShardRow {
    position: u32,
    count: u32,
}

impl ClickHouseEngine {
    /// The client of the shard holding `customer`'s statistics.
    fn client(&self, customer: CustomerId) -> clickhouse::Client {
        self.writer.client(customer)
    }

    /// Keeps daily rollups `days` days (None: for ever), as `--stats-daily-retention-days` asks.
    pub fn with_daily_retention(mut self, days: Option<u32>) -> Self {
        self.daily_retention_days = days;
        self
    }

    /// Acknowledges batches sent without a key once they are in the spool in `dir` ([`spool`]), and writes
    /// them to ClickHouse in large groups; batches a previous run left there are written first.
    pub fn with_spool(mut self, dir: &std::path::Path) -> anyhow::Result<Self> {
        self.spool = Some(spool::Spool::open(dir, self.writer.clients.len(), self.writer.clone())?);
        Ok(self)
    }

    /// Whether `table` holds daily rollups.
    fn is_daily(&self, table: &str) -> bool {
        self.tables.iter().zip(&self.specs).any(|(t, s)| t == table && s.granularity == Granularity::Day)
    }

    /// Connects, creates the database and schema when missing, and checks the schema's version.
    pub fn open(url: &StatsUrl, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("clickhouse")
            .enable_all()
            .build()?;
        let bases: Vec<clickhouse::Client> = url
            .shards
            .iter()
            .map(|http| {
                let mut base = clickhouse::Client::default()
                    .with_url(http)
                    .with_validation(false)
                    .with_setting("max_execution_time", QUERY_TIMEOUT.as_secs().to_string());
                if let Some(u) = &url.user {
                    base = base.with_user(u);
                }
                if let Some(p) = &url.password {
                    base = base.with_password(p);
                }
                base
            })
            .collect();
        let specs = rollups::all_specs();
        let tables: Vec<String> = specs.iter().map(table_name).collect();
        let feeds = feeds(&specs, &tables).1;
        let (rollup_tables, table_of) = schema::layout(&specs, &tables);
        let stand_in = schema::stand_ins(&specs, &tables);
        let clients: Vec<clickhouse::Client> = bases.iter().map(|b| b.clone().with_database(&url.database)).collect();
        let writer = write::Writer {
            clients,
            rollup_tables,
            feeds,
            runtime: runtime.handle().clone(),
            // Only the rollups written are summed.
            access_plan: memory::access_plan(&specs, |i| stand_in[i] == i),
            security_plan: memory::security_plan(&specs, |i| stand_in[i] == i),
            specs: specs.clone(),
            table_of,
            work: Mutex::default(),
        };
        let engine = ClickHouseEngine {
            writer: Arc::new(writer),
            stand_in,
            addresses: url.shards.clone(),
            lanes: url.shards.iter().map(|_| Default::default()).collect(),
            spool: None,
            database: url.database.clone(),
            runtime: Some(runtime),
            clock,
            specs,
            tables,
            last_slot: Mutex::new(0),
            daily_retention_days: None,
            top_days: Mutex::new(days::Days::with_budget(days::TOP_BUDGET)),
            series_days: Mutex::new(days::Days::with_budget(days::SERIES_BUDGET)),
        };
        let count = engine.writer.clients.len();
        for (position, (base, client)) in bases.into_iter().zip(engine.writer.clients.clone()).enumerate() {
            let address = &engine.addresses[position];
            let create_db = format!("CREATE DATABASE IF NOT EXISTS {}", url.database);
            engine
                .block(async move { base.query(&create_db).execute().await })
                .map_err(anyhow::Error::from)
                .with_context(|| format!("ClickHouse at {address}"))?;
            engine.migrate(&client).with_context(|| format!("ClickHouse at {address}"))?;
            engine.check_shard(&client, position, count).with_context(|| format!("ClickHouse at {address}"))?;
        }
        Ok(engine)
    }

    /// Checks that the shard of `client` is shard `position` of `count` (recording it the first time; a
    /// database that held statistics before shards were recorded was one server's).
    fn check_shard(&self, client: &clickhouse::Client, position: usize, count: usize) -> anyhow::Result<()> {
        let client = client.clone();
        let now = self.clock.now_ms();
        let recorded = self.block(async move {
            client
                .query(
                    "CREATE TABLE IF NOT EXISTS edge_shards (position UInt32, count UInt32, at_ms Int64) \
                     ENGINE = MergeTree ORDER BY position",
                )
                .execute()
                .await?;
            // Replicas starting together may each record it: the same place, unless started differently.
            let rows = client.query("SELECT DISTINCT position, count FROM edge_shards").fetch_all::<ShardRow>().await?;
            if let Some(row) = rows.iter().find(|r| (r.position as usize, r.count as usize) != (position, count)) {
                return Ok((row.position as usize, row.count as usize));
            }
            if !rows.is_empty() {
                return Ok((position, count));
            }
            let stored: u64 = client
                .query("SELECT (SELECT count() FROM access) + (SELECT count() FROM security)")
                .fetch_one()
                .await?;
            let (position, count) = if stored > 0 { (0, 1) } else { (position, count) };
            client
                .query("INSERT INTO edge_shards (position, count, at_ms) VALUES (?, ?, ?)")
                .bind(position as u32)
                .bind(count as u32)
                .bind(now)
                .execute()
                .await?;
            Ok((position, count))
        })?;
        anyhow::ensure!(
            recorded == (position, count),
            "this database is shard {} of {} (in the order of --stats-url), but the statistics URL makes it shard {} \
             of {}: customers would be looked for on the wrong server. Start every server with the same servers, in \
             the same order, as when the statistics were first stored",
            recorded.0 + 1,
            recorded.1,
            position + 1,
            count
        );
        Ok(())
    }

    /// Runs `fut` on the engine's runtime, from any thread (also one of another runtime), within the timeout.
    fn block<T: Send>(
        &self,
        fut: impl Future<Output = Result<T, clickhouse::error::Error>> + Send,
    ) -> Result<T, Failure> {
        self.block_failure(async move { fut.await.map_err(Failure::from) })
    }

    fn block_failure<T: Send>(&self, fut: impl Future<Output = Result<T, Failure>> + Send) -> Result<T, Failure> {
        self.block_within(QUERY_TIMEOUT, fut)
    }

    /// Runs `fut` as [`Self::block_failure`] does, within `timeout`.
    fn block_within<T: Send>(
        &self,
        timeout: Duration,
        fut: impl Future<Output = Result<T, Failure>> + Send,
    ) -> Result<T, Failure> {
        if self.runtime.is_none() {
            return Err(Failure::Internal(anyhow::anyhow!("the statistics engine is closed")));
        }
        self.writer.block_within(timeout, fut)
    }
}

impl StatsEngine for ClickHouseEngine {
    fn ingest_access(
        &self,
        customer: CustomerId,
        batch: &AccessBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        self.store_access(customer, batch, key)
    }

    fn ingest_security(
        &self,
        customer: CustomerId,
        batch: &SecurityBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        self.store_security(customer, batch, key)
    }

    fn kept(&self, customer: CustomerId, endpoint: Endpoint, key: &str) -> Result<Option<Kept>, IngestError> {
        let query = self
            .client(customer)
            .query(
                "SELECT body_hash, accepted FROM ingest_keys WHERE customer = ? AND endpoint = ? AND key = ? \
                 ORDER BY at_ms LIMIT 1",
            )
            .bind(customer)
            .bind(endpoint.code())
            .bind(key);
        let rows = self.block(async move { query.fetch_all::<KeptRow>().await })?;
        let Some(row) = rows.into_iter().next() else { return Ok(None) };
        let mut body_hash = [0u8; 32];
        hex::decode_to_slice(&row.body_hash, &mut body_hash)
            .map_err(|e| IngestError::Internal(anyhow::anyhow!("a kept key's body hash: {e}")))?;
        Ok(Some(Kept { body_hash, accepted: row.accepted, folded: Vec::new() }))
    }

    fn query(&self, customer: CustomerId, customer_name: &str, query: &Query) -> Result<Answer, QueryError> {
        // Whatever this server acknowledged is answered: what its spool holds of the customer is written first.
        if let Some(spool) = &self.spool {
            spool.sync_customer(shard_of(customer, self.writer.clients.len()), customer)?;
        }
        if query.family == Family::Events {
            self.query_events(customer, customer_name, query)
        } else {
            self.query_rollups(customer, customer_name, query)
        }
    }

    /// Drops the day partitions wholly older than each table's retention: rollups as their granularity keeps
    /// them, raw access records as long as 5-minute rollups, raw security events the previous three days.
    fn enforce_retention(&self, now_ms: i64) -> anyhow::Result<()> {
        for client in &self.writer.clients {
            self.enforce_retention_on(client, now_ms)?;
        }
        Ok(())
    }

    /// Writes what the spool holds to ClickHouse (at a graceful stop, and at the end of `edge-server ingest`).
    fn checkpoint(&self) -> anyhow::Result<()> {
        match &self.spool {
            Some(spool) => spool.sync_all().map_err(|e| {
                anyhow::Error::from(e).context(
                    "statistics acknowledged by this server are not all in ClickHouse yet; they stay in its spool \
                     and are written when it starts again",
                )
            }),
            None => Ok(()),
        }
    }

    /// Bytes of rows in the spool, not yet in ClickHouse.
    fn log_bytes(&self) -> u64 {
        self.spool.as_ref().map_or(0, |s| s.held() as u64)
    }

    /// Every shard answers a trivial query within the readiness timeout (an engine in another process: killed,
    /// stopped or out of reach makes this replica not ready). The shards are asked at once, so that a check
    /// takes one timeout at most however many shards are gone.
    fn ready(&self) -> anyhow::Result<()> {
        let probes: Vec<_> = self
            .writer
            .clients
            .iter()
            .map(|client| {
                let query = client.query("SELECT toUInt64(1)");
                // Well within /readyz's own wait, so that checks every second never pile up blocked threads.
                async move {
                    match tokio::time::timeout(READY_TIMEOUT, query.fetch_one::<u64>()).await {
                        Ok(answer) => answer.map(drop).map_err(Failure::from),
                        Err(_) => Err(Failure::Unavailable(format!("no answer within {READY_TIMEOUT:?}"))),
                    }
                }
            })
            .collect();
        let answers = self.block_failure(async move {
            let running: Vec<_> = probes.into_iter().map(tokio::spawn).collect();
            let mut answers = Vec::with_capacity(running.len());
            for probe in running {
                answers.push(
                    probe.await.unwrap_or_else(|e| Err(Failure::Internal(anyhow::anyhow!("a probe failed: {e}")))),
                );
            }
            Ok(answers)
        });
        let answers = match answers {
            Ok(answers) => answers,
            Err(Failure::Unavailable(m)) => anyhow::bail!("ClickHouse does not answer: {m}"),
            Err(Failure::Internal(e)) => return Err(e.context("ClickHouse does not answer")),
        };
        for (answer, address) in answers.into_iter().zip(&self.addresses) {
            match answer {
                Ok(()) => {}
                Err(Failure::Unavailable(m)) => anyhow::bail!("ClickHouse at {address} does not answer: {m}"),
                Err(Failure::Internal(e)) => return Err(e.context(format!("ClickHouse at {address} does not answer"))),
            }
        }
        Ok(())
    }

    fn shared(&self) -> bool {
        true
    }

    fn footprint(&self) -> Footprint {
        let mut f = Footprint::default();
        for client in &self.writer.clients {
            let (client, database) = (client.clone(), self.database.clone());
            let sizes = self.block(async move {
                client
                    .query(
                        "SELECT table, sum(rows) AS rows, sum(bytes_on_disk) AS bytes FROM system.parts \
                         WHERE database = ? AND active GROUP BY table",
                    )
                    .bind(database)
                    .fetch_all::<SizeRow>()
                    .await
            });
            for s in sizes.unwrap_or_default() {
                f.bytes += s.bytes;
                match s.table.as_str() {
                    "security" => f.event_rows += s.rows,
                    t if self.tables.iter().any(|r| r == t) => f.rollup_rows += s.rows,
                    _ => {}
                }
            }
        }
        f
    }
}

impl ClickHouseEngine {
    /// Drops the day partitions of one shard wholly older than each table's retention.
    fn enforce_retention_on(&self, client: &clickhouse::Client, now_ms: i64) -> anyhow::Result<()> {
        let (listing, database) = (client.clone(), self.database.clone());
        let parts = self.block(async move {
            listing
                .query(
                    "SELECT table, partition FROM system.parts WHERE database = ? AND active GROUP BY table, partition",
                )
                .bind(database)
                .fetch_all::<PartRow>()
                .await
        })?;
        let keep_from = |table: &str| -> Option<i64> {
            match table {
                "access" => Granularity::FiveMinute.kept_from(now_ms),
                t if self.daily_retention_days.is_some() && self.is_daily(t) => {
                    Limits { daily_retention_days: self.daily_retention_days, ..Limits::NONE }
                        .kept_from(Granularity::Day, now_ms)
                }
                "security" => Some(rollups::day_start(now_ms) - EVENT_DAYS * 86_400_000),
                // Kept keys: at least a day.
                "ingest_keys" | "ingest_batches" => Some(now_ms - super::KEYS_KEPT_MS),
                "edge_schema" | "dict" => None,
                t => self.tables.iter().position(|x| x == t).and_then(|i| self.specs[i].granularity.kept_from(now_ms)),
            }
        };
        for p in parts {
            let Some(from) = keep_from(&p.table) else { continue };
            let Ok(day) = edge_api::stats::parse_time(&format!("{}T00:00:00", p.partition)) else { continue };
            if day + 86_400_000 > from {
                continue;
            }
            // The table name is one of ours (keep_from knew it); the partition is bound.
            let sql = format!("ALTER TABLE {} DROP PARTITION ?", p.table);
            let client = client.clone();
            self.block(async move { client.query(&sql).bind(p.partition).execute().await })?;
        }
        Ok(())
    }
}
