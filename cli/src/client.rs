//! The API client: one customer's base address and credentials, JSON in and out with edge-api's types, the
//! console's client rules (a 429 or 503 waits as `Retry-After` says and is sent again; purges paced under the
//! 2-a-second limit), and every failure as a [`Failure`] with the exit code it ends the command with.

use std::{
    io::Read,
    time::{Duration, Instant},
};

use base64::Engine;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

/// How a command ended, as its exit code (README: Automation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Something unexpected: an answer that is not the API's, a file that cannot be read.
    Failure = 1,
    /// The command line itself is wrong (clap's own code).
    Usage = 2,
    /// 401: no credentials, wrong ones, an expired or revoked token.
    Auth = 3,
    /// 403: the token lacks the scope, the role does not allow it, or the address is not allowed.
    Forbidden = 4,
    /// 404: no such property, list, token…, or no such customer.
    NotFound = 5,
    /// 409/412/428: someone else changed it first (a configuration's etag).
    Conflict = 6,
    /// 400/413/415/422: the server refused what was sent.
    Invalid = 7,
    /// A purge or deployment failed or did not finish within `--timeout`.
    TaskFailed = 8,
    /// The server cannot be reached or keeps answering 429/5xx.
    Unavailable = 9,
}

/// A failed command: the exit code, one sentence, and the details (the server's, or our own).
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
    pub details: Vec<String>,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// The error body's `type`, when the server answered one.
    pub kind: Option<String>,
}

impl Failure {
    pub fn new(exit: Exit, message: impl Into<String>) -> Failure {
        Failure { exit, message: message.into(), details: Vec::new(), status: None, kind: None }
    }

    pub fn with_details(mut self, details: Vec<String>) -> Failure {
        self.details = details;
        self
    }
}

impl<E: std::error::Error> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::new(Exit::Failure, e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Failure>;

/// The credentials a request carries.
#[derive(Clone)]
pub enum Auth {
    /// An API token (`Authorization: Bearer`).
    Token(String),
    /// A person: username, password and, with two-factor on, a one-time code.
    Basic {
        user: String,
        password: String,
        otp: Option<String>,
    },
    None,
}

/// A client of one customer's API.
pub struct Client {
    agent: ureq::Agent,
    /// `https://host/{customer}/v1`
    pub base: String,
    /// `https://host` (the API's own addresses, `/{customer}/v1/…`, are relative to it).
    pub origin: String,
    /// `/{customer}/v1`
    base_path: String,
    auth: Auth,
    /// When the last purge went out, for pacing.
    last_purge: Option<Instant>,
}

/// Requests a 429 or 503 is sent again after, at most (then the command fails with [`Exit::Unavailable`]).
const RETRIES: u32 = 8;
/// The longest wait a `Retry-After` is followed for.
const MAX_WAIT: Duration = Duration::from_secs(30);
/// Purges go at most every this long: the server allows 2 a second per customer (a bucket of 2).
pub const PURGE_EVERY: Duration = Duration::from_millis(550);

/// A response the client took in: its status and JSON body (or null).
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

impl Client {
    pub fn new(origin: &str, customer: &str, auth: Auth) -> Client {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(10))
            .timeout_read(Duration::from_secs(120))
            .user_agent(concat!("edge/", env!("CARGO_PKG_VERSION")))
            .redirects(0)
            .build();
        let origin = origin.trim_end_matches('/').to_string();
        let base_path = edge_api::paths::base(customer);
        let base = format!("{origin}{base_path}");
        Client { agent, base, origin, base_path, auth, last_purge: None }
    }

    /// The absolute address of `path`: relative to the customer's base (`/tokens`), or an address the API
    /// gave (`/acme/v1/tasks/…`), or a full URL.
    pub fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else if path.starts_with(&format!("{}/", self.base_path)) {
            format!("{}{path}", self.origin)
        } else {
            format!("{}{path}", self.base)
        }
    }

    /// Sends `method` to `path` with an optional JSON body and extra headers; follows `Retry-After` on 429 and
    /// 503; a non-2xx/3xx answer becomes a [`Failure`].
    pub fn send(&mut self, method: &str, path: &str, body: Option<&Value>, headers: &[(&str, &str)]) -> Result<Reply> {
        let url = self.url(path);
        let is_purge = method == "POST" && path.ends_with("/cache/purge");
        for attempt in 0..=RETRIES {
            if is_purge {
                self.pace_purge();
            }
            let mut request = self.agent.request(method, &url).set("Accept", "application/json");
            request = match &self.auth {
                Auth::Token(t) => request.set("Authorization", &format!("Bearer {t}")),
                Auth::Basic { user, password, otp } => {
                    let pair = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                    let r = request.set("Authorization", &format!("Basic {pair}"));
                    match otp {
                        Some(code) => r.set(edge_api::paths::OTP_HEADER, code),
                        None => r,
                    }
                }
                Auth::None => request,
            };
            for (name, value) in headers {
                request = request.set(name, value);
            }
            let result = match body {
                Some(b) => request.send_json(b),
                None => request.call(),
            };
            let response = match result {
                Ok(r) => r,
                Err(ureq::Error::Status(_, r)) => r,
                Err(ureq::Error::Transport(t)) => {
                    return Err(Failure::new(Exit::Unavailable, format!("cannot reach {url}: {t}")));
                }
            };
            let status = response.status();
            let retry_after = response.header("Retry-After").and_then(|v| v.trim().parse::<u64>().ok());
            let reply = Reply { status, body: read_json(response) };
            if (status == 429 || status == 503) && attempt < RETRIES {
                let wait = Duration::from_secs(retry_after.unwrap_or(1).max(1)).min(MAX_WAIT);
                std::thread::sleep(wait);
                continue;
            }
            if status >= 400 {
                return Err(failure_of(&reply, method, path));
            }
            return Ok(reply);
        }
        Err(Failure::new(Exit::Unavailable, format!("{method} {path}: the server kept asking to wait")))
    }

    fn pace_purge(&mut self) {
        if let Some(last) = self.last_purge {
            let since = last.elapsed();
            if since < PURGE_EVERY {
                std::thread::sleep(PURGE_EVERY - since);
            }
        }
        self.last_purge = Some(Instant::now());
    }

    pub fn get<T: DeserializeOwned>(&mut self, path: &str) -> Result<T> {
        let reply = self.send("GET", path, None, &[])?;
        parse(reply.body, path)
    }

    pub fn post<T: DeserializeOwned>(&mut self, path: &str, body: &impl Serialize) -> Result<T> {
        let body = serde_json::to_value(body)?;
        let reply = self.send("POST", path, Some(&body), &[])?;
        parse(reply.body, path)
    }
}

