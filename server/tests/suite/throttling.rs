//! Login throttling and bounded password work through the router: attempts are counted before they are checked,
//! clients behind a trusted proxy are counted by their own address (IPv6 by /64), a locked username still logs
//! in from an address that has not failed, and password hashing beyond the workers and queue answers 503.

use crate::common;

use std::sync::Arc;

use axum::http::{Method, StatusCode, header};
use common::*;
use serde_json::json;

fn login(customer: &str, user: &str, password: &str) -> Req {
    req(Method::POST, &format!("/{customer}/v1/sessions")).basic(user, password)
}

/// Sends all `requests` at once and returns their replies in order.
async fn all_at_once(app: &Arc<TestApp>, requests: Vec<Req>) -> Vec<Reply> {
    let sends: Vec<_> = requests
        .into_iter()
        .map(|r| {
            let app = app.clone();
            tokio::spawn(async move { app.send(r.done()).await })
        })
        .collect();
    let mut replies = Vec::new();
    for s in sends {
        replies.push(s.await.expect("request task"));
    }
    replies
}

fn count(replies: &[Reply], status: StatusCode) -> usize {
    replies.iter().filter(|r| r.status == status).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_wrong_passwords_get_no_more_guesses_than_the_limit() {
    let app = Arc::new(TestApp::new().await);
    let guesses = (0..30).map(|i| login("acme", "alice", &format!("guess number {i}")).peer("203.0.113.7")).collect();
    let replies = all_at_once(&app, guesses).await;
    assert_eq!(count(&replies, StatusCode::UNAUTHORIZED), 10, "exactly the limit is checked");
    assert_eq!(count(&replies, StatusCode::TOO_MANY_REQUESTS), 20);
    for r in replies.iter().filter(|r| r.status == StatusCode::TOO_MANY_REQUESTS) {
        assert_error(r, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
        assert!(r.headers.contains_key(header::RETRY_AFTER));
    }
    // The real user, from anywhere else, is not locked out.
    let reply = app.send(login("acme", "alice", PASSWORD).peer("198.51.100.20").done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_requests_with_the_right_password_all_go_through() {
    let app = Arc::new(TestApp::new().await);
    let reads =
        (0..30).map(|_| req(Method::GET, "/acme/v1/users").basic("alice", PASSWORD).peer("203.0.113.7")).collect();
    let replies = all_at_once(&app, reads).await;
    assert_eq!(count(&replies, StatusCode::OK), 30, "attempts beyond the limit wait for pending ones, not refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn password_checks_beyond_the_workers_and_queue_answer_503_with_retry_after() {
    let app = Arc::new(
        TestApp::with(|s| {
            s.password_workers = 1;
            s.password_queue = 1;
            // The queue fills while real hashes take their 15 ms.
            s.hash_cost = edge_server::domain::hashing::HashCost::Standard;
        })
        .await,
    );
    let attempts = (0..12)
        .map(|i| login("acme", &format!("user{i}"), "wrong password!!").peer(&format!("203.0.113.{}", i + 1)))
        .collect();
    let replies = all_at_once(&app, attempts).await;
    let busy: Vec<&Reply> = replies.iter().filter(|r| r.status == StatusCode::SERVICE_UNAVAILABLE).collect();
    assert!(!busy.is_empty(), "some attempts found the workers and the queue full");
    assert_eq!(busy.len() + count(&replies, StatusCode::UNAUTHORIZED), 12);
    for r in busy {
        assert_error(r, StatusCode::SERVICE_UNAVAILABLE, "overloaded");
        assert_eq!(r.headers.get(header::RETRY_AFTER).unwrap(), "1");
    }
    // Refused for being busy is not a failed login, and the server goes on.
    app.login("acme", "alice", PASSWORD).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hashing_new_passwords_is_bounded_too() {
    let app = Arc::new(
        TestApp::with(|s| {
            s.password_workers = 1;
            s.password_queue = 1;
            // The queue fills while real hashes take their 15 ms.
            s.hash_cost = edge_server::domain::hashing::HashCost::Standard;
        })
        .await,
    );
    let session = app.login("acme", "alice", PASSWORD).await;
    let creations = (0..12)
        .map(|i| {
            let body = json!({"username": format!("new{i}"), "password": PASSWORD, "role": {"id": "viewer"}});
            req(Method::POST, "/acme/v1/users").cookie(&session).json(&body)
        })
        .collect();
    let replies = all_at_once(&app, creations).await;
    let busy = count(&replies, StatusCode::SERVICE_UNAVAILABLE);
    assert!(busy > 0, "some creations found the workers and the queue full");
    assert_eq!(busy + count(&replies, StatusCode::CREATED), 12);
    let reply = app.send(req(Method::GET, "/acme/v1/users?q=new").cookie(&session).done()).await;
    assert_eq!(reply.body["total"], 12 - busy as u64, "a refused creation created nothing");
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_client_is_counted_by_its_own_address() {
    let app = TestApp::with(|s| s.trusted_proxies = "10.0.0.0/8".parse().unwrap()).await;
    let via_proxy = |user: &str, password: &str, client: &str| {
        login("acme", user, password).peer("10.0.0.1").header("X-Forwarded-For", client)
    };
    // One client tries a hundred usernames: that client is locked out...
    for i in 0..100 {
        let reply = app.send(via_proxy(&format!("user{i}"), "wrong password!!", "203.0.113.7").done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    }
    let reply = app.send(via_proxy("alice", PASSWORD, "203.0.113.7").done()).await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    // ...every other client of the same proxy is not.
    let reply = app.send(via_proxy("alice", PASSWORD, "203.0.113.8").done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let reply = app.send(via_proxy("gina", PASSWORD, "198.51.100.1, 203.0.113.9").done()).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "a customer's user is checked under its own customer");
}

#[tokio::test]
async fn a_forwarded_address_from_an_untrusted_peer_is_ignored() {
    let app = TestApp::with(|s| s.trusted_proxies = "10.0.0.0/8".parse().unwrap()).await;
    for i in 0..10 {
        let reply = app
            .send(
                login("acme", "alice", "wrong password!!")
                    .peer("198.51.100.1")
                    .header("X-Forwarded-For", &format!("203.0.113.{i}"))
                    .done(),
            )
            .await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    }
    let reply = app
        .send(login("acme", "alice", PASSWORD).peer("198.51.100.1").header("X-Forwarded-For", "192.0.2.99").done())
        .await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
}

#[tokio::test]
async fn a_locked_username_still_logs_in_from_an_address_that_has_not_failed() {
    let app = TestApp::new().await;
    for _ in 0..10 {
        let reply = app.send(login("acme", "alice", "wrong password!!").peer("203.0.113.7").done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    }
    let reply = app.send(login("acme", "alice", PASSWORD).peer("203.0.113.7").done()).await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    assert_eq!(reply.headers.get(header::RETRY_AFTER).unwrap(), "900");
    let reply = app.send(login("acme", "alice", PASSWORD).peer("198.51.100.2").done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    // Other users from the failing address are not blocked either.
    let reply = app.send(login("globex", "gina", PASSWORD).peer("203.0.113.7").done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test]
async fn ipv6_clients_are_counted_by_their_64() {
    let app = TestApp::new().await;
    for i in 1..=10 {
        let reply =
            app.send(login("acme", "alice", "wrong password!!").peer(&format!("2001:db8:1:1::{i:x}")).done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    }
    let reply = app.send(login("acme", "alice", PASSWORD).peer("2001:db8:1:1:ffff::99").done()).await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    let reply = app.send(login("acme", "alice", PASSWORD).peer("2001:db8:1:2::1").done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "another /64: {}", reply.body);
}

async fn seed(app: &TestApp, user: &str, id: &str) -> serde_json::Value {
    let reply =
        app.send(req(Method::POST, &format!("/acme/v1/users/{id}/otp/seeds")).basic(user, PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body
}

fn now(app: &TestApp) -> i64 {
    use edge_server::clock::Clock;
    app.clock.now_ms()
}

/// Pairs two-factor for `user` (id `id`) of acme; returns the secret.
async fn pair(app: &TestApp, user: &str, id: &str) -> String {
    use edge_server::otp::{code_at, step_of};
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

/// A code of `secret` that is wrong now (the right one plus one, last digit wrapped).
fn wrong_code(secret: &str, at_ms: i64) -> String {
    let right = edge_server::otp::code_at(secret, edge_server::otp::step_of(at_ms)).unwrap();
    let last = (right.as_bytes()[5] - b'0' + 1) % 10;
    format!("{}{last}", &right[..5])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wrong_codes_from_many_addresses_lock_the_accounts_code_checks() {
    use edge_server::otp::{code_at, step_of};
    let app = Arc::new(TestApp::new().await);
    let bob = app.add_user("acme", "bob", "operator").await;
    let secret = pair(&app, "bob", &bob).await;
    app.advance(30_000);
    // The review's attack: the right password and a wrong code, 150 times, each from an address of its own,
    // 50 at once.
    let mut replies = Vec::new();
    for batch in 0..3 {
        let wrong = wrong_code(&secret, now(&app));
        let attempts = (0..50)
            .map(|i| {
                login("acme", "bob", PASSWORD).header("X-OTP-Token", &wrong).peer(&format!("2001:db8:{batch}:{i}::1"))
            })
            .collect();
        replies.extend(all_at_once(&app, attempts).await);
    }
    assert_eq!(count(&replies, StatusCode::UNAUTHORIZED), 5, "exactly the limit of codes is checked");
    assert_eq!(count(&replies, StatusCode::TOO_MANY_REQUESTS), 145);
    for r in replies.iter().filter(|r| r.status == StatusCode::UNAUTHORIZED) {
        assert_error(r, StatusCode::UNAUTHORIZED, "otp_invalid");
    }
    // Now the right code, from a new address, is held back too, with the time to wait.
    let right = code_at(&secret, step_of(now(&app))).unwrap();
    let reply =
        app.send(login("acme", "bob", PASSWORD).header("X-OTP-Token", &right).peer("198.51.100.77").done()).await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    assert_eq!(reply.headers.get(header::RETRY_AFTER).unwrap(), "900");
    // The lock is in the audit log, once.
    let log =
        app.send(req(Method::GET, "/acme/v1/audit?operation=login.lockout").basic("alice", PASSWORD).done()).await;
    assert_eq!(log.body["total"], 1, "{}", log.body);
    assert_eq!(log.body["items"][0]["details"]["scope"], "one-time codes of this username, every address");
    // The password alone is not held back (it is answered as before: a code is required).
    let reply = app.send(login("acme", "bob", PASSWORD).peer("198.51.100.78").done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    // Waiting out the window lets the user in.
    app.advance(15 * 60 * 1000);
    let right = code_at(&secret, step_of(now(&app))).unwrap();
    let reply =
        app.send(login("acme", "bob", PASSWORD).header("X-OTP-Token", &right).peer("198.51.100.77").done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_administrators_password_reset_opens_a_locked_accounts_code_checks() {
    use edge_server::otp::{code_at, step_of};
    let app = Arc::new(TestApp::new().await);
    let bob = app.add_user("acme", "bob", "operator").await;
    let secret = pair(&app, "bob", &bob).await;
    for i in 0..5 {
        app.advance(30_000);
        let wrong = wrong_code(&secret, now(&app));
        let reply = app
            .send(login("acme", "bob", PASSWORD).header("X-OTP-Token", &wrong).peer(&format!("203.0.113.{i}")).done())
            .await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_invalid");
    }
    let right = code_at(&secret, step_of(now(&app))).unwrap();
    let reply =
        app.send(login("acme", "bob", PASSWORD).header("X-OTP-Token", &right).peer("198.51.100.7").done()).await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    // The administrator resets bob's password; bob sets a new one from the mailed link and logs in with it.
    let reply = app
        .send(req(Method::POST, &format!("/acme/v1/users/{bob}/password/resets")).basic("alice", PASSWORD).done())
        .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.body);
    let outbox = app.dir.path().join("data/outbox");
    let mail =
        std::fs::read_dir(outbox).unwrap().filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok()).next().unwrap();
    let token: String =
        mail[mail.find("token=").unwrap() + 6..].chars().take_while(char::is_ascii_alphanumeric).collect();
    let new_password = "a brand new passphrase";
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/password-resets/{token}"))
                .json(&json!({"password": new_password}))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.body);
    app.advance(30_000);
    let right = code_at(&secret, step_of(now(&app))).unwrap();
    let reply =
        app.send(login("acme", "bob", new_password).header("X-OTP-Token", &right).peer("198.51.100.7").done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}
