//! Silences: a rule or labels, from–until, optionally every day or week (a maintenance window). Notifications in
//! a silence are recorded in the channels' logs, not sent.

use std::collections::BTreeMap;

use edge_api::alerts::{Repeat, Silence, SilenceInput};
use leptos::{ev, prelude::*};

use crate::{
    api::{self, ApiError},
    components::{
        async_view::{AsyncView, act, load},
        dialog::Dialog,
        errors::{ApiErrorNotice, FieldError, FormError},
        time::Time,
    },
    nav::use_customer,
    session::Auth,
};

/// A `datetime-local` value (UTC here) as an API time.
fn api_time(local: &str) -> String {
    match local.len() {
        0 => String::new(),
        16 => format!("{local}:00Z"),
        _ => format!("{local}Z"),
    }
}

/// Now and an hour later, as `datetime-local` values in UTC.
fn default_window() -> (String, String) {
    let now = js_sys::Date::now() as i64;
    let local = |ms: i64| crate::components::time::utc_ms(ms).chars().take(16).collect::<String>().replace(' ', "T");
    (local(now), local(now + 3_600_000))
}

#[component]
pub(super) fn Silences() -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let silences = load(move || {
        let c = customer.get();
        async move { api::silences(&c).await }
    });
    let creating = RwSignal::new(false);
    let notice = RwSignal::new(None::<String>);
    let (remove, remove_error) = super::removal(
        |c, id| async move { api::delete_silence(&c, &id).await },
        "The silence was ended.",
        notice,
        move || silences.refetch(),
    );
    view! {
        <div class="toolbar">
            {move || notice.get().map(|n| view! { <p class="notice" role="status">{n}</p> })}
            <span class="spacer"></span>
            {move || auth.can_write().then(|| view! { <button type="button" on:click=move |_| creating.set(true)>"New silence"</button> })}
        </div>
        {move || remove_error.get().map(|error| view! { <ApiErrorNotice error /> })}
        <AsyncView resource=silences loading="Loading silences…" children=move |page| {
            if page.items.is_empty() {
                return view! { <div class="empty">"No silences in force or ahead."</div> }.into_any();
            }
            view! {
                <div class="table-scroll">
                    <table class="data">
                        <thead>
                            <tr>
                                <th scope="col">"Silences"</th>
                                <th scope="col">"When"</th>
                                <th scope="col">"Now"</th>
                                <th scope="col"><span class="sr-only">"Actions"</span></th>
                            </tr>
                        </thead>
                        <tbody>{page.items.into_iter().map(|s| silence_row(s, remove, auth)).collect_view()}</tbody>
                    </table>
                </div>
            }
                .into_any()
        } />
        {move || creating.get().then(|| view! {
            <SilenceForm
                on_done=Callback::new(move |_| {
                    creating.set(false);
                    notice.set(Some("The silence was created.".into()));
                    silences.refetch();
                })
                on_close=Callback::new(move |_| creating.set(false))
            />
        })}
    }
}

fn silence_row(s: Silence, remove: Action<String, api::ApiResult<()>>, auth: Auth) -> impl IntoView {
    let what: Vec<String> =
        s.rule_id.iter().map(|r| format!("rule {r}")).chain(s.labels.iter().map(|(k, v)| format!("{k}={v}"))).collect();
    let id = s.id.clone();
    view! {
        <tr data-silence=s.id.clone()>
            <td>
                <strong>{what.join(", ")}</strong>
                {(!s.comment.is_empty()).then(|| view! { <div class="small muted">{s.comment.clone()}</div> })}
            </td>
            <td class="small">
                <Time iso=s.starts.clone() /> " – " <Time iso=s.ends.clone() />
                {s.repeat.map(|r| format!(", {}", r.as_str()))}
            </td>
            <td>{if s.active { view! { <span class="badge warn">"silencing"</span> }.into_any() } else { view! { <span class="badge off">"ahead"</span> }.into_any() }}</td>
            <td class="actions">
                {move || auth.can_write().then(|| {
                    let id = id.clone();
                    view! { <button type="button" class="secondary" on:click=move |_| { remove.dispatch(id.clone()); }>"End"</button> }
                })}
            </td>
        </tr>
    }
}

#[component]
fn SilenceForm(on_done: Callback<()>, on_close: Callback<()>) -> impl IntoView {
    let customer = use_customer();
    let rules = load(move || {
        let c = customer.get();
        async move { api::alert_rules(&c).await }
    });
    let (from, until) = default_window();
    let rule = RwSignal::new(String::new());
    let labels = RwSignal::new(String::new());
    let starts = RwSignal::new(from);
    let ends = RwSignal::new(until);
    let repeat = RwSignal::new(String::new());
    let comment = RwSignal::new(String::new());
    let save = act(move |input: &SilenceInput| {
        let (c, input) = (customer.get_untracked(), input.clone());
        async move { api::create_silence(&c, &input).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(_)) = save.value().get() {
            on_done.run(());
        }
    });
    let error: Signal<Option<ApiError>> = Signal::derive(move || save.value().get().and_then(Result::err));
    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let labels: BTreeMap<String, String> = labels
            .get_untracked()
            .split(',')
            .filter_map(|p| p.split_once('=').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
            .collect();
        save.dispatch(SilenceInput {
            comment: comment.get_untracked(),
            rule_id: Some(rule.get_untracked()).filter(|r| !r.is_empty()),
            labels,
            starts: api_time(&starts.get_untracked()),
            ends: api_time(&ends.get_untracked()),
            repeat: Repeat::parse(&repeat.get_untracked()),
            repeat_until: None,
        });
    };
    view! {
        <Dialog title="New silence".to_string() on_close>
            <form class="form" on:submit=submit novalidate>
                <FormError error fields=&["rule_id", "labels", "starts", "ends", "comment"] />
                <label>
                    "Rule"
                    <select name="rule_id" on:change=move |e| rule.set(event_target_value(&e))>
                        <option value="">"Any rule with the labels below"</option>
                        {move || rules.get().and_then(Result::ok).map(|p| p.items.into_iter().map(|r| view! { <option value=r.id.clone()>{r.name.clone()}</option> }).collect_view())}
                    </select>
                    <FieldError error field="rule_id" />
                </label>
                <label>
                    "Labels (name=value, comma-separated; all must match)"
                    <input name="labels" autocomplete="off" placeholder="team=edge" bind:value=labels />
                    <FieldError error field="labels" />
                </label>
                <div class="row">
                    <label>
                        "From (UTC)"
                        <input name="starts" type="datetime-local" bind:value=starts />
                        <FieldError error field="starts" />
                    </label>
                    <label>
                        "Until (UTC)"
                        <input name="ends" type="datetime-local" bind:value=ends />
                        <FieldError error field="ends" />
                    </label>
                </div>
                <label>
                    "Repeat"
                    <select name="repeat" on:change=move |e| repeat.set(event_target_value(&e))>
                        <option value="">"Once"</option>
                        <option value="daily">"Every day (a maintenance window)"</option>
                        <option value="weekly">"Every week"</option>
                    </select>
                </label>
                <label>
                    "Comment"
                    <input name="comment" autocomplete="off" placeholder="Database maintenance" bind:value=comment />
                    <FieldError error field="comment" />
                </label>
                <div class="actions">
                    <button type="submit" class="primary" disabled=move || save.pending().get()>"Create silence"</button>
                    <button type="button" class="secondary" on:click=move |_| on_close.run(())>"Cancel"</button>
                </div>
            </form>
        </Dialog>
    }
}
