//! Local PostgreSQL clusters, load balancers, `edge-server` replicas and throwaway ClickHouse servers, as real
//! processes: Debian's PostgreSQL (initdb and pg_ctl, as the `postgres` user through runuser when we are root),
//! HAProxy or nginx with a config of their own, the server binary, and Debian's clickhouse-server. Every one
//! listens on a free loopback port and is stopped when its value is dropped; each also has a watchdog that stops
//! it when the process that started it ends, however it ends (a PostgreSQL cluster's also removes a throwaway
//! one; ClickHouse is killed by the kernel when the thread that started it ends).
//!
//! Used by the tests (the store contract suite, the replicas test, the ClickHouse statistics tests), `cargo
//! xtask test` (one throwaway cluster for the PostgreSQL run of the router suites), `cargo xtask serve
//! --cluster`, `cargo xtask load --cluster` and `cargo xtask bench stats --engine clickhouse`.
mod balancer;
mod clickhouse;
mod postgres;
mod replica;

use std::{
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

pub use balancer::{Balancer, BalancerKind, haproxy_config, nginx_config};
pub use clickhouse::ClickHouse;
pub use postgres::{Postgres, Tuning, bin_dir as postgres_bin_dir};
pub use replica::{Replica, ReplicaSpec};

/// A loopback port no one listens on now.
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits until something accepts connections on `port` of the loopback address.
pub fn wait_for_port(port: u16, within: Duration, what: &str) -> Result<()> {
    let deadline = Instant::now() + within;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{what} did not listen on port {port} within {within:?}")
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// Runs `cmd`, failing with its output when it fails; returns its stdout.
fn output_of(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().with_context(|| format!("starting {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!(
            "{:?} failed ({}): {}{}",
            cmd.get_program(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A process of its own (out of our process group, so Ctrl-C does not end it first) that waits for this
/// process or for `child` to end; when this process ends first (even by SIGKILL, which runs no destructor),
/// it stops `child`: SIGTERM, then SIGKILL after 10 s. A child that ended first ends the watchdog.
pub(crate) fn watch_child(child: &mut std::process::Child, what: &str) -> Result<()> {
    use std::os::unix::process::CommandExt;
    // A zombie (ended, not yet reaped by us) counts as ended.
    let alive = |pid: u32| format!("{{ kill -0 {pid} && ! grep -q '^[0-9]* (.*) Z' /proc/{pid}/stat; }} 2>/dev/null");
    let (owner, pid) = (std::process::id(), child.id());
    let script = format!(
        "while {owner_alive} && {child_alive}; do sleep 1; done; {owner_alive} && exit 0; \
         kill -TERM {pid} 2>/dev/null; i=0; while {child_alive} && [ $i -lt 20 ]; do sleep 0.5; i=$((i+1)); done; \
         {child_alive} && kill -KILL {pid} 2>/dev/null; exit 0",
        owner_alive = alive(owner),
        child_alive = alive(pid),
    );
    let started = Command::new("sh")
        .args(["-c", &script])
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = started {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e).with_context(|| format!("starting the watchdog of {what}"));
    }
    Ok(())
}

/// Quotes `text` for sh.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What a [`Cluster`] is made of.
pub struct ClusterSpec {
    /// The `edge-server` binary.
    pub binary: PathBuf,
    /// Where the replicas' data dirs (and their logs) go; with `postgres_dir` unset, also the database.
    pub dir: PathBuf,
    /// The PostgreSQL cluster's own directory, kept between runs; None: a throwaway one under `dir`.
    pub postgres_dir: Option<PathBuf>,
    pub replicas: usize,
    /// The balancer's address; None: a free loopback port.
    pub listen: Option<SocketAddr>,
    /// More flags for every `edge-server serve`.
    pub server_args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// PostgreSQL, replicas of the server on it, and a load balancer in front of them (round-robin).
pub struct Cluster {
    // Dropped in this order: the balancer, the replicas, then the database.
    pub balancer: Balancer,
    pub replicas: Vec<Replica>,
    pub postgres: Postgres,
    /// The replicas' `--database-url`.
    pub database_url: String,
}

impl Cluster {
    pub fn start(spec: &ClusterSpec) -> Result<Cluster> {
        std::fs::create_dir_all(&spec.dir).with_context(|| format!("creating {}", spec.dir.display()))?;
        let postgres = match &spec.postgres_dir {
            Some(dir) => Postgres::start(dir, Tuning::Durable)?,
            None => Postgres::start(&spec.dir.join("postgres"), Tuning::Throwaway)?,
        };
        postgres.create_database("edge")?;
        let database_url = postgres.url("edge");
        let mut spawned = Vec::new();
        for i in 0..spec.replicas {
            let name = ((b'a' + i as u8) as char).to_string();
            let mut args = vec!["--trusted-proxies".to_string(), "127.0.0.1".to_string()];
            args.extend(spec.server_args.iter().cloned());
            spawned.push(Replica::spawn(ReplicaSpec {
                name: name.clone(),
                binary: spec.binary.clone(),
                data_dir: spec.dir.join(format!("replica-{name}")),
                port: free_port()?,
                database_url: Some(database_url.clone()),
                args,
                env: spec.env.clone(),
            })?);
        }
        let mut replicas = Vec::new();
        for mut r in spawned {
            r.wait_ready(Duration::from_secs(300))?;
            replicas.push(r);
        }
        let ports: Vec<u16> = replicas.iter().map(|r| r.spec.port).collect();
        let listen = match spec.listen {
            Some(addr) => addr,
            None => SocketAddr::from(([127, 0, 0, 1], free_port()?)),
        };
        let balancer = Balancer::start(&spec.dir.join("balancer"), listen, &ports)?;
        Ok(Cluster { balancer, replicas, postgres, database_url })
    }

    /// The balancer's address, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.balancer.url()
    }
}

/// The directory of this workspace's `target/`.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("cluster lives in the workspace").join("target")
    })
}
