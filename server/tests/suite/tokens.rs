//! API tokens through the real router: made once with their secret, each scope opening its operations and only
//! them (403 naming the scope otherwise), never beyond the user's role, expiry and client ranges on an injected
//! clock and addresses, last use written once a minute, administrators and owners, revocation with the user,
//! two-factor, throttling of wrong tokens, other customers, and hostile sizes.

use crate::common;

use axum::http::{Method, StatusCode, header};
use common::*;
use edge_server::otp::{code_at, step_of};
use serde_json::{Value, json};

fn bearer(method: Method, uri: &str, token: &str) -> Req {
    req(method, uri).header("authorization", &format!("Bearer {token}"))
}

/// Makes a token of `user` at acme with `scopes` (and more fields in `extra`); returns the answer's body.
async fn make(app: &TestApp, user: &str, scopes: &[&str], extra: Value) -> Value {
    let mut body = json!({"name": format!("{} token", scopes.join("+")), "scopes": scopes});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        body[k] = v;
    }
    let reply = app.send(req(Method::POST, "/acme/v1/tokens").basic(user, PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body
}

fn secret(body: &Value) -> String {
    body["secret"].as_str().expect("a secret").to_string()
}

/// Asserts the 403 of a token without the scope an operation needs, naming it.
/// Purge and its transactions answer in their own body (`code`, `description`, `details`), with the same words.
fn assert_missing_scope(reply: &Reply, scope: &str) {
    if reply.body.get("code").is_some() {
        assert_eq!((reply.status, reply.body["code"].clone()), (StatusCode::FORBIDDEN, json!(403)), "{}", reply.body);
        assert!(reply.body["description"].as_str().unwrap().contains(scope), "{}", reply.body);
    } else {
        assert_error(reply, StatusCode::FORBIDDEN, "insufficient_scope");
        assert!(reply.body["message"].as_str().unwrap().contains(scope), "{}", reply.body);
    }
    assert_eq!(reply.body["details"][0]["message"], format!("missing scope: {scope}"), "{}", reply.body);
}

#[tokio::test]
async fn a_token_is_shown_once_stored_as_a_hash_and_recognisable() {
    let app = TestApp::new().await;
    let made = make(&app, "alice", &["purge", "stats:read"], json!({})).await;
    let token = secret(&made);
    assert!(edge_api::tokens::is_well_formed(&token), "{token}");
    assert_eq!(made["scopes"], json!(["stats:read", "purge"]), "scopes in the order of the list");
    assert_eq!(made["hint"], &token[..9]);
    assert_eq!(made["username"], "alice");
    assert_eq!(made["expires"], Value::Null);
    assert_eq!(made["last_used_at"], Value::Null);
    let uri = made["uri"].as_str().unwrap();
    let listed = app.send(req(Method::GET, "/acme/v1/tokens").basic("alice", PASSWORD).done()).await;
    assert_eq!(listed.status, StatusCode::OK);
    assert_eq!(listed.body["total"], 1);
    assert!(listed.body["items"][0].get("secret").is_none(), "the secret is never listed: {}", listed.body);
    let one = app.send(req(Method::GET, uri).basic("alice", PASSWORD).done()).await;
    assert!(one.body.get("secret").is_none() && one.body["id"] == made["id"], "{}", one.body);
    // The database holds the SHA-256 of the secret, never the secret.
    let db = app.raw_db().await;
    let stored: String = edge_server::store::db::query("SELECT secret_hash FROM api_tokens").scalar(&db).await.unwrap();
    assert_eq!(stored, edge_server::auth::token_hash(&token));
    assert!(
        !String::from_utf8_lossy(&std::fs::read(app.dir.path().join("data/edge.db")).unwrap_or_default())
            .contains(&token)
    );
}

/// One request each scope allows, and that succeeds for an administrator's token holding it.
fn operation_of(scope: &str, n: usize) -> (Method, String, Option<Value>, StatusCode) {
    let get = |p: &str| (Method::GET, p.to_string(), None, StatusCode::OK);
    match scope {
        "stats:read" => get("/acme/v1/stats/dimensions"),
        "security:read" => get("/acme/v1/stats/security/events/dimensions"),
        "ingest" => (Method::POST, "/acme/v1/ingest/accesslogs".into(), None, StatusCode::OK),
        "purge" => get("/acme/v1/transactions"),
        "lists:read" => get("/acme/v1/config/networklists"),
        "lists:write" => (
            Method::POST,
            "/acme/v1/config/networklists".into(),
            Some(json!({"name": format!("list {n}"), "type": "IP", "list": ["192.0.2.1"]})),
            StatusCode::CREATED,
        ),
        "config:read" => get("/acme/v1/properties"),
        "config:write" => (
            Method::POST,
            "/acme/v1/properties".into(),
            Some(json!({"name": format!("site{n}"), "host_patterns": [format!("www.site{n}.example")]})),
            StatusCode::CREATED,
        ),
        "tasks:read" => get("/acme/v1/tasks"),
        "account:read" => get("/acme/v1/account"),
        "account:write" => {
            (Method::PUT, "/acme/v1/account".into(), Some(json!({"display_name": format!("Acme {n}")})), StatusCode::OK)
        }
        "users:read" => get("/acme/v1/users"),
        "users:write" => (
            Method::POST,
            "/acme/v1/users".into(),
            Some(json!({"username": format!("bot{n}"), "password": PASSWORD, "role": {"id": "viewer"}})),
            StatusCode::CREATED,
        ),
        "audit:read" => get("/acme/v1/audit"),
        "alerts:read" => get("/acme/v1/alerts/rules"),
        "alerts:write" => (
            Method::POST,
            "/acme/v1/alerts/channels".into(),
            Some(json!({"name": format!("on call {n}"), "type": "email", "addresses": ["oncall@example.com"]})),
            StatusCode::CREATED,
        ),
        other => panic!("no operation for scope {other}: add one"),
    }
}

async fn call(
    app: &TestApp,
    token: &str,
    (method, uri, body, _): &(Method, String, Option<Value>, StatusCode),
) -> Reply {
    let r = bearer(method.clone(), uri, token);
    let r = match (body, uri.contains("/ingest/")) {
        (Some(b), _) => r.json(b),
        (None, true) => r.raw("application/x-ndjson", ""),
        (None, false) => r,
    };
    app.send(r.done()).await
}

#[tokio::test]
async fn every_scope_allows_its_operations_and_every_other_scope_is_refused_by_name() {
    let app = TestApp::new().await;
    let scopes: Vec<&str> = edge_api::Scope::ALL.iter().map(|s| s.as_str()).collect();
    for (i, scope) in scopes.iter().enumerate() {
        let token = secret(&make(&app, "alice", &[scope], json!({})).await);
        for (j, other) in scopes.iter().enumerate() {
            let op = operation_of(other, i * 100 + j);
            let reply = call(&app, &token, &op).await;
            if other == scope {
                assert_eq!(reply.status, op.3, "{scope} on {} {}: {}", op.0, op.1, reply.body);
            } else {
                assert_missing_scope(&reply, other);
            }
        }
        // Sessions, passwords, two-factor and tokens need a person, whatever the scopes.
        for (method, uri) in [
            (Method::GET, "/acme/v1/sessions"),
            (Method::GET, "/acme/v1/tokens"),
            (Method::POST, "/acme/v1/tokens"),
            (Method::GET, "/acme/v1/sessions/current"),
        ] {
            let reply = app.send(bearer(method.clone(), uri, &token).json(&json!({})).done()).await;
            if uri.ends_with("/current") {
                assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
            } else {
                assert_error(&reply, StatusCode::FORBIDDEN, "insufficient_scope");
                assert_eq!(reply.body["details"][0]["message"], "no scope allows this operation");
            }
        }
    }
}

#[tokio::test]
async fn a_purge_only_token_purges_end_to_end_and_cannot_change_a_list() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let token = secret(&make(&app, "alice", &["purge"], json!({})).await);
    let body = json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": "www.shop.example/app.js", "match_mode": "EXACT_LITERAL"}]}});
    let reply = app.send(bearer(Method::POST, "/acme/v1/cache/purge", &token).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    let status_uri = reply.headers.get(header::LOCATION).unwrap().to_str().unwrap().to_string();
    app.advance(10_000);
    let status = app.send(bearer(Method::GET, &status_uri, &token).done()).await;
    assert_eq!(status.status, StatusCode::OK, "{}", status.body);
    assert_eq!(status.body["transaction_response"]["transaction_status"], "SUCCESS", "{}", status.body);
    let list = json!({"name": "blocked", "type": "IP", "list": ["192.0.2.1"]});
    let reply = app.send(bearer(Method::POST, "/acme/v1/config/networklists", &token).json(&list).done()).await;
    assert_missing_scope(&reply, "lists:write");
    // The purge's audit record names the token it was made with.
    let audit =
        app.send(req(Method::GET, "/acme/v1/audit?operation=cache.purge").basic("alice", PASSWORD).done()).await;
    assert_eq!(audit.body["items"][0]["actor"]["name"], "alice");
    assert_eq!(audit.body["items"][0]["details"]["token"]["name"], "purge token", "{}", audit.body);
    // A purge body's own error shape carries the same refusal.
    let lists_token = secret(&make(&app, "alice", &["lists:write"], json!({})).await);
    let reply = app.send(bearer(Method::POST, "/acme/v1/cache/purge", &lists_token).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
    assert_eq!(reply.body["code"], 403);
    assert_eq!(reply.body["details"][0]["message"], "missing scope: purge");
}

#[tokio::test]
async fn a_token_never_does_more_than_its_users_role() {
    let app = TestApp::new().await;
    let olga = app.add_user("acme", "olga", "operator").await;
    app.add_user("acme", "vic", "viewer").await;
    for (user, scope) in [("olga", "audit:read"), ("olga", "users:write"), ("vic", "purge"), ("vic", "lists:write")] {
        let body = json!({"name": "too much", "scopes": [scope]});
        let reply = app.send(req(Method::POST, "/acme/v1/tokens").basic(user, PASSWORD).json(&body).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_token");
        assert!(reply.body["details"][0]["message"].as_str().unwrap().contains(scope), "{}", reply.body);
    }
    let token = secret(&make(&app, "olga", &["lists:write"], json!({})).await);
    let list = json!({"name": "l", "type": "IP", "list": []});
    let reply = app.send(bearer(Method::POST, "/acme/v1/config/networklists", &token).json(&list).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    // Demoted, the user's token keeps its scope but the role decides: refused as the viewer would be.
    let demote = json!({"role": {"id": "viewer"}});
    let reply = app
        .send(req(Method::PUT, &format!("/acme/v1/users/{olga}")).basic("alice", PASSWORD).json(&demote).done())
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = app.send(bearer(Method::POST, "/acme/v1/config/networklists", &token).json(&list).done()).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    assert!(reply.body["message"].as_str().unwrap().contains("viewer"), "{}", reply.body);
}

#[tokio::test]
async fn expiry_and_client_ranges_are_checked_on_the_injected_clock_and_addresses() {
    let app = TestApp::with(|s| s.trusted_proxies = "127.0.0.1".parse().unwrap()).await;
    let made = make(
        &app,
        "alice",
        &["lists:read"],
        json!({"expires": "2026-01-01T01:00:00Z", "allowed_cidrs": ["10.0.0.0/8", "2001:db8::/32"]}),
    )
    .await;
    assert_eq!(made["expires"], "2026-01-01T01:00:00.000Z");
    assert_eq!(made["allowed_cidrs"], json!(["10.0.0.0/8", "2001:db8::/32"]));
    let token = secret(&made);
    let get = |peer: &str, forwarded: Option<&str>| {
        let r = bearer(Method::GET, "/acme/v1/config/networklists", &token).peer(peer);
        match forwarded {
            Some(f) => r.header("x-forwarded-for", f).done(),
            None => r.done(),
        }
    };
    assert_eq!(app.send(get("10.1.2.3", None)).await.status, StatusCode::OK);
    assert_eq!(app.send(get("2001:db8::7", None)).await.status, StatusCode::OK);
    let refused = app.send(get("192.0.2.1", None)).await;
    assert_error(&refused, StatusCode::FORBIDDEN, "address_not_allowed");
    assert!(refused.body["message"].as_str().unwrap().contains("192.0.2.1"), "{}", refused.body);
    // Behind a trusted proxy the forwarded address counts; anyone else's X-Forwarded-For is ignored.
    assert_eq!(app.send(get("127.0.0.1", Some("10.9.9.9"))).await.status, StatusCode::OK);
    assert_error(&app.send(get("127.0.0.1", Some("192.0.2.1"))).await, StatusCode::FORBIDDEN, "address_not_allowed");
    assert_error(&app.send(get("192.0.2.1", Some("10.9.9.9"))).await, StatusCode::FORBIDDEN, "address_not_allowed");
    app.advance(3_599_999);
    assert_eq!(app.send(get("10.1.2.3", None)).await.status, StatusCode::OK, "valid until its last millisecond");
    app.advance(1);
    assert_error(&app.send(get("10.1.2.3", None)).await, StatusCode::UNAUTHORIZED, "token_expired");
    let listed = app.send(req(Method::GET, "/acme/v1/tokens").basic("alice", PASSWORD).done()).await;
    assert_eq!(listed.body["items"][0]["expired"], true);
    // An expired token can be given a later expiry by its user.
    let later = json!({"expires": "2026-02-01T00:00:00Z"});
    let uri = made["uri"].as_str().unwrap();
    let reply = app.send(req(Method::PUT, uri).basic("alice", PASSWORD).json(&later).done()).await;
    assert_eq!(reply.body["expired"], false, "{}", reply.body);
    assert_eq!(app.send(get("10.1.2.3", None)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn the_last_use_is_written_at_most_once_a_minute() {
    let app = TestApp::new().await;
    let made = make(&app, "alice", &["account:read"], json!({})).await;
    let token = secret(&made);
    let uri = made["uri"].as_str().unwrap().to_string();
    async fn last(app: &TestApp, uri: &str) -> (Value, Value) {
        let body = app.send(req(Method::GET, uri).basic("alice", PASSWORD).done()).await.body;
        (body["last_used_at"].clone(), body["last_used_from"].clone())
    }
    let use_from = |peer: &str| bearer(Method::GET, "/acme/v1/account", &token).peer(peer).done();
    assert_eq!(app.send(use_from("192.0.2.1")).await.status, StatusCode::OK);
    assert_eq!(last(&app, &uri).await, (json!("2026-01-01T00:00:00.000Z"), json!("192.0.2.1")));
    app.advance(59_999);
    assert_eq!(app.send(use_from("192.0.2.2")).await.status, StatusCode::OK);
    assert_eq!(last(&app, &uri).await, (json!("2026-01-01T00:00:00.000Z"), json!("192.0.2.1")), "not written again");
    app.advance(1);
    assert_eq!(app.send(use_from("192.0.2.3")).await.status, StatusCode::OK);
    assert_eq!(last(&app, &uri).await, (json!("2026-01-01T00:01:00.000Z"), json!("192.0.2.3")));
}

#[tokio::test]
async fn a_token_of_one_customer_is_nothing_at_another() {
    let app = TestApp::new().await;
    let made = make(&app, "alice", &["lists:read", "lists:write"], json!({})).await;
    let token = secret(&made);
    let reply = app.send(bearer(Method::GET, "/globex/v1/config/networklists", &token).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let list = json!({"name": "x", "type": "IP", "list": []});
    let reply = app.send(bearer(Method::POST, "/globex/v1/config/networklists", &token).json(&list).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(bearer(Method::GET, "/nosuch/v1/config/networklists", &token).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    // Another customer's administrator does not find it either.
    let id = made["id"].as_str().unwrap();
    for method in [Method::GET, Method::DELETE] {
        let reply = app.send(req(method, &format!("/globex/v1/tokens/{id}")).basic("gina", PASSWORD).done()).await;
        assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    }
    let reply = app.send(req(Method::GET, "/globex/v1/tokens").basic("gina", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 0);
    assert_eq!(
        app.send(bearer(Method::GET, "/acme/v1/config/networklists", &token).done()).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn administrators_see_and_revoke_every_token_others_only_their_own() {
    let app = TestApp::new().await;
    let olga = app.add_user("acme", "olga", "operator").await;
    let alice = app.user_id("acme", "alice").await;
    let olgas = make(&app, "olga", &["tasks:read"], json!({})).await;
    let alices = make(&app, "alice", &["audit:read"], json!({})).await;
    let all = app.send(req(Method::GET, "/acme/v1/tokens").basic("alice", PASSWORD).done()).await;
    assert_eq!(all.body["total"], 2);
    let hers =
        app.send(req(Method::GET, &format!("/acme/v1/tokens?user={olga}")).basic("alice", PASSWORD).done()).await;
    assert_eq!((hers.body["total"].clone(), hers.body["items"][0]["username"].clone()), (json!(1), json!("olga")));
    let own = app.send(req(Method::GET, "/acme/v1/tokens").basic("olga", PASSWORD).done()).await;
    assert_eq!((own.body["total"].clone(), own.body["items"][0]["id"].clone()), (json!(1), olgas["id"].clone()));
    let reply =
        app.send(req(Method::GET, &format!("/acme/v1/tokens?user={alice}")).basic("olga", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let alices_uri = alices["uri"].as_str().unwrap();
    for method in [Method::GET, Method::DELETE] {
        assert_error(
            &app.send(req(method, alices_uri).basic("olga", PASSWORD).done()).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
    }
    // An administrator revokes, but neither changes nor rolls, someone else's token.
    let olgas_uri = olgas["uri"].as_str().unwrap();
    let reply =
        app.send(req(Method::PUT, olgas_uri).basic("alice", PASSWORD).json(&json!({"name": "mine"})).done()).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let reply = app.send(req(Method::POST, &format!("{olgas_uri}/roll")).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let reply = app.send(req(Method::DELETE, olgas_uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let reply = app.send(bearer(Method::GET, "/acme/v1/tasks", &secret(&olgas)).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "token_invalid");
    let audit = app.send(req(Method::GET, "/acme/v1/audit?operation=token").basic("alice", PASSWORD).done()).await;
    let ops: Vec<&str> =
        audit.body["items"].as_array().unwrap().iter().map(|r| r["operation"].as_str().unwrap()).collect();
    assert_eq!(ops, ["token.delete", "token.create", "token.create"]);
    assert_eq!(audit.body["items"][0]["actor"]["name"], "alice");
    assert_eq!(audit.body["items"][0]["details"]["user"], "olga");
    assert_eq!(audit.body["items"][0]["target"]["type"], "token");
}

#[tokio::test]
async fn disabling_or_deleting_a_user_revokes_their_tokens() {
    let app = TestApp::new().await;
    let olga = app.add_user("acme", "olga", "operator").await;
    let oscar = app.add_user("acme", "oscar", "operator").await;
    let olgas = secret(&make(&app, "olga", &["tasks:read"], json!({})).await);
    let oscars = secret(&make(&app, "oscar", &["tasks:read"], json!({})).await);
    for t in [&olgas, &oscars] {
        assert_eq!(app.send(bearer(Method::GET, "/acme/v1/tasks", t).done()).await.status, StatusCode::OK);
    }
    let disable = json!({"enabled": false});
    let reply = app
        .send(req(Method::PUT, &format!("/acme/v1/users/{olga}")).basic("alice", PASSWORD).json(&disable).done())
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = app.send(req(Method::DELETE, &format!("/acme/v1/users/{oscar}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    for t in [&olgas, &oscars] {
        assert_error(
            &app.send(bearer(Method::GET, "/acme/v1/tasks", t).done()).await,
            StatusCode::UNAUTHORIZED,
            "token_invalid",
        );
    }
    let reply = app.send(req(Method::GET, "/acme/v1/tokens").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 0);
    let audit = app.send(req(Method::GET, "/acme/v1/audit?operation=user").basic("alice", PASSWORD).done()).await;
    let revoked: Vec<(&str, &Value)> = audit.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["details"].get("tokens_revoked").is_some())
        .map(|r| (r["operation"].as_str().unwrap(), &r["details"]["tokens_revoked"]))
        .collect();
    assert_eq!(revoked, [("user.delete", &json!(1)), ("user.update", &json!(1))]);
    // Enabled again, the user has no token back.
    let enable = json!({"enabled": true});
    app.send(req(Method::PUT, &format!("/acme/v1/users/{olga}")).basic("alice", PASSWORD).json(&enable).done()).await;
    assert_error(
        &app.send(bearer(Method::GET, "/acme/v1/tasks", &olgas).done()).await,
        StatusCode::UNAUTHORIZED,
        "token_invalid",
    );
}

#[tokio::test]
async fn with_two_factor_on_making_or_rolling_a_token_needs_a_code_even_in_a_session() {
    use edge_server::clock::Clock;
    let app = TestApp::new().await;
    let alice = app.user_id("acme", "alice").await;
    // Pair two-factor for alice.
    let seed =
        app.send(req(Method::POST, &format!("/acme/v1/users/{alice}/otp/seeds")).basic("alice", PASSWORD).done()).await;
    let otp_secret = seed.body["seed"].as_str().unwrap().to_string();
    let step = step_of(app.clock.now_ms());
    let pairing = json!({"seed_id": seed.body["id"], "first_token": code_at(&otp_secret, step - 1).unwrap(), "second_token": code_at(&otp_secret, step).unwrap()});
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/users/{alice}/otp/pairing"))
                .basic("alice", PASSWORD)
                .json(&pairing)
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    app.advance(30_000);
    let code = |app: &TestApp| code_at(&otp_secret, step_of(app.clock.now_ms())).unwrap();
    let login = app
        .send(req(Method::POST, "/acme/v1/sessions").basic("alice", PASSWORD).header("X-OTP-Token", &code(&app)).done())
        .await;
    let session = login.body["id"].as_str().unwrap().to_string();
    let body = json!({"name": "deploy", "scopes": ["purge"]});
    let reply = app.send(req(Method::POST, "/acme/v1/tokens").cookie(&session).json(&body).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    let reply = app
        .send(req(Method::POST, "/acme/v1/tokens").cookie(&session).header("X-OTP-Token", "000000").json(&body).done())
        .await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_invalid");
    app.advance(30_000);
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/tokens").cookie(&session).header("X-OTP-Token", &code(&app)).json(&body).done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let uri = reply.body["uri"].as_str().unwrap().to_string();
    // The same code again is a replay.
    let reply = app
        .send(req(Method::POST, &format!("{uri}/roll")).cookie(&session).header("X-OTP-Token", &code(&app)).done())
        .await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_invalid");
    // Renaming needs no code; rescoping does.
    let reply = app.send(req(Method::PUT, &uri).cookie(&session).json(&json!({"name": "deploy 2"})).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let reply = app
        .send(req(Method::PUT, &uri).cookie(&session).json(&json!({"scopes": ["purge", "stats:read"]})).done())
        .await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    // Basic credentials without a code cannot make one at all; with one they can.
    let reply = app.send(req(Method::POST, "/acme/v1/tokens").basic("alice", PASSWORD).json(&body).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "otp_required");
    app.advance(30_000);
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/tokens")
                .basic("alice", PASSWORD)
                .header("X-OTP-Token", &code(&app))
                .json(&body)
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
}

#[tokio::test]
async fn rolling_gives_a_new_secret_and_ends_the_old_one_at_once() {
    let app = TestApp::new().await;
    let made = make(&app, "alice", &["tasks:read"], json!({"allowed_cidrs": ["0.0.0.0/0", "::/0"]})).await;
    let old = secret(&made);
    let uri = made["uri"].as_str().unwrap();
    let rolled = app.send(req(Method::POST, &format!("{uri}/roll")).basic("alice", PASSWORD).done()).await;
    assert_eq!(rolled.status, StatusCode::OK, "{}", rolled.body);
    let new = secret(&rolled.body);
    assert_ne!(new, old);
    assert_eq!(
        (rolled.body["id"].clone(), rolled.body["scopes"].clone()),
        (made["id"].clone(), made["scopes"].clone())
    );
    assert_eq!(rolled.body["hint"], &new[..9]);
    assert_error(
        &app.send(bearer(Method::GET, "/acme/v1/tasks", &old).done()).await,
        StatusCode::UNAUTHORIZED,
        "token_invalid",
    );
    assert_eq!(app.send(bearer(Method::GET, "/acme/v1/tasks", &new).done()).await.status, StatusCode::OK);
    let audit = app.send(req(Method::GET, "/acme/v1/audit?operation=token.roll").basic("alice", PASSWORD).done()).await;
    assert_eq!(audit.body["items"][0]["details"]["previous_hint"], &old[..9]);
}

#[tokio::test]
async fn wrong_tokens_are_throttled_and_recorded_like_failed_logins() {
    let app = TestApp::new().await;
    let real = secret(&make(&app, "alice", &["tasks:read"], json!({})).await);
    let guess = edge_api::tokens::token_from_random(&"x".repeat(40));
    for i in 0..10 {
        let token = if i % 2 == 0 { guess.as_str() } else { "not-a-token" };
        let reply = app.send(bearer(Method::GET, "/acme/v1/tasks", token).peer("198.51.100.7").done()).await;
        assert_error(&reply, StatusCode::UNAUTHORIZED, "token_invalid");
    }
    let reply = app.send(bearer(Method::GET, "/acme/v1/tasks", &guess).peer("198.51.100.7").done()).await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    assert!(reply.headers.get(header::RETRY_AFTER).is_some());
    // Another address is not held back, nor a person's login from this one.
    let reply = app.send(bearer(Method::GET, "/acme/v1/tasks", &guess).peer("198.51.100.8").done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "token_invalid");
    assert_eq!(
        app.send(bearer(Method::GET, "/acme/v1/tasks", &real).peer("198.51.100.8").done()).await.status,
        StatusCode::OK
    );
    let login =
        app.send(req(Method::GET, "/acme/v1/account").basic("alice", PASSWORD).peer("198.51.100.7").done()).await;
    assert_eq!(login.status, StatusCode::OK);
    let audit = app.send(req(Method::GET, "/acme/v1/audit?operation=login").basic("alice", PASSWORD).done()).await;
    let items = audit.body["items"].as_array().unwrap();
    assert_eq!(items[0]["operation"], "login.failure", "{}", audit.body);
    let lockout = items.iter().find(|r| r["operation"] == "login.lockout").expect("the lockout is recorded");
    assert_eq!(lockout["source_address"], "198.51.100.7");
    let names: std::collections::BTreeSet<&str> = items.iter().filter_map(|r| r["actor"]["name"].as_str()).collect();
    assert!(names.contains(format!("API token {}…", &guess[..9]).as_str()), "{names:?}");
    assert!(names.contains("API token (not one of this server's)"), "{names:?}");
    assert!(!audit.raw.windows(20).any(|w| w == &guess.as_bytes()[..20]), "never more of a secret than its hint");
}

#[tokio::test]
async fn hostile_sizes_of_every_field_are_refused_and_nothing_is_made() {
    let app = TestApp::new().await;
    let long = "x".repeat(100_000);
    let bodies = [
        json!({"name": long, "scopes": ["purge"]}),
        json!({"name": "", "scopes": ["purge"]}),
        json!({"name": "ok"}),
        json!({"name": "ok", "scopes": []}),
        json!({"name": "ok", "scopes": vec!["purge"; 10_000]}),
        json!({"name": "ok", "scopes": [long]}),
        json!({"name": "ok", "scopes": ["purge"], "allowed_cidrs": vec!["10.0.0.0/8"; 101]}),
        json!({"name": "ok", "scopes": ["purge"], "allowed_cidrs": [long]}),
        json!({"name": "ok", "scopes": ["purge"], "allowed_cidrs": ["10.1.2.3/8"]}),
        json!({"name": "ok", "scopes": ["purge"], "expires": long}),
        json!({"name": "ok", "scopes": ["purge"], "expires": "2025-12-31T23:59:59Z"}),
        json!({"name": "ok", "scopes": ["purge"], "expires": "2099-01-01T00:00:00Z"}),
        json!({"name": "ok", "scopes": ["purge"], "secret": "edge_mine"}),
        json!({"name": "a\u{0}b", "scopes": ["purge"]}),
    ];
    for body in &bodies {
        let reply = app.send(req(Method::POST, "/acme/v1/tokens").basic("alice", PASSWORD).json(body).done()).await;
        assert!(
            reply.status.is_client_error(),
            "{} for {}",
            reply.status,
            edge_api::limits::cut(&body.to_string(), 200)
        );
        assert!(reply.body["type"].is_string(), "a JSON error body");
        assert!(reply.raw.len() < 20_000, "the answer stays small: {} bytes", reply.raw.len());
    }
    let reply = app.send(req(Method::GET, "/acme/v1/tokens").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 0);
    // A token as long as a header may be, and longer.
    let reply = app.send(bearer(Method::GET, "/acme/v1/tasks", &"e".repeat(8_000)).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "token_invalid");
    let reply = app.send(bearer(Method::GET, "/acme/v1/tasks", &"e".repeat(9_000)).done()).await;
    assert_eq!(reply.status, StatusCode::from_u16(431).unwrap());
    // Ids that are no token's, and a user's hundred-and-first token.
    for id in ["0123456789abcdef", "../../users", &"f".repeat(5000)] {
        let reply = app.send(req(Method::GET, &format!("/acme/v1/tokens/{id}")).basic("alice", PASSWORD).done()).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{id}");
    }
    for _ in 0..100 {
        make(&app, "alice", &["purge"], json!({})).await;
    }
    let body = json!({"name": "one too many", "scopes": ["purge"]});
    let reply = app.send(req(Method::POST, "/acme/v1/tokens").basic("alice", PASSWORD).json(&body).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "limit_exceeded");
}

#[tokio::test]
async fn the_scope_table_names_every_operation_of_the_document_and_the_document_names_each_scope() {
    let app = TestApp::new().await;
    let doc = app.send(req(Method::GET, "/openapi.json").done()).await.body;
    let mut documented = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !["get", "put", "post", "delete", "head", "patch"].contains(&method.as_str()) {
                continue;
            }
            let route = path.strip_prefix("/{customer}/v1").unwrap().to_string();
            let access = edge_api::token_access(&method.to_uppercase(), &route);
            let named: Vec<&str> = op["security"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.get("token"))
                .flat_map(|s| s.as_array().unwrap().iter().map(|v| v.as_str().unwrap()))
                .collect();
            match access {
                edge_api::TokenAccess::Scope(s) => assert_eq!(named, [s.as_str()], "{method} {route}"),
                _ => assert!(named.is_empty(), "{method} {route}"),
            }
            documented.insert((method.to_uppercase(), route));
        }
    }
    let table: std::collections::BTreeSet<(String, String)> =
        edge_api::OPERATION_SCOPES.iter().map(|(m, p, _)| (m.to_string(), p.to_string())).collect();
    let missing: Vec<_> = documented.difference(&table).collect();
    let extra: Vec<_> = table.difference(&documented).collect();
    assert!(missing.is_empty(), "operations without a row in edge_api::OPERATION_SCOPES: {missing:?}");
    assert!(extra.is_empty(), "rows of edge_api::OPERATION_SCOPES that are no operation: {extra:?}");
}
