//! The one pager under every paged table: where we are, previous and next.

use leptos::prelude::*;

/// `page` counts from 1; `on_page` gets the page to show.
#[component]
pub fn Pager(
    page: u64,
    /// Items per page.
    per_page: u64,
    /// Items on this page.
    shown: u64,
    total: u64,
    on_page: Callback<u64>,
) -> impl IntoView {
    let first = page.saturating_sub(1) * per_page + 1;
    let text = if shown == 0 { format!("0 of {total}") } else { format!("{first}–{} of {total}", first + shown - 1) };
    let has_more = first + shown <= total && shown > 0;
    view! {
        <nav class="pager" aria-label="Pages">
            <span class="muted" role="status">{text}</span>
            <button disabled=page <= 1 on:click=move |_| on_page.run(page - 1)>"Previous"</button>
            <button disabled=!has_more on:click=move |_| on_page.run(page + 1)>"Next"</button>
        </nav>
    }
}
