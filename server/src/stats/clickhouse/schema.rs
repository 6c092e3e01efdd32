//! The schema: raw tables, the value dictionary, kept keys, and per kind and granularity one rollup table fed
//! by materialized views (their SELECTs, which a repair runs too); created and migrated at start.

use std::fmt::Write as _;

use anyhow::Context;
use edge_api::stats::DELIVERY_METRICS;

use super::{
    super::{
        DIMS,
        ingest::SECURITY_DIMS,
        rollups::{self, Kind, METRICS, Spec},
    },
    ClickHouseEngine, Failure,
};

/// The schema this version writes and reads; kept in the `edge_schema` table.
/// 2: batches go through Null tables (`access_in`, `security_in`) whose views write the raw rows (with a
/// batch id) and the rollups (with a marker row per batch with a key and day), and kept keys (`ingest_keys`).
/// 3: the same tables; the server writes the raw rows and the rollups' rows (summed, as aggregate states)
/// itself, and only the rollups that stand for others ([`stand_ins`]): a server of version 2 would miss the
/// rows of the others, so it refuses a database of version 3. The views of version 2 stay, so that a replica
/// of version 2 still running during an upgrade writes everything; nothing of version 3 inserts into their
/// Null tables.
/// 4: the rollup tables are ordered by a hash of their dimensions' values (`key_hash`, written by the server,
/// computed by ClickHouse for rows of the views) before the values; a database of an older version is moved
/// at start ([`rekey`]).
pub const SCHEMA_VERSION: u32 = 4;

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
pub(super) fn table_name(spec: &Spec) -> String {
    format!("{}_{}", kind_name(spec.kind), spec.granularity.as_str())
}

/// A grouping set as a number: one bit per dimension id (stable whatever other sets are added).
pub(super) fn grouping(spec: &Spec) -> u64 {
    spec.dims.iter().fold(0u64, |m, d| m | (1 << d))
}

/// The column of a dimension in a rollup table.
pub(super) fn col(dim: &str) -> String {
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
pub(super) const MARKER: u64 = 1 << 63;

/// A rollup table as the server writes it: its dimension columns (dimension ids, ascending) and metric
/// columns.
pub(super) struct Table {
    pub(super) name: String,
    pub(super) dims: Vec<usize>,
    pub(super) metrics: &'static [&'static str],
}

impl Table {
    /// The columns an insert of the server's rows names, in the order of [`super::insert`]'s RowBinary.
    pub(super) fn columns(&self) -> String {
        let mut out = String::from("customer, day, grouping, bucket, key_hash");
        for d in &self.dims {
            let _ = write!(out, ", {}", col(DIMS[*d]));
        }
        for m in self.metrics {
            let _ = write!(out, ", {m}");
        }
        out.push_str(", first");
        out
    }

    /// How [`super::insert`] lays out its rows: customer, day, grouping, bucket and the key's hash, the
    /// dimensions' values, then a sum a metric and the first record (a flag byte and a sequence number).
    pub(super) fn layout(&self) -> Layout {
        Layout { head: 8 + 2 + 8 + 8 + 4, texts: self.dims.len(), tail: 8 * self.metrics.len() + 1 + 8 }
    }
}

/// RowBinary's encoding of a string: its length (unsigned LEB128), then its bytes.
pub(super) fn put_str(out: &mut Vec<u8>, s: &str) {
    let mut n = s.len();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(s.as_bytes());
}

/// How the server lays out a table's rows in RowBinary: `head` bytes of numbers, `texts` strings (a length and
/// bytes each), `tail` bytes of numbers. A rollup row's key is its head and texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) head: usize,
    pub(super) texts: usize,
    pub(super) tail: usize,
}

/// The distinct rollup tables of `specs` (whose tables are `tables`), and the index of each spec's.
pub(super) fn layout(specs: &[Spec], tables: &[String]) -> (Vec<Table>, Vec<usize>) {
    let mut out: Vec<Table> = Vec::new();
    let mut of_spec = Vec::with_capacity(specs.len());
    for (spec, table) in specs.iter().zip(tables) {
        let at = match out.iter().position(|t| t.name == *table) {
            Some(at) => at,
            None => {
                out.push(Table { name: table.clone(), dims: Vec::new(), metrics: metric_columns(spec) });
                out.len() - 1
            }
        };
        out[at].dims.extend(spec.dims.iter().copied());
        out[at].dims.sort_unstable();
        out[at].dims.dedup();
        of_spec.push(at);
    }
    (out, of_spec)
}

