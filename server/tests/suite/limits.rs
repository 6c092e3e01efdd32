//! Bounded work and bounded answers whatever the input: error details are capped, configurations have a node
//! cap, and so on (issue 9's review findings, each with the request that showed it).

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

/// The details of an error answer: at most 100, then one counting the rest.
fn assert_capped(reply: &Reply, total: usize) {
    let details = reply.body["details"].as_array().expect("details");
    assert_eq!(details.len(), 101, "{}", reply.body);
    assert_eq!(details[100]["message"], format!("… and {} more", total - 100));
}

#[tokio::test]
async fn error_details_are_capped_at_100_with_a_count_of_the_rest() {
    let app = TestApp::new().await;
    let doc = app.add_property("shop", &["www.shop.example"]).await;
    let etag = doc["etag"].as_str().unwrap();

    // A configuration with 300 broken host patterns.
    let mut config = doc["config"].clone();
    config["host_patterns"] =
        Value::from((0..300).map(|i| json!({"pattern": format!("NOT A HOST {i}")})).collect::<Vec<_>>());
    let reply = app
        .send(
            req(Method::PUT, "/acme/v1/properties/shop/config")
                .basic("alice", PASSWORD)
                .header("If-Match", etag)
                .json(&json!({"config": config, "comment": ""}))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
    assert_capped(&reply, 300);

    // 300 invalid network list entries.
    let body =
        json!({"name": "l", "type": "IP", "list": (0..300).map(|i| format!("not-an-ip-{i}")).collect::<Vec<_>>()});
    let reply =
        app.send(req(Method::POST, "/acme/v1/config/networklists").basic("alice", PASSWORD).json(&body).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_entries");
    assert_capped(&reply, 300);

    // 300 purge URIs of hosts no property serves, in the purge's own error body.
    let uris: Vec<Value> = (0..300)
        .map(|i| json!({"uri_pattern": format!("nowhere{i}.example/x"), "match_mode": "EXACT_LITERAL"}))
        .collect();
    let body = json!({"purge_request": {"action": "PURGE", "uris": uris}});
    let reply = app.send(req(Method::POST, "/acme/v1/cache/purge").basic("alice", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
    assert_eq!(reply.body["code"], 400);
    assert_capped(&reply, 300);
}

#[tokio::test]
async fn a_huge_body_of_empty_items_gets_a_small_answer() {
    let app = TestApp::new().await;
    let body = json!({"name": "l", "type": "IP", "list": []});
    let reply =
        app.send(req(Method::POST, "/acme/v1/config/networklists").basic("alice", PASSWORD).json(&body).done()).await;
    let id = reply.body["id"].as_str().unwrap().to_string();
    // 1 MiB of `{}`: each item lacks its entry.
    let items = format!("[{}{{}}]", "{},".repeat(1 << 18));
    let reply = app
        .send(
            req(Method::POST, &format!("/acme/v1/config/networklists/{id}/entries"))
                .basic("alice", PASSWORD)
                .raw("application/json", items)
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "limit_exceeded");
    assert!(reply.raw.len() < 2000, "{} bytes", reply.raw.len());
}

#[tokio::test]
async fn a_configuration_holds_at_most_5000_nodes() {
    let app = TestApp::new().await;
    let hosts = |n: usize| (0..n).map(|i| format!("h{i}.shop.example")).collect::<Vec<_>>();
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/properties")
                .basic("alice", PASSWORD)
                .json(&json!({"name": "big", "host_patterns": hosts(5001)}))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
    let doc = app.add_property("shop", &["www.shop.example"]).await;
    // 5,001 nodes of every kind: refused before any is read, with one problem.
    let mut config = doc["config"].clone();
    config["host_patterns"] = Value::from(hosts(2000).into_iter().map(|h| json!({"pattern": h})).collect::<Vec<_>>());
    config["cache_rules"] = Value::from(
        (0..3001).map(|i| json!({"path_pattern": format!("/p{i}/*"), "ttl_seconds": 60})).collect::<Vec<_>>(),
    );
    let put = |config: &Value, etag: &str| {
        req(Method::PUT, "/acme/v1/properties/shop/config")
            .basic("alice", PASSWORD)
            .header("If-Match", etag)
            .json(&json!({"config": config, "comment": ""}))
            .done()
    };
    let reply = app.send(put(&config, doc["etag"].as_str().unwrap())).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
    assert_eq!(
        reply.body["details"],
        json!([{"message": "$: 5001 nodes; a configuration holds at most 5000 (host patterns, origins, cache rules, WAF and traffic-shaping rules together)"}])
    );
    // 5,000 are accepted; sent back in reverse order, every node keeps its read-only part.
    config["cache_rules"].as_array_mut().unwrap().pop();
    let reply = app.send(put(&config, doc["etag"].as_str().unwrap())).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let stored = reply.body["config"].clone();
    let mut reversed = stored.clone();
    reversed["cache_rules"].as_array_mut().unwrap().reverse();
    let reply = app.send(put(&reversed, reply.body["etag"].as_str().unwrap())).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["config"]["cache_rules"], reversed["cache_rules"]);
    let diff = app
        .send(req(Method::GET, "/acme/v1/properties/shop/config/diff?from=2&to=3").basic("alice", PASSWORD).done())
        .await;
    assert_eq!(diff.body.as_array().unwrap().len(), 1, "only the order changed");
}
