//! Demo data for `serve --demo`: customer `demo` with one user per role, network lists and properties with
//! realistic configurations, created only in an empty data dir.

use edge_api::{
    Role,
    audit::op,
    config::{CacheKey, CacheRule, HostPattern, Origin, PropertyConfig, ReadOnly, Security, ShapingRule, WafRule},
    paths,
};

pub use crate::stats::demo::Volume;
use crate::{
    clock::iso_ms,
    domain::{
        admin::local_user,
        property_config::{Stamp, etag, stamp_new},
        tasks::{CONFIG_DEPLOY, NETWORK_LIST_DEPLOY, Starter, TaskTarget, new_task_for},
    },
    state::AppState,
    store::{
        AuditEvent, ConfigVersionRecord, Customer, EntryRecord, NetworkListRecord, NewCustomer, StoreError, Target,
        UserRecord,
    },
};

pub const CUSTOMER: &str = "demo";

/// The demo users: username, role, full name.
pub const USERS: [(&str, Role, &str); 3] = [
    ("admin", Role::Admin, "Ada Admin"),
    ("operator", Role::Operator, "Otto Operator"),
    ("viewer", Role::Viewer, "Vera Viewer"),
];

/// Seeds the demo customer when the store holds no customer at all, with 35 days of traffic. Returns whether
/// it seeded.
pub async fn seed_if_empty(state: &AppState, password: &str) -> anyhow::Result<bool> {
    seed_if_empty_with(state, password, Volume::FULL).await
}

/// As [`seed_if_empty`], with `volume` of traffic. The traffic goes to this process's statistics engine: on a
/// shared database, a replica that finds the demo seeded by another and its own statistics empty gets the same
/// traffic (it ends when the demo customer was created), so every replica shows the same demo. Statistics
/// every replica shares (ClickHouse) get it from the replica that seeded the demo only.
pub async fn seed_if_empty_with(state: &AppState, password: &str, volume: Volume) -> anyhow::Result<bool> {
    let seeded = seed_store_if_empty(state, password).await?;
    let joining = state.store.kind() == "postgres" && !state.stats.shared() && state.stats.footprint().rollup_rows == 0;
    if !(seeded || joining) {
        return Ok(seeded);
    }
    let Some(customer) = state.store.customer_by_name(CUSTOMER).await? else { return Ok(seeded) };
    let (engine, id, end) = (state.stats.clone(), customer.id, customer.created_ms);
    tokio::task::spawn_blocking(move || crate::stats::demo::seed(engine.as_ref(), id, &demo_properties(), end, volume))
        .await??;
    Ok(seeded)
}

