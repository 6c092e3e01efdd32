//! Ingestion through the HTTP API: NDJSON request bodies of a fixed number of records posted over a few
//! keep-alive connections with a session, as a log shipper would; and `edge-bench ingest`, that measurement
//! alone on an empty server (for profiling).
//!
//! Usage: edge-bench ingest --work DIR --server PATH/edge-server [--records N] [--connections N]
//!        [--kind accesslogs|securityevents] [--data realistic|uniform] [--encoding gzip|zstd] [--memory]

use std::{
    io::Write,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use edge_server::{
    clock::SystemClock,
    stats::{StatsEngine, memory::MemoryEngine},
};

use crate::{
    Args,
    logs::{self, Shape},
    server::{self, Server},
};

pub const PASSWORD: &str = "benchmark-password";
/// Records in one request, as the issue measures.
pub const RECORDS_PER_REQUEST: usize = 10_000;

/// What a run of posts did.
pub struct Posted {
    pub accepted: u64,
    pub seconds: f64,
    /// Latency of each request, in milliseconds.
    pub latencies_ms: Vec<f64>,
}

/// Posts every body to `url` over `connections` connections; fails on any error answer or rejected line.
pub fn post_all(
    url: &str,
    cookie: &str,
    bodies: &Arc<Vec<Vec<u8>>>,
    connections: usize,
    encoding: Option<&str>,
) -> Result<Posted> {
    let next = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    type Worker = thread::JoinHandle<Result<(u64, Vec<f64>)>>;
    let workers: Vec<Worker> = (0..connections.max(1))
        .map(|_| {
            let (url, cookie, bodies, next) = (url.to_string(), cookie.to_string(), bodies.clone(), next.clone());
            let encoding = encoding.map(str::to_string);
            thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(600)).build();
                let (mut accepted, mut latencies) = (0u64, Vec::new());
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(body) = bodies.get(i) else { break };
                    let mut request =
                        agent.post(&url).set("Cookie", &cookie).set("Content-Type", "application/x-ndjson");
                    if let Some(e) = &encoding {
                        request = request.set("Content-Encoding", e);
                    }
                    let t = Instant::now();
                    let reply: serde_json::Value = request
                        .send_bytes(body)
                        .map_err(|e| match e {
                            ureq::Error::Status(code, r) => {
                                anyhow::anyhow!("{code}: {}", r.into_string().unwrap_or_default())
                            }
                            e => e.into(),
                        })
                        .context("posting a batch")?
                        .into_json()?;
                    latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                    anyhow::ensure!(
                        reply["rejected"].as_array().is_some_and(Vec::is_empty),
                        "rejected lines: {}",
                        &reply.to_string()[..reply.to_string().len().min(300)]
                    );
                    anyhow::ensure!(reply.get("folded").is_none(), "values folded: {reply}");
                    accepted += reply["accepted"].as_u64().unwrap_or(0);
                }
                Ok((accepted, latencies))
            })
        })
        .collect();
    let mut posted = Posted { accepted: 0, seconds: 0.0, latencies_ms: Vec::new() };
    for w in workers {
        let (accepted, latencies) = w.join().map_err(|_| anyhow::anyhow!("a posting thread panicked"))??;
        posted.accepted += accepted;
        posted.latencies_ms.extend(latencies);
    }
    // The clock stops once every acknowledged record is summed: a query of the same customer answers only then.
    settled(url, cookie)?;
    posted.seconds = t.elapsed().as_secs_f64();
    Ok(posted)
}

/// Asks the customer of the ingestion address `url` (`…/{customer}/v1/ingest/{kind}`) for a small report,
/// which the server answers once every batch it acknowledged is applied.
fn settled(url: &str, cookie: &str) -> Result<()> {
    let (api, _) = url.rsplit_once("/ingest/").context("an ingestion address ends in /ingest/{kind}")?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64;
    let day = now - now.rem_euclid(86_400_000);
    let query = format!(
        "{api}/stats/data?starttime={}&endtime={}&dimensions=country&metrics=hits&granularity=day&limit=1",
        edge_api::stats::format_time(day - 86_400_000),
        edge_api::stats::format_time(day + 86_400_000)
    );
    ureq::get(&query).set("Cookie", cookie).call().context("the query after ingestion")?;
    Ok(())
}

/// `body` compressed as a `Content-Encoding` (`gzip` or `zstd`) names it.
pub fn compress(encoding: &str, body: &[u8]) -> Result<Vec<u8>> {
    Ok(match encoding {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(body)?;
            e.finish()?
        }
        "zstd" => zstd::encode_all(body, 3)?,
        other => anyhow::bail!("unknown encoding {other}"),
    })
}

