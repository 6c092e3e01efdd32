//! Sessions through the real router: login, cookie, current session, keep-alive, expiry, logout, isolation.

use crate::common;

use axum::http::{Method, StatusCode, header};
use common::*;
use edge_server::auth::{SESSION_IDLE_MS, SESSION_MAX_AGE_MS};
use edge_server::clock::Clock;
use serde_json::json;

#[tokio::test]
async fn login_with_basic_credentials_creates_a_session_and_sets_a_strict_http_only_cookie() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let id = reply.body["id"].as_str().unwrap();
    assert!(id.len() >= 22, "at least 128 bits of id: {id}");
    assert_eq!(reply.body["uri"], format!("/acme/v1/sessions/{id}"));
    // Idle expiry: 30 minutes after T0 (2026-01-01T00:00:00Z).
    assert_eq!(reply.body["expires"], "2026-01-01T00:30:00.000Z");
    let user_id = reply.body["user"]["id"].as_str().unwrap();
    assert_eq!(reply.body["user"]["uri"], format!("/acme/v1/users/{user_id}"));
    let cookie = reply.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    assert_eq!(cookie, format!("authtoken={id}; Path=/; HttpOnly; SameSite=Strict"));
}

#[tokio::test]
async fn the_cookie_is_secure_behind_a_tls_proxy() {
    let app = TestApp::new().await;
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/sessions").basic("alice", PASSWORD).header("x-forwarded-proto", "https").done(),
        )
        .await;
    let cookie = reply.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    assert!(cookie.ends_with("; Secure"), "{cookie}");
}

#[tokio::test]
async fn wrong_password_unknown_user_and_unknown_customer_get_the_same_401() {
    let app = TestApp::new().await;
    for (path, user, password) in [
        ("/acme/v1/sessions", "alice", "wrong-password-123"),
        ("/acme/v1/sessions", "nobody", PASSWORD),
        ("/nosuch/v1/sessions", "alice", PASSWORD),
        // alice exists, but at acme: credentials are scoped to the customer in the path.
        ("/globex/v1/sessions", "alice", PASSWORD),
    ] {
        let reply = app.send(req(Method::POST, path).basic(user, password).done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
        assert_eq!(reply.body["message"], "The username or password is wrong.");
        assert!(reply.headers.get(header::SET_COOKIE).is_none());
    }
}

#[tokio::test]
async fn creating_a_session_without_basic_credentials_is_401() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").header("authorization", "Basic !!!").done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn current_session_answers_201_for_a_cookie_and_404_otherwise() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let reply = app.send(req(Method::GET, "/acme/v1/sessions/current").cookie(&id).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    assert_eq!(reply.body["id"], id);

    // Not authenticated; authenticated by Basic rather than a session; a session that does not exist.
    for r in [
        req(Method::GET, "/acme/v1/sessions/current").done(),
        req(Method::GET, "/acme/v1/sessions/current").basic("alice", PASSWORD).done(),
        req(Method::GET, "/acme/v1/sessions/current").cookie("no-such-session").done(),
    ] {
        assert_error(&app.send(r).await, StatusCode::NOT_FOUND, "not_found");
    }
}

#[tokio::test]
async fn a_session_of_one_customer_finds_nothing_under_another() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let reply = app.send(req(Method::GET, &format!("/globex/v1/sessions/{id}")).cookie(&id).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::GET, "/globex/v1/sessions/current").cookie(&id).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    // globex's admin, by id, cannot see acme's session either.
    let gina = app.login("globex", "gina", PASSWORD).await;
    let reply = app.send(req(Method::GET, &format!("/globex/v1/sessions/{id}")).cookie(&gina).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn a_session_idle_for_30_minutes_is_invalid_and_purged() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    app.clock.advance_ms(SESSION_IDLE_MS - 1000);
    let reply = app.send(req(Method::GET, &format!("/acme/v1/sessions/{id}")).cookie(&id).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "still valid just before the idle limit");

    app.clock.advance_ms(SESSION_IDLE_MS);
    let reply = app.send(req(Method::GET, &format!("/acme/v1/sessions/{id}")).cookie(&id).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "session_invalid");
    let stored = app.state.store.session_with_user(&edge_server::auth::token_hash(&id)).await.unwrap();
    assert!(stored.is_none(), "an expired session is removed from storage");
}

