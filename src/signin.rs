//! The sign-in entry point: the first view a browser loads (`/`, `/login`, `/reset-password`) as its own small
//! wasm, so that the login form is on screen long before the whole console could be. It holds only the login
//! and password-reset pages; logging in loads the console, which it has fetched into the cache meanwhile.

use leptos::prelude::*;
use leptos_router::{
    components::{Redirect, Route, Router, Routes},
    path,
};

use crate::{
    pages::{self, login::LoginPage, reset::ResetPasswordPage},
    session::{Auth, remembered_login},
};

/// Told to the login page through context: the console is another document, reached by a page load.
#[derive(Clone, Copy)]
pub struct SignInApp;

/// Goes to `path` of the console: by a page load in the sign-in app, else by the router.
pub fn open_console(path: &str) -> bool {
    if use_context::<SignInApp>().is_none() {
        return false;
    }
    if let Some(w) = web_sys::window() {
        let _ = w.location().replace(path);
    }
    true
}

/// Mounts the sign-in app on the page's body.
pub fn mount() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(SignIn);
    leptos::task::spawn_local(prefetch_console());
}

#[component]
fn SignIn() -> impl IntoView {
    Auth::provide();
    provide_context(SignInApp);
    view! {
        <Router>
            <Routes fallback=pages::NotFound>
                <Route path=path!("/") view=Home />
                <Route path=path!("/login") view=LoginPage />
                <Route path=path!("/reset-password") view=ResetPasswordPage />
            </Routes>
        </Router>
    }
}

/// `/`: the last customer's statistics when this browser has logged in before, else the login form.
#[component]
fn Home() -> impl IntoView {
    match remembered_login() {
        Some((customer, _)) => {
            open_console(&format!("/{customer}/stats"));
            view! { <p class="splash muted">"Opening the console…"</p> }.into_any()
        }
        None => view! { <Redirect path="/login" /> }.into_any(),
    }
}

/// Fetches the console's files (named in its index.html) into the browser's cache while the user types, so that
/// logging in does not wait for them. They are named by content hash and cached for good.
async fn prefetch_console() {
    let Ok(response) = gloo_net::http::Request::get("/index.html").send().await else { return };
    let Ok(index) = response.text().await else { return };
    for file in asset_names(&index) {
        let _ = gloo_net::http::Request::get(&file).send().await;
    }
}

/// The script, wasm and style sheet files an index.html names (`href="/…"` and `'/…'` in its loader).
pub fn asset_names(index: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for quote in ['"', '\''] {
        for part in index.split(quote).skip(1).step_by(2) {
            let wanted = [".js", ".wasm", ".css"].iter().any(|ext| part.ends_with(ext));
            if part.starts_with('/') && wanted && !out.iter().any(|x| x == part) {
                out.push(part.to_string());
            }
        }
    }
    out
}
