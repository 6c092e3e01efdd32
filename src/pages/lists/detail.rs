//! One network list: its header (rename, deprecate, delete), its entries searched and paged (in the address),
//! adding entries, and removals confirmed.

use edge_api::{NetworkList, NetworkListUpdate};
use leptos::{ev, prelude::*};
use leptos_router::{NavigateOptions, hooks::use_navigate};

use super::{
    add::AddEntries,
    usage::{Usage, consequence},
};
use crate::{
    api::{self},
    components::{
        async_view::{AsyncView, act, load},
        curl::CopyCurl,
        dialog::Confirm,
        errors::FormError,
        pager::Pager,
        progress::TaskProgress,
        time::Time,
    },
    nav::{use_customer, use_query_state},
    session::{Auth, may_write},
};

const ENTRIES_PER_PAGE: u64 = 50;

/// A change awaiting confirmation: removing an entry, all entries or the list, or deprecating it.
#[derive(Clone)]
enum Removal {
    Entry { id: String, value: String },
    AllEntries,
    List,
    Deprecate,
}

#[component]
pub(super) fn ListDetail(id: String) -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let navigate = use_navigate();
    let reload = RwSignal::new(0u32);
    let list_id = StoredValue::new(id.clone());
    let list = load(move || {
        let c = customer.get();
        reload.track();
        async move { api::get_list(&c, &list_id.get_value()).await }
    });
    // Read once per list (and again after a change of it): whether rules would be left matching nothing.
    let usage = load(move || {
        let c = customer.get();
        reload.track();
        async move { api::list_usage(&c, &list_id.get_value()).await }
    });
    let kind = Memo::new(move |_| list.get().and_then(Result::ok).map(|l| (l.id, l.list_type)));
    let writable = Memo::new(move |_| auth.me().as_ref().map(may_write));
    let task = RwSignal::new(None::<edge_api::Task>);
    let pending = RwSignal::new(None::<Removal>);
    let act = act(move |a: &Removal| {
        let (c, a, id) = (customer.get_untracked(), a.clone(), list_id.get_value());
        async move {
            match a {
                Removal::Entry { id: entry, .. } => api::delete_entry(&c, &id, &entry).await.map(Some),
                Removal::AllEntries => api::clear_entries(&c, &id).await.map(Some),
                Removal::List => api::delete_list(&c, &id).await.map(|_| None),
                Removal::Deprecate => {
                    api::update_list(&c, &id, &NetworkListUpdate { deprecated: Some(true), ..Default::default() })
                        .await
                        .map(|_| None)
                }
            }
        }
    });
    {
        let navigate = navigate.clone();
        Effect::new(move |_| {
            if let Some(Ok(t)) = act.value().get() {
                let deleted_list = matches!(pending.get_untracked(), Some(Removal::List));
                pending.set(None);
                if deleted_list {
                    navigate("?", NavigateOptions::default());
                } else {
                    if t.is_some() {
                        task.set(t);
                    }
                    reload.update(|n| *n += 1);
                }
            }
        });
    }
    let act_error = Signal::derive(move || act.value().get().and_then(Result::err));
    let back = move |_| navigate("?", NavigateOptions::default());

    view! {
        <p>
            <button class="link" on:click=back>"← All network lists"</button>
        </p>
        <AsyncView resource=list loading="Loading the list…" let:answer>
            <ListHeader list=answer writable=auth.can_write() reload pending />
        </AsyncView>
        <Usage usage />
        // Rendered once per list, not on every reload, so that what they show (a report, a page) stays; and
        // once the user's role is known, so that its arrival does not rebuild them under their reads.
        {move || {
            let writable = writable.get()?;
            kind.get()
                .map(|(id, list_type)| {
                    view! {
                        {writable.then(|| view! { <AddEntries list_id=id.clone() list_type reload /> })}
                        <Entries list_id=id writable reload pending />
                    }
                })
        }}
        {move || task.get().map(|t| view! { <div class="card panel"><h2>"Deployment"</h2><TaskProgress task=t /></div> })}
        {move || {
            pending
                .get()
                .map(|a| {
                    // Emptying or deleting the list leaves the rules that use it matching nothing: say which.
                    let stranded = match &a {
                        Removal::AllEntries | Removal::List => {
                            usage.get_untracked().and_then(Result::ok).and_then(|u| consequence(&u).map(|c| (c, u)))
                        }
                        _ => None,
                    };
                    let (title, message, action) = match &a {
                        Removal::Entry { value, .. } => (
                            format!("Remove {value}?"),
                            format!("{value} is removed from the list and the change deployed to the edge."),
                            "Remove entry",
                        ),
                        Removal::AllEntries => (
                            "Delete all entries?".to_string(),
                            "Every entry is removed; the list itself stays, empty, and rules referring to it match nothing.".to_string(),
                            "Delete all entries",
                        ),
                        Removal::List => (
                            "Delete this list?".to_string(),
                            "The list and all its entries are deleted. This cannot be undone.".to_string(),
                            "Delete list",
                        ),
                        Removal::Deprecate => (
                            "Deprecate this list?".to_string(),
                            "A deprecated list is hidden from the lists (unless asked for) and should no longer be used by rules; the rules that use it keep working. You can undeprecate it later.".to_string(),
                            "Deprecate list",
                        ),
                    };
                    view! {
                        <Confirm
                            title
                            message
                            action=action.to_string()
                            pending=act.pending()
                            error=act_error
                            on_confirm=Callback::new(move |_| {
                                act.dispatch(a.clone());
                            })
                            on_close=Callback::new(move |_| {
                                act.value().set(None);
                                pending.set(None);
                            })
                        >
                            {stranded.map(|(sentence, u)| view! {
                                <div class="notice error" id="stranded-rules">
                                    <p>{sentence}</p>
                                    <ul>
                                        {u.properties.iter().flat_map(|p| p.rules.iter().map(move |r| format!("{} in {}", r.name, p.property))).take(10).map(|l| view! { <li>{l}</li> }).collect_view()}
                                    </ul>
                                </div>
                            })}
                        </Confirm>
                    }
                })
        }}
    }
}

