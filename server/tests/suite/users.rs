//! Users through the real router: list, create, read, update, delete, with validation and tenant isolation.

use crate::common;

use axum::http::{Method, StatusCode, header};
use common::*;
use serde_json::json;

#[tokio::test]
async fn admin_lists_users_a_page_at_a_time_with_totals() {
    let app = TestApp::new().await;
    for name in ["bob", "carol", "dave"] {
        app.add_user("acme", name, "viewer").await;
    }
    let reply = app.send(req(Method::GET, "/acme/v1/users?page=1&count=2").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["total"], 4);
    assert_eq!(reply.body["page_index"], 1);
    assert_eq!(reply.body["has_more"], true);
    assert_eq!(reply.body["uri"], "/acme/v1/users?page=1&count=2");
    let names: Vec<_> = reply.body["items"].as_array().unwrap().iter().map(|u| u["username"].clone()).collect();
    assert_eq!(names, [json!("alice"), json!("bob")]);
    let reply = app.send(req(Method::GET, "/acme/v1/users?page=2&count=2").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["has_more"], false);
    let names: Vec<_> = reply.body["items"].as_array().unwrap().iter().map(|u| u["username"].clone()).collect();
    assert_eq!(names, [json!("carol"), json!("dave")]);
}

#[tokio::test]
async fn listing_searches_username_and_full_name() {
    let app = TestApp::new().await;
    app.add_user("acme", "bob", "viewer").await;
    app.add_user("acme", "carol", "viewer").await;
    let reply = app.send(req(Method::GET, "/acme/v1/users?q=CAR").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 1);
    assert_eq!(reply.body["items"][0]["username"], "carol");
    let reply = app.send(req(Method::GET, "/acme/v1/users?q=%25").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 0, "% is a literal character, not a wildcard");
}