/// The body as JSON, or null when it is not (an empty answer); read up to 256 MiB.
fn read_json(response: ureq::Response) -> Value {
    let mut text = String::new();
    let _ = response.into_reader().take(256 << 20).read_to_string(&mut text);
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

pub fn parse<T: DeserializeOwned>(body: Value, what: &str) -> Result<T> {
    serde_json::from_value(body).map_err(|e| Failure::new(Exit::Failure, format!("unexpected answer to {what}: {e}")))
}

/// The failure an error answer stands for: its exit code, and the message and details of the API's error body
/// (`{type, message, details}`) or of purge's (`{code, description, details}`).
fn failure_of(reply: &Reply, method: &str, path: &str) -> Failure {
    let exit = match reply.status {
        401 => Exit::Auth,
        403 => Exit::Forbidden,
        404 => Exit::NotFound,
        409 | 412 | 428 => Exit::Conflict,
        400 | 405 | 406 | 413 | 414 | 415 | 422 | 431 => Exit::Invalid,
        429 | 502..=504 => Exit::Unavailable,
        _ => Exit::Failure,
    };
    let b = &reply.body;
    let message = b["message"]
        .as_str()
        .or(b["description"].as_str())
        .map(str::to_string)
        .unwrap_or_else(|| format!("{method} {path} answered {}", reply.status));
    let details = b["details"]
        .as_array()
        .map(|d| d.iter().filter_map(|d| d["message"].as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    // Purge's bodies say 403 for authentication failures (the HTTP status is 400 or 401 then).
    let exit = if b["code"] == 403 && reply.status != 403 { Exit::Auth } else { exit };
    Failure { exit, message, details, status: Some(reply.status), kind: b["type"].as_str().map(str::to_string) }
}

/// Waits for a deployment task to end (`COMPLETED` or `FAILED`), up to `timeout`; calls `progress` with its
/// progress after each look.
pub fn wait_task(
    client: &mut Client,
    uri: &str,
    timeout: Duration,
    mut progress: impl FnMut(u8),
) -> Result<edge_api::Task> {
    let started = Instant::now();
    loop {
        let task: edge_api::Task = client.get(uri)?;
        progress(task.progress);
        if task.complete {
            if task.status == "FAILED" {
                let why = task.error_info.as_ref().map(|e| e.message.clone()).unwrap_or_default();
                return Err(Failure::new(Exit::TaskFailed, format!("the deployment {} failed: {why}", task.id)));
            }
            return Ok(task);
        }
        if started.elapsed() >= timeout {
            return Err(Failure::new(
                Exit::TaskFailed,
                format!(
                    "the deployment {} did not finish within {} s ({}%)",
                    task.id,
                    timeout.as_secs(),
                    task.progress
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
