//! Host ownership through the router (issue 19's review, finding 1): a host pattern is one property's, so one
//! customer's; another customer can claim neither it nor a pattern overlapping it (409 `host_claimed`); a
//! wildcard over a public suffix is refused (400 `invalid_config`); a purge names only hosts the customer
//! claims. The review's attack — acme claiming demo's host and `*.co.uk`, then purging both — fails at each step.

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

/// Creates property `name` with `hosts` at `customer` (as its administrator); returns the reply.
async fn create(app: &TestApp, customer: &str, name: &str, hosts: &[&str]) -> Reply {
    let admin = if customer == "acme" { "alice" } else { "gina" };
    let body = json!({"name": name, "host_patterns": hosts});
    app.send(req(Method::POST, &format!("/{customer}/v1/properties")).basic(admin, PASSWORD).json(&body).done()).await
}

/// Replaces the host patterns of acme's property `name` (read, then written with its etag); returns the reply.
async fn set_hosts(app: &TestApp, name: &str, hosts: &[&str]) -> Reply {
    let uri = format!("/acme/v1/properties/{name}/config");
    let doc = app.send(req(Method::GET, &uri).basic("alice", PASSWORD).done()).await.body;
    let mut config = doc["config"].clone();
    config["host_patterns"] = hosts.iter().map(|h| json!({"pattern": h})).collect::<Vec<_>>().into();
    let body = json!({"config": config, "comment": ""});
    let etag = doc["etag"].as_str().unwrap();
    app.send(req(Method::PUT, &uri).basic("alice", PASSWORD).header("If-Match", etag).json(&body).done()).await
}

fn purge(customer: &str, admin: &str, uri: &str) -> axum::http::Request<axum::body::Body> {
    let body =
        json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": uri, "match_mode": "PREFIX_LITERAL"}]}});
    req(Method::POST, &format!("/{customer}/v1/cache/purge")).basic(admin, PASSWORD).json(&body).done()
}

async fn property_names(app: &TestApp) -> Value {
    let reply = app.send(req(Method::GET, "/acme/v1/properties").basic("alice", PASSWORD).done()).await;
    reply.body.as_array().unwrap().iter().map(|p| p["name"].clone()).collect()
}

