//! Two-factor authentication end to end through the router: seed, pairing, login with a code, replay
//! refused, Basic alone refused, disabling by an administrator.

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use edge_server::otp::{code_at, step_of};
use serde_json::{Value, json};

async fn seed(app: &TestApp, user: &str, id: &str) -> Value {
    let reply =
        app.send(req(Method::POST, &format!("/acme/v1/users/{id}/otp/seeds")).basic(user, PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body
}

/// Pairs `user` with codes of the previous and the current step; returns the secret.
async fn pair(app: &TestApp, user: &str, id: &str) -> String {
    let seed = seed(app, user, id).await;
    let secret = seed["seed"].as_str().unwrap().to_string();
    let step = step_of(now(app));
    let body = json!({
        "seed_id": seed["id"],
        "first_token": code_at(&secret, step - 1).unwrap(),
        "second_token": code_at(&secret, step).unwrap(),
    });
    let reply = app
        .send(req(Method::PUT, &format!("/acme/v1/users/{id}/otp/pairing")).basic(user, PASSWORD).json(&body).done())
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    secret
}

fn now(app: &TestApp) -> i64 {
    use edge_server::clock::Clock;
    app.clock.now_ms()
}

#[tokio::test]
async fn seed_pairing_login_with_a_code_and_replay_refused() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "operator").await;
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}/otp")).basic("bob", PASSWORD).done()).await;
    assert_eq!(
        reply.body,
        json!({
            "pairing_uri": format!("/acme/v1/users/{bob}/otp/pairing"), "uri": format!("/acme/v1/users/{bob}/otp"),
            "enabled": false, "seeds_uri": format!("/acme/v1/users/{bob}/otp/seeds")
        })
    );
    let seed_body = seed(&app, "bob", &bob).await;
    let secret = seed_body["seed"].as_str().unwrap();
    assert_eq!(secret.len(), 32, "160-bit base32 secret");
    let step = step_of(now(&app));

    // Wrong, reversed or non-sequential codes do not pair.
    for (first, second) in [
        ("000000".to_string(), "000000".to_string()),
        (code_at(secret, step).unwrap(), code_at(secret, step - 1).unwrap()),
        (code_at(secret, step - 3).unwrap(), code_at(secret, step - 2).unwrap()),
    ] {
        let body = json!({"seed_id": seed_body["id"], "first_token": first, "second_token": second});
        let reply = app
            .send(
                req(Method::PUT, &format!("/acme/v1/users/{bob}/otp/pairing"))
                    .basic("bob", PASSWORD)
                    .json(&body)
                    .done(),
            )
            .await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_tokens");
    }
    let body = json!({"seed_id": "nope", "first_token": "1", "second_token": "2"});
    let reply = app
        .send(req(Method::PUT, &format!("/acme/v1/users/{bob}/otp/pairing")).basic("bob", PASSWORD).json(&body).done())
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_seed");

    let body = json!({
        "seed_id": seed_body["id"],
        "first_token": code_at(secret, step - 1).unwrap(),
        "second_token": code_at(secret, step).unwrap(),
    });
    let reply = app
        .send(req(Method::PUT, &format!("/acme/v1/users/{bob}/otp/pairing")).basic("bob", PASSWORD).json(&body).done())
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}/otp")).basic("bob", PASSWORD).done()).await;
    assert_eq!(reply.body["enabled"], true);
    // With two-factor on, changing one's own two-factor resources needs the code too.
    let reply =
        app.send(req(Method::POST, &format!("/acme/v1/users/{bob}/otp/seeds")).basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");

    // Login now needs a code.
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    let reply = app
        .send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).header("X-OTP-Token", "123456").done())
        .await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_invalid");
    // The pairing's own codes are used up.
    let used = code_at(secret, step).unwrap();
    let reply = app
        .send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).header("X-OTP-Token", &used).done())
        .await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_invalid");
    let next = code_at(secret, step + 1).unwrap();
    let reply = app
        .send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).header("X-OTP-Token", &next).done())
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let session = reply.body["id"].as_str().unwrap().to_string();
    // The same code a second time: replay refused.
    let reply = app
        .send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).header("X-OTP-Token", &next).done())
        .await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_invalid");
    // A wrong password with a right code is still a wrong password.
    app.clock.advance_ms(60_000);
    let code = code_at(secret, step_of(now(&app))).unwrap();
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/sessions").basic("bob", "wrong-password-1").header("X-OTP-Token", &code).done(),
        )
        .await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");

    // The session works; Basic alone does not, except for the user's own two-factor and password resources.
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}")).cookie(&session).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}")).basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}/otp")).basic("bob", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn two_factor_resources_need_the_users_own_password() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let session = app.login("acme", "bob", PASSWORD).await;
    for (method, path) in [(Method::GET, "otp"), (Method::GET, "otp/pairing"), (Method::POST, "otp/seeds")] {
        let uri = format!("/acme/v1/users/{bob}/{path}");
        let reply = app.send(req(method.clone(), &uri).cookie(&session).done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "password_required");
        // Not even an administrator can use another user's: it needs that user's own password.
        let reply = app.send(req(method.clone(), &uri).basic("alice", PASSWORD).done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "password_required");
        let reply = app
            .send(req(method.clone(), &format!("/acme/v1/users/nosuch/{path}")).basic("alice", PASSWORD).done())
            .await;
        assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
        let reply = app.send(req(method, &uri).done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
    }
    let reply =
        app.send(req(Method::GET, &format!("/acme/v1/users/{bob}/otp/pairing")).basic("bob", PASSWORD).done()).await;
    assert_eq!(
        reply.body,
        json!({"first_token": "", "second_token": "", "seed_id": "", "uri": format!("/acme/v1/users/{bob}/otp/pairing")})
    );
}

