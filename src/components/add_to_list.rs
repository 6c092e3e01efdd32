//! "Add to network list" from the security view: a value (a client IP or a country) into a list of its type.

use edge_api::AddEntriesResult;
use leptos::prelude::*;

use crate::{
    api::{self, ApiError},
    components::{
        async_view::{AsyncView, load},
        dialog::Dialog,
        errors::ApiErrorNotice,
        progress::TaskProgress,
    },
    nav::use_customer,
};

/// "Add to network list" from the security view: which value (a client IP or a country), into which list of
/// its type, confirmed; then the deployment, followed until it completes.
#[component]
pub fn AddToListDialog(
    /// The values offered, each with the list type it goes into (`IP` or `GEO`).
    choices: Vec<(&'static str, String)>,
    on_close: Callback<()>,
) -> impl IntoView {
    let customer = use_customer();
    let choice = RwSignal::new(0usize);
    let choices = StoredValue::new(choices);
    let kind = Memo::new(move |_| choices.with_value(|c| c.get(choice.get()).map(|(k, _)| *k).unwrap_or("IP")));
    let lists = load(move || {
        let (c, k) = (customer.get(), kind.get());
        async move { api::list_lists(&c, 1, 100, Some(k), false).await }
    });
    let target = RwSignal::new(String::new());
    let result = RwSignal::new(None::<Result<AddEntriesResult, ApiError>>);
    let pending = RwSignal::new(false);
    let confirm = move |_| {
        let Some((_, value)) = choices.with_value(|c| c.get(choice.get_untracked()).cloned()) else { return };
        let list = target.get_untracked();
        if list.is_empty() {
            return;
        }
        pending.set(true);
        let c = customer.get_untracked();
        leptos::task::spawn_local(async move {
            let r = api::add_entries(&c, &list, &[value]).await;
            let _ = pending.try_set(false);
            let _ = result.try_set(Some(r));
        });
    };
    let title = choices.with_value(|c| match c.as_slice() {
        [(_, v)] => format!("Add {v} to a network list"),
        _ => "Add to a network list".to_string(),
    });
    view! {
        <Dialog title on_close id="add-to-list">
            {move || match result.get() {
                Some(Ok(r)) => {
                    let href = format!("/{}/lists?list={}", customer.get_untracked(), api::encode(&r.list.id));
                    view! {
                        <p role="status">
                            {if r.added > 0 { format!("Added to {}.", r.list.name) } else { format!("Already in {}.", r.list.name) }}
                        </p>
                        <TaskProgress task=r.task />
                        <div class="actions">
                            <a href=href>"Open the list"</a>
                            <button type="button" autofocus=true on:click=move |_| on_close.run(())>"Close"</button>
                        </div>
                    }
                        .into_any()
                }
                other => {
                    let several = choices.with_value(Vec::len) > 1;
                    view! {
                        {several
                            .then(|| {
                                view! {
                                    <fieldset class="choices">
                                        <legend>"Value"</legend>
                                        {choices
                                            .get_value()
                                            .into_iter()
                                            .enumerate()
                                            .map(|(i, (k, v))| {
                                                view! {
                                                    <label class="check">
                                                        <input type="radio" name="value" prop:checked=move || choice.get() == i on:change=move |_| {
                                                            choice.set(i);
                                                            target.set(String::new());
                                                        } />
                                                        {format!("{v} ({})", if k == "IP" { "client IP" } else { "country" })}
                                                    </label>
                                                }
                                            })
                                            .collect_view()}
                                    </fieldset>
                                }
                            })}
                        <AsyncView resource=lists loading="Loading lists…" let:page>
                            {if page.items.is_empty() {
                                view! { <p class="muted">{format!("There is no {} list yet: create one under Network lists.", kind.get_untracked())}</p> }.into_any()
                            } else {
                                if target.get_untracked().is_empty() {
                                    target.set(page.items[0].id.clone());
                                }
                                view! {
                                    <label>
                                        "List"
                                        <select name="list" prop:value=move || target.get() on:change=move |e| target.set(event_target_value(&e))>
                                            {page.items.iter().map(|l| view! { <option value=l.id.clone()>{l.name.clone()}</option> }).collect_view()}
                                        </select>
                                    </label>
                                }
                                    .into_any()
                            }}
                        </AsyncView>
                        <p class="muted small">"The list's new version is deployed to the edge; rules that use the list apply to the value from then on."</p>
                        {other.and_then(Result::err).map(|error| view! { <ApiErrorNotice error /> })}
                        <div class="actions">
                            <button type="button" autofocus=true on:click=move |_| on_close.run(())>"Cancel"</button>
                            <button type="button" class="primary" id="confirm-add" disabled=move || pending.get() || target.get().is_empty() on:click=confirm>
                                "Add to list"
                            </button>
                        </div>
                    }
                        .into_any()
                }
            }}
        </Dialog>
    }
}
