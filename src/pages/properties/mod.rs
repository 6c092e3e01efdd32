//! Properties: the configuration of each, in a structured editor (read-only parts shown, locked) or as raw
//! JSON. Saving sends If-Match; when someone else saved meanwhile (409) the console merges both sides' changes
//! (three-way, against the version edited), asks only about real conflicts, and saves again. Version history
//! with diffs and rollback.

mod editor;
mod history;
pub mod labels;
mod merge;
pub mod nodes;

use edge_api::config::NewProperty;
use leptos::{ev, prelude::*};
use leptos_router::{NavigateOptions, hooks::use_navigate};

use crate::{
    api,
    components::{
        async_view::{AsyncView, act, load},
        dialog::Dialog,
        errors::FormError,
        index_or_item::IndexOrItem,
        time::datetime,
    },
    nav::use_customer,
    session::Auth,
};
use editor::PropertyEditor;

#[component]
pub fn Properties() -> impl IntoView {
    view! {
        <IndexOrItem
            title="Properties"
            param="name"
            index=|| view! { <PropertyIndex /> }
            item=|name| view! { <PropertyEditor name /> }
        />
    }
}

#[component]
fn PropertyIndex() -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let navigate = use_navigate();
    let creating = RwSignal::new(false);
    let properties = load(move || {
        let c = customer.get();
        async move { api::list_properties(&c).await }
    });
    let open = Callback::new(move |name: String| {
        navigate(&format!("?name={}", api::encode(&name)), NavigateOptions::default());
    });
    view! {
        <div class="toolbar">
            <span class="spacer"></span>
            <Show when=move || auth.can_write()>
                <button class="primary" on:click=move |_| creating.set(true)>"New property"</button>
            </Show>
        </div>
        <AsyncView resource=properties loading="Loading properties…" let:answer>
            {match answer {
                    list if list.is_empty() => view! { <div class="empty">"No properties yet."</div> }.into_any(),
                    list => {
                        view! {
                            <div class="table-scroll">
                            <table class="data properties">
                                <thead>
                                    <tr>
                                        <th>"Property"</th>
                                        <th>"Host patterns"</th>
                                        <th>"Version"</th>
                                        <th>"Modified"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {list
                                        .into_iter()
                                        .map(|p| {
                                            let name = p.name.clone();
                                            view! {
                                                <tr data-property=p.name.clone()>
                                                    <td>
                                                        <button class="link" on:click=move |_| open.run(name.clone())>
                                                            {p.name.clone()}
                                                        </button>
                                                    </td>
                                                    <td>{p.host_patterns.join(", ")}</td>
                                                    <td>{p.version}</td>
                                                    <td>{datetime(&p.modified)}</td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                            </div>
                        }
                            .into_any()
                    }
            }}
        </AsyncView>
        {move || {
            creating
                .get()
                .then(|| {
                    view! {
                        <NewPropertyDialog
                            on_done=Callback::new(move |name: String| {
                                creating.set(false);
                                open.run(name);
                            })
                            on_close=Callback::new(move |_| creating.set(false))
                        />
                    }
                })
        }}
    }
}

#[component]
fn NewPropertyDialog(on_done: Callback<String>, on_close: Callback<()>) -> impl IntoView {
    let customer = use_customer();
    let name = RwSignal::new(String::new());
    let hosts = RwSignal::new(String::new());
    let create = act(move |p: &NewProperty| {
        let (c, p) = (customer.get_untracked(), p.clone());
        async move { api::create_property(&c, &p).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(doc)) = create.value().get() {
            on_done.run(doc.config.name);
        }
    });
    let error = Signal::derive(move || create.value().get().and_then(Result::err));
    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        create.dispatch(NewProperty {
            name: name.get_untracked().trim().to_string(),
            host_patterns: hosts
                .get_untracked()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect(),
        });
    };
    view! {
        <Dialog title="New property".to_string() on_close>
            <form class="form" on:submit=submit novalidate>
                <label>"Name" <input name="name" bind:value=name autofocus=true placeholder="e.g. www-shop" /></label>
                <label>
                    "Host patterns, one per line"
                    <textarea name="hosts" rows="3" bind:value=hosts placeholder="www.example.com\n*.static.example.com"></textarea>
                </label>
                <FormError error fields=&[] />
                <div class="actions">
                    <button type="button" on:click=move |_| on_close.run(())>"Cancel"</button>
                    <button type="submit" class="primary" disabled=move || create.pending().get()>"Create property"</button>
                </div>
            </form>
        </Dialog>
    }
}
