//! Progress of long-running changes: a bar, and a task's bar that follows the task until it ends.

use std::time::Duration;

use edge_api::Task;
use leptos::{prelude::*, task::spawn_local};

use crate::{api, pages::use_customer};

/// How often a running task or transaction is asked for its progress.
pub const POLL_EVERY: Duration = Duration::from_millis(700);

#[component]
pub fn ProgressBar(#[prop(into)] percent: Signal<u8>, #[prop(into)] label: Signal<String>) -> impl IntoView {
    view! {
        <div class="progress">
            <div
                class="bar"
                role="progressbar"
                aria-valuemin="0"
                aria-valuemax="100"
                aria-valuenow=move || percent.get().to_string()
                aria-label=move || label.get()
            >
                <div class="fill" style:width=move || format!("{}%", percent.get())></div>
            </div>
            <span class="progress-label">{move || label.get()}</span>
        </div>
    }
}

/// Runs `tick` every [`POLL_EVERY`] while the view lives.
pub fn poll(tick: impl Fn() + 'static) {
    if let Ok(handle) = set_interval_with_handle(tick, POLL_EVERY) {
        on_cleanup(move || handle.clear());
    }
}

/// A task's progress, followed until it completes or fails.
#[component]
pub fn TaskProgress(task: Task) -> impl IntoView {
    let customer = use_customer();
    let current = RwSignal::new(task);
    poll(move || {
        let t = current.get_untracked();
        if t.complete {
            return;
        }
        let customer = customer.get_untracked();
        spawn_local(async move {
            if let Ok(t) = api::get_task(&customer, &t.id).await {
                current.set(t);
            }
        });
    });
    let label = Signal::derive(move || {
        let t = current.get();
        match t.status.as_str() {
            "COMPLETED" => "Deployed".to_string(),
            "FAILED" => format!("Failed: {}", t.error_info.map(|e| e.message).unwrap_or_default()),
            "QUEUED" => "Queued".to_string(),
            _ => format!("Deploying… {}%", t.progress),
        }
    });
    view! {
        <div class="task-progress" data-status=move || current.get().status>
            <ProgressBar percent=Signal::derive(move || current.get().progress) label />
        </div>
    }
}
