//! Users & roles: a paged, searchable table of the account's users; create, edit, delete, reset password and
//! disable two-factor (administrators only); what each role allows.

use edge_api::{Link, ROLES, Role, User, UserInput};
use leptos::{ev, prelude::*};

use crate::{
    api::{self, ApiError},
    components::{
        async_view::{AsyncView, act, load},
        curl::CopyCurl,
        dialog::{Confirm, Dialog},
        errors::{FieldError, FormError},
        pager::Pager,
    },
    nav::{use_customer, use_query_state},
    session::{Auth, role_of},
};

const PAGE_SIZE: u64 = 20;

/// The user being created or edited.
#[derive(Clone)]
enum Editing {
    New,
    Existing(Box<User>),
}

/// A consequential action awaiting confirmation.
#[derive(Clone)]
enum Pending {
    Delete(User),
    ResetPassword(User),
    /// With the caller's password and code when the user is the caller.
    DisableOtp(User, Option<api::Confirm>),
}

#[component]
pub fn Users() -> impl IntoView {
    let auth = Auth::get();
    let role = Memo::new(move |_| auth.me().map(|u| u.role.id));
    view! {
        <section class="page">
            <h1>"Users & roles"</h1>
            // By role, not by the whole record: a refreshed record (two-factor turned on) rebuilds nothing.
            {move || match role.get().map(|_| auth.me_untracked()) {
                None | Some(None) => view! { <p class="muted">"Loading…"</p> }.into_any(),
                Some(Some(me)) if role_of(&me) == Some(Role::Admin) => view! { <UserAdmin me /> }.into_any(),
                Some(Some(me)) => {
                    view! {
                        <div class="notice info">
                            {format!(
                                "Only administrators manage users. You are logged in as {} with the {} role.",
                                me.username,
                                me.role.id,
                            )}
                        </div>
                    }
                        .into_any()
                }
            }}
            <RoleTable />
        </section>
    }
}

