//! A PostgreSQL cluster of our own: initdb into a directory, pg_ctl start on a free loopback port, trust
//! authentication for the `postgres` superuser on 127.0.0.1 only.

use std::{
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context, Result, bail};

use crate::{free_port, is_root, output_of, sh_quote};

/// How the cluster trades durability for speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tuning {
    /// For tests: no fsync (a crash of the machine may lose it; a stopped or killed server loses nothing), and
    /// the directory is removed when the cluster is dropped or its owner ends.
    Throwaway,
    /// Kept between runs, with PostgreSQL's defaults.
    Durable,
}

pub struct Postgres {
    /// Holds `data/` and `postgres.log`.
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    /// initdb and pg_ctl run as the `postgres` user (initdb refuses to run as root).
    as_postgres: bool,
    tuning: Tuning,
    running: bool,
}

/// The newest Debian PostgreSQL's programs: `$EDGE_POSTGRES_BIN`, or `/usr/lib/postgresql/<newest>/bin`.
pub fn bin_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("EDGE_POSTGRES_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| {
            dirs.filter_map(|e| {
                let e = e.ok()?;
                let version = e.file_name().to_str()?.parse().ok()?;
                let bin = e.path().join("bin");
                bin.join("initdb").is_file().then_some((version, bin))
            })
            .collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .context("no PostgreSQL under /usr/lib/postgresql (apt-get install postgresql; `cargo xtask test` does it)")
}

/// The `postgres` user's uid and gid, from /etc/passwd.
fn postgres_ids() -> Result<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&"postgres") && fields.len() > 3)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
        .context("no `postgres` user (it comes with Debian's postgresql package)")
}

impl Postgres {
    /// Starts the cluster in `dir`, creating it there first when there is none.
    pub fn start(dir: &Path, tuning: Tuning) -> Result<Postgres> {
        let bin = bin_dir()?;
        let as_postgres = is_root();
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let dir = dir.canonicalize()?;
        let mut pg = Postgres { dir, bin, port: 0, as_postgres, tuning, running: false };
        if as_postgres {
            let (uid, gid) = postgres_ids()?;
            std::os::unix::fs::chown(&pg.dir, Some(uid), Some(gid))
                .with_context(|| format!("giving {} to the postgres user", pg.dir.display()))?;
            let reachable = Command::new("runuser")
                .args(["-u", "postgres", "--", "test", "-w"])
                .arg(&pg.dir)
                .status()
                .is_ok_and(|s| s.success());
            if !reachable {
                bail!(
                    "the postgres user cannot reach {} (a parent directory is closed to other users)",
                    pg.dir.display()
                );
            }
        }
        if !pg.data().join("PG_VERSION").is_file() {
            pg.init()?;
        }
        pg.spawn_watchdog()?;
        pg.start_again()?;
        Ok(pg)
    }

    /// A throwaway cluster in a new directory under the system's temporary one.
    pub fn throwaway() -> Result<Postgres> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!("edge-postgres-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        Postgres::start(&std::env::temp_dir().join(name), Tuning::Throwaway)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A command for one of PostgreSQL's programs, as the `postgres` user when we are root.
    fn program(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(path);
            cmd
        } else {
            Command::new(path)
        }
    }

    fn init(&self) -> Result<()> {
        output_of(
            self.program("initdb")
                .args(["--username", "postgres", "--auth", "trust", "--encoding", "UTF8", "--locale", "C", "-D"])
                .arg(self.data()),
        )
        .context("initdb")?;
        let mut conf = String::from(
            "\n# edge-cluster\nlisten_addresses = '127.0.0.1'\nmax_connections = 200\nshared_buffers = 64MB\n",
        );
        let socket_dir = self.data().display().to_string().replace('\'', "''");
        conf.push_str(&format!("unix_socket_directories = '{socket_dir}'\n"));
        if self.tuning == Tuning::Throwaway {
            conf.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
        }
        let path = self.data().join("postgresql.conf");
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str(&conf);
        std::fs::write(&path, text)?;
        Ok(())
    }

    /// A process of its own (out of our process group, so Ctrl-C does not end it first) that waits for this
    /// process to end, then stops the cluster and removes a throwaway one.
    fn spawn_watchdog(&self) -> Result<()> {
        let stop = format!(
            "{} {} -D {} -m fast -w stop",
            if self.as_postgres { "runuser -u postgres --" } else { "" },
            sh_quote(&self.bin.join("pg_ctl").display().to_string()),
            sh_quote(&self.data().display().to_string())
        );
        let remove = match self.tuning {
            Tuning::Throwaway => format!("; rm -rf {}", sh_quote(&self.dir.display().to_string())),
            Tuning::Durable => String::new(),
        };
        let script = format!(
            "while kill -0 {} 2>/dev/null; do sleep 1; done; {stop} >/dev/null 2>&1{remove}",
            std::process::id()
        );
        Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the cluster's watchdog")?;
        Ok(())
    }

    /// Starts the stopped cluster, on the port it had (a new free one the first time).
    pub fn start_again(&mut self) -> Result<()> {
        if self.port == 0 {
            self.port = free_port()?;
        }
        output_of(
            self.program("pg_ctl")
                .args(["-w", "-t", "120", "-l"])
                .arg(self.dir.join("postgres.log"))
                .args(["-o", &format!("-p {}", self.port), "-D"])
                .arg(self.data())
                .arg("start")
                .stdin(Stdio::null()),
        )
        .with_context(|| format!("starting PostgreSQL (its log: {})", self.dir.join("postgres.log").display()))?;
        self.running = true;
        Ok(())
    }

    /// Stops the cluster (`fast`: sessions are ended, nothing committed is lost).
    pub fn stop(&mut self) -> Result<()> {
        if self.running {
            self.running = false;
            output_of(self.program("pg_ctl").args(["-m", "fast", "-w", "-D"]).arg(self.data()).arg("stop"))?;
        }
        Ok(())
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of `database` for the `postgres` superuser.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Runs `sql` in `database` with psql; returns what it printed (unaligned, tuples only).
    pub fn psql(&self, database: &str, sql: &str) -> Result<String> {
        output_of(
            Command::new(self.bin.join("psql"))
                .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", "postgres"])
                .args(["-p", &self.port.to_string(), "-d", database, "-c", sql])
                .stdin(Stdio::null()),
        )
    }

    /// Creates `database` unless it exists.
    pub fn create_database(&self, database: &str) -> Result<()> {
        let exists = self.psql("postgres", &format!("SELECT 1 FROM pg_database WHERE datname = '{database}'"))?;
        if exists.trim().is_empty() {
            self.psql("postgres", &format!("CREATE DATABASE \"{database}\""))?;
        }
        Ok(())
    }

    /// The cluster's directory (its data and its log).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self.stop();
        if self.tuning == Tuning::Throwaway {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
