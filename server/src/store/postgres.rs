//! PostgreSQL, shared by every replica of the server: `--database-url postgres://USER[:PASS]@HOST:PORT/DB`.
//! Migrations run at start under sqlx's advisory lock on the database, so replicas starting at once apply
//! them one after the other (the later ones find nothing left to do).

use std::{str::FromStr, time::Duration};

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::db::Db;

/// Connections per replica: requests beyond wait for one (up to [`ACQUIRE_TIMEOUT`]).
const MAX_CONNECTIONS: u32 = 16;
/// How long a request waits for a connection before it is answered 503: while the database cannot be
/// reached, answers come this quickly.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// Connects to the database at `url`, waiting up to `wait` for it to accept connections (a replica may start
/// before its database), and brings its schema up to date.
pub async fn connect(url: &str, wait: Duration) -> anyhow::Result<Db> {
    let options =
        PgConnectOptions::from_str(url).context("reading the PostgreSQL URL")?.application_name("edge-server");
    let pool = PgPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        // A connection broken while the database was away is found and replaced before a request gets it.
        .test_before_acquire(true)
        // A connection left inside a transaction (a commit that failed) is closed, never reused.
        .after_release(|conn, _| Box::pin(async move { Ok(!sqlx::Connection::is_in_transaction(conn)) }))
        .connect_lazy_with(options);
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match pool.acquire().await {
            Ok(_) => break,
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::warn!(error = %e, "waiting for the database");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("connecting to {}", redact(url)))),
        }
    }
    sqlx::migrate!("./migrations/postgres").run(&pool).await.context("applying migrations")?;
    Ok(Db::Postgres(pool))
}

/// `url` without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{}{user}{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_password_is_left_out_of_messages() {
        assert_eq!(super::redact("postgres://edge:s3cret@db:5432/edge"), "postgres://edge@db:5432/edge");
        assert_eq!(super::redact("postgres://db/edge"), "postgres://db/edge");
    }
}
