//! Purge: up to 10,000 URIs at once (pasted one per line, or a file), action and match mode, each line checked
//! against the account's host patterns before sending; a confirmation naming how many URIs on which hosts
//! (and warning about prefix purges); the URIs sent in requests of 500, paced under the API's 2 requests a
//! second (waiting as a 429's Retry-After says); one overall progress and each transaction's status; the
//! recent purges; a transaction named in the address (`?transaction=`, as the charts' timeline markers link
//! to it) shown first. ("Purge this URL" from the statistics' top URLs is a component.)

mod form;
mod submission;

use edge_api::TransactionSummary;
use leptos::prelude::*;

use crate::{
    api,
    components::{
        async_view::{AsyncView, load},
        purge_url::TransactionProgress,
        time::TimeMs,
    },
    nav::{use_customer, use_query_state},
    session::Auth,
};

pub use self::form::{PurgeLine, check_purge_lines, hosts_of};
use self::{
    form::PurgeForm,
    submission::{Submission, SubmissionView},
};

/// The most URIs one submission takes.
pub const MAX_URIS: usize = 10_000;
/// URIs per purge request.
pub const CHUNK: usize = 500;

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
    let q = use_query_state();
    let chosen = Memo::new(move |_| q.get("transaction").parse::<i64>().ok());
    let transaction = load(move || {
        let (c, id) = (customer.get(), chosen.get());
        async move {
            match id {
                Some(id) => api::transaction(&c, id).await.map(Some),
                None => Ok(None),
            }
        }
    });
    view! {
        <section class="page">
            <h1>"Purge"</h1>
            {move || {
                chosen
                    .get()
                    .map(|id| {
                        view! {
                            <div class="card panel wide" id="transaction">
                                <h2>{format!("Purge transaction {id}")}</h2>
                                <AsyncView resource=transaction let:answer>
                                    {answer.map(|t| view! { <TransactionProgress t /> })}
                                </AsyncView>
                            </div>
                        }
                    })
            }}
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
                        list => view! { <History list chosen /> }.into_any(),
                }}
            </AsyncView>
        </section>
    }
}

#[component]
fn History(
    list: Vec<TransactionSummary>,
    /// The transaction named in the address, marked.
    chosen: Memo<Option<i64>>,
) -> impl IntoView {
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
                            let id = t.transaction_id;
                            view! {
                                <tr class:chosen=move || chosen.try_get().flatten() == Some(id)>
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
