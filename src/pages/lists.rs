//! Network lists: the lists with filters and paging; a list's entries with search and paging (all in the
//! address); adding entries by paste or file (a file of 50,000 lines is read, checked and sent without going
//! through the text area) with a per-line validation report, sent in calls of 5,000 with each call's
//! outcome and deployment; removal; deprecation; and "Add to network list" from the security view.

use edge_api::{
    AddEntriesResult, Coverage, MAX_ENTRIES_PER_CALL, NetworkList, NetworkListUpdate, NewNetworkList, network_of,
    normalize_entry,
};
use leptos::{ev, prelude::*};
use leptos_router::{NavigateOptions, hooks::use_navigate};

use crate::{
    api::{self, ApiError},
    components::{
        async_view::{AsyncView, act, load},
        bulk::{BulkLines, FileChooser, LinesInput, Source, chunk_spans, numbered_lines, send_in_chunks},
        curl::CopyCurl,
        dialog::{Confirm, Dialog},
        errors::{ApiErrorNotice, FormError},
        pager::Pager,
        progress::TaskProgress,
        time::Time,
    },
    nav::{use_customer, use_query_state},
    pages::IndexOrItem,
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
    /// For a range with host bits set: the network it would mean, offered as a one-click fix (never applied
    /// without the user).
    pub fix: Option<String>,
    /// For a valid entry: a wider entry that already holds it — of the list, or another line.
    pub covered_by: Option<Covered>,
}

/// What covers an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Covered {
    /// An entry of the list.
    List(String),
    /// Another line of the text (its value and line number).
    Line(String, usize),
}

impl Covered {
    pub fn describe(&self) -> String {
        match self {
            Covered::List(e) => format!("already covered by {e}, in the list"),
            Covered::Line(e, line) => format!("covered by {e} on line {line}"),
        }
    }
}

/// Checks every non-empty, non-comment line: the first CSV field (`,`, `;` or tab separated, quotes removed).
pub fn check_lines(list_type: &str, text: &str) -> Vec<CheckedLine> {
    numbered_lines(text)
        .filter_map(|(line, raw)| {
            let field = first_field(raw);
            if field.is_empty() || field.starts_with('#') {
                return None;
            }
            let result = normalize_entry(list_type, field);
            let fix = if list_type == "IP" && result.is_err() { network_of(field) } else { None };
            Some(CheckedLine { line, text: field.to_string(), result, fix, covered_by: None })
        })
        .collect()
}

fn first_field(raw: &str) -> &str {
    raw.split([',', ';', '\t']).next().unwrap_or("").trim().trim_matches('"').trim()
}

/// Points out the valid entries of `lines` that a wider entry already holds: one of `list` (the list's
/// entries), else another line.
pub fn mark_covered(lines: &mut [CheckedLine], list: &[String]) {
    let in_list = Coverage::new(list.iter().map(String::as_str));
    let mut in_text = Coverage::default();
    let mut first_line = std::collections::HashMap::new();
    for l in lines.iter() {
        if let Ok(v) = &l.result {
            in_text.insert(v);
            first_line.entry(v.clone()).or_insert(l.line);
        }
    }
    for l in lines.iter_mut() {
        let Ok(v) = &l.result else { continue };
        l.covered_by = in_list.covering(v).map(Covered::List).or_else(|| {
            in_text.covering(v).map(|by| {
                let line = first_line.get(&by).copied().unwrap_or(0);
                Covered::Line(by, line)
            })
        });
    }
}

