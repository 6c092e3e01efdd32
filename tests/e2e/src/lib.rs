//! The end-to-end harness: a real server on a free loopback port with a temporary data dir and the built
//! console (or, with [`Harness::start_cluster`], `edge-server` replicas on a throwaway PostgreSQL behind a load
//! balancer), and headless Chromium browsers driven through ChromeDriver.

use std::{
    net::{SocketAddr, TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicI64, Ordering},
    },
    time::{Duration, Instant},
};

use axum::{extract::Request, middleware::Next, response::Response};

use anyhow::{Context, Result, bail};
use edge_server::{
    AppState, Server, Settings,
    clock::{Clock, SystemClock},
    demo,
};
use fantoccini::Client;
use tempfile::TempDir;

mod browser;

use browser::connect;
pub use browser::{Browser, END, ENTER, ESCAPE, TAB};

/// Password of the demo users in every end-to-end test.
pub const PASSWORD: &str = "e2e-password-123";
/// How long to wait for the page to show something.
pub const WAIT: Duration = Duration::from_secs(20);

/// Every view of the console, as a logged-in administrator of the demo customer sees it first, and what shows
/// it has loaded (for [`Browser::open`]).
pub const VIEWS: [(&str, &str); 12] = [
    ("/demo/stats", "#time-chart svg"),
    ("/demo/security", "#events table"),
    ("/demo/users", "tr[data-username=admin]"),
    ("/demo/me", "#change-password"),
    ("/demo/properties", "tr[data-property=www-shop]"),
    ("/demo/properties?name=www-shop", "#history table"),
    ("/demo/purge", "#purge-form"),
    ("/demo/lists", "tr[data-list=ip_demo_scanners]"),
    ("/demo/lists?list=ip_demo_scanners", "tr[data-entry]"),
    ("/demo/tasks", "table.tasks"),
    ("/demo/account", "input[name=display_name]"),
    ("/demo/audit", "table.audit tbody tr"),
];

/// The built console: $EDGE_E2E_DIST, or dist/ at the workspace root.
fn dist_dir() -> Result<PathBuf> {
    let dist = std::env::var_os("EDGE_E2E_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../dist"));
    if !dist.join("index.html").is_file() {
        bail!("no built console at {} — run `cargo xtask test` (it builds the console first)", dist.display());
    }
    Ok(dist)
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn wait_for_port(port: u16, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("chromedriver did not listen on port {port}")
}

/// The system clock moved forward by what a test asks for, so that expiry is tested without waiting.
#[derive(Clone, Default)]
pub struct ShiftedClock(Arc<AtomicI64>);

impl Clock for ShiftedClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms() + self.0.load(Ordering::SeqCst)
    }
}

/// What the server saw of one request (the test layer around the whole application records every one).
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub path: String,
    /// The answer's status; `None` while it runs, or when the client gave up on it (cancelled).
    pub status: Option<u16>,
    pub start: Instant,
    pub end: Option<Instant>,
    /// Sent with the session cookie (by the browser), not Basic credentials (by the test).
    pub cookie: bool,
}

/// The test layer's state: requests to slow down, and what was seen.
#[derive(Default)]
struct Watched {
    /// (method, part of the path, delay)
    slow: Vec<(String, String, Duration)>,
    seen: Vec<Seen>,
}

/// Marks a request given up on when its handling is dropped before the answer.
struct Pending(Arc<Mutex<Watched>>, usize);

impl Drop for Pending {
    fn drop(&mut self) {
        if let Ok(mut w) = self.0.lock()
            && let Some(s) = w.seen.get_mut(self.1)
            && s.end.is_none()
        {
            s.end = Some(Instant::now());
        }
    }
}

/// The test layer: records each request, and delays those the test asked to slow down. It exists only in
/// this harness (`Server::start_wrapped`), never in the binary.
async fn watch(watched: Arc<Mutex<Watched>>, req: Request, next: Next) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default();
    let cookie = req.headers().contains_key(axum::http::header::COOKIE);
    let (index, delay) = {
        let mut w = watched.lock().unwrap_or_else(|e| e.into_inner());
        w.seen.push(Seen {
            method: method.clone(),
            path: path.clone(),
            status: None,
            start: Instant::now(),
            end: None,
            cookie,
        });
        let delay = w.slow.iter().find(|(m, p, _)| *m == method && path.contains(p.as_str())).map(|(_, _, d)| *d);
        (w.seen.len() - 1, delay)
    };
    let pending = Pending(watched.clone(), index);
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    let response = next.run(req).await;
    if let Ok(mut w) = watched.lock()
        && let Some(s) = w.seen.get_mut(index)
    {
        s.status = Some(response.status().as_u16());
        s.end = Some(Instant::now());
    }
    drop(pending);
    response
}

