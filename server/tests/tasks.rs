//! Tasks through the router: read a page at a time and filtered by status, operation and time in storage, and
//! pruned (with the purges they track) once finished longer than the retention.

mod common;

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
