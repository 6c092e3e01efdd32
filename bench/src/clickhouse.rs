//! `edge-bench stats --engine clickhouse`: the statistics benchmark's ingestion and queries on the embedded
//! engine, on ClickHouse and in DuckDB, side by side. The data are the benchmark's realistic access logs and
//! security events (see [`logs`]); each engine gets them the way it is used:
//!
//! - embedded and ClickHouse: an `edge-server` of its own (the second started with `--stats-url` on a
//!   throwaway clickhouse-server, see [`edge_cluster::ClickHouse`]), the same requests of 10,000 records over
//!   two connections with a session, then the benchmark's queries through HTTP;
//! - DuckDB (in Python, in-process): `read_ndjson` into a table and the same rollups, then the benchmark's
//!   DuckDB queries over rollup tables built from those records.
//!
//! It prints ingestion rates (with the CPU each process used), query latencies (p50 and p99) and bytes on disk
//! per stored row: the embedded engine's files (after a checkpoint), ClickHouse's `system.parts` of the
//! database (after `OPTIMIZE … FINAL`, so the rollups are merged as the embedded engine's are), DuckDB's
//! database file.

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use edge_server::{
    AppState, Settings, admin,
    clock::SystemClock,
    stats::{StatsEngine, memory::MemoryEngine},
};

use crate::{
    Args,
    compare::{self, DAY, DUCKDB_TIMED, EVENT_COLUMNS, PASSWORD, Query, WARMUP, percentile},
    ingest,
    logs::{self, Shape},
    server::{self, Server, load_average},
};

/// Timed runs of each query (after [`WARMUP`] untimed ones): enough for a p99.
const RUNS: usize = 100;
/// Connections the ingestion posts over by default (`--connections N`), as in the embedded benchmark.
const CONNECTIONS: usize = 2;
const CUSTOMER: &str = "bench";
/// The unfavourable shapes of records' times, each posted into a customer of its own after the realistic
/// hour (`--shape-records N` records each; see [`logs::Shape`]).
const SHAPES: [Shape; 4] = [
    Shape::Shuffled(logs::Span::Hour),
    Shape::Shuffled(logs::Span::Day),
    Shape::Shuffled(logs::Span::FiveDays),
    Shape::Late,
];

/// What every engine gets: the two NDJSON files, the queries, and a file of access-log records a shape.
struct Input {
    connections: usize,
    access: PathBuf,
    security: PathBuf,
    queries: Vec<Query>,
    shapes: Vec<(Shape, PathBuf)>,
    shape_records: u64,
}

/// What ClickHouse's threads did for one table (its `system.part_log`): parts written and the rows they hold,
/// merges and the rows of the parts they made, and the milliseconds of each (a thread's wall time, so time
/// waiting for a core counts too).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct TableWork {
    table: String,
    new_parts: u64,
    new_rows: u64,
    new_ms: u64,
    merges: u64,
    merged_rows: u64,
    merge_ms: u64,
}

impl TableWork {
    /// This table's figures combined one by one with `other`'s by `f`.
    fn with(&self, other: &TableWork, f: impl Fn(u64, u64) -> u64) -> TableWork {
        TableWork {
            table: self.table.clone(),
            new_parts: f(self.new_parts, other.new_parts),
            new_rows: f(self.new_rows, other.new_rows),
            new_ms: f(self.new_ms, other.new_ms),
            merges: f(self.merges, other.merges),
            merged_rows: f(self.merged_rows, other.merged_rows),
            merge_ms: f(self.merge_ms, other.merge_ms),
        }
    }
}

/// What changed between two [`Engine::part_work`]s, by table (tables with nothing done left out).
fn work_between(before: &[TableWork], after: &[TableWork]) -> Vec<TableWork> {
    after
        .iter()
        .map(|a| a.with(&before.iter().find(|b| b.table == a.table).cloned().unwrap_or_default(), |a, b| a - b))
        .filter(|w| w.new_parts + w.merges > 0)
        .collect()
}

