//! A server process for a measurement: started on a loopback port the system picks, with its own data dir,
//! and stopped with SIGTERM when dropped.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use anyhow::{Context, Result, bail};
use base64::{Engine, prelude::BASE64_STANDARD};

pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
}

impl Server {
    /// Starts `edge-server serve` on `data_dir` with `extra` flags (and `env`), and waits until it answers.
    pub fn start(binary: &Path, data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Result<Server> {
        let mut cmd = Command::new(binary);
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--static-dir", "/nonexistent", "--data-dir"])
            .arg(data_dir)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Server::wait_for_address(
            cmd.spawn().with_context(|| format!("starting {}", binary.display()))?,
            "Edge Console: ",
        )
    }

    /// Takes over a started child that prints `<prefix>http://ADDR/` on stdout when it listens.
    pub fn wait_for_address(mut child: Child, prefix: &str) -> Result<Server> {
        let stdout = child.stdout.take().context("the server's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let base = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(addr) = line.strip_prefix(prefix) {
                        break addr.trim_end_matches('/').to_string();
                    }
                }
                _ => {
                    let status = child.wait()?;
                    bail!("the server stopped before it listened ({status})");
                }
            }
        };
        // Keep reading its output so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Server { child, base })
    }

    /// The process id (for `perf record -p`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running and answers /healthz.
    pub fn healthy(&mut self) -> bool {
        let alive = matches!(self.child.try_wait(), Ok(None));
        alive && ureq::get(&format!("{}/healthz", self.base)).timeout(Duration::from_secs(10)).call().is_ok()
    }

    /// CPU time the server process has used so far (user and system).
    pub fn cpu_seconds(&self) -> f64 {
        cpu_seconds(self.child.id())
    }

    /// Logs in with Basic credentials and returns the `Cookie` header value of the new session.
    pub fn login(&self, customer: &str, user: &str, password: &str) -> Result<String> {
        login(&self.base, customer, user, password)
    }
}

/// Logs in at the server at `base` with Basic credentials and returns the `Cookie` header value of the new
/// session.
pub fn login(base: &str, customer: &str, user: &str, password: &str) -> Result<String> {
    let auth = format!("Basic {}", BASE64_STANDARD.encode(format!("{user}:{password}")));
    let reply = ureq::post(&format!("{base}/{customer}/v1/sessions"))
        .set("Authorization", &auth)
        .call()
        .with_context(|| format!("logging in as {user}"))?;
    let session: serde_json::Value = serde_json::from_str(&reply.into_string()?)?;
    Ok(format!("authtoken={}", session["id"].as_str().context("session id")?))
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

/// CPU time process `pid` has used so far (user and system), from `/proc/PID/stat`.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th of the line.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest.split_whitespace().skip(11).take(2).filter_map(|f| f.parse::<u64>().ok()).sum();
    // Linux reports them in USER_HZ, 100 per second on every architecture it runs on here.
    ticks as f64 / 100.0
}

/// The machine's load average over the last minute, from `/proc/loadavg`.
pub fn load_average() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().next().and_then(|l| l.parse().ok()).unwrap_or(f64::NAN)
}
