//! Test helpers: a fresh app over a temporary data dir with a manual clock, and requests through the real router.
//! The store is SQLite in the data dir, or — with `EDGE_TEST_STORE=postgres`, as `cargo xtask test` sets for its
//! second run of these suites — a PostgreSQL schema of its own (see [`postgres_url`]).

#![allow(dead_code)]

use std::sync::Arc;

use axum::{
    Router,
    body::Body,
    http::{HeaderMap, Method, Request, StatusCode, header},
};
use base64::Engine;
use edge_server::{AppState, Settings, admin, clock::ManualClock};
use http_body_util::BodyExt;
use serde_json::Value;
use tempfile::TempDir;
use tower::ServiceExt;

pub const PASSWORD: &str = "correct-horse-battery";
/// 2026-01-01T00:00:00Z
pub const T0: i64 = 1_767_225_600_000;

pub struct TestApp {
    pub state: AppState,
    pub clock: ManualClock,
    pub router: Router,
    pub dir: TempDir,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub raw: Vec<u8>,
}

impl TestApp {
    /// An app with customers `acme` (admin `alice`) and `globex` (admin `gina`), all with [`PASSWORD`].
    pub async fn new() -> TestApp {
        Self::with(|_| {}).await
    }

    /// As [`TestApp::new`], with settings changed by `configure` first.
    pub async fn with(configure: impl FnOnce(&mut Settings)) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        let static_dir = dir.path().join("dist");
        std::fs::create_dir_all(&static_dir).expect("static dir");
        std::fs::write(static_dir.join("index.html"), "<!doctype html><title>Edge Console</title>").expect("index");
        std::fs::write(static_dir.join("app-1234.js"), "console.log(1)").expect("js");
        let clock = ManualClock::at(T0);
        let mut settings = Settings::new(dir.path().join("data"), static_dir);
        settings.login_slowdown = std::time::Duration::from_millis(1);
        settings.public_url = "https://console.example".into();
        // The tests' thousands of Basic logins with argon2's cheapest parameters (a test build only: see
        // HashCost); the tests of the password work itself set the standard cost back.
        settings.hash_cost = edge_server::domain::hashing::HashCost::CheapForTests;
        if on_postgres() {
            settings.database_url = Some(fresh_schema(&postgres_url()).await);
        }
        configure(&mut settings);
        let state = AppState::open_with_clock(settings, Arc::new(clock.clone())).await.expect("state");
        admin::add_customer(&state, "acme", "alice", PASSWORD).await.expect("acme");
        admin::add_customer(&state, "globex", "gina", PASSWORD).await.expect("globex");
        let router = edge_server::app(state.clone());
        TestApp { state, clock, router, dir }
    }

    pub async fn send(&self, req: Request<Body>) -> Reply {
        let response = self.router.clone().oneshot(req).await.expect("infallible");
        let status = response.status();
        let headers = response.headers().clone();
        let raw = response.into_body().collect().await.expect("body").to_bytes().to_vec();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Reply { status, headers, body, raw }
    }

    /// Creates a local user at `customer` through the API as that customer's admin; returns its id.
    pub async fn add_user(&self, customer: &str, username: &str, role: &str) -> String {
        let admin = if customer == "acme" { "alice" } else { "gina" };
        let body = serde_json::json!({
            "username": username,
            "password": PASSWORD,
            "full_name": format!("{username} Example"),
            "email": format!("{username}@example.com"),
            "role": {"id": role},
        });
        let reply = self
            .send(req(Method::POST, &format!("/{customer}/v1/users")).basic(admin, PASSWORD).json(&body).done())
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "creating {username}: {}", reply.body);
        reply.body["id"].as_str().expect("user id").to_string()
    }

    /// Creates a property at acme through the API (as alice); returns its configuration document.
    pub async fn add_property(&self, name: &str, hosts: &[&str]) -> Value {
        let body = serde_json::json!({"name": name, "host_patterns": hosts});
        let reply =
            self.send(req(Method::POST, "/acme/v1/properties").basic("alice", PASSWORD).json(&body).done()).await;
        assert_eq!(reply.status, StatusCode::CREATED, "creating {name}: {}", reply.body);
        reply.body
    }

    /// Moves the clock on.
    pub fn advance(&self, ms: i64) {
        self.clock.advance_ms(ms);
    }

    /// The id of an existing user, read through the API.
    pub async fn user_id(&self, customer: &str, username: &str) -> String {
        let c = self.state.store.customer_by_name(customer).await.unwrap().unwrap();
        self.state.store.user_by_username(c.id, username).await.unwrap().unwrap().id
    }

    /// Logs in with Basic credentials and returns the session id.
    pub async fn login(&self, customer: &str, user: &str, password: &str) -> String {
        let reply =
            self.send(req(Method::POST, &format!("/{customer}/v1/sessions")).basic(user, password).done()).await;
        assert_eq!(reply.status, StatusCode::CREATED, "login failed: {:?}", reply.body);
        reply.body["id"].as_str().expect("session id").to_string()
    }
}

