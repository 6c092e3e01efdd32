//! Cache purge through the router: 303 with the transaction, its own code/description bodies, validation
//! against host patterns, the rate limit, and transactions that go from PENDING to SUCCESS and survive a
//! restart.

use crate::common;

use axum::http::{Method, StatusCode, header};
use common::*;
use serde_json::{Value, json};

fn purge_body(uris: Value) -> Value {
    json!({"purge_request": {"action": "PURGE", "uris": uris}})
}

fn exact(pattern: &str) -> Value {
    json!({"uri_pattern": pattern, "match_mode": "EXACT_LITERAL"})
}

async fn setup() -> TestApp {
    let app = TestApp::new().await;
    app.add_property("shop", &["www.shop.example", "*.img.shop.example"]).await;
    app
}

fn post(body: &Value) -> axum::http::Request<axum::body::Body> {
    req(Method::POST, "/acme/v1/cache/purge").basic("alice", PASSWORD).json(body).done()
}

#[tokio::test]
async fn a_purge_is_accepted_with_303_and_its_transaction_goes_from_pending_to_success() {
    let app = setup().await;
    let reply = app
        .send(post(&purge_body(json!([exact("www.shop.example/index.html"), exact("a.img.shop.example/logo.png")]))))
        .await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    let id = reply.body["transaction_id"].as_i64().unwrap();
    let status_uri = format!("/acme/v1/transactions/{id}");
    assert_eq!(reply.headers.get(header::LOCATION).unwrap(), status_uri.as_str());
    assert_eq!(reply.body["code"], 201);
    assert_eq!(reply.body["purge_response"]["transaction_status_uri"], status_uri);

    let reply = app.send(req(Method::GET, &status_uri).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["code"], 200);
    assert_eq!(reply.body["transaction_id"], id);
    let r = &reply.body["transaction_response"];
    assert_eq!(r["transaction_status"], "PENDING");
    assert_eq!(r["transaction_status_description"], "Transaction is pending");
    assert_eq!(r["percent_received_responses"], 0);
    assert_eq!(r["begin_ts"], T0);
    assert_eq!(r["end_ts"], 0);

    app.advance(1_500);
    let reply = app.send(req(Method::GET, &status_uri).basic("alice", PASSWORD).done()).await;
    let percent = reply.body["transaction_response"]["percent_received_responses"].as_u64().unwrap();
    assert!(percent > 0 && percent < 100, "rising: {percent}");

    app.advance(10_000);
    let reply = app.send(req(Method::GET, &status_uri).basic("alice", PASSWORD).done()).await;
    let r = &reply.body["transaction_response"];
    assert_eq!(r["transaction_status"], "SUCCESS");
    assert_eq!(r["transaction_status_description"], "Completed");
    assert_eq!(r["percent_received_responses"], 100);
    let end = r["end_ts"].as_i64().unwrap();
    assert!(end > T0 && end <= T0 + 11_500, "{end}");

    let reply = app.send(req(Method::GET, "/acme/v1/transactions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body[0]["transaction_id"], id);
    assert_eq!(reply.body[0]["uri_count"], 2);
    assert_eq!(reply.body[0]["sample"], json!(["www.shop.example/index.html", "a.img.shop.example/logo.png"]));
    assert_eq!(reply.body[0]["user"], "alice");
}

#[tokio::test]
async fn transactions_survive_a_restart() {
    let app = setup().await;
    let reply = app.send(post(&purge_body(json!([exact("www.shop.example/a")])))).await;
    let id = reply.body["transaction_id"].as_i64().unwrap();
    let restarted = app.restarted().await;
    let router = edge_server::app(restarted);
    use tower::ServiceExt;
    app.advance(20_000);
    let response = router
        .oneshot(req(Method::GET, &format!("/acme/v1/transactions/{id}")).basic("alice", PASSWORD).done())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn purge_uses_its_own_error_bodies_and_statuses() {
    let app = setup().await;
    let code = |reply: &Reply| reply.body["code"].as_u64().unwrap();
    // No JSON content type: 406.
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/cache/purge")
                .basic("alice", PASSWORD)
                .raw("text/plain", purge_body(json!([])).to_string())
                .done(),
        )
        .await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::NOT_ACCEPTABLE, 406));
    let reply = app.send(req(Method::POST, "/acme/v1/cache/purge").basic("alice", PASSWORD).done()).await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::NOT_ACCEPTABLE, 406));
    // Malformed JSON: 400.
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/cache/purge")
                .basic("alice", PASSWORD)
                .raw("application/json", "{\"purge_request\":")
                .done(),
        )
        .await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::BAD_REQUEST, 400));
    assert!(reply.body["description"].as_str().unwrap().contains("not valid JSON"));
    // Not POST: 405.
    let reply = app.send(req(Method::GET, "/acme/v1/cache/purge").basic("alice", PASSWORD).done()).await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::METHOD_NOT_ALLOWED, 405));
    let reply = app.send(req(Method::DELETE, "/acme/v1/transactions/1").basic("alice", PASSWORD).done()).await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::METHOD_NOT_ALLOWED, 405));
    // Authentication failures carry code 403.
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/cache/purge")
                .basic("alice", "wrong-password-1")
                .json(&purge_body(json!([])))
                .done(),
        )
        .await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::UNAUTHORIZED, 403));
    let reply =
        app.send(req(Method::POST, "/acme/v1/cache/purge").cookie("stale").json(&purge_body(json!([]))).done()).await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::UNAUTHORIZED, 403));
    app.add_user("acme", "vic", "viewer").await;
    let reply = app
        .send(req(Method::POST, "/acme/v1/cache/purge").basic("vic", PASSWORD).json(&purge_body(json!([]))).done())
        .await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::FORBIDDEN, 403));
    // Transactions: authentication and parsing errors are 400; unknown is 404.
    let reply = app.send(req(Method::GET, "/acme/v1/transactions/1").done()).await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::BAD_REQUEST, 403));
    let reply = app.send(req(Method::GET, "/acme/v1/transactions/abc").basic("alice", PASSWORD).done()).await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::BAD_REQUEST, 400));
    let reply = app.send(req(Method::GET, "/acme/v1/transactions/999").basic("alice", PASSWORD).done()).await;
    assert_eq!((reply.status, code(&reply)), (StatusCode::NOT_FOUND, 404));
}

