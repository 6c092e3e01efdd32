//! The whole HTTP application — the API, its OpenAPI document, the health checks and the console's files,
//! with the layers around them — and the server that runs it until told to stop.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context;
use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, Request},
    http::{HeaderValue, header},
    middleware,
    response::Response,
    routing::{get, post},
};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};
use tower_http::{
    catch_panic::CatchPanicLayer, compression::CompressionLayer, set_header::SetResponseHeaderLayer,
    timeout::TimeoutLayer, trace::TraceLayer,
};

use crate::{
    http::{crash_reports, metrics, routes, web},
    state::AppState,
    stats::StatsEngine,
    upkeep::housekeeping,
};

/// The whole HTTP application: API, OpenAPI document, health check and the console's files.
pub fn app(state: AppState) -> Router {
    let (api, _) = routes::api().split_for_parts();
    let openapi = Arc::new(routes::openapi_document());
    // API answers (and the OpenAPI document) are compressed as the client accepts — brotli, zstd or gzip, at
    // fast levels (brotli 4): a statistics answer of a few hundred kilobytes of JSON shrinks about tenfold.
    // The console's files are not: they have brotli and gzip copies made at build time (see
    // `web::static_or_not_found`), and compressing them again would only cost time.
    let api = api_middleware(api, state.settings.max_body_bytes).layer(CompressionLayer::new());
    let timeout = state.settings.request_timeout;
    let csp = HeaderValue::from_str(&web::content_security_policy(&state.settings.static_dir))
        .unwrap_or_else(|_| HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'"));
    Router::new()
        .route("/healthz", get(|| async { Json(serde_json::json!({"status": "ok"})) }))
        .route("/readyz", get(web::readiness))
        .route("/metrics", get(metrics::metrics))
        .merge(
            Router::new()
                .route("/openapi.json", get(move || async move { Json(openapi.as_ref().clone()) }))
                .layer(CompressionLayer::new()),
        )
        .merge(
            Router::new()
                .route(crash_reports::PATH, post(crash_reports::receive))
                .layer(axum::Extension(Arc::new(crash_reports::Limiter::default())))
                .layer(middleware::from_fn(web::json_errors))
                .layer(DefaultBodyLimit::max(crash_reports::MAX_BODY_BYTES)),
        )
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
    alerting: JoinHandle<()>,
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
        let alerting = tokio::spawn(crate::alerting::run(state.clone()));
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
        Ok(Server { addr, stats, draining, drain, shutdown: Some(tx), join, housekeeping, alerting })
    }

    /// Stops accepting, lets requests in flight finish, writes a statistics checkpoint, and returns.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.housekeeping.abort();
        self.alerting.abort();
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
