//! Network lists: the lists with filters and paging; a list's entries with search and paging; adding entries
//! by paste or CSV file with a per-line validation report; removal; deployment progress.

use edge_api::{
    AddEntriesResult, MAX_ENTRIES_PER_CALL, NetworkList, NetworkListUpdate, NewNetworkList, Task, normalize_entry,
};
use leptos::{ev, prelude::*};
use leptos_router::{NavigateOptions, hooks::use_navigate};
use wasm_bindgen::JsCast;

use crate::{
    api::{self, ApiError},
    components::{
        async_view::{AsyncView, act, load},
        dialog::{Confirm, Dialog},
        errors::FormError,
        pager::Pager,
        progress::TaskProgress,
        time::datetime,
    },
    pages::{IndexOrItem, use_customer},
    session::Auth,
};

const LISTS_PER_PAGE: u64 = 10;
const ENTRIES_PER_PAGE: u64 = 50;

/// One line of pasted or uploaded text, checked as the server will.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedLine {
    /// 1-based line number.
    pub line: usize,
    pub text: String,
    pub result: Result<String, String>,
}

/// Checks every non-empty, non-comment line: the first CSV field (`,`, `;` or tab separated, quotes removed).
pub fn check_lines(list_type: &str, text: &str) -> Vec<CheckedLine> {
    text.lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let field = raw.split([',', ';', '\t']).next().unwrap_or("").trim().trim_matches('"').trim();
            if field.is_empty() || field.starts_with('#') {
                return None;
            }
            Some(CheckedLine { line: i + 1, text: field.to_string(), result: normalize_entry(list_type, field) })
        })
        .collect()
}

/// The distinct valid values of checked lines, in order.
pub fn valid_values(lines: &[CheckedLine]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    lines.iter().filter_map(|l| l.result.as_ref().ok()).filter(|v| seen.insert((*v).clone())).cloned().collect()
}

#[component]
pub fn NetworkLists() -> impl IntoView {
    view! {
        <IndexOrItem
            title="Network lists"
            param="list"
            index=|| view! { <ListIndex /> }
            item=|id| view! { <ListDetail id /> }
        />
    }
}

