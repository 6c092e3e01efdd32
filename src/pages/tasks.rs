//! Tasks: every long-running change with its live progress; filters and page in the address.

use edge_api::{TASK_STATUSES, Task, TaskPage, TaskPurge};
use leptos::prelude::*;
use leptos_router::components::A;

use crate::{
    api,
    components::{
        async_view::{AsyncError, load},
        chart::grouped,
        curl::CopyCurl,
        pager::Pager,
        progress::follow,
        time::Time,
    },
    nav::{use_customer, use_query_state},
};

const PAGE_SIZE: u64 = 25;
const OPERATIONS: [(&str, &str); 3] = [
    ("networklist.deploy", "Network list deployment"),
    ("config.deploy", "Configuration deployment"),
    ("purge", "Purge"),
];

/// A readable name for an operation.
pub fn operation_label(op: &str) -> &str {
    OPERATIONS.iter().find(|(id, _)| *id == op).map(|(_, l)| *l).unwrap_or(op)
}

#[component]
pub fn Tasks() -> impl IntoView {
    let customer = use_customer();
    let q = use_query_state();
    let page = Memo::new(move |_| q.page("page"));
    let status = Memo::new(move |_| q.get("status"));
    let operation = Memo::new(move |_| q.get("operation"));
    let url =
        Memo::new(move |_| api::tasks_url(&customer.get(), page.get(), PAGE_SIZE, &status.get(), &operation.get()));
    let tasks = load(move || {
        let u = url.get();
        async move { api::get_json::<TaskPage>(&u).await }
    });
    // While something on the page runs, the page is read again: one request at a time, less often as it goes.
    let fresh = RwSignal::new(None::<(String, TaskPage)>);
    follow(move || async move {
        let u = url.get_untracked();
        let shown = match fresh.get_untracked() {
            Some((at, p)) if at == u => Some(p),
            _ => tasks.get_untracked().and_then(Result::ok),
        };
        if shown.is_some_and(|p| p.items.iter().any(|t| !t.complete))
            && let Ok(p) = api::get_json::<TaskPage>(&u).await
        {
            return fresh.try_set(Some((u, p))).is_none();
        }
        true
    });
    let list = Signal::derive(move || {
        let u = url.get();
        match fresh.get() {
            Some((at, p)) if at == u => Some(Ok(p)),
            _ => tasks.get(),
        }
    });
    view! {
        <section class="page">
            <h1>"Tasks"</h1>
            <div class="toolbar">
                <label class="inline">
                    "Status "
                    <select name="status" prop:value=move || status.get() on:change=move |e| q.set(&[("status", event_target_value(&e)), ("page", String::new())])>
                        <option value="">"Any"</option>
                        {TASK_STATUSES.iter().map(|s| view! { <option value=*s>{*s}</option> }).collect_view()}
                    </select>
                </label>
                <label class="inline">
                    "Operation "
                    <select name="operation" prop:value=move || operation.get() on:change=move |e| q.set(&[("operation", event_target_value(&e)), ("page", String::new())])>
                        <option value="">"Any"</option>
                        {OPERATIONS.iter().map(|(id, l)| view! { <option value=*id>{*l}</option> }).collect_view()}
                    </select>
                </label>
                <span class="spacer"></span>
                <CopyCurl path=move || Some(url.get()) />
            </div>
            {move || match list.get() {
                None => view! { <p class="muted loading" role="status">"Loading tasks…"</p> }.into_any(),
                Some(Err(error)) if error.is_cancelled() => view! { <p class="muted loading" role="status">"Loading tasks…"</p> }.into_any(),
                Some(Err(error)) => view! { <AsyncError error retry=Callback::new(move |_| tasks.refetch()) /> }.into_any(),
                Some(Ok(list)) => {if list.items.is_empty() {
                    view! { <div class="empty">"No tasks match."</div> }.into_any()
                } else {
                    let shown = list.items.len() as u64;
                    let c = customer.get_untracked();
                    view! {
                        <div class="table-scroll">
                        <table class="data tasks">
                            <thead>
                                <tr>
                                    <th scope="col">"Operation"</th>
                                    <th scope="col">"Target"</th>
                                    <th scope="col">"Started by"</th>
                                    <th scope="col">"Status"</th>
                                    <th scope="col">"Progress"</th>
                                    <th scope="col">"Started"</th>
                                    <th scope="col">"Ended"</th>
                                </tr>
                            </thead>
                            <tbody>{list.items.into_iter().map(|t| task_row(&c, t)).collect_view()}</tbody>
                        </table>
                        </div>
                        <Pager
                            page=list.page_index
                            per_page=PAGE_SIZE
                            shown
                            total=list.total
                            on_page=Callback::new(move |p: u64| q.set(&[("page", p.to_string())]))
                        />
                    }
                        .into_any()
                }}
            }}
        </section>
    }
}

