//! The operator's commands on the store alone (no statistics engine, the server may be running on PostgreSQL):
//! customers, host patterns and identity sources.

use std::io::IsTerminal;

use edge_server::{
    admin,
    clock::{Clock, SystemClock},
    domain::hashing::HashCost,
    fleet::SimulatedFleet,
    store::{Location, Properties},
};

use super::open_store;

pub async fn add_customer(name: String, admin: String, location: Location) -> anyhow::Result<()> {
    let password = match std::env::var("EDGE_ADMIN_PASSWORD") {
        Ok(p) if !p.is_empty() => p,
        _ if std::io::stdin().is_terminal() => {
            let first = rpassword::prompt_password(format!("Password for {admin}: "))?;
            let again = rpassword::prompt_password("Again: ")?;
            anyhow::ensure!(first == again, "the two passwords differ");
            first
        }
        _ => anyhow::bail!("set EDGE_ADMIN_PASSWORD, or run on a terminal to be asked for the password"),
    };
    let store = open_store(&location).await?;
    let customer =
        admin::create_customer(&store, SystemClock.now_ms(), &name, &admin, &password, HashCost::Standard).await?;
    println!("Created customer `{}` with administrator `{admin}` in {location}", customer.name);
    Ok(())
}

/// `host show`: the customer and property that claim a host pattern.
pub async fn show_host(pattern: &str, location: &Location) -> anyhow::Result<()> {
    let store = open_store(location).await?;
    let pattern = pattern.trim().to_ascii_lowercase();
    match store.host_claim(&pattern).await? {
        Some((customer, property)) => {
            println!("{pattern} is claimed by customer `{}`, property `{}`", customer.name, property.name)
        }
        None => println!("{pattern} is claimed by no property"),
    }
    Ok(())
}

/// `host release`: the pattern removed from the property that claims it (see [`admin::release_host`]).
pub async fn release_host(pattern: &str, location: &Location) -> anyhow::Result<()> {
    let store = open_store(location).await?;
    let fleet = SimulatedFleet::standard();
    let (customer, property, version) = admin::release_host(&store, &fleet, SystemClock.now_ms(), pattern).await?;
    println!(
        "Released {} from customer `{}`, property `{property}` (configuration version {version})",
        pattern.trim().to_ascii_lowercase(),
        customer.name
    );
    Ok(())
}

/// `idp add`: a remote identity source registered for a customer.
pub async fn add_identity_source(customer: &str, id: &str, config: &str, location: &Location) -> anyhow::Result<()> {
    let store = open_store(location).await?;
    admin::register_identity_source(&store, SystemClock.now_ms(), customer, id, config).await?;
    println!("Registered identity source `{id}` for customer `{customer}`");
    Ok(())
}
