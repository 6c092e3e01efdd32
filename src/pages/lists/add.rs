//! Adding entries by paste or file (a file of 50,000 lines is read, checked and sent without going through the
//! text area): a per-line report with fixes, then calls of 5,000, each call's outcome and deployment.

use edge_api::{AddEntriesResult, MAX_ENTRIES_PER_CALL};
use leptos::prelude::*;

use super::lines::{CheckedLine, Covered, check_lines, mark_covered, replace_entry, valid_values};
use crate::{
    api::{self, ApiError},
    components::{
        bulk::{BulkLines, FileChooser, LinesInput, Source, chunk_spans, send_in_chunks},
        errors::ApiErrorNotice,
        progress::TaskProgress,
    },
    nav::use_customer,
};

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
pub(super) fn AddEntries(list_id: String, list_type: String, reload: RwSignal<u32>) -> impl IntoView {
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