/// What a purge purged: "Purge of 3 URI patterns" and the first of them, with how many more.
fn purge_target(customer: &str, p: &TaskPurge) -> impl IntoView {
    let verb = if p.action == "EXPIRE" { "Expiry" } else { "Purge" };
    let patterns = if p.uri_count == 1 { "URI pattern".to_string() } else { "URI patterns".to_string() };
    let more = p.uri_count.saturating_sub(p.uris.len() as u64);
    view! {
        <A href=format!("/{customer}/purge")>{format!("{verb} of {} {patterns}", grouped(p.uri_count as i64))}</A>
        <ul class="task-uris">
            {p.uris.iter().map(|u| view! { <li class="ident" title=u.clone()>{u.clone()}</li> }).collect_view()}
            {(more > 0).then(|| view! { <li class="muted small">{format!("and {} more", grouped(more as i64))}</li> })}
        </ul>
    }
}

/// What a task changed, by name, linking to its page in the console; the id alone for tasks that have no name.
fn task_target(customer: &str, t: &Task) -> AnyView {
    if let Some(p) = &t.purge {
        return purge_target(customer, p).into_any();
    }
    let id = t.target.id.clone();
    let name = if t.target_name.is_empty() { id.clone() } else { t.target_name.clone() };
    let href = match t.operation.as_str() {
        "networklist.deploy" => Some(format!("/{customer}/lists?list={}", api::encode(&id))),
        "config.deploy" => Some(format!("/{customer}/properties?name={}", api::encode(&id))),
        _ => None,
    };
    let kind = match t.operation.as_str() {
        "networklist.deploy" => "network list",
        "config.deploy" => "property",
        _ => "",
    };
    view! {
        {(!kind.is_empty()).then(|| view! { <span class="muted small">{kind} " "</span> })}
        {match href {
            Some(href) => view! { <a href=href title=id>{name}</a> }.into_any(),
            None => view! { <span class="ident" title=id>{name}</span> }.into_any(),
        }}
    }
    .into_any()
}

fn task_row(customer: &str, t: Task) -> impl IntoView {
    let badge = match t.status.as_str() {
        "COMPLETED" => "badge ok",
        "FAILED" => "badge danger",
        _ => "badge running",
    };
    let error = t.error_info.as_ref().map(|e| e.message.clone());
    view! {
        <tr data-task=t.id.clone()>
            <td>{operation_label(&t.operation).to_string()}</td>
            <td class="target">{task_target(customer, &t)}</td>
            <td>
                {if t.user_name.is_empty() {
                    view! { <span class="muted">"—"</span> }.into_any()
                } else if t.user_name == "system" {
                    view! { <span class="badge off" title="The operator's command">"system"</span> }.into_any()
                } else {
                    view! { <span class="nowrap">{t.user_name.clone()}</span> }.into_any()
                }}
            </td>
            <td>
                <span class=badge>{t.status.clone()}</span>
                {error.map(|e| view! { <div class="small field-error">{e}</div> })}
            </td>
            <td>
                <div
                    class="mini-bar"
                    role="progressbar"
                    aria-label="Progress"
                    aria-valuemin="0"
                    aria-valuemax="100"
                    aria-valuenow=t.progress.to_string()
                    title=format!("{}%", t.progress)
                >
                    <div class="fill" style:width=format!("{}%", t.progress)></div>
                </div>
            </td>
            <td>
                <Time iso=t.begin_time.clone() />
            </td>
            <td>
                {match t.end_time.clone() {
                    Some(end) => view! { <Time iso=end /> }.into_any(),
                    None => "—".into_any(),
                }}
            </td>
        </tr>
    }
}
