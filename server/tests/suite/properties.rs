//! Property configuration through the router: ETag, If-Match, lost-update prevention under concurrent writers,
//! node matching, validation, history, diff and rollback.

use crate::common;

use axum::http::{Method, StatusCode, header};
use common::*;
use edge_server::store::db::query;
use serde_json::{Value, json};

const URI: &str = "/acme/v1/properties/shop/config";

async fn get(app: &TestApp) -> (String, Value) {
    let reply = app.send(req(Method::GET, URI).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let etag = reply.headers.get(header::ETAG).unwrap().to_str().unwrap().to_string();
    assert_eq!(reply.body["etag"], etag, "the same etag in the header and the body");
    (etag, reply.body)
}

fn put(etag: Option<&str>, config: &Value, comment: &str) -> axum::http::Request<axum::body::Body> {
    let mut r = req(Method::PUT, URI).basic("alice", PASSWORD);
    if let Some(e) = etag {
        r = r.header("if-match", e);
    }
    r.json(&json!({"config": config, "comment": comment})).done()
}

#[tokio::test]
async fn a_config_is_read_with_a_strong_etag_that_changes_on_every_update() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let (etag, doc) = get(&app).await;
    assert!(etag.starts_with("\"1-") && etag.ends_with('"'), "strong, quoted: {etag}");
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["config"]["name"], "shop");
    assert_eq!(doc["config"]["readonly"]["kind"], "property");
    assert_eq!(doc["config"]["host_patterns"][0]["readonly"]["author"], "alice");

    let mut config = doc["config"].clone();
    config["cache_rules"] = json!([{"path_pattern": "/img/*", "ttl_seconds": 3600}]);
    let reply = app.send(put(Some(&etag), &config, "cache images")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let new_etag = reply.headers.get(header::ETAG).unwrap().to_str().unwrap();
    assert_ne!(new_etag, etag);
    assert_eq!(reply.body["version"], 2);
    assert_eq!(reply.body["comment"], "cache images");
    assert_eq!(reply.body["config"]["cache_rules"][0]["readonly"]["kind"], "cache_rule");
    // Sending back exactly what was read changes nothing but the version.
    let same = reply.body["config"].clone();
    let reply = app.send(put(Some(new_etag), &same, "no-op")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["config"], same);
}

#[tokio::test]
async fn an_update_needs_if_match_and_a_stale_one_is_409_with_the_current_etag() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let (etag, doc) = get(&app).await;
    let config = doc["config"].clone();
    assert_error(&app.send(put(None, &config, "")).await, StatusCode::PRECONDITION_REQUIRED, "precondition_required");
    assert_error(
        &app.send(put(Some("*"), &config, "")).await,
        StatusCode::PRECONDITION_REQUIRED,
        "precondition_required",
    );
    let reply = app.send(put(Some(&etag), &config, "first")).await;
    assert_eq!(reply.status, StatusCode::OK);
    let current = reply.body["etag"].as_str().unwrap().to_string();
    let reply = app.send(put(Some(&etag), &config, "second, from a stale read")).await;
    assert_error(&reply, StatusCode::CONFLICT, "stale_etag");
    assert_eq!(reply.headers.get(header::ETAG).unwrap(), current.as_str());
    let (_, doc) = get(&app).await;
    assert_eq!(doc["comment"], "first", "the stale update changed nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_parallel_updates_with_the_same_etag_exactly_one_wins() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let (etag, doc) = get(&app).await;
    let mut handles = Vec::new();
    for i in 0..24 {
        let router = app.router.clone();
        let mut config = doc["config"].clone();
        config["cache_rules"] = json!([{"path_pattern": format!("/writer-{i}/*"), "ttl_seconds": i}]);
        let request = put(Some(&etag), &config, &format!("writer {i}"));
        handles.push(tokio::spawn(async move {
            use tower::ServiceExt;
            router.oneshot(request).await.unwrap().status()
        }));
    }
    let mut statuses = Vec::new();
    for h in handles {
        statuses.push(h.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::OK).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CONFLICT).count(), 23, "{statuses:?}");
    let (_, doc) = get(&app).await;
    assert_eq!(doc["version"], 2);
    let reply = app.send(req(Method::GET, &format!("{URI}/versions")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body.as_array().unwrap().len(), 2, "one accepted update, one new version");
}

