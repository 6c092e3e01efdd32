//! `cargo xtask serve|test|build`: installs what a fresh machine lacks (skipping what is there), builds the
//! console and the server, and runs every test.

mod layers;
mod lighthouse;
mod size;
mod testrun;
mod timing;
mod tools;

use std::{
    path::{Path, PathBuf},
    process::{Command, ExitCode},
};

use anyhow::{Context, Result, bail};

fn usage() -> String {
    USAGE.replace("{TEST_USAGE}", testrun::USAGE)
}

const USAGE: &str = "usage:
  cargo xtask serve [SERVER FLAGS]   build the console (release) and serve it with demo data on http://127.0.0.1:8080
                                     (flags go to `edge-server serve`, e.g. --listen 127.0.0.1:9000)
  cargo xtask serve --cluster [SERVER FLAGS]
                                     the same on PostgreSQL (kept under target/cluster/) with two replicas behind a
                                     load balancer (HAProxy, or nginx) on that address, statistics in two
                                     ClickHouse shards (kept there too; unless --stats-url is given)
{TEST_USAGE}
  cargo xtask build                  build the console into dist/ (release)
  cargo xtask perf-console           load times of the console in headless Chromium through the real server:
                                     login form and login to first chart, on loopback and an emulated
                                     10 Mbit/s, 40 ms link (cold cache, medians)
  cargo xtask lighthouse [--runs N]  Lighthouse 12.2.3 (pinned, xtask/pins/lighthouse), mobile settings, on the login
                                     page, Statistics, Security and Properties of a release build with demo data,
                                     logged in; median of N runs (default 3); fails under performance 0.9 or best
                                     practices 1.0
  cargo xtask screenshots            the end-to-end tests, saving screenshots of the views into docs/screenshots/
  cargo xtask size [--no-build]      raw, gzip and brotli size of every file of the console, of its first view,
                                     of log in to first chart and of the whole; fails over the budgets (350 KB and
                                     1 MB brotli)
  cargo xtask bench stats [--ingest N]
                                     statistics: our server (HTTP) against DuckDB on the same 20M+ rows
  cargo xtask bench stats --engine clickhouse [--ingest N] [--shape-records N]
                                     the embedded engine, ClickHouse (a throwaway Debian clickhouse-server) and
                                     DuckDB side by side on the same records (default 1,000,000): ingestion
                                     through HTTP, query latencies (p50, p99) and bytes on disk per row; then
                                     ingestion of records shuffled over an hour, a day, five days and late
                                     arrivals (default 200,000 each)
  cargo xtask bench config [--runs N]
                                     configuration updates and diffs from 625 to 5,000 nodes (time per node)
  cargo xtask load [--seconds N] [--connections N] [--cluster]
                                     a realistic request mix against a demo server, and a bare axum handler
                                     for comparison (default 20 s each, 16 connections); with --cluster also
                                     through a load balancer in front of two replicas on PostgreSQL
  cargo xtask layers [DIR...]        no module imports one that imports it back (every crate of the workspace, or
                                     those whose sources are in DIR, e.g. src server/src); cargo xtask test checks
                                     every crate
  cargo xtask fuzz-api [--examples N] [--min-requests N]
                                     schemathesis against every operation of /openapi.json on a demo server
                                     (default 25 examples per operation, at least 2,000 requests)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("test") => testrun::command(&args[1..]),
        Some("test-runner") => timing::runner(&args[1..]),
        Some("build") => tools::Tools::ensure(false).and_then(|t| build_console(&t)),
        Some("bench") if args.get(1).map(String::as_str) == Some("stats") => bench_stats(&args[2..]),
        Some("bench") if args.get(1).map(String::as_str) == Some("config") => bench_config(&args[2..]),
        Some("load") => load(&args[1..]),
        Some("size") => size_command(&args[1..]),
        Some("perf-console") => perf_console(),
        Some("lighthouse") => lighthouse::command(&args[1..]),
        Some("screenshots") => screenshots(),
        Some("compress") => compress_command(&args[1..]),
        Some("layers") => layers_command(&args[1..]),
        Some("fuzz-api") => {
            fuzz_api_command(&args[1..], true).and_then(|mut cmd| run(&mut cmd)).map(|()| ExitCode::SUCCESS)
        }
        _ => {
            eprintln!("{}", usage());
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// A directory for the temporary files of the browsers a command starts (Chromium leaves profiles and
/// `org.chromium.Chromium.*` directories in TMPDIR), removed when dropped: a run leaves nothing behind. It sits
/// directly in the system's temp dir, not under target/: Chromium's singleton socket lives a few levels below
/// it, and a Unix socket path may not exceed 107 bytes (a deep checkout made Chromium exit at start).
pub struct BrowserTmp(pub PathBuf);

impl BrowserTmp {
    pub fn new() -> Result<BrowserTmp> {
        let dir = std::env::temp_dir().join(format!("edge-browser-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(BrowserTmp(dir))
    }
}

impl Drop for BrowserTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    // A clean CI build gains nothing from incremental caches, which would double target/'s size on a small disk.
    if std::env::var_os("CI").is_some() {
        cmd.env("CARGO_INCREMENTAL", "0");
    }
    cmd
}

/// Runs a command to completion, failing when it fails.
pub fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: $ {}", describe(cmd));
    let status = cmd.status().with_context(|| format!("starting {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed ({status})", describe(cmd));
    }
    Ok(())
}

pub fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program().to_string_lossy().into_owned())
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn build_console(tools: &tools::Tools) -> Result<ExitCode> {
    for mut cmd in console_build_commands(tools) {
        run(&mut cmd)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The commands of the console's release build into dist/: the console, and the first view (login, password
/// reset) as its own small app beside it (see src/signin.rs).
pub fn console_build_commands(tools: &tools::Tools) -> Vec<Command> {
    let trunk = |extra: &[&str]| {
        let mut cmd = tools.command("trunk");
        cmd.current_dir(root()).args(["build", "--release", "--offline", "--locked"]).args(extra);
        cmd
    };
    let mut fetch = cargo();
    fetch.args(["fetch", "--locked"]);
    vec![fetch, trunk(&[]), trunk(&["--dist", "dist/signin", "--public-url", "/signin/", "signin.html"])]
}

/// `cargo xtask size`: builds the console (unless `--no-build`) and prints what it weighs.
fn size_command(args: &[String]) -> Result<ExitCode> {
    if !args.iter().any(|a| a == "--no-build") {
        build_console(&tools::Tools::ensure(false)?)?;
    }
    size::report(&root().join("dist"))?;
    Ok(ExitCode::SUCCESS)
}

/// `cargo xtask perf-console`: builds the console and measures its load times (tests/e2e/src/bin/perf_console.rs).
fn perf_console() -> Result<ExitCode> {
    let tools = tools::Tools::ensure(true)?;
    build_console(&tools)?;
    let tmp = BrowserTmp::new()?;
    run(tools
        .apply(&mut cargo())
        .args(["run", "--release", "--locked", "-p", "edge-e2e", "--bin", "perf-console"])
        .env("TMPDIR", &tmp.0)
        .env("EDGE_E2E_DIST", root().join("dist"))
        .env("CHROMEDRIVER", &tools.chromedriver)
        .env("CHROMIUM", &tools.chromium))?;
    Ok(ExitCode::SUCCESS)
}

/// The views whose screenshots the README shows.
const MAIN_VIEWS: [&str; 16] = [
    "login",
    "statistics",
    "security",
    "property-editor",
    "property-history",
    "merge-screen",
    "purge-done",
    "list-report",
    "tasks",
    "users",
    "two-factor-pairing",
    "account",
    "add-to-list",
    "property-draft",
    "statistics-dark",
    "statistics-phone",
];

/// `cargo xtask screenshots`: the end-to-end tests with their screenshot mode on, into docs/screenshots.
fn screenshots() -> Result<ExitCode> {
    let tools = tools::Tools::ensure(true)?;
    build_console(&tools)?;
    let all = root().join("target/screenshots");
    let tmp = BrowserTmp::new()?;
    build_e2e_server()?;
    run(e2e_command(&tools, &tmp).env("EDGE_E2E_SCREENSHOTS", &all))?;
    let docs = root().join("docs/screenshots");
    std::fs::create_dir_all(&docs)?;
    for view in MAIN_VIEWS {
        let name = format!("{view}.png");
        std::fs::copy(all.join(&name), docs.join(&name)).with_context(|| format!("copying {name}"))?;
    }
    eprintln!("xtask: screenshots of the main views in {} (all in {})", docs.display(), all.display());
    Ok(ExitCode::SUCCESS)
}

/// The server binary the end-to-end test through the load balancer starts its replicas with (see
/// `e2e_command`).
fn build_e2e_server() -> Result<()> {
    run(cargo().args(["build", "--locked", "-p", "edge-server", "--bin", "edge-server"]))
}

/// The end-to-end tests against the built console (after `build_e2e_server`).
fn e2e_command(tools: &tools::Tools, tmp: &BrowserTmp) -> Command {
    let mut cmd = cargo();
    tools
        .apply(&mut cmd)
        .args(["test", "--locked", "-p", "edge-e2e", "--", "--test-threads", "1"])
        .env("TMPDIR", &tmp.0)
        .env("EDGE_E2E_DIST", root().join("dist"))
        .env("EDGE_SERVER_BIN", root().join("target/debug/edge-server"))
        .env("CHROMEDRIVER", &tools.chromedriver)
        .env("CHROMIUM", &tools.chromium);
    cmd
}

/// `cargo xtask layers [DIR...]`: prints every import cycle between modules of the crates (all, or those whose
/// source folders are named); fails when there is one.
fn layers_command(args: &[String]) -> Result<ExitCode> {
    let dirs: Vec<&str> = args.iter().map(|a| a.trim_end_matches('/')).collect();
    if let Some(unknown) = dirs.iter().find(|d| !layers::CRATES.iter().any(|(c, _)| c == *d)) {
        bail!("no crate's sources in {unknown} (one of: {})", layers::CRATES.map(|(d, _)| d).join(", "));
    }
    let found = layers::report(&root(), &dirs)?;
    for line in &found {
        println!("{line}");
    }
    if !found.is_empty() {
        println!("xtask layers: {} import cycle(s)", found.len());
        return Ok(ExitCode::FAILURE);
    }
    println!("xtask layers: no import cycle");
    Ok(ExitCode::SUCCESS)
}

/// `cargo xtask compress [DIR]`: trunk's post-build hook; writes the .br and .gz copies of the build being
/// staged ($TRUNK_STAGING_DIR), or of DIR.
fn compress_command(args: &[String]) -> Result<ExitCode> {
    let dir = match (args.first(), std::env::var_os("TRUNK_STAGING_DIR")) {
        (Some(dir), _) => PathBuf::from(dir),
        (None, Some(dir)) => PathBuf::from(dir),
        (None, None) => root().join("dist"),
    };
    size::precompress(&dir)?;
    Ok(ExitCode::SUCCESS)
}

fn serve(args: &[String]) -> Result<ExitCode> {
    let replicated = args.iter().any(|a| a == "--cluster");
    let server_args: Vec<String> = args.iter().filter(|a| *a != "--cluster").cloned().collect();
    let tools = tools::Tools::ensure(false)?;
    if replicated {
        tools::ensure_cluster_tools()?;
    }
    build_console(&tools)?;
    run(cargo().args(["build", "--release", "--locked", "-p", "edge-server"]))?;
    let binary = root().join("target/release/edge-server");
    if replicated {
        return serve_cluster(binary, server_args);
    }
    let mut cmd = Command::new(&binary);
    cmd.current_dir(root()).args(["serve", "--demo"]).args(server_args);
    // Defaults as environment, so the caller's own EDGE_* variables and flags win.
    for (var, default) in [("EDGE_LISTEN", "127.0.0.1:8080"), ("EDGE_DATA_DIR", "data"), ("EDGE_STATIC_DIR", "dist")] {
        if std::env::var_os(var).is_none() {
            cmd.env(var, default);
        }
    }
    eprintln!("xtask: $ {}", describe(&cmd));
    // Ctrl-C reaches the server too (same process group); it shuts down gracefully and we return its status.
    let status = cmd.status().context("starting edge-server")?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `cargo xtask serve --cluster`: a PostgreSQL cluster kept under target/cluster/postgres, two replicas with the
/// demo data (their own data dirs under target/cluster/), and the load balancer on the address `serve` would
/// use, until Ctrl-C. Everything is stopped when this process ends (PostgreSQL by its watchdog); the database
/// stays for the next run.
fn serve_cluster(binary: PathBuf, mut server_args: Vec<String>) -> Result<ExitCode> {
    // The balancer takes the address; each replica gets a free loopback port of its own.
    let mut listen = std::env::var("EDGE_LISTEN").unwrap_or_else(|_| "127.0.0.1:8080".into());
    if let Some(i) = server_args.iter().position(|a| a == "--listen") {
        listen = server_args.get(i + 1).cloned().context("--listen takes an address")?;
        server_args.drain(i..=i + 1);
    }
    let listen: std::net::SocketAddr = listen.parse().with_context(|| format!("--listen {listen}"))?;
    let dir = root().join("target/cluster");
    let mut args = vec!["--demo".to_string(), "--static-dir".to_string(), root().join("dist").display().to_string()];
    // Statistics shared by the replicas: two ClickHouse shards, each customer's on one of them.
    let mut shards = Vec::new();
    if !server_args.iter().any(|a| a == "--stats-url" || a.starts_with("--stats-url=")) {
        eprintln!("xtask: starting two ClickHouse shards under {}", dir.display());
        for n in 1..=2 {
            shards.push(edge_cluster::ClickHouse::start_in(&dir.join(format!("clickhouse-{n}")))?);
        }
        let hosts: Vec<String> = shards.iter().map(|s| format!("127.0.0.1:{}", s.http_port)).collect();
        args.extend(["--stats-url".to_string(), format!("clickhouse://default@{}/edge", hosts.join(","))]);
    }
    args.extend(server_args);
    eprintln!("xtask: starting PostgreSQL, two replicas and a load balancer under {}", dir.display());
    let cluster = edge_cluster::Cluster::start(&edge_cluster::ClusterSpec {
        binary,
        dir: dir.clone(),
        postgres_dir: Some(dir.join("postgres")),
        replicas: 2,
        listen: Some(listen),
        server_args: args,
        env: vec![],
    })?;
    // The replica that seeded the demo data printed its password; give it a moment to be read.
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The replica that seeded the demo data says how to log in; the others that it was there already.
    let output: Vec<String> = cluster.replicas.iter().flat_map(|r| r.output()).collect();
    let login = output
        .iter()
        .find(|l| l.starts_with("Log in with"))
        .or_else(|| output.iter().find(|l| l.starts_with("The database already holds data")));
    println!("Edge Console: {}/", cluster.url());
    println!(
        "  {} replicas on PostgreSQL ({}) behind {}: {}",
        cluster.replicas.len(),
        cluster.database_url,
        cluster.balancer.kind.name(),
        cluster.replicas.iter().map(|r| r.url()).collect::<Vec<_>>().join(", ")
    );
    if shards.is_empty() {
        println!("  statistics: as --stats-url says");
    } else {
        println!(
            "  statistics: two ClickHouse shards, {}",
            shards.iter().map(|s| format!("http://127.0.0.1:{}", s.http_port)).collect::<Vec<_>>().join(", ")
        );
    }
    println!("  data: {} (the database and the shards are kept between runs)", dir.display());
    if let Some(line) = login {
        println!("{line}");
    }
    println!("Ctrl-C stops everything.");
    // Ctrl-C reaches the replicas and the balancer too (same process group); PostgreSQL's watchdog stops it
    // when this process ends.
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// The statistics benchmark: builds the server and the bench in release, installs DuckDB (PyPI) in a virtual
/// environment under target/tools (and Debian's clickhouse-server for `--engine clickhouse`), and runs it.
fn bench_stats(extra: &[String]) -> Result<ExitCode> {
    let bin = tools::python_venv("bench")?;
    if extra.windows(2).any(|w| w[0] == "--engine" && w[1] == "clickhouse") {
        tools::ensure_cluster_tools()?;
    }
    run(cargo().args(["build", "--release", "--locked", "-p", "edge-server", "-p", "edge-bench"]))?;
    run(Command::new(root().join("target/release/edge-bench"))
        .args(["stats", "--work"])
        .arg(root().join("target/bench"))
        .arg("--server")
        .arg(root().join("target/release/edge-server"))
        .arg("--python")
        .arg(bin.join("python"))
        .args(extra))?;
    Ok(ExitCode::SUCCESS)
}

/// Configuration updates and diffs as the nodes grow, in a release build.
fn bench_config(extra: &[String]) -> Result<ExitCode> {
    run(cargo().args(["build", "--release", "--locked", "-p", "edge-bench"]))?;
    run(Command::new(root().join("target/release/edge-bench")).arg("config").args(extra))?;
    Ok(ExitCode::SUCCESS)
}

/// The load test: release builds of the server and the load generator, run over loopback.
fn load(extra: &[String]) -> Result<ExitCode> {
    if extra.iter().any(|a| a == "--cluster") {
        tools::ensure_cluster_tools()?;
    }
    run(cargo().args(["build", "--release", "--locked", "-p", "edge-server", "-p", "edge-bench"]))?;
    run(Command::new(root().join("target/release/edge-bench"))
        .args(["load", "--work"])
        .arg(root().join("target/load"))
        .arg("--server")
        .arg(root().join("target/release/edge-server"))
        .args(extra))?;
    Ok(ExitCode::SUCCESS)
}

/// The command of the API contract fuzzing (schemathesis against a fresh demo server, debug builds; built
/// first when `build`, as `cargo xtask test` has built them already).
fn fuzz_api_command(extra: &[String], build: bool) -> Result<Command> {
    let bin = tools::python_venv("fuzz")?;
    if build {
        run(cargo().args(["build", "--locked", "-p", "edge-server", "-p", "edge-bench"]))?;
    }
    let mut cmd = Command::new(root().join("target/debug/edge-bench"));
    cmd.args(["fuzz-api", "--work"])
        .arg(root().join("target/fuzz-api"))
        .arg("--server")
        .arg(root().join("target/debug/edge-server"))
        .arg("--schemathesis")
        .arg(bin.join("st"))
        .args(extra);
    Ok(cmd)
}
