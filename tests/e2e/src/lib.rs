//! The end-to-end harness: a real server on a free loopback port with a temporary data dir and the built
//! console (or, with [`Harness::start_cluster`], `edge-server` replicas on a throwaway PostgreSQL behind a load
//! balancer), and headless Chromium browsers driven through ChromeDriver.

use std::{
    net::{SocketAddr, TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex, OnceLock,
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
use fantoccini::{Client, ClientBuilder, Locator, elements::Element};
use hyper_util::client::legacy::connect::HttpConnector;
use tempfile::TempDir;

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

/// One browser (its own profile and cookies) pointed at the server.
pub struct Browser {
    pub client: Client,
    base: String,
}

async fn connect(port: u16) -> Result<Client> {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let capabilities = serde_json::json!({
        // Everything the page logs, kept by ChromeDriver until read: see [`Browser::page_errors`].
        "goog:loggingPrefs": { "browser": "ALL" },
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--window-size=1366,900"
            ]
        }
    });
    let serde_json::Value::Object(capabilities) = capabilities else { bail!("capabilities are an object") };
    ClientBuilder::new(HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .context("opening a Chromium session")
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

/// What the browser's log holds that is an error of the page: `console.error` (a wasm panic is logged so by
/// its hook), an uncaught exception or rejected promise, a violated content security policy. Failed requests
/// (a 4xx answer the console shows, a request it cancelled) are the network's entries, not the page's: the
/// tests check answers themselves.
fn is_page_error(entry: &serde_json::Value) -> bool {
    let level = entry["level"].as_str().unwrap_or_default();
    let source = entry["source"].as_str().unwrap_or_default();
    level == "SEVERE" && source != "network"
}

impl Browser {
    /// The errors the page logged since the last call (see [`is_page_error`]), each as "source: message".
    /// ChromeDriver keeps the log across page loads, so nothing between two calls is missed.
    pub async fn page_errors(&self) -> Result<Vec<String>> {
        let log = self.chromium("se/log", serde_json::json!({ "type": "browser" })).await.context("reading the log")?;
        Ok(log
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .filter(|e| is_page_error(e))
                    .map(|e| {
                        format!("{}: {}", e["source"].as_str().unwrap_or("?"), e["message"].as_str().unwrap_or(""))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Fails when the page logged an error since the last look (`what` says where the test was).
    pub async fn no_page_errors(&self, what: &str) -> Result<()> {
        let errors = self.page_errors().await?;
        if !errors.is_empty() {
            bail!("{what}: the console logged {} error(s):\n{}", errors.len(), errors.join("\n"));
        }
        Ok(())
    }

    /// Closes this browser, failing when its pages logged an error.
    pub async fn close(self) -> Result<()> {
        let errors = self.page_errors().await;
        self.client.close().await?;
        let errors = errors?;
        if !errors.is_empty() {
            bail!("the console logged {} error(s):\n{}", errors.len(), errors.join("\n"));
        }
        Ok(())
    }

    /// Runs a Chrome DevTools Protocol command in the browser (through ChromeDriver).
    pub async fn cdp(&self, cmd: &str, params: serde_json::Value) -> Result<serde_json::Value> {
        self.chromium("goog/cdp/execute", serde_json::json!({ "cmd": cmd, "params": params }))
            .await
            .with_context(|| format!("DevTools {cmd}"))
    }

    /// Slows the browser's CPU down `rate` times (1: full speed), as Lighthouse's mobile run does.
    pub async fn throttle_cpu(&self, rate: u32) -> Result<()> {
        self.cdp("Emulation.setCPUThrottlingRate", serde_json::json!({ "rate": rate })).await.map(drop)
    }

    /// Shows pages `width` CSS pixels wide (a phone at 412), or the window's own size again (`None`).
    pub async fn emulate_width(&self, width: Option<u32>) -> Result<()> {
        match width {
            Some(w) => self.cdp(
                "Emulation.setDeviceMetricsOverride",
                serde_json::json!({ "width": w, "height": 860, "deviceScaleFactor": 1, "mobile": w < 600 }),
            ),
            None => self.cdp("Emulation.clearDeviceMetricsOverride", serde_json::json!({})),
        }
        .await
        .map(drop)
    }

    /// Gives this browser the session cookie `session` (from [`Harness::session_for`]) without loading a page,
    /// so that its first page load is a cold load of the console, logged in.
    pub async fn use_session(&self, session: &str) -> Result<()> {
        self.cdp(
            "Network.setCookie",
            serde_json::json!({
                "name": edge_api::paths::SESSION_COOKIE, "value": session, "url": self.base,
                "httpOnly": true, "sameSite": "Strict", "path": "/"
            }),
        )
        .await
        .map(drop)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn goto(&self, path: &str) -> Result<()> {
        self.client.goto(&self.url(path)).await?;
        Ok(())
    }

    /// Waits for an element to appear.
    pub async fn wait_for(&self, css: &str) -> Result<Element> {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .with_context(|| format!("waiting for {css}"))
    }

    /// Waits until an element's text is `text`.
    pub async fn wait_for_text(&self, css: &str, text: &str) -> Result<()> {
        self.wait_until(css, |t| t.trim() == text).await.with_context(|| format!("waiting for {text:?}")).map(drop)
    }

    /// Waits until an element's text satisfies `ok`; returns that text.
    pub async fn wait_until(&self, css: &str, ok: impl Fn(&str) -> bool) -> Result<String> {
        let deadline = Instant::now() + WAIT;
        let mut last = String::new();
        while Instant::now() < deadline {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                // The text as rendered, or (for an element out of view) as in the document.
                last = el.text().await.unwrap_or_default();
                if last.is_empty() {
                    last = el.prop("textContent").await.ok().flatten().unwrap_or_default();
                }
                if ok(&last) {
                    return Ok(last);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("{css} shows {last:?}")
    }

    /// Waits until an attribute of an element has `value`.
    pub async fn wait_for_attr(&self, css: &str, attr: &str, value: &str) -> Result<()> {
        let deadline = Instant::now() + WAIT;
        let mut last = None;
        while Instant::now() < deadline {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                last = el.attr(attr).await.unwrap_or_default();
                if last.as_deref() == Some(value) {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("{css} has {attr}={last:?}, not {value:?}")
    }

    /// Waits until the browser's path (and query) is `path`.
    pub async fn wait_for_path(&self, path: &str) -> Result<()> {
        let deadline = Instant::now() + WAIT;
        let mut last = String::new();
        while Instant::now() < deadline {
            let url = self.client.current_url().await?;
            last = match url.query() {
                Some(q) => format!("{}?{q}", url.path()),
                None => url.path().to_string(),
            };
            if last == path || url.path() == path {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("the browser is at {last}, not {path}")
    }

    /// Types into a field after clearing it.
    pub async fn fill(&self, css: &str, text: &str) -> Result<()> {
        let field = self.wait_for(css).await?;
        field.clear().await?;
        // Clearing fires no input event: a key does, so an emptied field reaches the page too.
        let text = if text.is_empty() { " \u{E003}" } else { text };
        field.send_keys(text).await?;
        Ok(())
    }

    pub async fn click(&self, css: &str) -> Result<()> {
        self.wait_for(css).await?.click().await?;
        Ok(())
    }

    /// Logs in through the login page.
    pub async fn login(&self, customer: &str, username: &str, password: &str) -> Result<()> {
        self.goto("/login").await?;
        self.fill("input[name=customer]", customer).await?;
        self.fill("input[name=username]", username).await?;
        self.fill("input[name=password]", password).await?;
        self.click("button[type=submit]").await
    }

    /// Logs in as `username` of the demo customer through the login page and waits until the console shows
    /// them logged in.
    pub async fn login_as(&self, username: &str, password: &str) -> Result<()> {
        self.login("demo", username, password).await?;
        self.wait_for_text(".topbar .user", username).await
    }

    /// Opens a view and waits until `ready` shows it has loaded.
    pub async fn open(&self, path: &str, ready: &str) -> Result<Element> {
        self.goto(path).await?;
        self.wait_for(ready).await.with_context(|| format!("{path} loads"))
    }

    /// Clicks the first element matching `css` whose text is `text` (waiting for it).
    pub async fn click_text(&self, css: &str, text: &str) -> Result<()> {
        let deadline = Instant::now() + WAIT;
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            seen.clear();
            for el in self.client.find_all(Locator::Css(css)).await.unwrap_or_default() {
                // The text as in the document (CSS may change its case on screen).
                let shown = el.prop("textContent").await.ok().flatten().unwrap_or_default();
                if shown.trim() == text {
                    el.click().await?;
                    return Ok(());
                }
                seen.push(shown);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("no {css} reading {text:?} (found {seen:?})")
    }

    /// Waits until nothing matches `css`.
    pub async fn wait_gone(&self, css: &str) -> Result<()> {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if self.client.find_all(Locator::Css(css)).await?.is_empty() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("{css} is still there")
    }

    /// Selects `value` in a `<select>`.
    pub async fn select(&self, css: &str, value: &str) -> Result<()> {
        self.wait_for(css).await?.select_by_value(value).await?;
        Ok(())
    }

    /// The value property of a field.
    pub async fn value(&self, css: &str) -> Result<String> {
        Ok(self.wait_for(css).await?.prop("value").await?.unwrap_or_default())
    }

    /// How many elements match right now.
    pub async fn count(&self, css: &str) -> Result<usize> {
        Ok(self.client.find_all(Locator::Css(css)).await?.len())
    }

    /// Presses keys on the focused element (WebDriver key codes: [`TAB`], [`ENTER`]).
    pub async fn keys(&self, keys: &str) -> Result<()> {
        self.client.active_element().await?.send_keys(keys).await?;
        Ok(())
    }

    /// Presses Tab until the focused element matches `css` (at most `max` times), as a keyboard user does.
    pub async fn tab_to(&self, css: &str, max: usize) -> Result<()> {
        for _ in 0..max {
            self.keys(TAB).await?;
            let focused: bool = serde_json::from_value(
                self.client
                    .execute("return document.activeElement.matches(arguments[0]);", vec![serde_json::json!(css)])
                    .await?,
            )?;
            if focused {
                return Ok(());
            }
        }
        bail!("{css} was not reached with {max} presses of Tab")
    }

    /// Runs axe-core in the page and fails on any serious or critical violation, naming each with its elements.
    pub async fn axe(&self, view: &str) -> Result<()> {
        self.client.execute(axe_source()?, vec![]).await.context("injecting axe-core")?;
        let found = self
            .client
            .execute_async(
                r#"const done = arguments[arguments.length - 1];
                axe.run(document, { resultTypes: ["violations"] })
                  .then(r => done(r.violations
                    .filter(v => v.impact === "serious" || v.impact === "critical")
                    .map(v => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.slice(0, 4).map(n => n.target.join(" ")).join(", ")}`)))
                  .catch(e => done([`axe failed: ${e}`]));"#,
                vec![],
            )
            .await
            .context("running axe-core")?;
        let problems: Vec<String> = serde_json::from_value(found)?;
        if !problems.is_empty() {
            bail!("{view}: {} accessibility violation(s):\n{}", problems.len(), problems.join("\n"));
        }
        Ok(())
    }

    /// Sends a command of ChromeDriver's own (under `/session/{id}/`), such as DevTools network emulation.
    pub async fn chromium(&self, path: &'static str, body: serde_json::Value) -> Result<serde_json::Value> {
        Ok(self.client.issue_cmd(ChromiumCommand { path, body }).await?)
    }

    /// Emulates a network link with DevTools (ChromeDriver's network conditions): `latency_ms` each way and
    /// `bits_per_second` down and up.
    pub async fn emulate_network(&self, latency_ms: u32, bits_per_second: u64) -> Result<()> {
        let bytes = bits_per_second / 8;
        self.chromium(
            "chromium/network_conditions",
            serde_json::json!({ "network_conditions": {
                "offline": false, "latency": latency_ms, "download_throughput": bytes, "upload_throughput": bytes
            }}),
        )
        .await?;
        Ok(())
    }

    /// Makes the browser ask for brotli as it does over HTTPS (Chromium offers it only on secure origins,
    /// and the test server is plain HTTP on loopback).
    pub async fn accept_brotli(&self) -> Result<()> {
        self.chromium("goog/cdp/execute", serde_json::json!({ "cmd": "Network.enable", "params": {} })).await?;
        self.chromium(
            "goog/cdp/execute",
            serde_json::json!({ "cmd": "Network.setExtraHTTPHeaders",
                "params": { "headers": { "Accept-Encoding": "br, gzip, deflate" } } }),
        )
        .await?;
        Ok(())
    }

    /// In screenshot mode ($EDGE_E2E_SCREENSHOTS), the page as it is now at 1366 and 400 px, light and dark:
    /// `<name>-1366.png`, `<name>-1366-dark.png`, `<name>-400.png`, `<name>-400-dark.png`. The page is left as
    /// it was (its own width and colours).
    pub async fn snapshots(&self, name: &str) -> Result<()> {
        if std::env::var_os("EDGE_E2E_SCREENSHOTS").is_none() {
            return Ok(());
        }
        for width in [1366u32, 400] {
            self.emulate_width(Some(width)).await?;
            for dark in [false, true] {
                let scheme = if dark { "dark" } else { "light" };
                self.cdp(
                    "Emulation.setEmulatedMedia",
                    serde_json::json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }),
                )
                .await?;
                tokio::time::sleep(Duration::from_millis(300)).await;
                self.snapshot(&format!("{name}-{width}{}", if dark { "-dark" } else { "" })).await?;
            }
        }
        self.cdp("Emulation.setEmulatedMedia", serde_json::json!({ "features": [] })).await?;
        self.emulate_width(None).await
    }

    /// Saves a screenshot as `<name>.png` in $EDGE_E2E_SCREENSHOTS, when that is set, so views can be looked at.
    pub async fn snapshot(&self, name: &str) -> Result<()> {
        if let Some(dir) = std::env::var_os("EDGE_E2E_SCREENSHOTS") {
            let png = self.client.screenshot().await?;
            std::fs::create_dir_all(&dir)?;
            std::fs::write(PathBuf::from(dir).join(format!("{name}.png")), png)?;
        }
        Ok(())
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

/// WebDriver's key codes.
pub const TAB: &str = "\u{E004}";
pub const ENTER: &str = "\u{E007}";
pub const END: &str = "\u{E010}";
pub const ESCAPE: &str = "\u{E00C}";

/// axe-core's script: `$EDGE_E2E_AXE`, or where `cargo xtask test` installs it (npm, under target/tools).
fn axe_source() -> Result<&'static str> {
    static SOURCE: OnceLock<String> = OnceLock::new();
    if let Some(s) = SOURCE.get() {
        return Ok(s);
    }
    let path = std::env::var_os("EDGE_E2E_AXE").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/tools/node_modules/axe-core/axe.min.js")
    });
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading axe-core at {} (cargo xtask test installs it)", path.display()))?;
    Ok(SOURCE.get_or_init(|| text))
}

/// A ChromeDriver command outside the WebDriver standard.
#[derive(Debug)]
struct ChromiumCommand {
    path: &'static str,
    body: serde_json::Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for ChromiumCommand {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/{}", session_id.unwrap_or_default(), self.path))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.body.to_string()))
    }
}
