//! Properties: their configuration versions, the read-only parts their nodes were given, and the host patterns
//! they claim (each pattern one property's, across every customer).

use async_trait::async_trait;
use edge_api::config::ReadOnly;

use super::{
    CustomerId, StoreError, StoreResult,
    audit::{AuditEvent, insert_audit},
    customers::{Customer, customer_from_row},
    db::{Row, Tx, query},
    sql::{SqlStore, conflict, escape_like},
    tasks::{TaskRecord, insert_task},
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyRecord {
    pub id: i64,
    pub customer_id: CustomerId,
    pub name: String,
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigVersionRecord {
    pub version: u64,
    pub etag: String,
    /// The configuration, JSON.
    pub config: String,
    pub author: String,
    pub created_ms: i64,
    pub comment: String,
}

/// Properties, their configuration history and their host claims.
#[async_trait]
pub trait Properties: Send + Sync {
    /// The customer's properties with their current configuration, by name.
    async fn properties(&self, customer: CustomerId) -> StoreResult<Vec<(PropertyRecord, ConfigVersionRecord)>>;
    /// Of the customer's properties named after `after`, the first `limit` by name whose current configuration
    /// contains `text` (compared as the database compares text: SQLite ignores the case of ASCII letters). A
    /// sieve: the caller reads each configuration to decide, a batch at a time.
    async fn properties_containing(
        &self,
        customer: CustomerId,
        text: &str,
        after: &str,
        limit: u64,
    ) -> StoreResult<Vec<(PropertyRecord, ConfigVersionRecord)>>;
    async fn property(
        &self,
        customer: CustomerId,
        name: &str,
    ) -> StoreResult<Option<(PropertyRecord, ConfigVersionRecord)>>;
    /// Creates a property with its first configuration (version 1) and its deployment task; `nodes` are the
    /// read-only parts of its nodes (see [`Properties::property_nodes`]). The configuration's host patterns become
    /// the property's claims in the same transaction: [`StoreError::HostClaimed`] (and nothing stored) when
    /// another property of the customer claims one of them, or another customer the same or an overlapping
    /// pattern (`*.example.com` overlaps `a.example.com`).
    async fn create_property(
        &self,
        customer: CustomerId,
        name: &str,
        first: &ConfigVersionRecord,
        nodes: &[ReadOnly],
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<PropertyRecord>;
    /// Stores `next` as the property's new current configuration if the current version is still
    /// `expected_version` (compare and swap), with its deployment task and the read-only parts of its new
    /// nodes, and its host patterns as the property's claims (released when no longer listed; refused as for
    /// [`Properties::create_property`]). False when another update came first.
    async fn update_property_config(
        &self,
        property_id: i64,
        expected_version: u64,
        next: &ConfigVersionRecord,
        new_nodes: &[ReadOnly],
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<bool>;
    /// Of the read-only parts with these keys, those the property's nodes ever had (the server issued them).
    async fn property_nodes(&self, property_id: i64, keys: &[String]) -> StoreResult<Vec<ReadOnly>>;
    /// The history, newest first (without the configurations).
    async fn config_versions(&self, property_id: i64) -> StoreResult<Vec<ConfigVersionRecord>>;
    async fn config_version(&self, property_id: i64, version: u64) -> StoreResult<Option<ConfigVersionRecord>>;
    /// The newest version whose content has this hash (see [`crate::domain::property_config::content_hash`]), if any.
    async fn config_version_with_content(&self, property_id: i64, content_hash: &str) -> StoreResult<Option<u64>>;
    /// The host patterns the customer's properties claim (see [`Properties::create_property`]), in order.
    async fn host_claims(&self, customer: CustomerId) -> StoreResult<Vec<String>>;
    /// Who claims a host pattern: the customer and its property.
    async fn host_claim(&self, pattern: &str) -> StoreResult<Option<(Customer, PropertyRecord)>>;
}

#[async_trait]
impl Properties for SqlStore {
    async fn properties(&self, customer: CustomerId) -> StoreResult<Vec<(PropertyRecord, ConfigVersionRecord)>> {
        let rows = query(format!("{PROPERTY_WITH_CURRENT} WHERE p.customer_id = $1 ORDER BY p.name"))
            .bind(customer)
            .fetch_all(&self.db)
            .await?;
        Ok(rows.iter().map(property_from_row).collect::<Result<_, _>>()?)
    }

    async fn properties_containing(
        &self,
        customer: CustomerId,
        text: &str,
        after: &str,
        limit: u64,
    ) -> StoreResult<Vec<(PropertyRecord, ConfigVersionRecord)>> {
        let rows = query(format!(
            "{PROPERTY_WITH_CURRENT} WHERE p.customer_id = $1 AND p.name > $2 AND v.config LIKE $3 ESCAPE '\\'
             ORDER BY p.name LIMIT $4"
        ))
        .bind(customer)
        .bind(after)
        .bind(format!("%{}%", escape_like(text)))
        .bind(limit)
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
}

const PROPERTY_WITH_CURRENT: &str =
    "SELECT p.id, p.customer_id, p.name, p.version, v.etag, v.config, v.author, v.created_ms, v.comment
     FROM properties p JOIN property_versions v ON v.property_id = p.id AND v.version = p.version";

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
