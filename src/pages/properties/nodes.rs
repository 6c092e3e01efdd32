//! The structured editor: a table per kind of node (host patterns, origins, cache rules, WAF rules,
//! traffic shaping), each row's fields bound to the draft, read-only parts shown locked.

use edge_api::config::{
    CacheKey, CacheRule, HostPattern, MATCH_TYPES, Origin, PropertyConfig, ReadOnly, SEVERITIES, SHAPING_ACTIONS,
    ShapingRule, WAF_ACTIONS, WafRule,
};
use leptos::{ev, prelude::*};

use crate::components::time::datetime;

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
            if r.is_empty() { "new".to_string() } else { format!("by {} · {}", r.author, datetime(&r.created)) }
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
            <div class="table-scroll">
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
            </div>
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
pub(super) fn StructuredEditor(draft: Draft, writable: bool) -> impl IntoView {
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