#[tokio::test]
async fn validation_reports_every_invalid_uri_and_accepts_nothing() {
    let app = setup().await;
    let body = json!({"purge_request": {"action": "DELETE", "uris": [
        exact("www.shop.example/ok.png"),
        exact("evil.example/x.png"),
        {"uri_pattern": "www.shop.example/img/", "match_mode": "EXACT_LITERAL", "cache_key_modifier_regex": "v=*"},
        {"uri_pattern": "*.shop.example/a.png", "match_mode": "EXACT_LITERAL"},
        {"uri_pattern": "www.shop.example/img/", "match_mode": "PREFIX_LITERAL", "cache_key_modifier_regex": "v*=1"},
        {"uri_pattern": "www.shop.example/img/", "match_mode": "GLOB"}
    ]}});
    let reply = app.send(post(&body)).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["code"], 400);
    let details: Vec<&str> =
        reply.body["details"].as_array().unwrap().iter().map(|d| d["message"].as_str().unwrap()).collect();
    assert_eq!(
        details,
        [
            "action \"DELETE\" is not one of PURGE, EXPIRE",
            "uris[1]: no property serves the domain evil.example: you may not purge it",
            "uris[2]: cache_key_modifier_regex is allowed only with PREFIX_LITERAL",
            "uris[3]: the domain wildcard *.shop.example is not defined in the host patterns of any property",
            "uris[4]: cache_key_modifier_regex \"v*=1\" may contain a wildcard * only at its end",
            "uris[5]: match_mode \"GLOB\" is not one of EXACT_LITERAL, PREFIX_LITERAL",
        ]
    );
    let reply = app.send(req(Method::GET, "/acme/v1/transactions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body, json!([]), "nothing was submitted");
    // A wildcard defined in the host patterns and EXPIRE with a cache key modifier are fine.
    let body = json!({"purge_request": {"action": "EXPIRE", "uris": [
        {"uri_pattern": "*.img.shop.example/banners/", "match_mode": "PREFIX_LITERAL", "cache_key_modifier_regex": "lang=*"},
        // A modifier ending in a multi-byte character (found by the property tests: it once panicked).
        {"uri_pattern": "www.shop.example/img/", "match_mode": "PREFIX_LITERAL", "cache_key_modifier_regex": "lang=é"}
    ]}});
    assert_eq!(app.send(post(&body)).await.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn at_most_two_purges_per_second_per_customer() {
    let app = setup().await;
    let body = purge_body(json!([exact("www.shop.example/a")]));
    assert_eq!(app.send(post(&body)).await.status, StatusCode::SEE_OTHER);
    assert_eq!(app.send(post(&body)).await.status, StatusCode::SEE_OTHER);
    // Another session of the same customer shares the limit.
    app.add_user("acme", "olga", "operator").await;
    let session = app.login("acme", "olga", PASSWORD).await;
    let reply = app.send(req(Method::POST, "/acme/v1/cache/purge").cookie(&session).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(reply.body["code"], 429);
    assert_eq!(reply.headers.get(header::RETRY_AFTER).unwrap(), "1");
    app.advance(500);
    assert_eq!(app.send(post(&body)).await.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn a_purge_of_20000_uris_is_accepted() {
    let app = setup().await;
    let uris: Vec<Value> = (0..20_000).map(|i| exact(&format!("www.shop.example/products/{i}.html"))).collect();
    let reply = app.send(post(&purge_body(Value::Array(uris)))).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    let reply = app.send(req(Method::GET, "/acme/v1/transactions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body[0]["uri_count"], 20_000);
}

#[tokio::test]
async fn another_customers_transaction_does_not_exist() {
    let app = setup().await;
    let reply = app.send(post(&purge_body(json!([exact("www.shop.example/a")])))).await;
    let id = reply.body["transaction_id"].as_i64().unwrap();
    let reply =
        app.send(req(Method::GET, &format!("/globex/v1/transactions/{id}")).basic("gina", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    // globex has no properties: it may purge nothing.
    let reply = app
        .send(
            req(Method::POST, "/globex/v1/cache/purge")
                .basic("gina", PASSWORD)
                .json(&purge_body(json!([exact("www.shop.example/a")])))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn transaction_ids_are_numbered_per_customer_and_reveal_no_other_customers_purges() {
    let app = setup().await;
    for i in 0..3 {
        app.advance(1_000);
        let reply = app.send(post(&purge_body(json!([exact(&format!("www.shop.example/{i}"))])))).await;
        assert_eq!(reply.body["transaction_id"], i + 1, "{}", reply.body);
    }
    // globex's first purge is its transaction 1, whatever acme did.
    let globex = json!({"name": "www", "host_patterns": ["www.globex.example"]});
    let reply = app.send(req(Method::POST, "/globex/v1/properties").basic("gina", PASSWORD).json(&globex).done()).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let body = purge_body(json!([exact("www.globex.example/a")]));
    let reply = app.send(req(Method::POST, "/globex/v1/cache/purge").basic("gina", PASSWORD).json(&body).done()).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.body);
    assert_eq!(reply.body["transaction_id"], 1);
    assert_eq!(reply.headers.get(header::LOCATION).unwrap(), "/globex/v1/transactions/1");
    // Each customer's number 1 is its own.
    let mine = app.send(req(Method::GET, "/globex/v1/transactions").basic("gina", PASSWORD).done()).await;
    assert_eq!(mine.body[0]["sample"], json!(["www.globex.example/a"]));
    let reply = app.send(req(Method::GET, "/acme/v1/transactions/1").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["transaction_id"], 1);
    let reply = app.send(req(Method::GET, "/acme/v1/transactions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body[2]["sample"], json!(["www.shop.example/0"]));
    let reply = app.send(req(Method::GET, "/globex/v1/transactions/2").basic("gina", PASSWORD).done()).await;
    assert_eq!((reply.status, reply.body["code"].as_u64()), (StatusCode::NOT_FOUND, Some(404)));
    // The audit record names the transaction by its number, with its address while it exists.
    let log = app.send(req(Method::GET, "/globex/v1/audit?operation=cache.purge").basic("gina", PASSWORD).done()).await;
    let target = &log.body["items"][0]["target"];
    assert_eq!((target["id"].as_str(), target["uri"].as_str()), (Some("1"), Some("/globex/v1/transactions/1")));
}