/// What one engine behind an `edge-server` measured.
struct Measured {
    name: &'static str,
    access: ingest::Posted,
    security: ingest::Posted,
    /// CPU seconds of edge-server and of clickhouse-server during the access-log and security ingestion.
    access_cpu: (f64, f64),
    security_cpu: (f64, f64),
    /// What ClickHouse's threads did during the access-log and security ingestion, by table.
    access_work: Vec<TableWork>,
    security_work: Vec<TableWork>,
    queries: Vec<Timed>,
    bytes: u64,
    rows: u64,
    load: f64,
}

pub fn run(args: &Args) -> Result<()> {
    let work = args.path("--work")?.join("clickhouse");
    let server_bin = args.path("--server")?;
    let python = args.path("--python")?;
    let n: u64 = args.number("--ingest")?.unwrap_or(1_000_000);
    let shape_records: u64 = args.number("--shape-records")?.unwrap_or(200_000);
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64;
    let end = now - now.rem_euclid(300_000);
    let input = Input {
        connections: args.number("--connections")?.unwrap_or(CONNECTIONS),
        access: work.join("access.ndjson"),
        security: work.join("security.ndjson"),
        queries: compare::queries(end),
        shapes: SHAPES.iter().map(|s| (*s, work.join(format!("access-{}.ndjson", s.name())))).collect(),
        shape_records,
    };
    // The records fill the last hour before midnight, so that the daily top URLs (of whole days) see them too.
    let midnight = end - end.rem_euclid(DAY);
    logs::write_access(&input.access, n, midnight, Shape::Realistic)?;
    logs::write_security(&input.security, n / 5, midnight, Shape::Realistic)?;
    for (shape, file) in &input.shapes {
        logs::write_access(file, shape_records, end, *shape)?;
    }
    println!(
        "data: {n} realistic access-log records and {} security events, over the hour before {}; {shape_records} \
         access-log records of each other shape, up to {}",
        n / 5,
        edge_api::stats::format_time(midnight),
        edge_api::stats::format_time(end)
    );

    let clickhouse = edge_cluster::ClickHouse::start()?;
    let version = clickhouse_sql(&clickhouse, "SELECT version()")?;
    println!("ClickHouse {} (pid {}) on 127.0.0.1:{}", version.trim(), clickhouse.pid(), clickhouse.http_port);
    let (embedded, on_clickhouse) = on_both(&work, "", &clickhouse, |engine| measure(engine, &server_bin, &input))?;
    let (embedded_shapes, clickhouse_shapes) =
        on_both(&work, "-shapes", &clickhouse, |engine| measure_shapes(engine, &server_bin, &input))?;
    drop(clickhouse);
    for (i, q) in input.queries.iter().enumerate() {
        let (e, c) = (&embedded.queries[i].body, &on_clickhouse.queries[i].body);
        if e != c {
            let (pe, pc) =
                (work.join(format!("answer-{i}-embedded.json")), work.join(format!("answer-{i}-clickhouse.json")));
            std::fs::write(&pe, e)?;
            std::fs::write(&pc, c)?;
            eprintln!("{}: the engines answered differently: {} and {}", q.name, pe.display(), pc.display());
        }
    }
    let duck = duckdb(&python, &work, &input)?;
    report(n, &input, &[&embedded, &on_clickhouse], &duck);
    report_shapes(&input, &embedded_shapes, &clickhouse_shapes, &duck);
    Ok(())
}

/// `measure` (or another) on the embedded engine, then on ClickHouse in a database of its own; `what` tells the
/// data directories and the database apart.
fn on_both<T>(
    work: &Path,
    what: &str,
    clickhouse: &edge_cluster::ClickHouse,
    f: impl Fn(&Engine) -> Result<T>,
) -> Result<(T, T)> {
    let embedded = f(&Engine {
        name: "embedded",
        data: work.join(format!("embedded{what}")),
        flags: Vec::new(),
        clickhouse: None,
        database: String::new(),
    })?;
    let database = format!("edge_bench{}", what.replace('-', "_"));
    let url = clickhouse.url(&database);
    let on_clickhouse = f(&Engine {
        name: "ClickHouse",
        data: work.join(format!("clickhouse{what}")),
        flags: vec!["--stats-url".into(), url],
        clickhouse: Some(clickhouse),
        database,
    })?;
    Ok((embedded, on_clickhouse))
}

