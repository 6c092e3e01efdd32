//! Property-based fuzzing through the real router: request bodies made by perturbing a valid one (fields
//! dropped, values replaced by hostile text, numbers, nulls, arrays, items repeated) for purges, network
//! lists and configuration updates. Every answer is 2xx/3xx or a 4xx with the JSON error body, never 5xx;
//! and a refused request changes nothing, while an accepted one changes exactly what it says.

use crate::common;

use axum::http::{Method, StatusCode, header};
use common::*;
use proptest::{
    prelude::*,
    test_runner::{Config, TestRunner},
};
use serde_json::{Value, json};

/// A value where the server expects anything else: wrong types, text the parsers treat specially, long text.
fn hostile_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::from),
        "[-*./\\\\:;,=!é\u{0}\u{202e} a-z0-9]{0,24}".prop_map(Value::from),
        Just(Value::from("x".repeat(5000))),
        Just(json!([])),
        Just(json!({})),
    ]
    .boxed()
}

/// `valid`, perturbed: each field kept (itself perturbed), dropped or replaced; arrays get 0 to 4 items made
/// from their first.
fn perturb(valid: &Value) -> BoxedStrategy<Value> {
    match valid {
        Value::Object(fields) => {
            let fields: Vec<BoxedStrategy<Option<(String, Value)>>> = fields
                .iter()
                .map(|(k, v)| {
                    let (keep, replace) = (k.clone(), k.clone());
                    prop_oneof![
                        8 => perturb(v).prop_map(move |v| Some((keep.clone(), v))),
                        1 => Just(None),
                        1 => hostile_leaf().prop_map(move |v| Some((replace.clone(), v))),
                    ]
                    .boxed()
                })
                .collect();
            let extra = prop::option::weighted(0.1, ("[a-z_]{1,8}", hostile_leaf()));
            (fields, extra)
                .prop_map(|(fields, extra)| Value::Object(fields.into_iter().flatten().chain(extra).collect()))
                .boxed()
        }
        Value::Array(items) => match items.first() {
            Some(first) => prop::collection::vec(perturb(first), 0..4).prop_map(Value::Array).boxed(),
            None => Just(json!([])).boxed(),
        },
        leaf => prop_oneof![3 => Just(leaf.clone()), 1 => hostile_leaf()].boxed(),
    }
}

/// On one app with `properties` (name, host patterns) and a session of acme's admin: runs the valid body,
/// which must be accepted, then `cases` perturbations of it, one after the other, through `check` (which
/// says whether the server accepted the body).
fn fuzz<F>(cases: u32, properties: &[(&str, &[&str])], valid: impl AsyncFnOnce(&TestApp, &str) -> Value, check: F)
where
    F: AsyncFn(&TestApp, &str, Value) -> Result<bool, TestCaseError>,
{
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (app, session) = runtime.block_on(async {
        let app = TestApp::new().await;
        for (name, hosts) in properties {
            app.add_property(name, hosts).await;
        }
        let session = app.login("acme", "alice", PASSWORD).await;
        (app, session)
    });
    let valid = runtime.block_on(valid(&app, &session));
    let accepted = runtime.block_on(check(&app, &session, valid.clone()));
    assert!(matches!(accepted, Ok(true)), "the valid body is accepted: {accepted:?}");
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&perturb(&valid), |body| runtime.block_on(check(&app, &session, body)).map(|_| ()));
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Not a server error; an error is JSON in the expected shape.
fn sound(reply: &Reply, body: &Value, error_field: &str) -> Result<(), TestCaseError> {
    prop_assert!(!reply.status.is_server_error(), "{} for {body}: {}", reply.status, reply.body);
    if reply.status.is_client_error() {
        prop_assert_eq!(
            reply.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()),
            Some("application/json")
        );
        prop_assert!(reply.body[error_field].is_string(), "{}: {}", reply.status, reply.body);
    }
    Ok(())
}

/// The value at `pointer` of the answer to GET `uri`.
async fn read(app: &TestApp, session: &str, uri: &str, pointer: &str) -> Value {
    let reply = app.send(req(Method::GET, uri).cookie(session).done()).await;
    reply.body.pointer(pointer).cloned().unwrap_or(Value::Null)
}

