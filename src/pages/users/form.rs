//! A user created or edited: details, role (what it allows beside it) and, for a new local user, a password.

use edge_api::{Link, ROLES, Role, User, UserInput};
use leptos::{ev, prelude::*};

use crate::{
    api::{self, ApiError},
    components::{
        async_view::act,
        dialog::Dialog,
        errors::{FieldError, FormError},
    },
    nav::use_customer,
};

/// The user being created or edited.
#[derive(Clone)]
pub(super) enum Editing {
    New,
    Existing(Box<User>),
}

#[component]
pub(super) fn UserForm(
    me_id: String,
    mode: Editing,
    on_done: Callback<String>,
    on_close: Callback<()>,
) -> impl IntoView {
    let customer = use_customer();
    let existing = match &mode {
        Editing::Existing(u) => Some((**u).clone()),
        Editing::New => None,
    };
    let remote = existing.as_ref().is_some_and(|u| u.source.id != "local");
    let is_me = existing.as_ref().is_some_and(|u| u.id == me_id);
    let field = |f: fn(&User) -> String| RwSignal::new(existing.as_ref().map(f).unwrap_or_default());
    let username = field(|u| u.username.clone());
    let full_name = field(|u| u.full_name.clone());
    let email = field(|u| u.email.clone());
    let phone = field(|u| u.phone_number.clone());
    let role =
        RwSignal::new(existing.as_ref().map(|u| u.role.id.clone()).unwrap_or_else(|| Role::Viewer.as_str().into()));
    let enabled = RwSignal::new(existing.as_ref().is_none_or(|u| u.enabled));
    let password = RwSignal::new(String::new());
    let id = existing.as_ref().map(|u| u.id.clone());
    let is_new = id.is_none();

    let save = act(move |input: &UserInput| {
        let (customer, input, id) = (customer.get_untracked(), input.clone(), id.clone());
        async move {
            match id {
                Some(id) => {
                    api::update_user(&customer, &id, &input).await.map(|u| format!("{} was saved.", u.username))
                }
                None => api::create_user(&customer, &input).await.map(|u| format!("{} was created.", u.username)),
            }
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(message)) = save.value().get() {
            on_done.run(message);
        }
    });
    let error: Signal<Option<ApiError>> = Signal::derive(move || save.value().get().and_then(Result::err));

    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let input = if remote {
            UserInput { role: Some(Link { id: role.get_untracked(), uri: String::new() }), ..Default::default() }
        } else {
            UserInput {
                username: Some(username.get_untracked().trim().to_string()),
                password: is_new.then(|| password.get_untracked()),
                full_name: Some(full_name.get_untracked().trim().to_string()),
                email: Some(email.get_untracked().trim().to_string()),
                phone_number: Some(phone.get_untracked().trim().to_string()),
                enabled: (!is_me).then(|| enabled.get_untracked()),
                role: (!is_me).then(|| Link { id: role.get_untracked(), uri: String::new() }),
                source: None,
            }
        };
        save.dispatch(input);
    };

    let title = match &existing {
        Some(u) => format!("Edit {}", u.username),
        None => "New user".to_string(),
    };
    view! {
        <Dialog title on_close>
            <form class="form" on:submit=submit novalidate>
                <FormError error fields=&["username", "full_name", "email", "phone_number", "role", "password"] />
                {(!remote)
                    .then(|| {
                        view! {
                            <label>
                                "Username"
                                <input name="username" autocomplete="off" bind:value=username autofocus=is_new />
                                <FieldError error field="username" />
                            </label>
                            <label>
                                "Full name"
                                <input name="full_name" autocomplete="off" bind:value=full_name />
                                <FieldError error field="full_name" />
                            </label>
                            <label>
                                "E-mail"
                                <input name="email" type="email" autocomplete="off" bind:value=email />
                                <FieldError error field="email" />
                            </label>
                            <label>
                                "Phone"
                                <input name="phone_number" type="tel" autocomplete="off" bind:value=phone />
                                <FieldError error field="phone_number" />
                            </label>
                        }
                    })}
                {remote.then(|| view! { <p class="muted">"This user comes from a remote identity source: only the role is held here."</p> })}
                <label>
                    "Role"
                    <select name="role" prop:value=move || role.get() prop:disabled=is_me on:change=move |e| role.set(event_target_value(&e))>
                        {ROLES
                            .iter()
                            .map(|(id, text)| view! { <option value=*id title=*text>{*id}</option> })
                            .collect_view()}
                    </select>
                    <span class="hint">
                        {move || Role::parse(&role.get()).map(Role::description).unwrap_or_default()}
                        {is_me.then_some(" You cannot change your own role: another administrator can.")}
                    </span>
                    <FieldError error field="role" />
                </label>
                {is_new
                    .then(|| {
                        view! {
                            <label>
                                "Initial password"
                                <input name="password" type="password" autocomplete="new-password" bind:value=password />
                                <span class="hint">
                                    {format!(
                                        "At least {} characters, not the username. The user changes it under My account.",
                                        edge_api::PASSWORD_MIN_LENGTH,
                                    )}
                                </span>
                                <FieldError error field="password" />
                            </label>
                        }
                    })}
                {(!remote)
                    .then(|| {
                        view! {
                            <label class="check">
                                <input type="checkbox" name="enabled" bind:checked=enabled prop:disabled=is_me />
                                "Enabled (can log in)"
                            </label>
                        }
                    })}
                <div class="actions">
                    <button type="button" on:click=move |_| on_close.run(())>"Cancel"</button>
                    <button type="submit" class="primary" disabled=move || save.pending().get()>
                        {if is_new { "Create user" } else { "Save" }}
                    </button>
                </div>
            </form>
        </Dialog>
    }
}