#[tokio::test]
async fn another_customers_hosts_and_overlapping_patterns_cannot_be_claimed() {
    let app = TestApp::new().await;
    let reply = create(&app, "globex", "www", &["api.globex.example", "*.cdn.globex.example"]).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    for hosts in [
        &["api.globex.example"][..],
        &["*.globex.example"],
        &["img.cdn.globex.example"],
        &["*.eu.cdn.globex.example"],
        &["*.cdn.globex.example"],
        &["www.acme.example", "api.globex.example"],
    ] {
        let reply = create(&app, "acme", "stolen", hosts).await;
        assert_error(&reply, StatusCode::CONFLICT, "host_claimed");
        assert!(!reply.body["message"].as_str().unwrap().contains("globex\""), "names no customer: {}", reply.body);
    }
    assert_eq!(property_names(&app).await, json!([]), "nothing was created");

    // An update that adds one is refused the same way, and stores nothing.
    assert_eq!(create(&app, "acme", "shop", &["www.acme.example"]).await.status, StatusCode::CREATED);
    let reply = set_hosts(&app, "shop", &["www.acme.example", "api.globex.example"]).await;
    assert_error(&reply, StatusCode::CONFLICT, "host_claimed");
    let reply =
        app.send(req(Method::GET, "/acme/v1/properties/shop/config/versions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body.as_array().map(Vec::len), Some(1));

    // And acme cannot purge globex's hosts.
    let reply = app.send(purge("acme", "alice", "https://api.globex.example/")).await;
    assert_eq!((reply.status, reply.body["code"].as_u64()), (StatusCode::BAD_REQUEST, Some(400)), "{}", reply.body);
    let reply = app.send(purge("globex", "gina", "https://api.globex.example/")).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
}

#[tokio::test]
async fn wildcards_over_a_public_suffix_are_refused() {
    let app = TestApp::new().await;
    for wildcard in ["*.co.uk", "*.github.io", "*.com.au"] {
        let reply = create(&app, "acme", "wide", &["www.acme.example", wildcard]).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
        let detail = reply.body["details"][0]["message"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!("$.host_patterns[1].pattern: {wildcard:?} covers the public suffix")),
            "{detail}"
        );
    }
    assert_eq!(create(&app, "acme", "shop", &["www.acme.example"]).await.status, StatusCode::CREATED);
    let reply = set_hosts(&app, "shop", &["www.acme.example", "*.co.uk"]).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
    let reply = app.send(purge("acme", "alice", "https://www.bbc.co.uk/news")).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
    // A wildcard under a registrable domain is fine.
    assert_eq!(set_hosts(&app, "shop", &["www.acme.example", "*.acme.co.uk"]).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_pattern_is_one_propertys_and_a_released_one_can_be_claimed_by_another_customer() {
    let app = TestApp::new().await;
    assert_eq!(
        create(&app, "acme", "shop", &["www.shop.example", "*.img.shop.example"]).await.status,
        StatusCode::CREATED
    );
    // Within one account: the same pattern in two properties is refused; an overlapping one is the account's
    // own routing.
    let reply = create(&app, "acme", "blog", &["www.shop.example"]).await;
    assert_error(&reply, StatusCode::CONFLICT, "host_claimed");
    assert!(reply.body["message"].as_str().unwrap().contains("another property of this account"), "{}", reply.body);
    assert_eq!(create(&app, "acme", "cdn", &["a.img.shop.example"]).await.status, StatusCode::CREATED);
    // Another customer waits until acme's administrator removes the pattern.
    assert_error(&create(&app, "globex", "shop", &["www.shop.example"]).await, StatusCode::CONFLICT, "host_claimed");
    assert_eq!(set_hosts(&app, "shop", &["*.img.shop.example"]).await.status, StatusCode::OK);
    let reply = create(&app, "globex", "shop", &["www.shop.example"]).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    // Now it is globex's to purge, and no longer acme's.
    let reply = app.send(purge("acme", "alice", "www.shop.example/")).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
    assert_eq!(app.send(purge("globex", "gina", "www.shop.example/")).await.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn the_operator_releases_a_host_from_whichever_customer_claims_it() {
    let app = TestApp::new().await;
    assert_eq!(create(&app, "acme", "shop", &["www.shop.example", "m.shop.example"]).await.status, StatusCode::CREATED);
    let fleet = edge_server::fleet::SimulatedFleet::standard();
    let (customer, property, version) =
        edge_server::admin::release_host(app.state.store.as_ref(), &fleet, T0, "WWW.shop.example").await.unwrap();
    assert_eq!((customer.name.as_str(), property.as_str(), version), ("acme", "shop", 2));
    let doc = app.send(req(Method::GET, "/acme/v1/properties/shop/config").basic("alice", PASSWORD).done()).await.body;
    assert_eq!(doc["config"]["host_patterns"].as_array().unwrap().len(), 1);
    assert_eq!(doc["config"]["host_patterns"][0]["pattern"], "m.shop.example");
    assert_eq!((doc["author"].as_str(), doc["version"].as_u64()), (Some("system"), Some(2)));
    let log =
        app.send(req(Method::GET, "/acme/v1/audit?operation=property.config").basic("alice", PASSWORD).done()).await;
    let record = &log.body["items"][0];
    assert_eq!(
        (record["actor"]["type"].as_str(), record["details"]["released_host"].as_str()),
        (Some("system"), Some("www.shop.example"))
    );
    assert_eq!(create(&app, "globex", "shop", &["www.shop.example"]).await.status, StatusCode::CREATED);
    let again = edge_server::admin::release_host(app.state.store.as_ref(), &fleet, T0, "nowhere.example").await;
    assert!(again.unwrap_err().to_string().contains("no property claims"));
}
