//! A throwaway ClickHouse server for tests: Debian's `clickhouse-server` (or `$CLICKHOUSE_SERVER`) started as a
//! child process with its own configuration and data in a temp dir, on free loopback ports (HTTP, native and
//! interserver), stopped when dropped. The child is also killed by the kernel if the thread that started it
//! ends (`PR_SET_PDEATHSIG`), so it never outlives a test, even one that is killed.

#![allow(dead_code)]

use std::{
    net::TcpListener,
    os::unix::process::CommandExt,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use tempfile::TempDir;

pub struct ClickHouseServer {
    child: Child,
    pub http_port: u16,
    dir: TempDir,
}

/// Starts clickhouse-server on the configuration in `dir`; it is killed if the calling thread ends.
fn spawn(dir: &std::path::Path) -> std::io::Result<Child> {
    let mut command = Command::new(binary());
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
    command.spawn()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn binary() -> PathBuf {
    let path = std::env::var_os("CLICKHOUSE_SERVER")
        .map_or_else(|| PathBuf::from("/usr/sbin/clickhouse-server"), PathBuf::from);
    assert!(
        path.is_file(),
        "{} is missing: `cargo xtask test` installs Debian's clickhouse-server (or apt-get install clickhouse-server)",
        path.display()
    );
    path
}

impl ClickHouseServer {
    /// Starts a server and waits until it answers; tries new ports if one was taken meanwhile.
    pub fn start() -> ClickHouseServer {
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start() {
                Ok(s) => return s,
                Err(e) => last = e,
            }
        }
        panic!("ClickHouse did not start: {last}");
    }

    fn try_start() -> Result<ClickHouseServer, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let d = dir.path().display().to_string();
        let (http, tcp, interserver) = (free_port(), free_port(), free_port());
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
        std::fs::write(dir.path().join("config.xml"), config).map_err(|e| e.to_string())?;
        std::fs::write(dir.path().join("users.xml"), users).map_err(|e| e.to_string())?;
        let child = spawn(dir.path()).map_err(|e| e.to_string())?;
        let mut server = ClickHouseServer { child, http_port: http, dir };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let http = self.http_port;
        let server = self;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                let log = std::fs::read_to_string(server.dir.path().join("error.log")).unwrap_or_default();
                let tail: String = log.lines().rev().take(5).collect::<Vec<_>>().join("\n");
                return Err(format!("clickhouse-server exited ({status}): {tail}"));
            }
            let ping = ureq::get(&format!("http://127.0.0.1:{http}/ping")).timeout(Duration::from_secs(2)).call();
            if ping.is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("no answer on /ping within 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The `--stats-url` of a database on this server.
    pub fn url(&self, database: &str) -> String {
        format!("clickhouse://default@127.0.0.1:{}/{database}", self.http_port)
    }

    /// Stops the server at once (its data is thrown away, or kept for [`ClickHouseServer::restart`]) and waits
    /// for it.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the stopped server again on the same ports and data.
    pub fn restart(&mut self) {
        self.stop();
        self.child = spawn(self.dir.path()).expect("restarting clickhouse-server");
        self.wait_ready().expect("clickhouse-server ready after a restart");
    }
}

impl Drop for ClickHouseServer {
    fn drop(&mut self) {
        self.stop();
    }
}
