//! The embedded default store: one SQLite file in the data dir, WAL journal, migrations applied at open.

use std::{path::Path, str::FromStr, time::Duration};

use anyhow::Context;
use async_trait::async_trait;
use sqlx::{
    Row, SqlitePool,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous},
};

use super::*;

pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating when absent) `<data_dir>/edge.db` and brings its schema up to date.
    pub async fn open(data_dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(data_dir).with_context(|| format!("creating data dir {}", data_dir.display()))?;
        let path = data_dir.join("edge.db");
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
            .connect_with(options)
            .await
            .with_context(|| format!("opening {}", path.display()))?;
        sqlx::migrate!("./migrations").run(&pool).await.context("applying migrations")?;
        Ok(SqliteStore { pool })
    }
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

fn customer_from_row(row: &SqliteRow) -> Result<Customer, sqlx::Error> {
    Ok(Customer {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        display_name: row.try_get("display_name")?,
        contact_email: row.try_get("contact_email")?,
        timezone: row.try_get("timezone")?,
        created_ms: row.try_get("created_ms")?,
    })
}

fn user_from_row(row: &SqliteRow) -> Result<UserRecord, sqlx::Error> {
    Ok(UserRecord {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        username: row.try_get("username")?,
        source: row.try_get("source")?,
        full_name: row.try_get("full_name")?,
        email: row.try_get("email")?,
        phone_number: row.try_get("phone_number")?,
        enabled: row.try_get("enabled")?,
        role: row.try_get("role")?,
        password_hash: row.try_get("password_hash")?,
        otp_enabled: row.try_get("otp_enabled")?,
        otp_secret: row.try_get("otp_secret")?,
        created_ms: row.try_get("created_ms")?,
    })
}

fn session_from_row(row: &SqliteRow) -> Result<SessionRecord, sqlx::Error> {
    Ok(SessionRecord {
        token_hash: row.try_get("token_hash")?,
        customer_id: row.try_get("customer_id")?,
        user_id: row.try_get("user_id")?,
        created_ms: row.try_get("created_ms")?,
        last_seen_ms: row.try_get("last_seen_ms")?,
    })
}

async fn insert_user(
    conn: &mut sqlx::SqliteConnection,
    customer: CustomerId,
    u: &NewUser,
    created_ms: i64,
) -> StoreResult<UserRecord> {
    let row = sqlx::query(
        "INSERT INTO users (id, customer_id, username, source, full_name, email, phone_number, enabled, role,
                            password_hash, created_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
    )
    .bind(&u.id)
    .bind(customer)
    .bind(&u.username)
    .bind(&u.source)
    .bind(&u.full_name)
    .bind(&u.email)
    .bind(&u.phone_number)
    .bind(u.enabled)
    .bind(&u.role)
    .bind(&u.password_hash)
    .bind(created_ms)
    .fetch_one(conn)
    .await
    .map_err(|e| if is_unique_violation(&e) { StoreError::Conflict("username") } else { e.into() })?;
    Ok(user_from_row(&row)?)
}

#[async_trait]
impl Store for SqliteStore {
    async fn customer_count(&self) -> StoreResult<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM customers").fetch_one(&self.pool).await?;
        Ok(n as u64)
    }

    async fn create_customer(&self, c: NewCustomer, users: &[NewUser], created_ms: i64) -> StoreResult<Customer> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(
            "INSERT INTO customers (name, display_name, contact_email, created_ms) VALUES (?, ?, ?, ?) RETURNING *",
        )
        .bind(&c.name)
        .bind(&c.display_name)
        .bind(&c.contact_email)
        .bind(created_ms)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| if is_unique_violation(&e) { StoreError::Conflict("customer") } else { e.into() })?;
        let customer = customer_from_row(&row)?;
        for user in users {
            insert_user(&mut tx, customer.id, user, created_ms).await?;
        }
        tx.commit().await?;
        Ok(customer)
    }

    async fn customer_by_name(&self, name: &str) -> StoreResult<Option<Customer>> {
        let row = sqlx::query("SELECT * FROM customers WHERE name = ?").bind(name).fetch_optional(&self.pool).await?;
        Ok(row.as_ref().map(customer_from_row).transpose()?)
    }

    async fn create_user(&self, customer: CustomerId, user: &NewUser, created_ms: i64) -> StoreResult<UserRecord> {
        let mut conn = self.pool.acquire().await?;
        insert_user(&mut conn, customer, user, created_ms).await
    }

    async fn user_by_username(&self, customer: CustomerId, username: &str) -> StoreResult<Option<UserRecord>> {
        let row = sqlx::query("SELECT * FROM users WHERE customer_id = ? AND username = ?")
            .bind(customer)
            .bind(username)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(user_from_row).transpose()?)
    }

    async fn user_by_id(&self, customer: CustomerId, id: &str) -> StoreResult<Option<UserRecord>> {
        let row = sqlx::query("SELECT * FROM users WHERE customer_id = ? AND id = ?")
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(user_from_row).transpose()?)
    }

    async fn create_session(&self, s: &SessionRecord) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO sessions (token_hash, customer_id, user_id, created_ms, last_seen_ms) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(&s.token_hash)
        .bind(s.customer_id)
        .bind(&s.user_id)
        .bind(s.created_ms)
        .bind(s.last_seen_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn session(&self, token_hash: &str) -> StoreResult<Option<SessionRecord>> {
        let row = sqlx::query("SELECT * FROM sessions WHERE token_hash = ?")
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(session_from_row).transpose()?)
    }

    async fn touch_session(&self, token_hash: &str, last_seen_ms: i64) -> StoreResult<()> {
        sqlx::query("UPDATE sessions SET last_seen_ms = MAX(last_seen_ms, ?) WHERE token_hash = ?")
            .bind(last_seen_ms)
            .bind(token_hash)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn delete_session(&self, token_hash: &str) -> StoreResult<bool> {
        let done =
            sqlx::query("DELETE FROM sessions WHERE token_hash = ?").bind(token_hash).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn purge_sessions(&self, idle_before_ms: i64, created_before_ms: i64) -> StoreResult<u64> {
        let done = sqlx::query("DELETE FROM sessions WHERE last_seen_ms < ? OR created_ms < ?")
            .bind(idle_before_ms)
            .bind(created_before_ms)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }
}
