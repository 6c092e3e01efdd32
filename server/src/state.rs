//! What the server holds while it runs: the settings fixed at start, and the services every handler reaches
//! ([`AppState`]), opened from them in one place.

use std::{path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context;

use crate::{
    clock::{Clock, SystemClock},
    domain::{
        fleet::{Fleet, SimulatedFleet},
        hashing::{self, PasswordWork},
        mail::Mailer,
        net::TrustedProxies,
        throttle,
    },
    private,
    stats::{
        self, StatsEngine,
        clickhouse::{ClickHouseEngine, StatsUrl as ClickHouseUrl},
        memory::MemoryEngine,
    },
    store::{self, Location, Store},
};

/// Settings fixed at start.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The embedded statistics engine, mail written without SMTP, and the SQLite database unless
    /// `database_url` is set.
    pub data_dir: PathBuf,
    /// PostgreSQL instead of SQLite: `postgres://USER[:PASS]@HOST:PORT/DB`, shared by replicas.
    pub database_url: Option<String>,
    /// How long to wait at start for a PostgreSQL database that does not answer yet.
    pub database_wait: Duration,
    pub static_dir: PathBuf,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// A request that takes longer is stopped and answered 408.
    pub request_timeout: Duration,
    /// The console's address as users reach it, for links in e-mail (password resets).
    pub public_url: String,
    /// SMTP server for outgoing mail; without one, mail is written to `<data-dir>/outbox/`.
    pub smtp_url: Option<String>,
    pub mail_from: String,
    /// The first slow-down of a login after repeated failures; it doubles with each further failure.
    pub login_slowdown: Duration,
    /// Reverse proxies whose `X-Forwarded-For` is believed about the client's address.
    pub trusted_proxies: TrustedProxies,
    /// Password hashes computed or verified at once, and requests that may wait for one; 0 sizes them from the
    /// machine (see [`hashing::PasswordWork`]).
    pub password_workers: usize,
    pub password_queue: usize,
    /// What hashing a new password costs: argon2id's defaults, but in the server's own tests.
    pub hash_cost: hashing::HashCost,
    /// Audit records older than this many days are deleted.
    pub audit_retention_days: i64,
    /// Tasks (and the purge transactions they track) that ended this many days ago are deleted.
    pub task_retention_days: i64,
    /// Statistics in ClickHouse (`clickhouse://[USER[:PASS]@]HOST:PORT[,HOST:PORT…]/DATABASE`, several
    /// servers being shards) instead of the embedded engine in the data dir.
    pub stats_url: Option<String>,
    /// What one customer's statistics may hold in the embedded engine.
    pub stats_limits: stats::Limits,
    /// `GET /metrics` is served to requests bearing this token (and not at all without one).
    pub metrics_token: Option<String>,
    /// `/readyz` fails while the data dir's file system has less free space than this.
    pub min_free_disk_bytes: u64,
    /// On SIGTERM, how long the server keeps serving (not ready, every answer closing its connection) before
    /// it stops accepting, so that load balancers move traffic elsewhere first.
    pub drain: Duration,
    /// How often alert rules are evaluated (a round a minute; tests shorten it).
    pub alert_interval: Duration,
    /// Webhooks may reach addresses of the server's own network (loopback, private ranges).
    pub alert_webhooks_to_private: bool,
}

impl Settings {
    /// Where the state is kept, from the settings: the one place the store is chosen.
    pub fn location(&self) -> Location {
        match &self.database_url {
            Some(url) => Location::Postgres(url.clone()),
            None => Location::Sqlite(self.data_dir.clone()),
        }
    }

