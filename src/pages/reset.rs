//! The page of a password-reset link: choose a new password (no login needed).

use edge_api::PASSWORD_MIN_LENGTH as MIN;
use leptos::{ev, prelude::*};

use crate::{
    api,
    components::{async_view::act, errors::FormError},
    nav::query_param,
};

#[component]
pub fn ResetPasswordPage() -> impl IntoView {
    let customer = query_param("customer").unwrap_or_default();
    let token = query_param("token").unwrap_or_default();
    let password = RwSignal::new(String::new());
    let again = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let c = customer.clone();
    let set = act(move |password: &String| {
        let (customer, token, password) = (c.clone(), token.clone(), password.clone());
        async move { api::complete_password_reset(&customer, &token, &password).await }
    });
    let error = Signal::derive(move || set.value().get().and_then(Result::err));
    let done = move || matches!(set.value().get(), Some(Ok(())));
    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let (p, a) = (password.get_untracked(), again.get_untracked());
        if p.chars().count() < MIN {
            problem.set(Some(format!("The password must have at least {MIN} characters.")));
        } else if p != a {
            problem.set(Some("The two passwords differ.".into()));
        } else {
            problem.set(None);
            set.dispatch(p);
        }
    };
    let login = format!("/login?customer={}", api::encode(&customer));
    view! {
        <div class="login-page">
            <div class="card login">
                <h1>"Set a new password"</h1>
                {move || {
                    if done() {
                        view! {
                            <div class="notice success" role="status">"Your new password is set."</div>
                            <a href=login.clone()>"Log in"</a>
                        }
                            .into_any()
                    } else {
                        view! {
                            <form class="form" on:submit=submit novalidate>
                                <p class="muted">
                                    {format!("At least {MIN} characters, and not your username.")}
                                </p>
                                <label>
                                    "New password"
                                    <input name="password" type="password" autocomplete="new-password" bind:value=password />
                                </label>
                                <label>
                                    "New password again"
                                    <input name="again" type="password" autocomplete="new-password" bind:value=again />
                                </label>
                                {move || problem.get().map(|p| view! { <div class="notice error" role="alert">{p}</div> })}
                                <FormError error fields=&[] />
                                <button type="submit" class="primary" disabled=move || set.pending().get()>
                                    "Set password"
                                </button>
                            </form>
                        }
                            .into_any()
                    }
                }}
            </div>
        </div>
    }
}
