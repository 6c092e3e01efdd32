//! Progress of long-running changes: a bar; following something until it ends, with at most one request in
//! flight and a growing pause between requests; a task's bar that follows the task.

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use edge_api::Task;
use leptos::{prelude::*, task::spawn_local};

use crate::{api, nav::use_customer};

/// The first pause between two requests for progress; each later one is half as long again, up to
/// [`POLL_MAX_MS`].
pub const POLL_FIRST_MS: i32 = 700;
pub const POLL_MAX_MS: i32 = 5_000;

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

/// Waits `ms` milliseconds.
pub async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Runs `step` again and again while the view lives and until it answers `false` (done): one run at a
/// time, never two at once however slow the server is, with a pause after each run that grows from
/// [`POLL_FIRST_MS`] to [`POLL_MAX_MS`]. The signal it returns turns false when it has stopped (for the views'
/// `data-following`, which tells tests that no further request can come).
pub fn follow<F, Fut>(step: F) -> RwSignal<bool>
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = bool> + 'static,
{
    let following = RwSignal::new(true);
    let alive = Arc::new(AtomicBool::new(true));
    {
        let alive = alive.clone();
        on_cleanup(move || alive.store(false, Ordering::Relaxed));
    }
    spawn_local(async move {
        let mut pause = POLL_FIRST_MS;
        loop {
            sleep(pause).await;
            if !alive.load(Ordering::Relaxed) || !step().await || !alive.load(Ordering::Relaxed) {
                following.try_set(false);
                return;
            }
            pause = (pause + pause / 2).min(POLL_MAX_MS);
        }
    });
    following
}

/// A task's progress, followed until it completes or fails.
#[component]
pub fn TaskProgress(task: Task) -> impl IntoView {
    let customer = use_customer();
    let done = task.complete;
    let current = RwSignal::new(task);
    let mut following = RwSignal::new(false);
    if !done {
        following = follow(move || {
            let (c, id) = (customer.get_untracked(), current.with_untracked(|t| t.id.clone()));
            async move {
                match api::get_task(&c, &id).await {
                    Ok(t) => {
                        let running = !t.complete;
                        current.try_set(t).is_none() && running
                    }
                    // A lost session ends it; anything else is tried again.
                    Err(e) => e.status != 401 && e.status != 404,
                }
            }
        });
    }
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
        <div
            class="task-progress"
            data-status=move || current.get().status
            data-task=move || current.get().id
            data-following=move || following.get().to_string()
        >
            <ProgressBar percent=Signal::derive(move || current.get().progress) label />
        </div>
    }
}
