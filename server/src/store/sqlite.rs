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

    /// A transaction that takes the write lock at once (`BEGIN IMMEDIATE`), waiting up to the busy timeout for
    /// it. A deferred transaction that reads and then writes fails with SQLITE_BUSY_SNAPSHOT when another
    /// writer committed in between, and the busy timeout cannot help it.
    async fn write_transaction(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.pool.begin_with("BEGIN IMMEDIATE").await
    }
}

/// A case-insensitive LIKE pattern for "contains `search`", with `%`, `_` and `\\` in it matching themselves.
/// A page of the rows of `table` that belong to one owner (`owner` column) and, when searching, contain the
/// text in one of `columns` (case-insensitive); with the number of such rows in all.
struct Search<'a> {
    table: &'a str,
    owner: &'a str,
    columns: &'a [&'a str],
    order: &'a str,
}

impl Search<'_> {
    /// The count and the page queries: `?1` the owner, `?2` the search pattern or NULL, `?3` limit, `?4` offset.
    fn sql(&self) -> (String, String) {
        let matches: Vec<String> = self.columns.iter().map(|c| format!("lower({c}) LIKE ?2 ESCAPE '\\'")).collect();
        let filter = format!("{} = ?1 AND (?2 IS NULL OR {})", self.owner, matches.join(" OR "));
        let count = format!("SELECT COUNT(*) FROM {} WHERE {filter}", self.table);
        let select = format!("SELECT * FROM {} WHERE {filter} ORDER BY {} LIMIT ?3 OFFSET ?4", self.table, self.order);
        (count, select)
    }

    async fn run<K, T>(
        &self,
        pool: &SqlitePool,
        owner: K,
        search: Option<&str>,
        offset: u64,
        limit: u64,
        from_row: fn(&SqliteRow) -> Result<T, sqlx::Error>,
    ) -> StoreResult<(Vec<T>, u64)>
    where
        K: for<'q> sqlx::Encode<'q, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite> + Clone + Send,
    {
        let (count, select) = self.sql();
        let pattern = search.map(like_pattern);
        let total: i64 = sqlx::query_scalar(&count).bind(owner.clone()).bind(&pattern).fetch_one(pool).await?;
        let rows = sqlx::query(&select)
            .bind(owner)
            .bind(&pattern)
            .bind(limit.min(i64::MAX as u64) as i64)
            .bind(offset.min(i64::MAX as u64) as i64)
            .fetch_all(pool)
            .await?;
        Ok((rows.iter().map(from_row).collect::<Result<_, _>>()?, total as u64))
    }
}

fn like_pattern(search: &str) -> String {
    format!("%{}%", escape_like(&search.to_lowercase()))
}

