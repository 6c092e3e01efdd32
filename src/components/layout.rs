//! The frame around every view of a customer: navigation, who is logged in, logout, the display time zone,
//! and the session: the check that sends a browser without a valid session to the login page (also after a
//! reload), keep-alives on activity, and a notice two minutes before the session ends offering to stay.

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
        dialog::Confirm,
        errors::{ApiErrorNotice, error_fallback},
        time::{Zone, parse_iso},
    },
    nav::go_to,
    session::{Auth, LoggedIn, may_write, remember_login, remembered_login},
};

/// The notice that the session is about to end shows this long before it does.
const WARN_BEFORE_MS: f64 = 120_000.0;

/// Unsaved work in the current view (set by the view while it has some): leaving through the navigation asks
/// first, and closing or reloading the page makes the browser ask.
#[derive(Clone, Copy)]
pub struct Unsaved(pub RwSignal<Option<String>>);

impl Unsaved {
    pub fn get() -> Option<Unsaved> {
        use_context::<Unsaved>()
    }
}

/// Activity keeps the session alive with at most one request this often.
const KEEP_ALIVE_EVERY_MS: f64 = 60_000.0;

/// The navigation: path under `/{customer}/` and label.
pub const NAV: [(&str, &str); 10] = [
    ("stats", "Statistics"),
    ("security", "Security"),
    ("alerts", "Alerts"),
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
    let zone = Zone::provide();
    let unsaved = Unsaved(RwSignal::new(None));
    provide_context(unsaved);
    let before_unload = window_event_listener(leptos::ev::beforeunload, move |e| {
        if unsaved.0.get_untracked().is_some() {
            e.prevent_default();
            e.set_return_value("unsaved");
        }
    });
    on_cleanup(move || before_unload.remove());
    let location = use_location();
    // The router's search has no leading `?`.
    let here = move || match location.search.get_untracked() {
        search if search.is_empty() => location.pathname.get_untracked(),
        search => format!("{}?{search}", location.pathname.get_untracked()),
    };

    // A 401 from any call: the session is gone. Back to the login page, once, to come back here afterwards.
    {
        api::on_session_lost(move || {
            if leave_once() {
                go_to(&login_url(&customer.get_untracked(), &here(), Some("expired")));
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
                // The user's record gives the name shortly; an id would show meanwhile and then change the
                // top bar's width.
                let username = remembered_login().filter(|(c, _)| *c == customer).map(|(_, u)| u).unwrap_or_default();
                LoggedIn { customer: customer.clone(), username, session }
            }))
        }
    });
    {
        Effect::new(move |_| match check.get() {
            Some(Ok(Some(login))) if auth.for_customer(&login.customer).is_none() => auth.set(login),
            Some(Ok(None)) => go_to(&login_url(&customer.get_untracked(), &here(), None)),
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
            let user = user.ok().flatten();
            // The login form of this browser offers the name next time (a page load logged in by the cookie
            // alone knew only the session's user id).
            if let Some(u) = &user {
                remember_login(&customer.get_untracked(), &u.username);
            }
            auth.set_me(user);
        }
    });
    // The account's time zone, for those who may read the account (viewers keep UTC or their own choice).
    let reads_account = Memo::new(move |_| auth.me().as_ref().map(may_write));
    Effect::new(move |_| {
        if reads_account.get() == Some(true) {
            let c = customer.get_untracked();
            leptos::task::spawn_local(async move {
                if let Ok(a) = api::get_account(&c).await {
                    zone.set_account(&a.timezone);
                }
            });
        }
    });

    // When the session ends: from the server's answers (login, session check, keep-alive).
    let expires = RwSignal::new(None::<f64>);
    Effect::new(move |_| {
        let at = auth.current().and_then(|l| parse_iso(&l.session.expires));
        expires.set(at.map(|ms| ms as f64));
    });
    let keep_alive = move || {
        if let Some(login) = auth.for_customer(&customer.get_untracked()) {
            leptos::task::spawn_local(async move {
                if let Ok(s) = api::keep_alive(&login.customer, &login.session.id).await {
                    let _ = expires.try_set(parse_iso(&s.expires).map(|ms| ms as f64));
                }
            });
        }
    };
    // Using the console (keys, clicks) keeps the session alive, at most one request a minute.
    let last_keep_alive = StoredValue::new(js_sys::Date::now());
    let poke = move || {
        let now = js_sys::Date::now();
        if now - last_keep_alive.get_value() < KEEP_ALIVE_EVERY_MS {
            return;
        }
        last_keep_alive.set_value(now);
        keep_alive();
    };
    // The clock, for the notice: it shows from two minutes before the end; at the end the server is asked (other
    // requests may have kept the session alive), and a session that is gone leads to the login page.
    let now = RwSignal::new(js_sys::Date::now());
    let ended_check = StoredValue::new(0.0f64);
    if let Ok(tick) = set_interval_with_handle(
        move || {
            let t = js_sys::Date::now();
            now.set(t);
            if expires.get_untracked().is_some_and(|e| t >= e) && t - ended_check.get_value() > 10_000.0 {
                ended_check.set_value(t);
                keep_alive();
            }
        },
        std::time::Duration::from_secs(1),
    ) {
        on_cleanup(move || tick.clear());
    }
    let left = Memo::new(move |_| expires.get().map(|e| e - now.get()).filter(|l| *l <= WARN_BEFORE_MS));
    let keys = window_event_listener(leptos::ev::keydown, move |_| poke());
    let clicks = window_event_listener(leptos::ev::pointerdown, move |_| poke());
    on_cleanup(move || {
        keys.remove();
        clicks.remove();
    });

    // Only login and logout re-render the frame (and with it the view): a refreshed session expiry does not,
    // nor does the user's record arriving. A frame rebuilt while its view loads disposes the view under reads
    // still in flight; on a fresh browser the name shown changes from the session's user id to the username
    // once the record is read, which rebuilt everything mid-load (issue 25), so the name is text of its own.
    let who = Memo::new(move |_| auth.current().filter(|l| l.customer == customer.get()).map(|l| l.customer));
    let username = Signal::derive(move || {
        auth.me().map(|u| u.username).or_else(|| auth.current().map(|l| l.username)).unwrap_or_default()
    });

    let logout = act(move |_: &()| {
        let customer = customer.get_untracked();
        async move {
            let _ = api::delete_current_session(&customer).await;
            if leave_once() {
                go_to(&format!("/login?customer={}", js_sys::encode_uri_component(&customer)));
            }
        }
    });

    view! {
        {move || match who.get() {
            Some(customer) => {
                view! {
                    <Shell customer username logout />
                    <SessionNotice left stay=Callback::new(move |_| keep_alive()) logout />
                }
                    .into_any()
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
                    _ => view! { <LoadingFrame /> }.into_any(),
                }
            }
        }}
    }
}