/// The most requests matching `pick` that were in flight at once.
pub fn most_at_once(seen: &[Seen], pick: impl Fn(&Seen) -> bool) -> usize {
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    for s in seen.iter().filter(|s| pick(s)) {
        edges.push((s.start, 1));
        edges.push((s.end.unwrap_or_else(Instant::now), -1));
    }
    // Ends before starts at the same instant.
    edges.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0, 0);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// A server with the demo customer, ChromeDriver, and a first browser (the harness derefs to it).
pub struct Harness {
    pub browser: Browser,
    watched: Arc<Mutex<Watched>>,
    others: Vec<Client>,
    server: Option<Server>,
    /// With [`Harness::start_cluster`]: PostgreSQL, the replicas and the balancer the browser goes through.
    pub cluster: Option<edge_cluster::Cluster>,
    driver: Child,
    driver_port: u16,
    clock: ShiftedClock,
    dir: TempDir,
}

/// The `edge-server` binary for [`Harness::start_cluster`]: $EDGE_SERVER_BIN, or the debug build in the
/// workspace's target/ (`cargo xtask test` builds it before the end-to-end tests).
pub fn server_binary() -> Result<PathBuf> {
    let binary = std::env::var_os("EDGE_SERVER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| edge_cluster::target_dir().join("debug/edge-server"));
    if !binary.is_file() {
        bail!("no edge-server binary at {} — run `cargo build -p edge-server` first", binary.display());
    }
    Ok(binary)
}

/// Starts ChromeDriver on a free port, its temporary files (and Chromium's) under `dir`, and a first browser.
async fn start_driver(dir: &std::path::Path) -> Result<(Child, u16, Client)> {
    let chromedriver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
    let port = free_port()?;
    // Chromedriver and Chromium keep their temporary files (profiles, `org.chromium.Chromium.*`) in the
    // test's directory, which goes with the harness: nothing is left in /tmp.
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp)?;
    let mut driver = Command::new(&chromedriver)
        .arg(format!("--port={port}"))
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {chromedriver}"))?;
    let client = match wait_for_port(port, Duration::from_secs(15)) {
        Ok(()) => connect(port).await,
        Err(e) => Err(e),
    };
    match client {
        Ok(client) => Ok((driver, port, client)),
        Err(e) => {
            let _ = driver.kill();
            let _ = driver.wait();
            Err(e)
        }
    }
}

impl Harness {
    /// Starts a server with the demo customer (users admin, operator, viewer with [`PASSWORD`]) and a browser.
    pub async fn start() -> Result<Harness> {
        Self::start_with(|_| {}).await
    }

    /// [`Harness::start`] with the server's settings changed by `configure` first (an SMTP server, alerting).
    pub async fn start_with(configure: impl FnOnce(&mut Settings)) -> Result<Harness> {
        let dir = tempfile::tempdir()?;
        let clock = ShiftedClock::default();
        let mut settings = Settings::new(dir.path().join("data"), dist_dir()?);
        configure(&mut settings);
        let state = AppState::open_with_clock(settings, Arc::new(clock.clone())).await?;
        demo::seed_if_empty_with(&state, PASSWORD, demo::Volume::SMALL).await?;
        let listen: SocketAddr = "127.0.0.1:0".parse()?;
        let watched = Arc::new(Mutex::new(Watched::default()));
        let layer = watched.clone();
        let server = Server::start_wrapped(state, listen, move |app| {
            app.layer(axum::middleware::from_fn(move |req: Request, next: Next| watch(layer.clone(), req, next)))
        })
        .await?;
        let base = format!("http://{}", server.addr);
        let (driver, driver_port, client) = start_driver(dir.path()).await?;
        Ok(Harness {
            browser: Browser { client, base },
            watched,
            others: Vec::new(),
            server: Some(server),
            cluster: None,
            driver,
            driver_port,
            clock,
            dir,
        })
    }

