//! Bounded input through the router (issue 19's review, findings 3 and 5): every text a request carries has a
//! limit, checked before any work or storage, answered with a 4xx and the JSON error body; the audit log keeps a
//! bounded, marked prefix of what someone typed; `system` is no username.

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

async fn audit(app: &TestApp, query: &str) -> Value {
    let reply = app.send(req(Method::GET, &format!("/acme/v1/audit?{query}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body
}

#[tokio::test]
async fn oversized_credentials_are_refused_before_they_are_counted_checked_or_recorded() {
    let app = TestApp::new().await;
    // The review's request: a 380 KB username, twenty times.
    let huge = "u".repeat(380_000);
    for _ in 0..20 {
        let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic(&huge, "wrong password!!").done()).await;
        assert_error(&reply, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "header_too_large");
    }
    // Under the header limit, over the username's: 400, not a failed login.
    let reply =
        app.send(req(Method::POST, "/acme/v1/sessions").basic(&"u".repeat(257), "wrong password!!").done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "credentials_too_long");
    let reply = app.send(req(Method::GET, "/acme/v1/account").basic("alice", &"p".repeat(1025)).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "credentials_too_long");
    let log = audit(&app, "operation=login").await;
    assert_eq!(log["total"], 0, "nothing recorded: {log}");
    let reply = app.send(req(Method::GET, "/acme/v1/audit?count=5").basic("alice", PASSWORD).done()).await;
    assert!(reply.raw.len() < 4096, "the log stays small: {} bytes", reply.raw.len());
    // The limits themselves are allowed.
    let name = "n".repeat(256);
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic(&name, &"p".repeat(1024)).done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
}

#[tokio::test]
async fn system_cannot_be_a_username_and_the_actor_filter_system_means_the_server() {
    let app = TestApp::new().await;
    for name in ["system", "System", "SYSTEM"] {
        let body = json!({"username": name, "password": PASSWORD, "role": {"id": "viewer"}});
        let reply = app.send(req(Method::POST, "/acme/v1/users").basic("alice", PASSWORD).json(&body).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_user");
    }
    let bob = app.add_user("acme", "bob", "viewer").await;
    let reply = app
        .send(
            req(Method::PUT, &format!("/acme/v1/users/{bob}"))
                .basic("alice", PASSWORD)
                .json(&json!({"username": "system"}))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_user");
    // A failed login typed as `system` is a user's record, not the server's.
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("system", "wrong password!!").done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "invalid_credentials");
    let log = audit(&app, "actor=system").await;
    let items = log["items"].as_array().unwrap();
    assert!(!items.is_empty());
    assert!(items.iter().all(|r| r["actor"]["type"] == "system"), "{log:#}");
}

#[tokio::test]
async fn long_descriptions_comments_and_names_are_refused_and_change_nothing() {
    let app = TestApp::new().await;
    let session = app.login("acme", "alice", PASSWORD).await;
    let five_mb = "d".repeat(5 * 1024 * 1024);
    // A network list's description (every listing carries it).
    let body = json!({"name": "blocked", "type": "IP", "description": five_mb});
    let reply = app.send(req(Method::POST, "/acme/v1/config/networklists").cookie(&session).json(&body).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_network_list");
    let body = json!({"name": "blocked", "type": "IP", "description": "d".repeat(2000)});
    let reply = app.send(req(Method::POST, "/acme/v1/config/networklists").cookie(&session).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let list = reply.body["uri"].as_str().unwrap().to_string();
    let reply =
        app.send(req(Method::PUT, &list).cookie(&session).json(&json!({"description": "d".repeat(2001)})).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_network_list");
    let reply = app.send(req(Method::GET, "/acme/v1/config/networklists").cookie(&session).done()).await;
    assert_eq!(reply.body["items"][0]["description"].as_str().map(str::len), Some(2000));

    // A configuration version's comment, and a node's name.
    let doc = app.add_property("shop", &["www.shop.example"]).await;
    let put = |config: &Value, comment: &str, etag: &str| {
        req(Method::PUT, "/acme/v1/properties/shop/config")
            .cookie(&session)
            .header("If-Match", etag)
            .json(&json!({"config": config, "comment": comment}))
            .done()
    };
    let etag = doc["etag"].as_str().unwrap();
    let reply = app.send(put(&doc["config"], &five_mb, etag)).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
    let mut config = doc["config"].clone();
    config["origins"] =
        json!([{"name": "o".repeat(201), "host": "origin.shop.example", "port": 443, "protocol": "https"}]);
    let reply = app.send(put(&config, "", etag)).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_config");
    assert_eq!(reply.body["details"][0]["message"], "$.origins[0].name: at most 200 characters");
    let reply = app.send(req(Method::GET, "/acme/v1/properties/shop/config/versions").cookie(&session).done()).await;
    assert_eq!(reply.body.as_array().map(Vec::len), Some(1), "no version was stored");

    // A user's phone number padded with spaces.
    let body = json!({"username": "carl", "password": PASSWORD, "role": {"id": "viewer"},
                      "phone_number": format!("+1 555 0100{}", " ".repeat(100_000))});
    let reply = app.send(req(Method::POST, "/acme/v1/users").cookie(&session).json(&body).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_user");
    assert!(reply.raw.len() < 4096, "the answer quotes a bounded part: {} bytes", reply.raw.len());
}

#[tokio::test]
async fn long_query_parameters_header_values_and_addresses_are_refused() {
    let app = TestApp::new().await;
    let long = "a".repeat(2049);
    for path in [
        format!("/acme/v1/audit?actor={long}"),
        format!("/acme/v1/users?q={long}"),
        format!("/acme/v1/stats/data?starttime=2026-01-01T00:00:00&endtime=2026-01-02T00:00:00&filters=domain=={long}"),
    ] {
        let reply = app.send(req(Method::GET, &path).basic("alice", PASSWORD).done()).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
        assert!(reply.body["details"][0]["message"].as_str().unwrap().contains("at most 2048"), "{}", reply.body);
    }
    let reply = app
        .send(
            req(Method::GET, "/acme/v1/account")
                .basic("alice", PASSWORD)
                .header("X-OTP-Token", &"1".repeat(8193))
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "header_too_large");
    let reply = app.send(req(Method::GET, &format!("/acme/v1/users/{}", "x".repeat(17_000))).done()).await;
    assert_error(&reply, StatusCode::URI_TOO_LONG, "uri_too_long");
    // Purge paths keep their own body.
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/cache/purge")
                .basic("alice", PASSWORD)
                .header("X-Filler", &"f".repeat(9000))
                .done(),
        )
        .await;
    assert_eq!((reply.status, reply.body["code"].as_u64()), (StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, Some(431)));
}

#[tokio::test]
async fn the_audit_log_keeps_a_bounded_marked_prefix_of_what_a_request_typed() {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example"]).await;
    let uri = format!("www.shop.example/{}", "p".repeat(2000));
    let body =
        json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": uri, "match_mode": "EXACT_LITERAL"}]}});
    let reply = app.send(req(Method::POST, "/acme/v1/cache/purge").basic("alice", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    let log = audit(&app, "operation=cache.purge").await;
    let details = &log["items"][0]["details"];
    let first = details["first_uri"].as_str().unwrap();
    assert!(first.len() <= 256 && first.ends_with('…') && uri.starts_with(first.trim_end_matches('…')), "{first}");
    assert_eq!(details["cut"], json!(["details.first_uri"]));
    // A detail of an error answer that quotes what was sent is bounded too.
    let body = json!({"name": "l", "type": "IP", "list": ["x".repeat(100_000)]});
    let reply =
        app.send(req(Method::POST, "/acme/v1/config/networklists").basic("alice", PASSWORD).json(&body).done()).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_entries");
    assert!(reply.raw.len() < 2048, "{} bytes", reply.raw.len());
}

#[tokio::test]
async fn the_openapi_document_states_the_limits() {
    let app = TestApp::new().await;
    let doc = app.send(req(Method::GET, "/openapi.json").done()).await.body;
    let schemas = &doc["components"]["schemas"];
    let schema = |name: &str, field: &str| schemas[name]["properties"][field]["maxLength"].clone();
    assert_eq!(schema("NewUser", "username"), 128);
    // 1,024 bytes of UTF-8 whatever the characters: 256 characters.
    assert_eq!(schema("NewUser", "password"), 256);
    assert_eq!(schema("PasswordChange", "password"), 256);
    for variant in schemas["NewNetworkList"]["oneOf"].as_array().unwrap() {
        assert_eq!(variant["properties"]["description"]["maxLength"], 2000);
    }
    assert_eq!(schema("UpdatePropertyModel", "comment"), 1000);
    let uri = &schemas["PurgeRequest"]["properties"]["purge_request"]["properties"]["uris"]["items"]["properties"];
    assert_eq!(uri["uri_pattern"]["maxLength"], 2048);
    let param = |path: &str, name: &str| {
        let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap().clone();
        params.into_iter().find(|p| p["name"] == name).unwrap()["schema"]["maxLength"].clone()
    };
    // 2,048 bytes of UTF-8 whatever the characters: 512 characters.
    assert_eq!(param("/{customer}/v1/stats/data", "filters"), 512);
    assert_eq!(param("/{customer}/v1/audit", "actor"), 2048);
    assert_eq!(param("/{customer}/v1/users", "q"), 2048);
    let key = doc["paths"]["/{customer}/v1/ingest/accesslogs"]["post"]["parameters"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "Idempotency-Key"))
        .map(|p| p["schema"].clone())
        .unwrap_or_default();
    assert_eq!((key["minLength"].as_u64(), key["maxLength"].as_u64()), (Some(1), Some(200)), "{key}");
    // Each parameter within its bound, several together can still pass the request line's 16,384 bytes: every
    // operation with a query documents the 414 (the contract fuzzer found /audit's undocumented), and one with a
    // header parameter the 431.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            if params.iter().any(|p| p["in"] == "query") {
                assert!(op["responses"]["414"].is_object(), "{method} {path} does not document 414");
            }
            if params.iter().any(|p| p["in"] == "header") {
                assert!(op["responses"]["431"].is_object(), "{method} {path} does not document 431");
            }
        }
    }
}
