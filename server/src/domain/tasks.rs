//! Tasks as the API shows them: created with every long-running change, their status and progress derived from
//! the fleet's schedule and the clock.

use edge_api::{ErrorBody, Link, Task, TaskPurge, paths};

use crate::{
    clock::iso_ms,
    domain::{auth::Caller, fleet},
    state::AppState,
    store::{self, Customer, CustomerId, TaskRecord},
};

pub const NETWORK_LIST_DEPLOY: &str = "networklist.deploy";
pub const CONFIG_DEPLOY: &str = "config.deploy";
pub const PURGE: &str = "purge";

/// What a task changes: its id, address and name (a list's or property's name; empty for a purge).
pub struct TaskTarget<'a> {
    pub id: &'a str,
    pub uri: &'a str,
    pub name: &'a str,
}

/// Who starts a task: a user's id and name.
pub struct Starter<'a> {
    pub id: &'a str,
    pub name: &'a str,
}

/// The operator's commands.
pub const SYSTEM: Starter<'static> = Starter { id: "system", name: "system" };

/// A new task for `operation` on `target`, begun now by the caller. Its end (or failure) is fixed now from the
/// fleet's schedule. Stored by the caller, with the change it tracks.
pub fn new_task(state: &AppState, caller: &Caller, operation: &str, target: TaskTarget) -> TaskRecord {
    let by = Starter { id: &caller.user.id, name: &caller.user.username };
    new_task_for(state, caller.customer.id, by, operation, target)
}

/// As [`new_task`], for a customer and user given (the demo data, started by no request).
pub fn new_task_for(
    state: &AppState,
    customer_id: CustomerId,
    by: Starter,
    operation: &str,
    target: TaskTarget,
) -> TaskRecord {
    let now_ms = state.clock.now_ms();
    new_task_on(state.fleet.as_ref(), now_ms, customer_id, by, operation, target)
}

/// As [`new_task_for`], on a fleet alone at `begin_ms` (the command line, which has no server state).
pub fn new_task_on(
    fleet: &dyn fleet::Fleet,
    begin_ms: i64,
    customer_id: CustomerId,
    by: Starter,
    operation: &str,
    target: TaskTarget,
) -> TaskRecord {
    let id = store::new_id();
    let schedule = fleet.schedule(&id);
    let (end_ms, failed) = fleet::outcome(&schedule, begin_ms);
    let error_info = failed.then(|| {
        let missing = schedule
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_none())
            .map(|(n, _)| format!("Edge node {n} did not acknowledge the change."));
        let body = ErrorBody::new(
            "deployment_failed",
            format!(
                "{} of {} edge nodes did not acknowledge within {} s.",
                schedule.iter().filter(|t| t.is_none()).count(),
                schedule.len(),
                fleet::GIVE_UP_MS / 1000
            ),
        )
        .with_details(missing);
        serde_json::to_string(&body).unwrap_or_default()
    });
    TaskRecord {
        id,
        customer_id,
        operation: operation.to_string(),
        user_id: by.id.to_string(),
        user_name: by.name.to_string(),
        target_id: target.id.to_string(),
        target_uri: target.uri.to_string(),
        target_name: target.name.to_string(),
        begin_ms,
        end_ms,
        error_info,
        purge: None,
    }
}

/// A task's state at `now_ms`.
pub struct TaskState {
    pub status: &'static str,
    pub progress: u8,
    pub last_updated_ms: i64,
    pub ended: bool,
}

pub fn state_of(state: &AppState, t: &TaskRecord, now_ms: i64) -> TaskState {
    if now_ms < t.begin_ms {
        return TaskState { status: "QUEUED", progress: 0, last_updated_ms: t.begin_ms, ended: false };
    }
    let schedule = state.fleet.schedule(&t.id);
    if now_ms >= t.end_ms {
        let (status, progress) = match t.error_info {
            Some(_) => ("FAILED", fleet::progress(&schedule, t.begin_ms, t.end_ms).percent),
            None => ("COMPLETED", 100),
        };
        return TaskState { status, progress, last_updated_ms: t.end_ms, ended: true };
    }
    let p = fleet::progress(&schedule, t.begin_ms, now_ms);
    TaskState { status: "RUNNING", progress: p.percent.min(99), last_updated_ms: p.last_ms, ended: false }
}

/// The API's view of a task at `now_ms`.
pub fn task_body(state: &AppState, customer: &Customer, t: &TaskRecord, now_ms: i64) -> Task {
    let base = paths::base(&customer.name);
    let s = state_of(state, t, now_ms);
    Task {
        uri: format!("{base}/tasks/{}", t.id),
        id: t.id.clone(),
        operation: t.operation.clone(),
        status: s.status.to_string(),
        complete: s.ended,
        progress: s.progress,
        begin_time: iso_ms(t.begin_ms),
        end_time: s.ended.then(|| iso_ms(t.end_ms)),
        last_updated: iso_ms(s.last_updated_ms),
        user: Link { id: t.user_id.clone(), uri: format!("{base}/users/{}", t.user_id) },
        target: Link { id: t.target_id.clone(), uri: t.target_uri.clone() },
        user_name: t.user_name.clone(),
        target_name: t.target_name.clone(),
        purge: t.purge.as_ref().map(|p| TaskPurge {
            transaction_id: p.id,
            action: p.action.clone(),
            uri_count: p.uri_count,
            uris: p.sample.clone(),
        }),
        error_info: if s.ended { t.error_info.as_deref().and_then(|e| serde_json::from_str(e).ok()) } else { None },
    }
}
