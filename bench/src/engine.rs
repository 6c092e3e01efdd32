//! `edge-bench engine`: the embedded engine alone, without HTTP — parses NDJSON access logs of a shape in
//! requests' chunks and stores them in a `MemoryEngine` of its own, timing parsing and storing apart (for
//! profiling the engine with `perf record`). Times are the process's CPU time (parsing and summing use one
//! thread a core), which depends far less than the wall clock on what else the shared machine runs, and the
//! wall clock.
//!
//! Usage: edge-bench engine --work DIR [--records N] [--data SHAPE]

use std::sync::Arc;

use anyhow::{Context, Result};
use edge_server::{
    clock::SystemClock,
    stats::{StatsEngine, ingest::parse_access, memory::MemoryEngine},
};

use crate::{
    Args,
    ingest::RECORDS_PER_REQUEST,
    logs::{self, Shape},
};

pub fn run(args: &Args) -> Result<()> {
    // As the server does (see its main.rs): mimalloc asks for huge pages, whose zeroing would be measured.
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes nothing but this process's flag.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    let work = args.path("--work")?;
    let n: u64 = args.number("--records")?.unwrap_or(1_000_000);
    let shape = match args.value("--data") {
        None => Shape::Realistic,
        Some(s) => Shape::parse(&s).context("--data names a shape of logs::Shape::ALL")?,
    };
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64;
    let end = now - now.rem_euclid(300_000);
    let file = work.join("records.ndjson");
    logs::write_access(&file, n, end, shape)?;
    let text = std::fs::read_to_string(&file)?;
    let chunks: Vec<String> =
        text.lines().collect::<Vec<_>>().chunks(RECORDS_PER_REQUEST).map(|c| c.join("\n")).collect();
    drop(text);
    let engine = MemoryEngine::open(&work.join("data"), Arc::new(SystemClock))?;
    let (mut parsing, mut storing) = (0.0, 0.0);
    let wall = std::time::Instant::now();
    for chunk in &chunks {
        let t = process_cpu();
        let (batch, rejected) = parse_access(chunk);
        anyhow::ensure!(rejected.count() == 0, "rejected lines");
        parsing += process_cpu() - t;
        let t = process_cpu();
        engine.ingest_access(1, &batch, None)?;
        storing += process_cpu() - t;
    }
    let wall = wall.elapsed().as_secs_f64();
    let f = engine.footprint();
    println!(
        "engine: {n} {} records: CPU parsing {:.2} µs a record, storing {:.2} µs a record ({:.0} records/s of CPU, \
         {:.0} records/s); {} rollup rows, {:.0} bytes a row",
        shape.name(),
        parsing * 1e6 / n as f64,
        storing * 1e6 / n as f64,
        n as f64 / (parsing + storing),
        n as f64 / wall,
        f.rollup_rows,
        f.bytes as f64 / f.rollup_rows.max(1) as f64,
    );
    Ok(())
}

/// CPU time of this process (every thread), in seconds.
fn process_cpu() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given, which lives for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}
