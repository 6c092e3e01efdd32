//! Tasks through the router: read a page at a time and filtered by status, operation and time in storage, and
//! pruned (with the purges they track) once finished longer than the retention.

use crate::common;

use std::collections::HashSet;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

async fn tasks(app: &TestApp, query: &str) -> Value {
    let reply = app.send(req(Method::GET, &format!("/acme/v1/tasks?{query}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body
}

async fn purge(app: &TestApp) -> i64 {
    let body = json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": "www.shop.example/a", "match_mode": "EXACT_LITERAL"}]}});
    let reply = app.send(req(Method::POST, "/acme/v1/cache/purge").basic("alice", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    reply.body["transaction_id"].as_i64().unwrap()
}

#[tokio::test]
async fn tasks_page_newest_first_and_filter_by_status_operation_and_time() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/config/networklists")
                .basic("alice", PASSWORD)
                .json(&json!({"name": "L", "type": "IP", "list": []}))
                .done(),
        )
        .await;
    let list = reply.body["uri"].as_str().unwrap().to_string();
    for i in 0..40u32 {
        app.advance(1000);
        let entry = json!([{"entry": std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string()}]);
        let reply = app.send(req(Method::POST, &list).basic("alice", PASSWORD).json(&entry).done()).await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    app.advance(1000);
    purge(&app).await;
    // 43 tasks, one a second; the newest still run (acknowledgements take up to 6.5 s).
    let all = tasks(&app, "count=1000").await;
    assert_eq!(all["total"], 43);
    let begins: Vec<&str> =
        all["items"].as_array().unwrap().iter().map(|t| t["begin_time"].as_str().unwrap()).collect();
    assert!(begins.windows(2).all(|w| w[0] >= w[1]), "newest first");
    // Pages of 10: five pages, disjoint, together the whole list in the same order.
    let mut seen = Vec::new();
    for page in 1..=5 {
        let body = tasks(&app, &format!("count=10&page={page}")).await;
        assert_eq!((body["total"].as_u64(), body["page_count"].as_u64()), (Some(43), Some(5)));
        assert_eq!(body["has_more"], page < 5);
        seen.extend(body["items"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_string()));
    }
    let everything: Vec<String> =
        all["items"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(seen, everything);
    assert_eq!(tasks(&app, "count=10&page=9").await["items"], json!([]));
    // Status, as the tasks themselves say it now.
    let mut by_status = std::collections::BTreeMap::new();
    for t in all["items"].as_array().unwrap() {
        *by_status.entry(t["status"].as_str().unwrap().to_string()).or_insert(0u64) += 1;
    }
    assert!(
        by_status.get("RUNNING").copied().unwrap_or(0) > 0 && by_status.get("COMPLETED").copied().unwrap_or(0) > 0,
        "{by_status:?}"
    );
    for (status, n) in &by_status {
        let body = tasks(&app, &format!("status={status}&count=3")).await;
        assert_eq!(body["total"], *n, "{status}");
        assert!(body["items"].as_array().unwrap().iter().all(|t| t["status"] == status.as_str()));
    }
    assert_eq!(tasks(&app, "status=FAILED").await["total"], 0);
    assert_eq!(tasks(&app, "operation=purge").await["total"], 1);
    assert_eq!(tasks(&app, "operation=networklist.deploy&count=5").await["total"], 41);
    // Since: what changed after a time — running tasks, and those that ended after it.
    let since = all["items"][10]["last_updated"].as_str().unwrap();
    let body = tasks(&app, &format!("since={}&count=1000", since.replace('+', "%2B"))).await;
    let expected: HashSet<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "RUNNING" || t["last_updated"].as_str().unwrap() > since)
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    let got: HashSet<&str> = body["items"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(got, expected);
    assert_eq!(body["total"], expected.len());
}

#[tokio::test]
async fn finished_tasks_are_pruned_after_the_retention_with_the_purges_they_track() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let old_purge = purge(&app).await;
    let old_task = tasks(&app, "operation=purge").await["items"][0]["id"].as_str().unwrap().to_string();
    // The default retention: 30 days after a task ended.
    app.advance(29 * 24 * 60 * 60 * 1000);
    let recent_purge = purge(&app).await;
    app.advance(2 * 24 * 60 * 60 * 1000);
    purge(&app).await;
    edge_server::upkeep(&app.state, true).await;

    let body = tasks(&app, "").await;
    assert_eq!(body["total"], 2, "the property's creation and the first purge are gone: {body:#}");
    let reply = app.send(req(Method::GET, &format!("/acme/v1/tasks/{old_task}")).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply =
        app.send(req(Method::GET, &format!("/acme/v1/transactions/{old_purge}")).basic("alice", PASSWORD).done()).await;
    assert_eq!((reply.status, reply.body["code"].as_u64()), (StatusCode::NOT_FOUND, Some(404)));
    let reply = app
        .send(req(Method::GET, &format!("/acme/v1/transactions/{recent_purge}")).basic("alice", PASSWORD).done())
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = app.send(req(Method::GET, "/acme/v1/transactions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body.as_array().unwrap().len(), 2);
}

/// The tasks of `customer`'s page, by operation: (user_name, target_name, purge).
async fn who_and_what(app: &TestApp, customer: &str, user: &str) -> Vec<(String, Value, Value, Value)> {
    let reply =
        app.send(req(Method::GET, &format!("/{customer}/v1/tasks?count=100")).basic(user, PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let field = |k: &str| t.get(k).cloned().unwrap_or(Value::Null);
            (t["operation"].as_str().unwrap().to_string(), field("user_name"), field("target_name"), field("purge"))
        })
        .collect()
}

#[tokio::test]
async fn a_task_names_who_started_it_and_what_it_changed_and_a_purge_its_first_uris() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    app.add_user("acme", "olga", "operator").await;
    app.advance(1000);
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/config/networklists")
                .basic("olga", PASSWORD)
                .json(&json!({"name": "Blocked bots", "type": "IP", "list": ["192.0.2.1"]}))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    app.advance(1000);
    let uris: Vec<Value> = (0..5)
        .map(|i| json!({"uri_pattern": format!("www.shop.example/img/{i}.png"), "match_mode": "EXACT_LITERAL"}))
        .collect();
    let body = json!({"purge_request": {"action": "EXPIRE", "uris": uris}});
    let reply = app.send(req(Method::POST, "/acme/v1/cache/purge").basic("olga", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    let transaction = reply.body["transaction_id"].clone();

    let tasks = who_and_what(&app, "acme", "alice").await;
    assert_eq!(
        tasks,
        vec![
            (
                "purge".to_string(),
                json!("olga"),
                Value::Null,
                json!({
                    "transaction_id": transaction,
                    "action": "EXPIRE",
                    "uri_count": 5,
                    "uris": ["www.shop.example/img/0.png", "www.shop.example/img/1.png", "www.shop.example/img/2.png"],
                })
            ),
            ("networklist.deploy".to_string(), json!("olga"), json!("Blocked bots"), Value::Null),
            ("config.deploy".to_string(), json!("alice"), json!("shop"), Value::Null),
        ]
    );
    // One task reads the same, and the purge listing shows the same first patterns.
    let reply = app.send(req(Method::GET, "/acme/v1/tasks?operation=purge").basic("alice", PASSWORD).done()).await;
    let id = reply.body["items"][0]["id"].as_str().unwrap().to_string();
    let one = app.send(req(Method::GET, &format!("/acme/v1/tasks/{id}")).basic("alice", PASSWORD).done()).await;
    assert_eq!((one.status, &one.body), (StatusCode::OK, &reply.body["items"][0]));
    let reply = app.send(req(Method::GET, "/acme/v1/transactions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body[0]["sample"], json!(tasks[0].3["uris"]));
    assert_eq!(reply.body[0]["uri_count"], 5);

    // The names are those of when the task began: renaming the user and the list later changes no task.
    let olga = app.user_id("acme", "olga").await;
    let rename = json!({"username": "olga.k"});
    let reply = app
        .send(req(Method::PUT, &format!("/acme/v1/users/{olga}")).basic("alice", PASSWORD).json(&rename).done())
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(who_and_what(&app, "acme", "alice").await, tasks);
    // A viewer reads the same names.
    app.add_user("acme", "vera", "viewer").await;
    assert_eq!(who_and_what(&app, "acme", "vera").await, tasks);

    // Another customer sees none of it, and nothing of its own names leaks into acme's.
    let theirs = who_and_what(&app, "globex", "gina").await;
    assert!(theirs.is_empty(), "{theirs:?}");
    let reply = app.send(req(Method::GET, &format!("/globex/v1/tasks/{id}")).basic("gina", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

/// Tasks and purges stored before tasks kept names: the migration that adds them names each by its user and
/// target as they are, and a purge by its first patterns.
#[tokio::test]
async fn tasks_stored_before_names_are_named_by_the_migration() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    app.advance(1000);
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/config/networklists")
                .basic("alice", PASSWORD)
                .json(&json!({"name": "Partners", "type": "GEO", "list": ["FR"]}))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    app.advance(1000);
    let uris: Vec<Value> = (0..4)
        .map(|i| json!({"uri_pattern": format!("www.shop.example/{i}"), "match_mode": "EXACT_LITERAL"}))
        .collect();
    let body = json!({"purge_request": {"action": "PURGE", "uris": uris}});
    let reply = app.send(req(Method::POST, "/acme/v1/cache/purge").basic("alice", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    let named = who_and_what(&app, "acme", "alice").await;

    // As the store was before: no names, no samples, the migration not applied.
    let db = app.raw_db().await;
    for sql in [
        "ALTER TABLE tasks DROP COLUMN user_name",
        "ALTER TABLE tasks DROP COLUMN target_name",
        "ALTER TABLE purge_transactions DROP COLUMN sample",
        "DELETE FROM _sqlx_migrations WHERE version = 13",
    ] {
        edge_server::store::db::query(sql).execute(&db).await.unwrap();
    }
    let restarted = edge_server::app(app.restarted().await);
    use tower::ServiceExt;
    let response = restarted.oneshot(req(Method::GET, "/acme/v1/tasks").basic("alice", PASSWORD).done()).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(who_and_what(&app, "acme", "alice").await, named);
    assert_eq!(named[0].3["uris"], json!(["www.shop.example/0", "www.shop.example/1", "www.shop.example/2"]));
}