/// The frame while the session is checked: the same as index.html shows while the wasm loads (so nothing
/// moves when the console starts), until the real frame takes its place.
#[component]
fn LoadingFrame() -> impl IntoView {
    view! {
        <div class="shell">
            <aside class="sidebar">
                <div class="brand">
                    "Edge Console" <button type="button" class="menu-toggle" disabled>"Menu"</button>
                </div>
            </aside>
            <div class="main">
                <header class="topbar">
                    <span class="spacer"></span>
                </header>
                <main class="content">
                    <div class="card panel loading-card" role="status">
                        <p class="loading-title">"Checking your session…"</p>
                        <p class="muted">
                            "Delivery and security statistics, properties, purge, network lists, users and the audit log of your account open here in a moment."
                        </p>
                    </div>
                </main>
            </div>
        </div>
    }
}

/// The session is about to end (or has, when `left` is not positive): stay logged in, or log out.
#[component]
fn SessionNotice(left: Memo<Option<f64>>, stay: Callback<()>, logout: Action<(), ()>) -> impl IntoView {
    move || {
        left.get().map(|ms| {
            let secs = (ms / 1000.0).max(0.0) as i64;
            let text = if secs > 0 {
                format!("Your session ends in {}:{:02}.", secs / 60, secs % 60)
            } else {
                "Your session has ended.".to_string()
            };
            view! {
                <div class="session-notice" role="alert" id="session-notice">
                    <span>{text}</span>
                    <button type="button" class="primary" on:click=move |_| stay.run(())>"Stay logged in"</button>
                    <button type="button" on:click=move |_| {
                        logout.dispatch(());
                    }>"Log out"</button>
                </div>
            }
        })
    }
}

