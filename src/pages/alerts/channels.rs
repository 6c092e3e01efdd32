//! Channels: e-mail addresses or a signed webhook; "Send test" with its outcome, each channel's delivery log,
//! and a webhook's secret shown once, when it is made or rotated.

use edge_api::alerts::{AlertChannel, AlertChannelInput, ChannelKind, Delivery, DeliveryStatus};
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

fn delivery_text(d: &Delivery) -> String {
    let status = match d.status {
        DeliveryStatus::Sent => "sent".to_string(),
        DeliveryStatus::Silenced => return "silenced: recorded, not sent".into(),
        DeliveryStatus::Pending => "waiting for its next attempt".into(),
        DeliveryStatus::Sending => "being sent".into(),
        DeliveryStatus::Failed => "failed".into(),
    };
    let answer = d.response_status.map(|s| format!(", the receiver answered {s}")).unwrap_or_default();
    let error = d.error.as_ref().map(|e| format!(": {e}")).unwrap_or_default();
    format!("{status} after {} attempt{}{answer}{error}", d.attempts, if d.attempts == 1 { "" } else { "s" })
}

#[component]
pub(super) fn Channels() -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let channels = load(move || {
        let c = customer.get();
        async move { api::alert_channels(&c).await }
    });
    let editing = RwSignal::new(None::<Option<AlertChannel>>);
    // A webhook's secret, shown once after it is made or rotated.
    let secret = RwSignal::new(None::<(String, String)>);
    let notice = RwSignal::new(None::<String>);
    let log_of = RwSignal::new(None::<String>);
    let test = act(move |id: &String| {
        let (c, id) = (customer.get_untracked(), id.clone());
        async move { api::test_alert_channel(&c, &id).await }
    });
    Effect::new(move |_| match test.value().get() {
        Some(Ok(d)) => notice.set(Some(format!("Test notification {}.", delivery_text(&d)))),
        Some(Err(e)) => notice.set(Some(e.body.message)),
        None => {}
    });
    let (remove, remove_error) = super::removal(
        |c, id| async move { api::delete_alert_channel(&c, &id).await },
        "The channel was deleted.",
        notice,
        move || channels.refetch(),
    );
    view! {
        <div class="toolbar">
            {move || notice.get().map(|n| view! { <p class="notice" role="status">{n}</p> })}
            <span class="spacer"></span>
            {move || auth.can_write().then(|| view! { <button type="button" on:click=move |_| editing.set(Some(None))>"New channel"</button> })}
        </div>
        {move || remove_error.get().map(|error| view! { <ApiErrorNotice error /> })}
        {move || secret.get().map(|(name, s)| view! {
            <div class="card secret" role="status">
                <p><strong>{format!("The signing secret of {name}")}</strong>" — copy it now: it is not shown again."</p>
                <code class="wrap">{s}</code>
                <p class="small muted">"Receivers check X-Edge-Signature: sha256= and the HMAC-SHA256 of the raw body with this secret, in hex."</p>
                <button type="button" class="secondary" on:click=move |_| secret.set(None)>"Done"</button>
            </div>
        })}
        <AsyncView resource=channels loading="Loading channels…" children=move |page| {
            if page.items.is_empty() {
                return view! {
                    <div class="empty">
                        <p>"No channels yet."</p>
                        <p class="muted">"A channel is where rules send their notifications: e-mail addresses, or a webhook that receives a signed JSON body."</p>
                    </div>
                }
                    .into_any();
            }
            view! {
                <div class="table-scroll">
                    <table class="data">
                        <thead>
                            <tr>
                                <th scope="col">"Channel"</th>
                                <th scope="col">"Sends to"</th>
                                <th scope="col"><span class="sr-only">"Actions"</span></th>
                            </tr>
                        </thead>
                        <tbody>
                            {page.items.into_iter().map(|c| {
                                let to = match c.kind {
                                    ChannelKind::Email => c.addresses.join(", "),
                                    ChannelKind::Webhook => c.url.clone().unwrap_or_default(),
                                };
                                let (id, id2, id3, edit) = (c.id.clone(), c.id.clone(), c.id.clone(), c.clone());
                                view! {
                                    <tr data-channel=c.id.clone()>
                                        <td>
                                            <strong>{c.name.clone()}</strong>
                                            <div class="small muted">{match c.kind { ChannelKind::Email => "e-mail", ChannelKind::Webhook => "webhook" }}</div>
                                        </td>
                                        <td class="wrap small">{to}</td>
                                        <td class="actions">
                                            <button type="button" class="secondary" on:click=move |_| log_of.update(|l| *l = if l.as_deref() == Some(id3.as_str()) { None } else { Some(id3.clone()) })>"Deliveries"</button>
                                            {move || auth.can_write().then(|| {
                                                let (id, id2, edit) = (id.clone(), id2.clone(), edit.clone());
                                                view! {
                                                    <button type="button" class="secondary" on:click=move |_| { test.dispatch(id.clone()); } disabled=move || test.pending().get()>"Send test"</button>
                                                    <button type="button" class="secondary" on:click=move |_| editing.set(Some(Some(edit.clone())))>"Edit"</button>
                                                    <button type="button" class="secondary danger" on:click=move |_| { remove.dispatch(id2.clone()); }>"Delete"</button>
                                                }
                                            })}
                                        </td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }
                .into_any()
        } />
        {move || log_of.get().map(|id| view! { <DeliveryLog id=id.clone() name=channels.get().and_then(Result::ok).and_then(|p| p.items.into_iter().find(|c| c.id == id)).map(|c| c.name).unwrap_or_default() /> })}
        {move || editing.get().map(|channel| view! {
            <ChannelForm
                channel
                on_done=Callback::new(move |c: AlertChannel| {
                    editing.set(None);
                    if let Some(s) = c.secret.clone() {
                        secret.set(Some((c.name.clone(), s)));
                    }
                    notice.set(Some(format!("{} was saved.", c.name)));
                    channels.refetch();
                })
                on_close=Callback::new(move |_| editing.set(None))
            />
        })}
    }
}

/// A channel's delivery log, newest first.
#[component]
fn DeliveryLog(id: String, name: String) -> impl IntoView {
    let customer = use_customer();
    let log = load(move || {
        let (c, id) = (customer.get(), id.clone());
        async move { api::channel_deliveries(&c, &id).await }
    });
    view! {
        <section class="card deliveries-card">
            <h2>{format!("Delivery log of {name}")}</h2>
            <AsyncView resource=log loading="Loading deliveries…" children=move |page| {
                if page.items.is_empty() {
                    return view! { <p class="muted">"Nothing was sent to this channel yet."</p> }.into_any();
                }
                view! {
                    <ul class="deliveries">
                        {page.items.into_iter().map(|d| view! {
                            <li data-status=d.status.as_str()>
                                <Time iso=d.time.clone() /> " · " <strong>{d.kind.as_str()}</strong>
                                {(!d.rule_name.is_empty()).then(|| format!(" · {}", d.rule_name))}
                                <div class="small muted">{delivery_text(&d)}</div>
                            </li>
                        }).collect_view()}
                    </ul>
                }
                    .into_any()
            } />
        </section>
    }
}

#[component]
fn ChannelForm(
    channel: Option<AlertChannel>,
    on_done: Callback<AlertChannel>,
    on_close: Callback<()>,
) -> impl IntoView {
    let customer = use_customer();
    let id = channel.as_ref().map(|c| c.id.clone());
    let name = RwSignal::new(channel.as_ref().map(|c| c.name.clone()).unwrap_or_default());
    let kind = RwSignal::new(channel.as_ref().map(|c| c.kind).unwrap_or(ChannelKind::Email));
    let addresses = RwSignal::new(channel.as_ref().map(|c| c.addresses.join(", ")).unwrap_or_default());
    let url = RwSignal::new(channel.as_ref().and_then(|c| c.url.clone()).unwrap_or_default());
    let rotate = RwSignal::new(false);
    let existing = id.is_some();
    let save = act(move |input: &AlertChannelInput| {
        let (c, input, id) = (customer.get_untracked(), input.clone(), id.clone());
        async move {
            match id {
                Some(id) => api::update_alert_channel(&c, &id, &input).await,
                None => api::create_alert_channel(&c, &input).await,
            }
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(c)) = save.value().get() {
            on_done.run(c);
        }
    });
    let error: Signal<Option<ApiError>> = Signal::derive(move || save.value().get().and_then(Result::err));
    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let webhook = kind.get_untracked() == ChannelKind::Webhook;
        save.dispatch(AlertChannelInput {
            name: name.get_untracked(),
            kind: kind.get_untracked(),
            addresses: if webhook {
                Vec::new()
            } else {
                addresses
                    .get_untracked()
                    .split([',', ' ', '\n'])
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(String::from)
                    .collect()
            },
            url: webhook.then(|| url.get_untracked().trim().to_string()),
            rotate_secret: rotate.get_untracked(),
        });
    };
    let title = if existing { "Edit channel" } else { "New channel" }.to_string();
    view! {
        <Dialog title on_close>
            <form class="form" on:submit=submit novalidate>
                <FormError error fields=&["name", "addresses", "url", "type"] />
                <label>
                    "Name"
                    <input name="name" autocomplete="off" bind:value=name autofocus=true />
                    <FieldError error field="name" />
                </label>
                <label>
                    "Type"
                    <select name="type" disabled=existing on:change=move |e| kind.set(if event_target_value(&e) == "webhook" { ChannelKind::Webhook } else { ChannelKind::Email })>
                        <option value="email" selected={kind.get_untracked() == ChannelKind::Email}>"E-mail"</option>
                        <option value="webhook" selected={kind.get_untracked() == ChannelKind::Webhook}>"Webhook"</option>
                    </select>
                </label>
                {move || match kind.get() {
                    ChannelKind::Email => view! {
                        <label>
                            "Addresses (comma-separated, up to 20)"
                            <input name="addresses" autocomplete="off" placeholder="oncall@example.com" bind:value=addresses />
                            <FieldError error field="addresses" />
                        </label>
                    }.into_any(),
                    ChannelKind::Webhook => view! {
                        <label>
                            "URL"
                            <input name="url" type="url" autocomplete="off" placeholder="https://hooks.example.com/edge" bind:value=url />
                            <FieldError error field="url" />
                        </label>
                        {existing.then(|| view! {
                            <label class="check">
                                <input type="checkbox" name="rotate_secret" bind:checked=rotate />
                                "Make a new signing secret (the old one stops at once)"
                            </label>
                        })}
                    }.into_any(),
                }}
                <div class="actions">
                    <button type="submit" class="primary" disabled=move || save.pending().get()>"Save channel"</button>
                    <button type="button" class="secondary" on:click=move |_| on_close.run(())>"Cancel"</button>
                </div>
            </form>
        </Dialog>
    }
}
