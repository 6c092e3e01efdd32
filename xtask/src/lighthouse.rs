//! `cargo xtask lighthouse`: Lighthouse (npm, pinned in xtask/pins/lighthouse) with its mobile settings on the
//! login page, Statistics, Security and Properties of a release build serving demo data, logged in by the
//! session cookie; prints each page's performance and best-practices scores (the median run of a few), its
//! largest contentful paint, total blocking time and where the main thread spent its time; fails below the
//! goals (performance 0.9, best practices 1.0).

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::{BrowserTmp, root, tools};

/// The pages, as a logged-in administrator of the demo customer opens them (the login page logged out).
const PAGES: [(&str, &str, bool); 4] = [
    ("login", "/login", false),
    ("Statistics", "/demo/stats", true),
    ("Security", "/demo/security", true),
    ("Properties", "/demo/properties", true),
];

const PERFORMANCE_GOAL: f64 = 0.9;
const BEST_PRACTICES_GOAL: f64 = 1.0;
const PASSWORD: &str = "lighthouse-password-1";

/// Chromium as the issue asks Lighthouse to run it (CHROME_PATH is /usr/bin/chromium).
const CHROME_FLAGS: &str = "--headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
                            --disable-background-networking --disable-component-update --disable-sync --no-first-run";

/// A server process, stopped when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts the release server with the demo data in `data` on a free port; waits until it is ready.
fn serve(binary: &Path, data: &Path) -> Result<(Served, String)> {
    let port = free_port()?;
    let child = Command::new(binary)
        .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(data)
        .arg("--static-dir")
        .arg(root().join("dist"))
        .env("EDGE_DEMO_PASSWORD", PASSWORD)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .context("starting edge-server")?;
    let served = Served(child);
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if ureq::get(&format!("{base}/readyz")).call().is_ok() {
            return Ok((served, base));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    bail!("the server did not get ready at {base}")
}

/// A session of the demo administrator.
fn session(base: &str) -> Result<String> {
    use base64::Engine;
    let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}")));
    let answer: Value = ureq::post(&format!("{base}/demo/v1/sessions"))
        .set("Authorization", &auth)
        .call()
        .context("logging in")?
        .into_json()?;
    answer["id"].as_str().map(String::from).context("a session id in the login answer")
}

/// One Lighthouse run of `url` into `report` (JSON).
fn run_lighthouse(
    tools: &tools::Tools,
    cli: &Path,
    url: &str,
    cookie: Option<&str>,
    report: &Path,
    tmp: &Path,
) -> Result<Value> {
    let mut cmd = tools.command("node");
    cmd.arg(cli)
        .arg(url)
        .args(["--only-categories=performance,best-practices", "--output=json", "--quiet"])
        .arg(format!("--output-path={}", report.display()))
        .arg(format!("--chrome-flags={CHROME_FLAGS}"))
        .env("CHROME_PATH", &tools.chromium)
        .env("TMPDIR", tmp);
    if let Some(c) = cookie {
        cmd.arg(format!("--extra-headers={}", serde_json::json!({ "Cookie": c })));
    }
    crate::run(&mut cmd)?;
    let text = std::fs::read_to_string(report).with_context(|| format!("reading {}", report.display()))?;
    Ok(serde_json::from_str(&text)?)
}

fn score(report: &Value, category: &str) -> f64 {
    report["categories"][category]["score"].as_f64().unwrap_or(0.0)
}

fn ms(report: &Value, audit: &str) -> f64 {
    report["audits"][audit]["numericValue"].as_f64().unwrap_or(f64::NAN)
}

/// The main thread's time by kind of work (scripts, style and layout, …), largest first.
fn main_thread(report: &Value) -> String {
    let items = report["audits"]["mainthread-work-breakdown"]["details"]["items"].as_array().cloned();
    let mut parts: Vec<(String, f64)> = items
        .unwrap_or_default()
        .iter()
        .map(|i| (i["groupLabel"].as_str().unwrap_or("?").to_string(), i["duration"].as_f64().unwrap_or(0.0)))
        .collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts.iter().take(3).map(|(l, d)| format!("{l} {d:.0} ms")).collect::<Vec<_>>().join(", ")
}

