//! One module per route.

pub mod account;
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
pub use lists::NetworkLists;
pub use me::MyAccount;
pub use properties::Properties;
pub use purge::Purge;
pub use security::Security;
pub use stats::Statistics;
pub use tasks::Tasks;
pub use users::Users;

/// The customer of the current route (`/:customer/...`).
pub fn use_customer() -> Memo<String> {
    let params = use_params_map();
    Memo::new(move |_| params.read().get("customer").unwrap_or_default())
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
