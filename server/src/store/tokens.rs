//! API tokens: made by their user, found by the hash of their secret on every request that carries one, listed,
//! changed, given a new secret and revoked; a use recorded now and then.

use async_trait::async_trait;
use edge_api::tokens::MAX_TOKENS_PER_USER;

use super::{
    CustomerId, StoreError, StoreResult,
    audit::{AuditEvent, Target, insert_audit},
    customers::{Customer, JOINED_CUSTOMER, joined_customer},
    db::{Row, query},
    sql::{SqlStore, filtered_page},
    users::{UserRecord, user_from_row},
};

/// A stored token: everything but its secret, of which only the hash is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub user_id: String,
    /// The user's name, read with the token.
    pub username: String,
    /// The prefix and the first characters of the secret.
    pub hint: String,
    pub name: String,
    /// Scope names, in the order of `edge_api::Scope::ALL`.
    pub scopes: Vec<String>,
    /// CIDR ranges; empty: any address.
    pub allowed_cidrs: Vec<String>,
    pub expires_ms: Option<i64>,
    pub created_ms: i64,
    pub last_used_ms: Option<i64>,
    pub last_used_from: Option<String>,
}

/// A token to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    pub id: String,
    pub customer_id: CustomerId,
    pub user_id: String,
    /// Hex SHA-256 of the secret.
    pub secret_hash: String,
    pub hint: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub allowed_cidrs: Vec<String>,
    pub expires_ms: Option<i64>,
    pub created_ms: i64,
}

/// Changes to a token; `None` keeps the value (`expires_ms: Some(None)` makes it never expire).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenChange {
    pub name: Option<String>,
    pub scopes: Option<Vec<String>>,
    pub allowed_cidrs: Option<Vec<String>>,
    pub expires_ms: Option<Option<i64>>,
}

// A target made from a record is built beside the record: the audit module, which every resource's
// writes use, cannot import the records back.
impl Target {
    pub fn token(t: &TokenRecord) -> Target {
        Target { kind: "token", id: t.id.clone(), name: t.name.clone() }
    }
}

/// API tokens.
#[async_trait]
pub trait Tokens: Send + Sync {
    /// Stores a token; [`StoreError::Limit`] (and nothing stored) when its user already holds
    /// [`MAX_TOKENS_PER_USER`]; `Ok(None)` when the user is gone (deleted meanwhile).
    async fn create_token(&self, token: &NewToken, audit: &AuditEvent) -> StoreResult<Option<TokenRecord>>;
    /// The token whose secret hashes to `secret_hash`, with its customer and user, in one read: every request
    /// with a token needs all three.
    async fn token_by_secret(&self, secret_hash: &str) -> StoreResult<Option<(TokenRecord, Customer, UserRecord)>>;
    async fn token(&self, customer: CustomerId, id: &str) -> StoreResult<Option<TokenRecord>>;
    /// A page of the customer's tokens (of one user when `user` is given), newest first, and how many there are.
    async fn list_tokens(
        &self,
        customer: CustomerId,
        user: Option<&str>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<TokenRecord>, u64)>;
    /// Applies `change`; `Ok(None)` when the token does not exist.
    async fn update_token(
        &self,
        customer: CustomerId,
        id: &str,
        change: &TokenChange,
        audit: &AuditEvent,
    ) -> StoreResult<Option<TokenRecord>>;
    /// Gives the token a new secret (the old one stops working at once); `Ok(None)` when it does not exist.
    async fn roll_token(
        &self,
        customer: CustomerId,
        id: &str,
        secret_hash: &str,
        hint: &str,
        audit: &AuditEvent,
    ) -> StoreResult<Option<TokenRecord>>;
    /// Revokes (deletes) a token; false when there was none (and nothing is written).
    async fn delete_token(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool>;
    /// Records a use (bookkeeping, not audited) unless one was recorded at or after `unless_since_ms`: a token
    /// used all the time costs one write now and then, and replicas using it at once write it about once.
    async fn touch_token(&self, id: &str, now_ms: i64, from: &str, unless_since_ms: i64) -> StoreResult<()>;
}

const COLUMNS: &str = "t.id, t.customer_id, t.user_id, t.hint, t.name, t.scopes, t.allowed_cidrs, t.expires_ms,
                       t.created_ms AS t_created_ms, t.last_used_ms, t.last_used_from, u.username AS t_username";

fn words(text: String) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

fn token_from_row(row: &Row) -> Result<TokenRecord, sqlx::Error> {
    Ok(TokenRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        user_id: row.get("user_id")?,
        username: row.get("t_username")?,
        hint: row.get("hint")?,
        name: row.get("name")?,
        scopes: words(row.get("scopes")?),
        allowed_cidrs: words(row.get("allowed_cidrs")?),
        expires_ms: row.get("expires_ms")?,
        created_ms: row.get("t_created_ms")?,
        last_used_ms: row.get("last_used_ms")?,
        last_used_from: row.get("last_used_from")?,
    })
}

/// One token of a customer, read in `on` (the pool or a transaction).
async fn find<'a>(
    on: impl Into<super::db::On<'a>>,
    customer: CustomerId,
    id: &str,
) -> StoreResult<Option<TokenRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.customer_id = $1 AND t.id = $2"
    );
    let row = query(sql).bind(customer).bind(id).fetch_optional(on).await?;
    Ok(row.as_ref().map(token_from_row).transpose()?)
}

