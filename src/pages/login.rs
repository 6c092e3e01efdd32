//! The login page: customer, username and password, then a one-time password when the account asks for one.

use leptos::prelude::*;

use crate::{
    api::{self, ApiError},
    components::async_view::act,
    nav::query_param,
    session::{Auth, LoggedIn, remembered_login},
};

#[derive(Clone)]
struct Attempt {
    customer: String,
    username: String,
    password: String,
    otp: Option<String>,
}

#[component]
pub fn LoginPage() -> impl IntoView {
    let auth = Auth::get();
    let remembered = remembered_login();
    let query_customer = query_param("customer").filter(|c| !c.is_empty());
    let initial_customer = query_customer.clone().or_else(|| remembered.as_ref().map(|(c, _)| c.clone()));
    let initial_username =
        remembered.filter(|(c, _)| Some(c) == initial_customer.as_ref()).map(|(_, u)| u).unwrap_or_default();

    let customer = RwSignal::new(initial_customer.unwrap_or_default());
    let username = RwSignal::new(initial_username);
    let password = RwSignal::new(String::new());
    let otp = RwSignal::new(String::new());
    let need_otp = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    // What to do next, said neutrally (asking for the code is no error).
    let prompt = RwSignal::new(None::<String>);
    let otp_field = NodeRef::<leptos::html::Input>::new();
    // The code field takes the focus when it appears, so that the code is not typed into the password.
    Effect::new(move |_| {
        if need_otp.get()
            && let Some(field) = otp_field.get()
        {
            let _ = field.focus();
        }
    });
    let expired = query_param("reason").as_deref() == Some("expired");

    let login = act(move |a: &Attempt| {
        let a = a.clone();
        async move {
            let session = api::create_session(&a.customer, &a.username, &a.password, a.otp.as_deref()).await?;
            Ok::<_, ApiError>(LoggedIn { customer: a.customer, username: a.username, session })
        }
    });

    Effect::new(move |_| match login.value().get() {
        Some(Ok(logged_in)) => {
            let next = query_param("next")
                .filter(|n| n.starts_with(&format!("/{}/", logged_in.customer)))
                .unwrap_or_else(|| format!("/{}/stats", logged_in.customer));
            auth.set(logged_in);
            crate::nav::open_console(&next);
        }
        Some(Err(e)) if e.kind() == "otp_required" => {
            need_otp.set(true);
            problem.set(None);
            prompt.set(Some("Enter the six-digit code from your authenticator app.".into()));
        }
        Some(Err(e)) => {
            prompt.set(None);
            problem.set(Some(e.body.message.clone()));
        }
        None => {}
    });

    Effect::new(|_| crate::mark("edge:login-form"));

    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let attempt = Attempt {
            customer: customer.get_untracked().trim().to_lowercase(),
            username: username.get_untracked().trim().to_string(),
            password: password.get_untracked(),
            otp: need_otp.get_untracked().then(|| otp.get_untracked().trim().to_string()),
        };
        if attempt.customer.is_empty() || attempt.username.is_empty() || attempt.password.is_empty() {
            problem.set(Some("Enter the customer, username and password.".into()));
            return;
        }
        if attempt.otp.as_ref().is_some_and(|t| t.len() != 6 || !t.bytes().all(|b| b.is_ascii_digit())) {
            problem.set(Some("The code has six digits.".into()));
            return;
        }
        problem.set(None);
        login.dispatch(attempt);
    };

    view! {
        <div class="login-page">
            <form class="card login" on:submit=submit novalidate>
                <h1>"Edge Console"</h1>
                <p class="muted">"Delivery and security statistics, configuration and users of your CDN account."</p>
                <Show when=move || expired>
                    <div class="notice info" role="status">
                        "Your session has ended. Log in again to continue."
                    </div>
                </Show>
                <label>
                    "Customer"
                    <input
                        name="customer"
                        autocomplete="organization"
                        autocapitalize="none"
                        spellcheck="false"
                        bind:value=customer
                        autofocus=move || customer.get_untracked().is_empty()
                    />
                </label>
                <label>
                    "Username"
                    <input name="username" autocomplete="username" autocapitalize="none" spellcheck="false" bind:value=username />
                </label>
                <label>
                    "Password"
                    <input name="password" type="password" autocomplete="current-password" bind:value=password />
                </label>
                <Show when=move || need_otp.get()>
                    <label>
                        "One-time code"
                        <input
                            name="otp"
                            node_ref=otp_field
                            inputmode="numeric"
                            autocomplete="one-time-code"
                            maxlength="6"
                            bind:value=otp
                        />
                    </label>
                </Show>
                {move || prompt.get().map(|p| view! { <div class="notice info" role="status" id="otp-prompt">{p}</div> })}
                {move || problem.get().map(|p| view! { <div class="notice error" role="alert">{p}</div> })}
                <button type="submit" class="primary" disabled=move || login.pending().get()>
                    {move || if login.pending().get() { "Logging in…" } else { "Log in" }}
                </button>
            </form>
        </div>
    }
}