#[test]
fn hostile_purge_bodies_are_refused_and_submit_nothing() {
    let valid = json!({"purge_request": {"action": "PURGE", "uris": [
        {"uri_pattern": "www.shop.example/img/a.png", "match_mode": "EXACT_LITERAL"},
        {"uri_pattern": "a.img.shop.example/b/", "match_mode": "PREFIX_LITERAL", "cache_key_modifier_regex": "v=*"}
    ]}});
    fuzz(
        256,
        &[("shop", &["www.shop.example", "*.img.shop.example"])],
        async |_, _| valid,
        async |app, session, body| {
            // One purge a second is within the limit.
            app.advance(1_000);
            // The newest transaction, which only an accepted purge changes.
            let before = read(app, session, "/acme/v1/transactions", "/0/transaction_id").await;
            let reply = app.send(req(Method::POST, "/acme/v1/cache/purge").cookie(session).json(&body).done()).await;
            sound(&reply, &body, "description")?;
            let after = read(app, session, "/acme/v1/transactions", "/0/transaction_id").await;
            match reply.status {
                StatusCode::SEE_OTHER => prop_assert_eq!(&after, &reply.body["transaction_id"]),
                s => prop_assert!(s.is_client_error() && after == before, "{} and {} → {}: {}", s, before, after, body),
            }
            Ok(reply.status == StatusCode::SEE_OTHER)
        },
    );
}

#[test]
fn hostile_network_list_bodies_are_refused_and_create_nothing() {
    let valid = json!({"name": "blocked", "type": "IP", "description": "d", "list": ["192.0.2.1", "10.0.0.0/8"]});
    fuzz(
        256,
        &[],
        async |_, _| valid,
        async |app, session, body| {
            let uri = "/acme/v1/config/networklists";
            let before = read(app, session, uri, "/total").await.as_u64().unwrap_or(u64::MAX);
            let reply = app.send(req(Method::POST, uri).cookie(session).json(&body).done()).await;
            sound(&reply, &body, "message")?;
            let after = read(app, session, uri, "/total").await.as_u64().unwrap_or(u64::MAX);
            match reply.status {
                s if s.is_success() => prop_assert_eq!(after, before + 1),
                s => prop_assert!(after == before, "{} and {} → {}: {}", s, before, after, body),
            }
            Ok(reply.status.is_success())
        },
    );
}

#[test]
fn hostile_configurations_are_refused_and_leave_the_version_alone() {
    let uri = "/acme/v1/properties/shop/config";
    // A valid update: the current configuration with one of each node.
    let valid = async |app: &TestApp, session: &str| {
        let mut config = app.send(req(Method::GET, uri).cookie(session).done()).await.body["config"].clone();
        config["origins"] = json!([{"name": "o", "host": "origin.example", "port": 443, "protocol": "https"}]);
        config["cache_rules"] = json!([{"path_pattern": "/img/*", "ttl_seconds": 60,
            "cache_key": {"query": "include", "query_params": ["v"], "ignore_case": false}}]);
        config["security"] = json!({
            "waf_rules": [{"rule_id": "950001", "name": "SQLi", "severity": "HIGH", "action": "BLOCK"}],
            "traffic_shaping_rules": [{"name": "r", "action": "RATE_LIMIT", "match_type": "GEO", "values": ["DE"],
                "rate_limit_per_minute": 100}]
        });
        json!({"config": config, "comment": "fuzz"})
    };
    fuzz(192, &[("shop", &["www.shop.example"])], valid, async |app, session, body| {
        let current = app.send(req(Method::GET, uri).cookie(session).done()).await;
        let etag = current.headers.get(header::ETAG).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        let version = current.body["version"].as_u64();
        let reply = app.send(req(Method::PUT, uri).cookie(session).header("if-match", &etag).json(&body).done()).await;
        sound(&reply, &body, "message")?;
        let after = app.send(req(Method::GET, uri).cookie(session).done()).await.body["version"].as_u64();
        match reply.status {
            s if s.is_success() => prop_assert_eq!(after, version.map(|v| v + 1)),
            s => prop_assert!(after == version, "{} and {:?} → {:?}: {}", s, version, after, body),
        }
        Ok(reply.status.is_success())
    });
}
