//! The end-to-end harness: a real server on a free loopback port with a temporary data dir and the built
//! console, and headless Chromium browsers driven through ChromeDriver.

use std::{
    net::{SocketAddr, TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use edge_server::{AppState, Server, Settings, demo};
use fantoccini::{Client, ClientBuilder, Locator, elements::Element};
use hyper_util::client::legacy::connect::HttpConnector;
use tempfile::TempDir;

/// Password of the demo users in every end-to-end test.
pub const PASSWORD: &str = "e2e-password-123";
/// How long to wait for the page to show something.
pub const WAIT: Duration = Duration::from_secs(20);

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

/// A server with the demo customer, ChromeDriver, and a first browser (the harness derefs to it).
pub struct Harness {
    pub browser: Browser,
    others: Vec<Client>,
    server: Option<Server>,
    driver: Child,
    driver_port: u16,
    _dir: TempDir,
}

/// One browser (its own profile and cookies) pointed at the server.
pub struct Browser {
    pub client: Client,
    base: String,
}

async fn connect(port: u16) -> Result<Client> {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let capabilities = serde_json::json!({
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
        let dir = tempfile::tempdir()?;
        let state = AppState::open(Settings::new(dir.path().join("data"), dist_dir()?)).await?;
        demo::seed_if_empty_with(&state, PASSWORD, demo::Volume::SMALL).await?;
        let listen: SocketAddr = "127.0.0.1:0".parse()?;
        let server = Server::start(state, listen).await?;
        let base = format!("http://{}", server.addr);

        let chromedriver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        let port = free_port()?;
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {chromedriver}"))?;
        wait_for_port(port, Duration::from_secs(15))?;
        let client = connect(port).await?;
        Ok(Harness {
            browser: Browser { client, base },
            others: Vec::new(),
            server: Some(server),
            driver,
            driver_port: port,
            _dir: dir,
        })
    }

    /// Another browser, with its own cookies, on the same server.
    pub async fn second_browser(&mut self) -> Result<Browser> {
        let client = connect(self.driver_port).await?;
        self.others.push(client.clone());
        Ok(Browser { client, base: self.browser.base.clone() })
    }

    /// Closes the browsers and stops the server.
    pub async fn stop(mut self) -> Result<()> {
        self.browser.client.clone().close().await?;
        for other in self.others.drain(..) {
            other.close().await?;
        }
        if let Some(server) = self.server.take() {
            server.stop().await?;
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
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
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
