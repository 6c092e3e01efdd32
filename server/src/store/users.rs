//! Users of a customer, with their passwords, reset tokens and two-factor seeds, and the identity sources
//! they come from.

use async_trait::async_trait;

use super::{
    CustomerId, StoreError, StoreResult,
    audit::{AuditEvent, Target, insert_audit},
    db::{Row, Tx, query},
    sql::{Search, SqlStore, conflict},
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub username: String,
    pub source: String,
    pub full_name: String,
    pub email: String,
    pub phone_number: String,
    pub enabled: bool,
    pub role: String,
    pub password_hash: Option<String>,
    pub otp_enabled: bool,
    pub otp_secret: Option<String>,
    pub otp_last_step: i64,
    pub created_ms: i64,
}

/// Changes to a user; `None` keeps the value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserUpdate {
    pub username: Option<String>,
    pub full_name: Option<String>,
    pub email: Option<String>,
    pub phone_number: Option<String>,
    pub enabled: Option<bool>,
    pub role: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswordReset {
    pub token_hash: String,
    pub customer_id: CustomerId,
    pub user_id: String,
    pub expires_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtpSeedRecord {
    pub id: String,
    pub user_id: String,
    pub secret: String,
    pub created_ms: i64,
}

/// A user to create; the store adds the customer and the creation time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    pub id: String,
    pub username: String,
    pub source: String,
    pub full_name: String,
    pub email: String,
    pub phone_number: String,
    pub enabled: bool,
    pub role: String,
    pub password_hash: Option<String>,
}

// A target made from a record is built beside the record: the audit module, which every resource's
// writes use, cannot import the records back.
impl Target {
    pub fn user(u: &UserRecord) -> Target {
        Target { kind: "user", id: u.id.clone(), name: u.username.clone() }
    }
}

