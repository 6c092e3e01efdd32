//! `edge-server`: serve the API and the console, or set up a customer.

/// mimalloc: statistics answers allocate many small rows, and glibc's allocator was a quarter of the server's
/// time under load (`cargo xtask load`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::{io::IsTerminal, net::SocketAddr, path::PathBuf, time::Duration};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use edge_server::{
    AppState, Server, Settings, admin,
    clock::{Clock, SystemClock},
    demo,
    store::Location,
};
use rand::{Rng, distributions::Alphanumeric};

#[derive(Parser)]
#[command(name = "edge-server", version, about = "Edge Console backend: the Edge API and the console's files")]
#[command(args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API under /{customer}/v1 and the console at /.
    Serve(ServeArgs),
    /// Manage customers (tenants).
    Customer {
        #[command(subcommand)]
        command: CustomerCommand,
    },
    /// Load access logs or security events from NDJSON files into a customer's statistics (with the server
    /// stopped: the data dir is used by one process at a time). With --database-url, the customer is looked up
    /// there and the records go to this data dir's statistics engine (one replica's).
    Ingest {
        /// `accesslogs` or `securityevents`.
        #[arg(long)]
        kind: String,
        /// Customer name.
        #[arg(long)]
        customer: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
        /// Statistics in ClickHouse: clickhouse://[USER[:PASS]@]HOST:PORT/DATABASE (as for serve).
        #[arg(long, env = "EDGE_STATS_URL")]
        stats_url: Option<String>,
        /// NDJSON files, one record per line.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Host patterns: which customer's property claims one, and releasing one from it (to move a host to
    /// another customer).
    Host {
        #[command(subcommand)]
        command: HostCommand,
    },
    /// Manage identity sources besides `local`.
    Idp {
        #[command(subcommand)]
        command: IdpCommand,
    },
}

