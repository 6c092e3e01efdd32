//! Edge Console's backend: the Edge Delivery Management and Statistics API under `/{customer}/v1`, and the
//! console's static files at `/`.

pub mod access;
pub mod admin;
pub mod auth;
pub mod clock;
pub mod config;
pub mod demo;
pub mod error;
pub mod extract;
pub mod fleet;
pub mod hashing;
pub mod mail;
pub mod net;
pub mod otp;
pub mod private;
pub mod routes;
pub mod stats;
pub mod store;
pub mod tasks;
pub mod throttle;
pub mod web;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context;
use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, Request},
    http::{HeaderValue, header},
    middleware,
    response::Response,
    routing::get,
};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};
use tower_http::{
    catch_panic::CatchPanicLayer, set_header::SetResponseHeaderLayer, timeout::TimeoutLayer, trace::TraceLayer,
};

use crate::{
    clock::{Clock, SystemClock},
    fleet::{Fleet, SimulatedFleet},
    hashing::PasswordWork,
    mail::Mailer,
    net::TrustedProxies,
    stats::{
        StatsEngine,
        clickhouse::{ClickHouseEngine, StatsUrl as ClickHouseUrl},
        memory::MemoryEngine,
    },
    store::{Location, Store},
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
    /// Audit records older than this many days are deleted.
    pub audit_retention_days: i64,
    /// Tasks (and the purge transactions they track) that ended this many days ago are deleted.
    pub task_retention_days: i64,
    /// Statistics in ClickHouse (`clickhouse://[USER[:PASS]@]HOST:PORT/DATABASE`) instead of the embedded
    /// engine in the data dir.
    pub stats_url: Option<String>,
    /// `/readyz` fails while the data dir's file system has less free space than this.
    pub min_free_disk_bytes: u64,
    /// On SIGTERM, how long the server keeps serving (not ready, every answer closing its connection) before
    /// it stops accepting, so that load balancers move traffic elsewhere first.
    pub drain: Duration,
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
            password_queue: 0,
            audit_retention_days: 400,
            task_retention_days: 30,
            stats_url: None,
            min_free_disk_bytes: 64 << 20,
            drain: Duration::ZERO,
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
                Arc::new(tokio::task::spawn_blocking(move || ClickHouseEngine::open(&url, clock)).await??)
            }
            None => {
                let (dir, clock) = (settings.data_dir.clone(), clock.clone());
                Arc::new(tokio::task::spawn_blocking(move || MemoryEngine::open(&dir, clock)).await??)
            }
        };
        let mailer = Mailer::new(settings.smtp_url.as_deref(), &settings.mail_from, settings.data_dir.join("outbox"))?;
        Ok(AppState {
            store: Arc::new(store),
            clock,
            passwords: Arc::new(PasswordWork::new(settings.password_workers, settings.password_queue)),
            mailer: Arc::new(mailer),
            fleet: Arc::new(SimulatedFleet::standard()),
            stats,
            login_waits: Arc::default(),
            settings: Arc::new(settings),
            draining: Arc::default(),
        })
    }
}

/// The whole HTTP application: API, OpenAPI document, health check and the console's files.
pub fn app(state: AppState) -> Router {
    let (api, _) = routes::api().split_for_parts();
    let openapi = Arc::new(routes::openapi_document());
    let api = api_middleware(api, state.settings.max_body_bytes);
    let timeout = state.settings.request_timeout;
    let csp = HeaderValue::from_str(&web::content_security_policy(&state.settings.static_dir))
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'"));
    Router::new()
        .route("/healthz", get(|| async { Json(serde_json::json!({"status": "ok"})) }))
        .route("/readyz", get(web::readiness))
        .route("/openapi.json", get(move || async move { Json(openapi.as_ref().clone()) }))
        .merge(api)
        .fallback(web::static_or_not_found)
        .layer(TimeoutLayer::with_status_code(axum::http::StatusCode::REQUEST_TIMEOUT, timeout))
        .layer(middleware::from_fn(web::bounded_request))
        .layer(SetResponseHeaderLayer::if_not_present(header::CONTENT_SECURITY_POLICY, csp))
        .layer(middleware::from_fn(web::security_headers))
        .layer(middleware::from_fn_with_state(state.draining.clone(), web::close_when_draining))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request| {
                    tracing::info_span!("request", method = %req.method(), path = %web::redact_path(req.uri().path()))
                })
                .on_request(())
                .on_response(|res: &Response, latency: Duration, _span: &tracing::Span| {
                    tracing::info!(status = res.status().as_u16(), latency_ms = latency.as_secs_f64() * 1000.0);
                })
                .on_failure(()),
        )
        .with_state(state)
}

