//! Account: the customer account's details (administrators change them) and its features.

use edge_api::AccountUpdate;
use leptos::{ev, prelude::*};

use crate::{
    api,
    components::{
        async_view::{AsyncView, act, load},
        errors::{FieldError, FormError},
        time::{Time, Zone, zone_names},
    },
    nav::use_customer,
    session::{Auth, may_write},
};

#[component]
pub fn Account() -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let account = load(move || {
        let c = customer.get();
        async move { api::get_account(&c).await }
    });
    let features = load(move || {
        let c = customer.get();
        async move { api::features(&c).await }
    });
    view! {
        <section class="page">
            <h1>"Account"</h1>
            <Show
                when=move || auth.me().as_ref().is_none_or(may_write)
                fallback=|| {
                    view! {
                        <div class="notice info" role="status">
                            "The account's details are for administrators and operators."
                        </div>
                    }
                }
            >
                <AsyncView resource=account let:account>
                    <AccountForm account />
                </AsyncView>
                <h2>"Features"</h2>
                <AsyncView resource=features let:list>
                    <FeatureTable list />
                </AsyncView>
            </Show>

        </section>
    }
}

#[component]
fn FeatureTable(list: Vec<edge_api::Feature>) -> impl IntoView {
    view! {
        <table class="data features">
                    <thead>
                        <tr>
                            <th scope="col">"Feature"</th>
                            <th scope="col">"What it does"</th>
                            <th scope="col">"Enabled"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {list
                            .into_iter()
                            .map(|f| {
                                let (class, text) = if f.enabled { ("badge ok", "Yes") } else { ("badge off", "No") };
                                view! {
                                    <tr>
                                        <td>
                                            <strong>{f.name}</strong>
                                        </td>
                                        <td>{f.description}</td>
                                        <td>
                                            <span class=class>{text}</span>
                                        </td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
    }
}

#[component]
fn AccountForm(account: edge_api::Account) -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let display_name = RwSignal::new(account.display_name.clone());
    let contact_email = RwSignal::new(account.contact_email.clone());
    let timezone = RwSignal::new(account.timezone.clone());
    let saved = RwSignal::new(false);
    let zone = Zone::get();
    zone.set_account(&account.timezone);
    let save = act(move |u: &AccountUpdate| {
        let (c, u) = (customer.get_untracked(), u.clone());
        async move { api::put_account(&c, &u).await }
    });
    Effect::new(move |_| {
        let result = save.value().get();
        if let Some(Ok(a)) = &result {
            zone.set_account(&a.timezone);
        }
        saved.set(matches!(result, Some(Ok(_))));
    });
    // The browser's IANA zones; the account's own is offered even if this browser does not know it.
    let mut zones = zone_names();
    if !zones.contains(&account.timezone) {
        zones.push(account.timezone.clone());
    }
    let error = Signal::derive(move || save.value().get().and_then(Result::err));
    let admin = move || auth.is_admin();
    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        save.dispatch(AccountUpdate {
            name: None,
            display_name: Some(display_name.get_untracked()),
            contact_email: Some(contact_email.get_untracked().trim().to_string()),
            timezone: Some(timezone.get_untracked().trim().to_string()),
        });
    };
    view! {
        <form class="card panel form" on:submit=submit novalidate>
            <label>
                "Customer name"
                <input name="name" value=account.name.clone() readonly=true disabled=true />
                <span class="hint">"The account's name cannot change."</span>
            </label>
            <label>
                "Display name"
                <input name="display_name" bind:value=display_name prop:disabled=move || !admin() />
                <FieldError error field="display_name" />
            </label>
            <label>
                "Contact e-mail"
                <input name="contact_email" type="email" bind:value=contact_email prop:disabled=move || !admin() />
                <FieldError error field="contact_email" />
            </label>
            <label>
                "Time zone"
                <select name="timezone" prop:value=move || timezone.get() prop:disabled=move || !admin() on:change=move |e| timezone.set(event_target_value(&e))>
                    {zones
                        .into_iter()
                        .map(|z| {
                            let selected = z == account.timezone;
                            view! { <option value=z.clone() selected=selected>{z.clone()}</option> }
                        })
                        .collect_view()}
                </select>
                <span class="hint">"Times in the console are shown in this zone (each user may choose another for their browser under My account)."</span>
                <FieldError error field="timezone" />
            </label>
            <p class="muted small">"Created " <Time iso=account.created.clone() /></p>
            <FormError error fields=&["display_name", "contact_email", "timezone"] />
            <Show when=move || saved.get()>
                <div class="notice success" role="status">"The account is saved."</div>
            </Show>
            <Show
                when=admin
                fallback=|| view! { <p class="muted small">"Only administrators change the account."</p> }
            >
                <div class="actions">
                    <button type="submit" class="primary" disabled=move || save.pending().get()>"Save"</button>
                </div>
            </Show>
        </form>
    }
}
