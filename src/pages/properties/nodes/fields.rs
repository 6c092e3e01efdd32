//! A node's field: what the user typed, always; a value that fits goes into the draft, one that does not stays
//! with its reason beside it (see the editor's head); checks by kind of value, choices, flags, read-only parts.

use std::collections::BTreeMap;

use leptos::{ev, prelude::*};

use crate::components::time::datetime;

use super::kinds::{Draft, Nodes, update_node, with_node};

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
pub(super) struct Kind {
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

pub(super) const TEXT: Kind = Kind { check: |s| Ok(s.to_string()), numeric: false };

/// A comma-separated list: "a, b," is the list of a and b, and stays as typed.
pub(super) const LIST: Kind = Kind { check: |s| Ok(split_list(s).join(", ")), numeric: false };

pub(super) fn split_list(s: &str) -> Vec<String> {
    s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

pub(super) const PORT: Kind = Kind { check: |s| whole(s, 1, 65_535, "a port").map(|v| v.to_string()), numeric: true };

pub(super) const TTL: Kind =
    Kind { check: |s| whole(s, 0, 31_536_000, "a TTL (seconds, up to a year)").map(|v| v.to_string()), numeric: true };

pub(super) const PER_MINUTE: Kind =
    Kind { check: |s| whole(s, 0, 1_000_000, "a rate per minute (0 for none)").map(|v| v.to_string()), numeric: true };

/// A number the field's check has accepted.
pub(super) fn number<T: std::str::FromStr + Copy>(text: &str, old: T) -> T {
    text.trim().parse().unwrap_or(old)
}

/// A field of a node of type `N`: how it reads (`get`, as the field shows it) and writes a checked text
/// (`set`). The field itself is [`field_view`], the same code for every kind of node and value.
#[allow(clippy::too_many_arguments)]
pub(super) fn field<N: Nodes>(
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
            prop:disabled=move || !writable.try_get().unwrap_or(false)
        />
        {move || problem.get().map(|why| view! { <span class="field-error" id=error_id.clone()>{why}</span> })}
    }
    .into_any()
}

pub(super) fn choice<N: Nodes>(
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
        <select aria-label=label prop:value=value on:change=change prop:disabled=move || !writable.try_get().unwrap_or(false)>
            {options.iter().map(|o| view! { <option value=*o>{*o}</option> }).collect_view()}
        </select>
    }
    .into_any()
}

pub(super) fn flag<N: Nodes>(
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
    view! { <input type="checkbox" aria-label=label prop:checked=checked on:change=change prop:disabled=move || !writable.try_get().unwrap_or(false) /> }
        .into_any()
}

/// The locked read-only part of a node, or that it is new.
pub(super) fn readonly_cell<N: Nodes>(draft: Draft, id: String) -> AnyView {
    let describe = move || {
        with_node(draft, &id, |n: &N| {
            let r = n.readonly();
            if r.is_empty() { "new".to_string() } else { format!("by {} · {}", r.author, datetime(&r.created)) }
        })
        .unwrap_or_default()
    };
    view! { <span class="readonly small muted" title="Read-only: set by the server">{describe}</span> }.into_any()
}
