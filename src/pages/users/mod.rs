//! Users & roles: a paged, searchable table of the account's users; create, edit, delete, reset password and
//! disable two-factor (administrators only); what each role allows.

mod admin;
mod form;

use edge_api::{ROLES, Role};
use leptos::prelude::*;

use self::admin::UserAdmin;
use crate::session::{Auth, role_of};

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
