//! What the console costs on the wire, from the real server: the first view (the login page and every file it
//! loads) and the whole console, as a browser that accepts brotli receives them. Fails over the budget.

use std::{
    io::{Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail, ensure};
use edge_server::{AppState, Server, Settings};

/// The first view's budget: 350 KB with brotli, everything it loads included.
const FIRST_VIEW_BUDGET: usize = 350 * 1024;
/// The whole console's budget (as `cargo xtask size`'s; see there).
const WHOLE_BUDGET: usize = 800 * 1024;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_view_and_the_whole_console_stay_within_their_brotli_budgets() -> Result<()> {
    let dist = dist();
    ensure!(dist.join("index.html").is_file(), "no built console at {} — run `cargo xtask test`", dist.display());
    let dir = tempfile::tempdir()?;
    let state = AppState::open(Settings::new(dir.path().join("data"), &dist)).await?;
    let server = Server::start(state, "127.0.0.1:0".parse()?).await?;
    let addr = server.addr;
    let result = tokio::task::spawn_blocking(move || -> Result<(usize, usize, Vec<String>)> {
        // The first view: the login page's document and everything it loads, each as brotli.
        let page = get(addr, "/login", "br, gzip")?;
        ensure!(page.status == 200, "/login answers {}", page.status);
        let html = String::from_utf8_lossy(
            &std::fs::read(dist.join("signin/index.html")).or_else(|_| std::fs::read(dist.join("index.html")))?,
        )
        .into_owned();
        let mut first = page.body.len();
        let mut report = vec![format!("/login {} B", page.body.len())];
        for file in loaded_by(&html) {
            let a = get(addr, &file, "br, gzip")?;
            ensure!(a.status == 200, "{file} answers {}", a.status);
            ensure!(a.header("content-encoding") == Some("br"), "{file} is sent with brotli: {:?}", a.headers);
            ensure!(a.header("vary") == Some("accept-encoding"), "{file} varies by encoding");
            ensure!(a.header("cache-control") == Some("public, max-age=31536000, immutable"), "{file} is cached");
            first += a.body.len();
            report.push(format!("{file} {} B", a.body.len()));
        }
        // The whole console: every file of the build, as brotli when there is a copy.
        let mut all = Vec::new();
        files(&dist, &dist, &mut all)?;
        let mut whole = 0;
        for file in &all {
            whole += get(addr, file, "br, gzip")?.body.len();
        }
        Ok((first, whole, report))
    })
    .await??;
    server.stop().await?;
    let (first, whole, report) = result;
    println!("first view {first} B brotli ({}), whole console {whole} B brotli", report.join(", "));
    if first > FIRST_VIEW_BUDGET {
        bail!("the first view weighs {first} B with brotli, over its budget of {FIRST_VIEW_BUDGET} B: {report:?}");
    }
    if whole > WHOLE_BUDGET {
        bail!("the whole console weighs {whole} B with brotli, over its budget of {WHOLE_BUDGET} B");
    }
    Ok(())
}