/// An engine under measurement: an `edge-server` on a data directory of its own, with flags, storing its
/// statistics in a ClickHouse server or (None) in the embedded engine.
struct Engine<'a> {
    name: &'static str,
    data: PathBuf,
    flags: Vec<String>,
    clickhouse: Option<&'a edge_cluster::ClickHouse>,
    /// The ClickHouse database.
    database: String,
}

impl Engine<'_> {
    /// Starts the engine's `edge-server` with `customers` ([`start`]).
    fn start(&self, server_bin: &Path, customers: &[&str]) -> Result<Server> {
        let flags: Vec<&str> = self.flags.iter().map(String::as_str).collect();
        start(server_bin, &self.data, &flags, customers)
    }

    /// What ClickHouse's threads have done so far for each table of the engine's database (its
    /// `system.part_log`); nothing for the embedded engine.
    fn part_work(&self) -> Result<Vec<TableWork>> {
        let Some(c) = self.clickhouse else { return Ok(Vec::new()) };
        clickhouse_sql(c, "SYSTEM FLUSH LOGS")?;
        let answer = clickhouse_sql(
            c,
            &format!(
                "SELECT table, countIf(event_type = 'NEW_PART'), sumIf(rows, event_type = 'NEW_PART'), \
                 sumIf(duration_ms, event_type = 'NEW_PART'), countIf(event_type = 'MERGE_PARTS'), \
                 sumIf(rows, event_type = 'MERGE_PARTS'), sumIf(duration_ms, event_type = 'MERGE_PARTS') \
                 FROM system.part_log WHERE database = '{}' GROUP BY table ORDER BY table FORMAT TSV",
                self.database
            ),
        )?;
        answer
            .lines()
            .map(|line| {
                let mut fields = line.split('\t');
                let table = fields.next().unwrap_or_default().to_string();
                let numbers: Vec<u64> = fields.map(str::parse).collect::<Result<_, _>>().unwrap_or_default();
                match numbers[..] {
                    [new_parts, new_rows, new_ms, merges, merged_rows, merge_ms] => {
                        Ok(TableWork { table, new_parts, new_rows, new_ms, merges, merged_rows, merge_ms })
                    }
                    _ => anyhow::bail!("system.part_log: unexpected answer {line:?}"),
                }
            })
            .collect()
    }

    /// The CPU seconds `running` and the ClickHouse server (0 without one) have used.
    fn cpu(&self, running: &Server) -> (f64, f64) {
        (running.cpu_seconds(), self.clickhouse.map_or(0.0, |c| server::cpu_seconds(c.pid())))
    }
}

/// Adds `customers` to a store in `data` (each with an admin) and starts an `edge-server` on it with `flags`.
fn start(server_bin: &Path, data: &Path, flags: &[&str], customers: &[&str]) -> Result<Server> {
    tokio::runtime::Runtime::new()?.block_on(async {
        let state = AppState::open(Settings::new(data, data.join("none"))).await?;
        for customer in customers {
            admin::add_customer(&state, customer, "admin", PASSWORD).await?;
        }
        anyhow::Ok(())
    })?;
    let mut all_flags = vec!["--max-body-bytes", "33554432"];
    all_flags.extend(flags);
    Server::start(server_bin, data, &all_flags, &[])
}

