//! Purge: up to 10,000 URIs at once (pasted one per line, or a file), action and match mode, each line checked
//! against the account's host patterns before sending; a confirmation naming how many URIs on which hosts
//! (and warning about prefix purges); the URIs sent in requests of 500, paced under the API's 2 requests a
//! second (waiting as a 429's Retry-After says); one overall progress and each transaction's status; the
//! recent purges. Also "Purge this URL" from the statistics' top URLs.

use edge_api::{MATCH_MODES, PurgeBody, PurgeRequest, PurgeUri, TransactionStatus, TransactionSummary, uri_problems};
use leptos::{ev, prelude::*, task::spawn_local};

use crate::{
    api::{self, ApiError, Purged},
    components::{
        async_view::{AsyncView, load},
        bulk::{BulkLines, FileChooser, LinesInput, Pace, Source, chunk_spans, numbered_lines, send_in_chunks},
        dialog::Confirm,
        progress::{ProgressBar, follow, sleep},
        time::TimeMs,
    },
    nav::use_customer,
    session::Auth,
};

/// The most URIs one submission takes.
pub const MAX_URIS: usize = 10_000;
/// URIs per purge request.
pub const CHUNK: usize = 500;
/// The API takes 2 purge requests a second per customer: one every half second at most.
const PACE_MS: f64 = 500.0;

/// One line of the form, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct PurgeLine {
    pub line: usize,
    pub uri: PurgeUri,
    pub problems: Vec<String>,
}

/// Checks each non-empty line as a URI pattern of the chosen match mode, against the host patterns.
pub fn check_purge_lines(text: &str, mode: &str, modifier: &str, patterns: &[String]) -> Vec<PurgeLine> {
    numbered_lines(text)
        .map(|(line, l)| {
            let uri = PurgeUri {
                uri_pattern: l.trim().to_string(),
                match_mode: mode.to_string(),
                cache_key_modifier_regex: (!modifier.trim().is_empty()).then(|| modifier.trim().to_string()),
            };
            PurgeLine { line, problems: uri_problems(&uri, patterns), uri }
        })
        .collect()
}

/// The distinct hosts of URI patterns, in order.
pub fn hosts_of(uris: &[PurgeUri]) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for u in uris {
        let p = u.uri_pattern.trim();
        let rest = p.strip_prefix("https://").or_else(|| p.strip_prefix("http://")).unwrap_or(p);
        let host = rest.split('/').next().unwrap_or_default().to_ascii_lowercase();
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    hosts
}

/// Where one request of a submission stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    Waiting,
    /// Refused for the rate limit; sent again at this time (ms).
    Retrying(f64),
    Sent(TransactionStatus),
    Failed(String),
}

/// One submission: its URIs in requests, and how each stands.
#[derive(Clone)]
struct Submission {
    action: String,
    /// (first URI's number from 1, URIs in the request, its state)
    chunks: Vec<(usize, usize, RwSignal<Chunk>)>,
}

impl Submission {
    fn percent(&self) -> u8 {
        let n = self.chunks.len().max(1) as u64;
        let sum: u64 = self
            .chunks
            .iter()
            .map(|(_, _, c)| match c.get() {
                Chunk::Sent(t) => u64::from(t.transaction_response.percent_received_responses),
                Chunk::Failed(_) => 100,
                _ => 0,
            })
            .sum();
        (sum / n) as u8
    }