    pub fn new(data_dir: impl Into<PathBuf>, static_dir: impl Into<PathBuf>) -> Self {
        Settings {
            data_dir: data_dir.into(),
            database_url: None,
            database_wait: Duration::from_secs(30),
            static_dir: static_dir.into(),
            max_body_bytes: 10 * 1024 * 1024,
            request_timeout: Duration::from_secs(60),
            public_url: "http://127.0.0.1:8080".into(),
            smtp_url: None,
            mail_from: "Edge Console <no-reply@localhost>".into(),
            login_slowdown: Duration::from_millis(250),
            trusted_proxies: TrustedProxies::default(),
            password_workers: 0,
            hash_cost: hashing::HashCost::Standard,
            password_queue: 0,
            audit_retention_days: 400,
            task_retention_days: 30,
            stats_url: None,
            stats_limits: stats::Limits::DEFAULT,
            metrics_token: None,
            min_free_disk_bytes: 64 << 20,
            drain: Duration::ZERO,
            alert_interval: Duration::from_secs(60),
            alert_webhooks_to_private: false,
        }
    }
}

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub settings: Arc<Settings>,
    /// Password hashing and verification, bounded.
    pub passwords: Arc<PasswordWork>,
    pub mailer: Arc<Mailer>,
    /// The edge fleet that acknowledges purges and deployments.
    pub fleet: Arc<dyn Fleet>,
    /// The statistics engine.
    pub stats: Arc<dyn StatsEngine>,
    /// Set when the server is stopping: `/readyz` fails and answers close their connections.
    pub draining: Arc<std::sync::atomic::AtomicBool>,
    /// Login attempts of this process waiting for others of their keys to be settled.
    pub login_waits: Arc<throttle::Waits>,
    /// Idempotency keys of ingestion requests this process is handling now (customer, endpoint, key).
    pub ingest_keys: Arc<std::sync::Mutex<std::collections::HashSet<(store::CustomerId, stats::Endpoint, String)>>>,
}

impl AppState {
    /// Opens the store (PostgreSQL at `settings.database_url`, or SQLite in `settings.data_dir`) and the
    /// statistics engine in the data dir, with the system clock.
    pub async fn open(settings: Settings) -> anyhow::Result<Self> {
        Self::open_with_clock(settings, Arc::new(SystemClock)).await
    }

    pub async fn open_with_clock(settings: Settings, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        // Made private before anything is written into them (see [`private`]).
        for dir in [settings.data_dir.clone(), settings.data_dir.join("stats")] {
            private::dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let store = store::open(&settings.location(), settings.database_wait).await?;
        let stats: Arc<dyn StatsEngine> = match &settings.stats_url {
            Some(url) => {
                let (url, clock) = (ClickHouseUrl::parse(url)?, clock.clone());
                let days = settings.stats_limits.daily_retention_days;
                let spool = settings.data_dir.join("stats").join("spool");
                let engine = tokio::task::spawn_blocking(move || {
                    ClickHouseEngine::open(&url, clock)?.with_daily_retention(days).with_spool(&spool)
                })
                .await??;
                Arc::new(engine)
            }
            None => {
                // A spool left by a run on ClickHouse holds records acknowledged and not yet written there.
                let spool = settings.data_dir.join("stats").join("spool");
                let left = std::fs::read_dir(&spool).map_or(0, |d| {
                    d.filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "spool"))).count()
                });
                if left > 0 {
                    tracing::warn!(
                        dir = %spool.display(),
                        segments = left,
                        "statistics: records acknowledged for ClickHouse are not yet written there; start with the same \
                         --stats-url to write them"
                    );
                }
                let (dir, clock, limits) = (settings.data_dir.clone(), clock.clone(), settings.stats_limits);
                Arc::new(tokio::task::spawn_blocking(move || MemoryEngine::open_with(&dir, clock, limits)).await??)
            }
        };
        let mailer = Mailer::new(settings.smtp_url.as_deref(), &settings.mail_from, settings.data_dir.join("outbox"))?;
        Ok(AppState {
            store: Arc::new(store),
            clock,
            passwords: Arc::new(PasswordWork::new(
                settings.password_workers,
                settings.password_queue,
                settings.hash_cost,
            )),
            mailer: Arc::new(mailer),
            fleet: Arc::new(SimulatedFleet::standard()),
            stats,
            login_waits: Arc::default(),
            ingest_keys: Arc::default(),
            settings: Arc::new(settings),
            draining: Arc::default(),
        })
    }
}