/// `text` with `\`, `%` and `_` escaped for a LIKE pattern with `ESCAPE '\'`.
fn escape_like(text: &str) -> String {
    text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// Deletes the rows of `table` whose `column` is below `before`, a few thousand at a time so that writers
/// waiting for the lock are not held up long; returns how many.
async fn prune_in_batches(pool: &SqlitePool, table: &str, column: &str, before: i64) -> StoreResult<u64> {
    let sql = format!("DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE {column} < ? LIMIT 5000)");
    let mut total = 0;
    loop {
        let done = sqlx::query(&sql).bind(before).execute(pool).await?.rows_affected();
        total += done;
        if done == 0 {
            return Ok(total);
        }
    }
}

async fn insert_audit(conn: &mut sqlx::SqliteConnection, e: &AuditEvent) -> StoreResult<()> {
    let (actor_type, actor_id, actor_name) = match &e.actor {
        Actor::User { id, name } => ("user", Some(id.as_str()), name.as_str()),
        Actor::Unknown(name) => ("user", None, name.as_str()),
        Actor::System => ("system", None, "system"),
    };
    sqlx::query(
        "INSERT INTO audit_log (customer_id, time_ms, actor_type, actor_id, actor_name, source, operation,
                                target_type, target_id, target_name, success, details)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(e.customer_id)
    .bind(e.time_ms)
    .bind(actor_type)
    .bind(actor_id)
    .bind(actor_name)
    .bind(&e.source)
    .bind(&e.operation)
    .bind(&e.target_type)
    .bind(&e.target_id)
    .bind(&e.target_name)
    .bind(e.success)
    .bind(serde_json::Value::Object(e.details.clone()).to_string())
    .execute(conn)
    .await?;
    Ok(())
}

/// Whether an audit record's target still exists (`a` is the record).
const TARGET_EXISTS: &str = "CASE a.target_type
    WHEN 'user' THEN EXISTS (SELECT 1 FROM users t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'property' THEN EXISTS
        (SELECT 1 FROM properties t WHERE t.customer_id = a.customer_id AND t.name = a.target_id)
    WHEN 'network_list' THEN EXISTS
        (SELECT 1 FROM network_lists t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'purge' THEN EXISTS
        (SELECT 1 FROM purge_transactions t WHERE t.customer_id = a.customer_id AND CAST(t.id AS TEXT) = a.target_id)
    WHEN 'identity_source' THEN EXISTS
        (SELECT 1 FROM identity_sources t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'account' THEN 1
    ELSE 0 END";

/// `sql` with the parameters ?1 to ?8 of an audit filter bound.
fn audit_filter<'q>(
    sql: &'q str,
    customer: CustomerId,
    f: &'q AuditFilter,
    operation_prefix: &'q Option<String>,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>> {
    sqlx::query(sql)
        .bind(customer)
        .bind(f.from_ms)
        .bind(f.to_ms)
        .bind(&f.actor)
        .bind(&f.operation)
        .bind(operation_prefix)
        .bind(&f.target_type)
        .bind(&f.target_id)
}

fn audit_from_row(row: &SqliteRow) -> Result<AuditEntry, sqlx::Error> {
    let actor_type: String = row.try_get("actor_type")?;
    let actor_id: Option<String> = row.try_get("actor_id")?;
    let actor_name: String = row.try_get("actor_name")?;
    let actor = match (actor_type.as_str(), actor_id) {
        ("system", _) => Actor::System,
        (_, Some(id)) => Actor::User { id, name: actor_name },
        (_, None) => Actor::Unknown(actor_name),
    };
    let details: String = row.try_get("details")?;
    Ok(AuditEntry {
        id: row.try_get("id")?,
        event: AuditEvent {
            customer_id: row.try_get("customer_id")?,
            time_ms: row.try_get("time_ms")?,
            actor,
            source: row.try_get("source")?,
            operation: row.try_get("operation")?,
            target_type: row.try_get("target_type")?,
            target_id: row.try_get("target_id")?,
            target_name: row.try_get("target_name")?,
            success: row.try_get("success")?,
            details: serde_json::from_str(&details).unwrap_or_default(),
        },
        target_exists: row.try_get("target_exists")?,
    })
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
        otp_last_step: row.try_get("otp_last_step")?,
        created_ms: row.try_get("created_ms")?,
    })
}

fn reset_from_row(row: &SqliteRow) -> Result<PasswordReset, sqlx::Error> {
    Ok(PasswordReset {
        token_hash: row.try_get("token_hash")?,
        customer_id: row.try_get("customer_id")?,
        user_id: row.try_get("user_id")?,
        expires_ms: row.try_get("expires_ms")?,
    })
}

/// Fails the transaction's change when no enabled administrator would remain.
async fn ensure_an_admin(conn: &mut sqlx::SqliteConnection, customer: CustomerId) -> StoreResult<()> {
    let admins: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE customer_id = ? AND role = 'admin' AND enabled = 1")
            .bind(customer)
            .fetch_one(conn)
            .await?;
    if admins == 0 { Err(StoreError::LastAdmin) } else { Ok(()) }
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

fn task_from_row(row: &SqliteRow) -> Result<TaskRecord, sqlx::Error> {
    Ok(TaskRecord {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        operation: row.try_get("operation")?,
        user_id: row.try_get("user_id")?,
        target_id: row.try_get("target_id")?,
        target_uri: row.try_get("target_uri")?,
        begin_ms: row.try_get("begin_ms")?,
        end_ms: row.try_get("end_ms")?,
        error_info: row.try_get("error_info")?,
    })
}

async fn insert_task(conn: &mut sqlx::SqliteConnection, t: &TaskRecord) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO tasks (id, customer_id, operation, user_id, target_id, target_uri, begin_ms, end_ms, error_info)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&t.id)
    .bind(t.customer_id)
    .bind(&t.operation)
    .bind(&t.user_id)
    .bind(&t.target_id)
    .bind(&t.target_uri)
    .bind(t.begin_ms)
    .bind(t.end_ms)
    .bind(&t.error_info)
    .execute(conn)
    .await?;
    Ok(())
}

fn property_from_row(row: &SqliteRow) -> Result<(PropertyRecord, ConfigVersionRecord), sqlx::Error> {
    let version: i64 = row.try_get("version")?;
    Ok((
        PropertyRecord {
            id: row.try_get("id")?,
            customer_id: row.try_get("customer_id")?,
            name: row.try_get("name")?,
            version: version as u64,
        },
        version_from_row(row)?,
    ))
}

fn version_from_row(row: &SqliteRow) -> Result<ConfigVersionRecord, sqlx::Error> {
    let version: i64 = row.try_get("version")?;
    Ok(ConfigVersionRecord {
        version: version as u64,
        etag: row.try_get("etag")?,
        config: row.try_get("config").unwrap_or_default(),
        author: row.try_get("author")?,
        created_ms: row.try_get("created_ms")?,
        comment: row.try_get("comment")?,
    })
}

async fn insert_version(
    conn: &mut sqlx::SqliteConnection,
    property_id: i64,
    v: &ConfigVersionRecord,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO property_versions (property_id, version, etag, config, author, created_ms, comment)
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(property_id)
    .bind(v.version as i64)
    .bind(&v.etag)
    .bind(&v.config)
    .bind(&v.author)
    .bind(v.created_ms)
    .bind(&v.comment)
    .execute(conn)
    .await?;
    Ok(())
}

