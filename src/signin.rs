//! The sign-in entry point: the first view a browser loads (`/`, `/login`, `/reset-password`) as its own small
//! wasm, so that the login form is on screen long before the whole console could be. It holds only the login
//! and password-reset pages, chosen by the address without a router (the router alone weighs more than both
//! pages); logging in loads the console, which it has fetched into the cache meanwhile.

use leptos::prelude::*;

use crate::{
    nav::open_console,
    pages::{login::LoginPage, reset::ResetPasswordPage},
    session::{Auth, remembered_login},
};

/// Mounts the sign-in app on the page's body.
pub fn mount() {
    crate::crash::install();
    leptos::mount::mount_to_body(SignIn);
    leptos::task::spawn_local(prefetch_console());
}

#[component]
fn SignIn() -> impl IntoView {
    Auth::provide();
    let path = web_sys::window().and_then(|w| w.location().pathname().ok()).unwrap_or_default();
    match path.as_str() {
        "/reset-password" => view! { <ResetPasswordPage /> }.into_any(),
        // `/`: the last customer's statistics when this browser has logged in before, else the login form.
        "/" if remembered_login().is_some() => {
            if let Some((customer, _)) = remembered_login() {
                open_console(&format!("/{customer}/stats"));
            }
            view! { <p class="splash muted">"Opening the console…"</p> }.into_any()
        }
        _ => {
            if path != "/login" {
                // The login form's own address, so that a reload or a bookmark says what it is.
                if let Some(w) = web_sys::window() {
                    let search = w.location().search().unwrap_or_default();
                    if let Ok(h) = w.history() {
                        let _ = h.replace_state_with_url(
                            &wasm_bindgen::JsValue::NULL,
                            "",
                            Some(&format!("/login{search}")),
                        );
                    }
                }
            }
            view! { <LoginPage /> }.into_any()
        }
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