#[component]
fn ListHeader(
    list: NetworkList,
    writable: bool,
    reload: RwSignal<u32>,
    pending: RwSignal<Option<Removal>>,
) -> impl IntoView {
    let customer = use_customer();
    let editing = RwSignal::new(false);
    let name = RwSignal::new(list.name.clone());
    let description = RwSignal::new(list.description.clone());
    let id = StoredValue::new(list.id.clone());
    let update = act(move |u: &NetworkListUpdate| {
        let (c, u) = (customer.get_untracked(), u.clone());
        async move { api::update_list(&c, &id.get_value(), &u).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(_)) = update.value().get() {
            editing.set(false);
            reload.update(|n| *n += 1);
        }
    });
    let error = Signal::derive(move || update.value().get().and_then(Result::err));
    let deprecated = list.deprecated;
    let save = move |e: ev::SubmitEvent| {
        e.prevent_default();
        update.dispatch(NetworkListUpdate {
            name: Some(name.get_untracked()),
            description: Some(description.get_untracked()),
            deprecated: None,
        });
    };
    view! {
        <div class="card panel list-header">
            <h2>
                {list.name.clone()} " " <span class="badge">{list.list_type.clone()}</span>
                {deprecated.then(|| view! { " " <span class="badge off">"deprecated"</span> })}
            </h2>
            <p class="muted">{if list.description.is_empty() { "No description.".to_string() } else { list.description.clone() }}</p>
            <p class="small muted">
                {format!("Id {} · created ", list.id)}
                <Time iso=list.creation_timestamp.clone() />
                {list.modified_timestamp.clone().map(|m| view! { " · modified " <Time iso=m /> })}
            </p>
            <FormError error fields=&[] />
            <Show when=move || editing.get()>
                <form class="form" on:submit=save novalidate>
                    <label>"Name" <input name="name" bind:value=name /></label>
                    <label>"Description" <input name="description" bind:value=description /></label>
                    <div class="actions">
                        <button type="button" on:click=move |_| editing.set(false)>"Cancel"</button>
                        <button type="submit" class="primary">"Save"</button>
                    </div>
                </form>
            </Show>
            {writable
                .then(|| {
                    view! {
                        <div class="actions left">
                            <button on:click=move |_| editing.set(true)>"Rename or describe"</button>
                            <button on:click=move |_| {
                                if deprecated {
                                    update.dispatch(NetworkListUpdate { deprecated: Some(false), ..Default::default() });
                                } else {
                                    pending.set(Some(Removal::Deprecate));
                                }
                            }>{if deprecated { "Undeprecate" } else { "Deprecate" }}</button>
                            <button class="danger-outline" on:click=move |_| pending.set(Some(Removal::AllEntries))>
                                "Delete all entries"
                            </button>
                            <button class="danger-outline" on:click=move |_| pending.set(Some(Removal::List))>
                                "Delete list"
                            </button>
                        </div>
                    }
                })}
        </div>
    }
}

