//! One module per route.

pub mod account;
pub mod lists;
pub mod login;
pub mod me;
pub mod properties;
pub mod purge;
pub mod reset;
pub mod tasks;
pub mod users;

use leptos::prelude::*;
use leptos_router::{components::A, hooks::use_params_map};

pub use account::Account;
pub use lists::NetworkLists;
pub use me::MyAccount;
pub use properties::Properties;
pub use purge::Purge;
pub use tasks::Tasks;
pub use users::Users;

/// The customer of the current route (`/:customer/...`).
pub fn use_customer() -> Memo<String> {
    let params = use_params_map();
    Memo::new(move |_| params.read().get("customer").unwrap_or_default())
}

/// A view whose content arrives with a later part of the console: says what it will hold.
#[component]
fn Upcoming(title: &'static str, summary: &'static str) -> impl IntoView {
    view! {
        <section class="page">
            <h1>{title}</h1>
            <div class="empty">
                <p>{summary}</p>
                <p class="muted">"This view is not available in this version of the console yet."</p>
            </div>
        </section>
    }
}

#[component]
pub fn Statistics() -> impl IntoView {
    view! {
        <Upcoming
            title="Statistics"
            summary="Delivery statistics: hits, bandwidth and timing by country, domain, status code and more, over time; the top 20 URLs."
        />
    }
}

#[component]
pub fn Security() -> impl IntoView {
    view! {
        <Upcoming
            title="Security"
            summary="Security events, WAF and traffic-shaping trends and top-K reports."
        />
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <div class="splash">
            <h1>"Page not found"</h1>
            <p class="muted">"There is nothing at this address."</p>
            <A href="/">"Go to the console"</A>
        </div>
    }
}
