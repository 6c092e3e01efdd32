//! Tasks: every long-running change with its live progress.

use edge_api::{TASK_STATUSES, Task};
use leptos::prelude::*;

use crate::{
    api,
    components::{
        async_view::{AsyncView, load},
        pager::Pager,
        progress::poll,
        time::Time,
    },
    pages::use_customer,
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
    let page = RwSignal::new(1u64);
    let status = RwSignal::new(String::new());
    let operation = RwSignal::new(String::new());
    let tasks = load(move || {
        let (customer, page, status, operation) = (customer.get(), page.get(), status.get(), operation.get());
        async move {
            let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
            api::list_tasks(&customer, page, PAGE_SIZE, opt(&status).as_deref(), opt(&operation).as_deref()).await
        }
    });
    // While something runs, the list follows it.
    poll(move || {
        let running = tasks.get_untracked().and_then(Result::ok).is_some_and(|p| p.items.iter().any(|t| !t.complete));
        if running {
            tasks.refetch();
        }
    });
    view! {
        <section class="page">
            <h1>"Tasks"</h1>
            <div class="toolbar">
                <label class="inline">
                    "Status "
                    <select name="status" on:change=move |e| {
                        status.set(event_target_value(&e));
                        page.set(1);
                    }>
                        <option value="">"Any"</option>
                        {TASK_STATUSES.iter().map(|s| view! { <option value=*s>{*s}</option> }).collect_view()}
                    </select>
                </label>
                <label class="inline">
                    "Operation "
                    <select name="operation" on:change=move |e| {
                        operation.set(event_target_value(&e));
                        page.set(1);
                    }>
                        <option value="">"Any"</option>
                        {OPERATIONS.iter().map(|(id, l)| view! { <option value=*id>{*l}</option> }).collect_view()}
                    </select>
                </label>
            </div>
            <AsyncView resource=tasks loading="Loading tasks…" let:list>
                {if list.items.is_empty() {
                    view! { <div class="empty">"No tasks match."</div> }.into_any()
                } else {
                    let shown = list.items.len() as u64;
                    view! {
                        <table class="data tasks">
                            <thead>
                                <tr>
                                    <th scope="col">"Operation"</th>
                                    <th scope="col">"Target"</th>
                                    <th scope="col">"Status"</th>
                                    <th scope="col">"Progress"</th>
                                    <th scope="col">"Started"</th>
                                    <th scope="col">"Ended"</th>
                                </tr>
                            </thead>
                            <tbody>{list.items.into_iter().map(task_row).collect_view()}</tbody>
                        </table>
                        <Pager
                            page=list.page_index
                            per_page=PAGE_SIZE
                            shown
                            total=list.total
                            on_page=Callback::new(move |p| page.set(p))
                        />
                    }
                        .into_any()
                }}
            </AsyncView>
        </section>
    }
}

fn task_row(t: Task) -> impl IntoView {
    let badge = match t.status.as_str() {
        "COMPLETED" => "badge ok",
        "FAILED" => "badge danger",
        _ => "badge running",
    };
    let error = t.error_info.as_ref().map(|e| e.message.clone());
    view! {
        <tr data-task=t.id.clone()>
            <td>{operation_label(&t.operation).to_string()}</td>
            <td>
                <code>{t.target.id.clone()}</code>
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