#[component]
fn Entries(
    list_id: String,
    writable: bool,
    reload: RwSignal<u32>,
    pending: RwSignal<Option<Removal>>,
) -> impl IntoView {
    let customer = use_customer();
    let q = use_query_state();
    let page = Memo::new(move |_| q.page("page"));
    let search = Memo::new(move |_| q.get("q"));
    let query = RwSignal::new(search.get_untracked());
    let id = StoredValue::new(list_id);
    let url = Memo::new(move |_| {
        api::entries_url(&customer.get(), &id.get_value(), page.get(), ENTRIES_PER_PAGE, &search.get())
    });
    let entries = load(move || {
        let u = url.get();
        reload.track();
        async move { api::get_json::<edge_api::EntryPage>(&u).await }
    });
    let on_search = move |e: ev::SubmitEvent| {
        e.prevent_default();
        q.set(&[("q", query.get_untracked().trim().to_string()), ("page", String::new())]);
    };
    view! {
        <div class="card panel wide">
            <div class="toolbar">
                <h2>"Entries"</h2>
                <span class="spacer"></span>
                <CopyCurl path=move || Some(url.get()) />
            </div>
            <form class="search" role="search" on:submit=on_search>
                <input type="search" name="q" placeholder="Search entries" aria-label="Search entries" bind:value=query />
                <button type="submit">"Search"</button>
            </form>
            <AsyncView resource=entries loading="Loading entries…" let:answer>
                {match answer {
                        p if p.items.is_empty() => view! { <div class="empty">"No entries."</div> }.into_any(),
                        p => {
                            let shown = p.items.len() as u64;
                            view! {
                                <div class="table-scroll">
                                <table class="data entries">
                                    <thead>
                                        <tr>
                                            <th scope="col">"Entry"</th>
                                            <th scope="col">"Added by"</th>
                                            <th scope="col">"Added"</th>
                                            {writable.then(|| view! { <th scope="col" class="actions"></th> })}
                                        </tr>
                                    </thead>
                                    <tbody>
                                        {p
                                            .items
                                            .into_iter()
                                            .map(|e| {
                                                let action = Removal::Entry { id: e.id.clone(), value: e.entry.clone() };
                                                view! {
                                                    <tr data-entry=e.entry.clone()>
                                                        <td>
                                                            <code>{e.entry.clone()}</code>
                                                        </td>
                                                        <td>{e.added_by.clone()}</td>
                                                        <td><Time iso=e.creation_timestamp.clone() /></td>
                                                        {writable
                                                            .then(|| {
                                                                view! {
                                                                    <td class="actions">
                                                                        <button class="link danger" on:click=move |_| pending.set(Some(action.clone()))>
                                                                            "Remove"
                                                                        </button>
                                                                    </td>
                                                                }
                                                            })}
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
                                </div>
                                <Pager page=p.page_index per_page=ENTRIES_PER_PAGE shown total=p.total on_page=Callback::new(move |n: u64| q.set(&[("page", n.to_string())])) />
                            }
                                .into_any()
                        }
                }}
            </AsyncView>
        </div>
    }
}