#[derive(Subcommand)]
enum IdpCommand {
    /// Register a remote identity source for a customer; its users hold only a role association.
    Add {
        /// Customer name.
        customer: String,
        /// Identity source id: lowercase letters, digits, '-' and '_'.
        id: String,
        /// Configuration, a JSON object.
        #[arg(long, default_value = "{\"type\": \"remote\"}")]
        config: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[derive(Subcommand)]
enum HostCommand {
    /// Print the customer and property that claim a host pattern.
    Show {
        /// A host pattern: `www.example.com` or `*.example.com`.
        pattern: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Remove a host pattern from the property that claims it (a new configuration version by `system`,
    /// recorded in that customer's audit log), so that another customer can claim it.
    Release {
        /// A host pattern: `www.example.com` or `*.example.com`.
        pattern: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

/// Where the state is kept, when not in the data dir.
#[derive(Args, Clone)]
struct DatabaseArgs {
    /// PostgreSQL instead of SQLite in the data dir, shared by every replica of the server:
    /// postgres://USER[:PASS]@HOST:PORT/DB (libpq's URL; e.g. ?sslmode=require, ?options=-csearch_path%3Dedge).
    #[arg(long, env = "EDGE_DATABASE_URL")]
    database_url: Option<String>,
}

impl DatabaseArgs {
    fn location(&self, data_dir: &std::path::Path) -> Location {
        let mut settings = Settings::new(data_dir, "");
        settings.database_url = self.database_url.clone();
        settings.location()
    }
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "EDGE_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Where state is kept: edge.db and its WAL files (unless --database-url), the statistics engine, and
    /// mail written without SMTP. One process at a time.
    #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,
    #[command(flatten)]
    database: DatabaseArgs,
    /// The built console (trunk's dist folder).
    #[arg(long, env = "EDGE_STATIC_DIR", default_value = "./dist")]
    static_dir: PathBuf,
    /// In an empty store, create customer `demo` with users admin, operator and viewer (their password is
    /// $EDGE_DEMO_PASSWORD, or a random one printed once), lists, properties and traffic; a replica joining a
    /// database another one seeded gets the demo traffic in its own statistics.
    #[arg(long)]
    demo: bool,
    /// Statistics in ClickHouse instead of the embedded engine: clickhouse://[USER[:PASS]@]HOST:PORT/DATABASE
    /// (PORT: ClickHouse's HTTP interface). The database and its tables are created when missing.
    #[arg(long, env = "EDGE_STATS_URL")]
    stats_url: Option<String>,
    /// Days of demo traffic to create with --demo.
    #[arg(long, default_value_t = 35)]
    demo_days: i64,
    /// Largest request body accepted, in bytes.
    #[arg(long, env = "EDGE_MAX_BODY_BYTES", default_value_t = 10 * 1024 * 1024)]
    max_body_bytes: usize,
    /// Requests running longer are stopped (408).
    #[arg(long, env = "EDGE_REQUEST_TIMEOUT_SECS", default_value_t = 60)]
    request_timeout_secs: u64,
    /// The console's address as users reach it, for links in e-mail [default: http://LISTEN].
    #[arg(long, env = "EDGE_PUBLIC_URL")]
    public_url: Option<String>,
    /// SMTP server for password-reset mail, e.g. smtp://mail.example:25 or smtps://user:pass@mail.example;
    /// without it, mail is written to DATA_DIR/outbox/.
    #[arg(long, env = "EDGE_SMTP_URL")]
    smtp_url: Option<String>,
    /// Sender of outgoing mail.
    #[arg(long, env = "EDGE_MAIL_FROM", default_value = "Edge Console <no-reply@localhost>")]
    mail_from: String,
    /// Reverse proxies in front of the server, as CIDR ranges or addresses separated by commas (e.g.
    /// 10.0.0.0/8,::1): only from them is X-Forwarded-For believed about the client's address.
    #[arg(long, env = "EDGE_TRUSTED_PROXIES", default_value = "")]
    trusted_proxies: edge_server::net::TrustedProxies,
    /// The first wait of a login after repeated failures, in milliseconds; it doubles with each further failure
    /// (up to 32 times this).
    #[arg(long, env = "EDGE_LOGIN_SLOWDOWN_MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    login_slowdown_ms: u64,
    /// Days the audit log keeps its records.
    #[arg(long, env = "EDGE_AUDIT_RETENTION_DAYS", default_value_t = 400, value_parser = clap::value_parser!(i64).range(1..=36500))]
    audit_retention_days: i64,
    /// Days finished tasks (and the purge transactions they track) are kept.
    #[arg(long, env = "EDGE_TASK_RETENTION_DAYS", default_value_t = 30, value_parser = clap::value_parser!(i64).range(1..=36500))]
    task_retention_days: i64,
    /// /readyz fails while the data dir's file system has less free space than this (MiB).
    #[arg(long, env = "EDGE_MIN_FREE_DISK_MB", default_value_t = 64, value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    min_free_disk_mb: u64,
    /// On SIGTERM, seconds to keep serving (not ready, closing every connection after its answer) before
    /// stopping, so that a load balancer moves traffic away first. SIGINT stops without draining.
    #[arg(long, env = "EDGE_DRAIN_SECS", default_value_t = 3, value_parser = clap::value_parser!(u64).range(0..=600))]
    drain_secs: u64,
}

#[derive(Subcommand)]
enum CustomerCommand {
    /// Create a customer with one administrator. The password comes from $EDGE_ADMIN_PASSWORD, or is asked for.
    Add {
        /// Customer name: lowercase letters, digits and '-'.
        name: String,
        /// Username of the administrator.
        #[arg(long)]
        admin: String,
        #[arg(long, env = "EDGE_DATA_DIR", default_value = "./data")]
        data_dir: PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    no_transparent_huge_pages();
    private_files();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn,tower_http=warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match Cli::parse().command {
        Command::Serve(args) => serve(args).await,
        Command::Customer { command: CustomerCommand::Add { name, admin, data_dir, database } } => {
            add_customer(name, admin, database.location(&data_dir)).await
        }
        Command::Ingest { kind, customer, data_dir, database, stats_url, files } => {
            ingest(kind, customer, data_dir, database, stats_url, files).await
        }
        Command::Host { command: HostCommand::Show { pattern, data_dir, database } } => {
            let store = open_store(&database.location(&data_dir)).await?;
            let pattern = pattern.trim().to_ascii_lowercase();
            match edge_server::store::Properties::host_claim(&store, &pattern).await? {
                Some((customer, property)) => {
                    println!("{pattern} is claimed by customer `{}`, property `{}`", customer.name, property.name)
                }
                None => println!("{pattern} is claimed by no property"),
            }
            Ok(())
        }
        Command::Host { command: HostCommand::Release { pattern, data_dir, database } } => {
            let store = open_store(&database.location(&data_dir)).await?;
            let fleet = edge_server::fleet::SimulatedFleet::standard();
            let (customer, property, version) =
                admin::release_host(&store, &fleet, SystemClock.now_ms(), &pattern).await?;
            println!(
                "Released {} from customer `{}`, property `{property}` (configuration version {version})",
                pattern.trim().to_ascii_lowercase(),
                customer.name
            );
            Ok(())
        }
        Command::Idp { command: IdpCommand::Add { customer, id, config, data_dir, database } } => {
            let store = open_store(&database.location(&data_dir)).await?;
            admin::register_identity_source(&store, SystemClock.now_ms(), &customer, &id, &config).await?;
            println!("Registered identity source `{id}` for customer `{customer}`");
            Ok(())
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut settings = Settings::new(&args.data_dir, &args.static_dir);
    settings.database_url = args.database.database_url.clone();
    settings.max_body_bytes = args.max_body_bytes;
    settings.request_timeout = Duration::from_secs(args.request_timeout_secs);
    settings.public_url =
        args.public_url.clone().unwrap_or_else(|| format!("http://{}", args.listen)).trim_end_matches('/').to_string();
    settings.smtp_url = args.smtp_url.clone();
    settings.mail_from = args.mail_from.clone();
    settings.trusted_proxies = args.trusted_proxies.clone();
    settings.login_slowdown = Duration::from_millis(args.login_slowdown_ms);
    settings.audit_retention_days = args.audit_retention_days;
    settings.task_retention_days = args.task_retention_days;
    settings.stats_url = args.stats_url.clone();
    settings.min_free_disk_bytes = args.min_free_disk_mb << 20;
    settings.drain = Duration::from_secs(args.drain_secs);
    if !args.static_dir.join("index.html").is_file() {
        tracing::warn!(dir = %args.static_dir.display(), "no index.html in the static dir: build the console with `cargo xtask serve`");
    }
    // The statistics engine in the data dir is one process's, whichever store holds the state.
    let _lock = lock_data_dir(&args.data_dir)?;
    let location = settings.location();
    let state = AppState::open(settings).await?;
    let demo_login = if args.demo { seed_demo(&state, args.demo_days).await? } else { None };
    let shutdown = edge_server::shutdown_signals()?;
    let server = Server::start(state, args.listen).await?;
    tracing::info!(addr = %server.addr, data_dir = %args.data_dir.display(), store = %location, "serving");
    println!("Edge Console: http://{}/", server.addr);
    match demo_login {
        Some(password) => println!(
            "Log in with customer `{}`, user `admin` (or `operator`, `viewer`), password `{password}`",
            demo::CUSTOMER
        ),
        None if args.demo => println!(
            "The {} already holds data, so no demo data was created; log in with the users it has \
             (demo users keep the password they were created with).",
            if args.database.database_url.is_some() { "database" } else { "data dir" }
        ),
        None => {}
    }
    server.run_until(shutdown).await
}

/// Turns transparent huge pages off for this process. mimalloc asks for them, and on a kernel that compacts
/// memory for such requests (`defrag=madvise`) the page faults of a growing statistics engine took half of
/// ingestion's time (`perf record` under `edge-bench ingest`).
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes nothing but this process's flag.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Whatever this process creates is its user's alone (umask 077): the data dir holds password hashes,
/// two-factor secrets and mailed reset links, and the statistics engine writes its own files there.
fn private_files() {
    #[cfg(unix)]
    // SAFETY: umask only sets this process's file mode creation mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// Seeds the demo data when the data dir is empty; returns the password to print.
async fn seed_demo(state: &AppState, days: i64) -> anyhow::Result<Option<String>> {
    let password = match std::env::var("EDGE_DEMO_PASSWORD") {
        Ok(p) if !p.is_empty() => p,
        _ => rand::thread_rng().sample_iter(&Alphanumeric).take(16).map(char::from).collect(),
    };
    let volume = demo::Volume { days: days.clamp(1, 400), ..demo::Volume::FULL };
    Ok(demo::seed_if_empty_with(state, &password, volume).await?.then_some(password))
}

/// Takes the data dir for this process alone (released when the process ends).
fn lock_data_dir(data_dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use anyhow::Context;
    std::fs::create_dir_all(data_dir).with_context(|| format!("creating the data dir {}", data_dir.display()))?;
    let path = data_dir.join(".lock");
    let lock =
        std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).with_context(|| {
            format!("the data dir {} must be writable: opening {}", data_dir.display(), path.display())
        })?;
    lock.try_lock().map_err(|_| anyhow::anyhow!("another edge-server process is using {}", data_dir.display()))?;
    Ok(lock)
}

/// Counts the bytes read through it (the progress of a compressed file is its compressed bytes).
struct Counted<R> {
    inner: R,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// Lines of NDJSON files (`.gz` and `.zst` decompressed) in chunks: (file index, first line number, text).
fn read_chunks(
    files: &[PathBuf],
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
    out: std::sync::mpsc::SyncSender<(usize, u64, String)>,
) -> anyhow::Result<()> {
    use std::io::BufRead;
    const LINES: u64 = 20_000;
    for (f, path) in files.iter().enumerate() {
        let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let counted = std::io::BufReader::new(Counted { inner: file, count: read.clone() });
        let reader: Box<dyn std::io::Read> = match edge_server::stats::ingest::Encoding::of_path(path) {
            Some(e) => e.reader(counted).with_context(|| format!("reading {}", path.display()))?,
            None => Box::new(counted),
        };
        let (mut chunk, mut first, mut lines) = (String::new(), 1u64, 0u64);
        for line in std::io::BufReader::with_capacity(1 << 20, reader).lines() {
            chunk.push_str(&line.with_context(|| format!("reading {}", path.display()))?);
            chunk.push('\n');
            lines += 1;
            if lines == LINES {
                if out.send((f, first, std::mem::take(&mut chunk))).is_err() {
                    return Ok(());
                }
                first += lines;
                lines = 0;
            }
        }
        if lines > 0 && out.send((f, first, chunk)).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// Loads NDJSON files (plain, `.gz` or `.zst`) with the server stopped: one thread reads, decompresses and
/// parses while this one stores; on a terminal a progress bar shows bytes read and records per second.
async fn ingest(
    kind: String,
    customer: String,
    data_dir: PathBuf,
    database: DatabaseArgs,
    stats_url: Option<String>,
    files: Vec<PathBuf>,
) -> anyhow::Result<()> {
    use edge_server::stats::ingest::{parse_access_keeping, parse_security_keeping};
    use std::sync::{Arc, atomic::AtomicU64, atomic::Ordering};
    anyhow::ensure!(kind == "accesslogs" || kind == "securityevents", "--kind is accesslogs or securityevents");
    let _lock = lock_data_dir(&data_dir)?;
    let mut settings = Settings::new(&data_dir, "");
    settings.database_url = database.database_url;
    settings.stats_url = stats_url;
    let state = AppState::open(settings).await.context("opening the data dir")?;
    let c =
        state.store.customer_by_name(&customer).await?.ok_or_else(|| anyhow::anyhow!("no customer {customer:?}"))?;
    let total: u64 = files.iter().map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0)).sum();
    let bar = indicatif::ProgressBar::new(total).with_style(
        indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let read = Arc::new(AtomicU64::new(0));
    enum Parsed {
        Access(edge_server::stats::AccessBatch),
        Security(edge_server::stats::SecurityBatch),
    }
    // Reading and parsing on their own threads, storing here: both cores busy.
    let (chunks_tx, chunks) = std::sync::mpsc::sync_channel(2);
    let reader = {
        let (files, read) = (files.clone(), read.clone());
        std::thread::spawn(move || read_chunks(&files, read, chunks_tx))
    };
    let (batches_tx, batches) = std::sync::mpsc::sync_channel(2);
    let access = kind == "accesslogs";
    let parser = std::thread::spawn(move || {
        for (f, first, text) in chunks {
            let parsed = if access {
                let (b, bad) = parse_access_keeping(&text, usize::MAX);
                (Parsed::Access(b), bad)
            } else {
                let (b, bad) = parse_security_keeping(&text, usize::MAX);
                (Parsed::Security(b), bad)
            };
            if batches_tx.send((f, first, parsed)).is_err() {
                break;
            }
        }
    });
    let started = std::time::Instant::now();
    let (mut accepted, mut rejected) = (0u64, 0u64);
    for (f, first, (batch, bad)) in batches {
        let n = match &batch {
            Parsed::Access(b) => {
                state.stats.ingest_access(c.id, b)?;
                b.len()
            }
            Parsed::Security(b) => {
                state.stats.ingest_security(c.id, b)?;
                b.len()
            }
        };
        for b in &bad.lines {
            bar.suspend(|| eprintln!("{}:{}: {}", files[f].display(), first + b.line - 1, b.message));
        }
        accepted += n as u64;
        rejected += bad.count();
        bar.set_position(read.load(Ordering::Relaxed));
        let rate = accepted as f64 / started.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!("{accepted} records, {rate:.0} records/s"));
    }
    parser.join().map_err(|_| anyhow::anyhow!("the parsing thread failed"))?;
    reader.join().map_err(|_| anyhow::anyhow!("the reading thread failed"))??;
    bar.finish_and_clear();
    state.stats.checkpoint()?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "Ingested {accepted} records into {customer}; {rejected} lines rejected ({:.0} records/s)",
        accepted as f64 / seconds.max(1e-3)
    );
    Ok(())
}

/// The store alone, for the commands that need no statistics engine.
async fn open_store(location: &Location) -> anyhow::Result<edge_server::store::SqlStore> {
    edge_server::store::open(location, Duration::ZERO).await.context("opening the store")
}

async fn add_customer(name: String, admin: String, location: Location) -> anyhow::Result<()> {
    let password = match std::env::var("EDGE_ADMIN_PASSWORD") {
        Ok(p) if !p.is_empty() => p,
        _ if std::io::stdin().is_terminal() => {
            let first = rpassword::prompt_password(format!("Password for {admin}: "))?;
            let again = rpassword::prompt_password("Again: ")?;
            anyhow::ensure!(first == again, "the two passwords differ");
            first
        }
        _ => anyhow::bail!("set EDGE_ADMIN_PASSWORD, or run on a terminal to be asked for the password"),
    };
    let store = open_store(&location).await?;
    let customer = admin::create_customer(&store, SystemClock.now_ms(), &name, &admin, &password).await?;
    println!("Created customer `{}` with administrator `{admin}` in {location}", customer.name);
    Ok(())
}
