//! A throwaway ClickHouse server: Debian's `clickhouse-server` (or `$CLICKHOUSE_SERVER`) started as a child
//! process with its own configuration and data in a temp dir, on free loopback ports (HTTP, native and
//! interserver), stopped when dropped. The child is also killed by the kernel if the thread that started it
//! ends (`PR_SET_PDEATHSIG`), so it never outlives a test or a benchmark, even one that is killed.
//!
//! Used by the ClickHouse statistics tests, `cargo xtask bench stats --engine clickhouse` and `cargo xtask serve
//! --cluster` (its shards, with their data kept in a directory of their own: [`ClickHouse::start_in`]).

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use tempfile::TempDir;

use crate::free_port;

pub struct ClickHouse {
    child: Child,
    pub http_port: u16,
    dir: PathBuf,
    /// The temp dir of a throwaway server (removed when dropped).
    _temp: Option<TempDir>,
}

/// Starts clickhouse-server on the configuration in `dir`; it is killed if the calling thread ends.
fn spawn(dir: &Path) -> Result<Child> {
    let mut command = Command::new(binary()?);
    command
        .arg(format!("--config-file={}/config.xml", dir.display()))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn().context("starting clickhouse-server")
}

fn binary() -> Result<PathBuf> {
    let path = std::env::var_os("CLICKHOUSE_SERVER")
        .map_or_else(|| PathBuf::from("/usr/sbin/clickhouse-server"), PathBuf::from);
    if !path.is_file() {
        bail!(
            "{} is missing: `cargo xtask test` installs Debian's clickhouse-server (or apt-get install clickhouse-server)",
            path.display()
        );
    }
    Ok(path)
}

/// Whether ClickHouse answers `GET /ping` on `port` of the loopback address.
fn ping(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"GET /ping HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.") && reply.split_whitespace().nth(1) == Some("200")
}

impl ClickHouse {
    /// Starts a server and waits until it answers; tries new ports if one was taken meanwhile.
    pub fn start() -> Result<ClickHouse> {
        Self::start_with(None)
    }

    /// Starts a server whose configuration and data live in `dir` (created if missing), kept when it stops:
    /// started again on the same dir, it has the same databases (on new free ports).
    pub fn start_in(dir: &Path) -> Result<ClickHouse> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        Self::start_with(Some(dir))
    }

    fn start_with(dir: Option<&Path>) -> Result<ClickHouse> {
        let mut last = None;
        for _ in 0..3 {
            match Self::try_start(dir) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("no attempt")).context("ClickHouse did not start"))
    }

    fn try_start(kept: Option<&Path>) -> Result<ClickHouse> {
        let temp = match kept {
            Some(_) => None,
            None => Some(tempfile::Builder::new().prefix("edge-clickhouse-").tempdir()?),
        };
        let dir: PathBuf = match (&temp, kept) {
            (Some(t), _) => t.path().to_path_buf(),
            (None, Some(k)) => k.to_path_buf(),
            (None, None) => bail!("no directory for ClickHouse"),
        };
        let d = dir.display().to_string();
        let (http, tcp, interserver) = (free_port()?, free_port()?, free_port()?);
        let config = format!(
            r#"<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <interserver_http_port>{interserver}</interserver_http_port>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
  <part_log><database>system</database><table>part_log</table><flush_interval_milliseconds>7500</flush_interval_milliseconds></part_log>
</yandex>
"#
        );
        let users = r#"<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage><max_threads>2</max_threads></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
"#;
        std::fs::write(dir.join("config.xml"), config)?;
        std::fs::write(dir.join("users.xml"), users)?;
        let child = spawn(&dir)?;
        let mut server = ClickHouse { child, http_port: http, dir, _temp: temp };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default();
                let tail: String = log.lines().rev().take(5).collect::<Vec<_>>().join("\n");
                bail!("clickhouse-server exited ({status}): {tail}");
            }
            if ping(self.http_port) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("clickhouse-server did not answer on /ping within 60 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The `--stats-url` of a database on this server.
    pub fn url(&self, database: &str) -> String {
        format!("clickhouse://default@127.0.0.1:{}/{database}", self.http_port)
    }

    /// The server's process id (to read its CPU time).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server at once (its data is thrown away, or kept for [`ClickHouse::restart`]) and waits for
    /// it.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the stopped server again on the same ports and data.
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        self.child = spawn(&self.dir)?;
        self.wait_ready()
    }
}

impl Drop for ClickHouse {
    fn drop(&mut self) {
        self.stop();
    }
}
