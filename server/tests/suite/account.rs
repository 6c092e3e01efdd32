//! The account and its features through the router.

use crate::common;

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
    // A name shaped like a zone but not in the IANA database is refused too, naming the field.
    for zone in ["Europe/Springfield", "europe/berlin", "Asia/Kolkata "] {
        let reply = app
            .send(req(Method::PUT, "/acme/v1/account").basic("alice", PASSWORD).json(&json!({"timezone": zone})).done())
            .await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_account");
        assert!(reply.body["details"][0]["message"].as_str().unwrap().starts_with("timezone: "), "{}", reply.body);
    }
    let reply = app
        .send(
            req(Method::PUT, "/acme/v1/account")
                .basic("alice", PASSWORD)
                .json(&json!({"timezone": "Asia/Kolkata"}))
                .done(),
        )
        .await;
    assert_eq!(reply.body["timezone"], "Asia/Kolkata");
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
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
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

/// The API answers 404 to a `PUT /account` of an issuer that may not change it: operators and viewers.
#[tokio::test]
async fn only_an_administrator_changes_the_account_and_anyone_else_gets_404() {
    let app = TestApp::new().await;
    app.add_user("acme", "olga", "operator").await;
    app.add_user("acme", "vic", "viewer").await;
    for user in ["olga", "vic"] {
        let reply = app
            .send(req(Method::PUT, "/acme/v1/account").basic(user, PASSWORD).json(&json!({"display_name": "x"})).done())
            .await;
        assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    }
    let reply = app.send(req(Method::GET, "/acme/v1/account").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["display_name"], "acme", "nothing changed");
}

/// Partial updates of different fields at the same time all take effect: each request writes only its fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_partial_account_updates_keep_every_field() {
    let app = std::sync::Arc::new(TestApp::new().await);
    for round in 0..8 {
        let bodies = [
            json!({"display_name": format!("Acme {round}")}),
            json!({"contact_email": format!("noc{round}@acme.example")}),
            json!({"timezone": if round % 2 == 0 { "Europe/Berlin" } else { "America/New_York" }}),
        ];
        let sends = bodies.into_iter().map(|body| {
            let app = app.clone();
            tokio::spawn(async move {
                app.send(req(Method::PUT, "/acme/v1/account").basic("alice", PASSWORD).json(&body).done()).await.status
            })
        });
        for send in sends.collect::<Vec<_>>() {
            assert_eq!(send.await.unwrap(), StatusCode::OK);
        }
        let reply = app.send(req(Method::GET, "/acme/v1/account").basic("alice", PASSWORD).done()).await;
        assert_eq!(reply.body["display_name"], format!("Acme {round}"), "round {round}");
        assert_eq!(reply.body["contact_email"], format!("noc{round}@acme.example"), "round {round}");
        assert_eq!(
            reply.body["timezone"],
            if round % 2 == 0 { "Europe/Berlin" } else { "America/New_York" },
            "round {round}"
        );
    }
}
