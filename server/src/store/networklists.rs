//! Network lists and their entries.

use async_trait::async_trait;

use super::{
    CustomerId, StoreError, StoreResult,
    audit::{AuditEvent, insert_audit},
    db::{Row, Tx, query},
    sql::{Search, SqlStore, filtered_page},
    tasks::{TaskRecord, insert_task},
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkListRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub name: String,
    pub list_type: String,
    pub description: String,
    pub deprecated: bool,
    pub created_ms: i64,
    pub modified_ms: Option<i64>,
    pub entry_count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRecord {
    pub id: String,
    pub value: String,
    pub added_by: String,
    pub created_ms: i64,
}

/// What adding entries did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddedEntries {
    pub added: u64,
    pub already_present: u64,
}

/// Changes to a network list; `None` keeps the value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkListUpdate {
    pub name: Option<String>,
    pub description: Option<String>,
    pub deprecated: Option<bool>,
}

/// Network lists and their entries; every change with its deployment task.
#[async_trait]
pub trait NetworkLists: Send + Sync {
    /// A page of network lists by name, of one type or both, with or without deprecated ones, and the total.
    async fn network_lists(
        &self,
        customer: CustomerId,
        list_type: Option<&str>,
        include_deprecated: bool,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<NetworkListRecord>, u64)>;
    async fn network_list(&self, customer: CustomerId, id: &str) -> StoreResult<Option<NetworkListRecord>>;
    /// Creates a list with its first entries and the deployment task.
    async fn create_network_list(
        &self,
        list: &NetworkListRecord,
        entries: &[EntryRecord],
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<()>;
    async fn update_network_list(
        &self,
        customer: CustomerId,
        id: &str,
        update: &NetworkListUpdate,
        modified_ms: i64,
        audit: &AuditEvent,
    ) -> StoreResult<Option<NetworkListRecord>>;
    /// Deletes a list and its entries, with the deployment task of the deletion.
    async fn delete_network_list(
        &self,
        customer: CustomerId,
        id: &str,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<bool>;
    /// Adds entries (values already present are counted, not added), unless the list would hold more than
    /// `max_entries` ([`StoreError::Limit`], nothing written); with the deployment task.
    async fn add_entries(
        &self,
        list_id: &str,
        entries: &[EntryRecord],
        max_entries: u64,
        modified_ms: i64,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<AddedEntries>;
    /// A page of entries, oldest first, optionally only those containing `search`, and the total that match.
    async fn entries(
        &self,
        list_id: &str,
        search: Option<&str>,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<EntryRecord>, u64)>;
    /// Every entry value, oldest first.
    async fn entry_values(&self, list_id: &str) -> StoreResult<Vec<String>>;
    async fn entry(&self, list_id: &str, entry_id: &str) -> StoreResult<Option<EntryRecord>>;
    /// Removes one entry with the deployment task; false when it did not exist (and no task is stored).
    async fn delete_entry(
        &self,
        list_id: &str,
        entry_id: &str,
        modified_ms: i64,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<bool>;
    /// Removes every entry, keeping the list, with the deployment task; returns how many there were.
    async fn clear_entries(
        &self,
        list_id: &str,
        modified_ms: i64,
        task: &TaskRecord,
        audit: &AuditEvent,
    ) -> StoreResult<u64>;
}

#[async_trait]
impl NetworkLists for SqlStore {
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
}

const LIST_WITH_COUNT: &str =
    "SELECT l.*, (SELECT COUNT(*) FROM network_list_entries e WHERE e.list_id = l.id) AS entry_count
     FROM network_lists l";

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
