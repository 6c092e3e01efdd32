//! Properties: the configuration of each, in a structured editor (read-only parts shown, locked) or as raw
//! JSON. Saving sends If-Match; when someone else saved meanwhile (409) the console merges both sides' changes
//! (three-way, against the version edited), asks only about real conflicts, and saves again. Version history
//! with diffs and rollback.

use edge_api::config::{
    CacheKey, CacheRule, Change, ConfigDocument, Conflict, HostPattern, MATCH_TYPES, NewProperty, Origin,
    PropertyConfig, ReadOnly, SEVERITIES, SHAPING_ACTIONS, ShapingRule, WAF_ACTIONS, WafRule, merge3, set_at,
};
use leptos::{ev, prelude::*};
use leptos_router::{NavigateOptions, hooks::use_navigate};
use serde_json::Value;

use crate::{
    api::{self, ApiError},
    components::{
        dialog::{Confirm, Dialog},
        errors::{ApiErrorNotice, FormError},
    },
    pages::{IndexOrItem, tasks::short_time, use_customer},
    session::Auth,
};

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
    let properties = LocalResource::new(move || {
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
        <Transition fallback=|| view! { <p class="muted">"Loading properties…"</p> }>
            {move || Suspend::new(async move {
                match properties.await {
                    Err(error) => view! { <ApiErrorNotice error /> }.into_any(),
                    Ok(list) if list.is_empty() => view! { <div class="empty">"No properties yet."</div> }.into_any(),
                    Ok(list) => {
                        view! {
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
                                                    <td>{short_time(&p.modified)}</td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                        }
                            .into_any()
                    }
                }
            })}
        </Transition>
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
    let create = Action::new_local(move |p: &NewProperty| {
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

/// What saving ended with.
#[derive(Clone)]
enum Saved {
    /// Stored; `merged_with` names the version merged in automatically, if any.
    Done { doc: Box<ConfigDocument>, merged_with: Option<u64> },
    /// Someone else saved; both changed the same things.
    Conflicts(Box<MergeState>),
}

#[derive(Clone)]
struct MergeState {
    theirs: ConfigDocument,
    /// The merge, holding their values where there are conflicts.
    merged: Value,
    conflicts: Vec<Conflict>,
}

fn to_value(c: &PropertyConfig) -> Value {
    serde_json::to_value(c).unwrap_or(Value::Null)
}

/// Saves `mine`, edited from `base`. On 409 it reads the current version, merges three-way, and saves the
/// merge again when nothing conflicts (a few times at most, for busy properties).
async fn save_with_merge(
    customer: &str,
    name: &str,
    base: ConfigDocument,
    mine: Value,
    comment: &str,
) -> Result<Saved, ApiError> {
    let (mut base_value, mut etag, mut mine, mut merged_with) = (to_value(&base.config), base.etag, mine, None);
    for _ in 0..3 {
        match api::put_config(customer, name, &etag, &mine, comment).await {
            Ok(doc) => return Ok(Saved::Done { doc: Box::new(doc), merged_with }),
            Err(e) if e.status == 409 => {
                let theirs = api::get_config(customer, name).await?;
                let theirs_value = to_value(&theirs.config);
                let (merged, conflicts) = merge3(&base_value, &theirs_value, &mine);
                if !conflicts.is_empty() {
                    return Ok(Saved::Conflicts(Box::new(MergeState { theirs, merged, conflicts })));
                }
                merged_with = Some(theirs.version);
                (base_value, etag, mine) = (theirs_value, theirs.etag, merged);
            }
            Err(e) => return Err(e),
        }
    }
    Err(ApiError {
        status: 409,
        body: edge_api::ErrorBody::new("busy", "The property keeps changing; try again in a moment."),
    })
}

#[component]
fn PropertyEditor(name: String) -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let navigate = use_navigate();
    let name = StoredValue::new(name);
    let base = RwSignal::new(None::<ConfigDocument>);
    let draft = RwSignal::new(None::<PropertyConfig>);
    let raw = RwSignal::new(false);
    let raw_text = RwSignal::new(String::new());
    let raw_error = RwSignal::new(None::<String>);
    let comment = RwSignal::new(String::new());
    let notice = RwSignal::new(None::<String>);
    let merge = RwSignal::new(None::<MergeState>);
    let history_reload = RwSignal::new(0u32);
    let load = LocalResource::new(move || {
        let c = customer.get();
        async move { api::get_config(&c, &name.get_value()).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(doc)) = load.get() {
            draft.set(Some(doc.config.clone()));
            base.set(Some(doc));
        }
    });

    // The configuration as edited: from the raw text in raw mode.
    let mine = move || -> Result<Value, String> {
        if raw.get_untracked() {
            let parsed: Value =
                serde_json::from_str(&raw_text.get_untracked()).map_err(|e| format!("The JSON is not valid: {e}"))?;
            Ok(parsed)
        } else {
            draft.get_untracked().map(|d| to_value(&d)).ok_or_else(|| "Nothing loaded yet.".to_string())
        }
    };
    let save = Action::new_local(move |(base_doc, mine, comment): &(ConfigDocument, Value, String)| {
        let (c, base_doc, mine, comment) = (customer.get_untracked(), base_doc.clone(), mine.clone(), comment.clone());
        async move { save_with_merge(&c, &name.get_value(), base_doc, mine, &comment).await }
    });
    Effect::new(move |_| match save.value().get() {
        Some(Ok(Saved::Done { doc, merged_with })) => {
            notice.set(Some(match merged_with {
                Some(v) => format!(
                    "Someone else saved version {v} meanwhile; your changes were merged with theirs and saved as version {}.",
                    doc.version
                ),
                None => format!("Saved as version {}. Its deployment is under Tasks.", doc.version),
            }));
            draft.set(Some(doc.config.clone()));
            raw_text.set(serde_json::to_string_pretty(&doc.config).unwrap_or_default());
            base.set(Some(*doc));
            comment.set(String::new());
            merge.set(None);
            history_reload.update(|n| *n += 1);
        }
        Some(Ok(Saved::Conflicts(m))) => merge.set(Some(*m)),
        _ => {}
    });
    let save_error = Signal::derive(move || save.value().get().and_then(Result::err));
    let start_save = move || {
        notice.set(None);
        raw_error.set(None);
        let Some(base_doc) = base.get_untracked() else { return };
        match mine() {
            Ok(v) => {
                save.dispatch((base_doc, v, comment.get_untracked()));
            }
            Err(e) => raw_error.set(Some(e)),
        }
    };
    let toggle_raw = move |_| {
        raw_error.set(None);
        if raw.get_untracked() {
            match serde_json::from_str::<PropertyConfig>(&raw_text.get_untracked()) {
                Ok(c) => {
                    draft.set(Some(c));
                    raw.set(false);
                }
                Err(e) => raw_error.set(Some(format!("Fix the JSON before leaving raw mode: {e}"))),
            }
        } else {
            raw_text.set(
                draft
                    .with_untracked(|d| d.as_ref().map(|d| serde_json::to_string_pretty(d).unwrap_or_default()))
                    .unwrap_or_default(),
            );
            raw.set(true);
        }
    };
    let back = move |_| navigate("?", NavigateOptions::default());
    let writable = move || auth.can_write();

    view! {
        <p>
            <button class="link" on:click=back>"← All properties"</button>
        </p>
        {move || {
            load.get()
                .and_then(Result::err)
                .map(|error| view! { <ApiErrorNotice error /> })
        }}
        {move || {
            base.get()
                .map(|b| {
                    view! {
                        <div class="editor-head">
                            <h2>{b.config.name.clone()}</h2>
                            <span class="muted">
                                {format!("Version {} · saved {} by {}", b.version, short_time(&b.modified), b.author)}
                                {(!b.comment.is_empty()).then(|| format!(" · “{}”", b.comment))}
                            </span>
                            <code class="etag" title="ETag">{b.etag.clone()}</code>
                        </div>
                    }
                })
        }}
        {move || merge.get().map(|m| view! { <MergeScreen state=m draft base merge raw save=Callback::new(move |_| start_save()) /> })}
        <Show when=move || merge.get().is_none() && draft.get().is_some()>
            <div class="toolbar">
                <button on:click=toggle_raw id="toggle-raw">
                    {move || if raw.get() { "Structured editor" } else { "Raw JSON" }}
                </button>
                <span class="spacer"></span>
                <Show when=writable>
                    <input class="comment" name="comment" placeholder="What changed (optional)" bind:value=comment />
                    <button class="primary" id="save-config" disabled=move || save.pending().get() on:click=move |_| start_save()>
                        {move || if save.pending().get() { "Saving…" } else { "Save" }}
                    </button>
                </Show>
            </div>
            {move || raw_error.get().map(|e| view! { <div class="notice error" role="alert">{e}</div> })}
            <FormError error=save_error fields=&[] />
            {move || notice.get().map(|n| view! { <div class="notice success" role="status" id="save-notice">{n}</div> })}
            {move || {
                if raw.get() {
                    view! { <textarea class="raw-json" name="raw" rows="28" spellcheck="false" bind:value=raw_text></textarea> }.into_any()
                } else {
                    view! { <StructuredEditor draft writable=writable() /> }.into_any()
                }
            }}
        </Show>
        <History name=name.get_value() base reload=history_reload writable=writable() />
    }
}

/// The conflicts of a merge: base, theirs and mine side by side, a choice for each.
#[component]
fn MergeScreen(
    state: MergeState,
    draft: RwSignal<Option<PropertyConfig>>,
    base: RwSignal<Option<ConfigDocument>>,
    merge: RwSignal<Option<MergeState>>,
    raw: RwSignal<bool>,
    save: Callback<()>,
) -> impl IntoView {
    let take_mine = RwSignal::new(vec![true; state.conflicts.len()]);
    let error = RwSignal::new(None::<String>);
    let st = StoredValue::new(state.clone());
    let show = |v: &Option<Value>| {
        v.as_ref().map(|v| serde_json::to_string_pretty(v).unwrap_or_default()).unwrap_or_else(|| "(absent)".into())
    };
    let resolve = move |_| {
        let s = st.get_value();
        let mut merged = s.merged.clone();
        for (c, mine) in s.conflicts.iter().zip(take_mine.get_untracked()) {
            if mine {
                set_at(&mut merged, &c.path, c.mine.clone());
            }
        }
        match serde_json::from_value::<PropertyConfig>(merged) {
            Ok(config) => {
                // The merge now builds on their version: save it with their etag.
                base.set(Some(s.theirs.clone()));
                draft.set(Some(config));
                raw.set(false);
                merge.set(None);
                save.run(());
            }
            Err(e) => error.set(Some(format!("The merged configuration is not valid: {e}"))),
        }
    };
    let discard = move |_| {
        let s = st.get_value();
        draft.set(Some(s.theirs.config.clone()));
        base.set(Some(s.theirs));
        merge.set(None);
    };
    view! {
        <div class="card panel wide merge" id="merge-screen">
            <h2>"Someone else changed this property"</h2>
            <p>
                {format!(
                    "{} saved version {} while you were editing. Their changes and yours were merged; {} change(s) conflict. Choose for each which to keep, then save.",
                    state.theirs.author,
                    state.theirs.version,
                    state.conflicts.len(),
                )}
            </p>
            <table class="data conflicts">
                <thead>
                    <tr>
                        <th>"Where"</th>
                        <th>"Before (base)"</th>
                        <th>"Theirs"</th>
                        <th>"Mine"</th>
                    </tr>
                </thead>
                <tbody>
                    {state
                        .conflicts
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            let group = format!("conflict-{i}");
                            view! {
                                <tr data-path=c.path.clone()>
                                    <td>
                                        <code>{c.path.clone()}</code>
                                    </td>
                                    <td>
                                        <pre>{show(&c.base)}</pre>
                                    </td>
                                    <td>
                                        <label class="check">
                                            <input
                                                type="radio"
                                                name=group.clone()
                                                value="theirs"
                                                prop:checked=move || !take_mine.get()[i]
                                                on:change=move |_| take_mine.update(|v| v[i] = false)
                                            />
                                            <pre>{show(&c.theirs)}</pre>
                                        </label>
                                    </td>
                                    <td>
                                        <label class="check">
                                            <input
                                                type="radio"
                                                name=group
                                                value="mine"
                                                prop:checked=move || take_mine.get()[i]
                                                on:change=move |_| take_mine.update(|v| v[i] = true)
                                            />
                                            <pre>{show(&c.mine)}</pre>
                                        </label>
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
            {move || error.get().map(|e| view! { <div class="notice error" role="alert">{e}</div> })}
            <div class="actions">
                <button on:click=discard>"Discard my changes"</button>
                <button class="primary" id="save-merged" on:click=resolve>"Save merged version"</button>
            </div>
        </div>
    }
}

/// Access to one kind of node in a configuration, for the generic editor rows.
trait Nodes: Clone + Send + Sync + 'static {
    fn all(c: &PropertyConfig) -> &Vec<Self>;
    fn all_mut(c: &mut PropertyConfig) -> &mut Vec<Self>;
    fn id(&self) -> &str;
    fn readonly(&self) -> &ReadOnly;
    fn blank(id: String) -> Self;
}

macro_rules! nodes {
    ($t:ty, $($path:ident).+, $blank:expr) => {
        impl Nodes for $t {
            fn all(c: &PropertyConfig) -> &Vec<Self> {
                &c.$($path).+
            }
            fn all_mut(c: &mut PropertyConfig) -> &mut Vec<Self> {
                &mut c.$($path).+
            }
            fn id(&self) -> &str {
                &self.id
            }
            fn readonly(&self) -> &ReadOnly {
                &self.readonly
            }
            fn blank(id: String) -> Self {
                let f: fn(String) -> Self = $blank;
                f(id)
            }
        }
    };
}

nodes!(HostPattern, host_patterns, |id| HostPattern { id, readonly: ReadOnly::default(), pattern: String::new() });
nodes!(Origin, origins, |id| Origin {
    id,
    readonly: ReadOnly::default(),
    name: String::new(),
    host: String::new(),
    port: 443,
    protocol: "https".into()
});
nodes!(CacheRule, cache_rules, |id| CacheRule {
    id,
    readonly: ReadOnly::default(),
    path_pattern: "/".into(),
    ttl_seconds: 3600,
    cache_key: CacheKey::default()
});
nodes!(WafRule, security.waf_rules, |id| WafRule {
    id,
    readonly: ReadOnly::default(),
    rule_id: String::new(),
    name: String::new(),
    severity: "HIGH".into(),
    action: "BLOCK".into(),
    enabled: true
});
nodes!(ShapingRule, security.traffic_shaping_rules, |id| ShapingRule {
    id,
    readonly: ReadOnly::default(),
    name: String::new(),
    action: "BLOCK".into(),
    match_type: "IP".into(),
    values: Vec::new(),
    rate_limit_per_minute: None,
    enabled: true
});

type Draft = RwSignal<Option<PropertyConfig>>;

fn with_node<N: Nodes, R>(draft: Draft, id: &str, f: impl FnOnce(&N) -> R) -> Option<R> {
    draft.with(|d| d.as_ref().and_then(|c| N::all(c).iter().find(|n| n.id() == id)).map(f))
}

fn update_node<N: Nodes>(draft: Draft, id: &str, f: impl FnOnce(&mut N)) {
    draft.update(|d| {
        if let Some(n) = d.as_mut().and_then(|c| N::all_mut(c).iter_mut().find(|n| n.id() == id)) {
            f(n)
        }
    });
}

/// A text field of a node.
fn text<N: Nodes>(
    draft: Draft,
    id: String,
    get: fn(&N) -> String,
    set: fn(&mut N, String),
    label: &'static str,
    writable: bool,
) -> AnyView {
    let id2 = id.clone();
    let value = move || with_node(draft, &id, get).unwrap_or_default();
    let input = move |e: ev::Event| update_node(draft, &id2, |n: &mut N| set(n, event_target_value(&e)));
    view! { <input aria-label=label prop:value=value on:input=input prop:disabled=!writable /> }.into_any()
}

/// A numeric field: only valid numbers reach the draft; the field shows red until it holds one.
fn number<N: Nodes>(
    draft: Draft,
    id: String,
    get: fn(&N) -> u64,
    set: fn(&mut N, u64),
    max: u64,
    label: &'static str,
    writable: bool,
) -> AnyView {
    let bad = RwSignal::new(false);
    let id2 = id.clone();
    let value = move || with_node(draft, &id, get).map(|v| v.to_string()).unwrap_or_default();
    let input = move |e: ev::Event| match event_target_value(&e).trim().parse::<u64>() {
        Ok(v) if v <= max => {
            bad.set(false);
            update_node(draft, &id2, |n: &mut N| set(n, v));
        }
        _ => bad.set(true),
    };
    view! {
        <input
            class="number"
            class:invalid=move || bad.get()
            inputmode="numeric"
            aria-label=label
            prop:value=value
            on:input=input
            prop:disabled=!writable
        />
    }
    .into_any()
}

fn choice<N: Nodes>(
    draft: Draft,
    id: String,
    get: fn(&N) -> String,
    set: fn(&mut N, String),
    options: &'static [&'static str],
    label: &'static str,
    writable: bool,
) -> AnyView {
    let id2 = id.clone();
    let value = move || with_node(draft, &id, get).unwrap_or_default();
    let change = move |e: ev::Event| update_node(draft, &id2, |n: &mut N| set(n, event_target_value(&e)));
    view! {
        <select aria-label=label prop:value=value on:change=change prop:disabled=!writable>
            {options.iter().map(|o| view! { <option value=*o>{*o}</option> }).collect_view()}
        </select>
    }
    .into_any()
}

fn flag<N: Nodes>(
    draft: Draft,
    id: String,
    get: fn(&N) -> bool,
    set: fn(&mut N, bool),
    label: &'static str,
    writable: bool,
) -> AnyView {
    let id2 = id.clone();
    let checked = move || with_node(draft, &id, get).unwrap_or(false);
    let change = move |e: ev::Event| update_node(draft, &id2, |n: &mut N| set(n, event_target_checked(&e)));
    view! { <input type="checkbox" aria-label=label prop:checked=checked on:change=change prop:disabled=!writable /> }
        .into_any()
}

/// The locked read-only part of a node, or that it is new.
fn readonly_cell<N: Nodes>(draft: Draft, id: String) -> AnyView {
    let describe = move || {
        with_node(draft, &id, |n: &N| {
            let r = n.readonly();
            if r.is_empty() { "new".to_string() } else { format!("by {} · {}", r.author, short_time(&r.created)) }
        })
        .unwrap_or_default()
    };
    view! { <span class="readonly small muted" title="Read-only: set by the server">{describe}</span> }.into_any()
}

/// Renders one field of a node: the draft, the node's id, whether it may be edited.
type Cell = fn(Draft, String, bool) -> AnyView;

type Column<N> = (&'static str, Cell, PhantomNodes<N>);

/// Ties a column list to its node type.
struct PhantomNodes<N>(std::marker::PhantomData<N>);

fn col<N: Nodes>(title: &'static str, cell: Cell) -> Column<N> {
    (title, cell, PhantomNodes(std::marker::PhantomData))
}

/// A table of the nodes of one kind: a row each, add and remove.
fn node_table<N: Nodes>(
    draft: Draft,
    title: &'static str,
    id_prefix: &'static str,
    columns: Vec<Column<N>>,
    writable: bool,
) -> AnyView {
    let columns = StoredValue::new(columns.into_iter().map(|(t, f, _)| (t, f)).collect::<Vec<_>>());
    let row = move |id: String| node_row::<N>(draft, id, columns.get_value(), writable);
    let ids = move || {
        draft.with(|d| {
            d.as_ref().map(|c| N::all(c).iter().map(|n| n.id().to_string()).collect::<Vec<_>>()).unwrap_or_default()
        })
    };
    let add = move |_| {
        let id = format!("{id_prefix}-{:08x}", (js_sys::Math::random() * f64::from(u32::MAX)) as u32);
        draft.update(|d| {
            if let Some(c) = d.as_mut() {
                N::all_mut(c).push(N::blank(id));
            }
        });
    };
    view! {
        <div class="card panel wide node-table" data-section=title>
            <h2>{title}</h2>
            <table class="data">
                <thead>
                    <tr>
                        {columns.get_value().into_iter().map(|(t, _)| view! { <th>{t}</th> }).collect_view()}
                        <th>"Read-only"</th>
                        {writable.then(|| view! { <th></th> })}
                    </tr>
                </thead>
                <tbody>
                    <For each=ids key=|id| id.clone() children=row />
                </tbody>
            </table>
            {writable.then(|| view! { <button class="add-node" on:click=add>{format!("Add to {}", title.to_lowercase())}</button> })}
        </div>
    }
    .into_any()
}

fn node_row<N: Nodes>(draft: Draft, id: String, columns: Vec<(&'static str, Cell)>, writable: bool) -> AnyView {
    let cells =
        columns.into_iter().map(|(_, cell)| view! { <td>{cell(draft, id.clone(), writable)}</td> }).collect_view();
    let readonly = readonly_cell::<N>(draft, id.clone());
    let remove_id = id.clone();
    let remove = move |_| {
        draft.update(|d| {
            if let Some(c) = d.as_mut() {
                N::all_mut(c).retain(|n| n.id() != remove_id);
            }
        })
    };
    view! {
        <tr data-node=id>
            {cells}
            <td>{readonly}</td>
            {writable.then(|| view! { <td class="actions"><button class="link danger" on:click=remove>"Remove"</button></td> })}
        </tr>
    }
    .into_any()
}

#[component]
fn StructuredEditor(draft: Draft, writable: bool) -> impl IntoView {
    view! {
        {node_table::<HostPattern>(
            draft,
            "Host patterns",
            "host",
            vec![col("Pattern", |d, id, w| text::<HostPattern>(d, id, |n| n.pattern.clone(), |n, v| n.pattern = v, "Pattern", w))],
            writable,
        )}
        {node_table::<Origin>(
            draft,
            "Origins",
            "origin",
            vec![
                col("Name", |d, id, w| text::<Origin>(d, id, |n| n.name.clone(), |n, v| n.name = v, "Name", w)),
                col("Host", |d, id, w| text::<Origin>(d, id, |n| n.host.clone(), |n, v| n.host = v, "Host", w)),
                col("Port", |d, id, w| number::<Origin>(d, id, |n| u64::from(n.port), |n, v| n.port = v as u16, 65_535, "Port", w)),
                col("Protocol", |d, id, w| choice::<Origin>(d, id, |n| n.protocol.clone(), |n, v| n.protocol = v, &["https", "http"], "Protocol", w)),
            ],
            writable,
        )}
        {node_table::<CacheRule>(
            draft,
            "Cache rules",
            "cache",
            vec![
                col("Path", |d, id, w| text::<CacheRule>(d, id, |n| n.path_pattern.clone(), |n, v| n.path_pattern = v, "Path pattern", w)),
                col("TTL (s)", |d, id, w| number::<CacheRule>(d, id, |n| u64::from(n.ttl_seconds), |n, v| n.ttl_seconds = v as u32, 31_536_000, "TTL seconds", w)),
                col("Query in key", |d, id, w| {
                    choice::<CacheRule>(d, id, |n| n.cache_key.query.clone(), |n, v| n.cache_key.query = v, &["all", "none", "include", "exclude"], "Query in cache key", w)
                }),
                col("Parameters", |d, id, w| {
                    text::<CacheRule>(
                        d,
                        id,
                        |n| n.cache_key.query_params.join(", "),
                        |n, v| n.cache_key.query_params = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect(),
                        "Query parameters",
                        w,
                    )
                }),
            ],
            writable,
        )}
        {node_table::<WafRule>(
            draft,
            "WAF rules",
            "waf",
            vec![
                col("Rule", |d, id, w| text::<WafRule>(d, id, |n| n.rule_id.clone(), |n, v| n.rule_id = v, "Rule id", w)),
                col("Name", |d, id, w| text::<WafRule>(d, id, |n| n.name.clone(), |n, v| n.name = v, "Name", w)),
                col("Severity", |d, id, w| choice::<WafRule>(d, id, |n| n.severity.clone(), |n, v| n.severity = v, &SEVERITIES, "Severity", w)),
                col("Action", |d, id, w| choice::<WafRule>(d, id, |n| n.action.clone(), |n, v| n.action = v, &WAF_ACTIONS, "Action", w)),
                col("On", |d, id, w| flag::<WafRule>(d, id, |n| n.enabled, |n, v| n.enabled = v, "Enabled", w)),
            ],
            writable,
        )}
        {node_table::<ShapingRule>(
            draft,
            "Traffic shaping",
            "shaping",
            vec![
                col("Name", |d, id, w| text::<ShapingRule>(d, id, |n| n.name.clone(), |n, v| n.name = v, "Name", w)),
                col("Action", |d, id, w| choice::<ShapingRule>(d, id, |n| n.action.clone(), |n, v| n.action = v, &SHAPING_ACTIONS, "Action", w)),
                col("Match", |d, id, w| choice::<ShapingRule>(d, id, |n| n.match_type.clone(), |n, v| n.match_type = v, &MATCH_TYPES, "Match type", w)),
                col("Values", |d, id, w| {
                    text::<ShapingRule>(
                        d,
                        id,
                        |n| n.values.join(", "),
                        |n, v| n.values = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect(),
                        "Values",
                        w,
                    )
                }),
                col("Per minute", |d, id, w| {
                    number::<ShapingRule>(
                        d,
                        id,
                        |n| u64::from(n.rate_limit_per_minute.unwrap_or(0)),
                        |n, v| n.rate_limit_per_minute = (v > 0).then_some(v as u32),
                        1_000_000,
                        "Rate limit per minute (RATE_LIMIT only; 0 for none)",
                        w,
                    )
                }),
                col("On", |d, id, w| flag::<ShapingRule>(d, id, |n| n.enabled, |n, v| n.enabled = v, "Enabled", w)),
            ],
            writable,
        )}
    }
}

#[component]
fn History(
    name: String,
    base: RwSignal<Option<ConfigDocument>>,
    reload: RwSignal<u32>,
    writable: bool,
) -> impl IntoView {
    let customer = use_customer();
    let name = StoredValue::new(name);
    let versions = LocalResource::new(move || {
        let c = customer.get();
        reload.track();
        async move { api::config_versions(&c, &name.get_value()).await }
    });
    let compare = RwSignal::new(None::<(u64, u64)>);
    let diff = LocalResource::new(move || {
        let (c, pair) = (customer.get(), compare.get());
        async move {
            match pair {
                Some((from, to)) => api::config_diff(&c, &name.get_value(), from, to).await.map(Some),
                None => Ok(None),
            }
        }
    });
    let rolling = RwSignal::new(None::<u64>);
    let rollback = Action::new_local(move |v: &u64| {
        let (c, v) = (customer.get_untracked(), *v);
        async move {
            let old = api::config_version(&c, &name.get_value(), v).await?;
            let current = base.get_untracked().ok_or_else(|| ApiError {
                status: 0,
                body: edge_api::ErrorBody::new("not_loaded", "Nothing loaded."),
            })?;
            api::put_config(
                &c,
                &name.get_value(),
                &current.etag,
                &to_value(&old.config),
                &format!("Roll back to version {v}"),
            )
            .await
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(doc)) = rollback.value().get() {
            rolling.set(None);
            base.set(Some(doc));
            reload.update(|n| *n += 1);
            // The editor reloads the configuration from `base` through the page's own load.
            if let Some(w) = web_sys::window() {
                let _ = w.location().reload();
            }
        }
    });
    let rollback_error = Signal::derive(move || rollback.value().get().and_then(Result::err));
    view! {
        <div class="card panel wide" id="history">
            <h2>"History"</h2>
            <Transition fallback=|| view! { <p class="muted">"Loading history…"</p> }>
                {move || Suspend::new(async move {
                    match versions.await {
                        Err(error) => view! { <ApiErrorNotice error /> }.into_any(),
                        Ok(list) => {
                            let latest = list.first().map(|v| v.version).unwrap_or(0);
                            view! {
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
                                                        <td>{short_time(&v.created)}</td>
                                                        <td>{v.author.clone()}</td>
                                                        <td>{v.comment.clone()}</td>
                                                        <td class="actions">
                                                            {(n > 1).then(|| view! { <button class="link" on:click=move |_| compare.set(Some((n - 1, n)))>"Changes"</button> })}
                                                            {(n != latest).then(|| view! { <button class="link" on:click=move |_| compare.set(Some((n, latest)))>"Compare with current"</button> })}
                                                            {(writable && n != latest).then(|| view! { <button class="link" on:click=move |_| rolling.set(Some(n))>"Roll back to this"</button> })}
                                                        </td>
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
                            }
                                .into_any()
                        }
                    }
                })}
            </Transition>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    match diff.await {
                        Err(error) => view! { <ApiErrorNotice error /> }.into_any(),
                        Ok(None) => ().into_any(),
                        Ok(Some(changes)) => {
                            let (from, to) = compare.get_untracked().unwrap_or_default();
                            view! { <DiffView from to changes /> }.into_any()
                        }
                    }
                })}
            </Transition>
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
fn DiffView(from: u64, to: u64, changes: Vec<Change>) -> impl IntoView {
    let show = |v: &Option<Value>| v.as_ref().map(|v| serde_json::to_string(v).unwrap_or_default()).unwrap_or_default();
    view! {
        <h3>{format!("Changes from version {from} to {to}")}</h3>
        {if changes.is_empty() {
            view! { <p class="muted">"No differences."</p> }.into_any()
        } else {
            view! {
                <table class="data diff">
                    <thead>
                        <tr>
                            <th>"Where"</th>
                            <th>"Change"</th>
                            <th>"Before"</th>
                            <th>"After"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {changes
                            .iter()
                            .map(|c| {
                                view! {
                                    <tr class=format!("op-{}", c.op)>
                                        <td>
                                            <code>{c.path.clone()}</code>
                                        </td>
                                        <td>{c.op.clone()}</td>
                                        <td>
                                            <code class="before">{show(&c.before)}</code>
                                        </td>
                                        <td>
                                            <code class="after">{show(&c.after)}</code>
                                        </td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            }
                .into_any()
        }}
    }
}
