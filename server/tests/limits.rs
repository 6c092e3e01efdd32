//! Bounded work and bounded answers whatever the input: error details are capped, configurations have a node
//! cap, and so on (issue 9's review findings, each with the request that showed it).

mod common;

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
