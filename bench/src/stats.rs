//! `edge-bench stats`: generates a large reproducible statistics dataset (over 20 million rollup rows and two
//! million raw events), loads the same rows into our store and into DuckDB, runs representative queries
//! through our HTTP API and in DuckDB side by side, and prints the medians and their ratio; then measures
//! ingestion through the HTTP API over one connection, of logs shaped like a CDN's whose times come in every
//! shape (see [`logs::Shape`]: the last hour in order, shuffled over an hour, a day and five days, late
//! arrivals), against DuckDB reading the same NDJSON files, raw and into the same rollups: uncompressed alone,
//! then zstd-compressed into another customer while a loop of dashboard queries reads the dataset (their
//! latency during each shape's ingestion); and security events. Five days of shuffled records make about 20
//! rollup rows a record, so the default of 500,000 records of each shape takes a few GB.
//!
//! Usage: edge-bench stats --work DIR --server PATH/edge-server --python PATH/python3 [--ingest N]
//!        [--engine clickhouse] (the same measurements on ClickHouse beside the embedded engine: see [`crate::clickhouse`])

use std::{
    fmt::Write as _,
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};

use crate::{
    Args,
    compare::{
        DAY, DUCKDB_TIMED, EVENT_COLUMNS, PASSWORD, WARMUP, csv_time, duckdb_columns, duckdb_rollups, percentile,
        queries,
    },
    ingest::{self, compress},
    logs::{self, Rng, Shape, domain, property},
    server::{Server, load_average},
};

/// Connections the ingestion measurement posts over: one, a shipper that waits for each answer.
const CONNECTIONS: usize = 1;
/// The server's limits during the benchmark: none that the data reaches (nothing is folded or refused).
const LIMITS: [&str; 4] = ["--stats-max-values", "33554431", "--stats-max-rows", "1000000000"];
/// The token of the benchmark server's /metrics.
const METRICS_TOKEN: &str = "benchmark-metrics-token";
use edge_api::stats::{Family, Granularity, format_time};
use edge_server::{
    AppState, Settings, admin,
    clock::SystemClock,
    stats::{SecurityRecord, StatsEngine, ingest::SECURITY_DIMS, memory::MemoryEngine},
};

const RUNS: usize = 15;

const STATUS: [u16; 12] = [200, 201, 204, 301, 302, 304, 400, 403, 404, 500, 502, 503];

fn country(i: u64) -> String {
    format!("Country {i:02}")
}

