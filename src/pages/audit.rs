//! The audit log (administrators): who changed what, from where, when; failed logins and lockouts. The filters
//! and the page live in the address, so a view of the log can be bookmarked and shared; the export writes every
//! record the filters keep (up to a limit) as CSV.

use edge_api::{AUDIT_OPERATIONS, AuditRecord, Role};
use leptos::prelude::*;
use leptos_router::{
    NavigateOptions,
    components::A,
    hooks::{use_navigate, use_query_map},
};
use serde_json::Value;

use crate::{
    api::{self, AuditFilter},
    components::{
        async_view::{AsyncView, act, load},
        download::{csv, download},
        errors::ApiErrorNotice,
        pager::Pager,
        time::{self, Time, Zone},
    },
    nav::use_customer,
    session::{Auth, role_of},
};

/// Records a page shows: the choices, and the first of them by default.
const PAGE_SIZES: [u64; 4] = [50, 25, 100, 200];
/// Records read per request when exporting, and the most an export holds.
const EXPORT_PAGE: u64 = 1000;
const EXPORT_MAX: u64 = 20_000;

/// Families of operations offered as one choice (the API takes a prefix up to a dot).
const GROUPS: [(&str, &str); 8] = [
    ("session", "Sessions"),
    ("login", "Failed logins and lockouts"),
    ("user", "Users, passwords, two-factor"),
    ("property", "Property configuration"),
    ("cache", "Purges"),
    ("networklist", "Network lists"),
    ("account", "Account"),
    ("customer", "Account creation"),
];

/// The filters in the address: `from`, `to`, `actor`, `operation`, `target`, `page` and `count`.
const PARAMS: [&str; 7] = ["from", "to", "actor", "operation", "target", "page", "count"];

/// What an operation means, for people.
fn operation_label(op: &str) -> String {
    AUDIT_OPERATIONS.iter().find(|(id, _)| *id == op).map(|(_, l)| l.to_string()).unwrap_or_else(|| op.to_string())
}

/// A `datetime-local` value (`2026-11-22T10:00`, UTC here) as an API time.
fn api_time(local: &str) -> String {
    match local.len() {
        0 => String::new(),
        16 => format!("{local}:00Z"),
        _ => format!("{local}Z"),
    }
}

/// The address keeps its times in UTC (`2026-11-22T10:00`), so that a link means the same to everyone; the
/// form shows them in the display time zone. Empty or unreadable stays empty.
fn wall_of(utc: &str) -> String {
    let full = if utc.len() == 16 { format!("{utc}:00") } else { utc.to_string() };
    edge_api::stats::parse_time(&full).map(time::wall_input).unwrap_or_default()
}

/// [`wall_of`] backwards: a form value in the display zone as the address's UTC value.
fn utc_of(wall: &str) -> String {
    time::from_wall_input(wall).map(|ms| edge_api::stats::format_time(ms)[..16].to_string()).unwrap_or_default()
}

/// The console's own page of a record's target, while the target exists.
fn target_href(customer: &str, r: &AuditRecord) -> Option<String> {
    r.target.uri.as_ref()?;
    let t = &r.target;
    let enc = api::encode;
    Some(match t.kind.as_str() {
        "user" => format!("/{customer}/users?q={}", enc(&t.name)),
        "property" => format!("/{customer}/properties?name={}", enc(&t.id)),
        "network_list" => format!("/{customer}/lists?list={}", enc(&t.id)),
        "purge" => format!("/{customer}/purge"),
        "account" => format!("/{customer}/account"),
        "identity_source" => format!("/{customer}/users"),
        _ => return None,
    })
}