/// The rollup whose rows stand for each spec's (see [`rollups::stand_ins`]), among the rollups of its table: only
/// those are written; a query of another sums its stand-in's rows at query time — the same sums, and the same
/// first record (the smallest of the rows summed), so the same answer in the same order.
pub(super) fn stand_ins(specs: &[Spec], tables: &[String]) -> Vec<usize> {
    rollups::stand_ins(specs, |a, b| tables[a] == tables[b])
}

/// Which raw table feeds a rollup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    Access,
    Security,
}

impl Source {
    pub(super) fn raw(self) -> &'static str {
        match self {
            Source::Access => "access",
            Source::Security => "security",
        }
    }

    /// The raw columns as inserted (`day` is computed from `ts`).
    pub(super) fn columns(self) -> Vec<&'static str> {
        let mut out = vec!["customer", "ts", "seq"];
        match self {
            Source::Access => out.extend(DIMS[..14].iter().copied().chain(DELIVERY_METRICS)),
            Source::Security => out.extend(SECURITY_DIMS),
        }
        out.push("batch");
        out
    }

    /// How [`super::insert`] lays out its raw rows ([`Source::columns`]): customer, ts and seq, the
    /// dimensions' values, then the metrics (access) and the batch id.
    pub(super) fn layout(self) -> Layout {
        let columns = self.columns();
        let metrics = columns.iter().filter(|c| DELIVERY_METRICS.contains(c)).count();
        Layout { head: 8 + 8 + 8, texts: columns.len() - 4 - metrics, tail: 8 * metrics + 8 }
    }

    /// The column definitions of [`Source::columns`].
    pub(super) fn definitions(self) -> String {
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
pub(super) struct Feed {
    pub(super) table: String,
    pub(super) source: Source,
    /// `SELECT … FROM ` up to the source.
    head: String,
    /// After the source: `ARRAY JOIN …` (and the marker when the row has a batch id).
    join: String,
    condition: String,
    group: String,
}

impl Feed {
    pub(super) fn select(&self, from: &str, extra: &str) -> String {
        format!("{} {from} {} WHERE ({}){extra} GROUP BY {}", self.head, self.join, self.condition, self.group)
    }

    fn view(&self) -> String {
        view_name(self.source, &self.table)
    }
}

/// The name of the view feeding a rollup table from a source's Null table; views of schema version 1 read the
/// raw tables themselves (`mv_`, `mvs_`).
fn view_name(source: Source, table: &str) -> String {
    match source {
        Source::Access => format!("mvi_{table}"),
        Source::Security => format!("mvis_{table}"),
    }
}

/// The names of both sources' views of a rollup table (a table has one or both).
fn views_of(table: &str) -> [String; 2] {
    [view_name(Source::Access, table), view_name(Source::Security, table)]
}

/// A rollup table's definition: `CREATE TABLE {table} {body}`.
pub(super) struct Create {
    pub(super) table: String,
    body: String,
}

impl Create {
    fn statement(&self, name: &str) -> String {
        format!("CREATE TABLE IF NOT EXISTS {name} {}", self.body)
    }
}

/// The expression ClickHouse computes a rollup row's key hash (`key_hash`) with from its dimension columns, for
/// rows the server does not write itself (the views of version 2, rows copied from a table of version 3). It
/// need not be the server's hash: the hash only orders a table's rows (before the values themselves, which
/// tell keys apart), so rows of the same key with other hashes are only not merged together by ClickHouse,
/// and every query sums the rows of a key anyway.
fn key_hash(dims: &[&str]) -> String {
    if dims.is_empty() {
        return "toUInt32(0)".into();
    }
    let columns = dims.iter().map(|d| col(d)).collect::<Vec<_>>().join(", ");
    format!("toUInt32(sipHash64({columns}) % 4294967296)")
}

/// Every rollup table's feeds, and the definitions of the rollup tables.
pub(super) fn feeds(specs: &[Spec], tables: &[String]) -> (Vec<Create>, Vec<Feed>) {
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
        let hash = key_hash(&dims);
        let mut body = String::from("(customer Int64, day Date, grouping UInt64, bucket Int64");
        for d in &dims {
            let _ = write!(body, ", {} String", col(d));
        }
        let _ = write!(body, ", key_hash UInt32 DEFAULT {hash}");
        for m in metrics {
            let _ = write!(body, ", {m} AggregateFunction(sum, UInt64)");
        }
        let _ = write!(
            body,
            ", first AggregateFunction(min, UInt64)) ENGINE = AggregatingMergeTree PARTITION BY day \
             ORDER BY (customer, grouping, bucket, key_hash{})",
            dims.iter().map(|d| format!(", {}", col(d))).collect::<String>()
        );
        creates.push(Create { table: table.clone(), body });
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
            let _ = write!(head, ", {hash} AS key_hash, {sums}, minState(seq) AS first FROM");
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
/// of batches, and each rollup with the materialized view(s) of version 2 that feed it from a Null table per
/// source (which this version does not insert into; see [`SCHEMA_VERSION`]). Dropping the views of schema
/// version 1 (on the raw tables) comes last.
fn schema(creates: &[Create], feeds: &[Feed]) -> Vec<String> {
    let mut out =
        // MergeTree, not TinyLog: replicas starting together on a database write it at once (the TinyLog table of
        // a database made before is replaced, see `versions_off_tiny_log`).
        vec!["CREATE TABLE IF NOT EXISTS edge_schema (version UInt32, applied_ms Int64) ENGINE = MergeTree ORDER BY version"
            .to_string()];
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
    out.extend(creates.iter().map(|c| c.statement(&c.table)));
    for source in [Source::Access, Source::Security] {
        let columns = source.columns().join(", ");
        out.push(format!(
            // ClickHouse 18.16 expects a view to give the target's MATERIALIZED column too.
            "CREATE MATERIALIZED VIEW IF NOT EXISTS mvi_{0} TO {0} AS SELECT {columns}, toDate(intDiv(ts, 1000)) AS day \
             FROM {0}_in",
            source.raw()
        ));
    }
    for feed in feeds {
        let from = format!("{}_in", feed.source.raw());
        out.push(format!(
            "CREATE MATERIALIZED VIEW IF NOT EXISTS {} TO {} AS {}",
            feed.view(),
            feed.table,
            feed.select(&from, "")
        ));
    }
    for feed in feeds {
        let old = match feed.source {
            Source::Access => "mv",
            Source::Security => "mvs",
        };
        out.push(format!("DROP TABLE IF EXISTS {old}_{}", feed.table));
    }
    out
}

impl ClickHouseEngine {
    /// Creates or migrates the schema of one shard. The version is recorded first, so that a server of an
    /// older version starting meanwhile refuses the database; then the rollup tables of version 3 or before
    /// are moved to version 4's key ([`rekey`], with no time limit: it copies their rows), then every other
    /// statement (each idempotent) runs.
    pub(super) fn migrate(&self, client: &clickhouse::Client) -> anyhow::Result<()> {
        let (creates, feeds) = feeds(&self.specs, &self.tables);
        let statements = schema(&creates, &feeds);
        let now = self.clock.now_ms();
        let first = client.clone();
        let create_versions = statements[0].clone();
        self.block_failure(async move { record_version(&first, &create_versions, now).await })
            .map_err(anyhow::Error::from)
            .context("checking the statistics schema's version")?;
        let pending = {
            let client = client.clone();
            let tables: Vec<String> = creates.iter().map(|c| c.table.clone()).collect();
            self.block_failure(async move { to_rekey(&client, &tables).await })
                .map_err(anyhow::Error::from)
                .context("listing the statistics tables")?
        };
        for create in creates.iter().filter(|c| pending.contains(&c.table)) {
            let client = client.clone();
            self.block_within(MIGRATION_TIMEOUT, async move { rekey(&client, create).await })
                .map_err(anyhow::Error::from)
                .with_context(|| format!("moving the statistics table {} to schema version 4", create.table))?;
        }
        let client = client.clone();
        self.block_failure(async move {
            let mut columns_added = false;
            for s in &statements[1..] {
                // Raw tables of schema version 1 get their batch column before the views that write it.
                if !columns_added && s.starts_with("CREATE MATERIALIZED VIEW IF NOT EXISTS mvi_") {
                    for source in [Source::Access, Source::Security] {
                        if !has_column(&client, source.raw(), "batch").await? {
                            let alter = format!("ALTER TABLE {} ADD COLUMN batch UInt64", source.raw());
                            // Fails if another server starting meanwhile added it first.
                            if let Err(e) = client.query(&alter).execute().await
                                && !has_column(&client, source.raw(), "batch").await?
                            {
                                return Err(e.into());
                            }
                        }
                    }
                    columns_added = true;
                }
                client.query(s).execute().await?;
            }
            Ok(())
        })
        .map_err(anyhow::Error::from)
        .context("creating the statistics schema")
    }
}

/// Checks the database's schema version and records this server's when it is newer. `edge_schema` may be gone
/// for a moment while another server starting at the same time moves it off TinyLog (it renames the table, then
/// makes the new one: see [`versions_off_tiny_log`]): then this server looks again, a few times.
async fn record_version(client: &clickhouse::Client, create_versions: &str, now: i64) -> Result<(), Failure> {
    let mut tries = 0u64;
    loop {
        versions_off_tiny_log(client, create_versions).await?;
        client.query(create_versions).execute().await?;
        let recorded = async {
            let version: u32 =
                client.query("SELECT toUInt32(max(version)) FROM edge_schema").fetch_one::<u32>().await?;
            if version > SCHEMA_VERSION {
                return Err(Failure::Internal(anyhow::anyhow!(
                    "the statistics database has schema version {version}, newer than this server's \
                     {SCHEMA_VERSION}; upgrade the server"
                )));
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
        }
        .await;
        match recorded {
            Err(ref e) if tries < 8 && (unknown_table(e) || columns_of(client, "edge_schema").await?.is_empty()) => {
                tries += 1;
                tracing::debug!("edge_schema was gone for a moment (another server moving it off TinyLog); again");
                tokio::time::sleep(std::time::Duration::from_millis(20 * tries)).await;
            }
            other => return other,
        }
    }
}

/// Whether ClickHouse refused a query for naming a table that does not exist (its error code 60).
fn unknown_table(failure: &Failure) -> bool {
    matches!(failure, Failure::Internal(e) if format!("{e:#}").contains("Code: 60,"))
}

/// A number for a table name of this server's own (the clock's nanoseconds and the process id).
fn nonce() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    (nanos ^ u128::from(std::process::id())) as u64
}

/// Moves the versions of a database made before `edge_schema` was a MergeTree table out of its TinyLog table,
/// which fails, or loses what it holds, when two servers write it at once (as replicas starting together on
/// such a database do, each writing the version it moves the database to). The first server to rename the
/// TinyLog table copies its rows into a new MergeTree table of the name (`create_versions`) and drops it; the
/// others find the name free (they create the table: what they write there is this version, the newest) or
/// taken by the new table. A renamed table left by a server stopped half-way is copied at the next start.
/// (A server renaming `edge_schema` just after another replaced it renames the new table, and copies it in
/// turn: rows the other writes meanwhile are lost, but each server writes its version after this, so the
/// newest is recorded.)
async fn versions_off_tiny_log(client: &clickhouse::Client, create_versions: &str) -> Result<(), Failure> {
    for _ in 0..8 {
        let mut done = true;
        for mut name in tables_named(client, "edge_schema").await? {
            if name == "edge_schema" {
                // Fails if another server renamed it meanwhile: the next round sees what it did.
                let create = client.query("SHOW CREATE TABLE edge_schema").fetch_one::<String>().await;
                if create.as_ref().is_ok_and(|c| !c.contains("ENGINE = TinyLog")) {
                    continue;
                }
                done = false;
                let renamed = format!("edge_schema_tiny_log_{:x}", nonce());
                if create.is_err()
                    || client.query(&format!("RENAME TABLE edge_schema TO {renamed}")).execute().await.is_err()
                {
                    continue;
                }
                name = renamed;
            } else if !name.starts_with("edge_schema_tiny_log_") {
                continue;
            }
            done = false;
            client.query(create_versions).execute().await?;
            let copied = client
                .query(&format!("INSERT INTO edge_schema (version, applied_ms) SELECT version, applied_ms FROM {name}"))
                .execute()
                .await;
            match copied {
                Ok(()) => client.query(&format!("DROP TABLE IF EXISTS {name}")).execute().await?,
                // Another server copying a table left over dropped it first (its copy holds the rows).
                Err(_) if columns_of(client, &name).await?.is_empty() => {}
                Err(e) => return Err(e.into()),
            }
        }
        if done {
            return Ok(());
        }
    }
    Err(Failure::Internal(anyhow::anyhow!("the statistics schema's versions could not be moved off TinyLog")))
}

/// How long moving a table to version 4's key may take (it copies every row of the table).
const MIGRATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The columns of a table of the database (none: there is no such table).
async fn columns_of(client: &clickhouse::Client, table: &str) -> Result<Vec<String>, clickhouse::error::Error> {
    client
        .query("SELECT name FROM system.columns WHERE database = currentDatabase() AND table = ?")
        .bind(table)
        .fetch_all::<String>()
        .await
}

/// The tables (and views) of the database whose name starts with `prefix`. From `system.columns`, not
/// `system.tables`: ClickHouse 18.16 fails a query on `system.tables` ("Table … doesn't exist", about one in 30
/// by hand) while another query renames a table, as servers starting together do.
async fn tables_named(client: &clickhouse::Client, prefix: &str) -> Result<Vec<String>, clickhouse::error::Error> {
    client
        .query("SELECT DISTINCT table FROM system.columns WHERE database = currentDatabase() AND startsWith(table, ?)")
        .bind(prefix)
        .fetch_all::<String>()
        .await
}

/// Whether a table (or view) of the database has a column.
async fn has_column(client: &clickhouse::Client, table: &str, column: &str) -> Result<bool, clickhouse::error::Error> {
    let count = client
        .query("SELECT count() FROM system.columns WHERE database = currentDatabase() AND table = ? AND name = ?")
        .bind(table)
        .bind(column)
        .fetch_one::<u64>()
        .await?;
    Ok(count > 0)
}

/// The rollup tables [`rekey`] has work on: missing, without the key hash, or with a table of a move
/// (`…_by_text`, `…_rekeying_…`) or a view of version 2 without the hash left over. Two queries, so that a start
/// on a database already moved asks no more of it.
async fn to_rekey(client: &clickhouse::Client, tables: &[String]) -> Result<Vec<String>, Failure> {
    let names = tables_named(client, "").await?;
    let hashed = client
        .query("SELECT DISTINCT table FROM system.columns WHERE database = currentDatabase() AND name = ?")
        .bind(KEY_HASH)
        .fetch_all::<String>()
        .await?;
    let exists = |name: &str| names.iter().any(|n| n == name);
    let hashed = |name: &str| hashed.iter().any(|n| n == name);
    let pending = tables.iter().filter(|table| {
        let moving = format!("{table}_rekeying_");
        !hashed(table)
            || exists(&format!("{table}_by_text"))
            || names.iter().any(|n| n.starts_with(&moving))
            || views_of(table).iter().any(|v| exists(v) && !hashed(v))
    });
    Ok(pending.cloned().collect())
}

/// The column of a rollup row's key hash (schema version 4).
const KEY_HASH: &str = "key_hash";

/// Moves a rollup table of schema version 3 or before, ordered by its dimensions' text, to version 4's table
/// ordered by a hash of them first (`key_hash`): ClickHouse compares a number, and texts only where two keys'
/// hashes tie, when it merges parts. The sorting key of a table cannot change, so the table is renamed
/// (`…_by_text`), its rows copied into a new table under a name of this server's own (the hash computed by
/// ClickHouse, [`key_hash`]), which is then renamed to the table's name, and the old table dropped. While it
/// moves, the table does not exist: an insert of a server of version 3 still running fails (its client
/// retries; nothing is lost), and a server of version 4 starting meanwhile copies the old table too — whichever
/// copy is renamed first is the table, the other is dropped. A server stopped half-way leaves the old table,
/// and the next start copies it again. Views of version 2 writing the table without the hash are dropped, to
/// be made again with it.
async fn rekey(client: &clickhouse::Client, create: &Create) -> Result<(), Failure> {
    let table = &create.table;
    let old = format!("{table}_by_text");
    for _ in 0..8 {
        let columns = columns_of(client, table).await?;
        if columns.iter().any(|c| c == KEY_HASH) {
            break;
        }
        if !columns.is_empty() {
            // Fails if another server renamed it first: the next round sees what it did.
            let _ = client.query(&format!("RENAME TABLE {table} TO {old}")).execute().await;
            continue;
        }
        let old_columns = columns_of(client, &old).await?;
        if old_columns.is_empty() {
            // A new database (or another server finished meanwhile: then this does nothing).
            client.query(&create.statement(table)).execute().await?;
            continue;
        }
        let scratch = format!("{table}_rekeying_{:x}", nonce());
        client.query(&create.statement(&scratch)).execute().await?;
        let new_columns = columns_of(client, &scratch).await?;
        let copied =
            old_columns.iter().filter(|c| new_columns.contains(c)).map(String::as_str).collect::<Vec<_>>().join(", ");
        tracing::info!(table = %table, "statistics: moving the table to schema version 4 (copying its rows)");
        let copy = client
            .query(&format!("INSERT INTO {scratch} ({copied}) SELECT {copied} FROM {old}"))
            .with_setting("max_execution_time", "0")
            .execute()
            .await;
        let renamed = match copy {
            Ok(()) => client.query(&format!("RENAME TABLE {scratch} TO {table}")).execute().await.is_ok(),
            Err(_) => false,
        };
        if !renamed {
            client.query(&format!("DROP TABLE IF EXISTS {scratch}")).execute().await?;
            if let Err(e) = copy {
                // The old table dropped by a server that finished first, or ClickHouse gone.
                if !has_column(client, table, KEY_HASH).await? {
                    return Err(e.into());
                }
            }
        }
        // The copy renamed (this server's or another's) holds every row: the old table has not been written since
        // it was renamed.
        if has_column(client, table, KEY_HASH).await? {
            client.query(&format!("DROP TABLE IF EXISTS {old}")).execute().await?;
        }
    }
    if !has_column(client, table, KEY_HASH).await? {
        return Err(Failure::Internal(anyhow::anyhow!("the table {table} could not be moved to schema version 4")));
    }
    // Copies of servers stopped half-way (a copy still running fails, or is not renamed).
    let leftovers = tables_named(client, &format!("{table}_rekeying_")).await?;
    for leftover in leftovers {
        client.query(&format!("DROP TABLE IF EXISTS {leftover}")).execute().await?;
    }
    for view in views_of(table) {
        let columns = columns_of(client, &view).await?;
        if !columns.is_empty() && !columns.iter().any(|c| c == KEY_HASH) {
            client.query(&format!("DROP TABLE IF EXISTS {view}")).execute().await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{super::super::rollups::all_specs, *};

    #[test]
    fn each_rollup_is_read_from_a_written_one_of_its_table_holding_its_dimensions() {
        let specs = all_specs();
        let tables: Vec<String> = specs.iter().map(table_name).collect();
        let stand_in = stand_ins(&specs, &tables);
        for (i, j) in stand_in.iter().copied().enumerate() {
            assert_eq!(tables[i], tables[j], "{:?}", specs[i]);
            assert!(specs[i].dims.iter().all(|d| specs[j].dims.contains(d)), "{:?} from {:?}", specs[i], specs[j]);
            assert_eq!(stand_in[j], j, "{:?} is written", specs[j]);
        }
        let written = stand_in.iter().enumerate().filter(|(i, j)| i == *j).count();
        assert!(written * 2 < specs.len(), "{written} of {} rollups written", specs.len());
    }
}
