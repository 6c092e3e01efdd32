//! `edge-bench fuzz-api`: schemathesis against a server it starts with demo data. Every operation of
//! `/openapi.json` is exercised with generated requests (valid and invalid), logged in as the demo
//! administrator; the run fails on any 5xx, any answer whose status, content type or body the document does
//! not describe, or a server that no longer answers afterwards.
//!
//! Usage: edge-bench fuzz-api --work DIR --server PATH/edge-server --schemathesis PATH/st
//!        [--examples N] [--min-requests N]

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::Instant,
};

use anyhow::{Context, Result, bail};

use crate::{Args, server::Server};

const HOOKS: &str = include_str!("fuzz/hooks.py");
const PASSWORD: &str = "fuzz-password-12345";
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance";

pub fn run(args: &Args) -> Result<()> {
    let work = args.path("--work")?;
    let server_bin = args.path("--server")?;
    let st = args.path("--schemathesis")?;
    let examples: u32 = args.number("--examples")?.unwrap_or(25);
    let min_requests: u64 = args.number("--min-requests")?.unwrap_or(2000);
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    std::fs::write(work.join("hooks.py"), HOOKS)?;

    let mut server = Server::start(
        &server_bin,
        &work.join("data"),
        &["--demo", "--demo-days", "2"],
        &[("EDGE_DEMO_PASSWORD", PASSWORD)],
    )?;
    println!("fuzz-api: server at {}, {examples} examples per operation, checks {CHECKS}", server.base);
    let t = Instant::now();
    let mut child = Command::new(&st)
        .current_dir(&work)
        .arg("run")
        .arg(format!("{}/openapi.json", server.base))
        .args(["--checks", CHECKS, "--max-examples", &examples.to_string(), "--workers", "2", "--no-color"])
        .args(["--report", "junit", "--report-dir", "report"])
        .env("SCHEMATHESIS_HOOKS", "hooks")
        .env("PYTHONPATH", &work)
        .env("EDGE_FUZZ_BASE", &server.base)
        .env("EDGE_FUZZ_CUSTOMER", "demo")
        .env("EDGE_FUZZ_USER", "admin")
        .env("EDGE_FUZZ_PASSWORD", PASSWORD)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", st.display()))?;
    let mut generated = None;
    let mut previous = String::new();
    for line in BufReader::new(child.stdout.take().context("schemathesis output")?).lines() {
        let line = line?;
        println!("{line}");
        // The summary reads "Test cases:" then "  4383 generated, ...".
        if previous.trim() == "Test cases:" {
            generated = line.split_whitespace().next().and_then(|n| n.parse::<u64>().ok());
        }
        previous = line;
    }
    let status = child.wait()?;
    let healthy = server.healthy();
    let generated = generated.unwrap_or(0);
    println!();
    println!(
        "fuzz-api: {generated} generated requests in {:.0} s; schemathesis {}; server {}",
        t.elapsed().as_secs_f64(),
        if status.success() { "found no failure" } else { "reported failures or errors" },
        if healthy { "still healthy" } else { "NOT healthy" }
    );
    if !status.success() {
        bail!("schemathesis failed ({status}); the report is in {}", work.join("report").display());
    }
    if !healthy {
        bail!("the server stopped answering during the run");
    }
    if generated < min_requests {
        bail!("only {generated} requests were generated (at least {min_requests} wanted)");
    }
    Ok(())
}
