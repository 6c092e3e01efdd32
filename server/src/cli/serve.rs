//! `edge-server serve`: the API and the console on one address, optionally with the demo account.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use clap::Args;
use edge_server::{AppState, Server, Settings, demo_account};
use rand::{Rng, distributions::Alphanumeric};

use super::{DatabaseArgs, StatsLimitArgs, lock_data_dir};

#[derive(Args)]
pub struct ServeArgs {
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
    /// Statistics in ClickHouse instead of the embedded engine:
    /// clickhouse://[USER[:PASS]@]HOST:PORT[,HOST:PORT...]/DATABASE (PORT: ClickHouse's HTTP interface). Several
    /// servers are shards: each customer's statistics on one of them; give every replica the same servers in the
    /// same order, always. The database and its tables are created when missing.
    #[arg(long, env = "EDGE_STATS_URL")]
    stats_url: Option<String>,
    #[command(flatten)]
    limits: StatsLimitArgs,
    /// Serve GET /metrics (what each customer's statistics hold, in Prometheus's text format) to requests
    /// with `Authorization: Bearer TOKEN`; without it, /metrics is not served.
    #[arg(long, env = "EDGE_METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
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
    trusted_proxies: edge_server::domain::net::TrustedProxies,
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
    /// Seconds between rounds of alert evaluation (one replica evaluates each round).
    #[arg(long, env = "EDGE_ALERT_INTERVAL_SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    alert_interval_secs: u64,
    /// Let alert webhooks reach addresses of the server's own network (loopback, private and link-local
    /// ranges), which they may not by default.
    #[arg(long, env = "EDGE_ALERT_WEBHOOKS_TO_PRIVATE")]
    alert_webhooks_to_private: bool,
}

pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
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
    settings.stats_limits = args.limits.limits();
    settings.metrics_token = args.metrics_token.clone().filter(|t| !t.is_empty());
    settings.min_free_disk_bytes = args.min_free_disk_mb << 20;
    settings.drain = Duration::from_secs(args.drain_secs);
    settings.alert_interval = Duration::from_secs(args.alert_interval_secs);
    settings.alert_webhooks_to_private = args.alert_webhooks_to_private;
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
            demo_account::CUSTOMER
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
pub fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes nothing but this process's flag.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Whatever this process creates is its user's alone (umask 077): the data dir holds password hashes,
/// two-factor secrets and mailed reset links, and the statistics engine writes its own files there.
pub fn private_files() {
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
    let volume = demo_account::Volume { days: days.clamp(1, 400), ..demo_account::Volume::FULL };
    Ok(demo_account::seed_if_empty_with(state, &password, volume).await?.then_some(password))
}
