//! What the console costs on the wire, from the real server: the first view (the login page and every file it
//! loads) and from "Log in" to the statistics view's first chart (the console's document and what it loads), as a
//! browser that accepts brotli receives them. Fails over either budget.

use std::{
    io::{Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail, ensure};
use edge_server::{AppState, Server, Settings};

/// The first view's budget: 350 KB with brotli, everything it loads included.
const FIRST_VIEW_BUDGET: usize = 350 * 1024;
/// The budget from "Log in" to the first chart: 1 MB with brotli (as `cargo xtask size`'s; see there why).
const FIRST_CHART_BUDGET: usize = 1024 * 1024;

fn dist() -> PathBuf {
    std::env::var_os("EDGE_E2E_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dist"))
}

/// One answer: its headers (lower-case names) and the length of its body as sent.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A GET over a fresh connection, as plain HTTP/1.1 (the server sends files with a length).
fn get(addr: std::net::SocketAddr, path: &str, accept_encoding: &str) -> Result<Answer> {
    let mut stream = TcpStream::connect(addr)?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept-Encoding: {accept_encoding}\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").context("an HTTP answer")?;
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers =
        lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string())).collect();
    Ok(Answer { status, headers, body: raw[end + 4..].to_vec() })
}

/// The files an HTML document loads: `href="/…"` and the loader's `'/…'` that end in .js, .wasm or .css.
fn loaded_by(html: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for quote in ['"', '\''] {
        for part in html.split(quote).skip(1).step_by(2) {
            let wanted = [".js", ".wasm", ".css"].iter().any(|e| part.ends_with(e));
            if part.starts_with('/') && wanted && !out.iter().any(|x| x == part) {
                out.push(part.to_string());
            }
        }
    }
    out
}

fn files(dir: &Path, base: &Path, out: &mut Vec<String>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files(&path, base, out)?;
        } else if !matches!(path.extension().and_then(|e| e.to_str()), Some("br" | "gz")) {
            let rel = path.strip_prefix(base)?.to_string_lossy().replace('\\', "/");
            out.push(format!("/{rel}"));
        }
    }
    Ok(())
}

/// What a page costs: its document as served at `page` (the file on disk says what it loads) and every file
/// it loads, each as the server sends it with brotli; with one line per file for the report.
fn weigh(addr: std::net::SocketAddr, page: &str, document: &Path) -> Result<(usize, Vec<String>)> {
    let answer = get(addr, page, "br, gzip")?;
    ensure!(answer.status == 200, "{page} answers {}", answer.status);
    let html = String::from_utf8_lossy(&std::fs::read(document)?).into_owned();
    let mut total = answer.body.len();
    let mut report = vec![format!("{page} {} B", answer.body.len())];
    for file in loaded_by(&html) {
        let a = get(addr, &file, "br, gzip")?;
        ensure!(a.status == 200, "{file} answers {}", a.status);
        ensure!(a.header("content-encoding") == Some("br"), "{file} is sent with brotli: {:?}", a.headers);
        ensure!(a.header("vary") == Some("accept-encoding"), "{file} varies by encoding");
        ensure!(a.header("cache-control") == Some("public, max-age=31536000, immutable"), "{file} is cached");
        total += a.body.len();
        report.push(format!("{file} {} B", a.body.len()));
    }
    Ok((total, report))
}

#[tokio::test]
async fn the_first_view_and_the_first_chart_stay_within_their_brotli_budgets() -> Result<()> {
    let dist = dist();
    ensure!(dist.join("index.html").is_file(), "no built console at {} — run `cargo xtask test`", dist.display());
    let dir = tempfile::tempdir()?;
    let state = AppState::open(Settings::new(dir.path().join("data"), &dist)).await?;
    let server = Server::start(state, "127.0.0.1:0".parse()?).await?;
    let addr = server.addr;
    let result = tokio::task::spawn_blocking(move || -> Result<_> {
        // The first view: the login page's document and everything it loads.
        let signin = Some(dist.join("signin/index.html")).filter(|p| p.is_file()).unwrap_or(dist.join("index.html"));
        let first = weigh(addr, "/login", &signin)?;
        // After "Log in", up to the statistics view's first chart: the console's document and what it loads.
        let chart = weigh(addr, "/stats", &dist.join("index.html"))?;
        // The whole console, for the report: every file of the build, as brotli when there is a copy.
        let mut all = Vec::new();
        files(&dist, &dist, &mut all)?;
        let mut whole = 0;
        for file in &all {
            whole += get(addr, file, "br, gzip")?.body.len();
        }
        Ok((first, chart, whole))
    })
    .await??;
    server.stop().await?;
    let ((first, first_report), (chart, chart_report), whole) = result;
    println!(
        "first view {first} B brotli ({}), log in to first chart {chart} B ({}), whole console {whole} B",
        first_report.join(", "),
        chart_report.join(", ")
    );
    if first > FIRST_VIEW_BUDGET {
        bail!(
            "the first view weighs {first} B with brotli, over its budget of {FIRST_VIEW_BUDGET} B: {first_report:?}"
        );
    }
    if chart > FIRST_CHART_BUDGET {
        bail!(
            "log in to first chart weighs {chart} B with brotli, over its budget of {FIRST_CHART_BUDGET} B: {chart_report:?}"
        );
    }
    Ok(())
}
