//! The embedded default: one SQLite file in the data dir, WAL journal, migrations applied at open.

use std::{path::Path, str::FromStr, time::Duration};

use anyhow::Context;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::db::Db;

/// Opens (creating when absent) `<data_dir>/edge.db` and brings its schema up to date.
pub async fn open(data_dir: &Path) -> anyhow::Result<Db> {
    crate::private::dir(data_dir).with_context(|| format!("creating data dir {}", data_dir.display()))?;
    let path = data_dir.join("edge.db");
    // SQLite gives the -wal and -shm files the database file's permissions: created 0600 here, they are too.
    // An existing file (from before) is made private as well.
    crate::private::file(&path).with_context(|| format!("creating {}", path.display()))?;
    for journal in ["edge.db-wal", "edge.db-shm"] {
        crate::private::restrict(&data_dir.join(journal)).with_context(|| format!("restricting {journal}"))?;
    }
    let options = SqliteConnectOptions::from_str("sqlite://")?
        .filename(&path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // FULL: a write acknowledged to a client survives power loss, not only a crash of the process.
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10));
    let pool = SqlitePoolOptions::new()
        .max_connections(8)
        // A commit that fails (disk full, read-only file system) leaves sqlx's transaction depth of the
        // connection at one while SQLite has rolled back, and sqlx then refuses every transaction on it ("begin
        // at non-zero transaction depth"): once a pooled connection would be reused so, every write failed until
        // a restart. On release, the queued rollback is flushed (a ping) and a connection still in a
        // transaction is closed; the pool opens a fresh one when the disk is back.
        .after_release(|conn, _| {
            Box::pin(async move {
                sqlx::Connection::ping(conn).await?;
                Ok(!sqlx::Connection::is_in_transaction(conn))
            })
        })
        .connect_with(options)
        .await
        .with_context(|| format!("opening {}", path.display()))?;
    sqlx::migrate!("./migrations/sqlite").run(&pool).await.context("applying migrations")?;
    Ok(Db::Sqlite(pool))
}