/// The demo customer with its users, lists and properties, when the store holds no customer at all; returns
/// whether it seeded (false also when another replica seeded it at the same moment).
async fn seed_store_if_empty(state: &AppState, password: &str) -> anyhow::Result<bool> {
    if state.store.customer_count().await? > 0 {
        return Ok(false);
    }
    for (username, _, _) in USERS {
        edge_api::check_password_policy(username, password).map_err(|e| anyhow::anyhow!("demo password: {e}"))?;
    }
    let users = USERS
        .iter()
        .map(|(username, role, full_name)| {
            let mut user = local_user(username, password, *role, full_name, state.passwords.cost())?;
            user.email = format!("{username}@demo.example");
            Ok(user)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let customer = NewCustomer {
        name: CUSTOMER.into(),
        display_name: "Demo Media Ltd".into(),
        contact_email: "ops@demo.example".into(),
    };
    let now = state.clock.now_ms();
    let target = Target { kind: "account", id: CUSTOMER.into(), name: CUSTOMER.into() };
    let audit = AuditEvent::system(0, now, op::CUSTOMER_CREATE, target).detail("demo", true);
    let customer = match state.store.create_customer(customer, &users, now, &audit).await {
        Ok(c) => c,
        // Another process seeded it at the same moment.
        Err(StoreError::Conflict(_)) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let admin =
        state.store.user_by_username(customer.id, "admin").await?.ok_or_else(|| anyhow::anyhow!("demo admin"))?;
    seed_lists(state, &customer, &admin).await?;
    seed_properties(state, &customer, &admin).await?;
    Ok(true)
}

/// Network list ids of the demo, fixed so that the properties can refer to them.
pub const SCANNERS_LIST: &str = "ip_demo_scanners";
pub const EMBARGO_LIST: &str = "geo_demo_embargo";
pub const PARTNERS_LIST: &str = "ip_demo_partners";

/// A demo network list: id, name, type, description, deprecated, entries.
type DemoList = (&'static str, &'static str, &'static str, &'static str, bool, &'static [&'static str]);

async fn seed_lists(state: &AppState, customer: &Customer, admin: &UserRecord) -> anyhow::Result<()> {
    let lists: [DemoList; 4] = [
        (
            SCANNERS_LIST,
            "Known scanners",
            "IP",
            "Address ranges of vulnerability scanners and scrapers seen on our sites.",
            false,
            &["198.51.100.0/24", "203.0.113.0/25", "192.0.2.66", "192.0.2.67", "45.155.205.0/24", "2001:db8:bad::/48"],
        ),
        (
            EMBARGO_LIST,
            "Embargoed countries",
            "GEO",
            "Countries our licences do not allow us to serve.",
            false,
            &["KP", "IR", "SY", "CU"],
        ),
        (
            PARTNERS_LIST,
            "Partner offices",
            "IP",
            "Office networks of partners, exempt from rate limits.",
            false,
            &["100.64.10.0/24", "100.64.20.0/24", "2001:db8:100::/56"],
        ),
        (
            "ip_demo_legacy",
            "Legacy blocklist (2019)",
            "IP",
            "Replaced by Known scanners; kept for reference.",
            true,
            &["198.18.0.0/15", "192.0.2.13"],
        ),
    ];
    let now = state.clock.now_ms();
    for (id, name, list_type, description, deprecated, entries) in lists {
        let record = NetworkListRecord {
            id: id.into(),
            customer_id: customer.id,
            name: name.into(),
            list_type: list_type.into(),
            description: description.into(),
            deprecated: false,
            created_ms: now,
            modified_ms: None,
            entry_count: 0,
        };
        let entries: Vec<EntryRecord> = entries
            .iter()
            .map(|e| EntryRecord {
                id: crate::store::new_id(),
                value: edge_api::normalize_entry(list_type, e).unwrap_or_else(|_| e.to_string()),
                added_by: admin.username.clone(),
                created_ms: now,
            })
            .collect();
        let uri = format!("{}/config/networklists/{id}", paths::base(&customer.name));
        let by = Starter { id: &admin.id, name: &admin.username };
        let task = new_task_for(state, customer.id, by, NETWORK_LIST_DEPLOY, TaskTarget { id, uri: &uri, name });
        let target = Target::network_list(id, name);
        let audit = AuditEvent::system(customer.id, now, op::LIST_CREATE, target.clone())
            .detail("type", list_type)
            .detail("entries", entries.len());
        state.store.create_network_list(&record, &entries, &task, &audit).await?;
        if deprecated {
            let update = crate::store::NetworkListUpdate { deprecated: Some(true), ..Default::default() };
            let audit = AuditEvent::system(customer.id, now, op::LIST_UPDATE, target).detail("deprecated", true);
            state.store.update_network_list(customer.id, id, &update, now, &audit).await?;
        }
    }
    Ok(())
}

fn host(p: &str) -> HostPattern {
    HostPattern { id: String::new(), readonly: ReadOnly::default(), pattern: p.into() }
}

fn origin(name: &str, host: &str, port: u16, protocol: &str) -> Origin {
    Origin {
        id: String::new(),
        readonly: ReadOnly::default(),
        name: name.into(),
        host: host.into(),
        port,
        protocol: protocol.into(),
    }
}

fn cache(path: &str, ttl: u32, query: &str, params: &[&str]) -> CacheRule {
    CacheRule {
        id: String::new(),
        readonly: ReadOnly::default(),
        path_pattern: path.into(),
        ttl_seconds: ttl,
        cache_key: CacheKey {
            query: query.into(),
            query_params: params.iter().map(|s| s.to_string()).collect(),
            ignore_case: false,
        },
    }
}

fn waf(rule_id: &str, name: &str, severity: &str, action: &str) -> WafRule {
    WafRule {
        id: String::new(),
        readonly: ReadOnly::default(),
        rule_id: rule_id.into(),
        name: name.into(),
        severity: severity.into(),
        action: action.into(),
        enabled: true,
    }
}

fn shaping(name: &str, action: &str, match_type: &str, values: &[&str], rate: Option<u32>) -> ShapingRule {
    ShapingRule {
        id: String::new(),
        readonly: ReadOnly::default(),
        name: name.into(),
        action: action.into(),
        match_type: match_type.into(),
        values: values.iter().map(|s| s.to_string()).collect(),
        rate_limit_per_minute: rate,
        enabled: true,
    }
}

/// The demo properties: a shop, a media CDN and an API.
pub fn demo_properties() -> Vec<PropertyConfig> {
    let property = |name: &str, hosts: &[&str], origins, cache_rules, waf_rules, shaping_rules| PropertyConfig {
        id: String::new(),
        name: name.into(),
        readonly: ReadOnly::default(),
        host_patterns: hosts.iter().map(|h| host(h)).collect(),
        origins,
        cache_rules,
        security: Security { waf_rules, traffic_shaping_rules: shaping_rules },
    };
    vec![
        property(
            "www-shop",
            &["www.shop.example", "shop.example", "*.static.shop.example"],
            vec![
                origin("shop-primary", "origin-eu.shop.example", 443, "https"),
                origin("shop-fallback", "origin-us.shop.example", 443, "https"),
            ],
            vec![
                cache("/static/*", 86_400, "exclude", &["utm_source", "utm_medium", "utm_campaign"]),
                cache("/images/*", 604_800, "none", &[]),
                cache("*.css", 86_400, "none", &[]),
                cache("/api/*", 0, "all", &[]),
                cache("/", 300, "include", &["lang"]),
            ],
            vec![
                waf("942100", "SQL injection", "CRITICAL", "BLOCK"),
                waf("941100", "Cross-site scripting", "HIGH", "BLOCK"),
                waf("930100", "Path traversal", "HIGH", "BLOCK"),
                waf("913100", "Security scanner", "MEDIUM", "WARN"),
                waf("920350", "Host header is an IP address", "LOW", "WARN"),
            ],
            vec![
                shaping("Block known scanners", "BLOCK", "NETWORK_LIST", &[SCANNERS_LIST], None),
                shaping("Embargo", "BLOCK", "NETWORK_LIST", &[EMBARGO_LIST], None),
                shaping("Checkout rate limit", "RATE_LIMIT", "IP", &["0.0.0.0/0", "::/0"], Some(120)),
                shaping("Watch high-fraud regions", "WARN", "GEO", &["NG", "RU", "VN"], None),
            ],
        ),
        property(
            "media-cdn",
            &["media.example", "*.media.example"],
            vec![origin("media-storage", "storage.media.example", 443, "https")],
            vec![
                cache("/video/*", 2_592_000, "none", &[]),
                cache("/thumbs/*", 604_800, "include", &["w", "h"]),
                cache("/live/*", 2, "none", &[]),
            ],
            vec![waf("930100", "Path traversal", "HIGH", "BLOCK"), waf("913100", "Security scanner", "MEDIUM", "WARN")],
            vec![
                shaping("Embargo", "BLOCK", "NETWORK_LIST", &[EMBARGO_LIST], None),
                shaping("Hotlink rate limit", "RATE_LIMIT", "GEO", &["CN", "RU", "BR"], Some(600)),
            ],
        ),
        property(
            "api-gateway",
            &["api.demo.example"],
            vec![origin("api-cluster", "10.20.0.15", 8443, "https")],
            vec![cache("/v1/catalog/*", 60, "all", &[]), cache("/v1/*", 0, "all", &[])],
            vec![
                waf("942100", "SQL injection", "CRITICAL", "BLOCK"),
                waf("944100", "Remote code execution", "CRITICAL", "BLOCK"),
                waf("921110", "HTTP request smuggling", "HIGH", "BLOCK"),
            ],
            vec![
                shaping("Block known scanners", "BLOCK", "NETWORK_LIST", &[SCANNERS_LIST], None),
                shaping("Per-client limit", "RATE_LIMIT", "IP", &["0.0.0.0/0", "::/0"], Some(600)),
                shaping("Partners unthrottled (watch)", "WARN", "NETWORK_LIST", &[PARTNERS_LIST], None),
            ],
        ),
    ]
}

async fn seed_properties(state: &AppState, customer: &Customer, admin: &UserRecord) -> anyhow::Result<()> {
    let now = iso_ms(state.clock.now_ms());
    for mut config in demo_properties() {
        stamp_new(&mut config, &Stamp { author: &admin.username, now: &now });
        let json = serde_json::to_string(&config)?;
        let record = ConfigVersionRecord {
            version: 1,
            etag: etag(1, &json),
            config: json,
            author: admin.username.clone(),
            created_ms: state.clock.now_ms(),
            comment: "Initial configuration".into(),
        };
        let uri = format!("{}/properties/{}/config", paths::base(&customer.name), config.name);
        let by = Starter { id: &admin.id, name: &admin.username };
        let target = TaskTarget { id: &config.name, uri: &uri, name: &config.name };
        let task = new_task_for(state, customer.id, by, CONFIG_DEPLOY, target);
        let audit =
            AuditEvent::system(customer.id, record.created_ms, op::PROPERTY_CREATE, Target::property(&config.name))
                .detail("to_version", 1);
        let nodes = crate::domain::property_config::new_readonly_parts(None, &config);
        state.store.create_property(customer.id, &config.name, &record, &nodes, &task, &audit).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_properties_are_valid() {
        let lists = [SCANNERS_LIST, EMBARGO_LIST, PARTNERS_LIST];
        for config in demo_properties() {
            let problems = edge_api::config::validate(&config, &|id| lists.contains(&id));
            assert!(problems.is_empty(), "{}: {problems:?}", config.name);
        }
    }
}
