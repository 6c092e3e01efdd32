//! Tasks: the long-running changes of the customer and their progress.

use axum::extract::{Path, State};
use chrono::{DateTime, NaiveDateTime};
use edge_api::{ErrorBody, TASK_STATUSES, Task, TaskPage, paths, perm};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    domain::tasks::task_body,
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
        extract::Query,
        paging::{DEFAULT_COUNT, Page, filters},
    },
    state::AppState,
    store::{TaskFilter, TaskStatus},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_tasks)).routes(routes!(get_task))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct TaskQuery {
    /// Only tasks updated after this time: `yyyy-MM-dd'T'HH:mm:ss.SSSZ` (e.g. `2026-11-22T10:00:00.000+0000`;
    /// `Z`, `+00:00` and no milliseconds are accepted too).
    since: Option<String>,
    /// Page number, from 1 (default 1).
    page: Option<u64>,
    /// Tasks per page (default 100, at most 1000).
    count: Option<u64>,
    /// `QUEUED`, `RUNNING`, `COMPLETED` or `FAILED`.
    status: Option<String>,
    /// `networklist.deploy`, `config.deploy` or `purge`.
    #[param(max_length = 2048)]
    operation: Option<String>,
}

/// Parses the `since` time in the forms the API accepts, to milliseconds since the epoch.
pub fn parse_since(s: &str) -> Option<i64> {
    for format in ["%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S%:z"] {
        if let Ok(t) = DateTime::parse_from_str(s, format) {
            return Some(t.timestamp_millis());
        }
    }
    let naive = s.strip_suffix('Z')?;
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(naive, f).ok())
        .map(|t| t.and_utc().timestamp_millis())
}

/// The time query parameter `name` (see [`parse_since`]), or 400 naming it.
pub fn time_param(name: &str, value: Option<&str>) -> AppResult<Option<i64>> {
    value
        .map(|v| {
            parse_since(v).ok_or_else(|| {
                AppError::invalid_parameter(format!("{name}: {v:?} is not a time like 2026-11-22T10:00:00.000+0000."))
            })
        })
        .transpose()
}

/// Tasks of the customer, newest first: those updated after `since` (queued ones that begin after it, running
/// ones, ended ones that ended after it), optionally of one status and operation. Finished tasks are kept for
/// the task retention (30 days unless the server is told otherwise).
#[utoipa::path(
    get, path = "/tasks", tag = "tasks",
    params(TaskQuery),
    responses(
        (status = 200, description = "A page of tasks", body = TaskPage),
        (status = 400, description = "Invalid since, status, page or count", body = ErrorBody),
        (status = 401, description = "Not authenticated", body = ErrorBody),
    )
)]
async fn list_tasks(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadTasks>,
    Query(q): Query<TaskQuery>,
) -> AppResult<axum::Json<TaskPage>> {
    let page = Page::of(q.page, q.count, DEFAULT_COUNT)?;
    let since = time_param("since", q.since.as_deref())?;
    let status = q
        .status
        .as_deref()
        .map(|s| {
            TaskStatus::parse(s).ok_or_else(|| {
                AppError::invalid_parameter(format!("status: {s:?} is not one of {}.", TASK_STATUSES.join(", ")))
            })
        })
        .transpose()?;
    let now = state.clock.now_ms();
    let filter = TaskFilter { now_ms: now, since_ms: since, status, operation: q.operation.clone() };
    let (tasks, total) = state.store.tasks(caller.customer.id, &filter, page.offset(), page.count).await?;
    let items = tasks.iter().map(|t| task_body(&state, &caller.customer, t, now)).collect();
    let sent = filters(&[
        ("since", q.since.as_deref()),
        ("status", q.status.as_deref()),
        ("operation", q.operation.as_deref()),
    ]);
    let path = format!("{}/tasks", paths::base(&caller.customer.name));
    Ok(axum::Json(page.paged(&path, &sent, items, total).into()))
}

#[derive(Deserialize)]
struct TaskPath {
    task_id: String,
}

#[utoipa::path(
    get, path = "/tasks/{task_id}", tag = "tasks",
    params(("task_id" = String, Path, description = "Task id")),
    responses(
        (status = 200, description = "The task", body = Task),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No such task", body = ErrorBody),
    )
)]
async fn get_task(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadTasks>,
    Path(p): Path<TaskPath>,
) -> AppResult<axum::Json<Task>> {
    let task = state.store.task(caller.customer.id, &p.task_id).await?.ok_or(AppError::NotFound("task"))?;
    Ok(axum::Json(task_body(&state, &caller.customer, &task, state.clock.now_ms())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_accepts_the_documented_format_and_its_neighbours() {
        let expected = Some(1_767_225_600_000);
        for s in [
            "2026-01-01T00:00:00.000+0000",
            "2026-01-01T00:00:00.000Z",
            "2026-01-01T00:00:00Z",
            "2026-01-01T01:00:00.000+01:00",
            "2026-01-01T00:00:00+0000",
        ] {
            assert_eq!(parse_since(s), expected, "{s}");
        }
        for bad in ["2026-01-01", "yesterday", "2026-01-01T00:00:00", ""] {
            assert_eq!(parse_since(bad), None, "{bad}");
        }
    }
}
