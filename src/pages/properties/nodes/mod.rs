//! The structured editor: a table per kind of node (host patterns, origins, cache rules, WAF rules,
//! traffic shaping), each row's fields bound to the draft, read-only parts shown locked.
//!
//! A field shows what the user typed, always: a value that fits goes into the draft; one that does not (a
//! port of 99999, a TTL of -5 or `abc`) stays in the field with the reason beside it, and the editor holds Save
//! until it is corrected. The field follows the draft only when the draft changes under it from elsewhere
//! (discard, restore, a merge, raw JSON), never because another field changed.

mod fields;
mod kinds;

use edge_api::config::{
    CacheRule, HostPattern, MATCH_TYPES, Origin, SEVERITIES, SHAPING_ACTIONS, ShapingRule, WAF_ACTIONS, WafRule,
};
use leptos::{html, prelude::*};

pub use self::fields::{Fields, Problem, whole};
use self::{
    fields::{LIST, PER_MINUTE, PORT, TEXT, TTL, choice, field, flag, number, readonly_cell, split_list},
    kinds::{Draft, Nodes},
};

/// Renders one field of a node: the draft, the node's id, whether it may be edited.
type Cell = fn(Draft, String, Signal<bool>) -> AnyView;

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
    writable: Signal<bool>,
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
                        {move || writable.try_get().unwrap_or(false).then(|| view! { <th></th> })}
                    </tr>
                </thead>
                <tbody>
                    <For each=ids key=|id| id.clone() children=row />
                </tbody>
            </table>
            </div>
            {move || writable.try_get().unwrap_or(false).then(|| view! { <button class="add-node" on:click=add>{format!("Add to {}", title.to_lowercase())}</button> })}
        </div>
    }
    .into_any()
}

fn node_row<N: Nodes>(draft: Draft, id: String, columns: Vec<(&'static str, Cell)>, writable: Signal<bool>) -> AnyView {
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
    // The node a link points at (`?node=`, from a network list's "Where it is used"): marked, and brought into
    // view once it is drawn.
    // Read from the address itself, not the router: the editor is also drawn without one (its tests).
    let target = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|q| web_sys::UrlSearchParams::new_with_str(&q).ok())
        .and_then(|q| q.get("node"))
        .is_some_and(|n| n == id);
    let row_ref = NodeRef::<html::Tr>::new();
    if target {
        Effect::new(move |_| {
            if let Some(row) = row_ref.get() {
                row.scroll_into_view();
            }
        });
    }
    view! {
        <tr data-node=id node_ref=row_ref class:target-node=target aria-current=target.then_some("true")>
            {cells}
            <td>{readonly}</td>
            {move || {
                let remove = remove.clone();
                writable.try_get().unwrap_or(false).then(|| view! { <td class="actions"><button class="link danger" on:click=remove>"Remove"</button></td> })
            }}
        </tr>
    }
    .into_any()
}

#[component]
pub fn StructuredEditor(draft: Draft, #[prop(into)] writable: Signal<bool>) -> impl IntoView {
    view! {
        {node_table::<HostPattern>(
            draft,
            "Host patterns",
            "host",
            vec![col("Pattern", |d, id, w| field::<HostPattern>(d, id, "Host patterns", "Pattern", &TEXT, |n| n.pattern.clone(), |n, v| n.pattern = v.into(), w))],
            writable,
        )}
        {node_table::<Origin>(
            draft,
            "Origins",
            "origin",
            vec![
                col("Name", |d, id, w| field::<Origin>(d, id, "Origins", "Name", &TEXT, |n| n.name.clone(), |n, v| n.name = v.into(), w)),
                col("Host", |d, id, w| field::<Origin>(d, id, "Origins", "Host", &TEXT, |n| n.host.clone(), |n, v| n.host = v.into(), w)),
                col("Port", |d, id, w| field::<Origin>(d, id, "Origins", "Port", &PORT, |n| n.port.to_string(), |n, v| n.port = number(v, n.port), w)),
                col("Protocol", |d, id, w| choice::<Origin>(d, id, |n| n.protocol.clone(), |n, v| n.protocol = v, &["https", "http"], "Protocol", w)),
            ],
            writable,
        )}
        {node_table::<CacheRule>(
            draft,
            "Cache rules",
            "cache",
            vec![
                col("Path", |d, id, w| field::<CacheRule>(d, id, "Cache rules", "Path pattern", &TEXT, |n| n.path_pattern.clone(), |n, v| n.path_pattern = v.into(), w)),
                col("TTL (s)", |d, id, w| field::<CacheRule>(d, id, "Cache rules", "TTL seconds", &TTL, |n| n.ttl_seconds.to_string(), |n, v| n.ttl_seconds = number(v, n.ttl_seconds), w)),
                col("Query in key", |d, id, w| {
                    choice::<CacheRule>(d, id, |n| n.cache_key.query.clone(), |n, v| n.cache_key.query = v, &["all", "none", "include", "exclude"], "Query in cache key", w)
                }),
                col("Parameters", |d, id, w| {
                    field::<CacheRule>(d, id, "Cache rules", "Query parameters", &LIST, |n| n.cache_key.query_params.join(", "), |n, v| n.cache_key.query_params = split_list(v), w)
                }),
            ],
            writable,
        )}
        {node_table::<WafRule>(
            draft,
            "WAF rules",
            "waf",
            vec![
                col("Rule", |d, id, w| field::<WafRule>(d, id, "WAF rules", "Rule id", &TEXT, |n| n.rule_id.clone(), |n, v| n.rule_id = v.into(), w)),
                col("Name", |d, id, w| field::<WafRule>(d, id, "WAF rules", "Name", &TEXT, |n| n.name.clone(), |n, v| n.name = v.into(), w)),
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
                col("Name", |d, id, w| field::<ShapingRule>(d, id, "Traffic shaping", "Name", &TEXT, |n| n.name.clone(), |n, v| n.name = v.into(), w)),
                col("Action", |d, id, w| choice::<ShapingRule>(d, id, |n| n.action.clone(), |n, v| n.action = v, &SHAPING_ACTIONS, "Action", w)),
                col("Match", |d, id, w| choice::<ShapingRule>(d, id, |n| n.match_type.clone(), |n, v| n.match_type = v, &MATCH_TYPES, "Match type", w)),
                col("Values", |d, id, w| field::<ShapingRule>(d, id, "Traffic shaping", "Values", &LIST, |n| n.values.join(", "), |n, v| n.values = split_list(v), w)),
                col("Per minute", |d, id, w| {
                    field::<ShapingRule>(
                        d,
                        id,
                        "Traffic shaping",
                        "Rate limit per minute (RATE_LIMIT only; 0 for none)",
                        &PER_MINUTE,
                        |n| n.rate_limit_per_minute.unwrap_or(0).to_string(),
                        |n, v| n.rate_limit_per_minute = Some(number(v, 0)).filter(|v| *v > 0),
                        w,
                    )
                }),
                col("On", |d, id, w| flag::<ShapingRule>(d, id, |n| n.enabled, |n, v| n.enabled = v, "Enabled", w)),
            ],
            writable,
        )}
    }
}
