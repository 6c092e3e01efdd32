//! The account and its features through the router.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::json;

#[tokio::test]
async fn the_account_is_read_and_updated_but_its_name_never_changes() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::GET, "/acme/v1/account").basic("alice", PASSWORD).done()).await;
    assert_eq!(
        reply.body,
        json!({"name": "acme", "display_name": "acme", "contact_email": "", "timezone": "UTC", "created": "2026-01-01T00:00:00.000Z", "uri": "/acme/v1/account"})
    );
    let change = json!({"name": "acme", "display_name": "ACME Corp", "contact_email": "noc@acme.example", "timezone": "Europe/Berlin"});
    let reply = app.send(req(Method::PUT, "/acme/v1/account").basic("alice", PASSWORD).json(&change).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["display_name"], "ACME Corp");
    assert_eq!(reply.body["timezone"], "Europe/Berlin");
    let reply = app
        .send(
            req(Method::PUT, "/acme/v1/account")
                .basic("alice", PASSWORD)
                .json(&json!({"name": null, "display_name": "A"}))
                .done(),
        )
        .await;
    assert_eq!(reply.body["display_name"], "A", "a null name is no change");

    let reply = app
        .send(req(Method::PUT, "/acme/v1/account").basic("alice", PASSWORD).json(&json!({"name": "other"})).done())
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "immutable_field");
    let bad = json!({"contact_email": "nope", "timezone": "Mars/Olympus Mons", "display_name": " "});
    let reply = app.send(req(Method::PUT, "/acme/v1/account").basic("alice", PASSWORD).json(&bad).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_account");
    assert_eq!(reply.body["details"].as_array().unwrap().len(), 3);
    let reply = app.send(req(Method::GET, "/acme/v1/account").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["display_name"], "A", "nothing changed");
}

#[tokio::test]
async fn roles_and_features() {
    let app = TestApp::new().await;
    app.add_user("acme", "olga", "operator").await;
    app.add_user("acme", "vic", "viewer").await;
    let reply = app.send(req(Method::GET, "/acme/v1/account").basic("olga", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = app
        .send(req(Method::PUT, "/acme/v1/account").basic("olga", PASSWORD).json(&json!({"display_name": "x"})).done())
        .await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let reply = app.send(req(Method::GET, "/acme/v1/account").basic("vic", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let reply = app.send(req(Method::GET, "/acme/v1/features").basic("olga", PASSWORD).done()).await;
    let features = reply.body.as_array().unwrap();
    assert!(features.len() >= 5);
    for f in features {
        assert!(
            f["id"].is_string() && f["name"].is_string() && f["description"].is_string() && f["enabled"].is_boolean(),
            "{f}"
        );
    }
    let reply = app.send(req(Method::GET, "/acme/v1/features").done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
}
