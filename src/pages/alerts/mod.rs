//! Alerts: what fires now, the rules (with their editor and preview), the history of their states, the channels
//! that notify (with "send test" and each one's delivery log) and silences. The tab lives in the address, and
//! "Alert on this" from a chart opens the editor with the chart's query (see [`crate::api::alert_on_this_url`]).
//! A rule named in the address (`?rule=`, as notifications link to it) opens its history and is marked in the
//! lists.

mod channels;
mod editor;
mod preview;
mod silences;

use edge_api::alerts::{AlertEventPage, AlertRule, AlertState, Condition, Severity};
use leptos::prelude::*;

use crate::{
    api,
    components::{
        async_view::{AsyncView, act, load},
        errors::ApiErrorNotice,
        pager::Pager,
        time::Time,
    },
    nav::{use_customer, use_query_state},
    session::Auth,
};

const TABS: [(&str, &str); 5] = [
    ("firing", "Firing now"),
    ("rules", "Rules"),
    ("history", "History"),
    ("channels", "Channels"),
    ("silences", "Silences"),
];
const HISTORY_PAGE: u64 = 25;

/// A rule's condition in a few words.
pub(crate) fn condition_text(c: &Condition) -> String {
    let watched = |w: &edge_api::alerts::Watch| {
        let part = |m: &str, f: &Option<String>| match f.as_deref().filter(|f| !f.is_empty()) {
            Some(f) => format!("{m} [{f}]"),
            None => m.to_string(),
        };
        let mut s = part(&w.metric, &w.filters);
        if let Some(d) = &w.denominator {
            s = format!("{s} / {}", part(&d.metric, &d.filters));
        }
        if !w.dimensions.is_empty() {
            s = format!("{s} by {}", w.dimensions.join(", "));
        }
        (s, w.window_minutes, w.path.clone())
    };
    match c {
        Condition::Threshold { watch, operator, value } => {
            let (s, minutes, path) = watched(watch);
            format!("{s} {} {value} over {minutes} min ({path})", operator.as_str())
        }
        Condition::Anomaly { watch, z_score, weeks, .. } => {
            let (s, minutes, path) = watched(watch);
            format!("{s}: z-score {z_score} against {weeks} previous weeks, over {minutes} min ({path})")
        }
        Condition::Audit { operations, target_id, .. } => match target_id {
            Some(t) => format!("audit records {} on {t}", operations.join(", ")),
            None => format!("audit records {}", operations.join(", ")),
        },
    }
}

pub(crate) fn severity_badge(s: Severity) -> impl IntoView {
    let class = match s {
        Severity::Critical => "badge danger",
        Severity::Warning => "badge warn",
        Severity::Info => "badge",
    };
    view! { <span class=class>{s.as_str()}</span> }
}

pub(crate) fn state_badge(s: AlertState) -> impl IntoView {
    let class = match s {
        AlertState::Firing => "badge danger",
        AlertState::Pending => "badge warn",
        AlertState::Resolved | AlertState::Ok => "badge ok",
    };
    view! { <span class=class>{s.as_str()}</span> }
}

fn value_text(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(v) if v != 0.0 && v.abs() < 1.0 => format!("{v:.4}"),
        Some(v) => format!("{v:.2}").trim_end_matches('0').trim_end_matches('.').to_string(),
    }
}

/// A deletion by id on one of the tabs: the action, and its error; when it succeeds, `done` is said and the
/// list is read again.
pub(super) fn removal<Fut>(
    delete: fn(String, String) -> Fut,
    done: &'static str,
    notice: RwSignal<Option<String>>,
    reread: impl Fn() + 'static,
) -> (Action<String, api::ApiResult<()>>, Signal<Option<api::ApiError>>)
where
    Fut: std::future::Future<Output = api::ApiResult<()>> + 'static,
{
    let customer = use_customer();
    let remove = act(move |id: &String| delete(customer.get_untracked(), id.clone()));
    Effect::new(move |_| {
        if let Some(Ok(())) = remove.value().get() {
            notice.set(Some(done.into()));
            reread();
        }
    });
    (remove, Signal::derive(move || remove.value().get().and_then(Result::err)))
}