    fn summary(&self) -> String {
        let (mut done, mut failed, mut retrying) = (0, 0, 0);
        for (_, _, c) in &self.chunks {
            match c.get() {
                Chunk::Sent(t) if t.transaction_response.transaction_status != "PENDING" => done += 1,
                Chunk::Failed(_) => failed += 1,
                Chunk::Retrying(_) => retrying += 1,
                _ => {}
            }
        }
        let mut text = format!("{done} of {} request(s) complete", self.chunks.len());
        if failed > 0 {
            text.push_str(&format!(", {failed} failed"));
        }
        if retrying > 0 {
            text.push_str(", waiting for the rate limit");
        }
        text
    }
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
    let submissions = RwSignal::new(Vec::<Submission>::new());
    view! {
        <section class="page">
            <h1>"Purge"</h1>
            <Show
                when=move || auth.me().is_none() || auth.can_write()
                fallback=|| view! { <div class="notice info">"Viewers see purge status but cannot purge."</div> }
            >
                <AsyncView resource=patterns loading="Loading host patterns…" let:answer>
                    <PurgeForm patterns=answer submissions history_reload />
                </AsyncView>
            </Show>
            {move || {
                let list = submissions.get();
                (!list.is_empty())
                    .then(|| {
                        view! {
                            <div class="card panel wide" id="running-purges">
                                <h2>"Submitted here"</h2>
                                {list.into_iter().map(|s| view! { <SubmissionView s /> }).collect_view()}
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
fn SubmissionView(s: Submission) -> impl IntoView {
    let total: usize = s.chunks.iter().map(|(_, n, _)| n).sum();
    let (p, q) = (s.clone(), s.clone());
    let title = format!(
        "{} {total} URI(s) in {} request(s)",
        if s.action == "PURGE" { "Purge of" } else { "Expiry of" },
        s.chunks.len()
    );
    view! {
        <div class="submission">
            <h3>{title}</h3>
            <div class="overall" id="purge-overall">
                <ProgressBar percent=Signal::derive(move || p.percent()) label=Signal::derive(move || q.summary()) />
            </div>
            <ul class="chunks">
                {s
                    .chunks
                    .iter()
                    .map(|(first, n, state)| {
                        let range = format!("URIs {first}–{}", first + n - 1);
                        let state = *state;
                        view! {
                            <li
                                class="transaction"
                                data-status=move || match state.get() {
                                    Chunk::Waiting => "WAITING".to_string(),
                                    Chunk::Retrying(_) => "RETRYING".to_string(),
                                    Chunk::Sent(t) => t.transaction_response.transaction_status,
                                    Chunk::Failed(_) => "FAILED".to_string(),
                                }
                                data-transaction=move || match state.get() {
                                    Chunk::Sent(t) => t.transaction_id.to_string(),
                                    _ => String::new(),
                                }
                            >
                                <span class="chunk-range">{range}</span>
                                {move || match state.get() {
                                    Chunk::Waiting => view! { <span class="muted">"waiting to be sent"</span> }.into_any(),
                                    Chunk::Retrying(_) => view! { <span class="muted">"refused for the rate limit; sent again shortly"</span> }.into_any(),
                                    Chunk::Failed(e) => view! { <span class="field-error">{e}</span> }.into_any(),
                                    Chunk::Sent(t) => {
                                        let r = t.transaction_response;
                                        let label = if r.transaction_status == "PENDING" {
                                            format!("Transaction {}: {}% of edge nodes confirmed", t.transaction_id, r.percent_received_responses)
                                        } else {
                                            format!("Transaction {}: {}", t.transaction_id, r.transaction_status_description)
                                        };
                                        let percent = r.percent_received_responses;
                                        view! { <ProgressBar percent=Signal::derive(move || percent) label=Signal::derive(move || label.clone()) /> }.into_any()
                                    }
                                }}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </div>
    }
}

/// Sends a submission's requests one after the other, at most one every [`PACE_MS`], each again after a
/// 429's Retry-After until taken; follows the transactions (one request at a time) until all are done.
fn run(customer: String, action: String, uris: Vec<PurgeUri>, s: Submission, done: Callback<()>) {
    let sending = {
        let (customer, s) = (customer.clone(), s.clone());
        async move {
            let pace = Pace::new(PACE_MS);
            send_in_chunks(&uris, CHUNK, |i, chunk| {
                let (customer, action, pace) = (customer.clone(), action.clone(), pace.clone());
                let state = s.chunks.get(i).map(|(_, _, state)| *state);
                async move {
                    let Some(state) = state else { return false };
                    let request = PurgeRequest { purge_request: PurgeBody { action, uris: chunk } };
                    loop {
                        pace.wait().await;
                        match api::purge_once(&customer, &request).await {
                            Purged::Done(t) => {
                                let _ = state.try_set(Chunk::Sent(t));
                                return true;
                            }
                            Purged::Later(seconds) => {
                                let at = js_sys::Date::now() + f64::from(seconds) * 1000.0;
                                if state.try_set(Chunk::Retrying(at)).is_some() {
                                    return false;
                                }
                                sleep(seconds as i32 * 1000).await;
                            }
                            Purged::Failed(e) => {
                                let _ = state.try_set(Chunk::Failed(e.body.message));
                                return true;
                            }
                        }
                    }
                }
            })
            .await;
        }
    };
    spawn_local(sending);
    follow(move || {
        let (customer, s) = (customer.clone(), s.clone());
        async move {
            let mut open = false;
            for (_, _, state) in &s.chunks {
                let Some(now) = state.try_get_untracked() else { return false };
                match now {
                    Chunk::Sent(t) if t.transaction_response.transaction_status == "PENDING" => {
                        open = true;
                        if let Ok(t) = api::transaction(&customer, t.transaction_id).await {
                            let _ = state.try_set(Chunk::Sent(t));
                        }
                    }
                    Chunk::Waiting | Chunk::Retrying(_) => open = true,
                    _ => {}
                }
            }
            if !open {
                // The view may have gone while the last answer was on its way.
                let _ = done.try_run(());
            }
            open
        }
    });
}

#[component]
fn History(list: Vec<TransactionSummary>) -> impl IntoView {
    view! {
        <div class="table-scroll">
            <table class="data purges">
                <thead>
                    <tr>
                        <th scope="col">"Id"</th>
                        <th scope="col">"Action"</th>
                        <th scope="col">"URIs"</th>
                        <th scope="col">"By"</th>
                        <th scope="col">"Submitted"</th>
                        <th scope="col">"Status"</th>
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
                                    <td class="wrap">
                                        {t.sample.iter().map(|s| view! { <div><code>{s.clone()}</code></div> }).collect_view()}
                                        {(more > 0).then(|| view! { <div class="muted small">{format!("and {more} more")}</div> })}
                                    </td>
                                    <td>{t.user.clone()}</td>
                                    <td>
                                        <TimeMs ms=t.begin_ts />
                                    </td>
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
        </div>
    }
}

#[component]
fn PurgeForm(
    patterns: Vec<String>,
    submissions: RwSignal<Vec<Submission>>,
    history_reload: RwSignal<u32>,
) -> impl IntoView {
    let customer = use_customer();
    let input = BulkLines::default();
    let action = RwSignal::new("PURGE".to_string());
    let mode = RwSignal::new("EXACT_LITERAL".to_string());
    let modifier = RwSignal::new(String::new());
    let patterns = StoredValue::new(patterns);
    let confirming = RwSignal::new(false);
    let lines =
        Memo::new(move |_| check_purge_lines(&input.get(), &mode.get(), &modifier.get(), &patterns.get_value()));
    let too_many = move || lines.with(Vec::len) > MAX_URIS;
    let ready = move || lines.with(|l| !l.is_empty() && l.iter().all(|x| x.problems.is_empty())) && !too_many();
    let on_submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        if ready() {
            confirming.set(true);
        }
    };
    // The submission's state and its work belong to the form, not to the confirmation that starts them (which
    // goes away at once).
    let owner = StoredValue::new(Owner::current());
    let start = move || {
        confirming.set(false);
        let go = || {
            let uris: Vec<PurgeUri> = lines.get_untracked().into_iter().map(|l| l.uri).collect();
            let chunks = chunk_spans(uris.len(), CHUNK)
                .into_iter()
                .map(|(first, n)| (first, n, RwSignal::new(Chunk::Waiting)))
                .collect();
            let s = Submission { action: action.get_untracked(), chunks };
            submissions.update(|all| all.insert(0, s.clone()));
            history_reload.update(|n| *n += 1);
            input.clear();
            run(
                customer.get_untracked(),
                action.get_untracked(),
                uris,
                s,
                Callback::new(move |_| history_reload.update(|n| *n += 1)),
            );
        };
        match owner.get_value() {
            Some(o) => o.with(go),
            None => go(),
        }
    };
    let on_file = Callback::new(move |(name, text): (String, String)| {
        let _ = input.source.try_set(Source::File { name, text });
    });
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
            <LinesInput lines=input file_id="purge-file">
                <label>
                    {format!("URIs, one per line (up to {MAX_URIS})")}
                    <textarea name="uris" rows="6" placeholder="www.example.com/images/logo.png" bind:value=input.text></textarea>
                </label>
            </LinesInput>
            <span class="hint">{format!("Domains you may purge: {host_list}")}</span>
            <FileChooser label="Or choose a file (one URI per line) " name="uri-file" on_file />
            {move || {
                let checked = lines.get();
                let bad: Vec<PurgeLine> = checked.iter().filter(|l| !l.problems.is_empty()).take(50).cloned().collect();
                let n_bad = checked.iter().filter(|l| !l.problems.is_empty()).count();
                (!checked.is_empty())
                    .then(|| {
                        view! {
                            <div class="report" role="status" id="purge-report">
                                <p>{format!("{} line(s), {n_bad} with problems", checked.len())}</p>
                                {(checked.len() > MAX_URIS).then(|| view! { <p class="field-error">{format!("At most {MAX_URIS} URIs at once: split the list.")}</p> })}
                                <ul class="invalid-lines">
                                    {bad.iter().map(|l| view! { <li>{format!("Line {}: {}", l.line, l.problems.join("; "))}</li> }).collect_view()}
                                </ul>
                            </div>
                        }
                    })
            }}
            <div class="actions">
                <button type="submit" class="primary" disabled=move || !ready()>
                    {move || format!("{} {} URI(s)…", if action.get() == "PURGE" { "Purge" } else { "Expire" }, lines.with(Vec::len))}
                </button>
            </div>
        </form>
        {move || {
            confirming
                .get()
                .then(|| {
                    let uris: Vec<PurgeUri> = lines.get_untracked().into_iter().map(|l| l.uri).collect();
                    let hosts = hosts_of(&uris);
                    let prefix = mode.get_untracked() == "PREFIX_LITERAL";
                    let verb = if action.get_untracked() == "PURGE" { "Purge" } else { "Expire" };
                    let requests = uris.len().div_ceil(CHUNK);
                    view! {
                        <Confirm
                            title=format!("{verb} {} URI(s)?", uris.len())
                            message=format!(
                                "{} URI(s) on {} host(s), sent as {requests} request(s){}.",
                                uris.len(),
                                hosts.len(),
                                if requests > 1 { " two a second" } else { "" },
                            )
                            action=format!("{verb} {} URI(s)", uris.len())
                            pending=Signal::derive(|| false)
                            error=Signal::derive(|| None::<ApiError>)
                            on_confirm=Callback::new(move |_| start())
                            on_close=Callback::new(move |_| confirming.set(false))
                        >
                            <ul class="hosts" id="purge-hosts">
                                {hosts.iter().take(20).map(|h| view! { <li><code>{h.clone()}</code></li> }).collect_view()}
                                {(hosts.len() > 20).then(|| view! { <li>{format!("and {} more", hosts.len() - 20)}</li> })}
                            </ul>
                            {prefix
                                .then(|| {
                                    view! {
                                        <div class="notice warning" role="alert" id="prefix-warning">
                                            "A prefix purge removes everything under each of these paths — for a path like \"/\", the whole site. \
                                             Your origin then serves every request for it until the caches fill again."
                                        </div>
                                    }
                                })}
                        </Confirm>
                    }
                })
        }}
    }
}
