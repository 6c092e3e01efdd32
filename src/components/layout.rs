//! The frame around every view of a customer: navigation, who is logged in, logout, and the session check
//! that sends a browser without a valid session to the login page (also after a reload).

use leptos::prelude::*;
use leptos_router::{
    NavigateOptions,
    components::{A, Outlet},
    hooks::{use_location, use_navigate, use_params_map},
};

use crate::{
    api,
    components::{
        async_view::{act, load},
        errors::{ApiErrorNotice, error_fallback},
    },
    session::{Auth, LoggedIn, remembered_login},
};

/// Activity keeps the session alive with at most one request this often.
const KEEP_ALIVE_EVERY_MS: f64 = 60_000.0;

/// The navigation: path under `/{customer}/` and label.
pub const NAV: [(&str, &str); 9] = [
    ("stats", "Statistics"),
    ("security", "Security"),
    ("properties", "Properties"),
    ("purge", "Purge"),
    ("lists", "Network lists"),
    ("tasks", "Tasks"),
    ("users", "Users & roles"),
    ("account", "Account"),
    ("me", "My account"),
];

/// `/login` with what it needs to bring the user back here.
pub fn login_url(customer: &str, next: &str, reason: Option<&str>) -> String {
    let mut url = format!(
        "/login?customer={}&next={}",
        js_sys::encode_uri_component(customer),
        js_sys::encode_uri_component(next)
    );
    if let Some(reason) = reason {
        url.push_str(&format!("&reason={reason}"));
    }
    url
}

#[component]
pub fn Layout() -> impl IntoView {
    let params = use_params_map();
    let customer = Memo::new(move |_| params.read().get("customer").unwrap_or_default());
    let auth = Auth::get();
    let navigate = use_navigate();
    let location = use_location();
    let here = move || format!("{}{}", location.pathname.get_untracked(), location.search.get_untracked());

    // A 401 from any call: the session is gone. Back to the login page, once, to come back here afterwards.
    {
        let navigate = navigate.clone();
        api::on_session_lost(move || {
            if auth.clear() {
                navigate(&login_url(&customer.get_untracked(), &here(), Some("expired")), NavigateOptions::default());
            }
        });
    }

    // On arrival (and after a reload) find the session the browser's cookie holds for this customer.
    let check = load(move || {
        let customer = customer.get();
        async move {
            if let Some(login) = auth.for_customer(&customer) {
                return Ok(Some(login));
            }
            let session = api::current_session(&customer).await?;
            Ok::<_, api::ApiError>(session.map(|session| {
                let username = remembered_login()
                    .filter(|(c, _)| *c == customer)
                    .map(|(_, u)| u)
                    .unwrap_or_else(|| session.user.id.clone());
                LoggedIn { customer: customer.clone(), username, session }
            }))
        }
    });
    {
        let navigate = navigate.clone();
        Effect::new(move |_| match check.get() {
            Some(Ok(Some(login))) if auth.for_customer(&login.customer).is_none() => auth.set(login),
            Some(Ok(None)) => {
                navigate(&login_url(&customer.get_untracked(), &here(), None), NavigateOptions::default())
            }
            _ => {}
        });
    }

    // The logged-in user's record: its role and two-factor state decide what the views offer.
    let me_key = Memo::new(move |_| auth.current().map(|l| (l.customer, l.session.user.id)));
    let me = load(move || {
        let key = me_key.get();
        async move {
            match key {
                Some((customer, id)) => api::get_user(&customer, &id).await.map(Some),
                None => Ok(None),
            }
        }
    });
    Effect::new(move |_| {
        if let Some(user) = me.get() {
            auth.set_me(user.ok().flatten());
        }
    });

    // Using the console (keys, clicks) keeps the session alive, at most one request a minute.
    let last_keep_alive = StoredValue::new(js_sys::Date::now());
    let poke = move || {
        let now = js_sys::Date::now();
        if now - last_keep_alive.get_value() < KEEP_ALIVE_EVERY_MS {
            return;
        }
        last_keep_alive.set_value(now);
        if let Some(login) = auth.for_customer(&customer.get_untracked()) {
            leptos::task::spawn_local(async move {
                let _ = api::keep_alive(&login.customer, &login.session.id).await;
            });
        }
    };
    let keys = window_event_listener(leptos::ev::keydown, move |_| poke());
    let clicks = window_event_listener(leptos::ev::pointerdown, move |_| poke());
    on_cleanup(move || {
        keys.remove();
        clicks.remove();
    });

    // Only login and logout re-render the frame; a refreshed session expiry does not.
    let who = Memo::new(move |_| {
        auth.current().filter(|l| l.customer == customer.get()).map(|l| {
            let username = auth.me().map(|u| u.username).unwrap_or(l.username);
            (l.customer, username)
        })
    });

    let logout = act(move |_: &()| {
        let customer = customer.get_untracked();
        let navigate = navigate.clone();
        async move {
            let _ = api::delete_current_session(&customer).await;
            auth.clear();
            navigate(
                &format!("/login?customer={}", js_sys::encode_uri_component(&customer)),
                NavigateOptions::default(),
            );
        }
    });

    view! {
        {move || match who.get() {
            Some((customer, username)) => {
                view! { <Shell customer username logout /> }.into_any()
            }
            None => {
                match check.get() {
                    Some(Err(error)) => {
                        view! {
                            <div class="splash">
                                <ApiErrorNotice error />
                                <button on:click=move |_| check.refetch()>"Try again"</button>
                            </div>
                        }
                            .into_any()
                    }
                    _ => view! { <div class="splash muted">"Checking your session…"</div> }.into_any(),
                }
            }
        }}
    }
}

#[component]
fn Shell(customer: String, username: String, logout: Action<(), ()>) -> impl IntoView {
    let auth = Auth::get();
    let links = NAV
        .iter()
        .map(|(path, label)| {
            let href = format!("/{customer}/{path}");
            view! {
                <li>
                    <A href=href>{*label}</A>
                </li>
            }
        })
        .collect_view();
    // Only administrators read the audit log.
    let audit = format!("/{customer}/audit");
    let admin_links = move || {
        auth.is_admin().then(|| {
            view! {
                <li>
                    <A href=audit.clone()>"Audit log"</A>
                </li>
            }
        })
    };
    view! {
        <a class="skip-link" href="#content">"Skip to content"</a>
        <div class="shell">
            <aside class="sidebar">
                <div class="brand">"Edge Console"</div>
                <nav aria-label="Main">
                    <ul>{links} {admin_links}</ul>
                </nav>
            </aside>
            <div class="main">
                <header class="topbar">
                    <span class="customer" title="Customer">
                        {customer.clone()}
                    </span>
                    <span class="spacer"></span>
                    <span class="user" title="Logged in as">
                        {username}
                    </span>
                    <button
                        class="secondary"
                        id="logout"
                        on:click=move |_| {
                            logout.dispatch(());
                        }
                        disabled=move || logout.pending().get()
                    >
                        "Log out"
                    </button>
                </header>
                <main class="content" id="content" tabindex="-1">
                    <ErrorBoundary fallback=error_fallback>
                        <Outlet />
                    </ErrorBoundary>
                </main>
            </div>
        </div>
    }
}
