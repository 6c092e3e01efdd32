//! The firing count beside "Alerts" in the navigation: how many rules fire now, read when the console opens and
//! every minute (one request at a time).

use leptos::prelude::*;

use crate::{api, nav::use_customer};

/// The count, shown only when some rule fires.
#[component]
pub fn FiringCount() -> impl IntoView {
    let customer = use_customer();
    let count = RwSignal::new(0u64);
    let read = move || {
        let c = customer.get_untracked();
        leptos::task::spawn_local(async move {
            if let Ok(s) = api::alert_summary(&c).await {
                let _ = count.try_set(s.firing);
            }
        });
    };
    read();
    let interval = set_interval_with_handle(read, std::time::Duration::from_secs(60)).ok();
    on_cleanup(move || {
        if let Some(h) = interval {
            h.clear();
        }
    });
    move || {
        let n = count.get();
        (n > 0).then(|| view! { " " <span class="badge danger nav-count" aria-label=format!("{n} firing")>{n}</span> })
    }
}
