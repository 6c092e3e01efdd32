//! The root: app-wide providers and the router.

use leptos::prelude::*;
use leptos_router::{
    components::{ParentRoute, Redirect, Route, Router, Routes},
    path,
};

use crate::{
    components::layout::Layout,
    pages::{self, login::LoginPage},
    session::{Auth, remembered_login},
};

#[component]
pub fn App() -> impl IntoView {
    Auth::provide();
    view! {
        <Router>
            <Routes fallback=pages::NotFound>
                <Route path=path!("/") view=Home />
                <Route path=path!("/login") view=LoginPage />
                <Route path=path!("/reset-password") view=pages::reset::ResetPasswordPage />
                <ParentRoute path=path!("/:customer") view=Layout>
                    <Route path=path!("") view=StatsRedirect />
                    <Route path=path!(":page") view=pages::Page />
                </ParentRoute>
            </Routes>
        </Router>
    }
}

/// `/`: the last customer's statistics when this browser has logged in before, else the login page.
#[component]
fn Home() -> impl IntoView {
    let target = match remembered_login() {
        Some((customer, _)) => format!("/{customer}/stats"),
        None => "/login".to_string(),
    };
    view! { <Redirect path=target /> }
}

#[component]
fn StatsRedirect() -> impl IntoView {
    view! { <Redirect path="stats" /> }
}