#[tokio::test]
async fn keep_alive_extends_the_idle_limit_but_not_past_one_day() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let keep_alive = |id: &str| req(Method::PUT, &format!("/acme/v1/sessions/{id}")).cookie(id).json(&json!({})).done();
    let mut elapsed = 0;
    while elapsed + 20 * 60 * 1000 < SESSION_MAX_AGE_MS {
        app.clock.advance_ms(20 * 60 * 1000);
        elapsed += 20 * 60 * 1000;
        let reply = app.send(keep_alive(&id)).await;
        assert_eq!(reply.status, StatusCode::OK, "alive after {elapsed} ms");
    }
    let reply = app.send(keep_alive(&id)).await;
    assert_eq!(reply.body["expires"], "2026-01-02T00:00:00.000Z", "capped at one day after creation");
    app.clock.advance_ms(SESSION_MAX_AGE_MS - elapsed);
    let reply = app.send(keep_alive(&id)).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "session_invalid");
}

#[tokio::test]
async fn keep_alive_refuses_invalid_json_and_accepts_an_empty_body_or_null() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let reply = app
        .send(req(Method::PUT, &format!("/acme/v1/sessions/{id}")).cookie(&id).raw("application/json", "{").done())
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_json");
    let reply = app.send(req(Method::PUT, &format!("/acme/v1/sessions/{id}")).cookie(&id).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["id"], id);
    // The document says the body is a session model or null (the contract fuzzer sends null).
    let reply = app
        .send(req(Method::PUT, &format!("/acme/v1/sessions/{id}")).cookie(&id).raw("application/json", "null").done())
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["id"], id);
}

#[tokio::test]
async fn logout_ends_the_session_at_once_and_unsets_the_cookie() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let reply = app.send(req(Method::DELETE, "/acme/v1/sessions/current").cookie(&id).done()).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let cookie = reply.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    assert!(cookie.starts_with("authtoken=; ") && cookie.contains("Max-Age=0"), "{cookie}");
    let reply = app.send(req(Method::GET, &format!("/acme/v1/sessions/{id}")).cookie(&id).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "session_invalid");
    let reply = app.send(req(Method::DELETE, "/acme/v1/sessions/current").cookie(&id).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn delete_by_id_ends_that_session_only() {
    let app = TestApp::new().await;
    let first = app.login("acme", "alice", PASSWORD).await;
    let second = app.login("acme", "alice", PASSWORD).await;
    let reply = app.send(req(Method::DELETE, &format!("/acme/v1/sessions/{second}")).cookie(&first).done()).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert!(reply.headers.get(header::SET_COOKIE).is_none(), "the caller's own cookie is untouched");
    let reply = app.send(req(Method::GET, "/acme/v1/sessions/current").cookie(&first).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED);
    let reply = app.send(req(Method::DELETE, &format!("/acme/v1/sessions/{second}")).cookie(&first).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn put_current_makes_a_session_current_and_sets_its_cookie() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let reply = app
        .send(req(Method::PUT, "/acme/v1/sessions/current").basic("alice", PASSWORD).json(&json!({"id": id})).done())
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["id"], id);
    let cookie = reply.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    assert!(cookie.starts_with(&format!("authtoken={id};")), "{cookie}");

    let reply = app
        .send(
            req(Method::PUT, "/acme/v1/sessions/current").basic("alice", PASSWORD).json(&json!({"id": "nope"})).done(),
        )
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "unknown_session");
    let reply = app
        .send(
            req(Method::PUT, "/acme/v1/sessions/current").basic("alice", PASSWORD).raw("application/json", "[").done(),
        )
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_json");
    let reply = app.send(req(Method::PUT, "/acme/v1/sessions/current").json(&json!({"id": id})).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn expired_sessions_are_purged_from_storage() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    app.clock.advance_ms(SESSION_IDLE_MS + 1);
    let now = app.clock.now_ms();
    let purged = app.state.store.purge_sessions(now - SESSION_IDLE_MS, now - SESSION_MAX_AGE_MS, now).await.unwrap();
    assert_eq!(purged, 1);
    assert!(app.state.store.session_with_user(&edge_server::auth::token_hash(&id)).await.unwrap().is_none());
}

#[tokio::test]
async fn repeated_failed_logins_are_refused_with_429_and_retry_after_until_the_window_passes() {
    let app = TestApp::new().await;
    for _ in 0..10 {
        let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("alice", "wrong-password-1").done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    }
    // Even the right password is refused while the username is locked.
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    assert_eq!(reply.headers.get(header::RETRY_AFTER).unwrap(), "900");
    // Basic credentials on any other request are throttled the same way.
    let reply = app.send(req(Method::GET, "/acme/v1/users").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    app.clock.advance_ms(15 * 60 * 1000);
    app.login("acme", "alice", PASSWORD).await;
}

#[tokio::test]
async fn unknown_usernames_are_throttled_exactly_like_known_ones() {
    let app = TestApp::new().await;
    for user in ["alice", "nobody"] {
        for _ in 0..10 {
            let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic(user, "wrong-password-1").done()).await;
            assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
        }
        let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic(user, "wrong-password-1").done()).await;
        assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    }
}

