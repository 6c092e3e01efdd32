//! The root: app-wide providers and the router. The login and password-reset pages are the sign-in app's
//! (`src/signin.rs`): the console goes there by a page load.

use leptos::prelude::*;
use leptos_router::{
    components::{ParentRoute, Redirect, Route, Router, Routes},
    path,
};

use crate::{
    components::layout::Layout,
    nav::go_to,
    pages,
    session::{Auth, remembered_login},
};

#[component]
pub fn App() -> impl IntoView {
    Auth::provide();
    view! {
        <Router>
            <Routes fallback=pages::NotFound>
                <Route path=path!("/") view=Home />
                <ParentRoute path=path!("/:customer") view=Layout>
                    <Route path=path!("") view=StatsRedirect />
                    <Route path=path!(":page") view=pages::Page />
                </ParentRoute>
            </Routes>
        </Router>
    }
}

/// `/`: the last customer's statistics when this browser has logged in before, else the login page (the
/// sign-in app's document).
#[component]
fn Home() -> impl IntoView {
    match remembered_login() {
        Some((customer, _)) => view! { <Redirect path=format!("/{customer}/stats") /> }.into_any(),
        None => {
            go_to("/login");
            ().into_any()
        }
    }
}

#[component]
fn StatsRedirect() -> impl IntoView {
    view! { <Redirect path="stats" /> }
}
