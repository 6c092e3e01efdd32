//! The ClickHouse statistics engine: raw access-log and security-event tables (MergeTree, one partition a day,
//! ordered by customer and time) feed, through materialized views, the rollups both engines keep
//! ([`super::rollups`]) — the same grouping sets and granularities, one AggregatingMergeTree table per kind and
//! granularity holding every grouping set of both (a `grouping` column tells them apart; each record goes to
//! each set by ARRAY JOIN) — so a query reads the same rollup the embedded engine would and answers the same
//! rows in the same order. Few tables keep inserts cheap: each creates one part per table and day.
//!
//! Order where the embedded engine has no value to sort by is the order it first saw things in: each stored
//! record carries a sequence number (when its batch arrived, then its place in the batch); a rollup row keeps
//! the smallest of its records', and the `dict` table keeps, per customer, dimension and value, the smallest
//! sequence number of the records that carried the value (the embedded engine's dictionary ids).
//!
//! Written for ClickHouse 18.16 (Debian 12's) and later: no GROUPING SETS, TTL, DateTime64 or
//! LowCardinality; retention drops whole day partitions. Values from requests are bound as parameters (the
//! client library escapes them); only names from fixed lists are written into SQL.

use std::{
    fmt::Write as _,
    future::Future,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::Context;
use edge_api::stats::{DELIVERY_METRICS, Family, Filter, Granularity, Query, TOPK_URL_PER_DAY};
use serde::Deserialize;

use super::{
    AccessBatch, Answer, Cell, Endpoint, Footprint, IngestError, Kept, Keyed, Limits, QueryError, SecurityBatch,
    StatsEngine, Stored,
    ingest::{Column, SECURITY_DIMS},
    rollups::{self, Conditions, DIMS, EVENT_DAYS, Kind, METRICS, Spec, Target, dim_id, is_int},
};
use crate::{clock::Clock, store::CustomerId};

/// The schema this version writes and reads; kept in the `edge_schema` table.
/// 2: batches go through Null tables (`access_in`, `security_in`) whose views write the raw rows (with a
/// batch id) and the rollups (with a marker row per batch with a key and day), and kept keys (`ingest_keys`).
pub const SCHEMA_VERSION: u32 = 2;
/// A query or insert that takes longer is abandoned (and answered 503).
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Records of one batch share a millisecond of the sequence; a larger batch takes several.
const SEQ_BITS: u32 = 20;
/// 2020-01-01T00:00:00Z: sequence numbers count milliseconds from here.
const SEQ_EPOCH_MS: u64 = 1_577_836_800_000;

/// Where the statistics live: `clickhouse://[USER[:PASS]@]HOST:PORT/DATABASE`, PORT being ClickHouse's HTTP
/// interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsUrl {
    pub http: String,
    pub user: Option<String>,
    pub password: Option<String>,
    pub database: String,
}

impl StatsUrl {
    pub fn parse(s: &str) -> anyhow::Result<StatsUrl> {
        let rest = s
            .strip_prefix("clickhouse://")
            .ok_or_else(|| anyhow::anyhow!("the statistics URL must start with clickhouse://"))?;
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, rest),
        };
        let (host, database) =
            rest.split_once('/').ok_or_else(|| anyhow::anyhow!("the statistics URL needs a /DATABASE"))?;
        anyhow::ensure!(
            !database.is_empty() && database.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "the database name may hold letters, digits and _ only"
        );
        let port = host.rsplit_once(':').map(|(_, p)| p).unwrap_or("");
        anyhow::ensure!(port.parse::<u16>().is_ok(), "the statistics URL needs HOST:PORT (the HTTP port)");
        let (user, password) = match auth {
            None => (None, None),
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (Some(decode(u)?), Some(decode(p)?)),
                None => (Some(decode(a)?), None),
            },
        };
        Ok(StatsUrl { http: format!("http://{host}"), user, password, database: database.to_string() })
    }
}

/// Percent-decoding of the user and password of a URL.
fn decode(s: &str) -> anyhow::Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(|| anyhow::anyhow!("a bad %-escape in the statistics URL"))?;
            out.push(u8::from_str_radix(hex, 16).context("a bad %-escape in the statistics URL")?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8(out)?)
}

pub struct ClickHouseEngine {
    client: clickhouse::Client,
    database: String,
    runtime: Option<tokio::runtime::Runtime>,
    clock: Arc<dyn Clock>,
    specs: Vec<Spec>,
    /// The rollup table of each spec.
    tables: Vec<String>,
    /// How each rollup table is fed (what a repair runs).
    feeds: Vec<Feed>,
    /// The last millisecond of the sequence handed out.
    last_slot: Mutex<u64>,
    /// Days daily rollups are kept (None: for ever), as the embedded engine keeps them.
    daily_retention_days: Option<u32>,
}

impl Drop for ClickHouseEngine {
    fn drop(&mut self) {
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

/// A value bound to a `?` of a statement.
#[derive(Clone)]
enum Arg {
    Text(String),
    Int(i64),
    Unsigned(u64),
}

/// A statement and the values of its `?`s, in order.
#[derive(Default, Clone)]
struct Sql {
    text: String,
    args: Vec<Arg>,
}

impl Sql {
    fn push(&mut self, s: &str) -> &mut Self {
        self.text.push_str(s);
        self
    }
    fn text(&mut self, v: &str) -> &mut Self {
        self.text.push('?');
        self.args.push(Arg::Text(v.to_string()));
        self
    }
    fn int(&mut self, v: i64) -> &mut Self {
        self.text.push('?');
        self.args.push(Arg::Int(v));
        self
    }
    fn unsigned(&mut self, v: u64) -> &mut Self {
        self.text.push('?');
        self.args.push(Arg::Unsigned(v));
        self
    }
    fn append(&mut self, other: Sql) -> &mut Self {
        self.text.push_str(&other.text);
        self.args.extend(other.args);
        self
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Delivery => "delivery",
        Kind::TopKUrl => "topk_url",
        Kind::WafTrend => "waf_trends",
        Kind::ShapingTrend => "shaping_trends",
        Kind::RequestTrend => "request_trends",
        Kind::TopK { waf: true, .. } => "waf_topk",
        Kind::TopK { waf: false, rate_limited: false } => "shaping_topk",
        Kind::TopK { waf: false, rate_limited: true } => "ratelimit_topk",
    }
}

/// The table of a spec's kind and granularity: it holds the rows of every grouping set of both, told apart by
/// the `grouping` column ([`grouping`]).
fn table_name(spec: &Spec) -> String {
    format!("{}_{}", kind_name(spec.kind), spec.granularity.as_str())
}

/// A grouping set as a number: one bit per dimension id (stable whatever other sets are added).
fn grouping(spec: &Spec) -> u64 {
    spec.dims.iter().fold(0u64, |m, d| m | (1 << d))
}

/// The column of a dimension in a rollup table.
fn col(dim: &str) -> String {
    format!("d_{dim}")
}

/// The metric columns of a rollup: all delivery metrics, or `hits` alone (requests or events counted).
fn metric_columns(spec: &Spec) -> &'static [&'static str] {
    if spec.metrics == METRICS { &DELIVERY_METRICS } else { &["hits"] }
}

/// The grouping of a batch's marker rows in a rollup table: no grouping set's (they have 26 bits at most), so
/// no query reads them. A batch sent with a key ([`batch_id`] not 0) adds one to every rollup table, per day
/// it has records of there, in the same part as its rollup rows of that day: so a retry can tell which parts
/// of a cut-off first attempt landed.
const MARKER: u64 = 1 << 63;

/// Which raw table feeds a rollup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Access,
    Security,
}