impl TestApp {
    /// The app's state opened again over the same store and data dir, as after a restart.
    pub async fn restarted(&self) -> AppState {
        let settings = self.state.settings.as_ref().clone();
        AppState::open_with_clock(settings, Arc::new(self.clock.clone())).await.expect("state")
    }

    /// A pool of connections to the app's database, for tests that reach under the store.
    pub async fn raw_db(&self) -> edge_server::store::db::Db {
        use edge_server::store::db::Db;
        match &self.state.settings.database_url {
            Some(url) => Db::Postgres(sqlx::PgPool::connect(url).await.expect("database")),
            None => {
                let path = self.state.settings.data_dir.join("edge.db");
                Db::Sqlite(sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display())).await.expect("database"))
            }
        }
    }

    /// Whether the app's store is PostgreSQL.
    pub fn on_postgres(&self) -> bool {
        self.state.settings.database_url.is_some()
    }
}

/// Whether the router suites run on PostgreSQL (`EDGE_TEST_STORE=postgres`) rather than SQLite.
pub fn on_postgres() -> bool {
    std::env::var("EDGE_TEST_STORE").is_ok_and(|s| s == "postgres")
}

/// A PostgreSQL database for the tests: `$EDGE_TEST_POSTGRES_URL` (`cargo xtask test` starts one throwaway
/// cluster for the whole run), or a throwaway cluster of this test process, stopped and removed when the
/// process ends.
pub fn postgres_url() -> String {
    static OWN: std::sync::OnceLock<(edge_cluster::Postgres, String)> = std::sync::OnceLock::new();
    if let Ok(url) = std::env::var("EDGE_TEST_POSTGRES_URL") {
        return url;
    }
    OWN.get_or_init(|| {
        let pg = edge_cluster::Postgres::throwaway().expect("a throwaway PostgreSQL cluster");
        let url = pg.url("postgres");
        (pg, url)
    })
    .1
    .clone()
}

/// A new, empty schema in the database at `url`; the URL whose connections use it (and nothing else).
pub async fn fresh_schema(url: &str) -> String {
    use sqlx::Connection;
    let schema = format!("t_{}", edge_server::admin::new_id());
    let mut conn = sqlx::PgConnection::connect(url).await.expect("connecting to the test database");
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&mut conn).await.expect("creating a schema");
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}")
}

/// A request under construction.
pub struct Req(axum::http::request::Builder, Body);

pub fn req(method: Method, uri: &str) -> Req {
    Req(Request::builder().method(method).uri(uri), Body::empty())
}

impl Req {
    pub fn basic(self, user: &str, password: &str) -> Req {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.header(header::AUTHORIZATION.as_str(), &format!("Basic {token}"))
    }

    /// The TCP peer the request comes from (what the server sees of the connection).
    pub fn peer(self, addr: &str) -> Req {
        let ip: std::net::IpAddr = addr.parse().expect("peer address");
        Req(self.0.extension(axum::extract::ConnectInfo(std::net::SocketAddr::new(ip, 40000))), self.1)
    }

    pub fn cookie(self, session: &str) -> Req {
        self.header(header::COOKIE.as_str(), &format!("authtoken={session}"))
    }

    pub fn header(self, name: &str, value: &str) -> Req {
        Req(self.0.header(name, value), self.1)
    }

    pub fn json(self, body: &Value) -> Req {
        Req(self.0.header(header::CONTENT_TYPE, "application/json"), Body::from(body.to_string()))
    }

    pub fn raw(self, content_type: &str, body: impl Into<Body>) -> Req {
        Req(self.0.header(header::CONTENT_TYPE, content_type), body.into())
    }

    pub fn done(self) -> Request<Body> {
        self.0.body(self.1).expect("request")
    }
}

/// Asserts an error answer: status, JSON content type and the error body's `type`.
pub fn assert_error(reply: &Reply, status: StatusCode, kind: &str) {
    assert_eq!(reply.status, status, "body: {}", String::from_utf8_lossy(&reply.raw));
    assert_eq!(
        reply.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()),
        Some("application/json"),
        "error answers are JSON"
    );
    assert_eq!(reply.body["type"], kind, "body: {}", reply.body);
    assert!(reply.body["message"].as_str().is_some_and(|m| !m.is_empty()), "message present: {}", reply.body);
    assert!(reply.body["details"].is_array(), "details present: {}", reply.body);
}
