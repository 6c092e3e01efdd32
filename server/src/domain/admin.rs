//! Operator tasks outside the API: creating a customer (tenant) with its first administrator.

use edge_api::audit::op;

use crate::domain::hashing::HashCost;

use crate::{
    domain::auth,
    state::AppState,
    store::{AuditEvent, Customer, NewCustomer, NewUser, Store, StoreError, Target},
};

/// Resource ids, as the command line and the tests' fixtures name them.
pub use crate::store::new_id;

/// Checks a username: 1–128 characters and at most 256 bytes, no colon (it would break HTTP Basic), no control
/// characters or surrounding spaces, and not a reserved name (`system` names the server in the audit log).
pub fn check_username(username: &str) -> Result<(), String> {
    use edge_api::limits::{MAX_USERNAME_BYTES, MAX_USERNAME_CHARS, RESERVED_USERNAMES, over_chars};
    if username.is_empty() || over_chars(username, MAX_USERNAME_CHARS) || username.len() > MAX_USERNAME_BYTES {
        return Err(format!(
            "A username has 1 to {MAX_USERNAME_CHARS} characters and at most {MAX_USERNAME_BYTES} bytes."
        ));
    }
    if username.contains(':') || username.chars().any(char::is_control) || username.trim() != username {
        return Err("A username may not contain a colon, control characters or surrounding spaces.".into());
    }
    if RESERVED_USERNAMES.iter().any(|r| r.eq_ignore_ascii_case(username)) {
        return Err(format!("{username:?} is reserved (the audit log names the server so)."));
    }
    Ok(())
}

/// A local user ready to store, with its password hashed at `cost`.
pub fn local_user(
    username: &str,
    password: &str,
    role: edge_api::Role,
    full_name: &str,
    cost: HashCost,
) -> anyhow::Result<NewUser> {
    Ok(NewUser {
        id: new_id(),
        username: username.to_string(),
        source: "local".into(),
        full_name: full_name.to_string(),
        email: if username.contains('@') { username.to_string() } else { String::new() },
        phone_number: String::new(),
        enabled: true,
        role: role.as_str().into(),
        password_hash: Some(auth::hash_password(password, cost)?),
    })
}

/// Creates customer `name` with one administrator. Refuses an existing name, an invalid name or username, and a
/// password that breaks the policy.
pub async fn add_customer(state: &AppState, name: &str, admin: &str, password: &str) -> anyhow::Result<Customer> {
    create_customer(state.store.as_ref(), state.clock.now_ms(), name, admin, password, state.passwords.cost()).await
}

/// As [`add_customer`], on a store alone at `now_ms` (the command line, which needs no statistics engine).
pub async fn create_customer(
    store: &dyn Store,
    now_ms: i64,
    name: &str,
    admin: &str,
    password: &str,
    cost: HashCost,
) -> anyhow::Result<Customer> {
    if !edge_api::paths::is_valid_customer_name(name) {
        anyhow::bail!(
            "invalid customer name {name:?}: use 1-63 lowercase letters, digits and '-', starting with a letter or digit"
        );
    }
    check_username(admin).map_err(anyhow::Error::msg)?;
    edge_api::check_password_policy(admin, password).map_err(anyhow::Error::msg)?;
    let user = local_user(admin, password, edge_api::Role::Admin, "Administrator", cost)?;
    let customer = NewCustomer { name: name.into(), display_name: name.into(), contact_email: user.email.clone() };
    let target = Target { kind: "account", id: name.into(), name: name.into() };
    let audit = AuditEvent::system(0, now_ms, op::CUSTOMER_CREATE, target).detail("administrator", admin);
    match store.create_customer(customer, &[user], now_ms, &audit).await {
        Ok(c) => Ok(c),
        Err(StoreError::Conflict(_)) => anyhow::bail!("customer {name:?} already exists"),
        Err(e) => Err(e.into()),
    }
}