#[tokio::test]
async fn nodes_match_by_id_then_by_read_only_part_and_read_only_fields_are_protected() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example", "shop.example"]).await;
    let (etag, doc) = get(&app).await;
    let original = doc["config"]["host_patterns"][1].clone();

    // Change a node's id: it is matched by its read-only part and stays a copy of the existing node.
    let mut config = doc["config"].clone();
    config["host_patterns"][1]["id"] = json!("apex");
    let reply = app.send(put(Some(&etag), &config, "rename node")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["config"]["host_patterns"][1]["id"], "apex");
    assert_eq!(reply.body["config"]["host_patterns"][1]["readonly"], original["readonly"]);
    let etag = reply.body["etag"].as_str().unwrap().to_string();

    let mut config = reply.body["config"].clone();
    config["host_patterns"][0]["readonly"]["created"] = json!("1999-01-01T00:00:00.000Z");
    config["host_patterns"]
        .as_array_mut()
        .unwrap()
        .push(json!({"pattern": "m.shop.example", "readonly": {"author": "me"}}));
    let reply = app.send(put(Some(&etag), &config, "")).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
    assert_eq!(
        reply.body["details"],
        json!([
            {"message": "$.host_patterns[0].readonly: read-only fields of an existing node must not change"},
            {"message": "$.host_patterns[2].readonly: a new node may not set read-only fields"}
        ])
    );
}

#[tokio::test]
async fn an_invalid_config_lists_every_problem_by_node_path_and_changes_nothing() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let (etag, doc) = get(&app).await;
    let mut config = doc["config"].clone();
    config["host_patterns"].as_array_mut().unwrap().push(json!({"pattern": "*.com"}));
    config["origins"] = json!([{"name": "o", "host": "origin.example", "port": 70000, "protocol": "https"}]);
    config["security"] = json!({"traffic_shaping_rules": [
        {"name": "block", "action": "BLOCK", "match_type": "NETWORK_LIST", "values": ["no-such-list"]},
        {"name": "limit", "action": "RATE_LIMIT", "match_type": "IP", "values": ["10.0.0.0/33"], "rate_limit_per_minute": 10}
    ]});
    let reply = app.send(put(Some(&etag), &config, "")).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
    // A malformed node is reported before content checks, in words: no parser's `expected u16`.
    assert_eq!(
        reply.body["details"],
        json!([{"message": "$.origins[0].port: 70,000 is over 65,535; a port is a whole number from 1 to 65,535"}])
    );

    config["origins"][0]["port"] = json!(443);
    let reply = app.send(put(Some(&etag), &config, "")).await;
    let details = reply.body["details"].as_array().unwrap();
    let messages: Vec<&str> = details.iter().map(|d| d["message"].as_str().unwrap()).collect();
    assert_eq!(
        messages,
        [
            "$.host_patterns[1].pattern: \"*.com\" is not a host name or *.domain wildcard in lower case",
            "$.security.traffic_shaping_rules[0].values[0]: there is no network list \"no-such-list\"",
            "$.security.traffic_shaping_rules[1].values[0]: \"10.0.0.0/33\" is not an IP address or CIDR range",
        ]
    );
    let (still, _) = get(&app).await;
    assert_eq!(still, etag, "nothing changed");

    for (body, kind) in [(json!({"comment": "no config"}), "invalid_json"), (json!({"config": 5}), "invalid_config")] {
        let reply =
            app.send(req(Method::PUT, URI).basic("alice", PASSWORD).header("if-match", &etag).json(&body).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, kind);
    }
}