#[component]
fn ListIndex() -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let navigate = use_navigate();
    let page = RwSignal::new(1u64);
    let list_type = RwSignal::new(String::new());
    let deprecated = RwSignal::new(false);
    let creating = RwSignal::new(false);
    let reload = RwSignal::new(0u32);
    let lists = load(move || {
        let (c, p, t, d) = (customer.get(), page.get(), list_type.get(), deprecated.get());
        reload.track();
        async move { api::list_lists(&c, p, LISTS_PER_PAGE, (!t.is_empty()).then_some(t.as_str()), d).await }
    });
    let open = Callback::new(move |id: String| {
        navigate(&format!("?list={}", api::encode(&id)), NavigateOptions::default());
    });
    view! {
        <div class="toolbar">
            <label class="inline">
                "Type "
                <select name="list-type" on:change=move |e| {
                    list_type.set(event_target_value(&e));
                    page.set(1);
                }>
                    <option value="">"IP and GEO"</option>
                    <option value="IP">"IP"</option>
                    <option value="GEO">"GEO"</option>
                </select>
            </label>
            <label class="check inline">
                <input
                    type="checkbox"
                    on:change=move |e| {
                        deprecated.set(event_target_checked(&e));
                        page.set(1);
                    }
                />
                "Include deprecated"
            </label>
            <span class="spacer"></span>
            <Show when=move || auth.can_write()>
                <button class="primary" id="new-list" on:click=move |_| creating.set(true)>
                    "New list"
                </button>
            </Show>
        </div>
        <AsyncView resource=lists loading="Loading lists…" let:answer>
            {match answer {
                    p if p.items.is_empty() => {
                        view! { <div class="empty">"No network lists match."</div> }.into_any()
                    }
                    p => {
                        let shown = p.items.len() as u64;
                        view! {
                            <table class="data lists">
                                <thead>
                                    <tr>
                                        <th>"Name"</th>
                                        <th>"Type"</th>
                                        <th>"Description"</th>
                                        <th>"Modified"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {p
                                        .items
                                        .into_iter()
                                        .map(|l| {
                                            let id = l.id.clone();
                                            view! {
                                                <tr data-list=l.id.clone()>
                                                    <td>
                                                        <button class="link" on:click=move |_| open.run(id.clone())>
                                                            {l.name.clone()}
                                                        </button>
                                                        {l.deprecated.then(|| view! { <span class="badge off">"deprecated"</span> })}
                                                    </td>
                                                    <td>
                                                        <span class="badge">{l.list_type.clone()}</span>
                                                    </td>
                                                    <td class="muted">{l.description.clone()}</td>
                                                    <td>
                                                        {datetime(l.modified_timestamp.as_deref().unwrap_or(&l.creation_timestamp))}
                                                    </td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                            <Pager page=p.page_index per_page=LISTS_PER_PAGE shown total=p.total on_page=Callback::new(move |n| page.set(n)) />
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
                        <NewListDialog
                            on_done=Callback::new(move |l: NetworkList| {
                                creating.set(false);
                                reload.update(|n| *n += 1);
                                open.run(l.id);
                            })
                            on_close=Callback::new(move |_| creating.set(false))
                        />
                    }
                })
        }}
    }
}

#[component]
fn NewListDialog(on_done: Callback<NetworkList>, on_close: Callback<()>) -> impl IntoView {
    let customer = use_customer();
    let name = RwSignal::new(String::new());
    let description = RwSignal::new(String::new());
    let list_type = RwSignal::new("IP".to_string());
    let create = act(move |l: &NewNetworkList| {
        let (c, l) = (customer.get_untracked(), l.clone());
        async move { api::create_list(&c, &l).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(l)) = create.value().get() {
            on_done.run(l);
        }
    });
    let error = Signal::derive(move || create.value().get().and_then(Result::err));
    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        create.dispatch(NewNetworkList {
            name: name.get_untracked(),
            list_type: list_type.get_untracked(),
            description: description.get_untracked(),
            list: Vec::new(),
        });
    };
    view! {
        <Dialog title="New network list".to_string() on_close>
            <form class="form" on:submit=submit novalidate>
                <label>
                    "Name"
                    <input name="name" bind:value=name autofocus=true />
                </label>
                <label>
                    "Type"
                    <select name="type" on:change=move |e| list_type.set(event_target_value(&e))>
                        <option value="IP">"IP addresses and ranges"</option>
                        <option value="GEO">"Countries (ISO 3166-1 codes)"</option>
                    </select>
                </label>
                <label>
                    "Description"
                    <input name="description" bind:value=description />
                </label>
                <FormError error fields=&[] />
                <div class="actions">
                    <button type="button" on:click=move |_| on_close.run(())>"Cancel"</button>
                    <button type="submit" class="primary" disabled=move || create.pending().get()>"Create list"</button>
                </div>
            </form>
        </Dialog>
    }
}

/// A removal awaiting confirmation: an entry, all entries, or the list.
#[derive(Clone)]
enum Removal {
    Entry { id: String, value: String },
    AllEntries,
    List,
}

#[component]
fn ListDetail(id: String) -> impl IntoView {
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
    let kind = Memo::new(move |_| list.get().and_then(Result::ok).map(|l| (l.id, l.list_type)));
    let task = RwSignal::new(None::<Task>);
    let pending = RwSignal::new(None::<Removal>);
    let act = act(move |a: &Removal| {
        let (c, a, id) = (customer.get_untracked(), a.clone(), list_id.get_value());
        async move {
            match a {
                Removal::Entry { id: entry, .. } => api::delete_entry(&c, &id, &entry).await.map(Some),
                Removal::AllEntries => api::clear_entries(&c, &id).await.map(Some),
                Removal::List => api::delete_list(&c, &id).await.map(|_| None),
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
                    task.set(t);
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
        // Rendered once per list, not on every reload, so that what they show (a report, a page) stays.
        {move || {
            kind.get()
                .map(|(id, list_type)| {
                    let writable = auth.can_write();
                    view! {
                        {writable.then(|| view! { <AddEntries list_id=id.clone() list_type task reload /> })}
                        <Entries list_id=id writable reload pending />
                    }
                })
        }}
        {move || task.get().map(|t| view! { <div class="card panel"><h2>"Deployment"</h2><TaskProgress task=t /></div> })}
        {move || {
            pending
                .get()
                .map(|a| {
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
                        />
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
                {format!("Id {} · created {}", list.id, datetime(&list.creation_timestamp))}
                {list.modified_timestamp.as_deref().map(|m| format!(" · modified {}", datetime(m)))}
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
                                update
                                    .dispatch(NetworkListUpdate { deprecated: Some(!deprecated), ..Default::default() });
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
fn AddEntries(
    list_id: String,
    list_type: String,
    task: RwSignal<Option<Task>>,
    reload: RwSignal<u32>,
) -> impl IntoView {
    let customer = use_customer();
    let text = RwSignal::new(String::new());
    let checked = RwSignal::new(None::<Vec<CheckedLine>>);
    let lt = list_type.clone();
    let check = move || checked.set(Some(check_lines(&lt, &text.get_untracked())));
    let id = StoredValue::new(list_id);
    let add = act(move |values: &Vec<String>| {
        let (c, values) = (customer.get_untracked(), values.clone());
        async move {
            // The API takes at most 5,000 entries a call: send them in calls of that size, add up the counts.
            let (mut added, mut already_present, mut last) = (0, 0, None);
            for chunk in values.chunks(MAX_ENTRIES_PER_CALL) {
                let r: AddEntriesResult = api::add_entries(&c, &id.get_value(), chunk).await?;
                added += r.added;
                already_present += r.already_present;
                last = Some(r);
            }
            Ok::<_, ApiError>(last.map(|r| AddEntriesResult { added, already_present, ..r }))
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(Some(r))) = add.value().get() {
            task.set(Some(r.task.clone()));
            text.set(String::new());
            checked.set(None);
            reload.update(|n| *n += 1);
        }
    });
    let error = Signal::derive(move || add.value().get().and_then(Result::err));
    let lt = list_type.clone();
    let on_file = move |e: ev::Event| {
        let Some(input) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else { return };
        let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
        let lt = lt.clone();
        leptos::task::spawn_local(async move {
            if let Ok(content) = wasm_bindgen_futures::JsFuture::from(file.text()).await {
                let content = content.as_string().unwrap_or_default();
                checked.set(Some(check_lines(&lt, &content)));
                text.set(content);
            }
        });
    };
    let placeholder = if list_type == "IP" { "192.0.2.10\n198.51.100.0/24\n2001:db8::/48" } else { "DE\nFR\nGB" };
    view! {
        <div class="card panel" id="add-entries">
            <h2>"Add entries"</h2>
            <p class="muted small">
                {if list_type == "IP" {
                    "One IPv4 or IPv6 address or CIDR range per line (or the first column of a CSV file)."
                } else {
                    "One ISO 3166-1 two-letter country code per line (or the first column of a CSV file)."
                }}
            </p>
            <textarea name="entries" rows="6" placeholder=placeholder bind:value=text on:input=move |_| checked.set(None)></textarea>
            <div class="actions left">
                <button on:click=move |_| check()>"Check"</button>
                <label class="file">
                    "Upload CSV… " <input type="file" accept=".csv,.txt,text/csv,text/plain" on:change=on_file />
                </label>
            </div>
            {move || {
                checked
                    .get()
                    .map(|lines| {
                        let valid = valid_values(&lines);
                        let invalid: Vec<CheckedLine> = lines.iter().filter(|l| l.result.is_err()).cloned().collect();
                        let n = valid.len();
                        view! {
                            <div class="report" role="status">
                                <p>
                                    <strong>{format!("{n} valid")}</strong>
                                    {format!(
                                        ", {} invalid of {} line(s){}",
                                        invalid.len(),
                                        lines.len(),
                                        if lines.iter().filter(|l| l.result.is_ok()).count() > n { " (duplicates merged)" } else { "" },
                                    )}
                                </p>
                                {(!invalid.is_empty())
                                    .then(|| {
                                        view! {
                                            <ul class="invalid-lines">
                                                {invalid
                                                    .iter()
                                                    .take(50)
                                                    .map(|l| {
                                                        view! {
                                                            <li>
                                                                {format!("Line {}: ", l.line)}
                                                                {l.result.clone().err().unwrap_or_default()}
                                                            </li>
                                                        }
                                                    })
                                                    .collect_view()}
                                                {(invalid.len() > 50).then(|| view! { <li>{format!("… and {} more", invalid.len() - 50)}</li> })}
                                            </ul>
                                        }
                                    })}
                                <button class="primary" disabled=move || n == 0 || add.pending().get() on:click=move |_| {
                                    add.dispatch(valid.clone());
                                }>{format!("Add {n} entries")}</button>
                            </div>
                        }
                    })
            }}
            {move || {
                add.value()
                    .get()
                    .and_then(Result::ok)
                    .flatten()
                    .map(|r| {
                        view! {
                            <div class="notice success" role="status">
                                {format!("Added {} entries; {} were already in the list.", r.added, r.already_present)}
                            </div>
                        }
                    })
            }}
            <FormError error fields=&[] />
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
    let page = RwSignal::new(1u64);
    let query = RwSignal::new(String::new());
    let search = RwSignal::new(String::new());
    let id = StoredValue::new(list_id);
    let entries = load(move || {
        let (c, p, s) = (customer.get(), page.get(), search.get());
        reload.track();
        async move { api::list_entries(&c, &id.get_value(), p, ENTRIES_PER_PAGE, &s).await }
    });
    let on_search = move |e: ev::SubmitEvent| {
        e.prevent_default();
        page.set(1);
        search.set(query.get_untracked());
    };
    view! {
        <div class="card panel wide">
            <h2>"Entries"</h2>
            <form class="search" role="search" on:submit=on_search>
                <input type="search" placeholder="Search entries" aria-label="Search entries" bind:value=query />
                <button type="submit">"Search"</button>
            </form>
            <AsyncView resource=entries loading="Loading entries…" let:answer>
                {match answer {
                        p if p.items.is_empty() => view! { <div class="empty">"No entries."</div> }.into_any(),
                        p => {
                            let shown = p.items.len() as u64;
                            view! {
                                <table class="data entries">
                                    <thead>
                                        <tr>
                                            <th>"Entry"</th>
                                            <th>"Added by"</th>
                                            <th>"Added"</th>
                                            {writable.then(|| view! { <th class="actions"></th> })}
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
                                                        <td>{datetime(&e.creation_timestamp)}</td>
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
                                <Pager page=p.page_index per_page=ENTRIES_PER_PAGE shown total=p.total on_page=Callback::new(move |n| page.set(n)) />
                            }
                                .into_any()
                        }
                }}
            </AsyncView>
        </div>
    }
}