#[component]
pub fn Alerts() -> impl IntoView {
    let q = use_query_state();
    let rule = Memo::new(move |_| q.get("rule"));
    let tab = Memo::new(move |_| {
        let t = q.get("tab");
        match t.as_str() {
            t if TABS.iter().any(|(id, _)| *id == t) => t.to_string(),
            // A notification's link names the rule: what it did.
            _ if !rule.get().is_empty() => "history".to_string(),
            _ => "firing".to_string(),
        }
    });
    view! {
        <section class="page alerts">
            <h1>"Alerts"</h1>
            <nav class="tabs" aria-label="Alerts">
                {TABS
                    .iter()
                    .map(|(id, label)| {
                        let id = *id;
                        view! {
                            <button
                                type="button"
                                class="tab"
                                aria-current=move || (tab.get() == id).then_some("page")
                                on:click=move |_| q.set(&[("tab", id.to_string()), ("page", String::new())])
                            >
                                {*label}
                            </button>
                        }
                    })
                    .collect_view()}
            </nav>
            {move || match tab.get().as_str() {
                "rules" => view! { <Rules chosen=rule /> }.into_any(),
                "history" => view! { <History rule /> }.into_any(),
                "channels" => view! { <channels::Channels /> }.into_any(),
                "silences" => view! { <silences::Silences /> }.into_any(),
                _ => view! { <Firing chosen=rule /> }.into_any(),
            }}
        </section>
    }
}