#[tokio::test]
async fn bad_paging_parameters_are_400() {
    let app = TestApp::new().await;
    for query in ["page=0", "count=0", "count=1001", "page=abc", "count=-1"] {
        let reply =
            app.send(req(Method::GET, &format!("/acme/v1/users?{query}")).basic("alice", PASSWORD).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
    }
}

#[tokio::test]
async fn creating_a_local_user_returns_it_without_any_password_and_it_can_log_in() {
    let app = TestApp::new().await;
    let body = json!({
        "username": "bob@example.com", "password": PASSWORD, "full_name": "Bob Builder",
        "email": "bob@example.com", "phone_number": "+44 20 7946 0958", "role": {"id": "operator"}
    });
    let reply = app.send(req(Method::POST, "/acme/v1/users").basic("alice", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let id = reply.body["id"].as_str().unwrap();
    let uri = format!("/acme/v1/users/{id}");
    assert_eq!(reply.headers.get(header::LOCATION).unwrap(), uri.as_str());
    assert_eq!(
        reply.body,
        json!({
            "id": id, "uri": uri, "username": "bob@example.com", "full_name": "Bob Builder",
            "email": "bob@example.com", "phone_number": "+44 20 7946 0958", "enabled": true,
            "role": {"id": "operator", "uri": "/acme/v1/roles/operator"},
            "source": {"id": "local", "uri": "/acme/v1/idps/local"},
            "otp_enabled": false, "otp_uri": format!("{uri}/otp"), "password_uri": format!("{uri}/password")
        })
    );
    assert!(!String::from_utf8_lossy(&reply.raw).contains(PASSWORD));
    app.login("acme", "bob@example.com", PASSWORD).await;
}

#[tokio::test]
async fn creating_refuses_invalid_users_listing_every_problem() {
    let app = TestApp::new().await;
    let body = json!({"username": "bob", "password": PASSWORD, "email": "not-an-email", "phone_number": "call me", "role": {"id": "viewer"}});
    let reply = app.send(req(Method::POST, "/acme/v1/users").basic("alice", PASSWORD).json(&body).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_user");
    let details: Vec<_> =
        reply.body["details"].as_array().unwrap().iter().map(|d| d["message"].as_str().unwrap()).collect();
    assert_eq!(details.len(), 2, "{details:?}");
    assert!(details[0].starts_with("email:") && details[1].starts_with("phone_number:"), "{details:?}");

    let cases = [
        (json!({"username": "bob", "password": PASSWORD}), "invalid_user"),
        (json!({"username": "bob", "password": PASSWORD, "role": {"id": "root"}}), "invalid_user"),
        (json!({"username": "", "password": PASSWORD, "role": {"id": "viewer"}}), "invalid_user"),
        (json!({"username": "a:b", "password": PASSWORD, "role": {"id": "viewer"}}), "invalid_user"),
        (json!({"username": "bob", "role": {"id": "viewer"}}), "invalid_user"),
        (json!({"username": "bob", "password": "short", "role": {"id": "viewer"}}), "password_policy"),
        (
            json!({"username": "bob-the-builder", "password": "bob-the-builder", "role": {"id": "viewer"}}),
            "password_policy",
        ),
        (json!({"username": "alice", "password": PASSWORD, "role": {"id": "viewer"}}), "username_taken"),
        (
            json!({"username": "bob", "password": PASSWORD, "role": {"id": "viewer"}, "source": {"id": "ldap"}}),
            "unknown_source",
        ),
        (json!({"username": 5}), "invalid_json"),
    ];
    for (body, kind) in cases {
        let reply = app.send(req(Method::POST, "/acme/v1/users").basic("alice", PASSWORD).json(&body).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, kind);
    }
    let reply = app.send(req(Method::GET, "/acme/v1/users").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 1, "nothing was created");
}

#[tokio::test]
async fn a_remote_user_holds_only_a_role() {
    let app = TestApp::new().await;
    edge_server::admin::add_identity_source(&app.state, "acme", "corp-sso", r#"{"type": "saml"}"#).await.unwrap();
    let body = json!({"username": "remote.rita", "role": {"id": "viewer"}, "source": {"id": "corp-sso"}});
    let reply = app.send(req(Method::POST, "/acme/v1/users").basic("alice", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["source"]["id"], "corp-sso");
    assert_eq!(reply.body["full_name"], "");
    let id = reply.body["id"].as_str().unwrap().to_string();

    let body = json!({"username": "remote.rob", "password": PASSWORD, "full_name": "Rob", "role": {"id": "viewer"}, "source": {"id": "corp-sso"}});
    let reply = app.send(req(Method::POST, "/acme/v1/users").basic("alice", PASSWORD).json(&body).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_user");

    // Only the role changes.
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/users/{id}"))
                .basic("alice", PASSWORD)
                .json(&json!({"role": {"id": "operator"}}))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["role"]["id"], "operator");
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/users/{id}"))
                .basic("alice", PASSWORD)
                .json(&json!({"full_name": "Rita"}))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_user");
    // A remote user cannot log in with a password.
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("remote.rita", "").done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
}

#[tokio::test]
async fn reading_a_user_answers_the_envelope_and_anyone_may_read_themselves() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}")).basic("bob", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["has_more"], false);
    assert_eq!(reply.body["uri"], format!("/acme/v1/users/{bob}"));
    assert_eq!(reply.body["items"][0]["username"], "bob");
    let alice = app.user_id("acme", "alice").await;
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{alice}")).basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let reply = app.send(req(Method::GET, "/acme/v1/users/nosuchuser").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn updating_changes_details_and_role_and_accepts_the_user_sent_back_as_read() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let uri = format!("/acme/v1/users/{bob}");
    let change = json!({"full_name": "Robert", "email": "robert@example.com", "role": {"id": "operator"}});
    let reply = app.send(req(Method::PUT, &uri).basic("alice", PASSWORD).json(&change).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["full_name"], "Robert");
    assert_eq!(reply.body["role"]["id"], "operator");
    let read = reply.body.clone();
    let reply = app.send(req(Method::PUT, &uri).basic("alice", PASSWORD).json(&read).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, read);

    for (body, kind) in [
        (json!({"password": "a-new-password-123"}), "invalid_user"),
        (json!({"email": "nope"}), "invalid_user"),
        (json!({"source": {"id": "corp-sso"}}), "invalid_user"),
        (json!({"role": {"id": "root"}}), "invalid_user"),
        (json!({"username": "alice"}), "username_taken"),
    ] {
        let reply = app.send(req(Method::PUT, &uri).basic("alice", PASSWORD).json(&body).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, kind);
    }
    let reply =
        app.send(req(Method::PUT, "/acme/v1/users/nosuchuser").basic("alice", PASSWORD).json(&change).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn the_last_enabled_administrator_cannot_be_demoted_disabled_or_deleted() {
    let app = TestApp::new().await;
    let alice = app.user_id("acme", "alice").await;
    let uri = format!("/acme/v1/users/{alice}");
    for body in [json!({"role": {"id": "viewer"}}), json!({"enabled": false})] {
        let reply = app.send(req(Method::PUT, &uri).basic("alice", PASSWORD).json(&body).done()).await;
        assert_error(&reply, StatusCode::CONFLICT, "last_admin");
    }
    let reply = app.send(req(Method::DELETE, &uri).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::CONFLICT, "last_admin");
    // With a second administrator it works.
    app.add_user("acme", "adam", "admin").await;
    let reply =
        app.send(req(Method::PUT, &uri).basic("adam", PASSWORD).json(&json!({"role": {"id": "viewer"}})).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn disabling_a_user_ends_its_sessions_and_refuses_its_logins() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let session = app.login("acme", "bob", PASSWORD).await;
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/users/{bob}"))
                .basic("alice", PASSWORD)
                .json(&json!({"enabled": false}))
                .done(),
        )
        .await;
    assert_eq!(reply.body["enabled"], false);
    let reply = app.send(req(Method::GET, "/acme/v1/sessions/current").cookie(&session).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
}

#[tokio::test]
async fn deleting_a_user_removes_it_and_its_sessions() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let session = app.login("acme", "bob", PASSWORD).await;
    let reply = app.send(req(Method::DELETE, &format!("/acme/v1/users/{bob}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert!(reply.raw.is_empty());
    let reply = app.send(req(Method::DELETE, &format!("/acme/v1/users/{bob}")).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::GET, "/acme/v1/sessions/current").cookie(&session).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn users_of_one_customer_are_invisible_to_another_by_path_and_by_id() {
    let app = TestApp::new().await;
    let gina = app.user_id("globex", "gina").await;
    // By id under one's own customer: not found.
    for (method, body) in [(Method::GET, None), (Method::PUT, Some(json!({"full_name": "x"}))), (Method::DELETE, None)]
    {
        let r = req(method.clone(), &format!("/acme/v1/users/{gina}")).basic("alice", PASSWORD);
        let r = match body {
            Some(b) => r.json(&b),
            None => r,
        };
        assert_error(&app.send(r.done()).await, StatusCode::NOT_FOUND, "not_found");
    }
    // Under the other customer's path: credentials do not exist there; a session answers as if nothing existed.
    let reply = app.send(req(Method::GET, "/globex/v1/users").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    let alice_session = app.login("acme", "alice", PASSWORD).await;
    let reply = app.send(req(Method::GET, "/globex/v1/users").cookie(&alice_session).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::GET, &format!("/globex/v1/users/{gina}")).cookie(&alice_session).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    // gina still exists, untouched.
    let reply = app.send(req(Method::GET, &format!("/globex/v1/users/{gina}")).basic("gina", PASSWORD).done()).await;
    assert_eq!(reply.body["items"][0]["full_name"], "Administrator");
}
