//! The pages: one module per route (a folder when it grows), and the dispatcher that picks one by the address.

pub mod account;
pub mod alerts;
pub mod audit;
pub mod lists;
pub mod login;
pub mod me;
pub mod properties;
pub mod purge;
pub mod reset;
pub mod security;
pub mod stats;
pub mod tasks;
pub mod users;

use leptos::prelude::*;
use leptos_router::{components::A, hooks::use_params_map};

pub use account::Account;
pub use alerts::Alerts;
pub use audit::AuditLog;
pub use lists::NetworkLists;
pub use me::MyAccount;
pub use properties::Properties;
pub use purge::Purge;
pub use security::Security;
pub use stats::Statistics;
pub use tasks::Tasks;
pub use users::Users;

/// The view of `/:customer/:page`, one route for every page (one route's machinery instead of one per page).
#[component]
pub fn Page() -> impl IntoView {
    let params = use_params_map();
    let page = Memo::new(move |_| params.read().get("page").unwrap_or_default());
    move || match page.get().as_str() {
        "stats" => view! { <Statistics /> }.into_any(),
        "security" => view! { <Security /> }.into_any(),
        "users" => view! { <Users /> }.into_any(),
        "me" => view! { <MyAccount /> }.into_any(),
        "properties" => view! { <Properties /> }.into_any(),
        "purge" => view! { <Purge /> }.into_any(),
        "lists" => view! { <NetworkLists /> }.into_any(),
        "tasks" => view! { <Tasks /> }.into_any(),
        "account" => view! { <Account /> }.into_any(),
        "audit" => view! { <AuditLog /> }.into_any(),
        "alerts" => view! { <Alerts /> }.into_any(),
        _ => view! { <NotFound /> }.into_any(),
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