/// What wraps every API route: a body limit, no caching, and an error body in JSON for every failure — also
/// for a handler that panicked, which answers 500 (503 on purge paths) instead of dropping the connection.
pub fn api_middleware<S: Clone + Send + Sync + 'static>(api: Router<S>, max_body_bytes: usize) -> Router<S> {
    api.layer(CatchPanicLayer::new())
        .layer(middleware::from_fn(web::json_errors))
        .layer(SetResponseHeaderLayer::if_not_present(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .layer(DefaultBodyLimit::max(max_body_bytes))
}

/// A running server: its address, and a way to stop it.
pub struct Server {
    pub addr: SocketAddr,
    stats: Arc<dyn StatsEngine>,
    draining: Arc<std::sync::atomic::AtomicBool>,
    drain: Duration,
    shutdown: Option<oneshot::Sender<()>>,
    join: JoinHandle<std::io::Result<()>>,
    housekeeping: JoinHandle<()>,
}

impl Server {
    /// Binds `listen` and serves `state` until [`Server::stop`] is called.
    pub async fn start(state: AppState, listen: SocketAddr) -> anyhow::Result<Server> {
        Self::start_wrapped(state, listen, |app| app).await
    }

    /// [`Server::start`] with `wrap` applied to the whole application: for tests that watch or slow down
    /// requests (the end-to-end tests' slow-server layer). The binary never wraps.
    pub async fn start_wrapped(
        state: AppState,
        listen: SocketAddr,
        wrap: impl FnOnce(Router) -> Router,
    ) -> anyhow::Result<Server> {
        let listener = TcpListener::bind(listen).await.with_context(|| format!("binding {listen}"))?;
        let addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let housekeeping = tokio::spawn(housekeeping(state.clone()));
        let stats = state.stats.clone();
        let (draining, drain) = (state.draining.clone(), state.settings.drain);
        let app = wrap(app(state)).into_make_service_with_connect_info::<SocketAddr>();
        let join = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await
        });
        Ok(Server { addr, stats, draining, drain, shutdown: Some(tx), join, housekeeping })
    }

    /// Stops accepting, lets requests in flight finish, writes a statistics checkpoint, and returns.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.housekeeping.abort();
        self.join.await??;
        let stats = self.stats.clone();
        tokio::task::spawn_blocking(move || stats.checkpoint()).await??;
        Ok(())
    }

    /// Serves until `shutdown` completes (see [`shutdown_signals`]), then shuts down gracefully. When it says to
    /// drain (SIGTERM), the server first goes on serving for the drain time with `/readyz` failing and every
    /// answer closing its connection, so that a load balancer stops sending it requests and no client reuses a
    /// connection that is about to close; then it stops accepting and finishes what is in flight.
    pub async fn run_until(self, shutdown: impl std::future::Future<Output = Stop>) -> anyhow::Result<()> {
        let stop = shutdown.await;
        if stop == Stop::Drain && !self.drain.is_zero() {
            tracing::info!(drain_secs = self.drain.as_secs_f64(), "draining before shutting down");
            self.draining.store(true, std::sync::atomic::Ordering::Relaxed);
            tokio::time::sleep(self.drain).await;
        }
        tracing::info!("shutting down");
        self.stop().await
    }
}

/// Periodic upkeep, every minute: see [`upkeep`].
async fn housekeeping(state: AppState) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    let mut minutes = 0u64;
    loop {
        tick.tick().await;
        minutes += 1;
        upkeep(&state, minutes % 10 == 1).await;
    }
}

/// One round of upkeep: expired sessions are removed from storage (each recorded as expired), and a statistics
/// checkpoint is written when its log has grown. With `retention` (every ten minutes) also what is past its
/// retention goes: statistics, login attempts past their window, finished tasks with their purge
/// transactions, and audit records. Every replica runs it: each job in the store takes its own lock in the
/// database and deletes only what is still there, so two replicas never do the same work twice.
pub async fn upkeep(state: &AppState, retention: bool) {
    let now = state.clock.now_ms();
    let stats = state.stats.clone();
    let result = tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        if retention {
            stats.enforce_retention(now)?;
        }
        if stats.log_bytes() > stats::memory::CHECKPOINT_WAL_BYTES || (retention && stats.log_bytes() > 0) {
            stats.checkpoint()?;
        }
        Ok(())
    })
    .await;
    if let Ok(Err(e)) | Err(e) = result.map_err(anyhow::Error::from) {
        tracing::warn!(error = %e, "statistics upkeep failed");
    }
    match state.store.purge_sessions(now - auth::SESSION_IDLE_MS, now - auth::SESSION_MAX_AGE_MS, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(sessions = n, "purged expired sessions"),
        Err(e) => tracing::warn!(error = %e, "purging expired sessions failed"),
    }
    if retention {
        match state.store.prune_logins(now).await {
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "forgetting old login attempts failed"),
        }
        let before = now.saturating_sub(state.settings.task_retention_days.saturating_mul(DAY_MS));
        match state.store.prune_tasks(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(tasks = n, "pruned finished tasks past their retention"),
            Err(e) => tracing::warn!(error = %e, "pruning tasks failed"),
        }
        let before = now.saturating_sub(state.settings.audit_retention_days.saturating_mul(DAY_MS));
        match state.store.prune_audit(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(records = n, "pruned audit records past their retention"),
            Err(e) => tracing::warn!(error = %e, "pruning audit records failed"),
        }
    }
}

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// How to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM (a service manager, a rolling restart): drain first (see [`Server::run_until`]).
    Drain,
    /// SIGINT (Ctrl-C at a terminal): stop now, still finishing what is in flight.
    Now,
}

/// SIGINT or SIGTERM. The handlers are installed when this is called, not when it is first awaited, so that
/// a signal sent as soon as the server says it is listening is not lost (it would end the process at once).
pub fn shutdown_signals() -> anyhow::Result<impl std::future::Future<Output = Stop>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (mut interrupt, mut terminate) = (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?);
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => Stop::Now,
                _ = terminate.recv() => Stop::Drain,
            }
        })
    }
    #[cfg(not(unix))]
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        Stop::Now
    })
}
