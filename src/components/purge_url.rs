//! "Purge this URL" from the statistics' top URLs, and a purge transaction followed until it completes.

use edge_api::{PurgeBody, PurgeRequest, PurgeUri, TransactionStatus};
use leptos::{prelude::*, task::spawn_local};

use crate::{
    api::{self, ApiError},
    components::{
        async_view::{AsyncView, load},
        dialog::Dialog,
        errors::ApiErrorNotice,
        progress::{ProgressBar, follow},
    },
    nav::use_customer,
};

/// "Purge this URL" from a report: the path on every host pattern of its property, after confirmation; then
/// the transaction, followed until it completes.
#[component]
pub fn PurgeUrlDialog(property: String, path: String, on_close: Callback<()>) -> impl IntoView {
    let customer = use_customer();
    let prop = property.clone();
    let hosts = load(move || {
        let (c, p) = (customer.get(), prop.clone());
        async move {
            let list = api::list_properties(&c).await?;
            Ok::<_, ApiError>(list.into_iter().find(|x| x.name == p).map(|x| x.host_patterns).unwrap_or_default())
        }
    });
    let sent = RwSignal::new(None::<Result<TransactionStatus, ApiError>>);
    let pending = RwSignal::new(false);
    let path = StoredValue::new(path);
    let purge = move |hosts: Vec<String>| {
        pending.set(true);
        let request = PurgeRequest {
            purge_request: PurgeBody {
                action: "PURGE".into(),
                uris: hosts
                    .iter()
                    .map(|h| PurgeUri {
                        uri_pattern: format!("{h}{}", path.get_value()),
                        match_mode: "EXACT_LITERAL".into(),
                        cache_key_modifier_regex: None,
                    })
                    .collect(),
            },
        };
        let c = customer.get_untracked();
        spawn_local(async move {
            let r = api::purge(&c, &request).await;
            let _ = pending.try_set(false);
            let _ = sent.try_set(Some(r));
        });
    };
    // Cancel comes with the hosts, after the dialog opened: it takes the focus then.
    let cancel = NodeRef::<leptos::html::Button>::new();
    Effect::new(move |_| {
        if let Some(b) = cancel.get() {
            let _ = b.focus();
        }
    });
    view! {
        <Dialog title=format!("Purge {}?", path.get_value()) on_close id="purge-url">
            <AsyncView resource=hosts let:hosts>
                {match sent.get() {
                    Some(Ok(t)) => view! { <TransactionProgress t /> }.into_any(),
                    _ if hosts.is_empty() => view! { <p>{format!("The property {property} has no host patterns.")}</p> }.into_any(),
                    other => {
                        let list = hosts.clone();
                        view! {
                            <p>{format!("Removes {} from the cache on {} host(s) of {property}:", path.get_value(), hosts.len())}</p>
                            <ul class="hosts">
                                {hosts.iter().map(|h| view! { <li><code>{format!("{h}{}", path.get_value())}</code></li> }).collect_view()}
                            </ul>
                            {other.and_then(Result::err).map(|error| view! { <ApiErrorNotice error /> })}
                            <div class="actions">
                                <button type="button" autofocus=true node_ref=cancel on:click=move |_| on_close.run(())>"Cancel"</button>
                                <button type="button" class="danger" disabled=move || pending.get() on:click=move |_| purge(list.clone())>
                                    "Purge"
                                </button>
                            </div>
                        }
                            .into_any()
                    }
                }}
            </AsyncView>
        </Dialog>
    }
}

/// A purge transaction, followed until it completes.
#[component]
pub fn TransactionProgress(t: TransactionStatus) -> impl IntoView {
    let customer = use_customer();
    let id = t.transaction_id;
    let done = t.transaction_response.transaction_status != "PENDING";
    let current = RwSignal::new(t);
    if !done {
        follow(move || {
            let c = customer.get_untracked();
            async move {
                match api::transaction(&c, id).await {
                    Ok(t) => {
                        let pending = t.transaction_response.transaction_status == "PENDING";
                        current.try_set(t).is_none() && pending
                    }
                    Err(e) => e.status != 401 && e.status != 404,
                }
            }
        });
    }
    let percent = Signal::derive(move || current.get().transaction_response.percent_received_responses);
    let label = Signal::derive(move || {
        let t = current.get();
        format!("Transaction {}: {}", t.transaction_id, t.transaction_response.transaction_status_description)
    });
    view! {
        <div class="transaction" data-status=move || current.get().transaction_response.transaction_status>
            <ProgressBar percent label />
        </div>
    }
}
