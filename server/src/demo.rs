//! Demo data for `serve --demo`: customer `demo` with one user per role, created only in an empty data dir.

use crate::{
    AppState,
    admin::local_user,
    auth::Role,
    store::{NewCustomer, StoreError},
};

pub const CUSTOMER: &str = "demo";

/// The demo users: username, role, full name.
pub const USERS: [(&str, Role, &str); 3] = [
    ("admin", Role::Admin, "Ada Admin"),
    ("operator", Role::Operator, "Otto Operator"),
    ("viewer", Role::Viewer, "Vera Viewer"),
];

/// Seeds the demo customer when the store holds no customer at all. Returns whether it seeded.
pub async fn seed_if_empty(state: &AppState, password: &str) -> anyhow::Result<bool> {
    if state.store.customer_count().await? > 0 {
        return Ok(false);
    }
    for (username, _, _) in USERS {
        edge_api::check_password_policy(username, password).map_err(|e| anyhow::anyhow!("demo password: {e}"))?;
    }
    let users = USERS
        .iter()
        .map(|(username, role, full_name)| {
            let mut user = local_user(username, password, *role, full_name)?;
            user.email = format!("{username}@demo.example");
            Ok(user)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let customer = NewCustomer {
        name: CUSTOMER.into(),
        display_name: "Demo Media Ltd".into(),
        contact_email: "ops@demo.example".into(),
    };
    match state.store.create_customer(customer, &users, state.clock.now_ms()).await {
        Ok(_) => Ok(true),
        // Another process seeded it at the same moment.
        Err(StoreError::Conflict(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