    /// Starts a throwaway PostgreSQL cluster, `replicas` `edge-server` processes serving the console on it (the
    /// binary of [`server_binary`], with the demo customer: users admin, operator, viewer with [`PASSWORD`]),
    /// the load balancer in front of them, and a browser pointed at the balancer. The requests go through real
    /// processes: [`Harness::seen`], [`Harness::slow`], [`Harness::api`] and [`Harness::advance`] do nothing here.
    pub async fn start_cluster(replicas: usize) -> Result<Harness> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir()?;
        // The postgres user (initdb runs as it when we are root) must reach the cluster's directory.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        let spec = edge_cluster::ClusterSpec {
            binary: server_binary()?,
            dir: dir.path().join("cluster"),
            postgres_dir: None,
            replicas,
            listen: None,
            server_args: vec![
                "--demo".into(),
                "--demo-days".into(),
                "1".into(),
                "--static-dir".into(),
                dist_dir()?.display().to_string(),
            ],
            env: vec![("EDGE_DEMO_PASSWORD".into(), PASSWORD.into())],
        };
        let cluster = tokio::task::spawn_blocking(move || edge_cluster::Cluster::start(&spec)).await??;
        let base = cluster.url();
        let (driver, driver_port, client) = start_driver(dir.path()).await?;
        Ok(Harness {
            browser: Browser { client, base },
            watched: Arc::default(),
            others: Vec::new(),
            server: None,
            cluster: Some(cluster),
            driver,
            driver_port,
            clock: ShiftedClock::default(),
            dir,
        })
    }

    /// Makes the server answer requests of `method` whose path contains `path` only after `delay`.
    pub fn slow(&self, method: &str, path: &str, delay: Duration) {
        self.watched.lock().unwrap_or_else(|e| e.into_inner()).slow.push((method.into(), path.into(), delay));
    }

    /// Ends every slow-down.
    pub fn fast(&self) {
        self.watched.lock().unwrap_or_else(|e| e.into_inner()).slow.clear();
    }

    /// The requests seen so far (and forgets them when `clear`).
    pub fn seen(&self, clear: bool) -> Vec<Seen> {
        let mut w = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        if clear { std::mem::take(&mut w.seen) } else { w.seen.clone() }
    }

    /// The server's address, for requests the test sends itself.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.server.as_ref().map(|s| s.addr)
    }

    /// Sends an API request as `user` (HTTP Basic, password [`PASSWORD`]) and returns the status and the JSON
    /// body (`null` when there is none). `path` is under the server, e.g. `/demo/v1/tasks`.
    pub async fn api(
        &self,
        user: &str,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Result<(u16, serde_json::Value)> {
        let addr = self.addr().context("the server runs")?;
        let (user, method, path) = (user.to_string(), method.to_string(), path.to_string());
        tokio::task::spawn_blocking(move || blocking_request(addr, &user, &method, &path, body)).await?
    }

    /// A new session of `user` (logged in with [`PASSWORD`] through the API), for [`Browser::use_session`].
    pub async fn session_for(&self, user: &str) -> Result<String> {
        let (status, body) = self.api(user, "POST", "/demo/v1/sessions", None).await?;
        match body["id"].as_str() {
            Some(id) if status == 201 || status == 200 => Ok(id.to_string()),
            _ => bail!("logging in {user}: {status} {body}"),
        }
    }

    /// Moves the server's clock forward (sessions and reset links expire).
    pub fn advance(&self, ms: i64) {
        self.clock.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// The mail the server wrote (no SMTP server in tests), oldest first.
    pub fn outbox(&self) -> Result<Vec<String>> {
        let dir = self.dir.path().join("data/outbox");
        let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        files.iter().map(|f| std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))).collect()
    }

    /// A browser of its own (a new profile: cold cache, no cookies) on the same server, which the caller
    /// closes itself ([`Browser::close`] checks its page errors).
    pub async fn fresh_browser(&self) -> Result<Browser> {
        Ok(Browser { client: connect(self.driver_port).await?, base: self.browser.base.clone() })
    }

    /// Another browser, with its own cookies, on the same server.
    pub async fn second_browser(&mut self) -> Result<Browser> {
        let client = connect(self.driver_port).await?;
        self.others.push(client.clone());
        Ok(Browser { client, base: self.browser.base.clone() })
    }

    /// Closes the browsers and stops the server; fails when a page of any of its browsers logged an error
    /// (see [`Browser::page_errors`]) that the test did not take itself.
    pub async fn stop(mut self) -> Result<()> {
        let mut errors = self.browser.page_errors().await?;
        self.browser.client.clone().close().await?;
        // Other browsers may have been closed already by the test (and checked then: see `Browser::close`).
        for other in self.others.drain(..) {
            let b = Browser { client: other, base: String::new() };
            errors.extend(b.page_errors().await.unwrap_or_default());
            let _ = b.client.close().await;
        }
        if let Some(server) = self.server.take() {
            server.stop().await?;
        }
        if !errors.is_empty() {
            bail!("the console logged {} error(s):\n{}", errors.len(), errors.join("\n"));
        }
        Ok(())
    }
}

impl std::ops::Deref for Harness {
    type Target = Browser;
    fn deref(&self) -> &Browser {
        &self.browser
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        // A test that failed half-way has not closed its browsers: ChromeDriver's shutdown quits them (killing
        // ChromeDriver alone would leave them running, writing into a directory about to be removed).
        let shutdown = format!("http://127.0.0.1:{}/shutdown", self.driver_port);
        let _ = ureq::get(&shutdown).timeout(Duration::from_secs(5)).call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// One request with Basic credentials (blocking: run it off the test's runtime).
fn blocking_request(
    addr: SocketAddr,
    user: &str,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> Result<(u16, serde_json::Value)> {
    use base64::Engine;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{PASSWORD}"));
    let request = ureq::request(method, &format!("http://{addr}{path}")).set("Authorization", &format!("Basic {auth}"));
    let answer = match body {
        Some(b) => request.send_json(b),
        None => request.call(),
    };
    let response = match answer {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => return Err(e.into()),
    };
    let status = response.status();
    let text = response.into_string()?;
    Ok((status, serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)))
}
