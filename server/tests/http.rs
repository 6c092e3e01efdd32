//! The HTTP surface around the API: JSON errors everywhere, static files with the client-route fallback,
//! health check and the OpenAPI document.

mod common;

use axum::http::{Method, StatusCode, header};
use common::*;

#[tokio::test]
async fn unknown_api_paths_and_versions_answer_json_404_never_the_console() {
    let app = TestApp::new().await;
    for path in ["/acme/v1/nothing-here", "/acme/v2/sessions", "/acme/v1", "/nosuch/v1/sessions/current/x"] {
        let reply = app.send(req(Method::GET, path).done()).await;
        assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    }
}

#[tokio::test]
async fn a_wrong_method_answers_405_json_with_allow() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::PATCH, "/acme/v1/sessions/current").done()).await;
    assert_error(&reply, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    assert_eq!(reply.headers.get(header::ALLOW).unwrap(), "GET,HEAD,PUT,DELETE");
}

#[tokio::test]
async fn a_body_over_the_limit_answers_413_json() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let big = format!("{{\"id\": \"{}\"}}", "x".repeat(11 * 1024 * 1024));
    let reply =
        app.send(req(Method::PUT, "/acme/v1/sessions/current").cookie(&id).raw("application/json", big).done()).await;
    assert_error(&reply, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
}

#[tokio::test]
async fn a_body_that_is_not_json_answers_415_json() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let reply =
        app.send(req(Method::PUT, "/acme/v1/sessions/current").cookie(&id).raw("text/plain", "hi").done()).await;
    assert_error(&reply, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
}

#[tokio::test]
async fn api_answers_are_not_cached_and_carry_security_headers() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.headers.get(header::CACHE_CONTROL).unwrap(), "no-store");
    assert_eq!(reply.headers.get(header::X_CONTENT_TYPE_OPTIONS).unwrap(), "nosniff");
    assert_eq!(reply.headers.get(header::REFERRER_POLICY).unwrap(), "no-referrer");
    assert_eq!(reply.headers.get("x-frame-options").unwrap(), "DENY");
}

#[tokio::test]
async fn client_routes_get_the_console_and_assets_are_served_with_long_caching() {
    let app = TestApp::new().await;
    for path in ["/", "/login", "/acme/stats", "/acme/users/123"] {
        let reply = app.send(req(Method::GET, path).done()).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert!(String::from_utf8_lossy(&reply.raw).contains("<title>Edge Console</title>"), "{path}");
        assert_eq!(reply.headers.get(header::CACHE_CONTROL).unwrap(), "no-cache", "{path}");
    }
    let reply = app.send(req(Method::GET, "/app-1234.js").done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.raw, b"console.log(1)");
    assert_eq!(reply.headers.get(header::CACHE_CONTROL).unwrap(), "public, max-age=31536000, immutable");
}

#[tokio::test]
async fn static_files_cannot_escape_the_static_dir() {
    let app = TestApp::new().await;
    std::fs::write(app.dir.path().join("secret.txt"), "secret").unwrap();
    let reply = app.send(req(Method::GET, "/../secret.txt").done()).await;
    assert!(!String::from_utf8_lossy(&reply.raw).contains("secret"));
    let reply = app.send(req(Method::GET, "/%2e%2e/secret.txt").done()).await;
    assert!(!String::from_utf8_lossy(&reply.raw).contains("secret"));
}

#[tokio::test]
async fn healthz_answers_200() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::GET, "/healthz").done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["status"], "ok");
}

#[tokio::test]
async fn openapi_documents_every_session_operation_with_the_customer_parameter() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::GET, "/openapi.json").done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let paths = reply.body["paths"].as_object().unwrap();
    let expected = [
        ("/{customer}/v1/sessions", vec!["post"]),
        ("/{customer}/v1/sessions/current", vec!["get", "put", "delete"]),
        ("/{customer}/v1/sessions/{session_id}", vec!["get", "put", "delete"]),
    ];
    for (path, methods) in expected {
        for method in methods {
            let op = &paths[path][method];
            assert!(op.is_object(), "{method} {path} documented");
            let params = op["parameters"].as_array().unwrap();
            assert!(params.iter().any(|p| p["name"] == "customer" && p["in"] == "path"), "{method} {path}");
        }
    }
}