/// `key: value` of each detail; a purge's in words ("3 URI patterns, the first /images/*").
fn details_text(r: &AuditRecord) -> String {
    if r.operation == "cache.purge"
        && let Some(n) = r.details.get("uris").and_then(Value::as_u64)
    {
        let first = r.details.get("first_uri").and_then(Value::as_str).unwrap_or_default();
        let patterns = if n == 1 { "URI pattern" } else { "URI patterns" };
        return match (n, first) {
            (_, "") => format!("{n} {patterns}"),
            (1, f) => format!("1 {patterns}: {f}"),
            (n, f) => format!("{n} {patterns}, the first {f}"),
        };
    }
    r.details
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn csv_of(records: &[AuditRecord]) -> String {
    let header = [
        "time",
        "actor",
        "actor_type",
        "actor_id",
        "source_address",
        "operation",
        "outcome",
        "target_type",
        "target_id",
        "target_name",
        "details",
    ];
    csv(
        header.iter().map(|h| h.to_string()),
        records.iter().map(|r| {
            vec![
                r.time.clone(),
                r.actor.name.clone(),
                r.actor.kind.clone(),
                r.actor.id.clone().unwrap_or_default(),
                r.source_address.clone(),
                r.operation.clone(),
                r.outcome.clone(),
                r.target.kind.clone(),
                r.target.id.clone(),
                r.target.name.clone(),
                Value::Object(r.details.clone()).to_string(),
            ]
        }),
    )
}

#[component]
pub fn AuditLog() -> impl IntoView {
    let auth = Auth::get();
    let role = Memo::new(move |_| auth.me().map(|u| u.role.id));
    view! {
        <section class="page">
            <h1>"Audit log"</h1>
            // By role, not by the whole record: a refreshed record (two-factor turned on) rebuilds nothing.
            {move || match role.get().map(|_| auth.me_untracked()) {
                None | Some(None) => view! { <p class="muted">"Loading…"</p> }.into_any(),
                Some(Some(me)) if role_of(&me) == Some(Role::Admin) => view! { <Log /> }.into_any(),
                Some(Some(me)) => {
                    view! {
                        <div class="notice info">
                            {format!(
                                "Only administrators read the audit log. You are logged in as {} with the {} role.",
                                me.username,
                                me.role.id,
                            )}
                        </div>
                    }
                        .into_any()
                }
            }}
        </section>
    }
}

#[component]
fn Log() -> impl IntoView {
    let customer = use_customer();
    let query = use_query_map();
    let navigate = use_navigate();
    let get = move |k: &str| query.read().get(k).unwrap_or_default();
    let filter = Memo::new(move |_| AuditFilter {
        from: api_time(&get("from")),
        to: api_time(&get("to")),
        actor: get("actor"),
        operation: get("operation"),
        target: get("target"),
    });
    let page = Memo::new(move |_| get("page").parse::<u64>().ok().filter(|p| *p >= 1).unwrap_or(1));
    let per_page = Memo::new(move |_| {
        get("count").parse::<u64>().ok().filter(|c| PAGE_SIZES.contains(c)).unwrap_or(PAGE_SIZES[0])
    });
    // Changes the address: the given parameters set (empty ones removed), the others kept.
    let set = Callback::new(move |pairs: Vec<(&'static str, String)>| {
        let q = query.get_untracked();
        let mut params: Vec<(&str, String)> = PARAMS.iter().filter_map(|k| q.get(k).map(|v| (*k, v))).collect();
        for (k, v) in pairs {
            params.retain(|(x, _)| *x != k);
            if !v.is_empty() {
                params.push((k, v));
            }
        }
        let qs: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", api::encode(v))).collect();
        navigate(&format!("?{}", qs.join("&")), NavigateOptions { scroll: false, ..Default::default() });
    });
    let records = load(move || {
        let (c, f, p, n) = (customer.get(), filter.get(), page.get(), per_page.get());
        async move { api::list_audit(&c, &f, p, n).await }
    });

    // The form edits copies; Apply puts them in the address (and so in the list).
    let from = RwSignal::new(String::new());
    let to = RwSignal::new(String::new());
    let actor = RwSignal::new(String::new());
    let target = RwSignal::new(String::new());
    let zone = Zone::get();
    Effect::new(move |_| {
        zone.name();
        from.set(wall_of(&get("from")));
        to.set(wall_of(&get("to")));
        actor.set(get("actor"));
        target.set(get("target"));
    });
    let apply = move |e: leptos::ev::SubmitEvent| {
        e.prevent_default();
        set.run(vec![
            ("from", utc_of(&from.get_untracked())),
            ("to", utc_of(&to.get_untracked())),
            ("actor", actor.get_untracked().trim().to_string()),
            ("target", target.get_untracked().trim().to_string()),
            ("page", String::new()),
        ]);
    };
    let clear = move |_| set.run(PARAMS.iter().map(|k| (*k, String::new())).collect());

    let export = act(move |_: &()| {
        let (c, f) = (customer.get_untracked(), filter.get_untracked());
        async move {
            let mut all = Vec::new();
            let mut page = 1;
            loop {
                let p = api::list_audit(&c, &f, page, EXPORT_PAGE).await?;
                let total = p.total;
                all.extend(p.items);
                if !p.has_more || all.len() as u64 >= EXPORT_MAX {
                    download("audit-log.csv", &csv_of(&all));
                    return Ok((all.len() as u64, total));
                }
                page += 1;
            }
        }
    });
    let export_note = move || match export.value().get() {
        Some(Ok((n, total))) if n < total => Some(
            view! {
                <div class="notice info" role="status">
                    {format!("Exported the newest {n} of {total} records; narrow the filters for the others.")}
                </div>
            }
            .into_any(),
        ),
        Some(Err(error)) => Some(view! { <ApiErrorNotice error /> }.into_any()),
        _ => None,
    };

    view! {
        <form class="toolbar audit-filters card" on:submit=apply aria-label="Filter the audit log">
            <label class="inline">
                "From " <input type="datetime-local" name="from" bind:value=from />
            </label>
            <label class="inline">
                "To " <input type="datetime-local" name="to" bind:value=to />
            </label>
            <label class="inline">
                "Actor " <input name="actor" placeholder="username or id" bind:value=actor />
            </label>
            <label class="inline">
                "Operation "
                <select
                    name="operation"
                    prop:value=move || get("operation")
                    on:change=move |e| {
                        set.run(vec![("operation", event_target_value(&e)), ("page", String::new())])
                    }
                >
                    <option value="">"Any"</option>
                    <optgroup label="Groups">
                        {GROUPS.iter().map(|(id, l)| view! { <option value=*id>{*l}</option> }).collect_view()}
                    </optgroup>
                    <optgroup label="Operations">
                        {AUDIT_OPERATIONS
                            .iter()
                            .map(|(id, l)| view! { <option value=*id>{*l}</option> })
                            .collect_view()}
                    </optgroup>
                </select>
            </label>
            <label class="inline">
                "Target " <input name="target" placeholder="id, or type:id" bind:value=target />
            </label>
            <button type="submit" class="primary">"Apply"</button>
            <button type="button" class="secondary" on:click=clear>"Clear"</button>
        </form>
        <div class="toolbar">
            <label class="inline">
                "Per page "
                <select
                    name="count"
                    prop:value=move || per_page.get().to_string()
                    on:change=move |e| set.run(vec![("count", event_target_value(&e)), ("page", String::new())])
                >
                    {PAGE_SIZES.iter().map(|n| view! { <option value=n.to_string()>{*n}</option> }).collect_view()}
                </select>
            </label>
            <span class="spacer"></span>
            <button
                type="button"
                id="export-csv"
                title="Every record the filters keep, as CSV"
                on:click=move |_| {
                    export.dispatch(());
                }
                disabled=move || export.pending().get()
            >
                {move || if export.pending().get() { "Exporting…" } else { "Export CSV" }}
            </button>
        </div>
        {export_note}
        <AsyncView resource=records loading="Loading the audit log…" let:list>
            {if list.items.is_empty() {
                view! { <div class="empty">"No records match."</div> }.into_any()
            } else {
                let shown = list.items.len() as u64;
                let c = customer.get_untracked();
                view! {
                    // Wide: it scrolls inside its own box on a phone, not the page.
                    <div class="table-scroll">
                    <table class="data audit">
                        <thead>
                            <tr>
                                <th scope="col">"Time"</th>
                                <th scope="col">"Actor"</th>
                                <th scope="col">"Source"</th>
                                <th scope="col">"Operation"</th>
                                <th scope="col">"Target"</th>
                                <th scope="col">"Outcome"</th>
                                <th scope="col">"Details"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {list.items.into_iter().map(|r| record_row(&c, r, set)).collect_view()}
                        </tbody>
                    </table>
                    </div>
                    <Pager
                        page=list.page_index
                        per_page=per_page.get_untracked()
                        shown
                        total=list.total
                        on_page=Callback::new(move |p: u64| set.run(vec![("page", p.to_string())]))
                    />
                }
                    .into_any()
            }}
        </AsyncView>
    }
}

fn record_row(customer: &str, r: AuditRecord, set: Callback<Vec<(&'static str, String)>>) -> impl IntoView {
    let href = target_href(customer, &r);
    let exists = href.is_some().to_string();
    let details = details_text(&r);
    let actor_key = r.actor.id.clone().unwrap_or_else(|| r.actor.name.clone());
    let system = r.actor.kind == "system";
    let target_key = if r.target.id.is_empty() { String::new() } else { format!("{}:{}", r.target.kind, r.target.id) };
    let (outcome_class, outcome) =
        if r.outcome == "success" { ("badge ok", "success") } else { ("badge danger", "failure") };
    let target_name = if r.target.name.is_empty() { r.target.id.clone() } else { r.target.name.clone() };
    view! {
        <tr data-operation=r.operation.clone() data-target-exists=exists>
            <td class="nowrap">
                <Time iso=r.time.clone() />
            </td>
            <td>
                <button
                    class=if system { "link badge off" } else { "link" }
                    title="Only this actor's records"
                    on:click=move |_| set.run(vec![("actor", actor_key.clone()), ("page", String::new())])
                >
                    {r.actor.name.clone()}
                </button>
            </td>
            <td>
                {if r.source_address.is_empty() {
                    view! { <span class="muted">"—"</span> }.into_any()
                } else {
                    view! { <code>{r.source_address.clone()}</code> }.into_any()
                }}
            </td>
            <td title=r.operation.clone()>{operation_label(&r.operation)}</td>
            <td class="target">
                <span class="muted small">{r.target.kind.replace('_', " ")} " "</span>
                {match href {
                    Some(href) => view! { <A href=href>{target_name}</A> }.into_any(),
                    None => view! { <span>{target_name}</span> }.into_any(),
                }}
                {(!target_key.is_empty())
                    .then(|| {
                        view! {
                            " "
                            <button
                                class="link small"
                                title="Only this target's records"
                                on:click=move |_| set.run(vec![("target", target_key.clone()), ("page", String::new())])
                            >
                                "filter"
                            </button>
                        }
                    })}
            </td>
            <td>
                <span class=outcome_class>{outcome}</span>
            </td>
            <td class="small">{details}</td>
        </tr>
    }
}