/// Best-practice audits that failed, by title.
fn failed_practices(report: &Value) -> Vec<String> {
    let refs = report["categories"]["best-practices"]["auditRefs"].as_array().cloned().unwrap_or_default();
    refs.iter()
        .filter_map(|r| {
            let audit = &report["audits"][r["id"].as_str()?];
            (audit["score"].as_f64().is_some_and(|s| s < 1.0) && r["weight"].as_f64().unwrap_or(0.0) > 0.0)
                .then(|| audit["title"].as_str().unwrap_or("?").to_string())
        })
        .collect()
}

pub fn command(args: &[String]) -> Result<std::process::ExitCode> {
    let runs: usize = match args.iter().position(|a| a == "--runs") {
        Some(i) => args.get(i + 1).and_then(|n| n.parse().ok()).context("--runs takes a number")?,
        None => 3,
    };
    let tools = tools::Tools::ensure(true)?;
    let cli = tools::ensure_npm_pin("lighthouse", &root().join("target/tools/lighthouse"))?
        .join("node_modules/lighthouse/cli/index.js");
    crate::build_console(&tools)?;
    crate::run(crate::cargo().args(["build", "--release", "--locked", "-p", "edge-server"]))?;
    let tmp = BrowserTmp::new()?;
    let data = tmp.0.join("data");
    let (_server, base) = serve(&root().join("target/release/edge-server"), &data)?;
    let cookie = format!("authtoken={}", session(&base)?);
    let reports: PathBuf = root().join("target/lighthouse");
    std::fs::create_dir_all(&reports)?;
    println!("| page | performance | best practices | largest paint | blocking time | main thread (largest) |");
    println!("|---|---|---|---|---|---|");
    let mut missed = Vec::new();
    for (name, path, logged_in) in PAGES {
        let mut all = Vec::new();
        for i in 0..runs {
            let report = reports.join(format!("{}-{i}.json", name.to_lowercase()));
            all.push(run_lighthouse(
                &tools,
                &cli,
                &format!("{base}{path}"),
                logged_in.then_some(&*cookie),
                &report,
                &tmp.0,
            )?);
        }
        all.sort_by(|a, b| score(a, "performance").total_cmp(&score(b, "performance")));
        let median = &all[all.len() / 2];
        let (perf, practices) = (score(median, "performance"), score(median, "best-practices"));
        println!(
            "| {name} | {perf:.2} | {practices:.2} | {:.1} s | {:.0} ms | {} |",
            ms(median, "largest-contentful-paint") / 1000.0,
            ms(median, "total-blocking-time"),
            main_thread(median)
        );
        if perf < PERFORMANCE_GOAL || practices < BEST_PRACTICES_GOAL {
            missed.push(format!("{name} (best practices failed: {:?})", failed_practices(median)));
        }
    }
    println!(
        "lighthouse: Lighthouse {} mobile settings, median of {runs} run(s) per page; reports in {}",
        lighthouse_version(&cli),
        reports.display()
    );
    if !missed.is_empty() {
        bail!(
            "below the goals (performance {PERFORMANCE_GOAL}, best practices {BEST_PRACTICES_GOAL}): {}",
            missed.join("; ")
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Lighthouse's version, from its package.json.
fn lighthouse_version(cli: &Path) -> String {
    let manifest = cli.parent().and_then(Path::parent).map(|p| p.join("package.json"));
    let text = manifest.and_then(|m| std::fs::read_to_string(m).ok()).unwrap_or_default();
    serde_json::from_str::<Value>(&text).ok().and_then(|v| v["version"].as_str().map(String::from)).unwrap_or_default()
}
