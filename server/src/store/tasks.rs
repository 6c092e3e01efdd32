//! Tasks (what is stored of a long-running change) and the purges they track, with the purge rate limit.

use async_trait::async_trait;

use super::{
    CustomerId, StoreResult,
    audit::{AuditEvent, insert_audit},
    db::{Row, Tx, query},
    sql::{PRUNE_BATCH, SqlStore, filtered_page},
};

/// A task: what is stored of a long-running change (its progress comes from the fleet's schedule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub id: String,
    pub customer_id: CustomerId,
    pub operation: String,
    pub user_id: String,
    /// The user's name when the task began (`system` for the operator's commands).
    pub user_name: String,
    pub target_id: String,
    pub target_uri: String,
    /// What the target was called when the task began (a list's or property's name); empty for a purge.
    pub target_name: String,
    pub begin_ms: i64,
    pub end_ms: i64,
    /// JSON error_info when the task fails.
    pub error_info: Option<String>,
    /// The purge the task tracks, as read with it; not written with the task (see [`Tasks::create_purge`]).
    pub purge: Option<PurgeSummary>,
}

/// What a purge's task tells of it: its transaction, action, and first URI patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeSummary {
    pub id: i64,
    pub action: String,
    pub uri_count: u64,
    /// The first URI patterns (at most [`edge_api::TASK_PURGE_SAMPLE`]).
    pub sample: Vec<String>,
}

/// A task's status at a moment: QUEUED before its beginning, RUNNING until its end, then COMPLETED or FAILED
/// (when it has error_info).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Queued,
    Running,
    Completed,
    Failed,
}

impl TaskStatus {
    pub fn parse(s: &str) -> Option<TaskStatus> {
        Some(match s {
            "QUEUED" => TaskStatus::Queued,
            "RUNNING" => TaskStatus::Running,
            "COMPLETED" => TaskStatus::Completed,
            "FAILED" => TaskStatus::Failed,
            _ => return None,
        })
    }
}

/// Which tasks to list, at `now_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFilter {
    pub now_ms: i64,
    /// Tasks updated after this time: queued ones that begin after it, running ones (their progress moves until
    /// they end, so they have updates after it when they end after it), ended ones that ended after it.
    pub since_ms: Option<i64>,
    pub status: Option<TaskStatus>,
    pub operation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeRecord {
    pub id: i64,
    pub customer_id: CustomerId,
    pub task_id: String,
    pub action: String,
    pub uri_count: u64,
    /// The URI patterns, JSON: written with the purge, not read back (empty when read; listings show `sample`).
    pub uris: String,
    /// The first URI patterns (at most [`edge_api::TASK_PURGE_SAMPLE`]): what listings show, read without the
    /// whole request.
    pub sample: Vec<String>,
    pub username: String,
}

/// Tasks and purges.
#[async_trait]
pub trait Tasks: Send + Sync {
    async fn task(&self, customer: CustomerId, id: &str) -> StoreResult<Option<TaskRecord>>;
    /// A page of the customer's tasks that `filter` keeps, newest first, and how many it keeps.
    async fn tasks(
        &self,
        customer: CustomerId,
        filter: &TaskFilter,
        offset: u64,
        limit: u64,
    ) -> StoreResult<(Vec<TaskRecord>, u64)>;
    /// Deletes tasks that ended before `ended_before_ms`, with the purge transactions they track; returns how
    /// many tasks.
    async fn prune_tasks(&self, ended_before_ms: i64) -> StoreResult<u64>;
    /// Stores a purge with its task; returns the transaction id — the customer's next number, from 1, so it
    /// tells nothing of other customers — which is also the audit record's target id.
    async fn create_purge(&self, purge: &PurgeRecord, task: &TaskRecord, audit: &AuditEvent) -> StoreResult<i64>;
    async fn purge(&self, customer: CustomerId, id: i64) -> StoreResult<Option<(PurgeRecord, TaskRecord)>>;
    /// The newest purges first.
    async fn recent_purges(&self, customer: CustomerId, limit: u64) -> StoreResult<Vec<(PurgeRecord, TaskRecord)>>;
    /// Takes a token from the customer's purge bucket (see [`crate::domain::throttle::purge`]); when there is none, the
    /// milliseconds until there will be.
    async fn take_purge_token(&self, customer: CustomerId, now_ms: i64) -> StoreResult<Result<(), i64>>;
}