/// Rules firing or pending now, the most severe first.
#[component]
fn Firing(
    /// The rule named in the address, marked.
    chosen: Memo<String>,
) -> impl IntoView {
    let customer = use_customer();
    let rules = load(move || {
        let c = customer.get();
        async move { api::alert_rules(&c).await }
    });
    view! {
        <AsyncView resource=rules loading="Loading alerts…" children=move |page| {
            let mut now: Vec<AlertRule> = page
                .items
                .into_iter()
                .filter(|r| matches!(r.status.state, AlertState::Firing | AlertState::Pending))
                .collect();
            now.sort_by_key(|r| std::cmp::Reverse((r.status.state == AlertState::Firing, r.severity)));
            if now.is_empty() {
                return view! {
                    <div class="empty">
                        <p>"Nothing fires now."</p>
                        <p class="muted">{format!("{} rules are watched.", page.total)}</p>
                    </div>
                }
                    .into_any();
            }
            view! {
                <div class="table-scroll">
                    <table class="data">
                        <thead>
                            <tr>
                                <th scope="col">"Rule"</th>
                                <th scope="col">"State"</th>
                                <th scope="col">"Severity"</th>
                                <th scope="col">"Value"</th>
                                <th scope="col">"Since"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {now
                                .into_iter()
                                .map(|r| {
                                    let group: Vec<String> = r.status.group.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect();
                                    view! {
                                        <tr data-rule=r.id.clone() class:chosen=is_chosen(chosen, &r.id)>
                                            <td>
                                                <strong>{r.name.clone()}</strong>
                                                <div class="small muted">{condition_text(&r.condition)}</div>
                                            </td>
                                            <td>{state_badge(r.status.state)}</td>
                                            <td>{severity_badge(r.severity)}</td>
                                            <td>
                                                {value_text(r.status.value)}
                                                {(!group.is_empty()).then(|| view! { <div class="small muted">{group.join(", ")}</div> })}
                                            </td>
                                            <td><Time iso=r.status.since.clone() /></td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                </div>
            }
                .into_any()
        } />
    }
}

/// Every rule, with its state; new, edit and delete for those who manage alerts.
#[component]
fn Rules(
    /// The rule named in the address, marked.
    chosen: Memo<String>,
) -> impl IntoView {
    let customer = use_customer();
    let q = use_query_state();
    let auth = Auth::get();
    let rules = load(move || {
        let c = customer.get();
        async move { api::alert_rules(&c).await }
    });
    // The editor: a new rule (prefilled from the address by "Alert on this") or one to change.
    let editing = RwSignal::new(if q.get("new").is_empty() { None } else { Some(None::<AlertRule>) });
    let notice = RwSignal::new(None::<String>);
    let (remove, remove_error) = removal(
        |c, id| async move { api::delete_alert_rule(&c, &id).await },
        "The rule was deleted.",
        notice,
        move || rules.refetch(),
    );
    view! {
        <div class="toolbar">
            {move || notice.get().map(|n| view! { <p class="notice" role="status">{n}</p> })}
            <span class="spacer"></span>
            {move || auth.can_write().then(|| view! {
                <button type="button" on:click=move |_| editing.set(Some(None))>"New rule"</button>
            })}
        </div>
        {move || remove_error.get().map(|error| view! { <ApiErrorNotice error /> })}
        <AsyncView resource=rules loading="Loading rules…" children=move |page| {
            if page.items.is_empty() {
                return view! {
                    <div class="empty">
                        <p>"No alert rules yet."</p>
                        <p class="muted">"A rule watches a statistics query or the audit log and notifies its channels when it fires."</p>
                    </div>
                }
                    .into_any();
            }
            view! {
                <div class="table-scroll">
                    <table class="data">
                        <thead>
                            <tr>
                                <th scope="col">"Rule"</th>
                                <th scope="col">"Severity"</th>
                                <th scope="col">"State"</th>
                                <th scope="col">"Value"</th>
                                <th scope="col">"Channels"</th>
                                <th scope="col"><span class="sr-only">"Actions"</span></th>
                            </tr>
                        </thead>
                        <tbody>
                            {page
                                .items
                                .into_iter()
                                .map(|r| {
                                    let (edit, id) = (r.clone(), r.id.clone());
                                    view! {
                                        <tr data-rule=r.id.clone() class:chosen=is_chosen(chosen, &r.id)>
                                            <td>
                                                <strong>{r.name.clone()}</strong>
                                                {(!r.enabled).then(|| view! { " " <span class="badge off">"off"</span> })}
                                                <div class="small muted">{condition_text(&r.condition)}</div>
                                                {r.status.error.clone().map(|e| view! { <div class="small field-error">{e}</div> })}
                                            </td>
                                            <td>{severity_badge(r.severity)}</td>
                                            <td>{state_badge(r.status.state)}</td>
                                            <td>{value_text(r.status.value)}</td>
                                            <td>{r.channels.len()}</td>
                                            <td class="actions">
                                                {move || auth.can_write().then(|| {
                                                    let (edit, id) = (edit.clone(), id.clone());
                                                    view! {
                                                        <button type="button" class="secondary" on:click=move |_| editing.set(Some(Some(edit.clone())))>"Edit"</button>
                                                        <button type="button" class="secondary danger" on:click=move |_| { remove.dispatch(id.clone()); }>"Delete"</button>
                                                    }
                                                })}
                                            </td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                </div>
            }
                .into_any()
        } />
        {move || editing.get().map(|rule| view! {
            <editor::RuleEditor
                rule
                on_done=Callback::new(move |message: String| {
                    editing.set(None);
                    notice.set(Some(message));
                    rules.refetch();
                })
                on_close=Callback::new(move |_| editing.set(None))
            />
        })}
    }
}

/// Whether `id` is the rule named in the address (followed, so a row is marked without being built again).
fn is_chosen(chosen: Memo<String>, id: &str) -> impl Fn() -> bool + Send + Sync + 'static + use<> {
    let id = id.to_string();
    move || chosen.try_get().is_some_and(|c| c == id)
}

/// The rules' changes of state, newest first: of every rule, or of the one named in the address.
#[component]
fn History(rule: Memo<String>) -> impl IntoView {
    let customer = use_customer();
    let q = use_query_state();
    let page = Memo::new(move |_| q.page("page"));
    let events = load(move || {
        let u = api::alert_events_url(&customer.get(), page.get(), HISTORY_PAGE, &rule.get());
        async move { api::alert_events(&u).await }
    });
    let one_rule = move |name: Option<String>| {
        (!rule.get_untracked().is_empty()).then(|| {
            let text = match name {
                Some(n) => format!("The changes of rule “{n}”."),
                None => "The changes of one rule.".to_string(),
            };
            view! {
                <p class="notice info one-rule" role="status">
                    {text} " "
                    <button type="button" class="link" on:click=move |_| q.set(&[("rule", String::new()), ("page", String::new())])>
                        "Show every rule"
                    </button>
                </p>
            }
        })
    };
    view! {
        <AsyncView resource=events loading="Loading the history…" children=move |list: AlertEventPage| {
            let named = one_rule(list.items.first().map(|e| e.rule_name.clone()));
            if list.items.is_empty() {
                let empty = if rule.get_untracked().is_empty() { "No rule has changed its state yet." } else { "This rule has not changed its state yet." };
                return view! { {named} <div class="empty">{empty}</div> }.into_any();
            }
            let shown = list.items.len() as u64;
            view! {
                {named}
                <div class="table-scroll">
                    <table class="data">
                        <thead>
                            <tr>
                                <th scope="col">"Time"</th>
                                <th scope="col">"Rule"</th>
                                <th scope="col">"Change"</th>
                                <th scope="col">"Value"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {list
                                .items
                                .into_iter()
                                .map(|e| view! {
                                    <tr>
                                        <td><Time iso=e.time.clone() /></td>
                                        <td>{e.rule_name.clone()} " " {severity_badge(e.severity)}</td>
                                        <td>
                                            {e.from.as_str()} " → " {state_badge(e.to)}
                                            {e.silenced.then(|| view! { " " <span class="badge off">"silenced"</span> })}
                                        </td>
                                        <td>{value_text(e.value)}</td>
                                    </tr>
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                </div>
                <Pager
                    page=list.page_index
                    per_page=HISTORY_PAGE
                    shown
                    total=list.total
                    on_page=Callback::new(move |p: u64| q.set(&[("page", p.to_string())]))
                />
            }
                .into_any()
        } />
    }
}