/// Starts an `edge-server` on `data` with `flags`, ingests both files for the customer, runs the queries, stops
/// it and measures what it keeps on disk.
fn measure(engine: &Engine, server_bin: &Path, input: &Input) -> Result<Measured> {
    let name = engine.name;
    let running = engine.start(server_bin, &[CUSTOMER])?;
    let cookie = running.login(CUSTOMER, "admin", PASSWORD)?;
    let cpu = || engine.cpu(&running);
    let url = |kind: &str| format!("{}/{CUSTOMER}/v1/ingest/{kind}", running.base);
    let load = load_average();

    let mut posted = Vec::new();
    for (kind, file) in [("accesslogs", &input.access), ("securityevents", &input.security)] {
        let bodies = Arc::new(ingest::bodies(&std::fs::read_to_string(file)?));
        let records: u64 = bodies.iter().map(|b| b.split(|c| *c == b'\n').count() as u64).sum();
        let (before, work_before) = (cpu(), engine.part_work()?);
        let done = ingest::post_all(&url(kind), &cookie, &bodies, input.connections, None)?;
        let (after, work_after) = (cpu(), engine.part_work()?);
        anyhow::ensure!(done.accepted == records, "{name}: {kind}: accepted {} of {records}", done.accepted);
        posted.push((done, (after.0 - before.0, after.1 - before.1), work_between(&work_before, &work_after)));
    }
    eprintln!("{name}: ingested");

    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(600)).build();
    let mut queries = Vec::new();
    for q in &input.queries {
        let url = format!("{}/{CUSTOMER}/v1{}", running.base, q.ours);
        let mut times = Vec::new();
        let mut body = String::new();
        let mut first = 0.0;
        for i in 0..WARMUP + RUNS {
            let t = Instant::now();
            body = agent.get(&url).set("Cookie", &cookie).call().with_context(|| q.name)?.into_string()?;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            if i == 0 {
                first = ms;
            } else if i >= WARMUP {
                times.push(ms);
            }
        }
        times.sort_by(f64::total_cmp);
        let v: serde_json::Value = serde_json::from_str(&body)?;
        let rows = v["rows"].as_array().map_or(0, Vec::len);
        anyhow::ensure!(rows > 0, "{name}: {}: no rows: {}", q.name, &body[..body.len().min(300)]);
        let total = v["total_results"].as_u64().unwrap_or(0);
        queries.push(Timed { first, p50: percentile(&times, 0.5), p99: percentile(&times, 0.99), rows, total, body });
    }
    let load = (load + load_average()) / 2.0;

    drop(running);

    let (bytes, rows) = match engine.clickhouse {
        Some(c) => clickhouse_footprint(c, &engine.database)?,
        None => embedded_footprint(&engine.data)?,
    };
    let mut posted = posted.into_iter();
    let (access, access_cpu, access_work) = posted.next().context("access-log ingestion")?;
    let (security, security_cpu, security_work) = posted.next().context("security ingestion")?;
    Ok(Measured {
        name,
        access,
        security,
        access_cpu,
        security_cpu,
        access_work,
        security_work,
        queries,
        bytes,
        rows,
        load,
    })
}

/// What the posts of one shape's records measured, and the CPU seconds of edge-server and clickhouse-server.
type ShapeRun = (ingest::Posted, (f64, f64));

/// Starts an `edge-server` on `data` with `flags` (and a database of its own on ClickHouse) and posts the
/// records of each of the input's other shapes into a customer of its own.
fn measure_shapes(engine: &Engine, server_bin: &Path, input: &Input) -> Result<Vec<ShapeRun>> {
    let name = engine.name;
    let customers: Vec<&str> = input.shapes.iter().map(|(shape, _)| shape.name()).collect();
    let running = engine.start(server_bin, &customers)?;
    let cpu = || engine.cpu(&running);
    let mut runs = Vec::new();
    for (shape, file) in &input.shapes {
        let bodies = Arc::new(ingest::bodies(&std::fs::read_to_string(file)?));
        let cookie = running.login(shape.name(), "admin", PASSWORD)?;
        let url = format!("{}/{}/v1/ingest/accesslogs", running.base, shape.name());
        let before = cpu();
        let done = ingest::post_all(&url, &cookie, &bodies, input.connections, None)?;
        let after = cpu();
        anyhow::ensure!(
            done.accepted == input.shape_records,
            "{name}: {}: accepted {} of {}",
            shape.name(),
            done.accepted,
            input.shape_records
        );
        eprintln!("{name}: {}: {:.0} records/s", shape.name(), done.accepted as f64 / done.seconds);
        runs.push((done, (after.0 - before.0, after.1 - before.1)));
    }
    Ok(runs)
}

