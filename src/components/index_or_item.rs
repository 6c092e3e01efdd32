//! A page that is an index of items or one of them, chosen by the address.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// A page titled `title` that shows one item when the query names it (`?{param}=...`) and the index otherwise,
/// so that the item survives a reload and the back button returns to the index.
#[component]
pub fn IndexOrItem<I, IV, D, DV>(title: &'static str, param: &'static str, index: I, item: D) -> impl IntoView
where
    I: Fn() -> IV + Send + Sync + 'static,
    IV: IntoView + 'static,
    D: Fn(String) -> DV + Send + Sync + 'static,
    DV: IntoView + 'static,
{
    let query = use_query_map();
    let selected = Memo::new(move |_| query.read().get(param).filter(|s| !s.is_empty()));
    view! {
        <section class="page">
            <h1>{title}</h1>
            {move || match selected.get() {
                Some(id) => item(id).into_any(),
                None => index().into_any(),
            }}
        </section>
    }
}