#[async_trait]
impl Tasks for SqlStore {
    async fn task(&self, customer: CustomerId, id: &str) -> StoreResult<Option<TaskRecord>> {
        let row = query(format!("{TASK_WITH_PURGE} WHERE t.customer_id = $1 AND t.id = $2"))
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
        // The page first, then its purges: the join reads one purge per task of the page, never more.
        let page = format!(
            "SELECT t.*, {PURGE_COLUMNS}
             FROM (SELECT * FROM tasks WHERE {filter} ORDER BY begin_ms DESC, id DESC LIMIT $6 OFFSET $7) t
             LEFT JOIN purge_transactions p ON p.task_id = t.id
             ORDER BY t.begin_ms DESC, t.id DESC"
        );
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
            "INSERT INTO purge_transactions (customer_id, number, task_id, action, uri_count, uris, username, sample)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(purge.customer_id)
        .bind(id)
        .bind(&task.id)
        .bind(&purge.action)
        .bind(purge.uri_count)
        .bind(&purge.uris)
        .bind(&purge.username)
        .bind(serde_json::to_string(&purge.sample).unwrap_or_else(|_| "[]".into()))
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
        use crate::domain::throttle::policy::purge::{BURST_MILLI, MILLI_PER_MS};
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
}

/// A task with the purge it tracks, if any (`purge_*` columns, NULL for other tasks).
const TASK_WITH_PURGE: &str = "SELECT t.*, p.number AS purge_number, p.action AS purge_action,
        p.uri_count AS purge_uri_count, p.sample AS purge_sample
     FROM tasks t LEFT JOIN purge_transactions p ON p.task_id = t.id";

/// The columns of a purge joined as `p` to its task, as [`task_from_row`] reads them.
const PURGE_COLUMNS: &str =
    "p.number AS purge_number, p.action AS purge_action, p.uri_count AS purge_uri_count, p.sample AS purge_sample";

fn sample_of(json: &str) -> Vec<String> {
    serde_json::from_str(json).unwrap_or_default()
}

/// A task from its row; its purge from the `purge_*` columns when the row has them.
fn task_from_row(row: &Row) -> Result<TaskRecord, sqlx::Error> {
    let purge = match row.get::<Option<i64>>("purge_number")? {
        Some(id) => {
            let uri_count: i64 = row.get("purge_uri_count")?;
            let sample: String = row.get("purge_sample")?;
            Some(PurgeSummary {
                id,
                action: row.get("purge_action")?,
                uri_count: uri_count as u64,
                sample: sample_of(&sample),
            })
        }
        None => None,
    };
    Ok(TaskRecord {
        id: row.get("id")?,
        customer_id: row.get("customer_id")?,
        operation: row.get("operation")?,
        user_id: row.get("user_id")?,
        user_name: row.get("user_name")?,
        target_id: row.get("target_id")?,
        target_uri: row.get("target_uri")?,
        target_name: row.get("target_name")?,
        begin_ms: row.get("begin_ms")?,
        end_ms: row.get("end_ms")?,
        error_info: row.get("error_info")?,
        purge,
    })
}

pub(super) async fn insert_task(tx: &mut Tx, t: &TaskRecord) -> Result<(), sqlx::Error> {
    query(
        "INSERT INTO tasks (id, customer_id, operation, user_id, target_id, target_uri, begin_ms, end_ms, error_info,
                            user_name, target_name)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
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
    .bind(&t.user_name)
    .bind(&t.target_name)
    .execute(tx)
    .await?;
    Ok(())
}

/// A purge with its task; the request's URIs are not read (a listing needs only the sample).
const PURGE_WITH_TASK: &str = "SELECT p.number AS purge_number, p.action AS purge_action,
        p.uri_count AS purge_uri_count, p.sample AS purge_sample, p.username AS purge_username, t.*
     FROM purge_transactions p JOIN tasks t ON t.id = p.task_id";

fn purge_from_row(row: &Row) -> Result<(PurgeRecord, TaskRecord), sqlx::Error> {
    let uri_count: i64 = row.get("purge_uri_count")?;
    let sample: String = row.get("purge_sample")?;
    Ok((
        PurgeRecord {
            id: row.get("purge_number")?,
            customer_id: row.get("customer_id")?,
            task_id: row.get("id")?,
            action: row.get("purge_action")?,
            uri_count: uri_count as u64,
            uris: String::new(),
            sample: sample_of(&sample),
            username: row.get("purge_username")?,
        },
        task_from_row(row)?,
    ))
}

/// `tokens` of the purge bucket (thousandths of a request) after refilling from `at_ms` to `$2`, capped at the
/// burst.
fn refilled(tokens: &str, at: &str) -> String {
    use crate::domain::throttle::policy::purge::{BURST_MILLI, MILLI_PER_MS};
    let gained = format!("{MILLI_PER_MS} * (CASE WHEN $2 > {at} THEN $2 - {at} ELSE 0 END)");
    format!("(CASE WHEN {tokens} + {gained} > {BURST_MILLI} THEN {BURST_MILLI} ELSE {tokens} + {gained} END)")
}
