//! The structured editor: a table per kind of node (host patterns, origins, cache rules, WAF rules,
//! traffic shaping), each row's fields bound to the draft, read-only parts shown locked.
//!
//! A field shows what the user typed, always: a value that fits goes into the draft; one that does not (a
//! port of 99999, a TTL of -5 or `abc`) stays in the field with the reason beside it, and the editor holds Save
//! until it is corrected. The field follows the draft only when the draft changes under it from elsewhere
//! (discard, restore, a merge, raw JSON), never because another field changed.

use std::collections::BTreeMap;

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
    /// What the node is called in messages (as in the review of changes: see `labels::node_title`).
    fn title(&self) -> String;
}

macro_rules! nodes {
    ($t:ty, $($path:ident).+, $title:expr, $blank:expr) => {
        impl Nodes for $t {
            fn title(&self) -> String {
                let f: fn(&Self) -> &str = $title;
                let t = f(self);
                if t.trim().is_empty() { self.id.clone() } else { t.to_string() }
            }
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

nodes!(HostPattern, host_patterns, |n| &n.pattern, |id| HostPattern {
    id,
    readonly: ReadOnly::default(),
    pattern: String::new()
});
nodes!(Origin, origins, |n| &n.name, |id| Origin {
    id,
    readonly: ReadOnly::default(),
    name: String::new(),
    host: String::new(),
    port: 443,
    protocol: "https".into()
});
nodes!(CacheRule, cache_rules, |n| &n.path_pattern, |id| CacheRule {
    id,
    readonly: ReadOnly::default(),
    path_pattern: "/".into(),
    ttl_seconds: 3600,
    cache_key: CacheKey::default()
});
nodes!(WafRule, security.waf_rules, |n| &n.name, |id| WafRule {
    id,
    readonly: ReadOnly::default(),
    rule_id: String::new(),
    name: String::new(),
    severity: "HIGH".into(),
    action: "BLOCK".into(),
    enabled: true
});
nodes!(ShapingRule, security.traffic_shaping_rules, |n| &n.name, |id| ShapingRule {
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

/// The editor's fields together: those holding a value that does not fit (by node and field: where, for a
/// person, and why), which hold Save; and a count of wholesale replacements of the draft, which every field
/// follows (see the module's head).
#[derive(Clone, Copy)]
pub struct Fields {
    /// By node and field: the section and field ("Origins", "Port") with the node's name (followed as it is
    /// renamed) between them, and why the text does not fit.
    pub invalid: RwSignal<BTreeMap<String, Problem>>,
    replaced: RwSignal<u32>,
}

/// A field holding a text the draft could not take.
#[derive(Clone)]
pub struct Problem {
    section: &'static str,
    node: Signal<String>,
    label: &'static str,
    why: String,
}

impl Fields {
    pub fn provide() -> Fields {
        let f = Fields { invalid: RwSignal::new(BTreeMap::new()), replaced: RwSignal::new(0) };
        provide_context(f);
        f
    }

    pub fn get() -> Option<Fields> {
        use_context::<Fields>()
    }

    /// The draft was replaced as a whole (loaded, discarded, restored, merged, taken from the raw JSON): every
    /// field shows its value again.
    pub fn replaced(&self) {
        self.invalid.set(BTreeMap::new());
        self.replaced.update(|n| *n += 1);
    }

    /// What holds Save: one line per field, "Origins › api-cluster-x › Port: …", tracked.
    pub fn problems(&self) -> Vec<String> {
        self.invalid.with(|m| {
            m.values()
                .map(|p| format!("{} › {} › {}: {}", p.section, p.node.try_get().unwrap_or_default(), p.label, p.why))
                .collect()
        })
    }
}

/// How a field's text is checked: the value it stands for, written as the field shows it ("0443" → "443",
/// "a, b," → "a, b"), or why it does not fit.
struct Kind {
    check: fn(&str) -> Result<String, String>,
    numeric: bool,
}

/// A whole number from `min` to `max`, or why not: `what` names it in a sentence ("a port").
pub fn whole(text: &str, min: u64, max: u64, what: &str) -> Result<u64, String> {
    let t = text.trim();
    let range = format!("{what} is a whole number from {min} to {max}.");
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match t.parse::<u64>() {
        _ if t.is_empty() => Err(format!("Empty: {range}")),
        Ok(v) if v < min => Err(format!("{t} is below {min}: {range}")),
        Ok(v) if v > max => Err(format!("{t} is over {max}: {range}")),
        Ok(v) => Ok(v),
        // Too long for a u64, or negative: still a whole number, out of range.
        Err(_) if digits(t) => Err(format!("{t} is over {max}: {range}")),
        Err(_) if t.strip_prefix('-').is_some_and(digits) => Err(format!("{t} is below {min}: {range}")),
        Err(_) => Err(format!("{t:?} is not a whole number: {range}")),
    }
}

const TEXT: Kind = Kind { check: |s| Ok(s.to_string()), numeric: false };

/// A comma-separated list: "a, b," is the list of a and b, and stays as typed.
const LIST: Kind = Kind { check: |s| Ok(split_list(s).join(", ")), numeric: false };

fn split_list(s: &str) -> Vec<String> {
    s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

const PORT: Kind = Kind { check: |s| whole(s, 1, 65_535, "a port").map(|v| v.to_string()), numeric: true };

const TTL: Kind =
    Kind { check: |s| whole(s, 0, 31_536_000, "a TTL (seconds, up to a year)").map(|v| v.to_string()), numeric: true };

const PER_MINUTE: Kind =
    Kind { check: |s| whole(s, 0, 1_000_000, "a rate per minute (0 for none)").map(|v| v.to_string()), numeric: true };

/// A number the field's check has accepted.
fn number<T: std::str::FromStr + Copy>(text: &str, old: T) -> T {
    text.trim().parse().unwrap_or(old)
}

/// A field of a node of type `N`: how it reads (`get`, as the field shows it) and writes a checked text
/// (`set`). The field itself is [`field_view`], the same code for every kind of node and value.
#[allow(clippy::too_many_arguments)]
fn field<N: Nodes>(
    draft: Draft,
    id: String,
    section: &'static str,
    label: &'static str,
    kind: &'static Kind,
    get: fn(&N) -> String,
    set: fn(&mut N, &str),
    writable: Signal<bool>,
) -> AnyView {
    let access = Access {
        read: Box::new({
            let id = id.clone();
            move || with_node(draft, &id, get)
        }),
        write: Box::new({
            let id = id.clone();
            move |t| update_node(draft, &id, |n: &mut N| set(n, t))
        }),
        title: Box::new({
            let id = id.clone();
            move || with_node(draft, &id, N::title).unwrap_or_else(|| id.clone())
        }),
    };
    field_view(access, id, section, label, kind, writable)
}

/// A node's field, its type erased.
struct Access {
    /// The value as the field shows it, tracked; `None` once the node is gone.
    read: Box<dyn Fn() -> Option<String> + Send + Sync>,
    /// Writes a text the field's check accepted into the draft.
    write: Box<dyn Fn(&str) + Send + Sync>,
    /// What the node is called, for the list of fields to correct, tracked.
    title: Box<dyn Fn() -> String + Send + Sync>,
}

/// Shows what the user typed; a value that fits goes into the draft, one that does not stays with its reason
/// beside it (and in [`Fields::invalid`]).
fn field_view(
    access: Access,
    id: String,
    section: &'static str,
    label: &'static str,
    kind: &'static Kind,
    writable: Signal<bool>,
) -> AnyView {
    let Access { read, write, title } = access;
    let title = Signal::derive(title);
    let fields = Fields::get();
    let model = Memo::new(move |_| read());
    let text = RwSignal::new(model.get_untracked().unwrap_or_default());
    let problem = RwSignal::new(None::<String>);
    let key = format!("{id}\u{1f}{label}");
    let forget = {
        let key = key.clone();
        move || {
            if let Some(f) = fields {
                let _ = f.invalid.try_update(|m| m.remove(&key));
            }
        }
    };
    // The draft changed: the field follows only when the value differs from what its text means, or when the
    // draft was replaced as a whole; another field's change leaves it alone.
    Effect::new({
        let forget = forget.clone();
        move |seen: Option<u32>| {
            let replaced = fields.map(|f| f.replaced.get()).unwrap_or(0);
            let now = model.get();
            let means = text.with_untracked(|t| (kind.check)(t).ok());
            if seen.is_some_and(|s| s != replaced) || (now.is_some() && means != now) {
                text.set(now.unwrap_or_default());
                problem.set(None);
                forget();
            }
            replaced
        }
    });
    on_cleanup(forget.clone());
    let input = move |e: ev::Event| {
        let typed = event_target_value(&e);
        text.set(typed.clone());
        match (kind.check)(&typed) {
            Ok(_) => {
                problem.set(None);
                forget();
                write(&typed);
            }
            Err(why) => {
                if let Some(f) = fields {
                    let problem = Problem { section, node: title, label, why: why.clone() };
                    f.invalid.update(|m| {
                        m.insert(key.clone(), problem);
                    });
                }
                problem.set(Some(why));
            }
        }
    };
    let error_id = format!("error-{}-{}", id, label.to_lowercase().replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    let described = error_id.clone();
    view! {
        <input
            class:number=kind.numeric
            class:invalid=move || problem.with(Option::is_some)
            inputmode=kind.numeric.then_some("numeric")
            aria-label=label
            aria-invalid=move || problem.with(Option::is_some).then_some("true")
            aria-describedby=move || problem.with(Option::is_some).then(|| described.clone())
            prop:value=move || text.get()
            on:input=input
            prop:disabled=move || !writable.get()
        />
        {move || problem.get().map(|why| view! { <span class="field-error" id=error_id.clone()>{why}</span> })}
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
    writable: Signal<bool>,
) -> AnyView {
    let id2 = id.clone();
    let value = move || with_node(draft, &id, get).unwrap_or_default();
    let change = move |e: ev::Event| update_node(draft, &id2, |n: &mut N| set(n, event_target_value(&e)));
    view! {
        <select aria-label=label prop:value=value on:change=change prop:disabled=move || !writable.get()>
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
    writable: Signal<bool>,
) -> AnyView {
    let id2 = id.clone();
    let checked = move || with_node(draft, &id, get).unwrap_or(false);
    let change = move |e: ev::Event| update_node(draft, &id2, |n: &mut N| set(n, event_target_checked(&e)));
    view! { <input type="checkbox" aria-label=label prop:checked=checked on:change=change prop:disabled=move || !writable.get() /> }
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
                        {move || writable.get().then(|| view! { <th></th> })}
                    </tr>
                </thead>
                <tbody>
                    <For each=ids key=|id| id.clone() children=row />
                </tbody>
            </table>
            </div>
            {move || writable.get().then(|| view! { <button class="add-node" on:click=add>{format!("Add to {}", title.to_lowercase())}</button> })}
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
    view! {
        <tr data-node=id>
            {cells}
            <td>{readonly}</td>
            {move || {
                let remove = remove.clone();
                writable.get().then(|| view! { <td class="actions"><button class="link danger" on:click=remove>"Remove"</button></td> })
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