/// Registers a remote identity source `id` for customer `customer`, with a JSON object as configuration.
/// Users of it hold only a role association (there is no remote login flow in v1).
pub async fn add_identity_source(
    state: &AppState,
    customer: &str,
    id: &str,
    configuration: &str,
) -> anyhow::Result<()> {
    register_identity_source(state.store.as_ref(), state.clock.now_ms(), customer, id, configuration).await
}

/// As [`add_identity_source`], on a store alone at `now_ms`.
pub async fn register_identity_source(
    store: &dyn Store,
    now_ms: i64,
    customer: &str,
    id: &str,
    configuration: &str,
) -> anyhow::Result<()> {
    let valid_id = !id.is_empty()
        && id.len() <= 63
        && id != "local"
        && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !valid_id {
        anyhow::bail!("invalid identity source id {id:?}: use lowercase letters, digits, '-' and '_' (not \"local\")");
    }
    let config: serde_json::Value = serde_json::from_str(configuration)?;
    if !config.is_object() {
        anyhow::bail!("the configuration must be a JSON object");
    }
    let Some(c) = store.customer_by_name(customer).await? else { anyhow::bail!("no customer {customer:?}") };
    let audit = AuditEvent::system(c.id, now_ms, op::IDENTITY_SOURCE_CREATE, Target::identity_source(id));
    match store.add_identity_source(c.id, id, &config.to_string(), &audit).await {
        Ok(()) => Ok(()),
        Err(StoreError::Conflict(_)) => anyhow::bail!("identity source {id:?} already exists for {customer:?}"),
        Err(e) => Err(e.into()),
    }
}

/// Releases host pattern `pattern` from the property that claims it, whoever's it is: a new version of that
/// property's configuration without the pattern (by `system`, with its deployment task and audit record),
/// after which another customer may claim it. How an operator moves a host from one customer to another
/// without the first one's administrator. Returns the customer, the property and the new version.
pub async fn release_host(
    store: &dyn Store,
    fleet: &dyn crate::domain::fleet::Fleet,
    now_ms: i64,
    pattern: &str,
) -> anyhow::Result<(Customer, String, u64)> {
    let pattern = pattern.trim().to_ascii_lowercase();
    let Some((customer, property)) = store.host_claim(&pattern).await? else {
        anyhow::bail!("no property claims the host pattern {pattern:?}");
    };
    let Some((property, current)) = store.property(customer.id, &property.name).await? else {
        anyhow::bail!("the property {:?} is gone", property.name);
    };
    let mut config: edge_api::config::PropertyConfig = serde_json::from_str(&current.config)?;
    config.host_patterns.retain(|h| h.pattern != pattern);
    let json = serde_json::to_string(&config)?;
    let version = property.version + 1;
    let record = crate::store::ConfigVersionRecord {
        version,
        etag: crate::domain::property_config::etag(version, &json),
        config: json,
        author: "system".into(),
        created_ms: now_ms,
        comment: format!("Host pattern {pattern} released by the operator"),
    };
    let uri = format!("{}/properties/{}/config", edge_api::paths::base(&customer.name), property.name);
    use crate::domain::tasks::{CONFIG_DEPLOY, SYSTEM, TaskTarget, new_task_on};
    let target = TaskTarget { id: &property.name, uri: &uri, name: &property.name };
    let task = new_task_on(fleet, now_ms, customer.id, SYSTEM, CONFIG_DEPLOY, target);
    let audit = AuditEvent::system(customer.id, now_ms, op::CONFIG_UPDATE, Target::property(&property.name))
        .detail("from_version", property.version)
        .detail("to_version", version)
        .detail("released_host", pattern.as_str());
    if !store.update_property_config(property.id, property.version, &record, &[], &task, &audit).await? {
        anyhow::bail!("the property {:?} changed meanwhile: run the command again", property.name);
    }
    Ok((customer, property.name, version))
}
