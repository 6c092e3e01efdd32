//! Purge: many URIs at once (one per line), action and match mode, each line checked against the account's
//! host patterns before sending; a live progress bar per transaction; the recent purges.

use edge_api::{MATCH_MODES, PurgeBody, PurgeRequest, PurgeUri, TransactionStatus, TransactionSummary, uri_problems};
use leptos::{ev, prelude::*, task::spawn_local};

use crate::{
    api,
    components::{
        async_view::{AsyncView, act, load},
        errors::FormError,
        progress::{ProgressBar, poll},
        time::datetime_ms,
    },
    pages::use_customer,
    session::Auth,
};

/// One line of the form, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct PurgeLine {
    pub line: usize,
    pub uri: PurgeUri,
    pub problems: Vec<String>,
}

/// Checks each non-empty line as a URI pattern of the chosen match mode, against the host patterns.
pub fn check_purge_lines(text: &str, mode: &str, modifier: &str, patterns: &[String]) -> Vec<PurgeLine> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let uri = PurgeUri {
                uri_pattern: l.trim().to_string(),
                match_mode: mode.to_string(),
                cache_key_modifier_regex: (!modifier.trim().is_empty()).then(|| modifier.trim().to_string()),
            };
            PurgeLine { line: i + 1, problems: uri_problems(&uri, patterns), uri }
        })
        .collect()
}

#[component]
pub fn Purge() -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let patterns = load(move || {
        let c = customer.get();
        async move {
            api::list_properties(&c)
                .await
                .map(|ps| ps.into_iter().flat_map(|p| p.host_patterns).collect::<Vec<String>>())
        }
    });
    let history_reload = RwSignal::new(0u32);
    let history = load(move || {
        let c = customer.get();
        history_reload.track();
        async move { api::recent_purges(&c).await }
    });
    let running = RwSignal::new(Vec::<TransactionStatus>::new());
    // Follow the transactions submitted here, and the history while anything in it is pending.
    poll(move || {
        let c = customer.get_untracked();
        for t in running.get_untracked().into_iter().filter(|t| t.transaction_response.transaction_status == "PENDING")
        {
            let c = c.clone();
            spawn_local(async move {
                if let Ok(now) = api::transaction(&c, t.transaction_id).await {
                    let done = now.transaction_response.transaction_status != "PENDING";
                    running.update(|all| {
                        if let Some(slot) = all.iter_mut().find(|x| x.transaction_id == now.transaction_id) {
                            *slot = now;
                        }
                    });
                    if done {
                        history_reload.update(|n| *n += 1);
                    }
                }
            });
        }
        let pending = history
            .get_untracked()
            .and_then(Result::ok)
            .is_some_and(|h| h.iter().any(|t| t.transaction_status == "PENDING"));
        if pending {
            history.refetch();
        }
    });

    view! {
        <section class="page">
            <h1>"Purge"</h1>
            <Show
                when=move || auth.me().is_none() || auth.can_write()
                fallback=|| view! { <div class="notice info">"Viewers see purge status but cannot purge."</div> }
            >
                <AsyncView resource=patterns loading="Loading host patterns…" let:answer>
                    <PurgeForm patterns=answer running history_reload />
                </AsyncView>
            </Show>
            {move || {
                let list = running.get();
                (!list.is_empty())
                    .then(|| {
                        view! {
                            <div class="card panel wide" id="running-purges">
                                <h2>"Submitted here"</h2>
                                {list
                                    .into_iter()
                                    .map(|t| {
                                        let r = t.transaction_response;
                                        let label = if r.transaction_status == "PENDING" {
                                            format!("Transaction {}: {}% of edge nodes confirmed", t.transaction_id, r.percent_received_responses)
                                        } else {
                                            format!("Transaction {}: {}", t.transaction_id, r.transaction_status_description)
                                        };
                                        view! {
                                            <div class="transaction" data-transaction=t.transaction_id data-status=r.transaction_status.clone()>
                                                <ProgressBar percent=Signal::derive(move || r.percent_received_responses) label=Signal::derive(move || label.clone()) />
                                            </div>
                                        }
                                    })
                                    .collect_view()}
                            </div>
                        }
                    })
            }}
            <h2>"Recent purges"</h2>
            <AsyncView resource=history let:answer>
                {match answer {
                        list if list.is_empty() => view! { <div class="empty">"No purges yet."</div> }.into_any(),
                        list => view! { <History list /> }.into_any(),
                }}
            </AsyncView>
        </section>
    }
}

