//! Navigation: the routing hooks every view uses (the customer of the route, a view's state in the address)
//! and the moves between the two documents (the sign-in app and the console).

use leptos::prelude::*;
use leptos_router::{
    NavigateOptions,
    hooks::{use_navigate, use_params_map, use_query_map},
};

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

/// Goes to `path` of the console by a page load (the console is another document), replacing the sign-in page
/// in the history.
pub fn open_console(path: &str) {
    if let Some(w) = web_sys::window() {
        let _ = w.location().replace(path);
    }
}
