//! One `edge-server serve` process: its own data dir and port, its log beside the data dir.

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

/// How to start a replica (again).
#[derive(Debug, Clone)]
pub struct ReplicaSpec {
    /// A short name (`a`, `b`, …), for messages.
    pub name: String,
    pub binary: PathBuf,
    pub data_dir: PathBuf,
    pub port: u16,
    /// `--database-url`; None: SQLite in the data dir.
    pub database_url: Option<String>,
    /// More flags for `serve`.
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

pub struct Replica {
    pub spec: ReplicaSpec,
    child: Option<Child>,
    /// What it printed on stdout so far.
    output: Arc<Mutex<Vec<String>>>,
}

impl Replica {
    /// Starts the replica and waits until it serves.
    pub fn start(spec: ReplicaSpec) -> Result<Replica> {
        let mut replica = Replica::spawn(spec)?;
        replica.wait_ready(Duration::from_secs(300))?;
        Ok(replica)
    }

    /// Starts the replica without waiting (see [`Replica::wait_ready`]).
    pub fn spawn(spec: ReplicaSpec) -> Result<Replica> {
        let mut replica = Replica { spec, child: None, output: Arc::default() };
        replica.restart()?;
        Ok(replica)
    }

    /// The log file (the server's stderr).
    pub fn log_path(&self) -> PathBuf {
        self.spec.data_dir.with_extension("log")
    }

    /// Starts the process again with the same flags (after [`Replica::kill`] or [`Replica::stop`]), without
    /// waiting.
    pub fn restart(&mut self) -> Result<()> {
        std::fs::create_dir_all(&self.spec.data_dir)?;
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log_path())?;
        let mut cmd = Command::new(&self.spec.binary);
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{}", self.spec.port), "--data-dir"])
            .arg(&self.spec.data_dir)
            .args(&self.spec.args)
            .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        if !self.spec.args.iter().any(|a| a == "--static-dir") {
            cmd.args(["--static-dir", "/nonexistent"]);
        }
        match &self.spec.database_url {
            Some(url) => cmd.env("EDGE_DATABASE_URL", url),
            None => cmd.env_remove("EDGE_DATABASE_URL"),
        };
        for (k, v) in &self.spec.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().with_context(|| format!("starting {}", self.spec.binary.display()))?;
        crate::watch_child(&mut child, &format!("replica {}", self.spec.name))?;
        let stdout = child.stdout.take().context("the replica's stdout")?;
        let output = self.output.clone();
        output.lock().unwrap_or_else(|e| e.into_inner()).clear();
        // Read everything it prints, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                output.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        self.child = Some(child);
        Ok(())
    }

    /// Waits until the replica says it serves (`Edge Console: http://…`).
    pub fn wait_ready(&mut self, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        loop {
            if self.output().iter().any(|l| l.starts_with("Edge Console: ")) {
                return Ok(());
            }
            let exited = self.child.as_mut().map(|c| c.try_wait()).transpose()?.flatten();
            if let Some(status) = exited {
                let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
                let tail: String =
                    log.lines().rev().take(20).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
                bail!("replica {} stopped before it served ({status}):\n{tail}", self.spec.name);
            }
            if Instant::now() > deadline {
                bail!("replica {} did not serve within {within:?}", self.spec.name);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the replica printed on stdout since it last started.
    pub fn output(&self) -> Vec<String> {
        self.output.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.spec.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL: the process ends at once, in the middle of whatever it does.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM: requests in flight finish, then the process ends.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.stop();
    }
}