/// One grouping set of the dataset: its table name (DuckDB), family, granularity, dimensions, time range and
/// the rows' dimension values for a bucket.
struct Set {
    table: &'static str,
    family: Family,
    granularity: Granularity,
    dims: [&'static str; 3],
    n_dims: usize,
    start: i64,
    end: i64,
    /// Dimension value combinations per bucket: (values, keep probability in 1/1000).
    combos: Vec<Vec<String>>,
    density: u64,
}

fn sets(end: i64) -> Vec<Set> {
    let cp: Vec<Vec<String>> = (0..60).flat_map(|c| (0..50).map(move |p| vec![country(c), property(p)])).collect();
    let ds: Vec<Vec<String>> =
        (0..250).flat_map(|d| STATUS.iter().map(move |s| vec![domain(d), s.to_string()])).collect();
    let dc: Vec<Vec<String>> = (0..250).flat_map(|d| (0..60).map(move |c| vec![domain(d), country(c)])).collect();
    let urls: Vec<Vec<String>> =
        (0..50).flat_map(|p| (0..3000).map(move |u| vec![property(p), format!("/p/{u}")])).collect();
    let week = end - 7 * DAY;
    let month = end - 31 * DAY;
    vec![
        Set {
            table: "r5_cp",
            family: Family::Delivery,
            granularity: Granularity::FiveMinute,
            dims: ["country", "property", ""],
            n_dims: 2,
            start: week,
            end,
            combos: cp.clone(),
            density: 1000,
        },
        Set {
            table: "r5_ds",
            family: Family::Delivery,
            granularity: Granularity::FiveMinute,
            dims: ["domain", "http_status_code", ""],
            n_dims: 2,
            start: week,
            end,
            combos: ds.clone(),
            density: 660,
        },
        Set {
            table: "rh_ds",
            family: Family::Delivery,
            granularity: Granularity::Hour,
            dims: ["domain", "http_status_code", ""],
            n_dims: 2,
            start: month,
            end,
            combos: ds,
            density: 1000,
        },
        Set {
            table: "rh_cp",
            family: Family::Delivery,
            granularity: Granularity::Hour,
            dims: ["country", "property", ""],
            n_dims: 2,
            start: month,
            end,
            combos: cp,
            density: 1000,
        },
        Set {
            table: "rd_dc",
            family: Family::Delivery,
            granularity: Granularity::Day,
            dims: ["domain", "country", ""],
            n_dims: 2,
            start: end - 365 * DAY,
            end,
            combos: dc,
            density: 300,
        },
        Set {
            table: "urls",
            family: Family::TopKUrl,
            granularity: Granularity::Day,
            dims: ["property", "request_url", ""],
            n_dims: 2,
            start: end - 30 * DAY,
            end,
            combos: urls,
            density: 1000,
        },
    ]
}

/// Generates the rollup rows of every set, loads them into `engine` and writes them as CSV for DuckDB.
fn generate(engine: &MemoryEngine, customer: i64, end: i64, csv_dir: &Path) -> Result<u64> {
    let mut total = 0;
    for set in sets(end) {
        let mut rng = Rng(set.table.bytes().fold(17, |h, b| h * 31 + u64::from(b)));
        let step = set.granularity.millis();
        let mut csv = BufWriter::with_capacity(1 << 22, File::create(csv_dir.join(format!("{}.csv", set.table)))?);
        let dims = &set.dims[..set.n_dims];
        let metric_names: &[&str] =
            if set.family == Family::TopKUrl { &["hits"] } else { &edge_api::stats::DELIVERY_METRICS };
        writeln!(csv, "ts,{},{}", dims.join(","), metric_names.join(","))?;
        let mut rows = Vec::new();
        let mut bucket = set.start - set.start.rem_euclid(step);
        while bucket < set.end {
            let ts = csv_time(bucket);
            for combo in &set.combos {
                if rng.below(1000) >= set.density {
                    continue;
                }
                let hits = 1 + rng.below(5000);
                let metrics: Vec<u64> = if set.family == Family::TopKUrl {
                    vec![hits]
                } else {
                    let bytes = hits * (2_000 + rng.below(200_000));
                    vec![
                        bytes / 10,
                        hits,
                        bytes,
                        bytes / 5,
                        bytes / 3,
                        hits * (20 + rng.below(200)),
                        hits * (5 + rng.below(50)),
                        hits * (30 + rng.below(300)),
                    ]
                };
                write!(csv, "{ts}")?;
                for v in combo {
                    write!(csv, ",{v}")?;
                }
                for m in &metrics {
                    write!(csv, ",{m}")?;
                }
                writeln!(csv)?;
                rows.push((bucket, combo.clone(), metrics));
            }
            if rows.len() > 1_000_000 {
                total += engine.bulk_load(customer, set.family, set.granularity, dims, rows.drain(..))?;
            }
            bucket += step;
        }
        total += engine.bulk_load(customer, set.family, set.granularity, dims, rows.drain(..))?;
        csv.flush()?;
    }
    Ok(total)
}

fn generate_events(engine: &MemoryEngine, customer: i64, end: i64, n: u64, csv_dir: &Path) -> Result<()> {
    let mut rng = Rng(99);
    let start = end - end.rem_euclid(DAY) - 3 * DAY;
    let span = (end - start) as u64;
    let mut csv = BufWriter::with_capacity(1 << 22, File::create(csv_dir.join("events.csv"))?);
    writeln!(csv, "ts,{}", EVENT_COLUMNS.join(","))?;
    let mut batch = Vec::with_capacity(100_000);
    for i in 0..n {
        let ts = start + (i * span / n) as i64;
        let values = [
            format!("198.51.{}.{}", rng.below(256), rng.below(256)),
            country(rng.below(60))[8..].to_string(),
            ["BLOCK", "WARN", "RATE_LIMIT"][rng.below(3) as usize].to_string(),
            format!("9{:05}", rng.below(400)),
            ["LOW", "MEDIUM", "HIGH", "CRITICAL"][rng.below(4) as usize].to_string(),
            domain(rng.below(250)),
            format!("/path/{}", rng.below(5000)),
        ];
        writeln!(csv, "{},{}", csv_time(ts) + &format!(".{:03}", ts.rem_euclid(1000)), values.join(","))?;
        let mut dims: [String; 14] = Default::default();
        for (d, v) in EVENT_COLUMNS.iter().zip(values) {
            if let Some(at) = SECURITY_DIMS.iter().position(|n| n == d) {
                dims[at] = v;
            }
        }
        batch.push(SecurityRecord { ts_ms: ts, dims });
        if batch.len() == 100_000 {
            engine.bulk_load_events(customer, &batch)?;
            batch.clear();
        }
    }
    engine.bulk_load_events(customer, &batch)?;
    csv.flush()?;
    Ok(())
}

const DUCKDB_SCRIPT: &str = r#"
import json, sys, time, statistics
import duckdb
spec = json.load(open(sys.argv[1]))
con = duckdb.connect()
out = {"load_s": 0.0, "queries": []}
t0 = time.perf_counter()
for table in spec["tables"]:
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_csv('{spec['csv_dir']}/{table}.csv', header=true)")
out["load_s"] = time.perf_counter() - t0
for q in spec["queries"]:
    out["queries"].append(statistics.median(timed(con, q, spec["warmup"], spec["runs"])))
out["ingest"], out["rollups"] = [], []
for path in spec["ndjson"]:
    con = duckdb.connect()
    t = time.perf_counter()
    con.execute(f"CREATE TABLE raw AS SELECT * FROM read_ndjson('{path}')")
    n = con.execute("SELECT count(*) FROM raw").fetchone()[0]
    out["ingest"].append([n, time.perf_counter() - t])
    con.execute("DROP TABLE raw")
    # The same file typed as the engine reads it, then every rollup the engine keeps: one figure.
    t = time.perf_counter()
    con.execute(f"CREATE TABLE logs AS SELECT * FROM read_ndjson('{path}', columns={spec['columns']})")
    for sql in spec["rollups"]:
        con.execute(sql)
    out["rollups"].append([len(spec["rollups"]), time.perf_counter() - t])
    con.close()
print(json.dumps(out))
"#;

/// Typical console panels over the dataset, for the query loop during ingestion.
fn dashboard(end: i64) -> Vec<String> {
    let t = |ms: i64| format_time(ms);
    let day = end - end.rem_euclid(DAY);
    vec![
        format!(
            "/stats/data?starttime={}&endtime={}&dimensions=country,property&metrics=hits,last_mile_bandwidth_bytes&granularity=5minute&sortby=-hits&limit=20",
            t(end - DAY),
            t(end)
        ),
        format!(
            "/stats/data?starttime={}&endtime={}&dimensions=domain,http_status_code&metrics=hits&granularity=hour&filters=http_status_code!%3D200&limit=100",
            t(end - 7 * DAY),
            t(end)
        ),
        format!(
            "/stats/topk/url/data?starttime={}&endtime={}&dimensions=customer,property,request_url&metrics=hits",
            t(day - 7 * DAY),
            t(day)
        ),
        format!(
            "/stats/security/events/data?starttime={}&endtime={}&dimensions={}&sortby=-event_timestamp_ms&limit=100",
            t(day - DAY),
            t(end),
            EVENT_COLUMNS.join(",")
        ),
    ]
}

/// The shapes of data ingestion is measured with (access logs).
const SHAPES: [Shape; 5] = [
    Shape::Realistic,
    Shape::Shuffled(logs::Span::Hour),
    Shape::Shuffled(logs::Span::Day),
    Shape::Shuffled(logs::Span::FiveDays),
    Shape::Late,
];

/// The customer a run of a shape ingests into: one each, so that every run starts from nothing.
fn customer_of(shape: Shape, zstd: bool) -> String {
    if zstd { format!("{}-zstd", shape.name()) } else { shape.name().to_string() }
}

/// What one run of posts measured.
struct Run {
    posted: ingest::Posted,
    /// Server CPU seconds it took.
    cpu: f64,
    /// Load average of the machine (its mean over the run's start and end).
    load: f64,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.posted.accepted as f64 / self.posted.seconds
    }

