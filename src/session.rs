//! Who is logged in, shared by every view: the customer, the username and the session.

use edge_api::{Role, Session, User};
use leptos::prelude::*;

const LAST_LOGIN_KEY: &str = "edge-console.last-login";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedIn {
    pub customer: String,
    pub username: String,
    pub session: Session,
}

/// A user's role; None for one this console does not know.
pub fn role_of(user: &User) -> Option<Role> {
    Role::parse(&user.role.id)
}

/// Whether a user may change things: any role but viewer (a role this console does not know included: the
/// server decides, and says no).
pub fn may_write(user: &User) -> bool {
    role_of(user) != Some(Role::Viewer)
}

/// The login state, provided near the root of the app: the session, and the logged-in user once read.
#[derive(Clone, Copy)]
pub struct Auth(RwSignal<Option<LoggedIn>>, RwSignal<Option<User>>, Memo<(bool, bool)>);

impl Auth {
    pub fn provide() -> Auth {
        let me = RwSignal::new(None::<User>);
        // (may write, is an administrator): what views decide by, changed only when the role does — the user's
        // record arriving (or read again) does not rebuild what depends on the role alone (issue 25: on a cold
        // load the record arrives while the views are being drawn, and rebuilt the security events' table).
        let role = Memo::new(move |_| {
            me.with(|u| {
                (u.as_ref().is_some_and(may_write), u.as_ref().is_some_and(|u| role_of(u) == Some(Role::Admin)))
            })
        });
        let auth = Auth(RwSignal::new(None), me, role);
        provide_context(auth);
        auth
    }

    /// The logged-in user's record (role, two-factor, details), tracked; `None` until read.
    pub fn me(&self) -> Option<User> {
        self.1.get()
    }

    /// The logged-in user's record, untracked.
    pub fn me_untracked(&self) -> Option<User> {
        self.1.get_untracked()
    }

    pub fn set_me(&self, user: Option<User>) {
        self.1.set(user);
    }

    /// True when the logged-in user is an administrator.
    pub fn is_admin(&self) -> bool {
        self.2.get().1
    }

    /// True when the logged-in user may change things (operator or administrator), tracked.
    pub fn can_write(&self) -> bool {
        self.2.get().0
    }

    pub fn get() -> Auth {
        expect_context::<Auth>()
    }

    /// The logged-in state, tracked.
    pub fn current(&self) -> Option<LoggedIn> {
        self.0.get()
    }

    /// The logged-in state if it is for `customer`, untracked.
    pub fn for_customer(&self, customer: &str) -> Option<LoggedIn> {
        self.0.get_untracked().filter(|l| l.customer == customer)
    }

    pub fn set(&self, login: LoggedIn) {
        if !login.username.is_empty() {
            remember_login(&login.customer, &login.username);
        }
        self.0.set(Some(login));
    }

    /// Forgets the session; true when there was one (so the caller reacts only once).
    pub fn clear(&self) -> bool {
        let had = self.0.get_untracked().is_some();
        self.0.set(None);
        self.1.set(None);
        had
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Remembers the last customer and username (never the password) to prefill the login form.
pub fn remember_login(customer: &str, username: &str) {
    if let Some(s) = storage() {
        let _ = s.set_item(LAST_LOGIN_KEY, &format!("{customer}\n{username}"));
    }
}

/// The last customer and username that logged in on this browser.
pub fn remembered_login() -> Option<(String, String)> {
    let value = storage()?.get_item(LAST_LOGIN_KEY).ok().flatten()?;
    let (customer, username) = value.split_once('\n')?;
    Some((customer.to_string(), username.to_string()))
}
