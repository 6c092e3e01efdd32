//! Periodic upkeep, on every replica: expired sessions out, statistics checkpoints, and what is past its
//! retention deleted.

use std::time::Duration;

use crate::{domain::auth, state::AppState};

/// Periodic upkeep, every minute: see [`upkeep`].
pub(crate) async fn housekeeping(state: AppState) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    let mut minutes = 0u64;
    loop {
        tick.tick().await;
        minutes += 1;
        upkeep(&state, minutes % 10 == 1).await;
    }
}

/// One round of upkeep: expired sessions are removed from storage (each recorded as expired), and a statistics
/// checkpoint is written when its log has grown. With `retention` (every ten minutes) also what is past its
/// retention goes: statistics, login attempts past their window, finished tasks with their purge
/// transactions, and audit records. Every replica runs it: each job in the store takes its own lock in the
/// database and deletes only what is still there, so two replicas never do the same work twice.
pub async fn upkeep(state: &AppState, retention: bool) {
    let now = state.clock.now_ms();
    let stats = state.stats.clone();
    let result = tokio::task::spawn_blocking(move || stats.maintain(now, retention)).await;
    if let Ok(Err(e)) | Err(e) = result.map_err(anyhow::Error::from) {
        tracing::warn!(error = %e, "statistics upkeep failed");
    }
    match state.store.purge_sessions(now - auth::SESSION_IDLE_MS, now - auth::SESSION_MAX_AGE_MS, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(sessions = n, "purged expired sessions"),
        Err(e) => tracing::warn!(error = %e, "purging expired sessions failed"),
    }
    if retention {
        match state.store.prune_logins(now).await {
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "forgetting old login attempts failed"),
        }
        let before = now.saturating_sub(state.settings.task_retention_days.saturating_mul(DAY_MS));
        match state.store.prune_tasks(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(tasks = n, "pruned finished tasks past their retention"),
            Err(e) => tracing::warn!(error = %e, "pruning tasks failed"),
        }
        let before = now.saturating_sub(edge_api::alerts::EVENT_RETENTION_DAYS * DAY_MS);
        match state.store.prune_alerts(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(rows = n, "pruned alert events and deliveries past their retention or count"),
            Err(e) => tracing::warn!(error = %e, "pruning alert events failed"),
        }
        let before = now.saturating_sub(state.settings.audit_retention_days.saturating_mul(DAY_MS));
        match state.store.prune_audit(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(records = n, "pruned audit records past their retention"),
            Err(e) => tracing::warn!(error = %e, "pruning audit records failed"),
        }
    }
}

const DAY_MS: i64 = 24 * 60 * 60 * 1000;