#[tokio::test]
async fn a_reference_to_an_existing_network_list_is_accepted() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let body = json!({"name": "Bad", "type": "IP", "list": ["192.0.2.1"]});
    let reply =
        app.send(req(Method::POST, "/acme/v1/config/networklists").basic("alice", PASSWORD).json(&body).done()).await;
    let list_id = reply.body["id"].as_str().unwrap().to_string();
    let (etag, doc) = get(&app).await;
    let mut config = doc["config"].clone();
    config["security"] = json!({"traffic_shaping_rules": [{"name": "b", "action": "BLOCK", "match_type": "NETWORK_LIST", "values": [list_id]}]});
    let reply = app.send(put(Some(&etag), &config, "")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

#[tokio::test]
async fn history_diff_and_rollback() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let (etag, doc) = get(&app).await;
    let v1 = doc["config"].clone();
    let mut config = v1.clone();
    config["host_patterns"].as_array_mut().unwrap().push(json!({"id": "m", "pattern": "m.shop.example"}));
    let reply = app.send(put(Some(&etag), &config, "add mobile")).await;
    let etag = reply.body["etag"].as_str().unwrap().to_string();

    let reply = app.send(req(Method::GET, &format!("{URI}/versions")).basic("alice", PASSWORD).done()).await;
    let versions = reply.body.as_array().unwrap();
    assert_eq!(versions.iter().map(|v| v["version"].clone()).collect::<Vec<_>>(), [json!(2), json!(1)]);
    assert_eq!(versions[0]["comment"], "add mobile");
    assert_eq!(versions[0]["author"], "alice");

    let reply = app.send(req(Method::GET, &format!("{URI}/diff?from=1&to=2")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body.as_array().unwrap().len(), 1);
    assert_eq!(reply.body[0]["path"], "$.host_patterns[id=m]");
    assert_eq!(reply.body[0]["op"], "added");

    // Rollback: an update with version 1's configuration.
    let reply = app.send(req(Method::GET, &format!("{URI}/versions/1")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["config"], v1);
    let reply = app.send(put(Some(&etag), &reply.body["config"], "roll back to 1")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["version"], 3);
    assert_eq!(reply.body["config"], v1);

    for (path, status, kind) in [
        (format!("{URI}/versions/9"), StatusCode::NOT_FOUND, "not_found"),
        (format!("{URI}/versions/x"), StatusCode::BAD_REQUEST, "invalid_parameter"),
        (format!("{URI}/diff?from=1"), StatusCode::BAD_REQUEST, "invalid_parameter"),
        (format!("{URI}/diff?from=1&to=7"), StatusCode::NOT_FOUND, "not_found"),
    ] {
        assert_error(&app.send(req(Method::GET, &path).basic("alice", PASSWORD).done()).await, status, kind);
    }
}

#[tokio::test]
async fn each_accepted_update_starts_a_deployment_task() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let (etag, doc) = get(&app).await;
    app.send(put(Some(&etag), &doc["config"], "")).await;
    let reply =
        app.send(req(Method::GET, "/acme/v1/tasks?operation=config.deploy").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 2, "creation and update");
    assert_eq!(reply.body["items"][0]["target"], json!({"id": "shop", "uri": URI}));
}

#[tokio::test]
async fn unknown_properties_roles_and_other_customers() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    app.add_user("acme", "vic", "viewer").await;
    let (etag, doc) = get(&app).await;
    let reply = app.send(req(Method::GET, "/acme/v1/properties/nope/config").basic("alice", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::GET, URI).basic("vic", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "viewers read configurations");
    let reply = app
        .send(
            req(Method::PUT, URI)
                .basic("vic", PASSWORD)
                .header("if-match", &etag)
                .json(&json!({"config": doc["config"]}))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let reply = app.send(req(Method::GET, "/globex/v1/properties/shop/config").basic("gina", PASSWORD).done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    let reply = app.send(req(Method::GET, "/acme/v1/properties").basic("vic", PASSWORD).done()).await;
    assert_eq!(reply.body[0]["name"], "shop");
    assert_eq!(reply.body[0]["host_patterns"], json!(["www.shop.example"]));
    for (body, status, kind) in [
        (json!({"name": "shop", "host_patterns": []}), StatusCode::CONFLICT, "conflict"),
        (json!({"name": "Bad Name"}), StatusCode::BAD_REQUEST, "invalid_config"),
        (json!({"name": "x", "host_patterns": ["not a host"]}), StatusCode::BAD_REQUEST, "invalid_config"),
    ] {
        let reply =
            app.send(req(Method::POST, "/acme/v1/properties").basic("alice", PASSWORD).json(&body).done()).await;
        assert_error(&reply, status, kind);
    }
}

/// Rolling back to any earlier version works whatever was added or removed since: nodes removed since come
/// back with the read-only parts they had, a node that took a removed node's id goes, new nodes go.
#[tokio::test]
async fn rolling_back_to_any_earlier_version_brings_back_removed_nodes_as_they_were() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let update = |mut config: Value, change: &dyn Fn(&mut Value)| {
        change(&mut config);
        config
    };
    let (etag, doc) = get(&app).await;
    // 2: two cache rules and an origin.
    let v2 = update(doc["config"].clone(), &|c| {
        c["cache_rules"] = json!([
            {"id": "a", "path_pattern": "/a/*", "ttl_seconds": 60},
            {"id": "b", "path_pattern": "/b/*", "ttl_seconds": 60}
        ]);
        c["origins"] =
            json!([{"id": "o", "name": "origin", "host": "origin.shop.example", "port": 443, "protocol": "https"}]);
    });
    let reply = app.send(put(Some(&etag), &v2, "2")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // 3: "a" and the origin removed, "c" added.
    let v3 = update(reply.body["config"].clone(), &|c| {
        c["cache_rules"].as_array_mut().unwrap().remove(0);
        c["cache_rules"].as_array_mut().unwrap().push(json!({"id": "c", "path_pattern": "/c/*", "ttl_seconds": 1}));
        c["origins"] = json!([]);
    });
    let reply = app.send(put(Some(reply.body["etag"].as_str().unwrap()), &v3, "3")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // 4: "b" removed, and a new node takes the id "a".
    let v4 = update(reply.body["config"].clone(), &|c| {
        c["cache_rules"].as_array_mut().unwrap().remove(0);
        c["cache_rules"].as_array_mut().unwrap().push(json!({"id": "a", "path_pattern": "/new/*", "ttl_seconds": 5}));
    });
    let reply = app.send(put(Some(reply.body["etag"].as_str().unwrap()), &v4, "4")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);

    let mut etag = reply.body["etag"].as_str().unwrap().to_string();
    for (n, target) in [3, 2, 1, 2, 4].into_iter().enumerate() {
        let old = app.send(req(Method::GET, &format!("{URI}/versions/{target}")).basic("alice", PASSWORD).done()).await;
        let reply = app.send(put(Some(&etag), &old.body["config"], &format!("back to {target}"))).await;
        assert_eq!(reply.status, StatusCode::OK, "back to {target}: {}", reply.body);
        assert_eq!(reply.body["config"], old.body["config"], "version {target} exactly, read-only parts included");
        assert_eq!(reply.body["version"], 5 + n as u64);
        etag = reply.body["etag"].as_str().unwrap().to_string();
    }

    // The read-only part of a node of another property is not this property's to restore.
    app.add_property("blog", &["blog.example"]).await;
    let blog = app.send(req(Method::GET, "/acme/v1/properties/blog/config").basic("alice", PASSWORD).done()).await;
    let stolen = app.send(req(Method::GET, &format!("{URI}/versions/2")).basic("alice", PASSWORD).done()).await;
    let mut config = blog.body["config"].clone();
    config["cache_rules"] = json!([stolen.body["config"]["cache_rules"][0].clone()]);
    let reply = app
        .send(
            req(Method::PUT, "/acme/v1/properties/blog/config")
                .basic("alice", PASSWORD)
                .header("if-match", blog.body["etag"].as_str().unwrap())
                .json(&json!({"config": config, "comment": ""}))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
    assert_eq!(
        reply.body["details"][0]["message"],
        "$.cache_rules[0].readonly: a new node may not set read-only fields"
    );
}

/// Versions stored before the server kept a registry of nodes: the migration that adds it reads their nodes,
/// so rolling back to them works too.
#[tokio::test]
async fn versions_stored_before_the_node_registry_can_be_rolled_back_to() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let (etag, doc) = get(&app).await;
    let mut config = doc["config"].clone();
    config["cache_rules"] = json!([{"id": "a", "path_pattern": "/a/*", "ttl_seconds": 60}]);
    let reply = app.send(put(Some(&etag), &config, "2")).await;
    let mut config = reply.body["config"].clone();
    config["cache_rules"] = json!([]);
    let reply = app.send(put(Some(reply.body["etag"].as_str().unwrap()), &config, "3")).await;
    let etag = reply.body["etag"].as_str().unwrap().to_string();

    // As the store was before the registry: no table, its migration not applied (each store's migration
    // fills it from the history with its own JSON functions).
    let db = app.raw_db().await;
    query("DROP TABLE property_nodes").execute(&db).await.unwrap();
    query("DELETE FROM _sqlx_migrations WHERE version = 4").execute(&db).await.unwrap();
    let restarted = app.restarted().await;
    let router = edge_server::app(restarted);
    use tower::ServiceExt;
    let v2 = app.send(req(Method::GET, &format!("{URI}/versions/2")).basic("alice", PASSWORD).done()).await;
    let response = router.oneshot(put(Some(&etag), &v2.body["config"], "back to 2")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}