#[component]
fn RoleTable() -> impl IntoView {
    view! {
        <h2>"Roles"</h2>
        <table class="data roles">
            <thead>
                <tr>
                    <th>"Role"</th>
                    <th>"Allows"</th>
                </tr>
            </thead>
            <tbody>
                {ROLES
                    .iter()
                    .map(|(id, text)| {
                        view! {
                            <tr>
                                <td>
                                    <span class=format!("badge role-{id}")>{*id}</span>
                                </td>
                                <td>{*text}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn UserAdmin(me: User) -> impl IntoView {
    let customer = use_customer();
    let q = use_query_state();
    let page = Memo::new(move |_| q.page("page"));
    let search = Memo::new(move |_| q.get("q"));
    let query = RwSignal::new(search.get_untracked());
    Effect::new(move |_| query.set(search.get()));
    let reload = RwSignal::new(0u32);
    let url = Memo::new(move |_| api::users_url(&customer.get(), page.get(), PAGE_SIZE, &search.get()));
    let users = load(move || {
        let u = url.get();
        reload.track();
        async move { api::get_json::<edge_api::UserPage>(&u).await }
    });
    let editing = RwSignal::new(None::<Editing>);
    let pending = RwSignal::new(None::<Pending>);
    let notice = RwSignal::new(None::<String>);

    let act = act(move |p: &Pending| {
        let (customer, p) = (customer.get_untracked(), p.clone());
        async move {
            match &p {
                Pending::Delete(u) => {
                    api::delete_user(&customer, &u.id).await.map(|_| format!("{} was deleted.", u.username))
                }
                Pending::ResetPassword(u) => api::reset_password(&customer, &u.id)
                    .await
                    .map(|_| format!("{}'s password was reset; a link to set a new one was e-mailed.", u.username)),
                Pending::DisableOtp(u, confirm) => api::disable_otp(&customer, &u.id, confirm.as_ref())
                    .await
                    .map(|_| format!("Two-factor authentication of {} is off.", u.username)),
            }
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(message)) = act.value().get() {
            pending.set(None);
            notice.set(Some(message));
            reload.update(|n| *n += 1);
        }
    });
    let act_error = Signal::derive(move || act.value().get().and_then(Result::err));

    let on_search = move |e: ev::SubmitEvent| {
        e.prevent_default();
        q.set(&[("q", query.get_untracked().trim().to_string()), ("page", String::new())]);
    };
    let me_id = StoredValue::new(me.id.clone());

    view! {
        <div class="toolbar">
            <form class="search" role="search" on:submit=on_search>
                <input
                    type="search"
                    name="q"
                    placeholder="Search by username or name"
                    aria-label="Search users"
                    bind:value=query
                />
                <button type="submit">"Search"</button>
            </form>
            <span class="spacer"></span>
            <button
                class="primary"
                id="new-user"
                on:click=move |_| {
                    notice.set(None);
                    editing.set(Some(Editing::New));
                }
            >
                "New user"
            </button>
            <CopyCurl path=move || Some(url.get()) />
        </div>
        {move || notice.get().map(|n| view! { <div class="notice success" role="status">{n}</div> })}
        <AsyncView resource=users loading="Loading users…" let:list>
            {if list.items.is_empty() {
                let text = if search.get_untracked().is_empty() {
                    "No users yet.".to_string()
                } else {
                    format!("No user matches “{}”.", search.get_untracked())
                };
                view! { <div class="empty">{text}</div> }.into_any()
            } else {
                let shown = list.items.len() as u64;
                let rows = list
                    .items
                    .into_iter()
                    .map(|user| view! { <UserRow user me_id=me_id.get_value() editing pending notice /> })
                    .collect_view();
                view! {
                    <div class="table-scroll">
                    <table class="data users">
                        <thead>
                            <tr>
                                <th scope="col">"Username"</th>
                                <th scope="col">"Name"</th>
                                <th scope="col">"E-mail"</th>
                                <th scope="col">"Role"</th>
                                <th scope="col">"Status"</th>
                                <th scope="col">"Two-factor"</th>
                                <th scope="col" class="actions">"Actions"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                    </div>
                    <Pager
                        page=list.page_index
                        per_page=PAGE_SIZE
                        shown
                        total=list.total
                        on_page=Callback::new(move |p: u64| q.set(&[("page", p.to_string())]))
                    />
                }
                    .into_any()
            }}
        </AsyncView>
        {move || {
            editing
                .get()
                .map(|mode| {
                    view! {
                        <UserForm
                            me_id=me_id.get_value()
                            mode
                            on_done=Callback::new(move |message: String| {
                                editing.set(None);
                                notice.set(Some(message));
                                reload.update(|n| *n += 1);
                            })
                            on_close=Callback::new(move |_| editing.set(None))
                        />
                    }
                })
        }}
        {move || {
            pending
                .get()
                .map(|p| {
                    let (title, message, action) = match &p {
                        Pending::Delete(u) => (
                            format!("Delete {}?", u.username),
                            format!("{} will be removed with all their sessions. This cannot be undone.", u.username),
                            "Delete user",
                        ),
                        Pending::ResetPassword(u) => (
                            format!("Reset the password of {}?", u.username),
                            format!(
                                "Their current password stops working at once, their sessions end, and a link to set a new one is e-mailed to {}.",
                                if u.email.is_empty() { &u.username } else { &u.email },
                            ),
                            "Reset password",
                        ),
                        Pending::DisableOtp(u, _) if u.id == me_id.get_value() => (
                            "Turn off your own two-factor?".to_string(),
                            "Your account will be protected by the password alone. Confirm that it is you: your password and a current code from your authenticator app.".to_string(),
                            "Turn off two-factor",
                        ),
                        Pending::DisableOtp(u, _) => (
                            format!("Turn off two-factor for {}?", u.username),
                            format!("{} will log in with the password alone until they set up two-factor again.", u.username),
                            "Turn off two-factor",
                        ),
                    };
                    // One's own second factor: the password and a code again (the server insists too).
                    let own = matches!(&p, Pending::DisableOtp(u, _) if u.id == me_id.get_value());
                    let (password, code) = (RwSignal::new(String::new()), RwSignal::new(String::new()));
                    let reauth = own.then(|| {
                        view! {
                            <div class="form">
                                <label>
                                    "Your password"
                                    <input name="confirm-password" type="password" autocomplete="current-password" bind:value=password />
                                </label>
                                <label>
                                    "One-time code"
                                    <input name="confirm-otp" inputmode="numeric" autocomplete="one-time-code" maxlength="6" bind:value=code />
                                </label>
                            </div>
                        }
                    });
                    view! {
                        <Confirm
                            title
                            message
                            action=action.to_string()
                            pending=act.pending()
                            error=act_error
                            on_confirm=Callback::new(move |_| {
                                let p = match &p {
                                    Pending::DisableOtp(u, _) if own => {
                                        let confirm = api::Confirm {
                                            username: u.username.clone(),
                                            password: password.get_untracked(),
                                            otp: Some(code.get_untracked().trim().to_string()),
                                        };
                                        Pending::DisableOtp(u.clone(), Some(confirm))
                                    }
                                    other => other.clone(),
                                };
                                act.dispatch(p);
                            })
                            on_close=Callback::new(move |_| {
                                act.value().set(None);
                                pending.set(None);
                            })
                        >
                            {reauth}
                        </Confirm>
                    }
                })
        }}
    }
}

#[component]
fn UserRow(
    user: User,
    me_id: String,
    editing: RwSignal<Option<Editing>>,
    pending: RwSignal<Option<Pending>>,
    notice: RwSignal<Option<String>>,
) -> impl IntoView {
    let is_me = user.id == me_id;
    let local = user.source.id == "local";
    let otp = user.otp_enabled;
    let ask = move |p: Pending| {
        notice.set(None);
        pending.set(Some(p));
    };
    let (u1, u2, u3, u4) = (user.clone(), user.clone(), user.clone(), user.clone());
    view! {
        <tr data-username=user.username.clone()>
            <td>
                <strong>{user.username.clone()}</strong>
                {is_me.then(|| view! { <span class="muted">" (you)"</span> })}
                {(!local).then(|| view! { <div class="muted small">{format!("via {}", user.source.id)}</div> })}
            </td>
            <td>{user.full_name.clone()}</td>
            <td>{user.email.clone()}</td>
            <td>
                <span class=format!("badge role-{}", user.role.id)>{user.role.id.clone()}</span>
            </td>
            <td>
                {if user.enabled {
                    view! { <span class="badge ok">"Enabled"</span> }
                } else {
                    view! { <span class="badge off">"Disabled"</span> }
                }}
            </td>
            <td>{if otp { "On" } else { "Off" }}</td>
            <td class="actions">
                <button class="link" on:click=move |_| editing.set(Some(Editing::Existing(Box::new(u1.clone()))))>"Edit"</button>
                {local
                    .then(|| {
                        view! {
                            <button class="link" on:click=move |_| ask(Pending::ResetPassword(u2.clone()))>
                                "Reset password"
                            </button>
                        }
                    })}
                {otp
                    .then(|| {
                        view! {
                            <button class="link" on:click=move |_| ask(Pending::DisableOtp(u3.clone(), None))>
                                "Turn off two-factor"
                            </button>
                        }
                    })}
                // Not on one's own row: an administrator does not delete or demote themselves here.
                {(!is_me).then(|| view! { <button class="link danger" on:click=move |_| ask(Pending::Delete(u4.clone()))>"Delete"</button> })}
            </td>
        </tr>
    }
}

#[component]
fn UserForm(me_id: String, mode: Editing, on_done: Callback<String>, on_close: Callback<()>) -> impl IntoView {
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