impl Source {
    fn raw(self) -> &'static str {
        match self {
            Source::Access => "access",
            Source::Security => "security",
        }
    }

    /// The raw columns as inserted (`day` is computed from `ts`).
    fn columns(self) -> Vec<&'static str> {
        let mut out = vec!["customer", "ts", "seq"];
        match self {
            Source::Access => out.extend(DIMS[..14].iter().copied().chain(DELIVERY_METRICS)),
            Source::Security => out.extend(SECURITY_DIMS),
        }
        out.push("batch");
        out
    }

    /// The column definitions of [`Source::columns`].
    fn definitions(self) -> String {
        self.columns()
            .iter()
            .map(|c| {
                let ty = match *c {
                    "customer" | "ts" => "Int64",
                    "seq" | "batch" => "UInt64",
                    m if DELIVERY_METRICS.contains(&m) => "UInt64",
                    _ => "String",
                };
                format!("{c} {ty}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How one rollup table is fed from one raw source: the materialized view's SELECT, which the repair of a
/// batch also runs over the batch's rows alone.
struct Feed {
    table: String,
    source: Source,
    /// `SELECT … FROM ` up to the source.
    head: String,
    /// After the source: `ARRAY JOIN …` (and the marker when the row has a batch id).
    join: String,
    condition: String,
    group: String,
}

impl Feed {
    fn select(&self, from: &str, extra: &str) -> String {
        format!("{} {from} {} WHERE ({}){extra} GROUP BY {}", self.head, self.join, self.condition, self.group)
    }

    /// The view's name; views of schema version 1 read the raw tables themselves (`mv_`, `mvs_`).
    fn view(&self) -> String {
        match self.source {
            Source::Access => format!("mvi_{}", self.table),
            Source::Security => format!("mvis_{}", self.table),
        }
    }
}

/// Every rollup table's feeds, and the statements that create the rollup tables.
fn feeds(specs: &[Spec], tables: &[String]) -> (Vec<String>, Vec<Feed>) {
    let (mut creates, mut feeds) = (Vec::new(), Vec::new());
    let mut done: Vec<&str> = Vec::new();
    for (spec, table) in specs.iter().zip(tables) {
        if done.contains(&table.as_str()) {
            continue;
        }
        done.push(table);
        let same: Vec<&Spec> = specs.iter().zip(tables).filter(|(_, t)| *t == table).map(|(s, _)| s).collect();
        let mut dim_ids: Vec<usize> = same.iter().flat_map(|s| s.dims.iter().copied()).collect();
        dim_ids.sort_unstable();
        dim_ids.dedup();
        let dims: Vec<&str> = dim_ids.iter().map(|d| DIMS[*d]).collect();
        let masks: Vec<String> = same.iter().map(|s| grouping(s).to_string()).collect();
        let metrics = metric_columns(spec);
        let mut create =
            format!("CREATE TABLE IF NOT EXISTS {table} (customer Int64, day Date, grouping UInt64, bucket Int64");
        for d in &dims {
            let _ = write!(create, ", {} String", col(d));
        }
        for m in metrics {
            let _ = write!(create, ", {m} AggregateFunction(sum, UInt64)");
        }
        let _ = write!(
            create,
            ", first AggregateFunction(min, UInt64)) ENGINE = AggregatingMergeTree PARTITION BY day \
             ORDER BY (customer, grouping, bucket{})",
            dims.iter().map(|d| format!(", {}", col(d))).collect::<String>()
        );
        creates.push(create);
        let step = spec.granularity.millis();
        let bucket = format!("intDiv(ts, {step}) * {step}");
        let group = format!(
            "customer, day, grouping, bucket{}",
            dims.iter().map(|d| format!(", {}", col(d))).collect::<String>()
        );
        // A marker row's bucket is its batch id (below 2^63); its day is its records'.
        let join = format!(
            "ARRAY JOIN if(batch = 0, arrayMap(x -> toUInt64(x), [{0}]), arrayMap(x -> toUInt64(x), [{0}, {MARKER}])) \
             AS grouping",
            masks.join(", ")
        );
        let feed = |source: Source, sums: &str, condition: &str| {
            let mut head = format!(
                "SELECT customer, toDate(intDiv({bucket}, 1000)) AS day, grouping, \
                 if(grouping = {MARKER}, toInt64(batch), {bucket}) AS bucket"
            );
            for (d, id) in dims.iter().zip(&dim_ids) {
                let value = match (source, *d) {
                    (Source::Access, "client_country_code") => "country_code",
                    (Source::Access, "waf_action") => "'ALLOW'",
                    (_, d) => d,
                };
                let _ = write!(head, ", if(bitAnd(grouping, {}) != 0, {value}, '') AS {}", 1u64 << id, col(d));
            }
            let _ = write!(head, ", {sums}, minState(seq) AS first FROM");
            Feed {
                table: table.clone(),
                source,
                head,
                join: join.clone(),
                condition: condition.to_string(),
                group: group.clone(),
            }
        };
        if matches!(spec.kind, Kind::Delivery | Kind::TopKUrl | Kind::RequestTrend) {
            let sums: Vec<String> = metrics.iter().map(|m| format!("sumState({m}) AS {m}")).collect();
            feeds.push(feed(Source::Access, &sums.join(", "), "1"));
        }
        let from_security = match spec.kind {
            Kind::WafTrend | Kind::RequestTrend | Kind::TopK { waf: true, .. } => Some("source = 'waf'"),
            Kind::ShapingTrend | Kind::TopK { waf: false, rate_limited: false } => Some("source != 'waf'"),
            Kind::TopK { waf: false, rate_limited: true } => Some("source != 'waf' AND event_action = 'RATE_LIMIT'"),
            Kind::Delivery | Kind::TopKUrl => None,
        };
        if let Some(condition) = from_security {
            feeds.push(feed(Source::Security, "sumState(toUInt64(1)) AS hits", condition));
        }
    }
    (creates, feeds)
}

/// The statements that create the schema (each idempotent): raw tables, the value dictionary, the kept keys
/// of batches, and each rollup with the materialized view(s) that feed it. Batches are inserted into a Null
/// table per source, whose views write the raw rows and the rollups, so that a repair can write each of them
/// alone. Dropping the views of schema version 1 (on the raw tables) comes last.
fn schema(specs: &[Spec], tables: &[String]) -> Vec<String> {
    let mut out =
        vec!["CREATE TABLE IF NOT EXISTS edge_schema (version UInt32, applied_ms Int64) ENGINE = TinyLog".to_string()];
    for (source, order) in [(Source::Access, "customer, ts"), (Source::Security, "customer, ts, seq")] {
        out.push(format!(
            "CREATE TABLE IF NOT EXISTS {} ({}, day Date MATERIALIZED toDate(intDiv(ts, 1000))) \
             ENGINE = MergeTree PARTITION BY day ORDER BY ({order})",
            source.raw(),
            source.definitions()
        ));
        out.push(format!("CREATE TABLE IF NOT EXISTS {}_in ({}) ENGINE = Null", source.raw(), source.definitions()));
    }
    out.push(
        "CREATE TABLE IF NOT EXISTS dict_in (customer Int64, dim UInt8, value String, seq UInt64) ENGINE = Null".into(),
    );
    out.push(
        "CREATE TABLE IF NOT EXISTS dict (customer Int64, dim UInt8, value String, \
         first AggregateFunction(min, UInt64)) ENGINE = AggregatingMergeTree ORDER BY (customer, dim, value)"
            .into(),
    );
    out.push(
        "CREATE MATERIALIZED VIEW IF NOT EXISTS dict_mv TO dict AS SELECT customer, dim, value, \
         minState(seq) AS first FROM dict_in GROUP BY customer, dim, value"
            .into(),
    );
    out.push(
        "CREATE TABLE IF NOT EXISTS ingest_batches (customer Int64, endpoint UInt8, key String, batch UInt64, \
         at_ms Int64, day Date MATERIALIZED toDate(intDiv(at_ms, 1000))) \
         ENGINE = MergeTree PARTITION BY day ORDER BY (customer, endpoint, key)"
            .into(),
    );
    out.push(
        "CREATE TABLE IF NOT EXISTS ingest_keys (customer Int64, endpoint UInt8, key String, body_hash String, \
         accepted UInt64, at_ms Int64, day Date MATERIALIZED toDate(intDiv(at_ms, 1000))) \
         ENGINE = MergeTree PARTITION BY day ORDER BY (customer, endpoint, key)"
            .into(),
    );
    let (creates, feeds) = feeds(specs, tables);
    out.extend(creates);
    for source in [Source::Access, Source::Security] {
        let columns = source.columns().join(", ");
        out.push(format!(
            // ClickHouse 18.16 expects a view to give the target's MATERIALIZED column too.
            "CREATE MATERIALIZED VIEW IF NOT EXISTS mvi_{0} TO {0} AS SELECT {columns}, toDate(intDiv(ts, 1000)) AS day \
             FROM {0}_in",
            source.raw()
        ));
    }
    for feed in &feeds {
        let from = format!("{}_in", feed.source.raw());
        out.push(format!(
            "CREATE MATERIALIZED VIEW IF NOT EXISTS {} TO {} AS {}",
            feed.view(),
            feed.table,
            feed.select(&from, "")
        ));
    }
    for feed in &feeds {
        let old = match feed.source {
            Source::Access => "mv",
            Source::Security => "mvs",
        };
        out.push(format!("DROP TABLE IF EXISTS {old}_{}", feed.table));
    }
    out
}

#[derive(Deserialize, clickhouse::Row)]
struct OutRow {
    b: i64,
    dims: Vec<String>,
    metrics: Vec<u64>,
}

#[derive(Deserialize, clickhouse::Row)]
struct LandedRow {
    t: String,
    d: String,
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

// RowBinary encoding of inserted rows.
fn put_str(out: &mut Vec<u8>, s: &str) {
    let mut n = s.len();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(s.as_bytes());
}

/// The smallest record index of each value of a column.
fn firsts(c: &Column) -> Vec<u32> {
    let mut first = vec![u32::MAX; c.values.len()];
    for (i, id) in c.ids.iter().enumerate() {
        let slot = &mut first[*id as usize];
        if *slot == u32::MAX {
            *slot = i as u32;
        }
    }
    first
}

impl ClickHouseEngine {
    /// Keeps daily rollups `days` days (None: for ever), as `--stats-daily-retention-days` asks.
    pub fn with_daily_retention(mut self, days: Option<u32>) -> Self {
        self.daily_retention_days = days;
        self
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
        let mut base = clickhouse::Client::default()
            .with_url(&url.http)
            .with_validation(false)
            .with_setting("max_execution_time", QUERY_TIMEOUT.as_secs().to_string());
        if let Some(u) = &url.user {
            base = base.with_user(u);
        }
        if let Some(p) = &url.password {
            base = base.with_password(p);
        }
        let client = base.clone().with_database(&url.database);
        let specs = rollups::all_specs();
        let tables: Vec<String> = specs.iter().map(table_name).collect();
        let feeds = feeds(&specs, &tables).1;
        let engine = ClickHouseEngine {
            feeds,
            client,
            database: url.database.clone(),
            runtime: Some(runtime),
            clock,
            specs,
            tables,
            last_slot: Mutex::new(0),
            daily_retention_days: None,
        };
        let create_db = format!("CREATE DATABASE IF NOT EXISTS {}", url.database);
        engine.block(async move { base.query(&create_db).execute().await }).map_err(anyhow::Error::from)?;
        engine.migrate()?;
        Ok(engine)
    }

    fn migrate(&self) -> anyhow::Result<()> {
        let statements = schema(&self.specs, &self.tables);
        let client = self.client.clone();
        let now = self.clock.now_ms();
        self.block_failure(async move {
            client.query(&statements[0]).execute().await?;
            let version: u32 =
                client.query("SELECT toUInt32(max(version)) FROM edge_schema").fetch_one::<u32>().await?;
            if version > SCHEMA_VERSION {
                return Err(Failure::Internal(anyhow::anyhow!(
                    "the statistics database has schema version {version}, newer than this server's \
                     {SCHEMA_VERSION}; upgrade the server"
                )));
            }
            let mut columns_added = false;
            for s in &statements[1..] {
                // Raw tables of schema version 1 get their batch column before the views that write it.
                if !columns_added && s.starts_with("CREATE MATERIALIZED VIEW IF NOT EXISTS mvi_") {
                    for source in [Source::Access, Source::Security] {
                        let has: u64 = client
                            .query(
                                "SELECT count() FROM system.columns WHERE database = currentDatabase() \
                                 AND table = ? AND name = 'batch'",
                            )
                            .bind(source.raw())
                            .fetch_one::<u64>()
                            .await?;
                        if has == 0 {
                            let alter = format!("ALTER TABLE {} ADD COLUMN batch UInt64", source.raw());
                            client.query(&alter).execute().await?;
                        }
                    }
                    columns_added = true;
                }
                client.query(s).execute().await?;
            }
            if version < SCHEMA_VERSION {
                client
                    .query("INSERT INTO edge_schema (version, applied_ms) VALUES (?, ?)")
                    .bind(SCHEMA_VERSION)
                    .bind(now)
                    .execute()
                    .await?;
            }
            Ok(())
        })
        .map_err(anyhow::Error::from)
        .context("creating the statistics schema")
    }

    /// Runs `fut` on the engine's runtime, from any thread (also one of another runtime), within the timeout.
    fn block<T: Send>(
        &self,
        fut: impl Future<Output = Result<T, clickhouse::error::Error>> + Send,
    ) -> Result<T, Failure> {
        self.block_failure(async move { fut.await.map_err(Failure::from) })
    }

    fn block_failure<T: Send>(&self, fut: impl Future<Output = Result<T, Failure>> + Send) -> Result<T, Failure> {
        let handle = match &self.runtime {
            Some(rt) => rt.handle().clone(),
            None => return Err(Failure::Internal(anyhow::anyhow!("the statistics engine is closed"))),
        };
        std::thread::scope(|s| {
            s.spawn(move || {
                handle.block_on(async move {
                    match tokio::time::timeout(QUERY_TIMEOUT, fut).await {
                        Ok(r) => r,
                        Err(_) => Err(Failure::Unavailable(
                            "The statistics database did not answer in time; try again shortly.".into(),
                        )),
                    }
                })
            })
            .join()
            .unwrap_or_else(|_| Err(Failure::Internal(anyhow::anyhow!("a statistics request panicked"))))
        })
    }

    /// The first sequence number of a batch of `n` records.
    fn sequence(&self, n: usize) -> u64 {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let slots = (n as u64).div_ceil(1 << SEQ_BITS).max(1);
        let mut last = self.last_slot.lock().unwrap_or_else(|e| e.into_inner());
        let slot = now.saturating_sub(SEQ_EPOCH_MS).max(*last + 1);
        *last = slot + slots - 1;
        slot << SEQ_BITS
    }

    /// Dictionary rows of a batch: for each (dimension id, column), each value with the sequence number of the
    /// first record that carries it.
    fn dict_rows(customer: CustomerId, seq: u64, columns: &[(usize, &Column)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (dim, column) in columns {
            for (v, first) in column.values.iter().zip(firsts(column)) {
                out.extend_from_slice(&customer.to_le_bytes());
                out.push(*dim as u8);
                put_str(&mut out, v);
                out.extend_from_slice(&(seq + u64::from(first)).to_le_bytes());
            }
        }
        out
    }

    /// Inserts dictionary rows, then the raw rows (RowBinary, in [`Source::columns`] order) into the source's
    /// Null table, whose views write the raw table and the rollups: each of them one part a day, written
    /// whole or not at all.
    fn insert(&self, dict: Vec<u8>, source: Source, rows: Vec<u8>) -> Result<(), Failure> {
        let client = self.client.clone();
        self.block(async move {
            insert_dict(&client, dict).await?;
            let sql = format!("INSERT INTO {}_in ({}) FORMAT RowBinary", source.raw(), source.columns().join(", "));
            let mut insert = one_block(client.insert_formatted_with(sql));
            insert.send(rows.into()).await?;
            insert.end().await
        })
    }

    /// Stores a batch sent with a key. A batch no attempt has begun (no row in `ingest_batches`, which is
    /// written before anything else of it) is inserted as any batch. One begun before — an attempt cut off
    /// half-way, or one that was stored but not answered — is looked for: only the parts its traces (raw rows
    /// with its batch id, marker rows in the rollup tables) do not show are written, each (table, day) from
    /// the batch's own rows. Then the key is kept. Every step leaves whole parts, so a repair cut off is
    /// repaired by the next retry the same way.
    fn store_keyed(
        &self,
        customer: CustomerId,
        source: Source,
        key: &Keyed,
        batch: u64,
        ts_range: (i64, i64),
        (dict, rows, records): (Vec<u8>, Vec<u8>, usize),
    ) -> Result<(), Failure> {
        let client = self.client.clone();
        let (endpoint, key_text, now) = (key.endpoint.code(), key.key.clone(), self.clock.now_ms());
        let begun = self.block(async move {
            let begun = client
                .query(
                    "SELECT count() FROM ingest_batches WHERE customer = ? AND endpoint = ? AND key = ? AND batch = ?",
                )
                .bind(customer)
                .bind(endpoint)
                .bind(&key_text)
                .bind(batch)
                .fetch_one::<u64>()
                .await?;
            if begun == 0 {
                // Acknowledged before the batch's insert starts: without this row, nothing of the batch exists.
                client
                    .query("INSERT INTO ingest_batches (customer, endpoint, key, batch, at_ms) VALUES (?, ?, ?, ?, ?)")
                    .bind(customer)
                    .bind(endpoint)
                    .bind(&key_text)
                    .bind(batch)
                    .bind(now)
                    .execute()
                    .await?;
            }
            Ok(begun > 0)
        })?;
        let landed = if begun { self.landed(customer, source, batch, ts_range)? } else { Vec::new() };
        if landed.is_empty() {
            self.insert(dict, source, rows)?;
        } else {
            tracing::warn!(
                customer,
                key = %key.key,
                parts = landed.len(),
                "statistics: a batch's earlier attempt left parts in ClickHouse; writing the rest"
            );
            self.repair(customer, source, batch, dict, rows, &landed)?;
        }
        let client = self.client.clone();
        let (endpoint, key_text, hash) = (key.endpoint.code(), key.key.clone(), hex::encode(key.body_hash));
        let now = self.clock.now_ms();
        self.block(async move {
            client
                .query(
                    "INSERT INTO ingest_keys (customer, endpoint, key, body_hash, accepted, at_ms) \
                     VALUES (?, ?, ?, ?, ?, ?)",
                )
                .bind(customer)
                .bind(endpoint)
                .bind(key_text)
                .bind(hash)
                .bind(records as u64)
                .bind(now)
                .execute()
                .await
        })
    }

    /// The (table, day) parts a batch left: raw rows with its id, and the days of each rollup table with its
    /// marker.
    fn landed(
        &self,
        customer: CustomerId,
        source: Source,
        batch: u64,
        (from, to): (i64, i64),
    ) -> Result<Vec<(String, String)>, Failure> {
        let mut sql = Sql::default();
        sql.push("SELECT '").push(source.raw()).push("' AS t, toString(day) AS d FROM ").push(source.raw());
        sql.push(" WHERE customer = ").int(customer).push(" AND ts >= ").int(from).push(" AND ts <= ").int(to);
        sql.push(" AND batch = ").unsigned(batch).push(" GROUP BY day");
        for feed in self.feeds.iter().filter(|f| f.source == source) {
            sql.push(" UNION ALL SELECT '")
                .push(&feed.table)
                .push("' AS t, toString(day) AS d FROM ")
                .push(&feed.table);
            let _ = write!(sql.text, " WHERE customer = ");
            sql.int(customer).push(" AND grouping = ").unsigned(MARKER).push(" AND bucket = ").int(batch as i64);
            sql.push(" GROUP BY day");
        }
        let query = bind(self.client.query(&sql.text), sql.args);
        let rows = self.block(async move { query.fetch_all::<LandedRow>().await })?;
        Ok(rows.into_iter().map(|r| (r.t, r.d)).collect())
    }

    /// Writes what an earlier attempt of a batch did not leave: its rows go to a scratch table, from which
    /// each target (the raw table, every rollup table the source feeds) gets the days it lacks.
    fn repair(
        &self,
        customer: CustomerId,
        source: Source,
        batch: u64,
        dict: Vec<u8>,
        rows: Vec<u8>,
        landed: &[(String, String)],
    ) -> Result<(), Failure> {
        let scratch = format!("repair_{customer}_{batch}").replace('-', "n");
        let columns = source.columns().join(", ");
        let lacking = |table: &str| -> Sql {
            let days: Vec<&String> = landed.iter().filter(|(t, _)| t == table).map(|(_, d)| d).collect();
            let mut sql = Sql::default();
            if !days.is_empty() {
                sql.push(" AND toString(toDate(intDiv(ts, 1000))) NOT IN (");
                for (i, d) in days.into_iter().enumerate() {
                    sql.push(if i > 0 { ", " } else { "" }).text(d);
                }
                sql.push(")");
            }
            sql
        };
        let mut statements: Vec<Sql> = Vec::new();
        let mut raw = Sql::default();
        raw.push(&format!("INSERT INTO {} ({columns}) SELECT {columns} FROM {scratch} WHERE 1", source.raw()));
        raw.append(lacking(source.raw()));
        statements.push(raw);
        for feed in self.feeds.iter().filter(|f| f.source == source) {
            let extra = lacking(&feed.table);
            let mut sql = Sql::default();
            let text = feed.select(&scratch, &extra.text);
            sql.push(&format!("INSERT INTO {} ", feed.table)).push(&text);
            sql.args = extra.args;
            statements.push(sql);
        }
        let client = self.client.clone();
        let definitions = source.definitions();
        self.block(async move {
            client.query(&format!("DROP TABLE IF EXISTS {scratch}")).execute().await?;
            client.query(&format!("CREATE TABLE {scratch} ({definitions}) ENGINE = Memory")).execute().await?;
            let mut insert =
                client.insert_formatted_with(format!("INSERT INTO {scratch} ({columns}) FORMAT RowBinary"));
            insert.send(rows.into()).await?;
            insert.end().await?;
            insert_dict(&client, dict).await?;
            for sql in statements {
                one_block_query(bind(client.query(&sql.text), sql.args)).execute().await?;
            }
            client.query(&format!("DROP TABLE IF EXISTS {scratch}")).execute().await
        })
    }

    fn fetch_rows(&self, sql: Sql) -> Result<Vec<OutRow>, Failure> {
        let query = bind(self.client.query(&sql.text), sql.args);
        self.block(async move { query.fetch_all::<OutRow>().await })
    }

    fn count(&self, sql: Sql) -> Result<u64, Failure> {
        let query = bind(self.client.query(&sql.text), sql.args);
        self.block(async move { query.fetch_one::<u64>().await })
    }
}

async fn insert_dict(client: &clickhouse::Client, dict: Vec<u8>) -> Result<(), clickhouse::error::Error> {
    let mut insert = client.insert_formatted_with("INSERT INTO dict_in (customer, dim, value, seq) FORMAT RowBinary");
    insert.send(dict.into()).await?;
    insert.end().await
}

/// Settings under which an insert, and each view it feeds, writes one block — one part per partition (day),
/// each whole or not at all — however many rows it has: rows are read and squashed into one block, and
/// aggregation stays single-level (two-level aggregation answers in 256 blocks).
const ONE_BLOCK: [(&str, &str); 5] = [
    ("max_insert_block_size", "4294967295"),
    ("min_insert_block_size_rows", "4294967295"),
    ("min_insert_block_size_bytes", "1099511627776"),
    ("group_by_two_level_threshold", "0"),
    ("group_by_two_level_threshold_bytes", "0"),
];

fn one_block(
    mut insert: clickhouse::insert_formatted::InsertFormatted,
) -> clickhouse::insert_formatted::InsertFormatted {
    for (name, value) in ONE_BLOCK {
        insert = insert.with_setting(name, value);
    }
    insert
}

fn one_block_query(mut query: clickhouse::query::Query) -> clickhouse::query::Query {
    for (name, value) in ONE_BLOCK {
        query = query.with_setting(name, value);
    }
    query
}

/// The id of a batch sent with a key, the same for every attempt of it: from the customer, the endpoint, the
/// key and the body, below 2^63 (a marker row's bucket) and never 0 (a batch without a key).
fn batch_id(customer: CustomerId, key: &Keyed) -> u64 {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    h.update(customer.to_le_bytes());
    h.update([key.endpoint.code()]);
    h.update((key.key.len() as u64).to_le_bytes());
    h.update(key.key.as_bytes());
    h.update(key.body_hash);
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_le_bytes(first) >> 1) | 1
}

fn bind(mut q: clickhouse::query::Query, args: Vec<Arg>) -> clickhouse::query::Query {
    for a in args {
        q = match a {
            Arg::Text(s) => q.bind(s),
            Arg::Int(i) => q.bind(i),
            Arg::Unsigned(u) => q.bind(u),
        };
    }
    q
}

/// A filter as SQL over columns named after the dimensions, the embedded engine's rules ([`Conditions`]): a
/// value never stored matches nothing (`==`) or everything (`!=`).
fn filter_sql(
    filter: &Filter,
    customer: &str,
    has: impl Fn(&str) -> bool,
    column: impl Fn(&str) -> String,
) -> Result<Sql, QueryError> {
    let conditions = Conditions::of(filter, customer, |d, equal, value| {
        has(DIMS[d]).then(|| {
            let mut sql = Sql::default();
            sql.push(&column(DIMS[d])).push(if equal { " = " } else { " != " }).text(&value);
            sql
        })
    })?;
    let joined = |tests: Vec<Sql>, join: &str| {
        let mut sql = Sql::default();
        sql.push("(");
        for (i, test) in tests.into_iter().enumerate() {
            sql.push(if i > 0 { join } else { "" }).append(test);
        }
        sql.push(")");
        sql
    };
    let mut out = Sql::default();
    match conditions {
        Conditions::Nothing => out.push("0"),
        Conditions::Everything => out.push("1"),
        Conditions::All(tests) => out.append(joined(tests, " AND ")),
        Conditions::Any(tests) => out.append(joined(tests, " OR ")),
    };
    Ok(out)
}

/// The ascending value order of a dimension: numeric for integer dimensions.
fn value_order(dim: &str, column: &str) -> String {
    if is_int(dim) { format!("toInt64OrZero({column})") } else { column.to_string() }
}

fn cell(dim: &str, v: &str) -> Cell {
    if is_int(dim) { Cell::Int(v.parse().unwrap_or(0)) } else { Cell::Text(Arc::from(v)) }
}

impl ClickHouseEngine {
    fn query_rollups(&self, customer: CustomerId, name: &str, q: &Query) -> Result<Answer, QueryError> {
        let target = Target::of(&self.specs, q, self.clock.now_ms())?;
        let (granularity, whole_range, index, aggregate) =
            (target.granularity, target.whole_range, target.spec, target.aggregate);
        // The dimensions held in rollups, in the query's order (`customer` is the tenant), and their columns.
        let stored: Vec<&str> = target.stored.iter().map(|(_, id)| DIMS[*id]).collect();
        let dim_ids = target.dim_ids();
        let columns_of: Vec<String> = stored.iter().map(|d| col(d)).collect();
        let spec = &self.specs[index];
        let table = &self.tables[index];
        let filter = filter_sql(&q.filter, name, |d| dim_id(d).is_some_and(|id| spec.dims.contains(&id)), col)?;
        let metric_cols: Vec<&str> = q
            .metrics
            .iter()
            .map(
                |m| if spec.metrics == METRICS { DELIVERY_METRICS[rollups::metric_index(q.family, m)] } else { "hits" },
            )
            .collect();

        // One row a bucket (or one for the whole range) and combination of the query's dimensions.
        let mut inner = Sql::default();
        inner.push(if whole_range { "SELECT toInt64(0) AS b" } else { "SELECT bucket AS b" });
        for c in &columns_of {
            inner.push(", ").push(c);
        }
        for (i, m) in metric_cols.iter().enumerate() {
            let _ = write!(inner.text, ", sumMerge({m}) AS x{i}");
        }
        let _ = write!(inner.text, ", sumMerge(hits) AS h, minMerge(first) AS f FROM {table} WHERE customer = ");
        inner
            .int(customer)
            .push(" AND grouping = ")
            .unsigned(grouping(spec))
            .push(" AND bucket >= ")
            .int(q.start_ms)
            .push(" AND bucket < ")
            .int(q.end_ms);
        inner.push(" AND ").append(filter);
        inner.push(" GROUP BY b");
        for c in &columns_of {
            inner.push(", ").push(c);
        }

        // Ties: in the embedded engine's row order (the order rows were first seen) when the answer is the
        // rollup's own rows, else by bucket and the order each value was first seen.
        let by_values = aggregate || whole_range;
        let mut source = Sql::default();
        let mut tie = vec!["b".to_string()];
        if by_values {
            let mut current = Sql::default();
            current.push("(").append(inner.clone()).push(")");
            for (i, (id, c)) in dim_ids.iter().zip(&columns_of).enumerate() {
                let mut next = Sql::default();
                next.push("(SELECT * FROM ").append(current);
                let _ = write!(
                    next.text,
                    " ANY LEFT JOIN (SELECT value AS {c}, minMerge(first) AS o{i} FROM dict WHERE customer = "
                );
                next.int(customer).push(" AND dim = ").unsigned(*id as u64);
                let _ = write!(next.text, " GROUP BY value) USING {c})");
                current = next;
                tie.push(format!("o{i}"));
            }
            source = current;
        } else {
            source.push("(").append(inner.clone()).push(")");
            tie.push("f".into());
        }

        let mut order: Vec<String> = Vec::new();
        let per_day = q.family == Family::TopKUrl;
        if per_day {
            order.push("b".into());
            order.push("h DESC".into());
        } else {
            for s in q.sortby.iter().take(6) {
                let dir = if s.descending { " DESC" } else { "" };
                let key = if s.field == "starttime" || s.field == "endtime" {
                    Some("b".to_string())
                } else if let Some(i) = q.metrics.iter().position(|m| *m == s.field) {
                    Some(format!("x{i}"))
                } else {
                    // A dimension: the query's, else (as the embedded engine does) its first stored one.
                    let d = stored.iter().find(|d| **d == s.field).or(stored.first());
                    d.map(|d| value_order(d, &col(d)))
                };
                if let Some(k) = key {
                    order.push(format!("{k}{dir}"));
                }
            }
        }
        order.extend(tie);

        let mut sql = Sql::default();
        sql.push("SELECT b, ");
        if stored.is_empty() {
            sql.push("emptyArrayString()");
        } else {
            sql.push("[").push(&columns_of.join(", ")).push("]");
        }
        sql.push(" AS dims, ");
        if metric_cols.is_empty() {
            sql.push("emptyArrayUInt64()");
        } else {
            let xs: Vec<String> = (0..metric_cols.len()).map(|i| format!("x{i}")).collect();
            sql.push("[").push(&xs.join(", ")).push("]");
        }
        sql.push(" AS metrics FROM ").append(source).push(" ORDER BY ").push(&order.join(", "));
        let total;
        let rows = if per_day {
            let _ = write!(sql.text, " LIMIT {TOPK_URL_PER_DAY} BY b");
            let rows = self.fetch_rows(sql)?;
            total = rows.len() as u64;
            rows
        } else {
            sql.push(" LIMIT ").unsigned(q.start).push(", ").unsigned(q.limit);
            let mut count = Sql::default();
            count.push("SELECT count() FROM (").append(inner).push(")");
            total = self.count(count)?;
            self.fetch_rows(sql)?
        };

        let with_time = !whole_range;
        let step = granularity.millis();
        let columns = rollups::answer_columns(q, with_time);
        let customer_cell: Arc<str> = Arc::from(name);
        let rows = rows
            .into_iter()
            .map(|row| {
                let mut cells = Vec::with_capacity(columns.len());
                if with_time {
                    cells.push(Cell::Time(row.b));
                    cells.push(Cell::Time(row.b + step));
                }
                let mut values = row.dims.iter();
                for d in &q.dimensions {
                    if d == "customer" {
                        cells.push(Cell::Text(customer_cell.clone()));
                    } else {
                        cells.push(cell(d, values.next().map_or("", String::as_str)));
                    }
                }
                cells.extend(row.metrics.iter().map(|m| Cell::Int(*m as i64)));
                cells
            })
            .collect();
        Ok(Answer { columns, rows, total })
    }

    fn query_events(&self, customer: CustomerId, name: &str, q: &Query) -> Result<Answer, QueryError> {
        let held = |d: &str| SECURITY_DIMS.contains(&d);
        let filter = filter_sql(&q.filter, name, held, str::to_string)?;
        let stored: Vec<&str> = q.dimensions.iter().map(String::as_str).filter(|d| held(d)).collect();
        let mut base = Sql::default();
        base.push(" FROM security WHERE customer = ").int(customer);
        base.push(" AND ts >= ").int(q.start_ms).push(" AND ts < ").int(q.end_ms).push(" AND ").append(filter);
        let mut order: Vec<String> = q
            .sortby
            .iter()
            .take(6)
            .map(|s| {
                let dir = if s.descending { " DESC" } else { "" };
                if held(&s.field) && q.dimensions.contains(&s.field) {
                    format!("{}{dir}", value_order(&s.field, &s.field))
                } else {
                    format!("ts{dir}")
                }
            })
            .collect();
        // Unsorted or newest first alone: by time, arrival breaking ties the same way; else ties by time then
        // arrival.
        if order.len() == 1 && order[0] == "ts DESC" && q.sortby.len() == 1 {
            order.push("seq DESC".into());
        } else {
            order.push("ts".into());
            order.push("seq".into());
        }
        let mut sql = Sql::default();
        sql.push("SELECT ts AS b, ");
        if stored.is_empty() {
            sql.push("emptyArrayString()");
        } else {
            sql.push("[").push(&stored.join(", ")).push("]");
        }
        sql.push(" AS dims, emptyArrayUInt64() AS metrics").append(base.clone());
        sql.push(" ORDER BY ").push(&order.join(", "));
        sql.push(" LIMIT ").unsigned(q.start).push(", ").unsigned(q.limit);
        let mut count = Sql::default();
        count.push("SELECT count()").append(base);
        let total = self.count(count)?;
        let rows = self.fetch_rows(sql)?;
        let customer_cell: Arc<str> = Arc::from(name);
        let columns = q.dimensions.iter().map(|d| (d.clone(), is_int(d))).collect();
        let rows = rows
            .into_iter()
            .map(|row| {
                let mut values = row.dims.iter();
                q.dimensions
                    .iter()
                    .map(|d| match d.as_str() {
                        "event_timestamp_ms" => Cell::Time(row.b),
                        "customer" => Cell::Text(customer_cell.clone()),
                        d if held(d) => cell(d, values.next().map_or("", String::as_str)),
                        _ => Cell::Text(Arc::from("")),
                    })
                    .collect()
            })
            .collect();
        Ok(Answer { columns, rows, total })
    }
}

impl ClickHouseEngine {
    /// Stores an access batch (with its key, if it has one).
    fn store_access(
        &self,
        customer: CustomerId,
        batch: &AccessBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        let n = batch.len();
        if n == 0 {
            return Ok(Stored::default());
        }
        // In time order, as the embedded engine takes it: the records' places are when values were first seen.
        let sorted = batch.by_time();
        let batch = sorted.as_ref().unwrap_or(batch);
        let seq = self.sequence(n);
        let id = key.map_or(0, |k| batch_id(customer, k));
        let allow = Column { values: vec!["ALLOW".into()], ids: vec![0] };
        let mut columns: Vec<(usize, &Column)> = batch.dims.iter().enumerate().collect();
        columns.push((dim_id("client_country_code").unwrap_or(0), &batch.dims[4]));
        columns.push((dim_id("waf_action").unwrap_or(0), &allow));
        let dict = Self::dict_rows(customer, seq, &columns);
        let mut rows = Vec::with_capacity(n * 168);
        for i in 0..n {
            rows.extend_from_slice(&customer.to_le_bytes());
            rows.extend_from_slice(&batch.ts_ms[i].to_le_bytes());
            rows.extend_from_slice(&(seq + i as u64).to_le_bytes());
            for c in &batch.dims {
                put_str(&mut rows, c.value(i));
            }
            for m in &batch.metrics {
                rows.extend_from_slice(&m[i].to_le_bytes());
            }
            rows.extend_from_slice(&id.to_le_bytes());
        }
        let range = (batch.ts_ms[0], batch.ts_ms[n - 1]);
        match key {
            None => self.insert(dict, Source::Access, rows)?,
            Some(key) => self.store_keyed(customer, Source::Access, key, id, range, (dict, rows, n))?,
        }
        Ok(Stored::default())
    }

    fn store_security(
        &self,
        customer: CustomerId,
        batch: &SecurityBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        let n = batch.len();
        if n == 0 {
            return Ok(Stored::default());
        }
        let sorted = batch.by_time();
        let batch = sorted.as_ref().unwrap_or(batch);
        let seq = self.sequence(n);
        let id = key.map_or(0, |k| batch_id(customer, k));
        let columns: Vec<(usize, &Column)> =
            batch.dims.iter().enumerate().map(|(i, c)| (dim_id(SECURITY_DIMS[i]).unwrap_or(0), c)).collect();
        let dict = Self::dict_rows(customer, seq, &columns);
        let mut rows = Vec::with_capacity(n * 128);
        for i in 0..n {
            rows.extend_from_slice(&customer.to_le_bytes());
            rows.extend_from_slice(&batch.ts_ms[i].to_le_bytes());
            rows.extend_from_slice(&(seq + i as u64).to_le_bytes());
            for c in &batch.dims {
                put_str(&mut rows, c.value(i));
            }
            rows.extend_from_slice(&id.to_le_bytes());
        }
        let range = (batch.ts_ms[0], batch.ts_ms[n - 1]);
        match key {
            None => self.insert(dict, Source::Security, rows)?,
            Some(key) => self.store_keyed(customer, Source::Security, key, id, range, (dict, rows, n))?,
        }
        Ok(Stored::default())
    }
}

impl StatsEngine for ClickHouseEngine {
    fn ingest_access(&self, customer: CustomerId, batch: &AccessBatch) -> Result<Stored, IngestError> {
        self.store_access(customer, batch, None)
    }

    fn ingest_security(&self, customer: CustomerId, batch: &SecurityBatch) -> Result<Stored, IngestError> {
        self.store_security(customer, batch, None)
    }

    fn ingest_access_keyed(
        &self,
        customer: CustomerId,
        batch: &AccessBatch,
        key: &Keyed,
    ) -> Result<Stored, IngestError> {
        self.store_access(customer, batch, Some(key))
    }

    fn ingest_security_keyed(
        &self,
        customer: CustomerId,
        batch: &SecurityBatch,
        key: &Keyed,
    ) -> Result<Stored, IngestError> {
        self.store_security(customer, batch, Some(key))
    }

    fn kept(&self, customer: CustomerId, endpoint: Endpoint, key: &str) -> Result<Option<Kept>, IngestError> {
        let query = self
            .client
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
        if query.family == Family::Events {
            self.query_events(customer, customer_name, query)
        } else {
            self.query_rollups(customer, customer_name, query)
        }
    }

    /// Drops the day partitions wholly older than each table's retention: rollups as their granularity keeps
    /// them, raw access records as long as 5-minute rollups, raw security events the previous three days.
    fn enforce_retention(&self, now_ms: i64) -> anyhow::Result<()> {
        let client = self.client.clone();
        let database = self.database.clone();
        let parts = self.block(async move {
            client
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
            let client = self.client.clone();
            self.block(async move { client.query(&sql).bind(p.partition).execute().await })?;
        }
        Ok(())
    }

    fn checkpoint(&self) -> anyhow::Result<()> {
        Ok(())
    }

    fn log_bytes(&self) -> u64 {
        0
    }

    /// ClickHouse answers a trivial query within the readiness timeout (an engine in another process: killed,
    /// stopped or out of reach makes this replica not ready).
    fn ready(&self) -> anyhow::Result<()> {
        let query = self.client.query("SELECT toUInt64(1)");
        // Well within /readyz's own wait, so that checks every second never pile up blocked threads.
        let probe = async move {
            match tokio::time::timeout(READY_TIMEOUT, query.fetch_one::<u64>()).await {
                Ok(answer) => answer.map_err(Failure::from),
                Err(_) => Err(Failure::Unavailable(format!("no answer within {READY_TIMEOUT:?}"))),
            }
        };
        match self.block_failure(probe) {
            Ok(_) => Ok(()),
            Err(Failure::Unavailable(m)) => anyhow::bail!("ClickHouse does not answer: {m}"),
            Err(Failure::Internal(e)) => Err(e.context("ClickHouse does not answer")),
        }
    }

    fn footprint(&self) -> Footprint {
        let client = self.client.clone();
        let database = self.database.clone();
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
        let mut f = Footprint::default();
        for s in sizes.unwrap_or_default() {
            f.bytes += s.bytes;
            match s.table.as_str() {
                "security" => f.event_rows += s.rows,
                "access" | "dict" => {}
                _ => f.rollup_rows += s.rows,
            }
        }
        f
    }
}
