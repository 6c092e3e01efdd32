//! Network lists through the router: create, read, paging, entries in both payload forms, limits, deletion,
//! and the deployment tasks of each change.

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

async fn create(app: &TestApp, name: &str, list_type: &str, entries: &[&str]) -> Value {
    let body = json!({"name": name, "type": list_type, "description": "d", "list": entries});
    let reply =
        app.send(req(Method::POST, "/acme/v1/config/networklists").basic("alice", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body
}

#[tokio::test]
async fn a_list_is_created_with_normalised_unique_entries_and_read_back() {
    let app = TestApp::new().await;
    let list = create(&app, "Scanners", "IP", &["10.0.0.0/8", "192.0.2.7", "192.0.2.7/32", "2001:DB8::1"]).await;
    let id = list["id"].as_str().unwrap();
    let uri = format!("/acme/v1/config/networklists/{id}");
    assert_eq!(list["uri"], uri);
    assert_eq!(list["type"], "IP");
    assert_eq!(list["list"], json!(["10.0.0.0/8", "192.0.2.7", "2001:db8::1"]));
    assert_eq!(list["entries_uri"], format!("{uri}/entries"));
    assert_eq!(list["entries_batch_deletion_uri"], format!("{uri}/entries/deletions"));
    assert_eq!(list["deprecated"], false);
    assert!(list.get("modified_timestamp").is_none(), "not modified after creation");
    assert_eq!(list["creation_timestamp"], "2026-01-01T00:00:00Z");

    let reply = app.send(req(Method::GET, &uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["list"], list["list"]);
    let reply = app.send(req(Method::GET, &format!("{uri}?includelist=false")).basic("alice", PASSWORD).done()).await;
    assert!(reply.body.get("list").is_none());
    let reply = app.send(req(Method::GET, &format!("{uri}?includelist=maybe")).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
}

#[tokio::test]
async fn invalid_lists_and_entries_are_refused_with_every_problem_and_nothing_created() {
    let app = TestApp::new().await;
    for (body, kind) in [
        (json!({"name": "x", "type": "MAC"}), "invalid_network_list"),
        (json!({"name": "", "type": "IP"}), "invalid_network_list"),
        (json!({"name": "x", "type": "GEO", "list": ["DE", "UK", "XX"]}), "invalid_entries"),
    ] {
        let reply = app
            .send(req(Method::POST, "/acme/v1/config/networklists").basic("alice", PASSWORD).json(&body).done())
            .await;
        assert_error(&reply, StatusCode::BAD_REQUEST, kind);
        if kind == "invalid_entries" {
            assert_eq!(
                reply.body["details"],
                json!([{"message": "[1]: \"UK\" is not an ISO 3166-1 alpha-2 country code"}, {"message": "[2]: \"XX\" is not an ISO 3166-1 alpha-2 country code"}])
            );
        }
    }
    let reply = app.send(req(Method::GET, "/acme/v1/config/networklists").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 0);
}

/// Issue 25: `1.2.3.4/8` was stored as `1.0.0.0/8` (16.7 million addresses) without a word. A range with host
/// bits set is refused with the network it would mean, in a new list and added to one; nothing is stored.
#[tokio::test]
async fn a_range_with_host_bits_set_is_refused_with_the_network_it_would_mean() {
    let app = TestApp::new().await;
    let body = json!({"name": "x", "type": "IP", "list": ["192.0.2.7", "1.2.3.4/8"]});
    let reply =
        app.send(req(Method::POST, "/acme/v1/config/networklists").basic("alice", PASSWORD).json(&body).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_entries");
    assert_eq!(
        reply.body["details"],
        json!([{"message": "[1]: \"1.2.3.4/8\" has host bits set: did you mean 1.0.0.0/8?"}])
    );
    let reply = app.send(req(Method::GET, "/acme/v1/config/networklists").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 0, "no list was created");

    let list = create(&app, "Scanners", "IP", &["192.0.2.7"]).await;
    let uri = list["uri"].as_str().unwrap();
    for (entry, meant) in
        [("1.2.3.4/8", "1.0.0.0/8"), ("2001:db8::1/32", "2001:db8::/32"), ("10.0.0.1/31", "10.0.0.0/31")]
    {
        let reply = app
            .send(
                req(Method::POST, &format!("{uri}/entries"))
                    .basic("alice", PASSWORD)
                    .json(&json!([{"entry": entry}]))
                    .done(),
            )
            .await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_entries");
        assert_eq!(
            reply.body["details"][0]["message"],
            format!("[0]: {entry:?} has host bits set: did you mean {meant}?")
        );
    }
    let reply = app.send(req(Method::GET, uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["list"], json!(["192.0.2.7"]), "nothing was added");
    // The network itself is taken as it is.
    let reply = app
        .send(
            req(Method::POST, &format!("{uri}/entries"))
                .basic("alice", PASSWORD)
                .json(&json!([{"entry": "1.0.0.0/8"}]))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["added"], 1);
}

#[tokio::test]
async fn lists_page_exactly_as_the_api_describes() {
    let app = TestApp::new().await;
    for i in 0..12 {
        create(&app, &format!("list {i:02}"), if i % 2 == 0 { "IP" } else { "GEO" }, &[]).await;
    }
    let get = |q: &str| req(Method::GET, &format!("/acme/v1/config/networklists{q}")).basic("alice", PASSWORD).done();
    let reply = app.send(get("")).await;
    assert_eq!(
        (reply.body["total"].clone(), reply.body["page_count"].clone()),
        (json!(12), json!(2)),
        "10 per page by default"
    );
    assert_eq!(reply.body["items"].as_array().unwrap().len(), 10);
    assert!(reply.body["items"][0].get("list").is_none(), "items carry no entries");
    let reply = app.send(get("?page=1&count=5")).await;
    assert_eq!(reply.body["page_index"], 1);
    assert_eq!(reply.body["page_count"], 3);
    assert_eq!(reply.body["has_more"], true);
    assert_eq!(reply.body["prev_uri"], Value::Null);
    assert_eq!(reply.body["next_uri"], "/acme/v1/config/networklists?page=2&count=5");
    let reply = app.send(get("?page=3&count=5")).await;
    assert_eq!(reply.body["has_more"], false);
    assert_eq!(reply.body["next_uri"], Value::Null);
    assert_eq!(reply.body["prev_uri"], "/acme/v1/config/networklists?page=2&count=5");
    assert_eq!(reply.body["items"].as_array().unwrap().len(), 2);
    let reply = app.send(get("?page=4&count=5")).await;
    assert_eq!(reply.body["items"], json!([]));
    let reply = app.send(get("?type=GEO&count=100")).await;
    assert_eq!(reply.body["total"], 6);
    assert!(reply.body["items"].as_array().unwrap().iter().all(|l| l["type"] == "GEO"));
    for bad in ["?page=0", "?count=0", "?type=MAC", "?deprecated=perhaps"] {
        assert_error(&app.send(get(bad)).await, StatusCode::BAD_REQUEST, "invalid_parameter");
    }
}

#[tokio::test]
async fn deprecated_lists_are_left_out_unless_asked_for() {
    let app = TestApp::new().await;
    let list = create(&app, "Old", "IP", &["192.0.2.1"]).await;
    create(&app, "New", "IP", &[]).await;
    let uri = list["uri"].as_str().unwrap();
    let reply = app
        .send(
            req(Method::PUT, uri)
                .basic("alice", PASSWORD)
                .json(&json!({"deprecated": true, "name": "Old (deprecated)"}))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["deprecated"], true);
    assert_eq!(reply.body["name"], "Old (deprecated)");
    assert_eq!(reply.body["modified_timestamp"], "2026-01-01T00:00:00Z");
    let reply = app.send(req(Method::GET, "/acme/v1/config/networklists").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 1);
    let reply = app
        .send(req(Method::GET, "/acme/v1/config/networklists?deprecated=true").basic("alice", PASSWORD).done())
        .await;
    assert_eq!(reply.body["total"], 2);
    let reply =
        app.send(req(Method::PUT, uri).basic("alice", PASSWORD).json(&json!({"deprecated": false})).done()).await;
    assert_eq!(reply.body["deprecated"], false);
}

#[tokio::test]
async fn entries_are_added_in_both_payload_forms_at_both_addresses_and_merged_when_present() {
    let app = TestApp::new().await;
    let list = create(&app, "L", "IP", &["192.0.2.1"]).await;
    let uri = list["uri"].as_str().unwrap();
    let body = json!([{"entry": "192.0.2.1"}, {"value": "198.51.100.0/24"}, {"entry": "2001:db8::/32"}]);
    let reply = app.send(req(Method::POST, uri).basic("alice", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["added"], 2);
    assert_eq!(reply.body["already_present"], 1);
    assert_eq!(reply.body["task"]["operation"], "networklist.deploy");
    assert_eq!(reply.body["task"]["status"], "RUNNING");
    assert!(reply.body["list"].get("list").is_none());
    let reply = app
        .send(
            req(Method::POST, &format!("{uri}/entries"))
                .basic("alice", PASSWORD)
                .json(&json!([{"value": "203.0.113.9"}]))
                .done(),
        )
        .await;
    assert_eq!(reply.body["added"], 1);
    let reply = app.send(req(Method::GET, uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["list"], json!(["192.0.2.1", "198.51.100.0/24", "2001:db8::/32", "203.0.113.9"]));

    for (body, kind) in
        [(json!([{"entry": "nope"}]), "invalid_entries"), (json!([{"other": "1.2.3.4"}]), "invalid_entries")]
    {
        let reply = app.send(req(Method::POST, uri).basic("alice", PASSWORD).json(&body).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, kind);
    }
}

#[tokio::test]
async fn at_most_5000_entries_per_call_and_50000_per_list() {
    let app = TestApp::new().await;
    let list = create(&app, "Big", "IP", &[]).await;
    let uri = list["uri"].as_str().unwrap();
    let batch = |start: u32, n: u32| -> Value {
        Value::Array(
            (start..start + n)
                .map(|i| json!({"entry": std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string()}))
                .collect(),
        )
    };
    let reply = app.send(req(Method::POST, uri).basic("alice", PASSWORD).json(&batch(0, 5001)).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "limit_exceeded");
    for call in 0..10 {
        let reply =
            app.send(req(Method::POST, uri).basic("alice", PASSWORD).json(&batch(call * 5000, 5000)).done()).await;
        assert_eq!(reply.status, StatusCode::OK, "call {call}: {}", reply.body);
    }
    let reply = app.send(req(Method::POST, uri).basic("alice", PASSWORD).json(&batch(60_000, 1)).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "limit_exceeded");
    let reply = app.send(req(Method::GET, &format!("{uri}/entries?count=1")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 50_000, "the refused call added nothing");
}

#[tokio::test]
async fn entries_page_and_are_removed_one_by_one_or_all_at_once() {
    let app = TestApp::new().await;
    let list = create(&app, "L", "GEO", &["DE", "FR", "IT", "ES", "PT"]).await;
    let uri = list["uri"].as_str().unwrap();
    let reply = app.send(req(Method::GET, &format!("{uri}/entries")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 5);
    assert_eq!(reply.body["page_count"], 1, "100 per page by default");
    let reply =
        app.send(req(Method::GET, &format!("{uri}/entries?page=2&count=2")).basic("alice", PASSWORD).done()).await;
    let items = reply.body["items"].as_array().unwrap().clone();
    assert_eq!(items.iter().map(|e| e["entry"].clone()).collect::<Vec<_>>(), [json!("IT"), json!("ES")]);
    assert_eq!(items[0]["added_by"], "alice");
    assert_eq!(reply.body["next_uri"], format!("{uri}/entries?page=3&count=2"));
    let entry_id = items[0]["id"].as_str().unwrap();
    assert_eq!(items[0]["uri"], format!("{uri}/entries/{entry_id}"));

    let reply = app.send(req(Method::GET, &format!("{uri}/entries?q=t")).basic("alice", PASSWORD).done()).await;
    let found: Vec<_> = reply.body["items"].as_array().unwrap().iter().map(|e| e["entry"].clone()).collect();
    assert_eq!(found, [json!("IT"), json!("PT")], "search is case-insensitive");
    assert_eq!(reply.body["uri"], format!("{uri}/entries?page=1&count=100&q=t"));

    let reply = app.send(req(Method::GET, &format!("{uri}/entries/{entry_id}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["type"], "GEO");
    assert_eq!(reply.body["network_list_uri"], uri);
    assert_eq!(reply.body["id"], entry_id);

    let reply = app.send(req(Method::DELETE, &format!("{uri}/{entry_id}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["operation"], "networklist.deploy");
    let reply =
        app.send(req(Method::DELETE, &format!("{uri}/entries/{entry_id}")).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let other = items[1]["id"].as_str().unwrap();
    let reply = app.send(req(Method::DELETE, &format!("{uri}/entries/{other}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);

    // The batch-deletion address is not an entry: reading or deleting "the entry deletions" finds none.
    for method in [Method::GET, Method::DELETE] {
        let reply = app.send(req(method, &format!("{uri}/entries/deletions")).basic("alice", PASSWORD).done()).await;
        assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    }
    let reply = app.send(req(Method::POST, &format!("{uri}/entries/deletions")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["operation"], "networklist.deploy");
    let reply = app.send(req(Method::GET, uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["list"], json!([]), "the list stays, empty");
}

#[tokio::test]
async fn deleting_a_list_removes_it() {
    let app = TestApp::new().await;
    let list = create(&app, "L", "IP", &["192.0.2.1"]).await;
    let uri = list["uri"].as_str().unwrap();
    let reply = app.send(req(Method::DELETE, uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    assert!(reply.raw.is_empty());
    assert!(reply.headers.get("x-task-uri").is_some());
    let reply = app.send(req(Method::GET, uri).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::DELETE, uri).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn viewers_read_lists_but_change_nothing_and_other_customers_see_nothing() {
    let app = TestApp::new().await;
    app.add_user("acme", "vic", "viewer").await;
    let list = create(&app, "L", "IP", &["192.0.2.1"]).await;
    let uri = list["uri"].as_str().unwrap();
    let reply = app.send(req(Method::GET, uri).basic("vic", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    for (method, path, body) in [
        (Method::POST, uri.to_string(), json!([{"entry": "192.0.2.2"}])),
        (Method::PUT, uri.to_string(), json!({"name": "x"})),
        (Method::DELETE, uri.to_string(), json!(null)),
        (Method::POST, "/acme/v1/config/networklists".to_string(), json!({"name": "x", "type": "IP"})),
    ] {
        let reply = app.send(req(method, &path).basic("vic", PASSWORD).json(&body).done()).await;
        assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    }
    let other = uri.replace("/acme/", "/globex/");
    let reply = app.send(req(Method::GET, &other).basic("gina", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::DELETE, &other).basic("gina", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::GET, uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["list"], json!(["192.0.2.1"]), "untouched");
}

#[tokio::test]
async fn each_change_is_a_task_that_runs_then_completes() {
    let app = TestApp::new().await;
    let list = create(&app, "L", "IP", &[]).await;
    let uri = list["uri"].as_str().unwrap();
    let reply =
        app.send(req(Method::POST, uri).basic("alice", PASSWORD).json(&json!([{"entry": "192.0.2.1"}])).done()).await;
    let task = reply.body["task"].clone();
    let task_uri = task["uri"].as_str().unwrap().to_string();
    assert_eq!(task["progress"], 0);
    assert_eq!(task["complete"], false);
    assert!(task.get("end_time").is_none());
    assert_eq!(task["target"]["uri"], uri);
    app.advance(2_000);
    let reply = app.send(req(Method::GET, &task_uri).basic("alice", PASSWORD).done()).await;
    let p = reply.body["progress"].as_u64().unwrap();
    assert!(p > 0 && p < 100 && reply.body["status"] == "RUNNING", "{}", reply.body);
    app.advance(10_000);
    let reply = app.send(req(Method::GET, &task_uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["status"], "COMPLETED");
    assert_eq!(reply.body["progress"], 100);
    assert_eq!(reply.body["complete"], true);
    assert!(reply.body["end_time"].as_str().is_some());
    assert!(reply.body.get("error_info").is_none());

    let list_tasks = |q: &str| req(Method::GET, &format!("/acme/v1/tasks{q}")).basic("alice", PASSWORD).done();
    let reply = app.send(list_tasks("")).await;
    assert_eq!(reply.body["total"], 2, "creation and addition");
    let reply = app.send(list_tasks("?status=RUNNING")).await;
    assert_eq!(reply.body["total"], 0);
    let reply = app.send(list_tasks("?operation=purge")).await;
    assert_eq!(reply.body["total"], 0);
    let reply = app.send(list_tasks("?since=2026-01-01T00:00:20.000%2B0000")).await;
    assert_eq!(reply.body["total"], 0, "nothing changed after 00:00:20");
    let reply = app.send(list_tasks("?since=2026-01-01T00:00:01.000Z&count=1")).await;
    assert_eq!(reply.body["total"], 2);
    assert_eq!(reply.body["has_more"], true);
    for bad in ["?status=DONE", "?since=yesterday", "?count=0"] {
        assert_error(&app.send(list_tasks(bad)).await, StatusCode::BAD_REQUEST, "invalid_parameter");
    }
    let reply = app.send(req(Method::GET, "/acme/v1/tasks/nope").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply =
        app.send(req(Method::GET, &task_uri.replace("/acme/", "/globex/")).basic("gina", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_additions_to_one_list_all_succeed() {
    let app = TestApp::new().await;
    let list = create(&app, "L", "IP", &[]).await;
    let uri = list["uri"].as_str().unwrap().to_string();
    let mut handles = Vec::new();
    for i in 0..32u32 {
        let router = app.router.clone();
        let body = json!([{"entry": std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string()}]);
        let request = req(Method::POST, &format!("{uri}/entries")).basic("alice", PASSWORD).json(&body).done();
        handles.push(tokio::spawn(async move {
            use tower::ServiceExt;
            router.oneshot(request).await.unwrap().status()
        }));
    }
    for h in handles {
        assert_eq!(h.await.unwrap(), StatusCode::OK, "every concurrent addition is accepted");
    }
    let reply = app.send(req(Method::GET, &format!("{uri}/entries")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 32);
}

/// Gives property `name` of acme the traffic-shaping rules `rules` (name, action, values, enabled), matching
/// network lists.
async fn shape(app: &TestApp, name: &str, rules: &[(&str, &str, &[&str], bool)]) {
    let uri = format!("/acme/v1/properties/{name}/config");
    let reply = app.send(req(Method::GET, &uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let mut config = reply.body["config"].clone();
    config["security"]["traffic_shaping_rules"] = rules
        .iter()
        .enumerate()
        .map(|(i, (rule, action, values, enabled))| {
            let mut r = json!({"id": format!("r{i}"), "name": rule, "action": action, "match_type": "NETWORK_LIST",
                               "values": values, "enabled": enabled});
            if *action == "RATE_LIMIT" {
                r["rate_limit_per_minute"] = json!(60);
            }
            r
        })
        .collect();
    let etag = reply.body["etag"].as_str().unwrap().to_string();
    let body = json!({"config": config, "comment": "rules"});
    let reply =
        app.send(req(Method::PUT, &uri).basic("alice", PASSWORD).header("if-match", &etag).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

async fn usage(app: &TestApp, customer: &str, user: &str, list: &str) -> (StatusCode, Value) {
    let uri = format!("/{customer}/v1/config/networklists/{list}/usage");
    let reply = app.send(req(Method::GET, &uri).basic(user, PASSWORD).done()).await;
    (reply.status, reply.body)
}

#[tokio::test]
async fn a_list_says_which_properties_and_rules_use_it() {
    let app = TestApp::new().await;
    let scanners = create(&app, "Scanners", "IP", &["192.0.2.1"]).await["id"].as_str().unwrap().to_string();
    let partners = create(&app, "Partners", "GEO", &["FR"]).await["id"].as_str().unwrap().to_string();
    app.add_property("shop", &["www.shop.example"]).await;
    app.add_property("api", &["api.shop.example"]).await;
    app.add_property("blog", &["blog.shop.example"]).await;
    let both: &[&str] = &[&partners, &scanners];
    shape(
        &app,
        "shop",
        &[
            ("Block scanners", "BLOCK", &[&scanners], true),
            ("Watch partners", "WARN", &[&partners], true),
            ("Slow both", "RATE_LIMIT", both, false),
        ],
    )
    .await;
    shape(&app, "api", &[("Scanners (log)", "WARN", &[&scanners], true)]).await;
    shape(&app, "blog", &[("Partners only", "BLOCK", &[&partners], true)]).await;

    let (status, body) = usage(&app, "acme", "alice", &scanners).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"has_more": false, "properties": [
            {"property": "api", "uri": "/acme/v1/properties/api/config", "version": 2, "rule_count": 1, "rules": [
                {"id": "r0", "name": "Scanners (log)", "action": "WARN", "enabled": true}]},
            {"property": "shop", "uri": "/acme/v1/properties/shop/config", "version": 2, "rule_count": 2, "rules": [
                {"id": "r0", "name": "Block scanners", "action": "BLOCK", "enabled": true},
                {"id": "r2", "name": "Slow both", "action": "RATE_LIMIT", "enabled": false}]},
        ]})
    );
    // A rule's name that mentions the id is not a use: only a NETWORK_LIST rule's values are.
    shape(&app, "blog", &[(&scanners, "BLOCK", &[&partners], true)]).await;
    let (_, body) = usage(&app, "acme", "alice", &scanners).await;
    assert_eq!(body["properties"].as_array().unwrap().len(), 2, "{body}");
    // A list no rule uses.
    let unused = create(&app, "Unused", "IP", &[]).await["id"].as_str().unwrap().to_string();
    assert_eq!(
        usage(&app, "acme", "alice", &unused).await,
        (StatusCode::OK, json!({"properties": [], "has_more": false}))
    );

    // Viewers read it; another customer cannot tell the list exists; an unknown list is 404.
    app.add_user("acme", "vera", "viewer").await;
    assert_eq!(usage(&app, "acme", "vera", &scanners).await.0, StatusCode::OK);
    let (status, body) = usage(&app, "globex", "gina", &scanners).await;
    assert_eq!((status, body["type"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")), "{body}");
    assert_eq!(usage(&app, "acme", "alice", "ip_nope").await.0, StatusCode::NOT_FOUND);
    // `usage` is no entry's id: removing it is 404 like any missing entry, and changes nothing.
    let uri = format!("/acme/v1/config/networklists/{scanners}/usage");
    let reply = app.send(req(Method::DELETE, &uri).basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn a_list_used_by_more_than_100_properties_names_the_first_100() {
    let app = TestApp::new().await;
    let list = create(&app, "Everywhere", "IP", &["192.0.2.1"]).await["id"].as_str().unwrap().to_string();
    for i in 0..101 {
        let name = format!("p{i:03}");
        app.add_property(&name, &[&format!("{name}.shop.example")]).await;
        shape(&app, &name, &[("Block", "BLOCK", &[&list], true)]).await;
    }
    let (status, body) = usage(&app, "acme", "alice", &list).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> =
        body["properties"].as_array().unwrap().iter().map(|p| p["property"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 100);
    assert_eq!((names[0], names[99], &body["has_more"]), ("p000", "p099", &json!(true)));
}