/// Users, their passwords and two-factor, and identity sources.
#[async_trait]
pub trait Users: Send + Sync {
    async fn create_user(
        &self,
        customer: CustomerId,
        user: &NewUser,
        created_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<UserRecord>;
    async fn user_by_username(&self, customer: CustomerId, username: &str) -> StoreResult<Option<UserRecord>>;
    async fn user_by_id(&self, customer: CustomerId, id: &str) -> StoreResult<Option<UserRecord>>;
    /// A page of users ordered by username, optionally only those whose username or full name contains
    /// `search` (case-insensitive), and the total that match.
    async fn list_users(
        &self,
        customer: CustomerId,
        search: Option<&str>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<UserRecord>, u64)>;
    /// Applies `update`; `Ok(None)` when the user does not exist; [`StoreError::LastAdmin`] (and no change) when
    /// it would leave no enabled administrator; [`StoreError::Conflict`] when the new username is taken.
    async fn update_user(
        &self,
        customer: CustomerId,
        id: &str,
        update: &UserUpdate,
        audit: &AuditEvent,
    ) -> StoreResult<Option<UserRecord>>;
    /// Deletes a user with its sessions and API tokens; false when it did not exist; [`StoreError::LastAdmin`] as
    /// above. Disabling a user (in [`Users::update_user`]) ends its sessions and revokes its tokens too.
    async fn delete_user(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool>;
    /// Sets a user's password and ends all its sessions but `keep_session` (a token hash).
    async fn set_password(
        &self,
        customer: CustomerId,
        user_id: &str,
        hash: &str,
        keep_session: Option<&str>,
        audit: &AuditEvent,
    ) -> StoreResult<bool>;
    /// An administrator's reset: stores the reset token, and voids the user's password and ends its sessions.
    /// False when the user does not exist (and nothing is stored).
    async fn reset_password(&self, reset: &PasswordReset, audit: &AuditEvent) -> StoreResult<bool>;
    async fn password_reset(&self, token_hash: &str) -> StoreResult<Option<PasswordReset>>;
    /// Uses a reset token: sets the password, ends the user's sessions and removes all its reset tokens, at once.
    /// False when the token is gone (used meanwhile).
    async fn finish_password_reset(&self, token_hash: &str, hash: &str, audit: &AuditEvent) -> StoreResult<bool>;
    /// Stores a seed handed out for pairing, replacing earlier ones of the user.
    async fn create_otp_seed(&self, seed: &OtpSeedRecord, audit: &AuditEvent) -> StoreResult<()>;
    async fn otp_seed(&self, user_id: &str, seed_id: &str) -> StoreResult<Option<OtpSeedRecord>>;
    /// Turns two-factor on with `secret`, its last used step `last_step`, and drops the user's seeds. False when
    /// it was already on (and nothing is written).
    async fn enable_otp(&self, user_id: &str, secret: &str, last_step: i64, audit: &AuditEvent) -> StoreResult<bool>;
    /// Turns two-factor off; false when it was off (and nothing is written).
    async fn disable_otp(&self, user_id: &str, audit: &AuditEvent) -> StoreResult<bool>;
    /// Records that the code of `step` was used; false when that step or a later one was used already. Part of
    /// a login (whose session is recorded), not audited on its own.
    async fn consume_otp_step(&self, user_id: &str, step: i64) -> StoreResult<bool>;
    /// Identity sources registered besides `local`: id and configuration (JSON object text).
    async fn identity_sources(&self, customer: CustomerId) -> StoreResult<Vec<(String, String)>>;
    async fn add_identity_source(
        &self,
        customer: CustomerId,
        id: &str,
        configuration: &str,
        audit: &AuditEvent,
    ) -> StoreResult<()>;
}

#[async_trait]
impl Users for SqlStore {
    async fn create_user(
        &self,
        customer: CustomerId,
        user: &NewUser,
        created_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<UserRecord> {
        let mut tx = self.db.begin().await?;
        let user = insert_user(&mut tx, customer, user, created_ms).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(user)
    }

    async fn user_by_username(&self, customer: CustomerId, username: &str) -> StoreResult<Option<UserRecord>> {
        let row = query("SELECT * FROM users WHERE customer_id = $1 AND username = $2")
            .bind(customer)
            .bind(username)
            .fetch_optional(&self.db)
            .await?;
        Ok(row.as_ref().map(user_from_row).transpose()?)
    }

    async fn user_by_id(&self, customer: CustomerId, id: &str) -> StoreResult<Option<UserRecord>> {
        let row = query("SELECT * FROM users WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.db)
            .await?;
        Ok(row.as_ref().map(user_from_row).transpose()?)
    }

    async fn list_users(
        &self,
        customer: CustomerId,
        search: Option<&str>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<UserRecord>, u64)> {
        let page = Search {
            table: "users",
            owner: "customer_id",
            columns: &["username", "full_name"],
            order: "lower(username), id",
        };
        page.run(&self.db, customer.into(), search, offset, limit, user_from_row).await
    }

    async fn update_user(
        &self,
        customer: CustomerId,
        id: &str,
        u: &UserUpdate,
        audit: &AuditEvent,
    ) -> StoreResult<Option<UserRecord>> {
        let mut tx = self.db.begin().await?;
        tx.lock_row("customers", "id", customer).await?;
        let row = query(
            "UPDATE users SET username = COALESCE($1, username), full_name = COALESCE($2, full_name),
                              email = COALESCE($3, email), phone_number = COALESCE($4, phone_number),
                              enabled = COALESCE($5, enabled), role = COALESCE($6, role)
             WHERE customer_id = $7 AND id = $8 RETURNING *",
        )
        .bind(&u.username)
        .bind(&u.full_name)
        .bind(&u.email)
        .bind(&u.phone_number)
        .bind(u.enabled)
        .bind(&u.role)
        .bind(customer)
        .bind(id)
        .fetch_optional(&mut tx)
        .await
        .map_err(conflict("username"))?;
        let Some(row) = row else { return Ok(None) };
        let user = user_from_row(&row)?;
        ensure_an_admin(&mut tx, customer).await?;
        let mut audit = audit.clone();
        if !user.enabled {
            query("DELETE FROM sessions WHERE user_id = $1").bind(id).execute(&mut tx).await?;
            audit = revoke_tokens(&mut tx, id, audit).await?;
        }
        insert_audit(&mut tx, &audit).await?;
        tx.commit().await?;
        Ok(Some(user))
    }

    async fn delete_user(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        tx.lock_row("customers", "id", customer).await?;
        // Its tokens would go with it (ON DELETE CASCADE); deleted first, so the record counts them.
        let audit = revoke_tokens(&mut tx, id, audit.clone()).await?;
        let done = query("DELETE FROM users WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .execute(&mut tx)
            .await?;
        if done == 0 {
            return Ok(false);
        }
        ensure_an_admin(&mut tx, customer).await?;
        insert_audit(&mut tx, &audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn set_password(
        &self,
        customer: CustomerId,
        user_id: &str,
        hash: &str,
        keep_session: Option<&str>,
        audit: &AuditEvent,
    ) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let done = query("UPDATE users SET password_hash = $1 WHERE customer_id = $2 AND id = $3")
            .bind(hash)
            .bind(customer)
            .bind(user_id)
            .execute(&mut tx)
            .await?;
        if done == 0 {
            return Ok(false);
        }
        query("DELETE FROM sessions WHERE user_id = $1 AND ($2 IS NULL OR token_hash <> $2)")
            .bind(user_id)
            .bind(keep_session)
            .execute(&mut tx)
            .await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn reset_password(&self, r: &PasswordReset, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let done = query("UPDATE users SET password_hash = NULL WHERE customer_id = $1 AND id = $2")
            .bind(r.customer_id)
            .bind(&r.user_id)
            .execute(&mut tx)
            .await?;
        if done == 0 {
            return Ok(false);
        }
        query("INSERT INTO password_resets (token_hash, customer_id, user_id, expires_ms) VALUES ($1, $2, $3, $4)")
            .bind(&r.token_hash)
            .bind(r.customer_id)
            .bind(&r.user_id)
            .bind(r.expires_ms)
            .execute(&mut tx)
            .await?;
        query("DELETE FROM sessions WHERE user_id = $1").bind(&r.user_id).execute(&mut tx).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn password_reset(&self, token_hash: &str) -> StoreResult<Option<PasswordReset>> {
        let row = query("SELECT * FROM password_resets WHERE token_hash = $1")
            .bind(token_hash)
            .fetch_optional(&self.db)
            .await?;
        Ok(row.as_ref().map(reset_from_row).transpose()?)
    }

    async fn finish_password_reset(&self, token_hash: &str, hash: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let row = query("DELETE FROM password_resets WHERE token_hash = $1 RETURNING *")
            .bind(token_hash)
            .fetch_optional(&mut tx)
            .await?;
        let Some(reset) = row.as_ref().map(reset_from_row).transpose()? else { return Ok(false) };
        query("UPDATE users SET password_hash = $1 WHERE id = $2")
            .bind(hash)
            .bind(&reset.user_id)
            .execute(&mut tx)
            .await?;
        query("DELETE FROM password_resets WHERE user_id = $1").bind(&reset.user_id).execute(&mut tx).await?;
        query("DELETE FROM sessions WHERE user_id = $1").bind(&reset.user_id).execute(&mut tx).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn create_otp_seed(&self, seed: &OtpSeedRecord, audit: &AuditEvent) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        tx.lock_row("users", "id", &seed.user_id).await?;
        query("DELETE FROM otp_seeds WHERE user_id = $1").bind(&seed.user_id).execute(&mut tx).await?;
        query("INSERT INTO otp_seeds (id, user_id, secret, created_ms) VALUES ($1, $2, $3, $4)")
            .bind(&seed.id)
            .bind(&seed.user_id)
            .bind(&seed.secret)
            .bind(seed.created_ms)
            .execute(&mut tx)
            .await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn otp_seed(&self, user_id: &str, seed_id: &str) -> StoreResult<Option<OtpSeedRecord>> {
        let row = query("SELECT * FROM otp_seeds WHERE user_id = $1 AND id = $2")
            .bind(user_id)
            .bind(seed_id)
            .fetch_optional(&self.db)
            .await?;
        Ok(row
            .map(|r| -> Result<_, sqlx::Error> {
                Ok(OtpSeedRecord {
                    id: r.get("id")?,
                    user_id: r.get("user_id")?,
                    secret: r.get("secret")?,
                    created_ms: r.get("created_ms")?,
                })
            })
            .transpose()?)
    }

    async fn enable_otp(&self, user_id: &str, secret: &str, last_step: i64, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let done = query(
            "UPDATE users SET otp_enabled = TRUE, otp_secret = $1, otp_last_step = $2
             WHERE id = $3 AND otp_enabled = FALSE",
        )
        .bind(secret)
        .bind(last_step)
        .bind(user_id)
        .execute(&mut tx)
        .await?;
        if done == 0 {
            return Ok(false);
        }
        query("DELETE FROM otp_seeds WHERE user_id = $1").bind(user_id).execute(&mut tx).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn disable_otp(&self, user_id: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let done = query(
            "UPDATE users SET otp_enabled = FALSE, otp_secret = NULL, otp_last_step = 0
             WHERE id = $1 AND otp_enabled = TRUE",
        )
        .bind(user_id)
        .execute(&mut tx)
        .await?;
        if done == 0 {
            return Ok(false);
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn consume_otp_step(&self, user_id: &str, step: i64) -> StoreResult<bool> {
        let done = query("UPDATE users SET otp_last_step = $1 WHERE id = $2 AND otp_last_step < $1")
            .bind(step)
            .bind(user_id)
            .execute(&self.db)
            .await?;
        Ok(done > 0)
    }

    async fn identity_sources(&self, customer: CustomerId) -> StoreResult<Vec<(String, String)>> {
        let rows = query("SELECT id, configuration FROM identity_sources WHERE customer_id = $1 ORDER BY id")
            .bind(customer)
            .fetch_all(&self.db)
            .await?;
        Ok(rows.iter().map(|r| Ok((r.get("id")?, r.get("configuration")?))).collect::<Result<Vec<_>, sqlx::Error>>()?)
    }

    async fn add_identity_source(
        &self,
        customer: CustomerId,
        id: &str,
        configuration: &str,
        audit: &AuditEvent,
    ) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        query("INSERT INTO identity_sources (customer_id, id, configuration) VALUES ($1, $2, $3)")
            .bind(customer)
            .bind(id)
            .bind(configuration)
            .execute(&mut tx)
            .await
            .map_err(conflict("identity source"))?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }
}

pub(super) fn user_from_row(row: &Row) -> Result<UserRecord, sqlx::Error> {
    Ok(UserRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        username: row.get("username")?,
        source: row.get("source")?,
        full_name: row.get("full_name")?,
        email: row.get("email")?,
        phone_number: row.get("phone_number")?,
        enabled: row.get("enabled")?,
        role: row.get("role")?,
        password_hash: row.get("password_hash")?,
        otp_enabled: row.get("otp_enabled")?,
        otp_secret: row.get("otp_secret")?,
        otp_last_step: row.get("otp_last_step")?,
        created_ms: row.get("created_ms")?,
    })
}

fn reset_from_row(row: &Row) -> Result<PasswordReset, sqlx::Error> {
    Ok(PasswordReset {
        token_hash: row.get("token_hash")?,
        customer_id: row.get("customer_id")?,
        user_id: row.get("user_id")?,
        expires_ms: row.get("expires_ms")?,
    })
}

/// Revokes every API token of a user (disabled or deleted) in the transaction of that change; `audit`, the
/// change's record, then counts them (`tokens_revoked`).
async fn revoke_tokens(tx: &mut Tx, user_id: &str, audit: AuditEvent) -> StoreResult<AuditEvent> {
    let revoked = query("DELETE FROM api_tokens WHERE user_id = $1").bind(user_id).execute(tx).await?;
    Ok(if revoked > 0 { audit.detail("tokens_revoked", revoked) } else { audit })
}

/// Fails the transaction's change when no enabled administrator would remain. The transaction holds the
/// customer's row (see [`Tx::lock_row`]), so two changes cannot each leave the other's administrator alone.
async fn ensure_an_admin(tx: &mut Tx, customer: CustomerId) -> StoreResult<()> {
    let admins: i64 = query("SELECT COUNT(*) FROM users WHERE customer_id = $1 AND role = 'admin' AND enabled = TRUE")
        .bind(customer)
        .scalar(tx)
        .await?;
    if admins == 0 { Err(StoreError::LastAdmin) } else { Ok(()) }
}

pub(super) async fn insert_user(
    tx: &mut Tx,
    customer: CustomerId,
    u: &NewUser,
    created_ms: i64,
) -> StoreResult<UserRecord> {
    let row = query(
        "INSERT INTO users (id, customer_id, username, source, full_name, email, phone_number, enabled, role,
                            password_hash, created_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *",
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
    .fetch_one(tx)
    .await
    .map_err(conflict("username"))?;
    Ok(user_from_row(&row)?)
}