/// Registers the read-only parts of a version's new nodes.
async fn insert_nodes(conn: &mut sqlx::SqliteConnection, property_id: i64, nodes: &[ReadOnly]) -> StoreResult<()> {
    for n in nodes.iter().filter(|n| !n.key.is_empty()) {
        sqlx::query(
            "INSERT OR IGNORE INTO property_nodes (property_id, key, kind, created, author) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(property_id)
        .bind(&n.key)
        .bind(&n.kind)
        .bind(&n.created)
        .bind(&n.author)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

const PROPERTY_WITH_CURRENT: &str =
    "SELECT p.id, p.customer_id, p.name, p.version, v.etag, v.config, v.author, v.created_ms, v.comment
     FROM properties p JOIN property_versions v ON v.property_id = p.id AND v.version = p.version";

fn purge_from_row(row: &SqliteRow) -> Result<(PurgeRecord, TaskRecord), sqlx::Error> {
    let uri_count: i64 = row.try_get("uri_count")?;
    Ok((
        PurgeRecord {
            id: row.try_get("purge_id")?,
            customer_id: row.try_get("customer_id")?,
            task_id: row.try_get("id")?,
            action: row.try_get("action")?,
            uri_count: uri_count as u64,
            uris: row.try_get("uris")?,
            username: row.try_get("username")?,
        },
        task_from_row(row)?,
    ))
}

const PURGE_WITH_TASK: &str = "SELECT p.id AS purge_id, p.action, p.uri_count, p.uris, p.username, t.*
     FROM purge_transactions p JOIN tasks t ON t.id = p.task_id";

fn list_from_row(row: &SqliteRow) -> Result<NetworkListRecord, sqlx::Error> {
    let count: i64 = row.try_get("entry_count")?;
    Ok(NetworkListRecord {
        id: row.try_get("id")?,
        customer_id: row.try_get("customer_id")?,
        name: row.try_get("name")?,
        list_type: row.try_get("type")?,
        description: row.try_get("description")?,
        deprecated: row.try_get("deprecated")?,
        created_ms: row.try_get("created_ms")?,
        modified_ms: row.try_get("modified_ms")?,
        entry_count: count as u64,
    })
}

const LIST_WITH_COUNT: &str =
    "SELECT l.*, (SELECT COUNT(*) FROM network_list_entries e WHERE e.list_id = l.id) AS entry_count
     FROM network_lists l";

fn entry_from_row(row: &SqliteRow) -> Result<EntryRecord, sqlx::Error> {
    Ok(EntryRecord {
        id: row.try_get("id")?,
        value: row.try_get("value")?,
        added_by: row.try_get("added_by")?,
        created_ms: row.try_get("created_ms")?,
    })
}

/// Inserts entries after the list's last one; returns how many were new.
async fn insert_entries(
    conn: &mut sqlx::SqliteConnection,
    list_id: &str,
    entries: &[EntryRecord],
) -> Result<u64, sqlx::Error> {
    let mut seq: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM network_list_entries WHERE list_id = ?")
        .bind(list_id)
        .fetch_one(&mut *conn)
        .await?;
    let mut added = 0;
    for e in entries {
        seq += 1;
        let done = sqlx::query(
            "INSERT INTO network_list_entries (id, list_id, seq, value, added_by, created_ms) VALUES (?, ?, ?, ?, ?, ?)
             ON CONFLICT (list_id, value) DO NOTHING",
        )
        .bind(&e.id)
        .bind(list_id)
        .bind(seq)
        .bind(&e.value)
        .bind(&e.added_by)
        .bind(e.created_ms)
        .execute(&mut *conn)
        .await?;
        added += done.rows_affected();
    }
    Ok(added)
}

async fn touch_list(conn: &mut sqlx::SqliteConnection, list_id: &str, modified_ms: i64) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE network_lists SET modified_ms = ? WHERE id = ?")
        .bind(modified_ms)
        .bind(list_id)
        .execute(conn)
        .await?;
    Ok(())
}

#[async_trait]
impl Store for SqliteStore {
    async fn customer_count(&self) -> StoreResult<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM customers").fetch_one(&self.pool).await?;
        Ok(n as u64)
    }

    async fn create_customer(
        &self,
        c: NewCustomer,
        users: &[NewUser],
        created_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<Customer> {
        let mut tx = self.write_transaction().await?;
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
        insert_audit(&mut tx, &AuditEvent { customer_id: customer.id, ..audit.clone() }).await?;
        tx.commit().await?;
        Ok(customer)
    }

    async fn customer_by_name(&self, name: &str) -> StoreResult<Option<Customer>> {
        let row = sqlx::query("SELECT * FROM customers WHERE name = ?").bind(name).fetch_optional(&self.pool).await?;
        Ok(row.as_ref().map(customer_from_row).transpose()?)
    }

    async fn create_user(
        &self,
        customer: CustomerId,
        user: &NewUser,
        created_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<UserRecord> {
        let mut tx = self.write_transaction().await?;
        let user = insert_user(&mut tx, customer, user, created_ms).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(user)
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
        page.run(&self.pool, customer, search, offset, limit, user_from_row).await
    }

    async fn update_user(
        &self,
        customer: CustomerId,
        id: &str,
        u: &UserUpdate,
        audit: &AuditEvent,
    ) -> StoreResult<Option<UserRecord>> {
        let mut tx = self.write_transaction().await?;
        let row = sqlx::query(
            "UPDATE users SET username = COALESCE(?, username), full_name = COALESCE(?, full_name),
                              email = COALESCE(?, email), phone_number = COALESCE(?, phone_number),
                              enabled = COALESCE(?, enabled), role = COALESCE(?, role)
             WHERE customer_id = ? AND id = ? RETURNING *",
        )
        .bind(&u.username)
        .bind(&u.full_name)
        .bind(&u.email)
        .bind(&u.phone_number)
        .bind(u.enabled)
        .bind(&u.role)
        .bind(customer)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| if is_unique_violation(&e) { StoreError::Conflict("username") } else { e.into() })?;
        let Some(row) = row else { return Ok(None) };
        let user = user_from_row(&row)?;
        ensure_an_admin(&mut tx, customer).await?;
        if !user.enabled {
            sqlx::query("DELETE FROM sessions WHERE user_id = ?").bind(id).execute(&mut *tx).await?;
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(Some(user))
    }

    async fn delete_user(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query("DELETE FROM users WHERE customer_id = ? AND id = ?")
            .bind(customer)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        ensure_an_admin(&mut tx, customer).await?;
        insert_audit(&mut tx, audit).await?;
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
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query("UPDATE users SET password_hash = ? WHERE customer_id = ? AND id = ?")
            .bind(hash)
            .bind(customer)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query("DELETE FROM sessions WHERE user_id = ? AND token_hash IS NOT ?")
            .bind(user_id)
            .bind(keep_session)
            .execute(&mut *tx)
            .await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn reset_password(&self, r: &PasswordReset, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query("UPDATE users SET password_hash = NULL WHERE customer_id = ? AND id = ?")
            .bind(r.customer_id)
            .bind(&r.user_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query("INSERT INTO password_resets (token_hash, customer_id, user_id, expires_ms) VALUES (?, ?, ?, ?)")
            .bind(&r.token_hash)
            .bind(r.customer_id)
            .bind(&r.user_id)
            .bind(r.expires_ms)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM sessions WHERE user_id = ?").bind(&r.user_id).execute(&mut *tx).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn password_reset(&self, token_hash: &str) -> StoreResult<Option<PasswordReset>> {
        let row = sqlx::query("SELECT * FROM password_resets WHERE token_hash = ?")
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(reset_from_row).transpose()?)
    }

    async fn finish_password_reset(&self, token_hash: &str, hash: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.write_transaction().await?;
        let row = sqlx::query("DELETE FROM password_resets WHERE token_hash = ? RETURNING *")
            .bind(token_hash)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(reset) = row.as_ref().map(reset_from_row).transpose()? else { return Ok(false) };
        sqlx::query("UPDATE users SET password_hash = ? WHERE id = ?")
            .bind(hash)
            .bind(&reset.user_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM password_resets WHERE user_id = ?").bind(&reset.user_id).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM sessions WHERE user_id = ?").bind(&reset.user_id).execute(&mut *tx).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn create_otp_seed(&self, seed: &OtpSeedRecord, audit: &AuditEvent) -> StoreResult<()> {
        let mut tx = self.write_transaction().await?;
        sqlx::query("DELETE FROM otp_seeds WHERE user_id = ?").bind(&seed.user_id).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO otp_seeds (id, user_id, secret, created_ms) VALUES (?, ?, ?, ?)")
            .bind(&seed.id)
            .bind(&seed.user_id)
            .bind(&seed.secret)
            .bind(seed.created_ms)
            .execute(&mut *tx)
            .await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn otp_seed(&self, user_id: &str, seed_id: &str) -> StoreResult<Option<OtpSeedRecord>> {
        let row = sqlx::query("SELECT * FROM otp_seeds WHERE user_id = ? AND id = ?")
            .bind(user_id)
            .bind(seed_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row
            .map(|r| -> Result<_, sqlx::Error> {
                Ok(OtpSeedRecord {
                    id: r.try_get("id")?,
                    user_id: r.try_get("user_id")?,
                    secret: r.try_get("secret")?,
                    created_ms: r.try_get("created_ms")?,
                })
            })
            .transpose()?)
    }

    async fn enable_otp(&self, user_id: &str, secret: &str, last_step: i64, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query(
            "UPDATE users SET otp_enabled = 1, otp_secret = ?, otp_last_step = ? WHERE id = ? AND otp_enabled = 0",
        )
        .bind(secret)
        .bind(last_step)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query("DELETE FROM otp_seeds WHERE user_id = ?").bind(user_id).execute(&mut *tx).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn disable_otp(&self, user_id: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query(
            "UPDATE users SET otp_enabled = 0, otp_secret = NULL, otp_last_step = 0 WHERE id = ? AND otp_enabled = 1",
        )
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn consume_otp_step(&self, user_id: &str, step: i64) -> StoreResult<bool> {
        let done = sqlx::query("UPDATE users SET otp_last_step = ? WHERE id = ? AND otp_last_step < ?")
            .bind(step)
            .bind(user_id)
            .bind(step)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn update_customer(
        &self,
        id: CustomerId,
        change: &AccountChange,
        audit: &AuditEvent,
    ) -> StoreResult<Option<Customer>> {
        let mut tx = self.write_transaction().await?;
        let row = sqlx::query(
            "UPDATE customers SET display_name = COALESCE(?, display_name), contact_email = COALESCE(?, contact_email),
                                  timezone = COALESCE(?, timezone)
             WHERE id = ? RETURNING *",
        )
        .bind(&change.display_name)
        .bind(&change.contact_email)
        .bind(&change.timezone)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(customer) = row.as_ref().map(customer_from_row).transpose()? else { return Ok(None) };
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(Some(customer))
    }

    async fn task(&self, customer: CustomerId, id: &str) -> StoreResult<Option<TaskRecord>> {
        let row = sqlx::query("SELECT * FROM tasks WHERE customer_id = ? AND id = ?")
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(task_from_row).transpose()?)
    }

    async fn tasks(
        &self,
        customer: CustomerId,
        f: &TaskFilter,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<TaskRecord>, u64)> {
        // ?1 customer, ?2 now, ?3 since or NULL, ?4 status or NULL, ?5 operation or NULL. Every task updated after
        // `since` ends after it, which the index on (customer_id, end_ms) finds.
        let filter = "customer_id = ?1
             AND (?3 IS NULL OR (end_ms > ?3 AND (begin_ms <= ?2 OR begin_ms > ?3)))
             AND (?4 IS NULL
                  OR (?4 = 'QUEUED' AND begin_ms > ?2)
                  OR (?4 = 'RUNNING' AND begin_ms <= ?2 AND end_ms > ?2)
                  OR (?4 = 'COMPLETED' AND end_ms <= ?2 AND error_info IS NULL)
                  OR (?4 = 'FAILED' AND end_ms <= ?2 AND error_info IS NOT NULL))
             AND (?5 IS NULL OR operation = ?5)";
        let status = f.status.map(|s| match s {
            TaskStatus::Queued => "QUEUED",
            TaskStatus::Running => "RUNNING",
            TaskStatus::Completed => "COMPLETED",
            TaskStatus::Failed => "FAILED",
        });
        fn bind<'q>(
            sql: &'q str,
            customer: CustomerId,
            f: &'q TaskFilter,
            status: Option<&'static str>,
        ) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>> {
            sqlx::query(sql).bind(customer).bind(f.now_ms).bind(f.since_ms).bind(status).bind(&f.operation)
        }
        let count = format!("SELECT COUNT(*) FROM tasks WHERE {filter}");
        let select = format!("SELECT * FROM tasks WHERE {filter} ORDER BY begin_ms DESC, id DESC LIMIT ?6 OFFSET ?7");
        let total: i64 = bind(&count, customer, f, status).fetch_one(&self.pool).await?.try_get(0)?;
        let rows = bind(&select, customer, f, status)
            .bind(limit.min(i64::MAX as u64) as i64)
            .bind(offset.min(i64::MAX as u64) as i64)
            .fetch_all(&self.pool)
            .await?;
        Ok((rows.iter().map(task_from_row).collect::<Result<_, _>>()?, total as u64))
    }

    async fn prune_tasks(&self, ended_before_ms: i64) -> StoreResult<u64> {
        let batch = "SELECT id FROM tasks WHERE end_ms < ?1 ORDER BY end_ms, id LIMIT 5000";
        let mut total = 0;
        loop {
            let mut tx = self.write_transaction().await?;
            sqlx::query(&format!("DELETE FROM purge_transactions WHERE task_id IN ({batch})"))
                .bind(ended_before_ms)
                .execute(&mut *tx)
                .await?;
            let done = sqlx::query(&format!("DELETE FROM tasks WHERE id IN ({batch})"))
                .bind(ended_before_ms)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            total += done;
            if done == 0 {
                return Ok(total);
            }
        }
    }

    async fn properties(&self, customer: CustomerId) -> StoreResult<Vec<(PropertyRecord, ConfigVersionRecord)>> {
        let rows = sqlx::query(&format!("{PROPERTY_WITH_CURRENT} WHERE p.customer_id = ? ORDER BY p.name"))
            .bind(customer)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(property_from_row).collect::<Result<_, _>>()?)
    }

    async fn property(
        &self,
        customer: CustomerId,
        name: &str,
    ) -> StoreResult<Option<(PropertyRecord, ConfigVersionRecord)>> {
        let row = sqlx::query(&format!("{PROPERTY_WITH_CURRENT} WHERE p.customer_id = ? AND p.name = ?"))
            .bind(customer)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(property_from_row).transpose()?)
    }

    async fn create_property(
        &self,
        customer: CustomerId,
        name: &str,
        first: &ConfigVersionRecord,
        nodes: &[ReadOnly],
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<PropertyRecord> {
        let mut tx = self.write_transaction().await?;
        let id: i64 =
            sqlx::query_scalar("INSERT INTO properties (customer_id, name, version) VALUES (?, ?, ?) RETURNING id")
                .bind(customer)
                .bind(name)
                .bind(first.version as i64)
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| if is_unique_violation(&e) { StoreError::Conflict("property") } else { e.into() })?;
        insert_version(&mut tx, id, first).await?;
        insert_nodes(&mut tx, id, nodes).await?;
        insert_task(&mut tx, task).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(PropertyRecord { id, customer_id: customer, name: name.to_string(), version: first.version })
    }

    async fn update_property_config(
        &self,
        property_id: i64,
        expected_version: u64,
        next: &ConfigVersionRecord,
        new_nodes: &[ReadOnly],
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<bool> {
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query("UPDATE properties SET version = ? WHERE id = ? AND version = ?")
            .bind(next.version as i64)
            .bind(property_id)
            .bind(expected_version as i64)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        insert_version(&mut tx, property_id, next).await?;
        insert_nodes(&mut tx, property_id, new_nodes).await?;
        insert_task(&mut tx, task).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn property_nodes(&self, property_id: i64, keys: &[String]) -> StoreResult<Vec<ReadOnly>> {
        let mut found = Vec::new();
        for chunk in keys.chunks(500) {
            let marks = vec!["?"; chunk.len()].join(", ");
            let sql = format!(
                "SELECT key, kind, created, author FROM property_nodes WHERE property_id = ? AND key IN ({marks})"
            );
            let mut query = sqlx::query(&sql).bind(property_id);
            for key in chunk {
                query = query.bind(key);
            }
            for row in query.fetch_all(&self.pool).await? {
                found.push(ReadOnly {
                    key: row.try_get("key")?,
                    kind: row.try_get("kind")?,
                    created: row.try_get("created")?,
                    author: row.try_get("author")?,
                });
            }
        }
        Ok(found)
    }

    async fn config_versions(&self, property_id: i64) -> StoreResult<Vec<ConfigVersionRecord>> {
        let rows = sqlx::query(
            "SELECT version, etag, author, created_ms, comment FROM property_versions WHERE property_id = ?
             ORDER BY version DESC",
        )
        .bind(property_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(version_from_row).collect::<Result<_, _>>()?)
    }

    async fn config_version(&self, property_id: i64, version: u64) -> StoreResult<Option<ConfigVersionRecord>> {
        let row = sqlx::query("SELECT * FROM property_versions WHERE property_id = ? AND version = ?")
            .bind(property_id)
            .bind(version as i64)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(version_from_row).transpose()?)
    }

    async fn config_version_with_content(&self, property_id: i64, content_hash: &str) -> StoreResult<Option<u64>> {
        // The etag ends with the content hash and its closing quote.
        let version: Option<i64> = sqlx::query_scalar(
            "SELECT version FROM property_versions WHERE property_id = ? AND substr(etag, -17, 16) = ?
             ORDER BY version DESC LIMIT 1",
        )
        .bind(property_id)
        .bind(content_hash)
        .fetch_optional(&self.pool)
        .await?;
        Ok(version.map(|v| v as u64))
    }

    async fn create_purge(&self, purge: &PurgeRecord, task: &TaskRecord, audit: &AuditEvent) -> StoreResult<i64> {
        let mut tx = self.write_transaction().await?;
        insert_task(&mut tx, task).await?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO purge_transactions (customer_id, task_id, action, uri_count, uris, username)
             VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(purge.customer_id)
        .bind(&task.id)
        .bind(&purge.action)
        .bind(purge.uri_count as i64)
        .bind(&purge.uris)
        .bind(&purge.username)
        .fetch_one(&mut *tx)
        .await?;
        insert_audit(&mut tx, &AuditEvent { target_id: id.to_string(), ..audit.clone() }).await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn purge(&self, customer: CustomerId, id: i64) -> StoreResult<Option<(PurgeRecord, TaskRecord)>> {
        let row = sqlx::query(&format!("{PURGE_WITH_TASK} WHERE p.customer_id = ? AND p.id = ?"))
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(purge_from_row).transpose()?)
    }

    async fn recent_purges(&self, customer: CustomerId, limit: u64) -> StoreResult<Vec<(PurgeRecord, TaskRecord)>> {
        let rows = sqlx::query(&format!("{PURGE_WITH_TASK} WHERE p.customer_id = ? ORDER BY p.id DESC LIMIT ?"))
            .bind(customer)
            .bind(limit.min(i64::MAX as u64) as i64)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(purge_from_row).collect::<Result<_, _>>()?)
    }

    async fn network_lists(
        &self,
        customer: CustomerId,
        list_type: Option<&str>,
        include_deprecated: bool,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<NetworkListRecord>, u64)> {
        let filter = "l.customer_id = ?1 AND (?2 IS NULL OR l.type = ?2) AND (?3 OR l.deprecated = 0)";
        let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM network_lists l WHERE {filter}"))
            .bind(customer)
            .bind(list_type)
            .bind(include_deprecated)
            .fetch_one(&self.pool)
            .await?;
        let rows =
            sqlx::query(&format!("{LIST_WITH_COUNT} WHERE {filter} ORDER BY lower(l.name), l.id LIMIT ?4 OFFSET ?5"))
                .bind(customer)
                .bind(list_type)
                .bind(include_deprecated)
                .bind(limit.min(i64::MAX as u64) as i64)
                .bind(offset.min(i64::MAX as u64) as i64)
                .fetch_all(&self.pool)
                .await?;
        Ok((rows.iter().map(list_from_row).collect::<Result<_, _>>()?, total as u64))
    }

    async fn network_list(&self, customer: CustomerId, id: &str) -> StoreResult<Option<NetworkListRecord>> {
        let row = sqlx::query(&format!("{LIST_WITH_COUNT} WHERE l.customer_id = ? AND l.id = ?"))
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(list_from_row).transpose()?)
    }

    async fn create_network_list(
        &self,
        list: &NetworkListRecord,
        entries: &[EntryRecord],
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<()> {
        let mut tx = self.write_transaction().await?;
        sqlx::query(
            "INSERT INTO network_lists (id, customer_id, name, type, description, deprecated, created_ms)
             VALUES (?, ?, ?, ?, ?, 0, ?)",
        )
        .bind(&list.id)
        .bind(list.customer_id)
        .bind(&list.name)
        .bind(&list.list_type)
        .bind(&list.description)
        .bind(list.created_ms)
        .execute(&mut *tx)
        .await?;
        insert_entries(&mut tx, &list.id, entries).await?;
        insert_task(&mut tx, task).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn update_network_list(
        &self,
        customer: CustomerId,
        id: &str,
        u: &NetworkListUpdate,
        modified_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<Option<NetworkListRecord>> {
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query(
            "UPDATE network_lists SET name = COALESCE(?, name), description = COALESCE(?, description),
                    deprecated = COALESCE(?, deprecated), modified_ms = ?
             WHERE customer_id = ? AND id = ?",
        )
        .bind(&u.name)
        .bind(&u.description)
        .bind(u.deprecated)
        .bind(modified_ms)
        .bind(customer)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        self.network_list(customer, id).await
    }

    async fn delete_network_list(
        &self,
        customer: CustomerId,
        id: &str,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<bool> {
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query("DELETE FROM network_lists WHERE customer_id = ? AND id = ?")
            .bind(customer)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        insert_task(&mut tx, task).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn add_entries(
        &self,
        list_id: &str,
        entries: &[EntryRecord],
        max_entries: u64,
        modified_ms: i64,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<AddedEntries> {
        let mut tx = self.write_transaction().await?;
        let added = insert_entries(&mut tx, list_id, entries).await?;
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM network_list_entries WHERE list_id = ?")
            .bind(list_id)
            .fetch_one(&mut *tx)
            .await?;
        if count as u64 > max_entries {
            return Err(StoreError::Limit(format!(
                "The list would hold {count} entries; at most {max_entries} are allowed ({} new entries refused).",
                added
            )));
        }
        if added > 0 {
            touch_list(&mut tx, list_id, modified_ms).await?;
        }
        insert_task(&mut tx, task).await?;
        let already_present = entries.len() as u64 - added;
        insert_audit(&mut tx, &audit.clone().detail("added", added).detail("already_present", already_present)).await?;
        tx.commit().await?;
        Ok(AddedEntries { added, already_present })
    }

    async fn entries(
        &self,
        list_id: &str,
        search: Option<&str>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<EntryRecord>, u64)> {
        let page = Search { table: "network_list_entries", owner: "list_id", columns: &["value"], order: "seq" };
        page.run(&self.pool, list_id.to_string(), search, offset, limit, entry_from_row).await
    }

    async fn entry_values(&self, list_id: &str) -> StoreResult<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT value FROM network_list_entries WHERE list_id = ? ORDER BY seq")
            .bind(list_id)
            .fetch_all(&self.pool)
            .await?)
    }

    async fn entry(&self, list_id: &str, entry_id: &str) -> StoreResult<Option<EntryRecord>> {
        let row = sqlx::query("SELECT * FROM network_list_entries WHERE list_id = ? AND id = ?")
            .bind(list_id)
            .bind(entry_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.as_ref().map(entry_from_row).transpose()?)
    }

    async fn delete_entry(
        &self,
        list_id: &str,
        entry_id: &str,
        modified_ms: i64,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<bool> {
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query("DELETE FROM network_list_entries WHERE list_id = ? AND id = ?")
            .bind(list_id)
            .bind(entry_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        touch_list(&mut tx, list_id, modified_ms).await?;
        insert_task(&mut tx, task).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn clear_entries(
        &self,
        list_id: &str,
        modified_ms: i64,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<u64> {
        let mut tx = self.write_transaction().await?;
        let done =
            sqlx::query("DELETE FROM network_list_entries WHERE list_id = ?").bind(list_id).execute(&mut *tx).await?;
        touch_list(&mut tx, list_id, modified_ms).await?;
        insert_task(&mut tx, task).await?;
        insert_audit(&mut tx, &audit.clone().detail("removed", done.rows_affected())).await?;
        tx.commit().await?;
        Ok(done.rows_affected())
    }

    async fn identity_sources(&self, customer: CustomerId) -> StoreResult<Vec<(String, String)>> {
        let rows = sqlx::query("SELECT id, configuration FROM identity_sources WHERE customer_id = ? ORDER BY id")
            .bind(customer)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| Ok((r.try_get("id")?, r.try_get("configuration")?)))
            .collect::<Result<Vec<_>, sqlx::Error>>()?)
    }

    async fn add_identity_source(
        &self,
        customer: CustomerId,
        id: &str,
        configuration: &str,
        audit: &AuditEvent,
    ) -> StoreResult<()> {
        let mut tx = self.write_transaction().await?;
        sqlx::query("INSERT INTO identity_sources (customer_id, id, configuration) VALUES (?, ?, ?)")
            .bind(customer)
            .bind(id)
            .bind(configuration)
            .execute(&mut *tx)
            .await
            .map_err(|e| if is_unique_violation(&e) { StoreError::Conflict("identity source") } else { e.into() })?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn create_session(&self, s: &SessionRecord, audit: &AuditEvent) -> StoreResult<()> {
        let mut tx = self.write_transaction().await?;
        sqlx::query(
            "INSERT INTO sessions (token_hash, customer_id, user_id, created_ms, last_seen_ms) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(&s.token_hash)
        .bind(s.customer_id)
        .bind(&s.user_id)
        .bind(s.created_ms)
        .bind(s.last_seen_ms)
        .execute(&mut *tx)
        .await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn session_with_user(&self, token_hash: &str) -> StoreResult<Option<(SessionRecord, Customer, UserRecord)>> {
        let row = sqlx::query(
            "SELECT u.*, s.token_hash, s.user_id, s.created_ms AS s_created_ms, s.last_seen_ms,
                    c.name AS c_name, c.display_name AS c_display_name, c.contact_email AS c_contact_email,
                    c.timezone AS c_timezone, c.created_ms AS c_created_ms
             FROM sessions s
             JOIN users u ON u.id = s.user_id AND u.customer_id = s.customer_id
             JOIN customers c ON c.id = s.customer_id
             WHERE s.token_hash = ?",
        )
        .bind(token_hash)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let user = user_from_row(&row)?;
        let session = SessionRecord {
            token_hash: row.try_get("token_hash")?,
            customer_id: user.customer_id,
            user_id: row.try_get("user_id")?,
            created_ms: row.try_get("s_created_ms")?,
            last_seen_ms: row.try_get("last_seen_ms")?,
        };
        let customer = Customer {
            id: user.customer_id,
            name: row.try_get("c_name")?,
            display_name: row.try_get("c_display_name")?,
            contact_email: row.try_get("c_contact_email")?,
            timezone: row.try_get("c_timezone")?,
            created_ms: row.try_get("c_created_ms")?,
        };
        Ok(Some((session, customer, user)))
    }

    async fn user_sessions(
        &self,
        user_id: &str,
        idle_after_ms: i64,
        created_after_ms: i64,
        limit: u32,
    ) -> StoreResult<(Vec<SessionRecord>, u64)> {
        const LIVE: &str = "user_id = ? AND last_seen_ms > ? AND created_ms > ?";
        let rows = sqlx::query(&format!(
            "SELECT token_hash, customer_id, user_id, created_ms, last_seen_ms FROM sessions
             WHERE {LIVE} ORDER BY last_seen_ms DESC, token_hash LIMIT ?"
        ))
        .bind(user_id)
        .bind(idle_after_ms)
        .bind(created_after_ms)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM sessions WHERE {LIVE}"))
            .bind(user_id)
            .bind(idle_after_ms)
            .bind(created_after_ms)
            .fetch_one(&self.pool)
            .await?;
        let sessions = rows
            .iter()
            .map(|row| {
                Ok(SessionRecord {
                    token_hash: row.try_get("token_hash")?,
                    customer_id: row.try_get("customer_id")?,
                    user_id: row.try_get("user_id")?,
                    created_ms: row.try_get("created_ms")?,
                    last_seen_ms: row.try_get("last_seen_ms")?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        Ok((sessions, total.max(0) as u64))
    }

    async fn touch_session(&self, token_hash: &str, last_seen_ms: i64) -> StoreResult<()> {
        sqlx::query("UPDATE sessions SET last_seen_ms = MAX(last_seen_ms, ?) WHERE token_hash = ?")
            .bind(last_seen_ms)
            .bind(token_hash)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn delete_session(&self, token_hash: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.write_transaction().await?;
        let done = sqlx::query("DELETE FROM sessions WHERE token_hash = ?").bind(token_hash).execute(&mut *tx).await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn purge_sessions(&self, idle_before_ms: i64, created_before_ms: i64, now_ms: i64) -> StoreResult<u64> {
        let mut tx = self.write_transaction().await?;
        let rows = sqlx::query(
            "DELETE FROM sessions WHERE last_seen_ms < ? OR created_ms < ?
             RETURNING token_hash, customer_id, user_id,
                       (SELECT username FROM users u WHERE u.id = sessions.user_id) AS username",
        )
        .bind(idle_before_ms)
        .bind(created_before_ms)
        .fetch_all(&mut *tx)
        .await?;
        for row in &rows {
            let token_hash: String = row.try_get("token_hash")?;
            let username: Option<String> = row.try_get("username")?;
            let target = crate::audit::Target::session(&token_hash, username.as_deref().unwrap_or_default());
            let event =
                AuditEvent::system(row.try_get("customer_id")?, now_ms, crate::audit::op::SESSION_EXPIRE, target);
            insert_audit(&mut tx, &event).await?;
        }
        tx.commit().await?;
        Ok(rows.len() as u64)
    }

    async fn record_audit(&self, event: &AuditEvent) -> StoreResult<()> {
        let mut conn = self.pool.acquire().await?;
        insert_audit(&mut conn, event).await?;
        Ok(())
    }

    async fn audit_records(
        &self,
        customer: CustomerId,
        f: &AuditFilter,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<AuditEntry>, u64)> {
        let filter = "a.customer_id = ?1 AND (?2 IS NULL OR a.time_ms >= ?2) AND (?3 IS NULL OR a.time_ms < ?3)
             AND (?4 IS NULL OR a.actor_id = ?4 OR a.actor_name = ?4)
             AND (?5 IS NULL OR a.operation = ?5 OR a.operation LIKE ?6 ESCAPE '\\')
             AND (?7 IS NULL OR a.target_type = ?7) AND (?8 IS NULL OR a.target_id = ?8)";
        let prefix = f.operation.as_deref().map(|op| format!("{}.%", escape_like(op)));
        let count = format!("SELECT COUNT(*) FROM audit_log a WHERE {filter}");
        let total: i64 = audit_filter(&count, customer, f, &prefix).fetch_one(&self.pool).await?.try_get(0)?;
        let select = format!(
            "SELECT a.*, {TARGET_EXISTS} AS target_exists FROM audit_log a WHERE {filter}
             ORDER BY a.time_ms DESC, a.id DESC LIMIT ?9 OFFSET ?10"
        );
        let rows = audit_filter(&select, customer, f, &prefix)
            .bind(limit.min(i64::MAX as u64) as i64)
            .bind(offset.min(i64::MAX as u64) as i64)
            .fetch_all(&self.pool)
            .await?;
        Ok((rows.iter().map(audit_from_row).collect::<Result<_, _>>()?, total as u64))
    }

    async fn prune_audit(&self, before_ms: i64) -> StoreResult<u64> {
        prune_in_batches(&self.pool, "audit_log", "time_ms", before_ms).await
    }
}