#[component]
fn Shell(customer: String, username: Signal<String>, logout: Action<(), ()>) -> impl IntoView {
    let unsaved = Unsaved::get();
    let navigate = use_navigate();
    // A link followed while the view has unsaved work: where it led, until the user decides.
    let leaving = RwSignal::new(None::<String>);
    let menu = RwSignal::new(false);
    let auth = Auth::get();
    let link = move |href: String, label: &'static str| {
        let target = href.clone();
        let guard = move |e: leptos::ev::MouseEvent| {
            menu.set(false);
            if unsaved.is_some_and(|u| u.0.get_untracked().is_some()) {
                e.prevent_default();
                leaving.set(Some(target.clone()));
            }
        };
        // The alerts' link says how many rules fire now.
        let firing = href.ends_with("/alerts").then(|| view! { <crate::components::firing_count::FiringCount /> });
        view! {
            <li on:click=guard>
                <A href=href>{label} {firing}</A>
            </li>
        }
    };
    let links = NAV.iter().map(|(path, label)| link(format!("/{customer}/{path}"), label)).collect_view();
    // Only administrators read the audit log.
    let audit = format!("/{customer}/audit");
    let admin_links = move || auth.is_admin().then(|| link(audit.clone(), "Audit log"));
    let leave = {
        let navigate = navigate.clone();
        move || {
            let Some(to) = leaving.get_untracked() else { return };
            leaving.set(None);
            if let Some(u) = unsaved {
                u.0.set(None);
            }
            navigate(&to, NavigateOptions::default());
        }
    };
    view! {
        <a class="skip-link" href="#content">"Skip to content"</a>
        <div class="shell">
            <aside class="sidebar" class:open=move || menu.get()>
                <div class="brand">
                    "Edge Console"
                    <button
                        type="button"
                        class="menu-toggle"
                        aria-expanded=move || menu.get().to_string()
                        aria-controls="main-nav"
                        on:click=move |_| menu.update(|m| *m = !*m)
                    >
                        "Menu"
                    </button>
                </div>
                <nav aria-label="Main" id="main-nav">
                    <ul>{links} {admin_links}</ul>
                </nav>
            </aside>
            <div class="main">
                <header class="topbar">
                    <span class="customer" title="Customer">
                        {customer.clone()}
                    </span>
                    <span class="spacer"></span>
                    <span class="zone" title="Times are shown in this time zone">
                        {move || Zone::get().name()}
                    </span>
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
        {move || {
            leaving
                .get()
                .map(|_| {
                    let leave = leave.clone();
                    view! {
                        <Confirm
                            title="Leave with unsaved changes?".to_string()
                            message=unsaved.and_then(|u| u.0.get_untracked()).unwrap_or_default()
                            action="Leave".to_string()
                            pending=Signal::derive(|| false)
                            error=Signal::derive(|| None::<api::ApiError>)
                            on_confirm=Callback::new(move |_| leave())
                            on_close=Callback::new(move |_| leaving.set(None))
                        />
                    }
                })
        }}
    }
}

thread_local! {
    static LEAVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True the first time only: the console leaves for the login page once. It leaves by loading that page (the
/// sign-in app), and the session's signals stay as they are until the page goes: clearing them first rebuilt
/// the views while work of theirs was still in flight (an unsaved draft's fields read a writability that was
/// gone: a panic logged just before the page went, found by the end-to-end test).
fn leave_once() -> bool {
    !LEAVING.with(|l| l.replace(true))
}