    fn cpu_us(&self) -> f64 {
        self.cpu * 1e6 / self.posted.accepted.max(1) as f64
    }

    fn latency(&self, p: f64) -> f64 {
        let mut l = self.posted.latencies_ms.clone();
        l.sort_by(f64::total_cmp);
        percentile(&l, p)
    }
}

/// What the ingestion of one shape measured.
struct Ingested {
    shape: Shape,
    plain: Run,
    zstd: Run,
    /// Dashboard query latencies (ms, sorted) during the zstd run.
    queries: Vec<f64>,
    /// Rows the plain run's customer holds, and their memory, from the server's /metrics.
    rows: u64,
    bytes: u64,
    /// The dashboard's panels read from the plain run's customer right after it (ms, all panels): the first
    /// time (rollups summed from their stand-ins when read are summed then), and again.
    panels: (f64, f64),
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run(args: &Args) -> Result<()> {
    let work = args.path("--work")?;
    let server = args.path("--server")?;
    let python = args.path("--python")?;
    let ingest_n: u64 = args.number("--ingest")?.unwrap_or(500_000);
    let _ = std::fs::remove_dir_all(&work);
    let (data, csv_dir) = (work.join("data"), work.join("csv"));
    std::fs::create_dir_all(&csv_dir)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64;
    let end = now - now.rem_euclid(300_000);

    // 1. The dataset, into our store (written as a snapshot) and as CSV.
    let t = Instant::now();
    let rt = tokio::runtime::Runtime::new()?;
    let (bench_id, rows, footprint) = rt.block_on(async {
        let state = AppState::open(Settings::new(&data, work.join("none"))).await?;
        admin::add_customer(&state, "bench", "admin", PASSWORD).await?;
        for shape in SHAPES {
            for zstd in [false, true] {
                admin::add_customer(&state, &customer_of(shape, zstd), "admin", PASSWORD).await?;
            }
        }
        let customer = state.store.customer_by_name("bench").await?.context("bench customer")?;
        drop(state);
        let engine = MemoryEngine::open(&data, Arc::new(SystemClock))?;
        let rows = generate(&engine, customer.id, end, &csv_dir)?;
        generate_events(&engine, customer.id, end, 2_000_000, &csv_dir)?;
        let footprint = engine.footprint();
        engine.checkpoint()?;
        anyhow::Ok((customer.id, rows, footprint))
    })?;
    let _ = bench_id;
    println!(
        "dataset: {rows} rollup rows and {} raw events, generated and loaded in {:.1} s",
        footprint.event_rows,
        t.elapsed().as_secs_f64()
    );
    println!(
        "memory: {:.1} MiB, {:.0} bytes per stored row (rollup and event rows, with dictionaries)",
        footprint.bytes as f64 / 1048576.0,
        footprint.bytes as f64 / (footprint.rollup_rows + footprint.event_rows) as f64
    );
    let files: Vec<(Shape, PathBuf)> =
        SHAPES.iter().map(|shape| (*shape, work.join(format!("access-{}.ndjson", shape.name())))).collect();
    for (shape, access) in &files {
        logs::write_access(access, ingest_n, end, *shape)?;
    }
    let security_file = work.join("security.ndjson");
    logs::write_security(&security_file, ingest_n / 5, end, Shape::Realistic)?;

    // 2. Our server on that data.
    let t = Instant::now();
    let mut flags = vec!["--max-body-bytes", "33554432", "--metrics-token", METRICS_TOKEN];
    flags.extend(LIMITS);
    let running = Server::start(&server, &data, &flags, &[])?;
    let base = running.base.clone();
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(600)).build();
    println!("server started (snapshot loaded) in {:.1} s", t.elapsed().as_secs_f64());
    let login = |customer: &str| running.login(customer, "admin", PASSWORD);
    let cookie = login("bench")?;

