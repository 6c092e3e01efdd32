//! Tasks: long-running changes (deployments of network lists and configurations, purges) and their progress.

use serde::{Deserialize, Serialize};

use crate::{ErrorBody, Link, paging::paged};

/// A task's status.
pub const TASK_STATUSES: [&str; 4] = ["QUEUED", "RUNNING", "COMPLETED", "FAILED"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Task {
    pub id: String,
    /// The task's own address.
    pub uri: String,
    /// What runs: `networklist.deploy`, `config.deploy` or `purge`.
    pub operation: String,
    /// `QUEUED`, `RUNNING`, `COMPLETED` or `FAILED`.
    pub status: String,
    /// True once COMPLETED or FAILED.
    pub complete: bool,
    /// 0–100.
    pub progress: u8,
    /// UTC, ISO 8601 with milliseconds.
    pub begin_time: String,
    /// Set when no longer running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    pub last_updated: String,
    /// The user who started it.
    pub user: Link,
    /// What it changes.
    pub target: Link,
    /// The username of who started it, as it was then; `system` for the operator's commands (beyond the API).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user_name: String,
    /// What the target was called then: the network list's or the property's name; absent for a purge, which
    /// `purge` describes (beyond the API).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target_name: String,
    /// For a purge, what it purged (beyond the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge: Option<TaskPurge>,
    /// Present when the task failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_info: Option<ErrorBody>,
}

/// What a purge's task purged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskPurge {
    /// Its transaction: `GET /transactions/{transaction_id}`.
    pub transaction_id: i64,
    /// `PURGE` or `EXPIRE`.
    pub action: String,
    /// How many URI patterns it named.
    pub uri_count: u64,
    /// The first three of them, in the order sent.
    pub uris: Vec<String>,
}

/// URI patterns a task or a purge listing shows of each purge.
pub const TASK_PURGE_SAMPLE: usize = 3;

paged!(
    /// A page of tasks, newest first.
    TaskPage,
    Task
);
