//! [`SqlStore`]: the one implementation of the store's traits, over SQLite (the embedded default) or PostgreSQL
//! (shared by replicas). The SQL is written once for both (see [`super::db`]) and lives with the resource it
//! stores (`users.rs`, `properties.rs`, …); this file holds the store itself and what their SQL shares: paged
//! searches, LIKE patterns, batched pruning, uniqueness conflicts. Each store's schema is in its own migrations
//! (`server/migrations/sqlite`, `server/migrations/postgres`).

use async_trait::async_trait;

use super::{
    Health, StoreError, StoreResult,
    db::{self, Db, Kind, Query, Row, query},
};

pub struct SqlStore {
    pub(super) db: Db,
}

impl SqlStore {
    pub fn new(db: Db) -> Self {
        SqlStore { db }
    }

    /// The database, for tests that reach under the store.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Closes the connections.
    pub async fn close(&self) {
        self.db.close().await
    }
}

/// A page of the rows of `table` that belong to one owner (`owner` column) and, when searching, contain the
/// text in one of `columns` (case-insensitive); with the number of such rows in all.
pub(super) struct Search<'a> {
    pub(super) table: &'a str,
    pub(super) owner: &'a str,
    pub(super) columns: &'a [&'a str],
    pub(super) order: &'a str,
}

impl Search<'_> {
    /// The count and the page queries: `$1` the owner, `$2` the search pattern or NULL, `$3` limit, `$4` offset.
    fn sql(&self) -> (String, String) {
        let matches: Vec<String> = self.columns.iter().map(|c| format!("lower({c}) LIKE $2 ESCAPE '\\'")).collect();
        let filter = format!("{} = $1 AND ($2 IS NULL OR {})", self.owner, matches.join(" OR "));
        let count = format!("SELECT COUNT(*) FROM {} WHERE {filter}", self.table);
        let select = format!("SELECT * FROM {} WHERE {filter} ORDER BY {} LIMIT $3 OFFSET $4", self.table, self.order);
        (count, select)
    }

    pub(super) async fn run<T>(
        &self,
        db: &Db,
        owner: db::Value,
        search: Option<&str>,
        offset: u64,
        limit: u64,
        from_row: fn(&Row) -> Result<T, sqlx::Error>,
    ) -> StoreResult<(Vec<T>, u64)> {
        let (count, select) = self.sql();
        let pattern = search.map(like_pattern);
        let bound = |sql: String| query(sql).bind(owner.clone()).bind(pattern.clone());
        filtered_page(db, bound, count, select, (limit, offset), from_row).await
    }
}

/// One page of a filtered listing and the number of rows in the listing: `bound` binds the filter's parameters
/// to either query, and the page query takes the limit and the offset as its next two.
pub(super) async fn filtered_page<T>(
    db: &Db,
    bound: impl Fn(String) -> Query,
    count: String,
    page: String,
    (limit, offset): (u64, u64),
    from_row: fn(&Row) -> Result<T, sqlx::Error>,
) -> StoreResult<(Vec<T>, u64)> {
    let total: i64 = bound(count).scalar(db).await?;
    let rows = bound(page).bind(limit).bind(offset).fetch_all(db).await?;
    Ok((rows.iter().map(from_row).collect::<Result<_, _>>()?, total.max(0) as u64))
}

/// A case-insensitive LIKE pattern for "contains `search`", with `%`, `_` and `\\` in it matching themselves.
fn like_pattern(search: &str) -> String {
    format!("%{}%", escape_like(&search.to_lowercase()))
}

/// `text` with `\`, `%` and `_` escaped for a LIKE pattern with `ESCAPE '\'`.
pub(super) fn escape_like(text: &str) -> String {
    text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// Rows deleted by one transaction of a prune: few enough that writers waiting for the lock are not held up
/// long.
pub(super) const PRUNE_BATCH: i64 = 5000;

/// Deletes the rows of `table` whose `column` is below `before`, in batches, one replica at a time (the job's
/// lock); returns how many.
pub(super) async fn prune_in_batches(db: &Db, table: &str, key: &str, column: &str, before: i64) -> StoreResult<u64> {
    let sql = format!(
        "DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} WHERE {column} < $1 LIMIT {PRUNE_BATCH})"
    );
    let job = format!("job:prune:{table}");
    let mut total = 0;
    loop {
        let mut tx = db.begin().await?;
        tx.lock_keys(&[&job]).await?;
        let done = query(sql.clone()).bind(before).execute(&mut tx).await?;
        tx.commit().await?;
        total += done;
        if done == 0 {
            return Ok(total);
        }
    }
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// `e` as a [`StoreError::Conflict`] on `what` when a uniqueness rule refused the write.
pub(super) fn conflict(what: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |e| if is_unique_violation(&e) { StoreError::Conflict(what) } else { e.into() }
}

#[async_trait]
impl Health for SqlStore {
    fn kind(&self) -> &'static str {
        match self.db.kind() {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    }

    async fn ping(&self) -> StoreResult<()> {
        let _: i64 = query("SELECT CAST(1 AS BIGINT)").scalar(&self.db).await?;
        Ok(())
    }

    async fn probe_write(&self, server: &str, now_ms: i64) -> StoreResult<()> {
        query(
            "INSERT INTO readiness_probe (server, probe_ms) VALUES ($1, $2) \
             ON CONFLICT (server) DO UPDATE SET probe_ms = excluded.probe_ms",
        )
        .bind(server)
        .bind(now_ms)
        .execute(&self.db)
        .await?;
        Ok(())
    }
}
