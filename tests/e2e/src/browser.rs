//! One headless Chromium driven through ChromeDriver: opening views, reading and acting on the page, the
//! page's own errors, axe-core, and requests made as the logged-in user.

use std::{
    path::PathBuf,
    sync::OnceLock,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use fantoccini::{Client, ClientBuilder, Locator, elements::Element};
use hyper_util::client::legacy::connect::HttpConnector;

use crate::WAIT;

/// One browser (its own profile and cookies) pointed at the server.
pub struct Browser {
    pub client: Client,
    pub(crate) base: String,
}

pub(crate) async fn connect(port: u16) -> Result<Client> {
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

    /// Waits until an element's text satisfies `ok`, for as long as that text keeps changing: a long task that
    /// reports its progress (say "6 of 10 call(s) answered") may take longer than [`WAIT`] on a loaded machine,
    /// and fails only when it shows the same text for [`WAIT`] (or after ten times [`WAIT`] in all).
    pub async fn wait_until_progressing(&self, css: &str, ok: impl Fn(&str) -> bool) -> Result<String> {
        let give_up = Instant::now() + WAIT * 10;
        let mut deadline = Instant::now() + WAIT;
        let mut last = String::new();
        while Instant::now() < deadline.min(give_up) {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                let text = el.prop("textContent").await.ok().flatten().unwrap_or_default();
                if ok(&text) {
                    return Ok(text);
                }
                if text != last {
                    (last, deadline) = (text, Instant::now() + WAIT);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("{css} shows {last:?}, unchanged for {WAIT:?} or waited {:?} in all", WAIT * 10)
    }

    /// Waits until the console has no request in flight (`<html data-requests>`, which the console's API client
    /// keeps: sent and not yet read) on two looks two animation frames apart, so that whatever the answers
    /// started has run too: the reads a view made have all been answered and shown (or refused, or cancelled).
    pub async fn settled(&self) -> Result<()> {
        const LOOK: &str = "const done = arguments[arguments.length - 1];
            requestAnimationFrame(() => requestAnimationFrame(() => done(document.documentElement.dataset.requests || '0')));";
        let deadline = Instant::now() + WAIT;
        let (mut quiet, mut last) = (0, String::new());
        while Instant::now() < deadline {
            last = self.client.execute_async(LOOK, vec![]).await?.as_str().unwrap_or_default().to_string();
            quiet = if last == "0" { quiet + 1 } else { 0 };
            if quiet == 2 {
                return Ok(());
            }
        }
        bail!("the console still had {last} request(s) in flight after {WAIT:?}")
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
