//! The administrator's view of the users: a paged, searchable table; create, edit, delete, reset password,
//! disable two-factor and see or revoke a user's API tokens, each consequential action confirmed.

use edge_api::User;
use leptos::{ev, prelude::*};

use crate::{
    api::{self},
    components::{
        async_view::{AsyncView, act, load},
        curl::CopyCurl,
        dialog::{Confirm, Dialog},
        pager::Pager,
        tokens::ApiTokens,
    },
    nav::{use_customer, use_query_state},
};

use super::form::{Editing, UserForm};

const PAGE_SIZE: u64 = 20;

/// A consequential action awaiting confirmation.
#[derive(Clone)]
enum Pending {
    Delete(User),
    ResetPassword(User),
    /// With the caller's password and code when the user is the caller.
    DisableOtp(User, Option<api::Confirm>),
}

#[component]
pub(super) fn UserAdmin(me: User) -> impl IntoView {
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
    let tokens_of = RwSignal::new(None::<User>);
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
                    .map(|user| view! { <UserRow user me_id=me_id.get_value() editing pending notice tokens_of /> })
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
            tokens_of.get().map(|u| {
                view! {
                    <Dialog title=format!("API tokens of {}", u.username) on_close=Callback::new(move |_| tokens_of.set(None))>
                        <ApiTokens user=Some(u.id.clone()) role=edge_api::Role::Admin otp=false />
                    </Dialog>
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
    tokens_of: RwSignal<Option<User>>,
) -> impl IntoView {
    let is_me = user.id == me_id;
    let local = user.source.id == "local";
    let otp = user.otp_enabled;
    let ask = move |p: Pending| {
        notice.set(None);
        pending.set(Some(p));
    };
    let (u1, u2, u3, u4, u5) = (user.clone(), user.clone(), user.clone(), user.clone(), user.clone());
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
                <button class="link" on:click=move |_| tokens_of.set(Some(u5.clone()))>"API tokens"</button>
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
