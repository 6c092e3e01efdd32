//! Previous/next paging under a table.

use leptos::prelude::*;

#[component]
pub fn Pager(
    page: RwSignal<u64>,
    /// Items per page.
    count: u64,
    /// Items on this page.
    shown: u64,
    total: u64,
    has_more: bool,
) -> impl IntoView {
    let first = (page.get_untracked() - 1) * count + 1;
    let text = if shown == 0 { format!("0 of {total}") } else { format!("{first}–{} of {total}", first + shown - 1) };
    view! {
        <div class="pager">
            <span class="muted">{text}</span>
            <button disabled=move || page.get() <= 1 on:click=move |_| page.update(|p| *p -= 1)>
                "Previous"
            </button>
            <button disabled=!has_more on:click=move |_| page.update(|p| *p += 1)>
                "Next"
            </button>
        </div>
    }
}