#[tokio::test]
async fn a_user_lists_their_own_live_sessions_by_reference_and_ends_one() {
    let app = TestApp::new().await;
    app.add_user("acme", "bob", "admin").await;
    let first = app.login("acme", "alice", PASSWORD).await;
    app.advance(60_000);
    let second = app.login("acme", "alice", PASSWORD).await;
    let bobs = app.login("acme", "bob", PASSWORD).await;
    // A second later, so that this request's use of the first session orders it strictly before the second.
    app.advance(1_000);
    let reply = app.send(req(Method::GET, "/acme/v1/sessions").cookie(&first).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let items = reply.body["items"].as_array().unwrap();
    assert_eq!(reply.body["total"], 2, "alice's two sessions, not bob's: {}", reply.body);
    assert_eq!(items.len(), 2);
    // Most recently used first: the first session was just used by this request.
    assert_eq!(items[0]["current"], true);
    assert_eq!(items[1]["current"], false);
    let reference = items[1]["ref"].as_str().unwrap().to_string();
    assert_eq!(reference.len(), 16);
    let text = String::from_utf8_lossy(&reply.raw);
    assert!(!text.contains(&first) && !text.contains(&second), "no secret id is listed");
    assert_eq!(items[1]["uri"], format!("/acme/v1/sessions/refs/{reference}"));
    assert_eq!(items[1]["created"], "2026-01-01T00:01:00.000Z");
    assert_eq!(items[1]["expires"], "2026-01-01T00:31:00.000Z");

    // Bob, an administrator, cannot end alice's session by its reference; alice can.
    let reply =
        app.send(req(Method::DELETE, &format!("/acme/v1/sessions/refs/{reference}")).cookie(&bobs).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply =
        app.send(req(Method::DELETE, &format!("/acme/v1/sessions/refs/{reference}")).cookie(&first).done()).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert!(reply.headers.get(header::SET_COOKIE).is_none(), "another session: the cookie stays");
    let reply = app.send(req(Method::GET, "/acme/v1/sessions/current").cookie(&second).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::GET, "/acme/v1/sessions").cookie(&first).done()).await;
    assert_eq!(reply.body["total"], 1);
    for bad in ["nothex-at-all-xx", "0123", "../../users"] {
        let reply = app.send(req(Method::DELETE, &format!("/acme/v1/sessions/refs/{bad}")).cookie(&first).done()).await;
        assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    }
    // Ending the session of the request itself logs out: the cookie is unset.
    let own = items[0]["ref"].as_str().unwrap();
    let reply = app.send(req(Method::DELETE, &format!("/acme/v1/sessions/refs/{own}")).cookie(&first).done()).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let cookie = reply.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    assert!(cookie.contains("Max-Age=0"), "{cookie}");
    let reply = app.send(req(Method::GET, "/acme/v1/sessions").cookie(&first).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "session_invalid");
}

#[tokio::test]
async fn expired_sessions_are_not_listed() {
    let app = TestApp::new().await;
    let old = app.login("acme", "alice", PASSWORD).await;
    app.advance(SESSION_IDLE_MS + 1);
    let _ = old;
    let reply = app.send(req(Method::GET, "/acme/v1/sessions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body, json!({"items": [], "total": 0}));
}
