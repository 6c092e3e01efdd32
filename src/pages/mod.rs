//! One module per route.

pub mod account;
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
use leptos_router::{
    NavigateOptions,
    components::A,
    hooks::{use_navigate, use_params_map, use_query_map},
};

pub use account::Account;
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
        _ => view! { <NotFound /> }.into_any(),
    }
}

/// A parameter of the page's address, read without the router (the sign-in app has none).
pub fn query_param(name: &str) -> Option<String> {
    let search = web_sys::window()?.location().search().ok()?;
    web_sys::UrlSearchParams::new_with_str(&search).ok()?.get(name)
}

/// Loads `url` as a new document (the sign-in app and the console are two documents).
pub fn go_to(url: &str) {
    if let Some(w) = web_sys::window() {
        let _ = w.location().set_href(url);
    }
}

/// The customer of the current route (`/:customer/...`).
pub fn use_customer() -> Memo<String> {
    let params = use_params_map();
    Memo::new(move |_| params.read().get("customer").unwrap_or_default())
}

/// A view's state in the page's address (search, filters, page, …), so that a reload shows the same and the
/// back and forward buttons step through what the user did.
#[derive(Clone, Copy)]
pub struct QueryState {
    query: Memo<leptos_router::params::ParamsMap>,
    go: Callback<(String, bool)>,
}

pub fn use_query_state() -> QueryState {
    let query = use_query_map();
    let navigate = use_navigate();
    let go = Callback::new(move |(q, replace): (String, bool)| {
        navigate(&q, NavigateOptions { replace, scroll: false, ..Default::default() })
    });
    QueryState { query, go }
}

impl QueryState {
    /// A parameter, tracked; empty when absent.
    pub fn get(&self, key: &str) -> String {
        self.query.read().get(key).unwrap_or_default()
    }

    /// A parameter as a page number (from 1), tracked.
    pub fn page(&self, key: &str) -> u64 {
        self.get(key).parse::<u64>().ok().filter(|p| *p >= 1).unwrap_or(1)
    }

    /// Sets parameters (an empty value removes one), keeping the others, as a new history entry.
    pub fn set(&self, pairs: &[(&str, String)]) {
        self.go(pairs, false);
    }

    /// [`QueryState::set`] without a new history entry (for changes too small to step back through).
    pub fn replace(&self, pairs: &[(&str, String)]) {
        self.go(pairs, true);
    }

    fn go(&self, pairs: &[(&str, String)], replace: bool) {
        let mut q = self.query.get_untracked();
        for (k, v) in pairs {
            q.remove(k);
            if !v.is_empty() {
                q.insert(k.to_string(), v.clone());
            }
        }
        let text = q.to_query_string();
        self.go.run((if text.is_empty() { "?".to_string() } else { text }, replace));
    }
}

/// A page titled `title` that shows one item when the query names it (`?{param}=...`) and the index otherwise,
/// so that the item survives a reload and the back button returns to the index.
#[component]
pub fn IndexOrItem<I, IV, D, DV>(title: &'static str, param: &'static str, index: I, item: D) -> impl IntoView
where
    I: Fn() -> IV + Send + Sync + 'static,
    IV: IntoView + 'static,
    D: Fn(String) -> DV + Send + Sync + 'static,
    DV: IntoView + 'static,
{
    let query = use_query_map();
    let selected = Memo::new(move |_| query.read().get(param).filter(|s| !s.is_empty()));
    view! {
        <section class="page">
            <h1>{title}</h1>
            {move || match selected.get() {
                Some(id) => item(id).into_any(),
                None => index().into_any(),
            }}
        </section>
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