    // 3. The queries: ours through HTTP, DuckDB's in Python, the same rows, medians of 15 runs.
    let qs = queries(end);
    let mut ours = Vec::new();
    for q in &qs {
        let url = format!("{base}/bench/v1{}", q.ours);
        let mut times = Vec::new();
        let mut check = String::new();
        for i in 0..WARMUP + RUNS {
            let t = Instant::now();
            let body = agent.get(&url).set("Cookie", &cookie).call().with_context(|| q.name)?.into_string()?;
            if i >= WARMUP {
                times.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            check = body;
        }
        let v: serde_json::Value = serde_json::from_str(&check)?;
        anyhow::ensure!(
            v["rows"].as_array().is_some_and(|r| !r.is_empty()),
            "{}: no rows: {}",
            q.name,
            &check[..check.len().min(300)]
        );
        ours.push((median(times), v["total_results"].as_u64().unwrap_or(0), v["rows"].as_array().map_or(0, Vec::len)));
    }
    let spec = serde_json::json!({
        "csv_dir": csv_dir,
        "tables": ["r5_cp", "r5_ds", "rh_ds", "rh_cp", "rd_dc", "urls", "events"],
        "queries": qs.iter().map(|q| q.duck.clone()).collect::<Vec<_>>(),
        "warmup": WARMUP,
        "runs": RUNS,
        "ndjson": files.iter().map(|(_, access)| access).collect::<Vec<_>>(),
        "columns": duckdb_columns(),
        "rollups": duckdb_rollups(),
    });
    let spec_path = work.join("duckdb.json");
    std::fs::write(&spec_path, spec.to_string())?;
    let script = work.join("duckdb_bench.py");
    std::fs::write(&script, format!("{DUCKDB_TIMED}{DUCKDB_SCRIPT}"))?;

    // 4. Ingestion through our HTTP API, one shape after another, each run into a customer of its own: requests
    //    of 10,000 records over one connection with a session, uncompressed alone; then zstd-compressed while
    //    a loop of dashboard queries reads the dataset. Then security events.
    let url = |customer: &str, kind: &str| format!("{base}/{customer}/v1/ingest/{kind}");
    let run = |customer: &str, kind: &str, bodies: &Arc<Vec<Vec<u8>>>, encoding: Option<&str>| -> Result<Run> {
        let cookie = login(customer)?;
        let (load, cpu) = (load_average(), running.cpu_seconds());
        let posted = ingest::post_all(&url(customer, kind), &cookie, bodies, CONNECTIONS, encoding)?;
        let cpu = running.cpu_seconds() - cpu;
        Ok(Run { posted, cpu, load: (load + load_average()) / 2.0 })
    };
    let metrics = || -> Result<String> {
        Ok(agent
            .get(&format!("{base}/metrics"))
            .set("Authorization", &format!("Bearer {METRICS_TOKEN}"))
            .call()?
            .into_string()?)
    };
    let mut ingested = Vec::new();
    for (shape, access_file) in &files {
        let text = std::fs::read_to_string(access_file)?;
        let plain = Arc::new(ingest::bodies(&text));
        let compressed: Arc<Vec<Vec<u8>>> = Arc::new(plain.iter().map(|b| compress("zstd", b)).collect::<Result<_>>()?);
        drop(text);
        let plain_run = run(&customer_of(*shape, false), "accesslogs", &plain, None)?;
        anyhow::ensure!(plain_run.posted.accepted == ingest_n, "accepted {} of {ingest_n}", plain_run.posted.accepted);
        drop(plain);
        let panels = {
            let customer = customer_of(*shape, false);
            let cookie = login(&customer)?;
            let pass = || -> Result<f64> {
                let t = Instant::now();
                for q in dashboard(end) {
                    let url = format!("{base}/{customer}/v1{q}");
                    agent.get(&url).set("Cookie", &cookie).call().with_context(|| url.clone())?.into_string()?;
                }
                Ok(t.elapsed().as_secs_f64() * 1000.0)
            };
            (pass()?, pass()?)
        };
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let looper = {
            let (stop, cookie, agent) = (stop.clone(), cookie.clone(), agent.clone());
            let urls: Vec<String> = dashboard(end).iter().map(|q| format!("{base}/bench/v1{q}")).collect();
            std::thread::spawn(move || -> Result<Vec<f64>> {
                let mut times = Vec::new();
                for url in urls.iter().cycle() {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let t = Instant::now();
                    agent.get(url).set("Cookie", &cookie).call().with_context(|| url.clone())?.into_string()?;
                    times.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                Ok(times)
            })
        };
        let zstd_run = run(&customer_of(*shape, true), "accesslogs", &compressed, Some("zstd"));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut queries = looper.join().map_err(|_| anyhow::anyhow!("the query loop panicked"))??;
        let zstd_run = zstd_run?;
        anyhow::ensure!(zstd_run.posted.accepted == ingest_n, "accepted {} of {ingest_n}", zstd_run.posted.accepted);
        queries.sort_by(f64::total_cmp);
        let text = metrics()?;
        let sample = |name: &str| -> u64 {
            let key = format!("{name}{{customer=\"{}\"}} ", customer_of(*shape, false));
            text.lines().find_map(|l| l.strip_prefix(&key)?.parse().ok()).unwrap_or(0)
        };
        let (rows, bytes) = (sample("edge_stats_rows"), sample("edge_stats_memory_bytes"));
        println!(
            "{}: {:.0} records/s ({:.2} µs of server CPU a record, load {:.1}); zstd {:.0} records/s with {} dashboard queries (p99 {:.1} ms); {rows} rows",
            shape.name(),
            plain_run.per_second(),
            plain_run.cpu_us(),
            plain_run.load,
            zstd_run.per_second(),
            queries.len(),
            percentile(&queries, 0.99)
        );
        ingested.push(Ingested { shape: *shape, plain: plain_run, zstd: zstd_run, queries, rows, bytes, panels });
    }
    let bodies = Arc::new(ingest::bodies(&std::fs::read_to_string(&security_file)?));
    let security = run(&customer_of(Shape::Realistic, false), "securityevents", &bodies, None)?;
    anyhow::ensure!(security.posted.accepted == ingest_n / 5, "accepted {} events", security.posted.accepted);
    drop(bodies);
    let resident = metrics()?
        .lines()
        .find_map(|l| l.strip_prefix("edge_process_resident_bytes ")?.parse::<u64>().ok())
        .unwrap_or(0);
    drop(running);

    let out = Command::new(&python).arg(&script).arg(&spec_path).output().context("running the DuckDB side")?;
    anyhow::ensure!(out.status.success(), "DuckDB side failed: {}", String::from_utf8_lossy(&out.stderr));
    let duck: serde_json::Value = serde_json::from_slice(&out.stdout)?;

    let mut table = String::new();
    let _ = writeln!(table, "| query | rows (total) | edge-server, HTTP (ms) | DuckDB (ms) | DuckDB / edge-server |");
    let _ = writeln!(table, "|---|---|---|---|---|");
    let mut all_faster = true;
    for (i, q) in qs.iter().enumerate() {
        let (ms, total, n) = ours[i];
        let d = duck["queries"][i].as_f64().unwrap_or(f64::NAN);
        all_faster &= ms < d;
        let _ = writeln!(table, "| {} | {n} ({total}) | {ms:.2} | {d:.2} | {:.1}× |", q.name, d / ms);
    }
    println!();
    print!("{table}");
    println!();
    println!(
        "| records' times ({ingest_n} access-log records, requests of {}, {CONNECTIONS} connection, uncompressed) | edge-server records/s | server CPU a record | request p50 / p99 | load | DuckDB read_ndjson records/s | DuckDB read_ndjson + {} rollup tables records/s | edge-server / DuckDB + rollups | dashboard of the records after: first, again |",
        ingest::RECORDS_PER_REQUEST,
        duck["rollups"][0][0].as_u64().unwrap_or(0),
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut slowest = f64::INFINITY;
    let mut least_ratio = f64::INFINITY;
    for (i, run) in ingested.iter().enumerate() {
        let (dn, ds) =
            (duck["ingest"][i][0].as_f64().unwrap_or(0.0), duck["ingest"][i][1].as_f64().unwrap_or(f64::NAN));
        let rollups_s = duck["rollups"][i][1].as_f64().unwrap_or(f64::NAN);
        let ours = run.plain.per_second();
        let with_rollups = ingest_n as f64 / rollups_s;
        slowest = slowest.min(ours);
        least_ratio = least_ratio.min(ours / with_rollups);
        println!(
            "| {} | {ours:.0} | {:.2} µs | {:.0} / {:.0} ms | {:.1} | {:.0} | {with_rollups:.0} | {:.1}× | {:.0} / {:.0} ms |",
            run.shape.description(),
            run.plain.cpu_us(),
            run.plain.latency(0.5),
            run.plain.latency(0.99),
            run.plain.load,
            dn / ds,
            ours / with_rollups,
            run.panels.0,
            run.panels.1,
        );
    }
    println!();
    println!(
        "| records' times (zstd-compressed, {CONNECTIONS} connection, dashboard queries on another customer meanwhile) | edge-server records/s | server CPU a record | load | dashboard queries | query p50 | query p99 | rows held (memory a row) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for run in &ingested {
        println!(
            "| {} | {:.0} | {:.2} µs | {:.1} | {} | {:.1} ms | {:.1} ms | {} ({:.0} bytes) |",
            run.shape.description(),
            run.zstd.per_second(),
            run.zstd.cpu_us(),
            run.zstd.load,
            run.queries.len(),
            percentile(&run.queries, 0.5),
            percentile(&run.queries, 0.99),
            run.rows,
            run.bytes as f64 / run.rows.max(1) as f64,
        );
    }
    println!();
    println!(
        "Security events: {} (last hour, in order), {:.0} events/s, {:.2} µs of server CPU an event, load {:.1}.",
        ingest_n / 5,
        security.per_second(),
        security.cpu_us(),
        security.load
    );
    println!("Server resident memory at the end: {:.0} MiB.", resident as f64 / 1048576.0);
    println!(
        "Slowest shape: {slowest:.0} records/s (goal 250,000); least ratio to DuckDB's load + rollups: {least_ratio:.2}× (goal 1.5×)."
    );
    println!("DuckDB loaded the CSV tables in {:.1} s.", duck["load_s"].as_f64().unwrap_or(0.0));
    println!(
        "{}",
        if all_faster {
            "edge-server was faster on every query."
        } else {
            "edge-server was NOT faster on every query."
        }
    );
    Ok(())
}