/// The embedded engine's files (snapshot and log, after a checkpoint) and its stored rows (rollup and event).
fn embedded_footprint(data: &Path) -> Result<(u64, u64)> {
    let engine = MemoryEngine::open(data, Arc::new(SystemClock))?;
    engine.checkpoint()?;
    let f = engine.footprint();
    drop(engine);
    let mut bytes = 0;
    for entry in std::fs::read_dir(data.join("stats"))? {
        let meta = entry?.metadata()?;
        if meta.is_file() {
            bytes += meta.len();
        }
    }
    Ok((bytes, f.rollup_rows + f.event_rows))
}

/// Merges every table of `database` (`OPTIMIZE … FINAL`), then sums `bytes_on_disk` and rows of its active
/// parts.
fn clickhouse_footprint(c: &edge_cluster::ClickHouse, database: &str) -> Result<(u64, u64)> {
    let tables = clickhouse_sql(
        c,
        &format!("SELECT DISTINCT table FROM system.parts WHERE database = '{database}' AND active FORMAT TSV"),
    )?;
    for table in tables.lines().filter(|t| !t.is_empty()) {
        clickhouse_sql(c, &format!("OPTIMIZE TABLE {database}.`{table}` FINAL"))?;
    }
    let sums = clickhouse_sql(
        c,
        &format!(
            "SELECT sum(bytes_on_disk), sum(rows) FROM system.parts WHERE database = '{database}' AND active FORMAT TSV"
        ),
    )?;
    let mut fields = sums.split_whitespace().map(str::parse::<u64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(bytes)), Some(Ok(rows))) => Ok((bytes, rows)),
        _ => anyhow::bail!("system.parts: unexpected answer {sums:?}"),
    }
}

/// Runs one statement over ClickHouse's HTTP interface (only names of our own go into it) and returns the answer.
fn clickhouse_sql(c: &edge_cluster::ClickHouse, sql: &str) -> Result<String> {
    ureq::post(&format!("http://127.0.0.1:{}/", c.http_port))
        .timeout(Duration::from_secs(600))
        .send_string(sql)
        .map_err(|e| match e {
            ureq::Error::Status(code, r) => anyhow::anyhow!("{code}: {}", r.into_string().unwrap_or_default()),
            e => e.into(),
        })
        .with_context(|| format!("ClickHouse: {sql}"))?
        .into_string()
        .context("ClickHouse's answer")
}

const DUCKDB_SCRIPT: &str = r#"
import json, os, sys, time
import duckdb
spec = json.load(open(sys.argv[1]))
con = duckdb.connect(spec["db"])
out = {}
t = time.perf_counter()
con.execute(f"CREATE TABLE logs AS SELECT * FROM read_ndjson('{spec['access']}', columns={spec['columns']})")
for sql in spec["rollups"]:
    con.execute(sql)
con.execute("CHECKPOINT")
out["access_s"] = time.perf_counter() - t
t = time.perf_counter()
con.execute(f"CREATE TABLE events AS SELECT CAST(timestamp AS TIMESTAMP) AS ts, {spec['event_columns']} FROM read_ndjson('{spec['security']}')")
con.execute("CHECKPOINT")
out["security_s"] = time.perf_counter() - t
for sql in spec["query_tables"]:
    con.execute(sql)
con.execute("CHECKPOINT")
out["queries"] = []
for q in spec["queries"]:
    out["queries"].append(sorted(timed(con, q, spec["warmup"], spec["runs"])))
tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
out["rows"] = sum(con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables)
con.close()
out["bytes"] = sum(os.path.getsize(p) for p in [spec["db"], spec["db"] + ".wal"] if os.path.exists(p))
out["shapes_s"] = []
for i, path in enumerate(spec["shapes"]):
    db = f"{spec['db']}.shape{i}"
    con = duckdb.connect(db)
    t = time.perf_counter()
    con.execute(f"CREATE TABLE logs AS SELECT * FROM read_ndjson('{path}', columns={spec['columns']})")
    for sql in spec["rollups"]:
        con.execute(sql)
    con.execute("CHECKPOINT")
    out["shapes_s"].append(time.perf_counter() - t)
    con.close()
    for p in [db, db + ".wal"]:
        if os.path.exists(p):
            os.remove(p)
print(json.dumps(out))
"#;

/// DuckDB's side: ingestion of both files (the access logs with every rollup), the queries (over rollup tables
/// built from the same records), its database file.
fn duckdb(python: &Path, work: &Path, input: &Input) -> Result<serde_json::Value> {
    let metrics: Vec<String> = edge_api::stats::DELIVERY_METRICS.iter().map(|m| format!("sum({m}) AS {m}")).collect();
    let metrics = metrics.join(", ");
    // The tables the benchmark's DuckDB queries read (see `compare::queries`).
    let query_tables = vec![
        format!(
            "CREATE TABLE r5_cp AS SELECT time_bucket(INTERVAL 5 MINUTE, timestamp) AS ts, country, property, {metrics} FROM logs GROUP BY ALL"
        ),
        format!(
            "CREATE TABLE rh_ds AS SELECT date_trunc('hour', timestamp) AS ts, domain, http_status_code, {metrics} FROM logs GROUP BY ALL"
        ),
        "CREATE TABLE urls AS SELECT date_trunc('day', timestamp) AS ts, property, request_url, sum(hits) AS hits FROM logs GROUP BY ALL".to_string(),
    ];
    let db: PathBuf = work.join("bench.duckdb");
    let spec = serde_json::json!({
        "db": db,
        "access": input.access,
        "security": input.security,
        "columns": compare::duckdb_columns(),
        "rollups": compare::duckdb_rollups(),
        "event_columns": EVENT_COLUMNS.join(", "),
        "query_tables": query_tables,
        "shapes": input.shapes.iter().map(|(_, file)| file).collect::<Vec<_>>(),
        "queries": input.queries.iter().map(|q| q.duck.clone()).collect::<Vec<_>>(),
        "warmup": WARMUP,
        "runs": RUNS,
    });
    let spec_path = work.join("duckdb.json");
    std::fs::write(&spec_path, spec.to_string())?;
    let script = work.join("duckdb_bench.py");
    std::fs::write(&script, format!("{DUCKDB_TIMED}{DUCKDB_SCRIPT}"))?;
    let out = Command::new(python).arg(&script).arg(&spec_path).output().context("running the DuckDB side")?;
    anyhow::ensure!(out.status.success(), "DuckDB side failed: {}", String::from_utf8_lossy(&out.stderr));
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// The table of the other shapes: both engines and DuckDB's load + rollups of the same file.
fn report_shapes(input: &Input, embedded: &[ShapeRun], ch: &[ShapeRun], duck: &serde_json::Value) {
    let n = input.shape_records;
    println!();
    println!(
        "| records' times ({n} access-log records, requests of {}, {} connections) | embedded records/s | edge-server CPU a record | ClickHouse records/s | edge-server CPU a record | clickhouse-server CPU a record | DuckDB read_ndjson + {} rollup tables records/s |",
        ingest::RECORDS_PER_REQUEST,
        input.connections,
        compare::duckdb_rollups().len()
    );
    println!("|---|---|---|---|---|---|---|");
    let us = |seconds: f64| seconds * 1e6 / n as f64;
    for (i, (shape, _)) in input.shapes.iter().enumerate() {
        let ((e, e_cpu), (c, c_cpu)) = (&embedded[i], &ch[i]);
        let duck_s = duck["shapes_s"][i].as_f64().unwrap_or(f64::NAN);
        println!(
            "| {} | {:.0} | {:.2} µs | {:.0} | {:.2} µs | {:.2} µs | {:.0} |",
            shape.description(),
            n as f64 / e.seconds,
            us(e_cpu.0),
            n as f64 / c.seconds,
            us(c_cpu.0),
            us(c_cpu.1),
            n as f64 / duck_s
        );
    }
}

/// Where clickhouse-server's threads spent the ingestion of `n` access-log records, by table: writing the parts
/// of the inserts, and merging parts (those merges done by the ingestion's end).
fn work_table(out: &mut String, n: u64, work: &[TableWork]) {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| ClickHouse, during the ingestion of {n} access-log records: table | parts written (rows a record) | thread seconds writing | merges done (rows made a record) | thread seconds merging | µs merging a row made |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let per_record = |rows: u64| rows as f64 / n as f64;
    let all = work
        .iter()
        .fold(TableWork { table: "all tables".into(), ..TableWork::default() }, |all, w| all.with(w, |a, b| a + b));
    for w in work.iter().chain(std::iter::once(&all)) {
        let _ = writeln!(
            out,
            "| {} | {} ({:.2}) | {:.1} | {} ({:.2}) | {:.1} | {:.1} |",
            w.table,
            w.new_parts,
            per_record(w.new_rows),
            w.new_ms as f64 / 1000.0,
            w.merges,
            per_record(w.merged_rows),
            w.merge_ms as f64 / 1000.0,
            if w.merged_rows == 0 { 0.0 } else { w.merge_ms as f64 * 1000.0 / w.merged_rows as f64 },
        );
    }
}

/// What one query measured on a server.
struct Timed {
    /// The first run (the first of the warm-up runs), p50 and p99 of the timed runs (ms).
    first: f64,
    p50: f64,
    p99: f64,
    /// Rows of the answer, its total_results, and the answer of the last run.
    rows: usize,
    total: u64,
    body: String,
}

fn report(n: u64, input: &Input, engines: &[&Measured; 2], duck: &serde_json::Value) {
    let [embedded, ch] = *engines;
    let mut out = String::new();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| query | rows (total) | embedded p50 / p99 (ms) | ClickHouse p50 / p99 (ms) | DuckDB p50 / p99 (ms) | first run: embedded / ClickHouse (ms) | same answer |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for (i, q) in input.queries.iter().enumerate() {
        let (e, c) = (&embedded.queries[i], &ch.queries[i]);
        let times: Vec<f64> =
            duck["queries"][i].as_array().map(|a| a.iter().filter_map(|t| t.as_f64()).collect()).unwrap_or_default();
        let _ = writeln!(
            out,
            "| {} | {} ({}) | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {:.1} / {:.1} | {} |",
            q.name,
            e.rows,
            e.total,
            e.p50,
            e.p99,
            c.p50,
            c.p99,
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            e.first,
            c.first,
            if e.body == c.body { "yes" } else { "NO" }
        );
    }
    if embedded.queries.iter().zip(&ch.queries).any(|(e, c)| e.body != c.body) {
        let _ = writeln!(
            out,
            "(Where nothing else decides, both engines order rows by when their records arrived; over {} connections \
             the batches arrive in another order at each server, which only reorders such ties. Over one \
             connection, `--connections 1`, the answers are byte for byte the same.)",
            input.connections
        );
    }
    let security_n = n / 5;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| ingestion (NDJSON, requests of {} records, {} connections, with a session) | records/s | edge-server CPU a record | clickhouse-server CPU a record | ClickHouse parts created a minute (rows written a record) |",
        ingest::RECORDS_PER_REQUEST,
        input.connections
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for m in [embedded, ch] {
        for (what, count, posted, cpu, work) in [
            ("access-log records, into all rollups", n, &m.access, m.access_cpu, &m.access_work),
            ("security events, raw and into all rollups", security_n, &m.security, m.security_cpu, &m.security_work),
        ] {
            let parts = work.iter().fold((0, 0), |(p, r), w| (p + w.new_parts, r + w.new_rows));
            let (ch_cpu, ch_parts) = if m.name == "ClickHouse" {
                (
                    format!("{:.2} µs", cpu.1 * 1e6 / count as f64),
                    format!("{:.0} ({:.1})", parts.0 as f64 * 60.0 / posted.seconds, parts.1 as f64 / count as f64),
                )
            } else {
                Default::default()
            };
            let _ = writeln!(
                out,
                "| {}: {count} {what} | {:.0} | {:.2} µs | {ch_cpu} | {ch_parts} |",
                m.name,
                count as f64 / posted.seconds,
                cpu.0 * 1e6 / count as f64,
            );
        }
    }
    let f = |key: &str| duck[key].as_f64().unwrap_or(f64::NAN);
    let _ = writeln!(
        out,
        "| DuckDB (in-process): {n} access-log records, read_ndjson + the same {} rollup tables | {:.0} | | |",
        compare::duckdb_rollups().len(),
        n as f64 / f("access_s")
    );
    let _ = writeln!(
        out,
        "| DuckDB (in-process): {security_n} security events, read_ndjson into a table | {:.0} | | |",
        security_n as f64 / f("security_s")
    );
    work_table(&mut out, n, &ch.access_work);
    let _ = writeln!(out);
    let _ = writeln!(out, "| on disk | bytes | stored rows | bytes a stored row | bytes an ingested record |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    let records = (n + security_n) as f64;
    let (duck_bytes, duck_rows) = (f("bytes"), f("rows"));
    for (name, bytes, rows) in [
        ("embedded (snapshot after a checkpoint; rollup and event rows)", embedded.bytes as f64, embedded.rows as f64),
        (
            "ClickHouse (system.parts after OPTIMIZE FINAL; raw, rollup and dictionary rows)",
            ch.bytes as f64,
            ch.rows as f64,
        ),
        ("DuckDB (database file; raw, rollup and query tables)", duck_bytes, duck_rows),
    ] {
        let _ = writeln!(out, "| {name} | {bytes:.0} | {rows:.0} | {:.1} | {:.1} |", bytes / rows, bytes / records);
    }
    let _ = writeln!(out);
    for m in [embedded, ch] {
        let mut latencies = m.access.latencies_ms.clone();
        latencies.sort_by(f64::total_cmp);
        let _ = writeln!(
            out,
            "{}: load average {:.1} during its run; access-log requests p50 {:.0} ms, p99 {:.0} ms each.",
            m.name,
            m.load,
            percentile(&latencies, 0.5),
            percentile(&latencies, 0.99)
        );
    }
    let _ = writeln!(
        out,
        "Query latencies: {RUNS} runs each after {WARMUP} warm-up runs; DuckDB's in-process, the servers' through HTTP. \
         The first run is the first request of the query after the ingestion: ClickHouse keeps each day's top URLs \
         until records of that day arrive, so its later runs of the daily top URLs read only which parts the day has."
    );
    let _ =
        writeln!(out, "(The 5-minute and hourly queries span a week and a month; the data, the hour before midnight.)");
    print!("{out}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(table: &str, new_parts: u64, merges: u64) -> TableWork {
        TableWork {
            table: table.into(),
            new_parts,
            new_rows: new_parts * 10,
            new_ms: new_parts * 2,
            merges,
            merged_rows: merges * 100,
            merge_ms: merges * 50,
        }
    }

    #[test]
    fn work_between_counts_what_each_table_did_in_between() {
        let before = [work("access", 3, 1), work("dict", 2, 0)];
        let after = [work("access", 5, 2), work("delivery_day", 4, 1), work("dict", 2, 0)];
        assert_eq!(work_between(&before, &after), vec![work("access", 2, 1), work("delivery_day", 4, 1)]);
    }

    #[test]
    fn the_work_table_sums_every_table() {
        let mut out = String::new();
        work_table(&mut out, 10, &[work("access", 2, 1), work("delivery_day", 4, 1)]);
        let last = out.lines().last().unwrap_or_default();
        assert_eq!(last, "| all tables | 6 (6.00) | 0.0 | 2 (20.00) | 0.1 | 500.0 |");
    }
}