#[component]
fn History(list: Vec<TransactionSummary>) -> impl IntoView {
    view! {
        <table class="data purges">
            <thead>
                <tr>
                    <th>"Id"</th>
                    <th>"Action"</th>
                    <th>"URIs"</th>
                    <th>"By"</th>
                    <th>"Submitted"</th>
                    <th>"Status"</th>
                </tr>
            </thead>
            <tbody>
                {list
                    .into_iter()
                    .map(|t| {
                        let more = t.uri_count.saturating_sub(t.sample.len() as u64);
                        view! {
                            <tr>
                                <td>{t.transaction_id}</td>
                                <td>{t.action.clone()}</td>
                                <td>
                                    {t.sample.iter().map(|s| view! { <div><code>{s.clone()}</code></div> }).collect_view()}
                                    {(more > 0).then(|| view! { <div class="muted small">{format!("and {more} more")}</div> })}
                                </td>
                                <td>{t.user.clone()}</td>
                                <td>{datetime_ms(t.begin_ts)}</td>
                                <td>
                                    {if t.transaction_status == "PENDING" {
                                        view! {
                                            <div class="mini-bar" title=format!("{}%", t.percent_received_responses)>
                                                <div class="fill" style:width=format!("{}%", t.percent_received_responses)></div>
                                            </div>
                                        }
                                            .into_any()
                                    } else {
                                        view! { <span class="badge ok">{t.transaction_status.clone()}</span> }.into_any()
                                    }}
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn PurgeForm(
    patterns: Vec<String>,
    running: RwSignal<Vec<TransactionStatus>>,
    history_reload: RwSignal<u32>,
) -> impl IntoView {
    let customer = use_customer();
    let text = RwSignal::new(String::new());
    let action = RwSignal::new("PURGE".to_string());
    let mode = RwSignal::new("EXACT_LITERAL".to_string());
    let modifier = RwSignal::new(String::new());
    let patterns = StoredValue::new(patterns);
    let lines = Memo::new(move |_| check_purge_lines(&text.get(), &mode.get(), &modifier.get(), &patterns.get_value()));
    let submit = act(move |r: &PurgeRequest| {
        let (c, r) = (customer.get_untracked(), r.clone());
        async move { api::purge(&c, &r).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(t)) = submit.value().get() {
            running.update(|all| all.insert(0, t));
            text.set(String::new());
            history_reload.update(|n| *n += 1);
        }
    });
    let error = Signal::derive(move || submit.value().get().and_then(Result::err));
    let on_submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let checked = lines.get_untracked();
        if checked.is_empty() || checked.iter().any(|l| !l.problems.is_empty()) {
            return;
        }
        submit.dispatch(PurgeRequest {
            purge_request: PurgeBody {
                action: action.get_untracked(),
                uris: checked.into_iter().map(|l| l.uri).collect(),
            },
        });
    };
    let host_list = patterns.get_value().join(", ");
    view! {
        <form class="card panel wide form" id="purge-form" on:submit=on_submit novalidate>
            <div class="row">
                <label>
                    "Action"
                    <select name="action" on:change=move |e| action.set(event_target_value(&e))>
                        <option value="PURGE">"Purge: remove from cache"</option>
                        <option value="EXPIRE">"Expire: mark stale, keep as fallback"</option>
                    </select>
                </label>
                <label>
                    "Match"
                    <select name="match_mode" on:change=move |e| mode.set(event_target_value(&e))>
                        {MATCH_MODES
                            .iter()
                            .map(|m| {
                                let label = if *m == "EXACT_LITERAL" { "Exact object" } else { "Prefix (directory or name start)" };
                                view! { <option value=*m>{label}</option> }
                            })
                            .collect_view()}
                    </select>
                </label>
                <label>
                    "Cache key modifier"
                    <input
                        name="modifier"
                        placeholder="e.g. lang=* (prefix only)"
                        bind:value=modifier
                        prop:disabled=move || mode.get() == "EXACT_LITERAL"
                    />
                </label>
            </div>
            <label>
                "URIs, one per line"
                <textarea
                    name="uris"
                    rows="6"
                    placeholder="www.example.com/images/logo.png"
                    bind:value=text
                ></textarea>
                <span class="hint">{format!("Domains you may purge: {host_list}")}</span>
            </label>
            {move || {
                let checked = lines.get();
                let bad: Vec<PurgeLine> = checked.iter().filter(|l| !l.problems.is_empty()).cloned().collect();
                (!checked.is_empty())
                    .then(|| {
                        view! {
                            <div class="report" role="status" id="purge-report">
                                <p>{format!("{} line(s), {} with problems", checked.len(), bad.len())}</p>
                                <ul class="invalid-lines">
                                    {bad
                                        .iter()
                                        .take(50)
                                        .map(|l| view! { <li>{format!("Line {}: {}", l.line, l.problems.join("; "))}</li> })
                                        .collect_view()}
                                </ul>
                            </div>
                        }
                    })
            }}
            <FormError error fields=&[] />
            <div class="actions">
                <button
                    type="submit"
                    class="primary"
                    disabled=move || {
                        submit.pending().get() || lines.with(|l| l.is_empty() || l.iter().any(|x| !x.problems.is_empty()))
                    }
                >
                    {move || format!("{} {} URI(s)", if action.get() == "PURGE" { "Purge" } else { "Expire" }, lines.with(Vec::len))}
                </button>
            </div>
        </form>
    }
}
