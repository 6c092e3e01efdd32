//! Passwords through the router: read, change with Basic credentials, reset by an administrator through the
//! outbox, completion with the token.

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::json;

const NEW_PASSWORD: &str = "a-brand-new-password";

#[tokio::test]
async fn the_password_model_is_empty_and_only_ones_own() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let session = app.login("acme", "bob", PASSWORD).await;
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}/password")).cookie(&session).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let uri = format!("/acme/v1/users/{bob}/password");
    assert_eq!(reply.body, json!({"password": "", "reset_uri": format!("{uri}/resets"), "uri": uri}));
    let reply =
        app.send(req(Method::GET, &format!("/acme/v1/users/{bob}/password")).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
}

#[tokio::test]
async fn changing_a_password_needs_basic_credentials_and_ends_sessions() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let session = app.login("acme", "bob", PASSWORD).await;
    let uri = format!("/acme/v1/users/{bob}/password");
    let body = json!({"password": NEW_PASSWORD});
    let reply = app.send(req(Method::PUT, &uri).cookie(&session).json(&body).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "password_required");
    let reply = app.send(req(Method::PUT, &uri).json(&body).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
    // Basic credentials of someone else (even an administrator) are not the user's: 401.
    let reply = app.send(req(Method::PUT, &uri).basic("alice", PASSWORD).json(&body).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "password_required");
    for weak in ["short", "bob"] {
        let reply =
            app.send(req(Method::PUT, &uri).basic("bob", PASSWORD).json(&json!({"password": weak})).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "password_policy");
    }
    let reply = app.send(req(Method::PUT, &uri).basic("bob", PASSWORD).raw("application/json", "{").done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_json");

    let reply = app.send(req(Method::PUT, &uri).basic("bob", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["password"], "");
    let reply = app.send(req(Method::GET, "/acme/v1/sessions/current").cookie(&session).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    app.login("acme", "bob", NEW_PASSWORD).await;
}

#[tokio::test]
async fn changing_a_password_from_a_console_keeps_that_consoles_session_only() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let console = app.login("acme", "bob", PASSWORD).await;
    let elsewhere = app.login("acme", "bob", PASSWORD).await;
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/users/{bob}/password"))
                .basic("bob", PASSWORD)
                .cookie(&console)
                .json(&json!({"password": NEW_PASSWORD}))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = app.send(req(Method::GET, "/acme/v1/sessions/current").cookie(&console).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let reply = app.send(req(Method::GET, "/acme/v1/sessions/current").cookie(&elsewhere).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn remote_users_have_no_password_resource() {
    let app = TestApp::new().await;
    edge_server::admin::add_identity_source(&app.state, "acme", "corp-sso", "{}").await.unwrap();
    let body = json!({"username": "rita@example.com", "role": {"id": "viewer"}, "source": {"id": "corp-sso"}});
    let reply = app.send(req(Method::POST, "/acme/v1/users").basic("alice", PASSWORD).json(&body).done()).await;
    let rita = reply.body["id"].as_str().unwrap();
    let reply = app
        .send(req(Method::POST, &format!("/acme/v1/users/{rita}/password/resets")).basic("alice", PASSWORD).done())
        .await;
    assert_error(&reply, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    let reply =
        app.send(req(Method::GET, &format!("/acme/v1/users/{rita}/password")).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/users/{rita}/password"))
                .basic("alice", PASSWORD)
                .json(&json!({"password": NEW_PASSWORD}))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    let reply = app.send(req(Method::GET, "/acme/v1/users/nosuch/password").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

fn outbox(app: &TestApp) -> Vec<String> {
    let dir = app.dir.path().join("data/outbox");
    let mut mails: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok()).collect())
        .unwrap_or_default();
    mails.sort();
    mails
}

fn token_of(mail: &str) -> String {
    let at = mail.find("token=").expect("a link with a token");
    mail[at + 6..].chars().take_while(char::is_ascii_alphanumeric).collect()
}

#[tokio::test]
async fn a_reset_invalidates_the_password_and_mails_a_single_use_link() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let session = app.login("acme", "bob", PASSWORD).await;
    let uri = format!("/acme/v1/users/{bob}/password/resets");
    let reply = app.send(req(Method::POST, &uri).basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let reply = app.send(req(Method::POST, &uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);

    // The password and the sessions stop working at once.
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    let reply = app.send(req(Method::GET, "/acme/v1/sessions/current").cookie(&session).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");

    let mails = outbox(&app);
    assert_eq!(mails.len(), 1);
    let mail = &mails[0];
    assert!(mail.contains("To: bob@example.com\r\n"), "{mail}");
    assert!(mail.contains("https://console.example/reset-password?customer=acme&token="), "{mail}");
    let token = token_of(mail);
    assert_eq!(token.len(), 64);

    let complete = |password: &str| {
        req(Method::PUT, &format!("/acme/v1/password-resets/{token}")).json(&json!({"password": password})).done()
    };
    // A password against the policy keeps the link usable.
    assert_error(&app.send(complete("short")).await, StatusCode::BAD_REQUEST, "password_policy");
    // The token belongs to acme only.
    let reply = app
        .send(
            req(Method::PUT, &format!("/globex/v1/password-resets/{token}"))
                .json(&json!({"password": NEW_PASSWORD}))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(complete(NEW_PASSWORD)).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    app.login("acme", "bob", NEW_PASSWORD).await;
    // Single use.
    assert_error(&app.send(complete("yet-another-password")).await, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn a_reset_link_expires_after_an_hour() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let reply = app
        .send(req(Method::POST, &format!("/acme/v1/users/{bob}/password/resets")).basic("alice", PASSWORD).done())
        .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let token = token_of(&outbox(&app)[0]);
    app.clock.advance_ms(60 * 60 * 1000);
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/password-resets/{token}"))
                .json(&json!({"password": NEW_PASSWORD}))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn a_reset_needs_an_email_address() {
    let app = TestApp::new().await;
    let body = json!({"username": "noemail", "password": PASSWORD, "role": {"id": "viewer"}});
    let reply = app.send(req(Method::POST, "/acme/v1/users").basic("alice", PASSWORD).json(&body).done()).await;
    let id = reply.body["id"].as_str().unwrap();
    let reply = app
        .send(req(Method::POST, &format!("/acme/v1/users/{id}/password/resets")).basic("alice", PASSWORD).done())
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "no_email");
    app.login("acme", "noemail", PASSWORD).await;
    let reply =
        app.send(req(Method::POST, "/acme/v1/users/nosuch/password/resets").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}
