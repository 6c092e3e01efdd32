//! The audit log through the router: every change is recorded exactly once with its actor, source address,
//! target and details; a change whose record cannot be written is not made; the log is for administrators,
//! filtered and paged; failed logins and lockouts are recorded; old records are pruned.

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use edge_server::otp::{code_at, step_of};
use edge_server::store::db::query;
use serde_json::{Value, json};

/// The audit records at `query` (read by alice), and their total.
async fn audit(app: &TestApp, query: &str) -> (Vec<Value>, u64) {
    let reply = app.send(req(Method::GET, &format!("/acme/v1/audit?{query}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    (reply.body["items"].as_array().unwrap().clone(), reply.body["total"].as_u64().unwrap())
}

/// The one record of `operation`; fails unless there is exactly one.
async fn one(app: &TestApp, operation: &str) -> Value {
    let (items, total) = audit(app, &format!("operation={operation}")).await;
    assert_eq!(total, 1, "{operation}: {items:#?}");
    items[0].clone()
}

fn now(app: &TestApp) -> i64 {
    use edge_server::clock::Clock;
    app.clock.now_ms()
}

fn outbox_token(app: &TestApp) -> String {
    let dir = app.dir.path().join("data/outbox");
    let mail =
        std::fs::read_dir(dir).unwrap().filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok()).next().unwrap();
    let at = mail.find("token=").unwrap();
    mail[at + 6..].chars().take_while(char::is_ascii_alphanumeric).collect()
}

/// Checks the parts of a record every change has.
fn assert_record(r: &Value, actor: &str, source: &str, target_type: &str, target_name: &str) {
    assert_eq!(r["actor"]["name"], actor, "{r:#}");
    assert_eq!(r["source_address"], source, "{r:#}");
    assert_eq!(r["target"]["type"], target_type, "{r:#}");
    assert_eq!(r["target"]["name"], target_name, "{r:#}");
    assert_eq!(r["outcome"], "success", "{r:#}");
    assert_eq!(r["customer"], "acme", "{r:#}");
}

#[tokio::test]
async fn every_change_is_recorded_exactly_once_with_who_where_what_and_how() {
    let app = TestApp::new().await;
    let from = |r: Req| r.peer("203.0.113.5");
    let alice = |r: Req| from(r).basic("alice", PASSWORD);
    let ok = |reply: &Reply, status: StatusCode| assert_eq!(reply.status, status, "{}", reply.body);

    // The customer itself was created by the operator (command line).
    let r = one(&app, "customer.create").await;
    assert_eq!((r["actor"]["type"].as_str(), r["actor"]["name"].as_str()), (Some("system"), Some("system")));
    assert_eq!(r["target"]["uri"], "/acme/v1/account");
    edge_server::admin::add_identity_source(&app.state, "acme", "corp", "{}").await.unwrap();
    assert_eq!(one(&app, "identity_source.create").await["target"]["uri"], "/acme/v1/idps/corp");

    // Sessions.
    let reply = app.send(from(req(Method::POST, "/acme/v1/sessions").basic("alice", PASSWORD)).done()).await;
    ok(&reply, StatusCode::CREATED);
    let session = reply.body["id"].as_str().unwrap().to_string();
    let r = one(&app, "session.create").await;
    assert_record(&r, "alice", "203.0.113.5", "session", "alice");
    assert_eq!(r["actor"]["id"], app.user_id("acme", "alice").await);
    assert_eq!(r["target"]["id"].as_str().unwrap().len(), 16);
    assert_eq!(r["target"]["uri"], Value::Null);

    // Users.
    let body = json!({"username": "bob", "password": PASSWORD, "email": "bob@example.com", "role": {"id": "viewer"}});
    let reply = app.send(alice(req(Method::POST, "/acme/v1/users")).json(&body).done()).await;
    ok(&reply, StatusCode::CREATED);
    let bob = reply.body["id"].as_str().unwrap().to_string();
    let r = one(&app, "user.create").await;
    assert_record(&r, "alice", "203.0.113.5", "user", "bob");
    assert_eq!((r["target"]["id"].as_str(), r["details"]["role"].as_str()), (Some(bob.as_str()), Some("viewer")));
    assert_eq!(r["target"]["uri"], format!("/acme/v1/users/{bob}"));
    let user_uri = format!("/acme/v1/users/{bob}");
    ok(&app.send(alice(req(Method::PUT, &user_uri)).json(&json!({"full_name": "Bob B"})).done()).await, StatusCode::OK);
    assert_eq!(one(&app, "user.update").await["details"], json!({"full_name": "Bob B"}));
    // Sent back unchanged: nothing changes, nothing is recorded.
    ok(&app.send(alice(req(Method::PUT, &user_uri)).json(&json!({"full_name": "Bob B"})).done()).await, StatusCode::OK);
    one(&app, "user.update").await;
    ok(
        &app.send(alice(req(Method::PUT, &user_uri)).json(&json!({"role": {"id": "operator"}})).done()).await,
        StatusCode::OK,
    );
    assert_eq!(one(&app, "user.role_change").await["details"], json!({"role": "operator", "previous_role": "viewer"}));

    // Two-factor: seed and pairing by bob, unpairing by alice.
    let bob_basic = |r: Req| from(r).basic("bob", PASSWORD);
    let reply = app.send(bob_basic(req(Method::POST, &format!("{user_uri}/otp/seeds"))).done()).await;
    ok(&reply, StatusCode::OK);
    assert_record(&one(&app, "user.otp.seed").await, "bob", "203.0.113.5", "user", "bob");
    let secret = reply.body["seed"].as_str().unwrap().to_string();
    let step = step_of(now(&app));
    let pairing = json!({"seed_id": reply.body["id"], "first_token": code_at(&secret, step - 1).unwrap(), "second_token": code_at(&secret, step).unwrap()});
    ok(
        &app.send(bob_basic(req(Method::PUT, &format!("{user_uri}/otp/pairing"))).json(&pairing).done()).await,
        StatusCode::OK,
    );
    assert_record(&one(&app, "user.otp.pair").await, "bob", "203.0.113.5", "user", "bob");
    ok(&app.send(alice(req(Method::DELETE, &format!("{user_uri}/otp/pairing"))).done()).await, StatusCode::OK);
    assert_record(&one(&app, "user.otp.unpair").await, "alice", "203.0.113.5", "user", "bob");

    // Passwords: changed by bob, reset by alice, set again from the link.
    let new_password = json!({"password": "bob's new password"});
    ok(
        &app.send(bob_basic(req(Method::PUT, &format!("{user_uri}/password"))).json(&new_password).done()).await,
        StatusCode::OK,
    );
    assert_record(&one(&app, "user.password.change").await, "bob", "203.0.113.5", "user", "bob");
    ok(
        &app.send(alice(req(Method::POST, &format!("{user_uri}/password/resets"))).done()).await,
        StatusCode::NO_CONTENT,
    );
    let r = one(&app, "user.password.reset").await;
    assert_record(&r, "alice", "203.0.113.5", "user", "bob");
    assert_eq!(r["details"]["mailed_to"], "bob@example.com");
    let token = outbox_token(&app);
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/password-resets/{token}"))
                .peer("198.51.100.7")
                .json(&json!({"password": PASSWORD}))
                .done(),
        )
        .await;
    ok(&reply, StatusCode::NO_CONTENT);
    assert_record(&one(&app, "user.password.reset_complete").await, "bob", "198.51.100.7", "user", "bob");

    // Property configuration.
    let doc = app.add_property("shop", &["www.shop.example"]).await;
    let r = one(&app, "property.create").await;
    assert_record(&r, "alice", "::", "property", "shop");
    assert_eq!(
        (r["details"]["to_version"].as_u64(), r["target"]["uri"].as_str()),
        (Some(1), Some("/acme/v1/properties/shop/config"))
    );
    let mut config = doc["config"].clone();
    config["host_patterns"].as_array_mut().unwrap().push(json!({"pattern": "m.shop.example"}));
    let put =
        alice(req(Method::PUT, "/acme/v1/properties/shop/config")).header("If-Match", doc["etag"].as_str().unwrap());
    let reply = app.send(put.json(&json!({"config": config, "comment": "mobile"})).done()).await;
    ok(&reply, StatusCode::OK);
    let r = one(&app, "property.config.update").await;
    assert_eq!(r["details"], json!({"from_version": 1, "to_version": 2}));
    // A rollback: version 1's configuration again.
    let put = alice(req(Method::PUT, "/acme/v1/properties/shop/config"))
        .header("If-Match", reply.body["etag"].as_str().unwrap());
    ok(&app.send(put.json(&json!({"config": doc["config"], "comment": "back"})).done()).await, StatusCode::OK);
    let r = one(&app, "property.config.rollback").await;
    assert_eq!(r["details"], json!({"from_version": 2, "to_version": 3, "restored_version": 1}));

    // Purge.
    let purge = json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": "www.shop.example/a", "match_mode": "EXACT_LITERAL"}]}});
    let reply = app.send(alice(req(Method::POST, "/acme/v1/cache/purge")).json(&purge).done()).await;
    ok(&reply, StatusCode::SEE_OTHER);
    let r = one(&app, "cache.purge").await;
    assert_record(&r, "alice", "203.0.113.5", "purge", "PURGE");
    let id = reply.body["transaction_id"].as_i64().unwrap();
    assert_eq!(r["target"]["id"], id.to_string());
    assert_eq!(r["target"]["uri"], format!("/acme/v1/transactions/{id}"));
    assert_eq!(
        (r["details"]["uris"].as_u64(), r["details"]["first_uri"].as_str()),
        (Some(1), Some("www.shop.example/a"))
    );

    // Network lists.
    let reply = app
        .send(
            alice(req(Method::POST, "/acme/v1/config/networklists"))
                .json(&json!({"name": "Bad", "type": "IP", "list": ["192.0.2.1"]}))
                .done(),
        )
        .await;
    ok(&reply, StatusCode::CREATED);
    let list = reply.body["uri"].as_str().unwrap().to_string();
    let list_id = reply.body["id"].as_str().unwrap().to_string();
    let r = one(&app, "networklist.create").await;
    assert_record(&r, "alice", "203.0.113.5", "network_list", "Bad");
    assert_eq!(r["details"], json!({"type": "IP", "entries": 1}));
    ok(&app.send(alice(req(Method::PUT, &list)).json(&json!({"name": "Worse"})).done()).await, StatusCode::OK);
    assert_eq!(one(&app, "networklist.update").await["details"], json!({"name": "Worse"}));
    let reply = app
        .send(
            alice(req(Method::POST, &format!("{list}/entries")))
                .json(&json!([{"entry": "192.0.2.1"}, {"entry": "192.0.2.2"}]))
                .done(),
        )
        .await;
    ok(&reply, StatusCode::OK);
    assert_eq!(one(&app, "networklist.entries.add").await["details"], json!({"added": 1, "already_present": 1}));
    let reply = app.send(alice(req(Method::GET, &format!("{list}/entries"))).done()).await;
    let entry = reply.body["items"][0]["id"].as_str().unwrap().to_string();
    ok(&app.send(alice(req(Method::DELETE, &format!("{list}/entries/{entry}"))).done()).await, StatusCode::OK);
    assert_eq!(one(&app, "networklist.entry.delete").await["details"], json!({"entry": "192.0.2.1"}));
    ok(&app.send(alice(req(Method::POST, &format!("{list}/entries/deletions"))).done()).await, StatusCode::OK);
    assert_eq!(one(&app, "networklist.entries.clear").await["details"], json!({"removed": 1}));
    ok(&app.send(alice(req(Method::DELETE, &list)).done()).await, StatusCode::NO_CONTENT);
    let r = one(&app, "networklist.delete").await;
    assert_record(&r, "alice", "203.0.113.5", "network_list", "Worse");
    assert_eq!((r["target"]["id"].as_str(), r["target"]["uri"].clone()), (Some(list_id.as_str()), Value::Null), "gone");

    // Account.
    ok(
        &app.send(alice(req(Method::PUT, "/acme/v1/account")).json(&json!({"timezone": "Europe/Berlin"})).done()).await,
        StatusCode::OK,
    );
    let r = one(&app, "account.update").await;
    assert_record(&r, "alice", "203.0.113.5", "account", "acme");
    assert_eq!(r["details"], json!({"timezone": "Europe/Berlin"}));

    // API tokens: made, changed, rolled, revoked; a change made with one names it.
    let body = json!({"name": "deploy", "scopes": ["purge", "lists:write"], "expires": "2026-06-01T00:00:00Z"});
    let reply = app.send(alice(req(Method::POST, "/acme/v1/tokens")).json(&body).done()).await;
    ok(&reply, StatusCode::CREATED);
    let (token_uri, secret) = (reply.body["uri"].as_str().unwrap().to_string(), reply.body["secret"].clone());
    let r = one(&app, "token.create").await;
    assert_record(&r, "alice", "203.0.113.5", "token", "deploy");
    assert_eq!(r["target"]["uri"], token_uri.as_str());
    assert_eq!(
        r["details"],
        json!({"scopes": ["purge", "lists:write"], "expires": "2026-06-01T00:00:00.000Z", "allowed_cidrs": []})
    );
    assert!(!r.to_string().contains(secret.as_str().unwrap()), "never the secret");
    let reply = app.send(alice(req(Method::PUT, &token_uri)).json(&json!({"scopes": ["purge"]})).done()).await;
    ok(&reply, StatusCode::OK);
    assert_eq!(
        one(&app, "token.update").await["details"],
        json!({"scopes": ["purge"], "previous_scopes": ["purge", "lists:write"]})
    );
    let reply = app.send(alice(req(Method::POST, &format!("{token_uri}/roll"))).done()).await;
    ok(&reply, StatusCode::OK);
    assert_record(&one(&app, "token.roll").await, "alice", "203.0.113.5", "token", "deploy");
    ok(&app.send(alice(req(Method::DELETE, &token_uri)).done()).await, StatusCode::NO_CONTENT);
    let r = one(&app, "token.delete").await;
    assert_record(&r, "alice", "203.0.113.5", "token", "deploy");
    assert_eq!((r["details"].clone(), r["target"]["uri"].clone()), (json!({"user": "alice"}), Value::Null), "gone");

    // Deleting the user: its records stay, their target no longer links anywhere.
    ok(&app.send(alice(req(Method::DELETE, &user_uri)).done()).await, StatusCode::NO_CONTENT);
    assert_record(&one(&app, "user.delete").await, "alice", "203.0.113.5", "user", "bob");
    assert_eq!(one(&app, "user.create").await["target"]["uri"], Value::Null);

    // Sessions end by logout, and by expiry (the system).
    let reply = app.send(from(req(Method::DELETE, "/acme/v1/sessions/current")).cookie(&session).done()).await;
    ok(&reply, StatusCode::NO_CONTENT);
    assert_record(&one(&app, "session.delete").await, "alice", "203.0.113.5", "session", "alice");
    app.login("acme", "alice", PASSWORD).await;
    app.advance(31 * 60 * 1000);
    edge_server::upkeep(&app.state, false).await;
    let r = one(&app, "session.expire").await;
    assert_eq!((r["actor"]["type"].as_str(), r["source_address"].as_str()), (Some("system"), Some("")));

    // Every record of the customer was looked at above, and nothing else was recorded.
    let operations: std::collections::BTreeSet<String> =
        audit(&app, "count=1000").await.0.iter().map(|r| r["operation"].as_str().unwrap().to_string()).collect();
    let expected: std::collections::BTreeSet<String> = edge_api::AUDIT_OPERATIONS
        .iter()
        .map(|(op, _)| op.to_string())
        .filter(|op| !op.starts_with("login."))
        // Alerting's records are looked at in alerts.rs.
        .filter(|op| !op.starts_with("alert."))
        .collect();
    assert_eq!(operations, expected);
}

#[tokio::test]
async fn failed_logins_and_lockouts_are_recorded() {
    let app = TestApp::new().await;
    let attempt =
        |user: &str, password: &str| req(Method::POST, "/acme/v1/sessions").basic(user, password).peer("203.0.113.9");
    assert_eq!(app.send(attempt("alice", "wrong password!!").done()).await.status, StatusCode::UNAUTHORIZED);
    let r = one(&app, "login.failure").await;
    assert_eq!((r["outcome"].as_str(), r["details"]["reason"].as_str()), (Some("failure"), Some("wrong password")));
    assert_eq!((r["actor"]["name"].as_str(), r["source_address"].as_str()), (Some("alice"), Some("203.0.113.9")));
    assert_eq!(r["actor"]["id"], app.user_id("acme", "alice").await);
    assert_eq!(app.send(attempt("nobody", "wrong password!!").done()).await.status, StatusCode::UNAUTHORIZED);
    let (items, _) = audit(&app, "operation=login.failure&actor=nobody").await;
    assert_eq!((items.len(), items[0]["actor"]["id"].clone()), (1, Value::Null));
    assert_eq!(items[0]["details"]["reason"], "unknown username");
    // Nine more for alice: the tenth locks her out of this address, recorded once; refused attempts are not
    // failures of their own.
    for _ in 0..9 {
        app.send(attempt("alice", "wrong password!!").done()).await;
    }
    assert_eq!(app.send(attempt("alice", PASSWORD).done()).await.status, StatusCode::TOO_MANY_REQUESTS);
    let r = one(&app, "login.lockout").await;
    assert_eq!(
        (r["outcome"].as_str(), r["details"]["scope"].as_str()),
        (Some("failure"), Some("username from this address"))
    );
    assert_eq!(audit(&app, "operation=login.failure&actor=alice").await.1, 10);
    // Another customer's log has none of it; its own failures only.
    let reply = app.send(req(Method::GET, "/globex/v1/audit?operation=login").basic("gina", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 0);
}

#[tokio::test]
async fn the_log_is_for_administrators_filtered_and_paged() {
    let app = TestApp::new().await;
    app.add_user("acme", "olga", "operator").await;
    app.add_user("acme", "vic", "viewer").await;
    for user in ["olga", "vic"] {
        let reply = app.send(req(Method::GET, "/acme/v1/audit").basic(user, PASSWORD).done()).await;
        assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    }
    for i in 0..5 {
        app.advance(60_000);
        app.add_user("acme", &format!("u{i}"), "viewer").await;
    }
    // Newest first, paged with the network-list envelope.
    let reply = app
        .send(req(Method::GET, "/acme/v1/audit?operation=user.create&count=2&page=2").basic("alice", PASSWORD).done())
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let b = &reply.body;
    assert_eq!(
        (b["total"].as_u64(), b["page_count"].as_u64(), b["has_more"].as_bool()),
        (Some(7), Some(4), Some(true))
    );
    assert_eq!(
        b["items"].as_array().unwrap().iter().map(|r| r["target"]["name"].clone()).collect::<Vec<_>>(),
        [json!("u2"), json!("u1")]
    );
    assert_eq!(b["uri"], "/acme/v1/audit?page=2&count=2&operation=user.create");
    assert_eq!(b["next_uri"], "/acme/v1/audit?page=3&count=2&operation=user.create");
    assert_eq!(b["prev_uri"], "/acme/v1/audit?page=1&count=2&operation=user.create");
    // A prefix of operations, time bounds, actor and target.
    assert_eq!(audit(&app, "operation=user").await.1, 7);
    assert_eq!(audit(&app, "operation=use").await.1, 0, "a prefix ends at a dot");
    assert_eq!(audit(&app, "from=2026-01-01T00:02:00Z&to=2026-01-01T00:04:00.000%2B0000").await.1, 2);
    assert_eq!(audit(&app, "actor=alice&operation=user.create").await.1, 7);
    let alice_id = app.user_id("acme", "alice").await;
    assert_eq!(audit(&app, &format!("actor={alice_id}&operation=user.create")).await.1, 7);
    let u3 = app.user_id("acme", "u3").await;
    let (items, total) = audit(&app, &format!("target={u3}")).await;
    assert_eq!((total, items[0]["target"]["name"].as_str()), (1, Some("u3")));
    assert_eq!(audit(&app, &format!("target=user:{u3}")).await.1, 1);
    assert_eq!(audit(&app, &format!("target=property:{u3}")).await.1, 0);
    for bad in ["from=yesterday", "to=2026-01-01", "page=0", "count=1001"] {
        let reply = app.send(req(Method::GET, &format!("/acme/v1/audit?{bad}")).basic("alice", PASSWORD).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
    }
    // Another customer sees only its own.
    let reply = app.send(req(Method::GET, "/globex/v1/audit").basic("gina", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 1, "{}", reply.body);
    assert_eq!(reply.body["items"][0]["operation"], "customer.create");
}

#[tokio::test]
async fn records_past_the_retention_are_pruned() {
    let app = TestApp::with(|s| s.audit_retention_days = 30).await;
    app.add_user("acme", "old", "viewer").await;
    app.advance(20 * 24 * 60 * 60 * 1000);
    app.add_user("acme", "new", "viewer").await;
    app.advance(11 * 24 * 60 * 60 * 1000);
    edge_server::upkeep(&app.state, true).await;
    let (items, total) = audit(&app, "").await;
    assert_eq!(total, 1, "{items:#?}");
    assert_eq!(items[0]["target"]["name"], "new");
}

/// A change and its record are one transaction: when the record cannot be written (a trigger refuses every
/// insert into the audit log), no change is made, whatever the operation.
#[tokio::test]
async fn a_change_whose_record_cannot_be_written_is_not_made() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let session = app.login("acme", "bob", PASSWORD).await;
    let doc = app.add_property("shop", &["www.shop.example"]).await;
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/config/networklists")
                .basic("alice", PASSWORD)
                .json(&json!({"name": "L", "type": "IP", "list": []}))
                .done(),
        )
        .await;
    let list = reply.body["uri"].as_str().unwrap().to_string();

    let db = app.raw_db().await;
    let refuse = if app.on_postgres() {
        vec![
            "CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS
             $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$",
            "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_audit()",
        ]
    } else {
        vec!["CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'audit refused'); END"]
    };
    for statement in refuse {
        query(statement).execute(&db).await.unwrap();
    }
    let snapshot = || async {
        let mut counts = Vec::new();
        for table in [
            "users",
            "sessions",
            "property_versions",
            "purge_transactions",
            "network_lists",
            "network_list_entries",
            "tasks",
            "otp_seeds",
            "password_resets",
        ] {
            let n: i64 = query(format!("SELECT COUNT(*) FROM {table}")).scalar(&db).await.unwrap();
            counts.push((table, n));
        }
        let account: String =
            query("SELECT display_name || timezone FROM customers WHERE name = 'acme'").scalar(&db).await.unwrap();
        let bob_row: String = query("SELECT full_name || role || password_hash FROM users WHERE id = $1")
            .bind(&bob)
            .scalar(&db)
            .await
            .unwrap();
        (counts, account, bob_row)
    };
    let before = snapshot().await;
    let alice = |m: Method, uri: &str| req(m, uri).basic("alice", PASSWORD);
    let user_uri = format!("/acme/v1/users/{bob}");
    let changes: Vec<(&str, Req)> = vec![
        ("login", req(Method::POST, "/acme/v1/sessions").basic("alice", PASSWORD)),
        ("logout", req(Method::DELETE, "/acme/v1/sessions/current").cookie(&session)),
        (
            "user.create",
            alice(Method::POST, "/acme/v1/users")
                .json(&json!({"username": "carl", "password": PASSWORD, "role": {"id": "viewer"}})),
        ),
        ("user.update", alice(Method::PUT, &user_uri).json(&json!({"full_name": "Robert"}))),
        ("user.role_change", alice(Method::PUT, &user_uri).json(&json!({"role": {"id": "admin"}}))),
        ("user.delete", alice(Method::DELETE, &user_uri)),
        (
            "password change",
            req(Method::PUT, &format!("{user_uri}/password"))
                .basic("bob", PASSWORD)
                .json(&json!({"password": "another password!"})),
        ),
        ("password reset", alice(Method::POST, &format!("{user_uri}/password/resets"))),
        ("otp seed", req(Method::POST, &format!("{user_uri}/otp/seeds")).basic("bob", PASSWORD)),
        ("account", alice(Method::PUT, "/acme/v1/account").json(&json!({"display_name": "Changed"}))),
        (
            "property",
            alice(Method::POST, "/acme/v1/properties")
                .json(&json!({"name": "blog", "host_patterns": ["blog.example"]})),
        ),
        (
            "config",
            alice(Method::PUT, "/acme/v1/properties/shop/config")
                .header("If-Match", doc["etag"].as_str().unwrap())
                .json(&json!({"config": doc["config"], "comment": "same"})),
        ),
        (
            "list create",
            alice(Method::POST, "/acme/v1/config/networklists")
                .json(&json!({"name": "M", "type": "GEO", "list": ["DE"]})),
        ),
        ("list update", alice(Method::PUT, &list).json(&json!({"name": "N"}))),
        ("entries", alice(Method::POST, &format!("{list}/entries")).json(&json!([{"entry": "192.0.2.1"}]))),
        ("clear", alice(Method::POST, &format!("{list}/entries/deletions"))),
        ("list delete", alice(Method::DELETE, &list)),
    ];
    for (what, change) in changes {
        let reply = app.send(change.done()).await;
        assert_error(&reply, StatusCode::INTERNAL_SERVER_ERROR, "internal_error");
        assert_eq!(snapshot().await, before, "{what} changed something without its record");
    }
    let purge = json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": "www.shop.example/a", "match_mode": "EXACT_LITERAL"}]}});
    let reply = app.send(alice(Method::POST, "/acme/v1/cache/purge").json(&purge).done()).await;
    assert_eq!((reply.status, reply.body["code"].as_u64()), (StatusCode::SERVICE_UNAVAILABLE, Some(503)));
    assert_eq!(snapshot().await, before, "purge");
    // The session is still there and works; with the log writable again, changes go through.
    let reply = app.send(req(Method::GET, &user_uri).cookie(&session).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let drop = if app.on_postgres() { "DROP TRIGGER refuse_audit ON audit_log" } else { "DROP TRIGGER refuse_audit" };
    query(drop).execute(&db).await.unwrap();
    let reply = app.send(alice(Method::PUT, &user_uri).json(&json!({"full_name": "Robert"})).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(one(&app, "user.update").await["details"], json!({"full_name": "Robert"}));
}

#[tokio::test]
async fn record_ids_are_random_so_they_tell_nothing_of_other_customers() {
    let app = TestApp::new().await;
    app.add_user("acme", "bob", "viewer").await;
    let (items, _) = audit(&app, "").await;
    let reply = app.send(req(Method::GET, "/globex/v1/audit").basic("gina", PASSWORD).done()).await;
    let theirs = reply.body["items"].as_array().unwrap().clone();
    let mut ids: Vec<&str> = items.iter().chain(&theirs).map(|r| r["id"].as_str().unwrap()).collect();
    for id in &ids {
        assert!(id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), items.len() + theirs.len(), "distinct");
}
