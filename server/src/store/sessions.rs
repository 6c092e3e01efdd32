//! Sessions: created at login, touched by use, ended by logout, expiry, a password change or the user's removal.

use async_trait::async_trait;

use super::{
    CustomerId, StoreResult,
    audit::{AuditEvent, Target, insert_audit},
    customers::{Customer, JOINED_CUSTOMER, joined_customer},
    db::{Row, query},
    sql::{SqlStore, filtered_page},
    users::{UserRecord, user_from_row},
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// Hex SHA-256 of the session id; the id itself is never stored.
    pub token_hash: String,
    pub customer_id: CustomerId,
    pub user_id: String,
    pub created_ms: i64,
    pub last_seen_ms: i64,
}

/// Sessions.
#[async_trait]
pub trait Sessions: Send + Sync {
    async fn create_session(&self, session: &SessionRecord, audit: &AuditEvent) -> StoreResult<()>;
    /// A session with its customer and user, in one read: every request with the session cookie needs all
    /// three. `None` when the session does not exist.
    async fn session_with_user(&self, token_hash: &str) -> StoreResult<Option<(SessionRecord, Customer, UserRecord)>>;
    /// A user's live sessions (used after `idle_after_ms` and created after `created_after_ms`), most recently
    /// used first, at most `limit`, and how many there are.
    async fn user_sessions(
        &self,
        user_id: &str,
        idle_after_ms: i64,
        created_after_ms: i64,
        limit: u32,
    ) -> StoreResult<(Vec<SessionRecord>, u64)>;
    /// Records the last use of a session (bookkeeping, not audited).
    async fn touch_session(&self, token_hash: &str, last_seen_ms: i64) -> StoreResult<()>;
    /// Deletes a session; false when there was none (and nothing is written).
    async fn delete_session(&self, token_hash: &str, audit: &AuditEvent) -> StoreResult<bool>;
    /// Deletes sessions idle since before `idle_before_ms` or created before `created_before_ms`, each with a
    /// `session.expire` record by the system at `now_ms`.
    async fn purge_sessions(&self, idle_before_ms: i64, created_before_ms: i64, now_ms: i64) -> StoreResult<u64>;
}

#[async_trait]
impl Sessions for SqlStore {
    async fn create_session(&self, s: &SessionRecord, audit: &AuditEvent) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        query(
            "INSERT INTO sessions (token_hash, customer_id, user_id, created_ms, last_seen_ms)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&s.token_hash)
        .bind(s.customer_id)
        .bind(&s.user_id)
        .bind(s.created_ms)
        .bind(s.last_seen_ms)
        .execute(&mut tx)
        .await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn session_with_user(&self, token_hash: &str) -> StoreResult<Option<(SessionRecord, Customer, UserRecord)>> {
        let row = query(format!(
            "SELECT u.*, s.token_hash, s.user_id, s.created_ms AS s_created_ms, s.last_seen_ms, {JOINED_CUSTOMER}
             FROM sessions s
             JOIN users u ON u.id = s.user_id AND u.customer_id = s.customer_id
             JOIN customers c ON c.id = s.customer_id
             WHERE s.token_hash = $1"
        ))
        .bind(token_hash)
        .fetch_optional(&self.db)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let user = user_from_row(&row)?;
        let session = SessionRecord {
            token_hash: row.get("token_hash")?,
            customer_id: user.customer_id,
            user_id: row.get("user_id")?,
            created_ms: row.get("s_created_ms")?,
            last_seen_ms: row.get("last_seen_ms")?,
        };
        let customer = joined_customer(&row, user.customer_id)?;
        Ok(Some((session, customer, user)))
    }

    async fn user_sessions(
        &self,
        user_id: &str,
        idle_after_ms: i64,
        created_after_ms: i64,
        limit: u32,
    ) -> StoreResult<(Vec<SessionRecord>, u64)> {
        const LIVE: &str = "user_id = $1 AND last_seen_ms > $2 AND created_ms > $3";
        let count = format!("SELECT COUNT(*) FROM sessions WHERE {LIVE}");
        let page = format!(
            "SELECT token_hash, customer_id, user_id, created_ms, last_seen_ms FROM sessions
             WHERE {LIVE} ORDER BY last_seen_ms DESC, token_hash LIMIT $4 OFFSET $5"
        );
        let bound = |sql: String| query(sql).bind(user_id).bind(idle_after_ms).bind(created_after_ms);
        filtered_page(&self.db, bound, count, page, (limit.into(), 0), session_from_row).await
    }

    async fn touch_session(&self, token_hash: &str, last_seen_ms: i64) -> StoreResult<()> {
        query("UPDATE sessions SET last_seen_ms = $1 WHERE token_hash = $2 AND last_seen_ms < $1")
            .bind(last_seen_ms)
            .bind(token_hash)
            .execute(&self.db)
            .await?;
        Ok(())
    }

    async fn delete_session(&self, token_hash: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let done = query("DELETE FROM sessions WHERE token_hash = $1").bind(token_hash).execute(&mut tx).await?;
        if done == 0 {
            return Ok(false);
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn purge_sessions(&self, idle_before_ms: i64, created_before_ms: i64, now_ms: i64) -> StoreResult<u64> {
        let mut tx = self.db.begin().await?;
        tx.lock_keys(&["job:purge_sessions"]).await?;
        let rows = query(
            "DELETE FROM sessions WHERE last_seen_ms < $1 OR created_ms < $2
             RETURNING token_hash, customer_id, user_id,
                       (SELECT username FROM users u WHERE u.id = sessions.user_id) AS username",
        )
        .bind(idle_before_ms)
        .bind(created_before_ms)
        .fetch_all(&mut tx)
        .await?;
        for row in &rows {
            let token_hash: String = row.get("token_hash")?;
            let username: Option<String> = row.get("username")?;
            let target = Target::session(&token_hash, username.as_deref().unwrap_or_default());
            let event =
                AuditEvent::system(row.get("customer_id")?, now_ms, edge_api::audit::op::SESSION_EXPIRE, target);
            insert_audit(&mut tx, &event).await?;
        }
        tx.commit().await?;
        Ok(rows.len() as u64)
    }
}

fn session_from_row(row: &Row) -> Result<SessionRecord, sqlx::Error> {
    Ok(SessionRecord {
        token_hash: row.get("token_hash")?,
        customer_id: row.get("customer_id")?,
        user_id: row.get("user_id")?,
        created_ms: row.get("created_ms")?,
        last_seen_ms: row.get("last_seen_ms")?,
    })
}