/// Request bodies of [`RECORDS_PER_REQUEST`] lines each from NDJSON text.
pub fn bodies(text: &str) -> Vec<Vec<u8>> {
    let lines: Vec<&str> = text.lines().collect();
    lines.chunks(RECORDS_PER_REQUEST).map(|c| c.join("\n").into_bytes()).collect()
}

/// Ingests the first records of `file` (at most 500,000) into an engine of its own in `dir`, in batches of
/// [`RECORDS_PER_REQUEST`]: records, bytes per stored row (open buckets keep their index), rollup rows.
pub fn memory_sample(dir: &std::path::Path, file: &std::path::Path, n: u64) -> Result<(usize, f64, u64)> {
    let sample = n.min(500_000) as usize;
    let text = std::fs::read_to_string(file)?;
    let engine = MemoryEngine::open(dir, Arc::new(SystemClock))?;
    for chunk in text.lines().take(sample).collect::<Vec<_>>().chunks(RECORDS_PER_REQUEST) {
        let (batch, _) = edge_server::stats::ingest::parse_access(&chunk.join("\n"));
        engine.ingest_access(1, &batch, None)?;
    }
    let f = engine.footprint();
    drop(engine);
    let _ = std::fs::remove_dir_all(dir);
    Ok((sample, f.bytes as f64 / (f.rollup_rows + f.event_rows) as f64, f.rollup_rows))
}

pub fn run(args: &Args) -> Result<()> {
    let work = args.path("--work")?;
    let server_bin = args.path("--server")?;
    let n: u64 = args.number("--records")?.unwrap_or(1_000_000);
    let connections: usize = args.number("--connections")?.unwrap_or(2);
    let kind = args.value("--kind").unwrap_or_else(|| "accesslogs".into());
    let encoding = args.value("--encoding");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let data = work.join("data");
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let state = edge_server::AppState::open(edge_server::Settings::new(&data, work.join("none"))).await?;
        edge_server::admin::add_customer(&state, "ingest", "admin", PASSWORD).await?;
        anyhow::Ok(())
    })?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64;
    let end = now - now.rem_euclid(300_000);
    let file = work.join("records.ndjson");
    let shape = match args.value("--data") {
        None => Shape::Realistic,
        Some(s) => Shape::parse(&s).context(
            "--data is hour-in-order, hour-shuffled, day-shuffled, 5-days-shuffled, late-arrivals or uniform",
        )?,
    };
    if kind == "accesslogs" {
        logs::write_access(&file, n, end, shape)?;
    } else {
        logs::write_security(&file, n, end, shape)?;
    }
    if args.0.iter().any(|a| a == "--memory") && kind == "accesslogs" {
        let (sample, bytes, rows) = memory_sample(&work.join("sample"), &file, n)?;
        println!(
            "ingest: memory after {sample} records through the ingestion path: {bytes:.0} bytes per stored row ({rows} rollup rows)"
        );
    }
    let text = std::fs::read_to_string(&file)?;
    let mut bodies = bodies(&text);
    drop(text);
    let raw_bytes: usize = bodies.iter().map(Vec::len).sum();
    if let Some(e) = &encoding {
        bodies = bodies.iter().map(|b| compress(e, b)).collect::<Result<_>>()?;
    }
    let bodies = Arc::new(bodies);
    // `--stats-url URL`: into ClickHouse (a database of its own for each run) instead of the embedded engine.
    let stats_url = args.value("--stats-url");
    let mut flags = vec!["--max-body-bytes", "33554432"];
    if let Some(url) = &stats_url {
        flags.extend(["--stats-url", url.as_str()]);
    }
    let server = Server::start(&server_bin, &data, &flags, &[])?;
    println!("ingest: server pid {} at {}", server.pid(), server.base);
    let cookie = server.login("ingest", "admin", PASSWORD)?;
    let cpu = server.cpu_seconds();
    let client_cpu = server::cpu_seconds(std::process::id());
    let posted = post_all(
        &format!("{}/ingest/v1/ingest/{kind}", server.base),
        &cookie,
        &bodies,
        connections,
        encoding.as_deref(),
    )?;
    let cpu = server.cpu_seconds() - cpu;
    let client_cpu = server::cpu_seconds(std::process::id()) - client_cpu;
    anyhow::ensure!(posted.accepted == n, "accepted {} of {n}", posted.accepted);
    let sent: usize = bodies.iter().map(Vec::len).sum();
    println!(
        "ingest: {n} {kind} records ({shape:?} data, {:.0} MB, {:.0} MB sent) in {:.2} s over {connections} connections: {:.0} records/s; \
         server CPU {:.2} s ({:.2} µs a record), client CPU {:.2} µs a record; load average {:.1}",
        raw_bytes as f64 / 1e6,
        sent as f64 / 1e6,
        posted.seconds,
        n as f64 / posted.seconds,
        cpu,
        cpu * 1e6 / n as f64,
        client_cpu * 1e6 / n as f64,
        server::load_average()
    );
    Ok(())
}