/// `text` with the entry of line `line` (1-based) replaced by `with`, the rest of the line (a CSV's other
/// columns) as it was.
pub fn replace_entry(text: &str, line: usize, with: &str) -> String {
    text.split('\n')
        .enumerate()
        .map(|(i, raw)| {
            let field = first_field(raw);
            if i + 1 == line && !field.is_empty() { raw.replacen(field, with, 1) } else { raw.to_string() }
        })
        .collect::<Vec<_>>()
        .join("\n")
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
    let q = use_query_state();
    let page = Memo::new(move |_| q.page("page"));
    let list_type = Memo::new(move |_| q.get("type"));
    let deprecated = Memo::new(move |_| q.get("deprecated") == "1");
    let creating = RwSignal::new(false);
    let reload = RwSignal::new(0u32);
    let url = Memo::new(move |_| {
        let t = list_type.get();
        api::lists_url(
            &customer.get(),
            page.get(),
            LISTS_PER_PAGE,
            (!t.is_empty()).then_some(t.as_str()),
            deprecated.get(),
        )
    });
    let lists = load(move || {
        let u = url.get();
        reload.track();
        async move { api::get_json::<edge_api::NetworkListPage>(&u).await }
    });
    let open = Callback::new(move |id: String| {
        navigate(&format!("?list={}", api::encode(&id)), NavigateOptions::default());
    });
    view! {
        <div class="toolbar">
            <label class="inline">
                "Type "
                <select name="list-type" prop:value=move || list_type.get() on:change=move |e| q.set(&[("type", event_target_value(&e)), ("page", String::new())])>
                    <option value="">"IP and GEO"</option>
                    <option value="IP">"IP"</option>
                    <option value="GEO">"GEO"</option>
                </select>
            </label>
            <label class="check inline">
                <input
                    type="checkbox"
                    prop:checked=move || deprecated.get()
                    on:change=move |e| q.set(&[("deprecated", if event_target_checked(&e) { "1".into() } else { String::new() }), ("page", String::new())])
                />
                "Include deprecated"
            </label>
            <span class="spacer"></span>
            <CopyCurl path=move || Some(url.get()) />
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
                            <div class="table-scroll">
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
                                                        <Time iso=l.modified_timestamp.clone().unwrap_or_else(|| l.creation_timestamp.clone()) />
                                                    </td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                            </div>
                            <Pager page=p.page_index per_page=LISTS_PER_PAGE shown total=p.total on_page=Callback::new(move |n: u64| q.set(&[("page", n.to_string())])) />
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

/// A change awaiting confirmation: removing an entry, all entries or the list, or deprecating it.
#[derive(Clone)]
enum Removal {
    Entry { id: String, value: String },
    AllEntries,
    List,
    Deprecate,
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
    let writable = Memo::new(move |_| auth.me().map(|u| u.role.id != "viewer"));
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

/// One call of a large add: the lines it carries and how it went.
#[derive(Clone)]
struct AddCall {
    /// 1-based numbers of its first and last value (of the valid, distinct values).
    from: usize,
    to: usize,
    result: Option<Result<AddEntriesResult, ApiError>>,
}

/// Sends `values` in calls of at most 5,000, one after the other, each call's outcome (and its deployment
/// task) reported in `calls`; a failed call does not stop the others.
async fn add_in_calls(customer: String, list: String, values: Vec<String>, calls: RwSignal<Vec<AddCall>>) {
    let _ = calls.try_set(
        chunk_spans(values.len(), MAX_ENTRIES_PER_CALL)
            .into_iter()
            .map(|(from, n)| AddCall { from, to: from + n - 1, result: None })
            .collect(),
    );
    send_in_chunks(&values, MAX_ENTRIES_PER_CALL, |i, chunk| {
        let (customer, list) = (customer.clone(), list.clone());
        async move {
            let r = api::add_entries(&customer, &list, &chunk).await;
            calls
                .try_update(|all| {
                    if let Some(call) = all.get_mut(i) {
                        call.result = Some(r);
                    }
                })
                .is_some()
        }
    })
    .await;
}

#[component]
fn AddEntries(list_id: String, list_type: String, reload: RwSignal<u32>) -> impl IntoView {
    let customer = use_customer();
    let input = BulkLines::default();
    let checked = RwSignal::new(None::<Vec<CheckedLine>>);
    let calls = RwSignal::new(Vec::<AddCall>::new());
    let sending = RwSignal::new(false);
    let lt = StoredValue::new(list_type.clone());
    let id = StoredValue::new(list_id);
    // The list's entries, read at the first Check of an IP list (not before: a list may hold 50,000), to point
    // out new entries a wider one already holds; read again after an add.
    let in_list = RwSignal::new(None::<Vec<String>>);
    let reading_list = StoredValue::new(false);
    let check = move || {
        let mut lines = check_lines(&lt.get_value(), &input.get_untracked());
        in_list.with_untracked(|l| mark_covered(&mut lines, l.as_deref().unwrap_or_default()));
        checked.set(Some(lines));
        if lt.get_value() == "IP" && in_list.with_untracked(Option::is_none) && !reading_list.get_value() {
            reading_list.set_value(true);
            let (c, list) = (customer.get_untracked(), id.get_value());
            leptos::task::spawn_local(async move {
                let Ok(entries) = api::list_entries_all(&c, &list).await else { return };
                let _ = checked.try_update(|lines| {
                    if let Some(lines) = lines {
                        mark_covered(lines, &entries);
                    }
                });
                let _ = in_list.try_set(Some(entries));
                reading_list.try_set_value(false);
            });
        }
    };
    // A one-click fix: the line's entry replaced in what the user gave (the text, or the file's text), then
    // checked again.
    let apply_fixes = move |fixes: Vec<(usize, String)>| {
        input.edit(|t| fixes.iter().fold(t.to_string(), |t, (line, with)| replace_entry(&t, *line, with)));
        check();
    };
    let add = move |values: Vec<String>| {
        sending.set(true);
        let (c, list) = (customer.get_untracked(), id.get_value());
        leptos::task::spawn_local(async move {
            add_in_calls(c, list, values, calls).await;
            let _ = sending.try_set(false);
            let _ = in_list.try_set(None);
            if calls.try_with_untracked(|all| all.iter().all(|x| matches!(x.result, Some(Ok(_))))) == Some(true) {
                input.clear();
                let _ = checked.try_set(None);
            }
            let _ = reload.try_update(|n| *n += 1);
        });
    };
    let on_file = Callback::new(move |(name, text): (String, String)| {
        let _ = checked.try_set(Some(check_lines(&lt.get_value(), &text)));
        let _ = input.source.try_set(Source::File { name, text });
    });
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
            <LinesInput lines=input file_id="entries-file" on_text=Callback::new(move |_| checked.set(None))>
                <textarea name="entries" rows="6" aria-label="Entries, one per line" placeholder=placeholder bind:value=input.text on:input=move |_| checked.set(None)></textarea>
            </LinesInput>
            <div class="actions left">
                <button on:click=move |_| check()>"Check"</button>
                <FileChooser label="Upload a file… " name="entries-file" on_file />
            </div>
            {move || {
                checked
                    .get()
                    .map(|lines| {
                        let valid = valid_values(&lines);
                        let invalid: Vec<&CheckedLine> = lines.iter().filter(|l| l.result.is_err()).collect();
                        let covered: Vec<&CheckedLine> = lines.iter().filter(|l| l.covered_by.is_some()).collect();
                        let fixes: Vec<(usize, String)> = lines.iter().filter_map(|l| Some((l.line, l.fix.clone()?))).collect();
                        let n = valid.len();
                        let calls_needed = n.div_ceil(MAX_ENTRIES_PER_CALL);
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
                                    {(!covered.is_empty()).then(|| format!("; {} already covered by a wider entry", covered.len()))}
                                    {(calls_needed > 1).then(|| format!("; sent in {calls_needed} calls of at most {MAX_ENTRIES_PER_CALL}"))}
                                </p>
                                {(!invalid.is_empty())
                                    .then(|| {
                                        view! {
                                            <ul class="invalid-lines">
                                                {invalid
                                                    .iter()
                                                    .take(50)
                                                    .map(|l| {
                                                        let fix = l.fix.clone().map(|f| {
                                                            let (line, label) = (l.line, format!("Line {}: use {f}", l.line));
                                                            view! {
                                                                " "
                                                                <button type="button" class="link fix" data-line=line aria-label=label on:click=move |_| apply_fixes(vec![(line, f.clone())])>
                                                                    {format!("Use {}", l.fix.clone().unwrap_or_default())}
                                                                </button>
                                                            }
                                                        });
                                                        view! {
                                                            <li>
                                                                {format!("Line {}: ", l.line)}
                                                                {l.result.clone().err().unwrap_or_default()}
                                                                {fix}
                                                            </li>
                                                        }
                                                    })
                                                    .collect_view()}
                                                {(invalid.len() > 50).then(|| view! { <li>{format!("… and {} more", invalid.len() - 50)}</li> })}
                                            </ul>
                                        }
                                    })}
                                {(fixes.len() > 1)
                                    .then(|| {
                                        let n = fixes.len();
                                        view! {
                                            <button type="button" class="fix-all" on:click=move |_| apply_fixes(fixes.clone())>
                                                {format!("Use the network of all {n} ranges with host bits set")}
                                            </button>
                                        }
                                    })}
                                {(!covered.is_empty())
                                    .then(|| {
                                        view! {
                                            <ul class="covered-lines">
                                                {covered
                                                    .iter()
                                                    .take(50)
                                                    .map(|l| {
                                                        let value = l.result.clone().unwrap_or_default();
                                                        let how = l.covered_by.as_ref().map(Covered::describe).unwrap_or_default();
                                                        view! { <li data-line=l.line>{format!("Line {}: {value} is {how}.", l.line)}</li> }
                                                    })
                                                    .collect_view()}
                                                {(covered.len() > 50).then(|| view! { <li>{format!("… and {} more", covered.len() - 50)}</li> })}
                                            </ul>
                                        }
                                    })}
                                <button class="primary" disabled=move || n == 0 || sending.get() on:click=move |_| add(valid.clone())>
                                    {format!("Add {n} entries")}
                                </button>
                            </div>
                        }
                    })
            }}
            <AddReport calls />
        </div>
    }
}

/// How each call of an add went: its counts and its deployment, or its error.
#[component]
fn AddReport(calls: RwSignal<Vec<AddCall>>) -> impl IntoView {
    move || {
        let all = calls.get();
        if all.is_empty() {
            return ().into_any();
        }
        let (added, present) = all
            .iter()
            .filter_map(|c| c.result.as_ref()?.as_ref().ok())
            .fold((0, 0), |(a, p), r| (a + r.added, p + r.already_present));
        let failed = all.iter().filter(|c| matches!(c.result, Some(Err(_)))).count();
        let finished = all.iter().all(|c| c.result.is_some());
        let summary = if !finished {
            format!("Sending… {} of {} call(s) answered.", all.iter().filter(|c| c.result.is_some()).count(), all.len())
        } else if failed == 0 {
            format!("Added {added} entries; {present} were already in the list.")
        } else {
            format!(
                "{} of {} call(s) failed; the others added {added} entries ({present} were already in the list).",
                failed,
                all.len()
            )
        };
        let class = if finished && failed == 0 {
            "notice success"
        } else if failed > 0 {
            "notice error"
        } else {
            "notice info"
        };
        let several = all.len() > 1;
        view! {
            <div class=class role="status" id="add-summary">{summary}</div>
            <ul class="calls">
                {all
                    .into_iter()
                    .map(|c| {
                        let range = if several { format!("Values {}–{}: ", c.from, c.to) } else { String::new() };
                        let status = match &c.result {
                            None => "pending",
                            Some(Ok(_)) => "ok",
                            Some(Err(_)) => "failed",
                        };
                        view! {
                            <li class="call" data-status=status>
                                {match c.result {
                                    None => view! { <span class="muted">{format!("{range}sending…")}</span> }.into_any(),
                                    Some(Ok(r)) => {
                                        view! {
                                            <span>{format!("{range}{} added, {} already present", r.added, r.already_present)}</span>
                                            <TaskProgress task=r.task />
                                        }
                                            .into_any()
                                    }
                                    Some(Err(error)) => {
                                        view! {
                                            <span class="field-error">{format!("{range}not added:")}</span>
                                            <ApiErrorNotice error />
                                        }
                                            .into_any()
                                    }
                                }}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        }
        .into_any()
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
