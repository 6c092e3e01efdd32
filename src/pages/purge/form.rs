//! The purge form: URIs typed, pasted or from a file, each checked against the account's host patterns, then a
//! confirmation naming how many URIs on which hosts (and warning about prefix purges).

use edge_api::{MATCH_MODES, PurgeUri, uri_problems};
use leptos::{ev, prelude::*};

use crate::{
    api::ApiError,
    components::{
        bulk::{BulkLines, FileChooser, LinesInput, Source, chunk_spans, numbered_lines},
        dialog::Confirm,
    },
    nav::use_customer,
};

use super::{
    CHUNK, MAX_URIS,
    submission::{Chunk, Submission, run},
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

#[component]
pub(super) fn PurgeForm(
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
