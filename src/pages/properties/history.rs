//! A property's version history: changes between versions, comparison with the current one, rollback
//! (done by the editor, through the same etag and merge path as a save). The changes between two versions
//! named in the address (`?from=&to=`, as the charts' timeline markers link to them) open at once.

use edge_api::config::{Change, ConfigDocument};
use leptos::prelude::*;
use serde_json::Value;

use super::labels::{human_path, value_text};
use crate::{
    api::{self, ApiError},
    components::{
        async_view::{AsyncView, load},
        curl::CopyCurl,
        dialog::Confirm,
        time::Time,
    },
    nav::use_customer,
};

#[component]
pub(super) fn History(
    name: String,
    reload: RwSignal<u32>,
    #[prop(into)] writable: Signal<bool>,
    /// Rolls back to a version; its value is the outcome (a notice or the error).
    rollback: Action<u64, Result<ConfigDocument, ApiError>>,
    /// The current configuration, to name the nodes of a comparison.
    #[prop(into)]
    current: Signal<Option<Value>>,
) -> impl IntoView {
    let customer = use_customer();
    let name = StoredValue::new(name);
    let versions = load(move || {
        let (c, property) = (customer.get(), name.get_value());
        reload.track();
        // Values, not the view's stores, go into the request: it may be answered after the view is gone.
        async move { api::config_versions(&c, &property).await }
    });
    let version = |k: &str| crate::nav::query_param(k).and_then(|v| v.parse::<u64>().ok());
    let asked = version("from").zip(version("to"));
    let compare = RwSignal::new(asked);
    let diff = load(move || {
        let (c, pair, property) = (customer.get(), compare.get(), name.get_value());
        async move {
            match pair {
                Some((from, to)) => api::config_diff(&c, &property, from, to).await.map(Some),
                None => Ok(None),
            }
        }
    });
    let rolling = RwSignal::new(None::<u64>);
    Effect::new(move |_| {
        if let Some(Ok(_)) = rollback.value().get() {
            rolling.set(None);
        }
    });
    let rollback_error = Signal::derive(move || rollback.value().get().and_then(Result::err));
    // The changes asked for by the address are what the user came for: shown once they arrive.
    if asked.is_some() {
        let shown = StoredValue::new(false);
        Effect::new(move |_| {
            if let Some(Ok(Some(_))) = diff.get()
                && !shown.get_value()
            {
                shown.set_value(true);
                request_animation_frame(|| {
                    if let Some(e) = document().get_element_by_id("version-diff") {
                        e.scroll_into_view();
                    }
                });
            }
        });
    }
    view! {
        <div class="card panel wide" id="history">
            <div class="toolbar">
                <h2>"History"</h2>
                <span class="spacer"></span>
                <CopyCurl path=move || Some(format!("{}/versions", api::config_url(&customer.get(), &name.get_value()))) />
            </div>
            <AsyncView resource=versions loading="Loading history…" let:list>
                {
                            let latest = list.first().map(|v| v.version).unwrap_or(0);
                            view! {
                                <div class="table-scroll">
                                <table class="data versions">
                                    <thead>
                                        <tr>
                                            <th>"Version"</th>
                                            <th>"Saved"</th>
                                            <th>"By"</th>
                                            <th>"Comment"</th>
                                            <th class="actions"></th>
                                        </tr>
                                    </thead>
                                    <tbody>
                                        {list
                                            .into_iter()
                                            .map(|v| {
                                                let n = v.version;
                                                view! {
                                                    <tr data-version=n>
                                                        <td>{n}</td>
                                                        <td><Time iso=v.created.clone() /></td>
                                                        <td>{v.author.clone()}</td>
                                                        <td>{v.comment.clone()}</td>
                                                        <td class="actions">
                                                            {(n > 1).then(|| view! { <button class="link" on:click=move |_| compare.set(Some((n - 1, n)))>"Changes"</button> })}
                                                            {(n != latest).then(|| view! { <button class="link" on:click=move |_| compare.set(Some((n, latest)))>"Compare with current"</button> })}
                                                            // Read with try_get: when the session ends the editor goes, and the writability it
                                                            // passes with it; a row may still hear of the change (it panicked).
                                                            {move || (writable.try_get() == Some(true) && n != latest).then(|| view! { <button class="link" on:click=move |_| {
                                                                rollback.value().set(None);
                                                                rolling.set(Some(n));
                                                            }>"Roll back to this"</button> })}
                                                        </td>
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
                                </div>
                            }
                }
            </AsyncView>
            <AsyncView resource=diff let:answer>
                {answer
                    .map(|changes| {
                        let (from, to) = compare.get_untracked().unwrap_or_default();
                        let docs = current.get_untracked().into_iter().collect();
                        // Undoing the change shown: back to the version before it.
                        let undo = Callback::new(move |()| {
                            rollback.value().set(None);
                            rolling.set(Some(from));
                        });
                        // Offered once the user's role is known to allow it (the record may come after the diff).
                        let can_undo = Signal::derive(move || from >= 1 && writable.try_get() == Some(true));
                        view! { <DiffView from to changes docs undo can_undo /> }
                    })}
            </AsyncView>
        </div>
        {move || {
            rolling
                .get()
                .map(|v| {
                    view! {
                        <Confirm
                            title=format!("Roll back to version {v}?")
                            message=format!("The configuration of version {v} is saved as a new version and deployed. The versions since stay in the history.")
                            action="Roll back".to_string()
                            pending=rollback.pending()
                            error=rollback_error
                            on_confirm=Callback::new(move |_| {
                                rollback.dispatch(v);
                            })
                            on_close=Callback::new(move |_| {
                                rollback.value().set(None);
                                rolling.set(None);
                            })
                        />
                    }
                })
        }}
    }
}

#[component]
fn DiffView(
    from: u64,
    to: u64,
    changes: Vec<Change>,
    docs: Vec<Value>,
    undo: Callback<()>,
    can_undo: Signal<bool>,
) -> impl IntoView {
    view! {
        <div class="toolbar">
            <h3 id="version-diff">{format!("Changes from version {from} to {to}")}</h3>
            <span class="spacer"></span>
            {move || can_undo.get().then(|| view! { <button type="button" class="secondary" on:click=move |_| undo.run(())>{format!("Roll back to version {from}")}</button> })}
        </div>
        <ChangesTable changes docs />
    }
}

/// Changes between two configurations, one under the other so that each stays readable at any width: where
/// for a person ("Origins › api-cluster-x › Port", the API's path on hover), what happened, before → after.
/// `docs` (the configurations concerned, newest first) name the nodes.
#[component]
pub(super) fn ChangesTable(changes: Vec<Change>, #[prop(optional)] docs: Vec<Value>) -> impl IntoView {
    let docs: Vec<&Value> = docs.iter().collect();
    if changes.is_empty() {
        return view! { <p class="muted">"No differences."</p> }.into_any();
    }
    let items = changes
        .iter()
        .map(|c| {
            let what = match c.op.as_str() {
                "added" => "added",
                "removed" => "removed",
                _ => "changed",
            };
            let values = match what {
                "added" => view! { <code class="after">{value_text(c.after.as_ref())}</code> }.into_any(),
                "removed" => view! { <code class="before">{value_text(c.before.as_ref())}</code> }.into_any(),
                _ => view! {
                    <code class="before">{value_text(c.before.as_ref())}</code>
                    <span class="arrow" aria-label="becomes">" → "</span>
                    <code class="after">{value_text(c.after.as_ref())}</code>
                }
                .into_any(),
            };
            view! {
                <li class=format!("change op-{what}") data-path=c.path.clone()>
                    <div class="change-where">
                        <span class="where" title=c.path.clone()>{human_path(&c.path, &docs)}</span>
                        <span class=format!("badge op {what}")>{what}</span>
                    </div>
                    <div class="change-values">{values}</div>
                </li>
            }
        })
        .collect_view();
    view! { <ul class="changes diff">{items}</ul> }.into_any()
}