#[async_trait]
impl Tokens for SqlStore {
    async fn create_token(&self, t: &NewToken, audit: &AuditEvent) -> StoreResult<Option<TokenRecord>> {
        let mut tx = self.db.begin().await?;
        // The count and the insert of one user's tokens run one after the other on every replica.
        tx.lock_row("users", "id", &t.user_id).await?;
        let users: i64 = query("SELECT COUNT(*) FROM users WHERE customer_id = $1 AND id = $2")
            .bind(t.customer_id)
            .bind(&t.user_id)
            .scalar(&mut tx)
            .await?;
        if users == 0 {
            return Ok(None);
        }
        let held: i64 =
            query("SELECT COUNT(*) FROM api_tokens WHERE user_id = $1").bind(&t.user_id).scalar(&mut tx).await?;
        if held as u64 >= MAX_TOKENS_PER_USER {
            return Err(StoreError::Limit(format!(
                "A user holds at most {MAX_TOKENS_PER_USER} tokens: revoke one (expired ones count too)."
            )));
        }
        query(
            "INSERT INTO api_tokens (id, customer_id, user_id, secret_hash, hint, name, scopes, allowed_cidrs,
                                     expires_ms, created_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&t.id)
        .bind(t.customer_id)
        .bind(&t.user_id)
        .bind(&t.secret_hash)
        .bind(&t.hint)
        .bind(&t.name)
        .bind(t.scopes.join(" "))
        .bind(t.allowed_cidrs.join(" "))
        .bind(t.expires_ms)
        .bind(t.created_ms)
        .execute(&mut tx)
        .await?;
        insert_audit(&mut tx, audit).await?;
        let record = find(&mut tx, t.customer_id, &t.id).await?;
        tx.commit().await?;
        Ok(record)
    }

    async fn token_by_secret(&self, secret_hash: &str) -> StoreResult<Option<(TokenRecord, Customer, UserRecord)>> {
        let row = query(format!(
            "SELECT u.*, {COLUMNS}, {JOINED_CUSTOMER}
             FROM api_tokens t
             JOIN users u ON u.id = t.user_id AND u.customer_id = t.customer_id
             JOIN customers c ON c.id = t.customer_id
             WHERE t.secret_hash = $1"
        ))
        .bind(secret_hash)
        .fetch_optional(&self.db)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let user = user_from_row(&row)?;
        let token = token_from_row(&row)?;
        let customer = joined_customer(&row, user.customer_id)?;
        Ok(Some((token, customer, user)))
    }

    async fn token(&self, customer: CustomerId, id: &str) -> StoreResult<Option<TokenRecord>> {
        find(&self.db, customer, id).await
    }

    async fn list_tokens(
        &self,
        customer: CustomerId,
        user: Option<&str>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<TokenRecord>, u64)> {
        const WHERE: &str = "t.customer_id = $1 AND ($2 IS NULL OR t.user_id = $2)";
        let count = format!("SELECT COUNT(*) FROM api_tokens t WHERE {WHERE}");
        let page = format!(
            "SELECT {COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id
             WHERE {WHERE} ORDER BY t.created_ms DESC, t.id LIMIT $3 OFFSET $4"
        );
        let bound = |sql: String| query(sql).bind(customer).bind(user);
        filtered_page(&self.db, bound, count, page, (limit, offset), token_from_row).await
    }

    async fn update_token(
        &self,
        customer: CustomerId,
        id: &str,
        c: &TokenChange,
        audit: &AuditEvent,
    ) -> StoreResult<Option<TokenRecord>> {
        let mut tx = self.db.begin().await?;
        let done = query(
            "UPDATE api_tokens SET name = COALESCE($1, name), scopes = COALESCE($2, scopes),
                                   allowed_cidrs = COALESCE($3, allowed_cidrs),
                                   expires_ms = CASE WHEN $4 THEN $5 ELSE expires_ms END
             WHERE customer_id = $6 AND id = $7",
        )
        .bind(&c.name)
        .bind(c.scopes.as_ref().map(|s| s.join(" ")))
        .bind(c.allowed_cidrs.as_ref().map(|s| s.join(" ")))
        .bind(c.expires_ms.is_some())
        .bind(c.expires_ms.flatten())
        .bind(customer)
        .bind(id)
        .execute(&mut tx)
        .await?;
        if done == 0 {
            return Ok(None);
        }
        insert_audit(&mut tx, audit).await?;
        let record = find(&mut tx, customer, id).await?;
        tx.commit().await?;
        Ok(record)
    }

    async fn roll_token(
        &self,
        customer: CustomerId,
        id: &str,
        secret_hash: &str,
        hint: &str,
        audit: &AuditEvent,
    ) -> StoreResult<Option<TokenRecord>> {
        let mut tx = self.db.begin().await?;
        let done = query("UPDATE api_tokens SET secret_hash = $1, hint = $2 WHERE customer_id = $3 AND id = $4")
            .bind(secret_hash)
            .bind(hint)
            .bind(customer)
            .bind(id)
            .execute(&mut tx)
            .await?;
        if done == 0 {
            return Ok(None);
        }
        insert_audit(&mut tx, audit).await?;
        let record = find(&mut tx, customer, id).await?;
        tx.commit().await?;
        Ok(record)
    }

    async fn delete_token(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let done = query("DELETE FROM api_tokens WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .execute(&mut tx)
            .await?;
        if done == 0 {
            return Ok(false);
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn touch_token(&self, id: &str, now_ms: i64, from: &str, unless_since_ms: i64) -> StoreResult<()> {
        query(
            "UPDATE api_tokens SET last_used_ms = $1, last_used_from = $2
             WHERE id = $3 AND (last_used_ms IS NULL OR last_used_ms < $4)",
        )
        .bind(now_ms)
        .bind(from)
        .bind(id)
        .bind(unless_since_ms)
        .execute(&self.db)
        .await?;
        Ok(())
    }
}
