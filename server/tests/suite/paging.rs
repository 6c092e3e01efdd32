//! Every paged collection answers the same way: `page` and `count` checked alike, and the page's address and its
//! neighbours' repeat the filters that were sent (percent-encoded), with the ends in the shape each contract fixes
//! (null in the paged envelopes, blank in roles and identity sources, none in users).

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

async fn get(app: &TestApp, path: &str) -> Value {
    let reply = app.send(req(Method::GET, &format!("/acme/v1{path}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.body);
    reply.body
}

fn ends(body: &Value) -> (Value, Value, Value) {
    (body["uri"].clone(), body["prev_uri"].clone(), body["next_uri"].clone())
}

#[tokio::test]
async fn page_addresses_repeat_the_filters_sent_and_end_as_each_contract_says() {
    let app = TestApp::new().await;
    app.add_user("acme", "bob", "viewer").await;
    app.add_user("acme", "carol", "viewer").await;
    for name in ["one", "two"] {
        let body = json!({"name": name, "type": "IP", "list": ["192.0.2.1", "192.0.2.2"]});
        let reply = app
            .send(req(Method::POST, "/acme/v1/config/networklists").basic("alice", PASSWORD).json(&body).done())
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }

    // bob and carol, whose full names the fixture makes "… Example" (the administrator's is not).
    let users = get(&app, "/users?count=1&q=%20Example%20").await;
    assert_eq!(
        (&users["uri"], &users["has_more"], &users["total"], &users["page_index"]),
        (&json!("/acme/v1/users?page=1&count=1&q=Example"), &json!(true), &json!(2), &json!(1))
    );
    assert!(users.get("next_uri").is_none(), "users have no neighbours' addresses");

    let lists = get(&app, "/config/networklists?type=IP&count=1&page=2").await;
    let at = |p: u32| json!(format!("/acme/v1/config/networklists?page={p}&count=1&type=IP"));
    assert_eq!(ends(&lists), (at(2), at(1), Value::Null));
    assert_eq!((&lists["page_count"], &lists["has_more"]), (&json!(2), &json!(false)));
    let deprecated = get(&app, "/config/networklists?deprecated=true").await;
    assert_eq!(deprecated["uri"], "/acme/v1/config/networklists?page=1&count=10&deprecated=true");

    let id = lists["items"][0]["id"].as_str().unwrap().to_string();
    let entries = get(&app, &format!("/config/networklists/{id}/entries?count=1&q=192.0.2")).await;
    let at = |p: u32| json!(format!("/acme/v1/config/networklists/{id}/entries?page={p}&count=1&q=192.0.2"));
    assert_eq!(ends(&entries), (at(1), Value::Null, at(2)));

    let tasks = get(&app, "/tasks?count=1&operation=networklist.deploy&since=2025-01-01T00:00:00Z").await;
    let at = |p: u32| {
        json!(format!("/acme/v1/tasks?page={p}&count=1&since=2025-01-01T00%3A00%3A00Z&operation=networklist.deploy"))
    };
    assert_eq!(ends(&tasks), (at(1), Value::Null, at(2)));

    let audit = get(&app, "/audit?operation=networklist&actor=alice&count=1&page=2").await;
    let at = |p: u32| json!(format!("/acme/v1/audit?page={p}&count=1&actor=alice&operation=networklist"));
    assert_eq!(ends(&audit), (at(2), at(1), Value::Null));

    let roles = get(&app, "/roles?count=2&page=2").await;
    assert_eq!(
        ends(&roles),
        (json!("/acme/v1/roles?page=2&count=2"), json!("/acme/v1/roles?page=1&count=2"), json!(""))
    );
    assert_eq!(
        (&roles["total"], &roles["has_more"], roles["items"].as_array().map(Vec::len)),
        (&json!(3), &json!(false), Some(1))
    );
    let first = get(&app, "/roles?count=2").await;
    assert_eq!((&first["prev_uri"], &first["next_uri"]), (&json!(""), &json!("/acme/v1/roles?page=2&count=2")));
}

#[tokio::test]
async fn page_and_count_are_checked_alike_everywhere() {
    let app = TestApp::new().await;
    for path in ["/users", "/config/networklists", "/tasks", "/audit", "/roles", "/idps"] {
        for query in ["page=0", "count=0", "count=1001"] {
            let reply =
                app.send(req(Method::GET, &format!("/acme/v1{path}?{query}")).basic("alice", PASSWORD).done()).await;
            assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
        }
    }
}
