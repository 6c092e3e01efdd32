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
    /// Present when the task failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_info: Option<ErrorBody>,
}

paged!(
    /// A page of tasks, newest first.
    TaskPage,
    Task
);
