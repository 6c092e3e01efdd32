//! [`SqlStore`]: the one implementation of [`Store`], over SQLite (the embedded default) or PostgreSQL (shared
//! by replicas). The SQL is written once for both (see [`super::db`]); each store's schema is in its own
//! migrations (`server/migrations/sqlite`, `server/migrations/postgres`).

use async_trait::async_trait;

use super::{
    db::{Db, Kind, Query, Row, Tx, query},
    *,
};
use crate::throttle::policy::{self as throttle, Count, Decision, Lockout, LoginKey, Outcome};

pub struct SqlStore {
    db: Db,
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
struct Search<'a> {
    table: &'a str,
    owner: &'a str,
    columns: &'a [&'a str],
    order: &'a str,
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

    async fn run<T>(
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
async fn filtered_page<T>(
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
fn escape_like(text: &str) -> String {
    text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// Rows deleted by one transaction of a prune: few enough that writers waiting for the lock are not held up
/// long.
const PRUNE_BATCH: i64 = 5000;

/// Deletes the rows of `table` whose `column` is below `before`, in batches, one replica at a time (the job's
/// lock); returns how many.
async fn prune_in_batches(db: &Db, table: &str, key: &str, column: &str, before: i64) -> StoreResult<u64> {
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

async fn insert_audit(tx: &mut Tx, e: &AuditEvent) -> StoreResult<()> {
    audit_insert(e).execute(tx).await?;
    Ok(())
}

fn audit_insert(e: &AuditEvent) -> Query {
    let e = &e.clone().bounded();
    let (actor_type, actor_id, actor_name) = match &e.actor {
        Actor::User { id, name } => ("user", Some(id.as_str()), name.as_str()),
        Actor::Unknown(name) => ("user", None, name.as_str()),
        Actor::System => ("system", None, "system"),
    };
    query(
        "INSERT INTO audit_log (customer_id, time_ms, actor_type, actor_id, actor_name, source, operation,
                                target_type, target_id, target_name, success, details, public_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
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
    // Random, not the row's number: a global sequence would tell a customer how much the others do.
    .bind(new_id())
}

/// Whether an audit record's target still exists (`a` is the record).
const TARGET_EXISTS: &str = "CASE a.target_type
    WHEN 'user' THEN EXISTS (SELECT 1 FROM users t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'property' THEN EXISTS
        (SELECT 1 FROM properties t WHERE t.customer_id = a.customer_id AND t.name = a.target_id)
    WHEN 'network_list' THEN EXISTS
        (SELECT 1 FROM network_lists t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'purge' THEN EXISTS
        (SELECT 1 FROM purge_transactions t
         WHERE t.customer_id = a.customer_id AND CAST(t.number AS TEXT) = a.target_id)
    WHEN 'identity_source' THEN EXISTS
        (SELECT 1 FROM identity_sources t WHERE t.customer_id = a.customer_id AND t.id = a.target_id)
    WHEN 'account' THEN TRUE
    ELSE FALSE END";

/// `sql` with the parameters $1 to $8 of an audit filter bound.
fn audit_filter(sql: String, customer: CustomerId, f: &AuditFilter, operation_prefix: &Option<String>) -> Query {
    query(sql)
        .bind(customer)
        .bind(f.from_ms)
        .bind(f.to_ms)
        .bind(&f.actor)
        .bind(&f.operation)
        .bind(operation_prefix)
        .bind(&f.target_type)
        .bind(&f.target_id)
}

fn audit_from_row(row: &Row) -> Result<AuditEntry, sqlx::Error> {
    let actor_type: String = row.get("actor_type")?;
    let actor_id: Option<String> = row.get("actor_id")?;
    let actor_name: String = row.get("actor_name")?;
    let actor = match (actor_type.as_str(), actor_id) {
        ("system", _) => Actor::System,
        (_, Some(id)) => Actor::User { id, name: actor_name },
        (_, None) => Actor::Unknown(actor_name),
    };
    let details: String = row.get("details")?;
    Ok(AuditEntry {
        id: row.get("public_id")?,
        event: AuditEvent {
            customer_id: row.get("customer_id")?,
            time_ms: row.get("time_ms")?,
            actor,
            source: row.get("source")?,
            operation: row.get("operation")?,
            target_type: row.get("target_type")?,
            target_id: row.get("target_id")?,
            target_name: row.get("target_name")?,
            success: row.get("success")?,
            details: serde_json::from_str(&details).unwrap_or_default(),
        },
        target_exists: row.get("target_exists")?,
    })
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// `e` as a [`StoreError::Conflict`] on `what` when a uniqueness rule refused the write.
fn conflict(what: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |e| if is_unique_violation(&e) { StoreError::Conflict(what) } else { e.into() }
}

fn customer_from_row(row: &Row) -> Result<Customer, sqlx::Error> {
    Ok(Customer {
        id: row.get("id")?,
        name: row.get("name")?,
        display_name: row.get("display_name")?,
        contact_email: row.get("contact_email")?,
        timezone: row.get("timezone")?,
        created_ms: row.get("created_ms")?,
    })
}

fn user_from_row(row: &Row) -> Result<UserRecord, sqlx::Error> {
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

fn session_from_row(row: &Row) -> Result<SessionRecord, sqlx::Error> {
    Ok(SessionRecord {
        token_hash: row.get("token_hash")?,
        customer_id: row.get("customer_id")?,
        user_id: row.get("user_id")?,
        created_ms: row.get("created_ms")?,
        last_seen_ms: row.get("last_seen_ms")?,
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

/// Fails the transaction's change when no enabled administrator would remain. The transaction holds the
/// customer's row (see [`Tx::lock_row`]), so two changes cannot each leave the other's administrator alone.
async fn ensure_an_admin(tx: &mut Tx, customer: CustomerId) -> StoreResult<()> {
    let admins: i64 = query("SELECT COUNT(*) FROM users WHERE customer_id = $1 AND role = 'admin' AND enabled = TRUE")
        .bind(customer)
        .scalar(tx)
        .await?;
    if admins == 0 { Err(StoreError::LastAdmin) } else { Ok(()) }
}

async fn insert_user(tx: &mut Tx, customer: CustomerId, u: &NewUser, created_ms: i64) -> StoreResult<UserRecord> {
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

fn task_from_row(row: &Row) -> Result<TaskRecord, sqlx::Error> {
    Ok(TaskRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        operation: row.get("operation")?,
        user_id: row.get("user_id")?,
        target_id: row.get("target_id")?,
        target_uri: row.get("target_uri")?,
        begin_ms: row.get("begin_ms")?,
        end_ms: row.get("end_ms")?,
        error_info: row.get("error_info")?,
    })
}

async fn insert_task(tx: &mut Tx, t: &TaskRecord) -> Result<(), sqlx::Error> {
    query(
        "INSERT INTO tasks (id, customer_id, operation, user_id, target_id, target_uri, begin_ms, end_ms, error_info)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
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
    .execute(tx)
    .await?;
    Ok(())
}

fn property_from_row(row: &Row) -> Result<(PropertyRecord, ConfigVersionRecord), sqlx::Error> {
    let version: i64 = row.get("version")?;
    Ok((
        PropertyRecord {
            id: row.get("id")?,
            customer_id: row.get("customer_id")?,
            name: row.get("name")?,
            version: version as u64,
        },
        version_from_row(row)?,
    ))
}

fn version_from_row(row: &Row) -> Result<ConfigVersionRecord, sqlx::Error> {
    let version: i64 = row.get("version")?;
    Ok(ConfigVersionRecord {
        version: version as u64,
        etag: row.get("etag")?,
        config: if row.has("config") { row.get("config")? } else { String::new() },
        author: row.get("author")?,
        created_ms: row.get("created_ms")?,
        comment: row.get("comment")?,
    })
}

async fn insert_version(tx: &mut Tx, property_id: i64, v: &ConfigVersionRecord) -> Result<(), sqlx::Error> {
    query(
        "INSERT INTO property_versions (property_id, version, etag, config, author, created_ms, comment)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(property_id)
    .bind(v.version)
    .bind(&v.etag)
    .bind(&v.config)
    .bind(&v.author)
    .bind(v.created_ms)
    .bind(&v.comment)
    .execute(tx)
    .await?;
    Ok(())
}

/// Registers the read-only parts of a version's new nodes.
async fn insert_nodes(tx: &mut Tx, property_id: i64, nodes: &[ReadOnly]) -> StoreResult<()> {
    for n in nodes.iter().filter(|n| !n.key.is_empty()) {
        query(
            "INSERT INTO property_nodes (property_id, key, kind, created, author) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT DO NOTHING",
        )
        .bind(property_id)
        .bind(&n.key)
        .bind(&n.kind)
        .bind(&n.created)
        .bind(&n.author)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

/// The host patterns of a stored configuration (JSON), which its property claims.
fn hosts_of(config: &str) -> StoreResult<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Hosts {
        #[serde(default)]
        host_patterns: Vec<Pattern>,
    }
    #[derive(serde::Deserialize)]
    struct Pattern {
        pattern: String,
    }
    let hosts: Hosts = serde_json::from_str(config).map_err(|e| anyhow::anyhow!("a configuration to store: {e}"))?;
    Ok(hosts.host_patterns.into_iter().map(|h| h.pattern).collect())
}

/// The wildcard patterns that cover `pattern`: for `a.b.example.com` (or `*.b.example.com`) they are
/// `*.b.example.com`, `*.example.com` and `*.com`.
fn covering_wildcards(pattern: &str) -> Vec<String> {
    let host = pattern.strip_prefix("*.").unwrap_or(pattern);
    let mut covering = Vec::new();
    let mut rest = host;
    while let Some((_, parent)) = rest.split_once('.') {
        covering.push(format!("*.{parent}"));
        rest = parent;
    }
    covering
}

/// Makes `hosts` the host patterns claimed by property `property_id` of `customer`, in the transaction that
/// stores its configuration: claims it no longer lists are released; a new one is refused
/// ([`StoreError::HostClaimed`]) when another property of the customer claims the same pattern, or another
/// customer claims the same, a covering or a covered one. On PostgreSQL every claim takes one advisory lock,
/// so two customers cannot claim overlapping patterns at once; SQLite's writers run one at a time.
async fn claim_hosts(tx: &mut Tx, customer: CustomerId, property_id: i64, hosts: &[String]) -> StoreResult<()> {
    tx.lock_keys(&["host_claims"]).await?;
    let held: Vec<String> = query("SELECT pattern FROM host_claims WHERE property_id = $1")
        .bind(property_id)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| r.at(0))
        .collect::<Result<_, _>>()?;
    let wanted: std::collections::HashSet<&str> = hosts.iter().map(String::as_str).collect();
    for gone in held.iter().filter(|h| !wanted.contains(h.as_str())) {
        query("DELETE FROM host_claims WHERE pattern = $1").bind(gone).execute(&mut *tx).await?;
    }
    let held: std::collections::HashSet<&str> = held.iter().map(String::as_str).collect();
    let mut new: Vec<&str> = wanted.into_iter().filter(|h| !held.contains(h)).collect();
    new.sort_unstable();
    let taken = |pattern: &str, theirs: &str, other_customer: bool| {
        let by = if other_customer { "another account" } else { "another property of this account" };
        StoreError::HostClaimed(if pattern == theirs {
            format!("{pattern} is claimed by {by}")
        } else {
            format!("{pattern} overlaps {theirs}, which is claimed by {by}")
        })
    };
    for chunk in new.chunks(200) {
        // The same pattern anywhere, or a wildcard covering it at another customer.
        let mut candidates: Vec<String> = Vec::new();
        for p in chunk {
            candidates.push(p.to_string());
            candidates.extend(covering_wildcards(p));
        }
        candidates.sort_unstable();
        candidates.dedup();
        let marks: Vec<String> = (0..candidates.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "SELECT pattern, customer_id FROM host_claims WHERE property_id <> $1 AND pattern IN ({})",
            marks.join(", ")
        );
        let rows = candidates.iter().fold(query(sql).bind(property_id), |q, c| q.bind(c)).fetch_all(&mut *tx).await?;
        for row in &rows {
            let (theirs, owner): (String, i64) = (row.get("pattern")?, row.get("customer_id")?);
            for p in chunk {
                let same = *p == theirs;
                let covered = covering_wildcards(p).contains(&theirs);
                if same || (covered && owner != customer) {
                    return Err(taken(p, &theirs, owner != customer));
                }
            }
        }
        // What a new wildcard covers at another customer.
        for p in chunk.iter().filter(|p| p.starts_with("*.")) {
            let under = format!("%{}", escape_like(&p[1..]));
            let theirs: Option<String> = query(
                "SELECT pattern FROM host_claims WHERE customer_id <> $1 AND pattern LIKE $2 ESCAPE '\\'
                 ORDER BY pattern LIMIT 1",
            )
            .bind(customer)
            .bind(under)
            .optional_scalar(&mut *tx)
            .await?;
            if let Some(theirs) = theirs {
                return Err(taken(p, &theirs, true));
            }
        }
        for p in chunk {
            query("INSERT INTO host_claims (pattern, customer_id, property_id) VALUES ($1, $2, $3)")
                .bind(*p)
                .bind(customer)
                .bind(property_id)
                .execute(&mut *tx)
                .await?;
        }
    }
    Ok(())
}

const PROPERTY_WITH_CURRENT: &str =
    "SELECT p.id, p.customer_id, p.name, p.version, v.etag, v.config, v.author, v.created_ms, v.comment
     FROM properties p JOIN property_versions v ON v.property_id = p.id AND v.version = p.version";

fn purge_from_row(row: &Row) -> Result<(PurgeRecord, TaskRecord), sqlx::Error> {
    let uri_count: i64 = row.get("uri_count")?;
    Ok((
        PurgeRecord {
            id: row.get("purge_number")?,
            customer_id: row.get("customer_id")?,
            task_id: row.get("id")?,
            action: row.get("action")?,
            uri_count: uri_count as u64,
            uris: row.get("uris")?,
            username: row.get("username")?,
        },
        task_from_row(row)?,
    ))
}

const PURGE_WITH_TASK: &str = "SELECT p.number AS purge_number, p.action, p.uri_count, p.uris, p.username, t.*
     FROM purge_transactions p JOIN tasks t ON t.id = p.task_id";

fn list_from_row(row: &Row) -> Result<NetworkListRecord, sqlx::Error> {
    let count: i64 = row.get("entry_count")?;
    Ok(NetworkListRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        name: row.get("name")?,
        list_type: row.get("type")?,
        description: row.get("description")?,
        deprecated: row.get("deprecated")?,
        created_ms: row.get("created_ms")?,
        modified_ms: row.get("modified_ms")?,
        entry_count: count as u64,
    })
}

const LIST_WITH_COUNT: &str =
    "SELECT l.*, (SELECT COUNT(*) FROM network_list_entries e WHERE e.list_id = l.id) AS entry_count
     FROM network_lists l";

fn entry_from_row(row: &Row) -> Result<EntryRecord, sqlx::Error> {
    Ok(EntryRecord {
        id: row.get("id")?,
        value: row.get("value")?,
        added_by: row.get("added_by")?,
        created_ms: row.get("created_ms")?,
    })
}

/// Inserts entries after the list's last one; returns how many were new. The transaction holds the list's row.
async fn insert_entries(tx: &mut Tx, list_id: &str, entries: &[EntryRecord]) -> Result<u64, sqlx::Error> {
    let mut seq: i64 = query("SELECT COALESCE(MAX(seq), 0) FROM network_list_entries WHERE list_id = $1")
        .bind(list_id)
        .scalar(&mut *tx)
        .await?;
    let mut added = 0;
    for e in entries {
        seq += 1;
        added += query(
            "INSERT INTO network_list_entries (id, list_id, seq, value, added_by, created_ms)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (list_id, value) DO NOTHING",
        )
        .bind(&e.id)
        .bind(list_id)
        .bind(seq)
        .bind(&e.value)
        .bind(&e.added_by)
        .bind(e.created_ms)
        .execute(&mut *tx)
        .await?;
    }
    Ok(added)
}

async fn touch_list(tx: &mut Tx, list_id: &str, modified_ms: i64) -> Result<(), sqlx::Error> {
    query("UPDATE network_lists SET modified_ms = $1 WHERE id = $2")
        .bind(modified_ms)
        .bind(list_id)
        .execute(tx)
        .await?;
    Ok(())
}

/// The queries of what is stored of `keys` (see [`LoginKey::stored`]) at `now_ms`: their failures, and their
/// pending reservations; read by [`throttle_counts`].
fn throttle_queries(keys: &[Option<String>; 4], now_ms: i64) -> (Query, Query) {
    let failures = query("SELECT key, failures, last_ms FROM login_failures WHERE key IN ($1, $2, $3, $4)");
    let failures = keys.iter().fold(failures, |q, k| q.bind(k.as_deref()));
    let pending = query(
        "SELECT (SELECT COUNT(*) FROM login_pending WHERE pair_key = $1 AND expires_ms > $5),
                (SELECT COUNT(*) FROM login_pending WHERE addr_key = $2 AND expires_ms > $5),
                (SELECT COUNT(*) FROM login_pending WHERE user_key = $3 AND expires_ms > $5),
                (SELECT COUNT(*) FROM login_pending WHERE code_key = $4 AND expires_ms > $5)",
    );
    let pending = keys.iter().fold(pending, |q, k| q.bind(k.as_deref())).bind(now_ms);
    (failures, pending)
}

/// What the stored counts of `keys` say at `now_ms`: failures still in the window, pending reservations.
fn throttle_counts(
    keys: &[Option<String>; 4],
    rows: &[Row],
    pending: &Row,
    now_ms: i64,
) -> StoreResult<[Option<Count>; 4]> {
    let mut counts: [Option<Count>; 4] = [None; 4];
    for (i, key) in keys.iter().enumerate() {
        let Some(key) = key else { continue };
        let pending: i64 = pending.at(i)?;
        let stored = rows.iter().find(|r| r.get::<String>("key").is_ok_and(|k| k == *key));
        let (failures, last_ms) = match stored {
            Some(r) => (r.get::<i64>("failures")?, r.get::<i64>("last_ms")?),
            None if pending == 0 => continue,
            None => (0, now_ms),
        };
        counts[i] =
            Some(Count { failures: failures.clamp(0, u32::MAX.into()) as u32, pending: pending as u32, last_ms });
    }
    Ok(counts)
}

/// The present keys of an attempt, as strings.
fn present(keys: &[Option<String>; 4]) -> Vec<&str> {
    keys.iter().flatten().map(String::as_str).collect()
}

/// `tokens` of the purge bucket (thousandths of a request) after refilling from `at_ms` to `$2`, capped at the
/// burst.
fn refilled(tokens: &str, at: &str) -> String {
    use crate::throttle::policy::purge::{BURST_MILLI, MILLI_PER_MS};
    let gained = format!("{MILLI_PER_MS} * (CASE WHEN $2 > {at} THEN $2 - {at} ELSE 0 END)");
    format!("(CASE WHEN {tokens} + {gained} > {BURST_MILLI} THEN {BURST_MILLI} ELSE {tokens} + {gained} END)")
}

#[async_trait]
impl Store for SqlStore {
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

    async fn customer_count(&self) -> StoreResult<u64> {
        let n: i64 = query("SELECT COUNT(*) FROM customers").scalar(&self.db).await?;
        Ok(n as u64)
    }

    async fn create_customer(
        &self,
        c: NewCustomer,
        users: &[NewUser],
        created_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<Customer> {
        let mut tx = self.db.begin().await?;
        let row = query(
            "INSERT INTO customers (name, display_name, contact_email, created_ms) VALUES ($1, $2, $3, $4)
             RETURNING *",
        )
        .bind(&c.name)
        .bind(&c.display_name)
        .bind(&c.contact_email)
        .bind(created_ms)
        .fetch_one(&mut tx)
        .await
        .map_err(conflict("customer"))?;
        let customer = customer_from_row(&row)?;
        for user in users {
            insert_user(&mut tx, customer.id, user, created_ms).await?;
        }
        insert_audit(&mut tx, &AuditEvent { customer_id: customer.id, ..audit.clone() }).await?;
        tx.commit().await?;
        Ok(customer)
    }

    async fn customer_by_name(&self, name: &str) -> StoreResult<Option<Customer>> {
        let row = query("SELECT * FROM customers WHERE name = $1").bind(name).fetch_optional(&self.db).await?;
        Ok(row.as_ref().map(customer_from_row).transpose()?)
    }

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
        if !user.enabled {
            query("DELETE FROM sessions WHERE user_id = $1").bind(id).execute(&mut tx).await?;
        }
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(Some(user))
    }

    async fn delete_user(&self, customer: CustomerId, id: &str, audit: &AuditEvent) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        tx.lock_row("customers", "id", customer).await?;
        let done = query("DELETE FROM users WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .execute(&mut tx)
            .await?;
        if done == 0 {
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

    async fn update_customer(
        &self,
        id: CustomerId,
        change: &AccountChange,
        audit: &AuditEvent,
    ) -> StoreResult<Option<Customer>> {
        let mut tx = self.db.begin().await?;
        let row = query(
            "UPDATE customers SET display_name = COALESCE($1, display_name),
                                  contact_email = COALESCE($2, contact_email), timezone = COALESCE($3, timezone)
             WHERE id = $4 RETURNING *",
        )
        .bind(&change.display_name)
        .bind(&change.contact_email)
        .bind(&change.timezone)
        .bind(id)
        .fetch_optional(&mut tx)
        .await?;
        let Some(customer) = row.as_ref().map(customer_from_row).transpose()? else { return Ok(None) };
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(Some(customer))
    }

    async fn task(&self, customer: CustomerId, id: &str) -> StoreResult<Option<TaskRecord>> {
        let row = query("SELECT * FROM tasks WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.db)
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
        // $1 customer, $2 now, $3 since or NULL, $4 status or NULL, $5 operation or NULL. Every task updated after
        // `since` ends after it, which the index on (customer_id, end_ms) finds.
        let filter = "customer_id = $1
             AND ($3 IS NULL OR (end_ms > $3 AND (begin_ms <= $2 OR begin_ms > $3)))
             AND ($4 IS NULL
                  OR ($4 = 'QUEUED' AND begin_ms > $2)
                  OR ($4 = 'RUNNING' AND begin_ms <= $2 AND end_ms > $2)
                  OR ($4 = 'COMPLETED' AND end_ms <= $2 AND error_info IS NULL)
                  OR ($4 = 'FAILED' AND end_ms <= $2 AND error_info IS NOT NULL))
             AND ($5 IS NULL OR operation = $5)";
        let status = f.status.map(|s| match s {
            TaskStatus::Queued => "QUEUED",
            TaskStatus::Running => "RUNNING",
            TaskStatus::Completed => "COMPLETED",
            TaskStatus::Failed => "FAILED",
        });
        let bound =
            |sql: String| query(sql).bind(customer).bind(f.now_ms).bind(f.since_ms).bind(status).bind(&f.operation);
        let count = format!("SELECT COUNT(*) FROM tasks WHERE {filter}");
        let page = format!("SELECT * FROM tasks WHERE {filter} ORDER BY begin_ms DESC, id DESC LIMIT $6 OFFSET $7");
        filtered_page(&self.db, bound, count, page, (limit, offset), task_from_row).await
    }

    async fn prune_tasks(&self, ended_before_ms: i64) -> StoreResult<u64> {
        let batch = format!("SELECT id FROM tasks WHERE end_ms < $1 ORDER BY end_ms, id LIMIT {PRUNE_BATCH}");
        let mut total = 0;
        loop {
            let mut tx = self.db.begin().await?;
            tx.lock_keys(&["job:prune:tasks"]).await?;
            query(format!("DELETE FROM purge_transactions WHERE task_id IN ({batch})"))
                .bind(ended_before_ms)
                .execute(&mut tx)
                .await?;
            let done = query(format!("DELETE FROM tasks WHERE id IN ({batch})"))
                .bind(ended_before_ms)
                .execute(&mut tx)
                .await?;
            tx.commit().await?;
            total += done;
            if done == 0 {
                return Ok(total);
            }
        }
    }

    async fn properties(&self, customer: CustomerId) -> StoreResult<Vec<(PropertyRecord, ConfigVersionRecord)>> {
        let rows = query(format!("{PROPERTY_WITH_CURRENT} WHERE p.customer_id = $1 ORDER BY p.name"))
            .bind(customer)
            .fetch_all(&self.db)
            .await?;
        Ok(rows.iter().map(property_from_row).collect::<Result<_, _>>()?)
    }

    async fn property(
        &self,
        customer: CustomerId,
        name: &str,
    ) -> StoreResult<Option<(PropertyRecord, ConfigVersionRecord)>> {
        let row = query(format!("{PROPERTY_WITH_CURRENT} WHERE p.customer_id = $1 AND p.name = $2"))
            .bind(customer)
            .bind(name)
            .fetch_optional(&self.db)
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
        let mut tx = self.db.begin().await?;
        let id: i64 = query("INSERT INTO properties (customer_id, name, version) VALUES ($1, $2, $3) RETURNING id")
            .bind(customer)
            .bind(name)
            .bind(first.version)
            .scalar(&mut tx)
            .await
            .map_err(conflict("property"))?;
        insert_version(&mut tx, id, first).await?;
        insert_nodes(&mut tx, id, nodes).await?;
        claim_hosts(&mut tx, customer, id, &hosts_of(&first.config)?).await?;
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
        let mut tx = self.db.begin().await?;
        // Compare and swap: of two updates from the same version, the second finds the version moved on.
        let done = query("UPDATE properties SET version = $1 WHERE id = $2 AND version = $3")
            .bind(next.version)
            .bind(property_id)
            .bind(expected_version)
            .execute(&mut tx)
            .await?;
        if done == 0 {
            return Ok(false);
        }
        let customer: i64 =
            query("SELECT customer_id FROM properties WHERE id = $1").bind(property_id).scalar(&mut tx).await?;
        insert_version(&mut tx, property_id, next).await?;
        insert_nodes(&mut tx, property_id, new_nodes).await?;
        claim_hosts(&mut tx, customer, property_id, &hosts_of(&next.config)?).await?;
        insert_task(&mut tx, task).await?;
        insert_audit(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn property_nodes(&self, property_id: i64, keys: &[String]) -> StoreResult<Vec<ReadOnly>> {
        let mut found = Vec::new();
        for chunk in keys.chunks(500) {
            let marks: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
            let sql = format!(
                "SELECT key, kind, created, author FROM property_nodes WHERE property_id = $1 AND key IN ({})",
                marks.join(", ")
            );
            let q = chunk.iter().fold(query(sql).bind(property_id), |q, key| q.bind(key));
            for row in q.fetch_all(&self.db).await? {
                found.push(ReadOnly {
                    key: row.get("key")?,
                    kind: row.get("kind")?,
                    created: row.get("created")?,
                    author: row.get("author")?,
                });
            }
        }
        Ok(found)
    }

    async fn config_versions(&self, property_id: i64) -> StoreResult<Vec<ConfigVersionRecord>> {
        let rows = query(
            "SELECT version, etag, author, created_ms, comment FROM property_versions WHERE property_id = $1
             ORDER BY version DESC",
        )
        .bind(property_id)
        .fetch_all(&self.db)
        .await?;
        Ok(rows.iter().map(version_from_row).collect::<Result<_, _>>()?)
    }

    async fn config_version(&self, property_id: i64, version: u64) -> StoreResult<Option<ConfigVersionRecord>> {
        let row = query("SELECT * FROM property_versions WHERE property_id = $1 AND version = $2")
            .bind(property_id)
            .bind(version)
            .fetch_optional(&self.db)
            .await?;
        Ok(row.as_ref().map(version_from_row).transpose()?)
    }

    async fn config_version_with_content(&self, property_id: i64, content_hash: &str) -> StoreResult<Option<u64>> {
        // The etag ends with the content hash (16 characters) and its closing quote.
        let version: Option<i64> = query(
            "SELECT version FROM property_versions
             WHERE property_id = $1 AND substr(etag, length(etag) - 16, 16) = $2
             ORDER BY version DESC LIMIT 1",
        )
        .bind(property_id)
        .bind(content_hash)
        .optional_scalar(&self.db)
        .await?;
        Ok(version.map(|v| v as u64))
    }

    async fn host_claims(&self, customer: CustomerId) -> StoreResult<Vec<String>> {
        let rows = query("SELECT pattern FROM host_claims WHERE customer_id = $1 ORDER BY pattern")
            .bind(customer)
            .fetch_all(&self.db)
            .await?;
        Ok(rows.iter().map(|r| r.at(0)).collect::<Result<_, _>>()?)
    }

    async fn host_claim(&self, pattern: &str) -> StoreResult<Option<(Customer, PropertyRecord)>> {
        let row = query(
            "SELECT c.*, p.id AS p_id, p.name AS p_name, p.version AS p_version
             FROM host_claims h JOIN customers c ON c.id = h.customer_id JOIN properties p ON p.id = h.property_id
             WHERE h.pattern = $1",
        )
        .bind(pattern)
        .fetch_optional(&self.db)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let customer = customer_from_row(&row)?;
        let version: i64 = row.get("p_version")?;
        let property = PropertyRecord {
            id: row.get("p_id")?,
            customer_id: customer.id,
            name: row.get("p_name")?,
            version: version as u64,
        };
        Ok(Some((customer, property)))
    }

    async fn create_purge(&self, purge: &PurgeRecord, task: &TaskRecord, audit: &AuditEvent) -> StoreResult<i64> {
        let mut tx = self.db.begin().await?;
        insert_task(&mut tx, task).await?;
        // The customer's next number (its counter row is held until the end: one purge at a time gets one).
        let id: i64 = query(
            "INSERT INTO purge_counters AS c (customer_id, last) VALUES ($1, 1)
             ON CONFLICT (customer_id) DO UPDATE SET last = c.last + 1 RETURNING last",
        )
        .bind(purge.customer_id)
        .scalar(&mut tx)
        .await?;
        query(
            "INSERT INTO purge_transactions (customer_id, number, task_id, action, uri_count, uris, username)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(purge.customer_id)
        .bind(id)
        .bind(&task.id)
        .bind(&purge.action)
        .bind(purge.uri_count)
        .bind(&purge.uris)
        .bind(&purge.username)
        .execute(&mut tx)
        .await?;
        insert_audit(&mut tx, &AuditEvent { target_id: id.to_string(), ..audit.clone() }).await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn purge(&self, customer: CustomerId, id: i64) -> StoreResult<Option<(PurgeRecord, TaskRecord)>> {
        let row = query(format!("{PURGE_WITH_TASK} WHERE p.customer_id = $1 AND p.number = $2"))
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.db)
            .await?;
        Ok(row.as_ref().map(purge_from_row).transpose()?)
    }

    async fn recent_purges(&self, customer: CustomerId, limit: u64) -> StoreResult<Vec<(PurgeRecord, TaskRecord)>> {
        let rows = query(format!("{PURGE_WITH_TASK} WHERE p.customer_id = $1 ORDER BY p.id DESC LIMIT $2"))
            .bind(customer)
            .bind(limit)
            .fetch_all(&self.db)
            .await?;
        Ok(rows.iter().map(purge_from_row).collect::<Result<_, _>>()?)
    }

    async fn take_purge_token(&self, customer: CustomerId, now_ms: i64) -> StoreResult<Result<(), i64>> {
        use crate::throttle::policy::purge::{BURST_MILLI, MILLI_PER_MS};
        // One statement: the bucket is refilled, a token taken when there is one, and the time moved on, under
        // the row's lock, so requests to every replica draw from the same bucket.
        let refilled = refilled("b.tokens_milli", "b.at_ms");
        let row = query(format!(
            "INSERT INTO purge_buckets AS b (customer_id, tokens_milli, at_ms, taken) VALUES ($1, {}, $2, TRUE)
             ON CONFLICT (customer_id) DO UPDATE SET
                 tokens_milli = CASE WHEN {refilled} >= 1000 THEN {refilled} - 1000 ELSE {refilled} END,
                 taken = {refilled} >= 1000,
                 at_ms = CASE WHEN $2 > b.at_ms THEN $2 ELSE b.at_ms END
             RETURNING tokens_milli, taken",
            BURST_MILLI - 1000
        ))
        .bind(customer)
        .bind(now_ms)
        .fetch_one(&self.db)
        .await?;
        let (tokens, taken): (i64, bool) = (row.get("tokens_milli")?, row.get("taken")?);
        Ok(if taken { Ok(()) } else { Err(((1000 - tokens).max(0) as u64).div_ceil(MILLI_PER_MS as u64) as i64) })
    }

    async fn network_lists(
        &self,
        customer: CustomerId,
        list_type: Option<&str>,
        include_deprecated: bool,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<NetworkListRecord>, u64)> {
        let filter = "l.customer_id = $1 AND ($2 IS NULL OR l.type = $2) AND ($3 OR l.deprecated = FALSE)";
        let bound = |sql: String| query(sql).bind(customer).bind(list_type).bind(include_deprecated);
        let count = format!("SELECT COUNT(*) FROM network_lists l WHERE {filter}");
        let page = format!("{LIST_WITH_COUNT} WHERE {filter} ORDER BY lower(l.name), l.id LIMIT $4 OFFSET $5");
        filtered_page(&self.db, bound, count, page, (limit, offset), list_from_row).await
    }

    async fn network_list(&self, customer: CustomerId, id: &str) -> StoreResult<Option<NetworkListRecord>> {
        let row = query(format!("{LIST_WITH_COUNT} WHERE l.customer_id = $1 AND l.id = $2"))
            .bind(customer)
            .bind(id)
            .fetch_optional(&self.db)
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
        let mut tx = self.db.begin().await?;
        query(
            "INSERT INTO network_lists (id, customer_id, name, type, description, deprecated, created_ms)
             VALUES ($1, $2, $3, $4, $5, FALSE, $6)",
        )
        .bind(&list.id)
        .bind(list.customer_id)
        .bind(&list.name)
        .bind(&list.list_type)
        .bind(&list.description)
        .bind(list.created_ms)
        .execute(&mut tx)
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
        let mut tx = self.db.begin().await?;
        let done = query(
            "UPDATE network_lists SET name = COALESCE($1, name), description = COALESCE($2, description),
                    deprecated = COALESCE($3, deprecated), modified_ms = $4
             WHERE customer_id = $5 AND id = $6",
        )
        .bind(&u.name)
        .bind(&u.description)
        .bind(u.deprecated)
        .bind(modified_ms)
        .bind(customer)
        .bind(id)
        .execute(&mut tx)
        .await?;
        if done == 0 {
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
        let mut tx = self.db.begin().await?;
        let done = query("DELETE FROM network_lists WHERE customer_id = $1 AND id = $2")
            .bind(customer)
            .bind(id)
            .execute(&mut tx)
            .await?;
        if done == 0 {
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
        let mut tx = self.db.begin().await?;
        // The limit is checked inside the write, with the list held: two additions at once cannot both fit.
        tx.lock_row("network_lists", "id", list_id).await?;
        let added = insert_entries(&mut tx, list_id, entries).await?;
        let count: i64 =
            query("SELECT COUNT(*) FROM network_list_entries WHERE list_id = $1").bind(list_id).scalar(&mut tx).await?;
        if count as u64 > max_entries {
            return Err(StoreError::Limit(format!(
                "The list would hold {count} entries; at most {max_entries} are allowed ({added} new entries refused)."
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
        page.run(&self.db, list_id.into(), search, offset, limit, entry_from_row).await
    }

    async fn entry_values(&self, list_id: &str) -> StoreResult<Vec<String>> {
        let rows = query("SELECT value FROM network_list_entries WHERE list_id = $1 ORDER BY seq")
            .bind(list_id)
            .fetch_all(&self.db)
            .await?;
        Ok(rows.iter().map(|r| r.at(0)).collect::<Result<_, _>>()?)
    }

    async fn entry(&self, list_id: &str, entry_id: &str) -> StoreResult<Option<EntryRecord>> {
        let row = query("SELECT * FROM network_list_entries WHERE list_id = $1 AND id = $2")
            .bind(list_id)
            .bind(entry_id)
            .fetch_optional(&self.db)
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
        let mut tx = self.db.begin().await?;
        let done = query("DELETE FROM network_list_entries WHERE list_id = $1 AND id = $2")
            .bind(list_id)
            .bind(entry_id)
            .execute(&mut tx)
            .await?;
        if done == 0 {
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
        let mut tx = self.db.begin().await?;
        let removed =
            query("DELETE FROM network_list_entries WHERE list_id = $1").bind(list_id).execute(&mut tx).await?;
        touch_list(&mut tx, list_id, modified_ms).await?;
        insert_task(&mut tx, task).await?;
        insert_audit(&mut tx, &audit.clone().detail("removed", removed)).await?;
        tx.commit().await?;
        Ok(removed)
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
        let row = query(
            "SELECT u.*, s.token_hash, s.user_id, s.created_ms AS s_created_ms, s.last_seen_ms,
                    c.name AS c_name, c.display_name AS c_display_name, c.contact_email AS c_contact_email,
                    c.timezone AS c_timezone, c.created_ms AS c_created_ms
             FROM sessions s
             JOIN users u ON u.id = s.user_id AND u.customer_id = s.customer_id
             JOIN customers c ON c.id = s.customer_id
             WHERE s.token_hash = $1",
        )
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
        let customer = Customer {
            id: user.customer_id,
            name: row.get("c_name")?,
            display_name: row.get("c_display_name")?,
            contact_email: row.get("c_contact_email")?,
            timezone: row.get("c_timezone")?,
            created_ms: row.get("c_created_ms")?,
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

    async fn reserve_login(&self, now_ms: i64, key: &LoginKey) -> StoreResult<Decision> {
        let keys = key.stored();
        let mut tx = self.db.begin().await?;
        tx.lock_keys(&present(&keys)).await?;
        let (failures, pending) = throttle_queries(&keys, now_ms);
        let (rows, pending) = (failures.fetch_all(&mut tx).await?, pending.fetch_one(&mut tx).await?);
        let decision = throttle::decide(now_ms, &throttle_counts(&keys, &rows, &pending, now_ms)?);
        if !matches!(decision, Decision::Proceed { .. }) {
            return Ok(decision);
        }
        for k in present(&keys) {
            // A count past its window starts again; the attempt is the key's latest activity.
            query(format!(
                "INSERT INTO login_failures AS f (key, failures, last_ms, lock_reported) VALUES ($1, 0, $2, FALSE)
                 ON CONFLICT (key) DO UPDATE SET
                     failures = CASE WHEN $2 - f.last_ms < {window} THEN f.failures ELSE 0 END,
                     lock_reported = CASE WHEN $2 - f.last_ms < {window} THEN f.lock_reported ELSE FALSE END,
                     last_ms = $2",
                window = throttle::WINDOW_MS
            ))
            .bind(k)
            .bind(now_ms)
            .execute(&mut tx)
            .await?;
        }
        query(
            "INSERT INTO login_pending (pair_key, addr_key, user_key, code_key, expires_ms) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(keys[0].as_deref())
        .bind(keys[1].as_deref())
        .bind(keys[2].as_deref())
        .bind(keys[3].as_deref())
        .bind(now_ms + throttle::PENDING_TTL_MS)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(decision)
    }

    async fn login_decision(&self, now_ms: i64, key: &LoginKey) -> StoreResult<Decision> {
        let keys = key.stored();
        let (failures, pending) = throttle_queries(&keys, now_ms);
        let (rows, pending) = (failures.fetch_all(&self.db).await?, pending.fetch_one(&self.db).await?);
        Ok(throttle::decide(now_ms, &throttle_counts(&keys, &rows, &pending, now_ms)?))
    }

    async fn settle_login(&self, now_ms: i64, key: &LoginKey, outcome: Outcome) -> StoreResult<Vec<Lockout>> {
        let keys = key.stored();
        let mut tx = self.db.begin().await?;
        tx.lock_keys(&present(&keys)).await?;
        query(
            "DELETE FROM login_pending WHERE id IN
                 (SELECT id FROM login_pending
                  WHERE pair_key = $1 AND (code_key = $2 OR (code_key IS NULL AND $2 IS NULL))
                  ORDER BY expires_ms LIMIT 1)",
        )
        .bind(keys[0].as_deref())
        .bind(keys[3].as_deref())
        .execute(&mut tx)
        .await?;
        let mut lockouts = Vec::new();
        match outcome {
            Outcome::Released => {}
            Outcome::Succeeded => {
                query("UPDATE login_failures SET failures = 0, lock_reported = FALSE WHERE key IN ($1, $2, $3)")
                    .bind(keys[0].as_deref())
                    .bind(keys[2].as_deref())
                    .bind(keys[3].as_deref())
                    .execute(&mut tx)
                    .await?;
            }
            Outcome::Failed | Outcome::FailedCode => {
                // A wrong password is no guess of a code.
                let counted = if outcome == Outcome::Failed { 3 } else { 4 };
                for (k, limits) in keys.iter().zip(throttle::LIMITS).take(counted) {
                    let Some(k) = k else { continue };
                    let row = query(format!(
                        "INSERT INTO login_failures AS f (key, failures, last_ms, lock_reported)
                         VALUES ($1, 1, $2, FALSE)
                         ON CONFLICT (key) DO UPDATE SET
                             failures = CASE WHEN $2 - f.last_ms < {window} THEN f.failures + 1 ELSE 1 END,
                             lock_reported = CASE WHEN $2 - f.last_ms < {window} THEN f.lock_reported ELSE FALSE END,
                             last_ms = $2
                         RETURNING failures, lock_reported",
                        window = throttle::WINDOW_MS
                    ))
                    .bind(k)
                    .bind(now_ms)
                    .fetch_one(&mut tx)
                    .await?;
                    let (failures, reported): (i64, bool) = (row.get("failures")?, row.get("lock_reported")?);
                    let locks = limits.lock_after.is_some_and(|lock| failures >= i64::from(lock));
                    if let (true, false, Some(lockout)) = (locks, reported, limits.lockout) {
                        query("UPDATE login_failures SET lock_reported = TRUE WHERE key = $1")
                            .bind(k)
                            .execute(&mut tx)
                            .await?;
                        lockouts.push(lockout);
                    }
                }
            }
        }
        tx.commit().await?;
        Ok(lockouts)
    }

    async fn forgive_logins(&self, customer: &str, username: &str) -> StoreResult<()> {
        let keys = LoginKey::new(customer, username, std::net::IpAddr::from([0, 0, 0, 0])).with_code(true).stored();
        query("DELETE FROM login_failures WHERE key IN ($1, $2)")
            .bind(keys[2].as_deref())
            .bind(keys[3].as_deref())
            .execute(&self.db)
            .await?;
        Ok(())
    }

    async fn prune_logins(&self, now_ms: i64) -> StoreResult<u64> {
        let failures = prune_in_batches(&self.db, "login_failures", "key", "last_ms", now_ms - throttle::WINDOW_MS);
        let pending = prune_in_batches(&self.db, "login_pending", "id", "expires_ms", now_ms + 1);
        Ok(failures.await? + pending.await?)
    }

    async fn record_audit(&self, event: &AuditEvent) -> StoreResult<()> {
        audit_insert(event).execute(&self.db).await?;
        Ok(())
    }

    async fn audit_records(
        &self,
        customer: CustomerId,
        f: &AuditFilter,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<AuditEntry>, u64)> {
        let filter = "a.customer_id = $1 AND ($2 IS NULL OR a.time_ms >= $2) AND ($3 IS NULL OR a.time_ms < $3)
             AND ($4 IS NULL OR (CASE WHEN $4 = 'system' THEN a.actor_type = 'system'
                                      ELSE (a.actor_id = $4 OR a.actor_name = $4) END))
             AND ($5 IS NULL OR a.operation = $5 OR a.operation LIKE $6 ESCAPE '\\')
             AND ($7 IS NULL OR a.target_type = $7) AND ($8 IS NULL OR a.target_id = $8)";
        let prefix = f.operation.as_deref().map(|op| format!("{}.%", escape_like(op)));
        let count = format!("SELECT COUNT(*) FROM audit_log a WHERE {filter}");
        let page = format!(
            "SELECT a.*, {TARGET_EXISTS} AS target_exists FROM audit_log a WHERE {filter}
             ORDER BY a.time_ms DESC, a.id DESC LIMIT $9 OFFSET $10"
        );
        let bound = |sql: String| audit_filter(sql, customer, f, &prefix);
        filtered_page(&self.db, bound, count, page, (limit, offset), audit_from_row).await
    }

    async fn prune_audit(&self, before_ms: i64) -> StoreResult<u64> {
        prune_in_batches(&self.db, "audit_log", "id", "time_ms", before_ms).await
    }

    fn kind(&self) -> &'static str {
        match self.db.kind() {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    }
}