#[tokio::test]
async fn a_seed_expires_after_15_minutes() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let seed_body = seed(&app, "bob", &bob).await;
    app.clock.advance_ms(15 * 60 * 1000);
    let secret = seed_body["seed"].as_str().unwrap();
    let step = step_of(now(&app));
    let body = json!({
        "seed_id": seed_body["id"],
        "first_token": code_at(secret, step - 1).unwrap(),
        "second_token": code_at(secret, step).unwrap(),
    });
    let reply = app
        .send(req(Method::PUT, &format!("/acme/v1/users/{bob}/otp/pairing")).basic("bob", PASSWORD).json(&body).done())
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_seed");
}

#[tokio::test]
async fn only_an_administrator_disables_two_factor() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "operator").await;
    pair(&app, "bob", &bob).await;
    let uri = format!("/acme/v1/users/{bob}/otp/pairing");
    let reply = app.send(req(Method::DELETE, &uri).basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    app.add_user("acme", "olga", "operator").await;
    let reply = app.send(req(Method::DELETE, &uri).basic("olga", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let reply = app.send(req(Method::DELETE, &uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["enabled"], false);
    // No effect when already disabled.
    let reply = app.send(req(Method::DELETE, &uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply =
        app.send(req(Method::DELETE, "/acme/v1/users/nosuch/otp/pairing").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    app.login("acme", "bob", PASSWORD).await;
}

async fn otp_enabled(app: &TestApp, user_uri: &str, session: &str) -> Value {
    let reply = app.send(req(Method::GET, user_uri).cookie(session).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["items"][0]["otp_enabled"].clone()
}

/// Issue 25: an administrator turned off their own two-factor from a session with no re-authentication. Now
/// their password and a current code must come with the request; a session alone, or the password alone, is
/// refused and two-factor stays on. Another user's two-factor is still theirs to turn off from a session.
#[tokio::test]
async fn turning_off_ones_own_two_factor_needs_the_password_and_a_code_again() {
    let app = TestApp::new().await;
    let alice = app.user_id("acme", "alice").await;
    let secret = pair(&app, "alice", &alice).await;
    let uri = format!("/acme/v1/users/{alice}/otp/pairing");
    app.clock.advance_ms(30_000);
    let code = code_at(&secret, step_of(now(&app))).unwrap();
    let reply = app
        .send(req(Method::POST, "/acme/v1/sessions").basic("alice", PASSWORD).header("X-OTP-Token", &code).done())
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let session = reply.body["id"].as_str().unwrap().to_string();
    let user_uri = format!("/acme/v1/users/{alice}");
    // From the session: refused, two-factor stays on.
    let reply = app.send(req(Method::DELETE, &uri).cookie(&session).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "password_required");
    assert_eq!(otp_enabled(&app, &user_uri, &session).await, json!(true));
    // The password without a code: refused.
    let reply = app.send(req(Method::DELETE, &uri).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    // A wrong password with a code: refused.
    app.clock.advance_ms(30_000);
    let code = code_at(&secret, step_of(now(&app))).unwrap();
    let reply = app
        .send(req(Method::DELETE, &uri).basic("alice", "wrong-password-1").header("X-OTP-Token", &code).done())
        .await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    assert_eq!(otp_enabled(&app, &user_uri, &session).await, json!(true));
    // The password and a current code: done.
    app.clock.advance_ms(30_000);
    let code = code_at(&secret, step_of(now(&app))).unwrap();
    let reply = app.send(req(Method::DELETE, &uri).basic("alice", PASSWORD).header("X-OTP-Token", &code).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["enabled"], false);
    assert_eq!(otp_enabled(&app, &user_uri, &session).await, json!(false));

    // Another user's two-factor: an administrator's session is enough, as before.
    let bob = app.add_user("acme", "bob", "operator").await;
    pair(&app, "bob", &bob).await;
    let session = app.login("acme", "alice", PASSWORD).await;
    let reply =
        app.send(req(Method::DELETE, &format!("/acme/v1/users/{bob}/otp/pairing")).cookie(&session).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

#[tokio::test]
async fn wrong_codes_are_throttled_like_wrong_passwords() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    pair(&app, "bob", &bob).await;
    // The account's codes lock first (see throttling.rs for many addresses).
    for _ in 0..edge_server::throttle::CODE_LOCK_AFTER {
        let reply = app
            .send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).header("X-OTP-Token", "000000").done())
            .await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    }
    let reply = app
        .send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).header("X-OTP-Token", "000000").done())
        .await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
}

/// Only a complete login clears the failure count: the right password alone, for a user with two-factor on,
/// neither clears it nor counts as a failure, so wrong codes stay limited to five.
#[tokio::test]
async fn the_password_alone_does_not_reset_the_count_of_wrong_codes() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    pair(&app, "bob", &bob).await;
    let wrong_code = || req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).header("X-OTP-Token", "000000");
    for _ in 0..edge_server::throttle::CODE_LOCK_AFTER - 1 {
        assert_error(&app.send(wrong_code().done()).await, StatusCode::UNAUTHORIZED, "otp_invalid");
    }
    // The password alone is accepted for reading the user's own two-factor settings, and a login without a code
    // is asked for one: neither clears the four failures.
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}/otp")).basic("bob", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("bob", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    assert_error(&app.send(wrong_code().done()).await, StatusCode::UNAUTHORIZED, "otp_invalid");
    assert_error(&app.send(wrong_code().done()).await, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
}

/// With two-factor on, Basic credentials alone no longer change the user's password (which would end every
/// session of the real user): the code must come with them.
#[tokio::test]
async fn with_two_factor_on_changing_the_password_needs_the_code() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let secret = pair(&app, "bob", &bob).await;
    let step = step_of(now(&app));
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/sessions")
                .basic("bob", PASSWORD)
                .header("X-OTP-Token", &code_at(&secret, step + 1).unwrap())
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let session = reply.body["id"].as_str().unwrap().to_string();

    let uri = format!("/acme/v1/users/{bob}/password");
    let change = json!({"password": "a brand new password"});
    let reply = app.send(req(Method::PUT, &uri).basic("bob", PASSWORD).json(&change).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}")).cookie(&session).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "the session lives on");
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{bob}/otp")).basic("bob", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "the old password still works");

    app.clock.advance_ms(60_000);
    let code = code_at(&secret, step_of(now(&app))).unwrap();
    let reply =
        app.send(req(Method::PUT, &uri).basic("bob", PASSWORD).header("X-OTP-Token", &code).json(&change).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let reply = app
        .send(req(Method::GET, &format!("/acme/v1/users/{bob}/otp")).basic("bob", "a brand new password").done())
        .await;
    assert_eq!(reply.status, StatusCode::OK);
}
