//! Roles, identity sources, and the permission matrix of each role through the router.

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::json;

#[tokio::test]
async fn roles_are_listed_in_the_paged_envelope() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::GET, "/acme/v1/roles").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(
        reply.body,
        json!({
            "total": 3, "page_index": 1, "has_more": false, "next_uri": "", "prev_uri": "",
            "uri": "/acme/v1/roles?page=1&count=100",
            "items": [
                {"id": "admin", "uri": "/acme/v1/roles/admin"},
                {"id": "operator", "uri": "/acme/v1/roles/operator"},
                {"id": "viewer", "uri": "/acme/v1/roles/viewer"}
            ]
        })
    );
    let reply = app.send(req(Method::GET, "/acme/v1/roles?page=2&count=1").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["items"], json!([{"id": "operator", "uri": "/acme/v1/roles/operator"}]));
    assert_eq!(reply.body["has_more"], true);
    assert_eq!(reply.body["next_uri"], "/acme/v1/roles?page=3&count=1");
    assert_eq!(reply.body["prev_uri"], "/acme/v1/roles?page=1&count=1");
    let reply = app.send(req(Method::GET, "/acme/v1/roles?count=x").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
    let reply = app.send(req(Method::GET, "/acme/v1/roles/operator").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body, json!({"name": "operator", "id": "operator", "uri": "/acme/v1/roles/operator"}));
    let reply = app.send(req(Method::GET, "/acme/v1/roles/root").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::GET, "/acme/v1/roles").done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn the_local_identity_source_always_exists() {
    let app = TestApp::new().await;
    edge_server::admin::add_identity_source(&app.state, "acme", "corp-sso", r#"{"type":"saml"}"#).await.unwrap();
    let reply = app.send(req(Method::GET, "/acme/v1/idps").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 2);
    assert_eq!(reply.body["items"][0], json!({"id": "local", "uri": "/acme/v1/idps/local"}));
    assert_eq!(reply.body["items"][1], json!({"id": "corp-sso", "uri": "/acme/v1/idps/corp-sso"}));
    let reply = app.send(req(Method::GET, "/acme/v1/idps/local").basic("alice", PASSWORD).done()).await;
    assert_eq!(
        reply.body,
        json!({"configuration": {"type": "local", "password_min_length": 12, "otp": "optional"}, "id": "local", "uri": "/acme/v1/idps/local"})
    );
    let reply = app.send(req(Method::GET, "/acme/v1/idps/corp-sso").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["configuration"], json!({"type": "saml"}));
    let reply = app.send(req(Method::GET, "/acme/v1/idps/nope").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    // globex does not see acme's source.
    let reply = app.send(req(Method::GET, "/globex/v1/idps").basic("gina", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 1);
}

/// Each role against the identity operations: (method, path, expected status for admin, operator, viewer).
#[tokio::test]
async fn each_role_is_allowed_and_refused_per_the_matrix() {
    let app = TestApp::new().await;
    app.add_user("acme", "olga", "operator").await;
    app.add_user("acme", "vic", "viewer").await;
    let target = app.add_user("acme", "tom", "viewer").await;
    let cases: Vec<(Method, String, Option<serde_json::Value>, [u16; 3])> = vec![
        (Method::GET, "/acme/v1/users".into(), None, [200, 403, 403]),
        (
            Method::POST,
            "/acme/v1/users".into(),
            Some(json!({"username": "x", "password": PASSWORD, "role": {"id": "viewer"}})),
            [201, 403, 403],
        ),
        (Method::GET, format!("/acme/v1/users/{target}"), None, [200, 403, 403]),
        (Method::PUT, format!("/acme/v1/users/{target}"), Some(json!({"full_name": "T"})), [200, 403, 403]),
        (Method::GET, "/acme/v1/roles".into(), None, [200, 403, 403]),
        (Method::GET, "/acme/v1/roles/admin".into(), None, [200, 403, 403]),
        (Method::GET, "/acme/v1/idps".into(), None, [200, 403, 403]),
        (Method::GET, "/acme/v1/idps/local".into(), None, [200, 403, 403]),
        (Method::DELETE, format!("/acme/v1/users/{target}/otp/pairing"), None, [200, 403, 403]),
        (Method::POST, format!("/acme/v1/users/{target}/password/resets"), None, [204, 403, 403]),
        (Method::DELETE, format!("/acme/v1/users/{target}"), None, [204, 403, 403]),
    ];
    // The refusals first (they change nothing), then the administrator.
    for (i, user) in [(1, "olga"), (2, "vic"), (0, "alice")] {
        for (method, path, body, expected) in &cases {
            let r = req(method.clone(), path).basic(user, PASSWORD);
            let r = match body {
                Some(b) => r.json(b),
                None => r,
            };
            let reply = app.send(r.done()).await;
            assert_eq!(reply.status.as_u16(), expected[i], "{user} {method} {path}: {}", reply.body);
            if expected[i] == 403 {
                assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
            }
        }
    }
    // Everyone reads themselves and their own password model.
    for user in ["olga", "vic"] {
        let id = app.user_id("acme", user).await;
        for path in [format!("/acme/v1/users/{id}"), format!("/acme/v1/users/{id}/password")] {
            let reply = app.send(req(Method::GET, &path).basic(user, PASSWORD).done()).await;
            assert_eq!(reply.status, StatusCode::OK, "{user} {path}");
        }
    }
}

/// Every identity operation refuses a request without credentials with 401 and the error body (or, for the
/// current-session operations, 404 as the API states; the reset completion needs no login).
#[tokio::test]
async fn every_operation_without_credentials_is_401() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let ops = [
        (Method::GET, "/acme/v1/users".to_string()),
        (Method::POST, "/acme/v1/users".to_string()),
        (Method::GET, format!("/acme/v1/users/{bob}")),
        (Method::PUT, format!("/acme/v1/users/{bob}")),
        (Method::DELETE, format!("/acme/v1/users/{bob}")),
        (Method::GET, format!("/acme/v1/users/{bob}/otp")),
        (Method::GET, format!("/acme/v1/users/{bob}/otp/pairing")),
        (Method::PUT, format!("/acme/v1/users/{bob}/otp/pairing")),
        (Method::DELETE, format!("/acme/v1/users/{bob}/otp/pairing")),
        (Method::POST, format!("/acme/v1/users/{bob}/otp/seeds")),
        (Method::GET, format!("/acme/v1/users/{bob}/password")),
        (Method::PUT, format!("/acme/v1/users/{bob}/password")),
        (Method::POST, format!("/acme/v1/users/{bob}/password/resets")),
        (Method::GET, "/acme/v1/roles".to_string()),
        (Method::GET, "/acme/v1/roles/admin".to_string()),
        (Method::GET, "/acme/v1/idps".to_string()),
        (Method::GET, "/acme/v1/idps/local".to_string()),
        (Method::GET, "/acme/v1/sessions/x".to_string()),
        (Method::PUT, "/acme/v1/sessions/x".to_string()),
        (Method::DELETE, "/acme/v1/sessions/x".to_string()),
        (Method::PUT, "/acme/v1/sessions/current".to_string()),
    ];
    for (method, path) in ops {
        let reply = app.send(req(method.clone(), &path).json(&json!({})).done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
        // An expired session is 401 too.
        let reply = app.send(req(method.clone(), &path).cookie("expired-or-unknown").json(&json!({})).done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "session_invalid");
    }
}
