//! Statistics through the router, against small fixtures with hand-computed answers: grouping sets, filters,
//! sortby, slicing, time rules, enumerations, top-K, security families, ingestion, retention, durability.

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use edge_server::{clock::Clock, stats::Limits};
use serde_json::{Value, json};

fn access(
    ts: &str,
    (domain, property, country): (&str, &str, &str),
    status: u16,
    hits: u64,
    last_mile: u64,
    url: &str,
) -> Value {
    json!({
        "timestamp": ts, "domain": domain, "property": property, "country": country, "country_code": country,
        "browser_name": "Chrome", "device_type": "Desktop", "device_os": "Linux", "content_type": "text/html",
        "request_type": "GET", "cache_status": 1, "gna_cache_status": 1, "scheme": 2, "http_status_code": status,
        "request_url": url, "hits": hits, "last_mile_bandwidth_bytes": last_mile
    })
}

fn ndjson(lines: &[Value]) -> String {
    lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

async fn ingest(app: &TestApp, path: &str, body: String) -> Reply {
    app.send(
        req(Method::POST, &format!("/acme/v1/ingest/{path}"))
            .basic("alice", PASSWORD)
            .raw("application/x-ndjson", body)
            .done(),
    )
    .await
}

/// Four access records on 2025-12-31 (the test clock is at 2026-01-01T00:00:00).
async fn fixture() -> TestApp {
    let app = TestApp::new().await;
    let reply = ingest(
        &app,
        "accesslogs",
        ndjson(&[
            access("2025-12-31T10:01:00", ("a.example", "shop", "DE"), 200, 5, 1000, "/a"),
            access("2025-12-31T10:03:00", ("a.example", "shop", "FR"), 200, 3, 300, "/b"),
            access("2025-12-31T10:07:00", ("b.example", "shop", "DE"), 404, 2, 20, "/a"),
            access("2025-12-31T11:30:00", ("a.example", "api", "DE"), 500, 1, 10, "/a"),
        ]),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body, json!({"accepted": 4, "rejected": [], "rejected_more": 0}));
    app
}

async fn get(app: &TestApp, path_and_query: &str) -> Reply {
    app.send(req(Method::GET, &format!("/acme/v1{path_and_query}")).basic("alice", PASSWORD).done()).await
}

const HOUR_10_TO_12: &str = "starttime=2025-12-31T10:00:00&endtime=2025-12-31T12:00:00";

#[tokio::test]
async fn five_minute_rows_by_country_in_bucket_order_with_typed_columns() {
    let app = fixture().await;
    let reply = get(&app, "/stats/data?starttime=2025-12-31T10:00:00&endtime=2025-12-31T11:00:00&dimensions=country&metrics=hits&granularity=5minute").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.body["columns"],
        json!([{"name": "starttime", "type": "string"}, {"name": "endtime", "type": "string"}, {"name": "country", "type": "string"}, {"name": "hits", "type": "long"}])
    );
    assert_eq!(
        reply.body["rows"],
        json!([
            ["2025-12-31T10:00:00", "2025-12-31T10:05:00", "DE", 5],
            ["2025-12-31T10:00:00", "2025-12-31T10:05:00", "FR", 3],
            ["2025-12-31T10:05:00", "2025-12-31T10:10:00", "DE", 2]
        ])
    );
    assert_eq!(reply.body["total_results"], 3);
    assert_eq!(reply.headers.get("x-total-results").unwrap(), "3");
    assert_eq!(
        reply.body["query"],
        json!({"starttime": "2025-12-31T10:00:00", "endtime": "2025-12-31T11:00:00", "start": 0, "limit": 2500,
               "dimensions": ["country"], "metrics": ["hits"], "granularity": "5minute", "sortby": null, "filters": null})
    );
    assert_eq!(reply.body["next_uri"], "");
    assert_eq!(reply.body["prev_uri"], "");
    assert!(reply.body["uri"].as_str().unwrap().starts_with("/acme/v1/stats/data?starttime="));
}

#[tokio::test]
async fn columns_follow_the_requested_dimension_order_and_sortby_orders_rows() {
    let app = fixture().await;
    let reply = get(&app, &format!("/stats/data?{HOUR_10_TO_12}&dimensions=http_status_code,domain&metrics=last_mile_bandwidth_bytes,hits&granularity=hour&sortby=-hits")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let names: Vec<_> = reply.body["columns"].as_array().unwrap().iter().map(|c| c["name"].clone()).collect();
    assert_eq!(
        names,
        [
            json!("starttime"),
            json!("endtime"),
            json!("http_status_code"),
            json!("domain"),
            json!("last_mile_bandwidth_bytes"),
            json!("hits")
        ]
    );
    assert_eq!(reply.body["columns"][2]["type"], "long", "status codes are integers");
    assert_eq!(
        reply.body["rows"],
        json!([
            ["2025-12-31T10:00:00", "2025-12-31T11:00:00", 200, "a.example", 1300, 8],
            ["2025-12-31T10:00:00", "2025-12-31T11:00:00", 404, "b.example", 20, 2],
            ["2025-12-31T11:00:00", "2025-12-31T12:00:00", 500, "a.example", 10, 1]
        ])
    );
    assert_eq!(reply.body["query"]["sortby"], json!(["-hits"]));
    let reply = get(&app, &format!("/stats/data?{HOUR_10_TO_12}&dimensions=domain,http_status_code&metrics=hits&granularity=hour&sortby=domain,-http_status_code")).await;
    let order: Vec<_> = reply.body["rows"].as_array().unwrap().iter().map(|r| (r[2].clone(), r[3].clone())).collect();
    assert_eq!(
        order,
        [(json!("a.example"), json!(500)), (json!("a.example"), json!(200)), (json!("b.example"), json!(404))]
    );
}

#[tokio::test]
async fn filters_and_or_escapes_and_dimensions_outside_the_set() {
    let app = fixture().await;
    let q = |f: &str| {
        format!(
            "/stats/data?{HOUR_10_TO_12}&dimensions=domain,http_status_code&metrics=hits&granularity=hour&filters={f}"
        )
    };
    let rows = |r: &Reply| r.body["rows"].as_array().unwrap().iter().map(|r| r[4].clone()).collect::<Vec<_>>();
    let reply = get(&app, &q("http_status_code!=200")).await;
    assert_eq!(rows(&reply), [json!(2), json!(1)]);
    assert_eq!(reply.body["query"]["filters"], "http_status_code!=200");
    let reply = get(&app, &q("domain==b.example,http_status_code==500")).await;
    assert_eq!(rows(&reply), [json!(2), json!(1)], "OR");
    let reply = get(&app, &q("domain==a.example;http_status_code==200")).await;
    assert_eq!(rows(&reply), [json!(8)], "AND");
    let reply = get(&app, &q("domain==a.example%5C,x")).await;
    assert_eq!(reply.body["total_results"], 0, "an escaped comma is part of the value");
    let reply = get(&app, &q("domain==a.example,domain==b.example;http_status_code==200")).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
    assert!(reply.body["details"][0]["message"].as_str().unwrap().contains("not both"));
    let reply = get(&app, &q("colour==red")).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
    // A filter on a dimension outside the grouping set is answered from a finer one (domain/country).
    let reply = get(
        &app,
        &format!("/stats/data?{HOUR_10_TO_12}&dimensions=domain&metrics=hits&granularity=hour&filters=country==FR"),
    )
    .await;
    assert_eq!(reply.body["rows"], json!([["2025-12-31T10:00:00", "2025-12-31T11:00:00", "a.example", 3]]));
    let reply = get(&app, &q("customer==acme")).await;
    assert_eq!(reply.body["total_results"], 3, "the customer filter holds for every row of one's own data");
    let reply = get(&app, &q("customer==globex")).await;
    assert_eq!(reply.body["total_results"], 0);
}

#[tokio::test]
async fn slices_carry_next_and_prev_addresses_and_the_limit_is_capped() {
    let app = fixture().await;
    let base = "/stats/data?starttime=2025-12-31T10:00:00&endtime=2025-12-31T11:00:00&dimensions=country&metrics=hits&granularity=5minute";
    let reply = get(&app, &format!("{base}&start=1&limit=1")).await;
    assert_eq!(reply.body["rows"], json!([["2025-12-31T10:00:00", "2025-12-31T10:05:00", "FR", 3]]));
    assert_eq!(reply.body["total_results"], 3);
    assert!(reply.body["next_uri"].as_str().unwrap().ends_with("&limit=1&start=2"), "{}", reply.body["next_uri"]);
    assert!(reply.body["prev_uri"].as_str().unwrap().ends_with("&limit=1&start=0"), "{}", reply.body["prev_uri"]);
    let reply = get(&app, &format!("{base}&start=2&limit=1&sortby=-hits")).await;
    assert_eq!(reply.body["rows"][0][3], 2);
    assert_eq!(reply.body["next_uri"], "");
    let reply = get(&app, &format!("{base}&limit=10000")).await;
    assert_eq!(reply.body["query"]["limit"], 2500);
    for bad in ["&limit=-1", "&start=x"] {
        assert_error(&get(&app, &format!("{base}{bad}")).await, StatusCode::BAD_REQUEST, "invalid_parameter");
    }
}

#[tokio::test]
async fn paging_near_the_largest_integers_neither_panics_nor_loses_rows() {
    let app = security_fixture().await;
    // Security limits have no upper bound: start + limit overflowed (a panic in debug, no rows in release).
    let huge = "start=1&limit=18446744073709551615";
    let reply = get(&app, &format!("/stats/security/request/trends/data?{HOUR_10_TO_12}&dimensions=waf_action&metrics=hits&granularity=hour&sortby=-hits,waf_action&{huge}")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.body["rows"],
        json!([
            ["2025-12-31T11:00:00", "2025-12-31T12:00:00", "ALLOW", 1],
            ["2025-12-31T10:00:00", "2025-12-31T11:00:00", "BLOCK", 1],
            ["2025-12-31T10:00:00", "2025-12-31T11:00:00", "WARN", 1]
        ])
    );
    let reply =
        get(&app, &format!("/stats/security/events/data?{HOUR_10_TO_12}&dimensions=client_ip&sortby=client_ip&{huge}"))
            .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.body["rows"],
        json!([
            ["2025-12-31T10:02:00", "192.0.2.2"],
            ["2025-12-31T10:10:00", "192.0.2.3"],
            ["2025-12-31T10:20:00", "192.0.2.4"]
        ])
    );
    assert_eq!(reply.body["total_results"], 4);
    // The largest start: no rows, no next slice, and a previous one.
    let base = "/stats/data?starttime=2025-12-31T10:00:00&endtime=2025-12-31T11:00:00&dimensions=country&metrics=hits&granularity=5minute";
    let reply = get(&app, &format!("{base}&start=18446744073709551615&limit=2")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["rows"], json!([]));
    assert_eq!(reply.body["next_uri"], "");
    assert!(reply.body["prev_uri"].as_str().unwrap().ends_with("&limit=2&start=18446744073709551613"));
}

#[tokio::test]
async fn a_slice_of_no_rows_has_no_next_or_previous_address() {
    let app = fixture().await;
    let base = "/stats/data?starttime=2025-12-31T10:00:00&endtime=2025-12-31T11:00:00&dimensions=country&metrics=hits&granularity=5minute";
    for start in ["0", "1"] {
        let reply = get(&app, &format!("{base}&start={start}&limit=0")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.body["rows"], json!([]));
        assert_eq!(reply.body["total_results"], 3, "limit=0 still counts");
        // Before: next_uri was this very request, so a client following it looped for ever.
        assert_eq!(reply.body["next_uri"], "", "start={start}");
        assert_eq!(reply.body["prev_uri"], "", "start={start}");
    }
}

#[tokio::test]
async fn spans_reaching_before_what_a_granularity_keeps_are_refused_with_the_reason() {
    let app = fixture().await;
    // The clock is at 2026-01-01T00:00:00: hourly rollups reach back to 2025-11-30T23:00:00 (31 days and one
    // bucket), 5-minute ones to 2025-12-24T23:55:00. Such spans used to answer 200 with rows missing.
    for (q, needle) in [
        (
            "starttime=2025-11-20T00:00:00&endtime=2025-12-31T12:00:00&granularity=hour",
            "hourly data is kept for 31 days: with granularity hour starttime must be 2025-11-30T23:00:00 or later; use day for older spans",
        ),
        (
            "starttime=2025-12-20T00:00:00&endtime=2025-12-31T12:00:00&granularity=5minute",
            "5-minute data is kept for one week: with granularity 5minute starttime must be 2025-12-24T23:55:00 or later; use hour or day for older spans",
        ),
    ] {
        let reply = get(&app, &format!("/stats/data?{q}&metrics=hits")).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
        assert_eq!(reply.body["details"], json!([{"message": needle}]), "{q}");
        let trends = get(&app, &format!("/stats/security/waf/trends/data?{q}&metrics=hits")).await;
        assert_error(&trends, StatusCode::BAD_REQUEST, "invalid_parameter");
    }
    // From the first kept bucket on, every row is there.
    let reply = get(
        &app,
        "/stats/data?starttime=2025-11-30T23:00:00&endtime=2026-01-01T00:00:00&metrics=hits&granularity=hour",
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["total_results"], 2);
    let reply =
        get(&app, "/stats/data?starttime=2025-11-20T00:00:00&endtime=2026-01-01T00:00:00&metrics=hits&granularity=day")
            .await;
    assert_eq!(reply.body["rows"], json!([["2025-12-31T00:00:00", "2026-01-01T00:00:00", 11]]));
}

#[tokio::test]
async fn time_rules_and_grouping_sets_are_enforced_with_400() {
    let app = fixture().await;
    for (q, needle) in [
        (
            "starttime=2025-12-31T10:00:00Z&endtime=2025-12-31T11:00:00&metrics=hits&granularity=hour",
            "time-zone designator",
        ),
        (
            "starttime=2025-12-31T10:00:00&endtime=2025-12-31T10:00:00&metrics=hits&granularity=hour",
            "earlier than endtime",
        ),
        ("endtime=2025-12-31T10:00:00&metrics=hits&granularity=hour", "starttime is required"),
        (
            "starttime=2025-12-31T10:00:00&startime=2025-12-31T10:00:00&endtime=2025-12-31T11:00:00&metrics=hits&granularity=hour",
            "not both",
        ),
        (
            "starttime=2025-12-31T10:00:00&endtime=2025-12-31T11:00:00&metrics=hits&granularity=hour&dimensions=device_os,browser_name",
            "not a listed grouping set",
        ),
        (
            "starttime=2025-12-31T10:00:00&endtime=2025-12-31T11:00:00&metrics=hits,bananas&granularity=hour",
            "unknown metric",
        ),
        ("starttime=2025-12-20T10:00:00&endtime=2025-12-21T11:00:00&metrics=hits&granularity=5minute", "one week"),
        ("starttime=2025-12-31T10:00:00&endtime=2025-12-31T11:00:00&metrics=hits", "granularity is required"),
    ] {
        let reply = get(&app, &format!("/stats/data?{q}")).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
        assert!(reply.body["details"].to_string().contains(needle), "{q}: {}", reply.body);
    }
    // The misspelled startime works alone; the echo says starttime.
    let reply =
        get(&app, "/stats/data?startime=2025-12-31T10:00:00&endtime=2025-12-31T11:00:00&metrics=hits&granularity=hour")
            .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["query"]["starttime"], "2025-12-31T10:00:00");
    assert_eq!(reply.body["rows"], json!([["2025-12-31T10:00:00", "2025-12-31T11:00:00", 10]]));
}

#[tokio::test]
async fn enumerated_values_are_integers() {
    let app = fixture().await;
    let reply = get(
        &app,
        &format!(
            "/stats/data?{HOUR_10_TO_12}&dimensions=cache_status&metrics=hits&granularity=hour&filters=cache_status==1"
        ),
    )
    .await;
    assert_eq!(reply.body["rows"][0][2], 1);
    assert_eq!(reply.body["columns"][2], json!({"name": "cache_status", "type": "long"}));
    let reply =
        get(&app, &format!("/stats/data?{HOUR_10_TO_12}&dimensions=scheme,property&metrics=hits&granularity=hour"))
            .await;
    assert_eq!(reply.body["rows"][0][2], 2, "HTTPS");
}

#[tokio::test]
async fn the_vocabulary_methods_answer_the_shared_tables() {
    let app = TestApp::new().await;
    let reply = get(&app, "/stats/dimensions").await;
    assert_eq!(reply.body["dimensions"].as_array().unwrap().len(), 14);
    let reply = get(&app, "/stats/metrics").await;
    assert_eq!(reply.body["metrics"].as_array().unwrap().len(), 8);
    let reply = get(&app, "/stats/groupings").await;
    let groupings = reply.body["groupings"].as_array().unwrap();
    assert_eq!(groupings.len(), 118);
    assert!(groupings.contains(&json!("5minute/country/browser_name/device_type/property")));
    assert_eq!(get(&app, "/stats/topk/url/groupings").await.body["groupings"][2], "day/customer/property/request_url");
    assert_eq!(get(&app, "/stats/topk/url/metrics").await.body, json!({"metrics": ["hits"]}));
    assert_error(&get(&app, "/stats/topk/browser/groupings").await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(
        get(&app, "/stats/security/waf/topk/country/dimensions").await.body["dimensions"][0],
        "client_country_code"
    );
    assert_error(
        &get(&app, "/stats/security/waf/topk/ratelimitcountry/dimensions").await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_eq!(get(&app, "/stats/security/trafficshaping/trends/metrics").await.body, json!({"metrics": ["hits"]}));
    let events = get(&app, "/stats/security/events/dimensions").await;
    assert_eq!(events.body["dimensions"][0], "event_timestamp_ms");
}

#[tokio::test]
async fn head_answers_headers_only() {
    let app = fixture().await;
    let reply = app
        .send(
            req(Method::HEAD, &format!("/acme/v1/stats?{HOUR_10_TO_12}&metrics=hits&granularity=hour"))
                .basic("alice", PASSWORD)
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers.get("x-total-results").unwrap(), "2");
    assert!(reply.raw.is_empty());
}

#[tokio::test]
async fn the_top_url_report_gives_the_top_20_of_each_day() {
    let app = TestApp::new().await;
    let mut lines = Vec::new();
    for i in 0..25u64 {
        lines.push(access("2025-12-30T08:00:00", ("a.example", "shop", "DE"), 200, i + 1, 0, &format!("/p{i}")));
    }
    lines.push(access("2025-12-31T08:00:00", ("a.example", "shop", "DE"), 200, 7, 0, "/p0"));
    lines.push(access("2025-12-31T09:00:00", ("a.example", "shop", "DE"), 200, 2, 0, "/p0"));
    lines.push(access("2025-12-31T09:00:00", ("a.example", "api", "DE"), 200, 4, 0, "/v1"));
    assert_eq!(ingest(&app, "accesslogs", ndjson(&lines)).await.body["accepted"], 28);
    let reply = get(&app, "/stats/topk/url/data?starttime=2025-12-30T00:00:00&endtime=2026-01-01T00:00:00&dimensions=customer,property,request_url&metrics=hits&granularity=day").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let rows = reply.body["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 22, "20 for the first day, 2 for the second");
    assert_eq!(rows[0], json!(["2025-12-30T00:00:00", "2025-12-31T00:00:00", "acme", "shop", "/p24", 25]));
    assert_eq!(rows[19][5], 6);
    assert_eq!(rows[20], json!(["2025-12-31T00:00:00", "2026-01-01T00:00:00", "acme", "shop", "/p0", 9]));
    assert_eq!(rows[21][4], "/v1");
    assert_eq!(reply.body["query"]["limit"], 20);
    assert_eq!(reply.body["query"]["sortby"], json!(["-hits"]));
    assert_eq!(reply.body["total_results"], 22);
    // End exclusive: a span ending at the start of the second day has the first day only.
    let reply = get(&app, "/stats/topk/url/data?starttime=2025-12-30T00:00:00&endtime=2025-12-31T00:00:00&dimensions=customer,property,request_url&metrics=hits").await;
    assert_eq!(reply.body["total_results"], 20);
    let reply = get(&app, "/stats/topk/url/data?starttime=2025-12-30T00:00:00&endtime=2026-01-01T00:00:00&dimensions=customer,property,request_url&metrics=hits&filters=property==api").await;
    assert_eq!(reply.body["rows"], json!([["2025-12-31T00:00:00", "2026-01-01T00:00:00", "acme", "api", "/v1", 4]]));
    let reply = get(&app, "/stats/topk/url/data?starttime=2025-12-30T00:00:00&endtime=2026-01-01T00:00:00&dimensions=property,request_url&metrics=hits").await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_parameter");
}

fn event(ts: &str, source: &str, action: &str, waf_action: &str, rule: &str, country: &str, ip: &str) -> Value {
    json!({
        "timestamp": ts, "source": source, "event_type": "CUSTOM", "event_action": action, "event_severity": "HIGH",
        "waf_action": waf_action, "rule_id": rule, "domain": "a.example", "property": "shop", "client_ip": ip,
        "client_connection_remote_ip": ip, "client_browser": "curl", "client_country_code": country, "client_asn": 4134,
        "request_path": "/login"
    })
}

async fn security_fixture() -> TestApp {
    let app = fixture().await;
    let reply = ingest(
        &app,
        "securityevents",
        ndjson(&[
            event("2025-12-31T10:00:00", "waf", "BLOCK", "BLOCK", "942100", "CN", "192.0.2.1"),
            event("2025-12-31T10:02:00", "waf", "WARN", "WARN", "913100", "US", "192.0.2.2"),
            event("2025-12-31T10:10:00", "trafficshaping", "RATE_LIMIT", "", "rl-1", "BR", "192.0.2.3"),
            event("2025-12-31T10:20:00", "trafficshaping", "BLOCK", "", "geo-1", "CN", "192.0.2.4"),
        ]),
    )
    .await;
    assert_eq!(reply.body, json!({"accepted": 4, "rejected": [], "rejected_more": 0}));
    app
}

#[tokio::test]
async fn events_begin_with_their_timestamp_and_echo_the_customer_filter() {
    let app = security_fixture().await;
    let reply = get(&app, &format!("/stats/security/events/data?{HOUR_10_TO_12}&dimensions=client_ip,client_asn&sortby=-event_timestamp_ms&limit=2")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.body["columns"],
        json!([{"name": "event_timestamp_ms"}, {"name": "client_ip"}, {"name": "client_asn"}])
    );
    assert_eq!(
        reply.body["rows"],
        json!([["2025-12-31T10:20:00", "192.0.2.4", 4134], ["2025-12-31T10:10:00", "192.0.2.3", 4134]])
    );
    assert_eq!(reply.body["total_results"], 4);
    assert_eq!(reply.body["query"]["filters"], "customer==acme");
    assert!(reply.body.get("next_uri").is_none(), "slices addresses belong to delivery statistics");
    let reply = get(
        &app,
        &format!("/stats/security/events/data?{HOUR_10_TO_12}&dimensions=rule_id&filters=client_country_code==CN"),
    )
    .await;
    assert_eq!(reply.body["rows"], json!([["2025-12-31T10:00:00", "942100"], ["2025-12-31T10:20:00", "geo-1"]]));
    assert_eq!(reply.body["query"]["filters"], "client_country_code==CN;customer==acme");
    assert_eq!(reply.body["query"]["limit"], 10);
}

#[tokio::test]
async fn waf_and_shaping_trends_top_k_and_request_trends() {
    let app = security_fixture().await;
    let reply = get(&app, &format!("/stats/security/waf/trends/data?{HOUR_10_TO_12}&dimensions=waf_action&metrics=hits&granularity=hour&sortby=waf_action")).await;
    assert_eq!(
        reply.body["rows"],
        json!([
            ["2025-12-31T10:00:00", "2025-12-31T11:00:00", "BLOCK", 1],
            ["2025-12-31T10:00:00", "2025-12-31T11:00:00", "WARN", 1]
        ])
    );
    assert_eq!(reply.body["columns"][2], json!({"name": "waf_action"}), "no types outside delivery statistics");
    let reply = get(&app, &format!("/stats/security/trafficshaping/trends/data?{HOUR_10_TO_12}&dimensions=event_action&metrics=hits&granularity=5minute")).await;
    assert_eq!(
        reply.body["rows"],
        json!([
            ["2025-12-31T10:10:00", "2025-12-31T10:15:00", "RATE_LIMIT", 1],
            ["2025-12-31T10:20:00", "2025-12-31T10:25:00", "BLOCK", 1]
        ])
    );
    let reply = get(&app, &format!("/stats/security/waf/topk/country/data?{HOUR_10_TO_12}")).await;
    assert_eq!(reply.body["rows"], json!([["CN", 1], ["US", 1]]));
    assert_eq!(reply.body["query"]["limit"], 20);
    let reply = get(&app, &format!("/stats/security/trafficshaping/topk/ratelimitclientip/data?{HOUR_10_TO_12}")).await;
    assert_eq!(reply.body["rows"], json!([["192.0.2.3", 1]]));
    let reply = get(
        &app,
        &format!("/stats/security/trafficshaping/topk/country/data?{HOUR_10_TO_12}&filters=domain==a.example&limit=1"),
    )
    .await;
    assert_eq!(reply.body["total_results"], 2);
    assert_eq!(reply.body["rows"].as_array().unwrap().len(), 1);
    // Request trends: every logged request counts as ALLOW, WAF events by their action.
    let reply = get(&app, &format!("/stats/security/request/trends/data?{HOUR_10_TO_12}&dimensions=waf_action&metrics=hits&granularity=hour&sortby=starttime,waf_action")).await;
    assert_eq!(
        reply.body["rows"],
        json!([
            ["2025-12-31T10:00:00", "2025-12-31T11:00:00", "ALLOW", 10],
            ["2025-12-31T10:00:00", "2025-12-31T11:00:00", "BLOCK", 1],
            ["2025-12-31T10:00:00", "2025-12-31T11:00:00", "WARN", 1],
            ["2025-12-31T11:00:00", "2025-12-31T12:00:00", "ALLOW", 1]
        ])
    );
    assert_error(
        &get(&app, &format!("/stats/security/waf/topk/ratelimitcountry/data?{HOUR_10_TO_12}")).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
}

#[tokio::test]
async fn an_answer_lists_the_first_100_rejected_lines_and_counts_the_rest() {
    let app = TestApp::new().await;
    let good = access("2025-12-31T10:00:00", ("a.example", "shop", "DE"), 200, 1, 0, "/").to_string();
    // Lines 1 and 5002 good, 5,000 bad lines between them.
    let body = format!("{good}\n{}{good}", "not json\n".repeat(5000));
    let reply = ingest(&app, "accesslogs", body).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["accepted"], 2);
    let rejected = reply.body["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 100);
    assert_eq!(rejected[0]["line"], 2);
    assert_eq!(rejected[99]["line"], 101);
    assert_eq!(reply.body["rejected_more"], 4900);
    // All listed: nothing more.
    let reply = ingest(&app, "securityevents", "not json\n{}".into()).await;
    assert_eq!(reply.body["rejected"].as_array().unwrap().len(), 2);
    assert_eq!(reply.body["rejected_more"], 0);
}

#[tokio::test]
async fn bad_lines_are_reported_by_number_and_good_ones_kept() {
    let app = TestApp::new().await;
    let body = format!(
        "{}\n{{\"timestamp\":\"2025-12-31T10:00:00\"}}\n\nnot json\n{}",
        access("2025-12-31T10:00:00", ("a.example", "shop", "DE"), 200, 1, 0, "/"),
        access("2025-12-31T10:00:00", ("a.example", "shop", "DE"), 200, 1, 0, "/")
    );
    let reply = ingest(&app, "accesslogs", body).await;
    assert_eq!(reply.body["accepted"], 2);
    let lines: Vec<_> = reply.body["rejected"].as_array().unwrap().iter().map(|r| r["line"].clone()).collect();
    assert_eq!(lines, [json!(2), json!(4)]);
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/ingest/accesslogs")
                .basic("alice", PASSWORD)
                .raw("application/xml", "<x/>")
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
    app.add_user("acme", "vic", "viewer").await;
    let reply = app
        .send(
            req(Method::POST, "/acme/v1/ingest/accesslogs")
                .basic("vic", PASSWORD)
                .raw("application/x-ndjson", "")
                .done(),
        )
        .await;
    assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    let reply = app
        .send(
            req(Method::GET, &format!("/acme/v1/stats/data?{HOUR_10_TO_12}&metrics=hits&granularity=hour"))
                .basic("vic", PASSWORD)
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "viewers read statistics");
}

#[tokio::test]
async fn every_text_field_of_a_record_is_capped_at_4096_bytes() {
    let app = TestApp::new().await;
    let long = "x".repeat(4097);
    let mut lines = Vec::new();
    for field in ["browser_name", "country", "country_code", "device_os", "device_type", "property", "request_type"] {
        let mut record = access("2025-12-31T10:00:00", ("a.example", "shop", "DE"), 200, 1, 0, "/");
        record[field] = json!(long);
        lines.push(record);
    }
    let mut fits = access("2025-12-31T10:00:00", ("a.example", "shop", "DE"), 200, 1, 0, "/");
    fits["browser_name"] = json!("y".repeat(4096));
    lines.push(fits);
    let reply = ingest(&app, "accesslogs", ndjson(&lines)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["accepted"], 1, "only the record within the cap: {}", reply.body);
    let rejected = reply.body["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 7);
    assert_eq!(rejected[0]["message"], "browser_name is 4097 bytes long; text fields hold at most 4096");
    assert_eq!(rejected[5]["message"], "property is 4097 bytes long; text fields hold at most 4096");

    let mut lines = Vec::new();
    for field in [
        "event_type",
        "event_severity",
        "waf_action",
        "rule_id",
        "property",
        "client_ip",
        "client_connection_remote_ip",
        "client_browser",
        "client_country_code",
        "source",
    ] {
        let mut record = event("2025-12-31T10:00:00", "waf", "BLOCK", "BLOCK", "942100", "CN", "192.0.2.1");
        record[field] = json!(long);
        lines.push(record);
    }
    let reply = ingest(&app, "securityevents", ndjson(&lines)).await;
    assert_eq!(reply.body["accepted"], 0, "{}", reply.body);
    let messages: Vec<&str> =
        reply.body["rejected"].as_array().unwrap().iter().map(|r| r["message"].as_str().unwrap()).collect();
    assert_eq!(messages.len(), 10);
    assert!(messages.iter().all(|m| m.ends_with("is 4097 bytes long; text fields hold at most 4096")), "{messages:?}");
    // A report quoting what was sent stays short, whatever was sent.
    let reply = ingest(&app, "securityevents", format!("{{\"{long}\":1}}\n{{\"timestamp\":\"{long}\"}}")).await;
    for r in reply.body["rejected"].as_array().unwrap() {
        assert!(r["message"].as_str().unwrap().len() <= 303, "{}", r["message"]);
    }
}

#[tokio::test]
async fn one_customers_statistics_are_invisible_to_another() {
    let app = fixture().await;
    let reply = app
        .send(
            req(Method::GET, &format!("/globex/v1/stats/data?{HOUR_10_TO_12}&metrics=hits&granularity=hour"))
                .basic("gina", PASSWORD)
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["rows"], json!([]));
    assert_eq!(reply.body["total_results"], 0);
}

#[tokio::test]
async fn retention_drops_old_rollups_and_events() {
    let app = security_fixture().await;
    let hourly = format!("/stats/data?{HOUR_10_TO_12}&metrics=hits&granularity=hour");
    app.advance(8 * 86_400_000);
    app.state.stats.enforce_retention(app.clock.now_ms()).unwrap();
    assert_eq!(get(&app, &hourly).await.body["total_results"], 2, "hourly data is kept a month");
    let events = get(&app, &format!("/stats/security/events/data?{HOUR_10_TO_12}&dimensions=client_ip")).await;
    assert_eq!(events.body["total_results"], 0, "raw events older than the previous three days are gone");
    app.advance(25 * 86_400_000);
    app.state.stats.enforce_retention(app.clock.now_ms()).unwrap();
    assert_error(&get(&app, &hourly).await, StatusCode::BAD_REQUEST, "invalid_parameter");
    let kept_from = edge_api::stats::Granularity::Hour.kept_from(app.clock.now_ms()).unwrap();
    let newer = format!(
        "/stats/data?starttime={}&endtime=2026-02-03T00:00:00&metrics=hits&granularity=hour",
        edge_api::stats::format_time(kept_from - kept_from.rem_euclid(1000) + 1000)
    );
    assert_eq!(get(&app, &newer).await.body["total_results"], 0, "the hourly rows of 2025-12-31 are gone");
    let daily =
        get(&app, "/stats/data?starttime=2025-12-31T00:00:00&endtime=2026-01-01T00:00:00&metrics=hits&granularity=day")
            .await;
    assert_eq!(
        daily.body["rows"],
        json!([["2025-12-31T00:00:00", "2026-01-01T00:00:00", 11]]),
        "daily data is kept for ever"
    );
}

#[tokio::test]
async fn ingested_data_survives_a_restart_from_the_log_and_from_a_checkpoint() {
    let app = security_fixture().await;
    let query = format!("/acme/v1/stats/data?{HOUR_10_TO_12}&dimensions=domain&metrics=hits&granularity=hour");
    let expected = get(&app, &query.replace("/acme/v1", "")).await.body["rows"].clone();
    assert_eq!(expected.as_array().unwrap().len(), 3);
    for checkpoint in [false, true] {
        if checkpoint {
            app.state.stats.checkpoint().unwrap();
        }
        let mut settings = edge_server::Settings::new(app.dir.path().join("data"), app.dir.path().join("dist"));
        settings.login_slowdown = std::time::Duration::from_millis(1);
        let state =
            edge_server::AppState::open_with_clock(settings, std::sync::Arc::new(app.clock.clone())).await.unwrap();
        use tower::ServiceExt;
        let response =
            edge_server::app(state).oneshot(req(Method::GET, &query).basic("alice", PASSWORD).done()).await.unwrap();
        use http_body_util::BodyExt;
        let body: Value = serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(body["rows"], expected, "after a restart (checkpoint: {checkpoint})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_stay_in_time_order_for_a_query_racing_an_out_of_order_ingestion() {
    let app = std::sync::Arc::new(TestApp::new().await);
    // Events arriving newest first leave the raw events unsorted until a query sorts them.
    let at = |s: i64| edge_api::stats::format_time(common::T0 - 86_400_000 + s * 1000);
    let preload: Vec<Value> =
        (0..20_000).rev().map(|s| event(&at(s), "waf", "BLOCK", "BLOCK", "942100", "CN", "192.0.2.1")).collect();
    assert_eq!(ingest(&app, "securityevents", ndjson(&preload)).await.body["accepted"], 20_000);
    let writer = {
        let app = app.clone();
        tokio::spawn(async move {
            for i in 0..150 {
                let e = event(&at((i * 7919) % 20_000), "waf", "WARN", "WARN", "913100", "US", "192.0.2.2");
                assert_eq!(ingest(&app, "securityevents", e.to_string()).await.status, StatusCode::OK);
            }
        })
    };
    let day = "starttime=2025-12-31T00:00:00&endtime=2026-01-01T00:00:00";
    let mut queries = 0;
    while !writer.is_finished() || queries < 50 {
        let reply = get(
            &app,
            &format!("/stats/security/events/data?{day}&dimensions=rule_id&sortby=-event_timestamp_ms&limit=50"),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let times: Vec<&str> = reply.body["rows"].as_array().unwrap().iter().map(|r| r[0].as_str().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] >= w[1]), "query {queries}: newest first, got {times:?}");
        assert_eq!(times[0], at(19_999), "query {queries}: the newest event first");
        queries += 1;
    }
    writer.await.unwrap();
}

/// Access records whose URLs are `/u{from}`…, one each, on 2025-12-31.
fn urls(from: usize, n: usize) -> String {
    let lines: Vec<Value> = (from..from + n)
        .map(|i| access("2025-12-31T10:00:00", ("a.example", "shop", "DE"), 200, 1, 0, &format!("/u{i}")))
        .collect();
    ndjson(&lines)
}

#[tokio::test]
async fn values_past_a_dimensions_limit_are_stored_as_other_and_the_answer_says_so() {
    // Eight distinct values a dimension (the server's flag takes at least 1000; the engine takes any).
    let limits = Limits { max_values: 8, ..Limits::DEFAULT };
    let app = TestApp::with(|s| s.stats_limits = limits).await;
    let reply = ingest(&app, "accesslogs", urls(0, 5)).await;
    assert_eq!(reply.body, json!({"accepted": 5, "rejected": [], "rejected_more": 0}));
    // Five more URLs: three fit, two are stored as (other), every record is stored, and the answer says so.
    let reply = ingest(&app, "accesslogs", urls(5, 5)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.body,
        json!({"accepted": 5, "rejected": [], "rejected_more": 0,
               "folded": [{"dimension": "request_url", "records": 2, "limit": 8}]})
    );
    // A known URL still counts as itself; a new one goes to (other) as well.
    let reply = ingest(&app, "accesslogs", urls(0, 1) + "\n" + &urls(10, 1)).await;
    assert_eq!(reply.body["folded"], json!([{"dimension": "request_url", "records": 1, "limit": 8}]));
    let day = "starttime=2025-12-31T00:00:00&endtime=2026-01-01T00:00:00";
    let top = format!("/stats/topk/url/data?{day}&dimensions=customer,property,request_url&metrics=hits");
    let answer = get(&app, &top).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let rows = answer.body["rows"].as_array().unwrap().clone();
    let hits = |url: &str| rows.iter().find(|r| r[4] == url).map(|r| r[5].as_u64().unwrap());
    assert_eq!((hits("(other)"), hits("/u0"), hits("/u7"), hits("/u8")), (Some(3), Some(2), Some(1), None));
    assert_eq!(rows.iter().map(|r| r[5].as_u64().unwrap()).sum::<u64>(), 12, "every record counted");
    // The log holds the batches as stored: reopened, the engine answers the same.
    let clock: std::sync::Arc<dyn edge_server::clock::Clock> = std::sync::Arc::new(app.clock.clone());
    let reopened =
        edge_server::stats::memory::MemoryEngine::open_with(&app.state.settings.data_dir, clock, limits).unwrap();
    let mut state = app.state.clone();
    state.stats = std::sync::Arc::new(reopened);
    let reopened = TestApp { router: edge_server::app(state.clone()), state, clock: app.clock.clone(), dir: app.dir };
    assert_eq!(get(&reopened, &top).await.body["rows"], json!(rows));
}

#[tokio::test]
async fn a_batch_is_refused_with_409_once_the_customer_holds_as_many_rows_as_allowed() {
    let limits = Limits { max_rows: 30, ..Limits::DEFAULT };
    let app = TestApp::with(|s| s.stats_limits = limits).await;
    // The batch that crosses the limit is stored (its rows are known once it is summed, after it is logged).
    assert_eq!(ingest(&app, "accesslogs", urls(0, 5)).await.body["accepted"], 5);
    let logged = app.state.stats.log_bytes();
    let reply = ingest(&app, "accesslogs", urls(5, 5)).await;
    assert_error(&reply, StatusCode::CONFLICT, "statistics_full");
    let message = reply.body["message"].as_str().unwrap();
    assert!(message.contains("Nothing of the batch was stored") && message.contains("--stats-max-rows"), "{message}");
    assert_eq!(app.state.stats.log_bytes(), logged, "the refused batch was not logged");
    let reply = ingest(
        &app,
        "securityevents",
        r#"{"timestamp":"2025-12-31T10:00:00","source":"waf","domain":"a.example"}"#.into(),
    )
    .await;
    assert_error(&reply, StatusCode::CONFLICT, "statistics_full");
    let hits = "/stats/data?starttime=2025-12-31T00:00:00&endtime=2026-01-01T00:00:00&metrics=hits&granularity=day";
    assert_eq!(get(&app, hits).await.body["rows"][0][2], 5);
    // Another customer has rows of its own to fill.
    let other = app
        .send(
            req(Method::POST, "/globex/v1/ingest/accesslogs")
                .basic("gina", PASSWORD)
                .raw("application/x-ndjson", urls(0, 5))
                .done(),
        )
        .await;
    assert_eq!(other.body["accepted"], 5, "{}", other.body);
}

/// The security review's batches: 8,000 access-log lines each, every one with a domain, a country and a
/// browser never seen before, spread over six days.
fn unique_values_batch(batch: usize) -> String {
    let lines: Vec<Value> = (0..8000)
        .map(|i| {
            let n = batch * 8000 + i;
            let ts = edge_api::stats::format_time(T0 - 6 * 86_400_000 + (n as i64 * 10_799) % (6 * 86_400_000));
            let url = "/index.html?utm_source=newsletter";
            let mut line = access(&ts, (&format!("d{n}.example"), "shop", &format!("C{n}")), 200, 1, 512, url);
            line["browser_name"] = json!(format!("Mozilla/5.0 (X11; Linux x86_64; rv:{n}) Gecko/20100101 Firefox/{n}"));
            line
        })
        .collect();
    ndjson(&lines)
}

#[tokio::test]
async fn the_security_reviews_unique_value_batches_stay_within_the_limits_and_are_told_so() {
    let limits = Limits { max_values: 2000, max_rows: 400_000, daily_retention_days: None };
    let app = TestApp::with(|s| s.stats_limits = limits).await;
    let mut bytes = 0;
    for batch in 0..6 {
        let body = unique_values_batch(batch);
        bytes += body.len();
        let reply = ingest(&app, "accesslogs", body).await;
        assert_eq!(reply.status, StatusCode::OK, "batch {batch}: {}", reply.body);
        assert_eq!(reply.body["accepted"], 8000);
        // Past the first 2,000 values, every new one of each unique dimension is stored as (other).
        let folded = if batch == 0 { 6000 } else { 8000 };
        for dimension in ["browser_name", "country", "country_code", "domain"] {
            let entry = reply.body["folded"].as_array().unwrap().iter().find(|f| f["dimension"] == dimension);
            assert_eq!(
                entry,
                Some(&json!({"dimension": dimension, "records": folded, "limit": 2000})),
                "{}",
                reply.body
            );
        }
    }
    assert!(bytes > 21 * 1024 * 1024, "{bytes} bytes of NDJSON");
    let usage = app.state.stats.usage();
    let acme = &usage[0];
    for (dimension, values) in &acme.values {
        assert!(*values <= 2001, "{dimension}: {values} values");
    }
    assert!(acme.rows <= limits.max_rows, "{} rows", acme.rows);
    // Some 280,000 rows in 35 MB (their blocks still open); without the limits, 7 million rows and some
    // 700 MiB (the review's 140 → 843 MiB resident).
    assert!(acme.bytes < 64 * 1024 * 1024, "{} bytes", acme.bytes);
    // Every record is counted: by domain, the 2,000 first ones and (other).
    let day = "starttime=2025-12-24T00:00:00&endtime=2026-01-01T00:00:00";
    let total = get(&app, &format!("/stats/data?{day}&metrics=hits&granularity=day")).await;
    assert_eq!(total.body["rows"].as_array().unwrap().iter().map(|r| r[2].as_u64().unwrap()).sum::<u64>(), 48_000);
}

#[tokio::test]
async fn metrics_show_what_each_customer_holds_to_the_bearer_of_the_token_only() {
    let limits = Limits { max_values: 8, ..Limits::DEFAULT };
    let app = TestApp::with(|s| {
        s.stats_limits = limits;
        s.metrics_token = Some("a-metrics-token".into());
    })
    .await;
    assert_eq!(ingest(&app, "accesslogs", urls(0, 10)).await.body["folded"][0]["records"], 2);
    for auth in [None, Some("Bearer not-the-token"), Some("Basic YWxpY2U6eA==")] {
        let mut request = req(Method::GET, "/metrics");
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        assert_error(&app.send(request.done()).await, StatusCode::UNAUTHORIZED, "unauthorized");
    }
    let reply = app.send(req(Method::GET, "/metrics").header("authorization", "Bearer a-metrics-token").done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.headers["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let text = String::from_utf8(reply.raw).unwrap();
    let sample = |name: &str| -> Option<u64> {
        text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    };
    let rows = sample(r#"edge_stats_rows{customer="acme"}"#).unwrap();
    assert_eq!(rows, app.state.stats.usage()[0].rows);
    assert!(rows > 10, "{text}");
    assert!(sample(r#"edge_stats_memory_bytes{customer="acme"}"#).unwrap() > 0);
    assert_eq!(sample(r#"edge_stats_values{customer="acme",dimension="request_url"}"#), Some(9), "8 and (other)");
    assert_eq!(sample(r#"edge_stats_folded_records_total{customer="acme",dimension="request_url"}"#), Some(2));
    assert_eq!(sample("edge_stats_values_limit"), Some(8));
    assert_eq!(sample("edge_stats_rows_limit"), Some(Limits::DEFAULT.max_rows));
    assert!(sample("edge_process_resident_bytes").unwrap() > 0);
    assert!(!text.contains("globex\"}"), "a customer with no statistics has no samples");
    // Without a token configured, there are no metrics to see.
    let plain = TestApp::new().await;
    let reply = plain.send(req(Method::GET, "/metrics").header("authorization", "Bearer a-metrics-token").done()).await;
    assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
}

/// A snapshot written by the engine before this branch (`edge-server ingest` of main at db61170, on
/// 2026-11-25 at 15:03) of the records in the same folder, each file in time order.
const OLD_SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/stats-snapshot-2026-11-25");

#[test]
fn a_snapshot_of_the_previous_version_loads_and_answers_as_its_records_ingested_now() {
    use edge_api::stats::{Family, RawQuery, SHAPING_CATEGORIES, WAF_CATEGORIES, format_time, validate};
    use edge_server::stats::{
        StatsEngine,
        ingest::{parse_access, parse_security},
        memory::MemoryEngine,
    };
    let now = 1_795_618_980_000; // 2026-11-25T15:03:00, when it was written
    let clock = || -> std::sync::Arc<dyn Clock> { std::sync::Arc::new(edge_server::clock::ManualClock::at(now)) };
    let old_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(old_dir.path().join("stats")).unwrap();
    let snapshot = zstd::decode_all(std::fs::File::open(format!("{OLD_SNAPSHOT}/snapshot.bin.zst")).unwrap()).unwrap();
    std::fs::write(old_dir.path().join("stats/snapshot.bin"), snapshot).unwrap();
    let old = MemoryEngine::open(old_dir.path(), clock()).unwrap();
    let new_dir = tempfile::tempdir().unwrap();
    let new = MemoryEngine::open(new_dir.path(), clock()).unwrap();
    let read = |name: &str| std::fs::read_to_string(format!("{OLD_SNAPSHOT}/{name}")).unwrap();
    new.ingest_access(1, &parse_access(&read("access.ndjson")).0, None).unwrap();
    new.ingest_security(1, &parse_security(&read("security.ndjson")).0, None).unwrap();
    let mut families = vec![Family::Delivery, Family::TopKUrl, Family::WafTrends, Family::RequestTrends];
    families.push(Family::ShapingTrends);
    families.extend(WAF_CATEGORIES.iter().map(|(c, _)| Family::WafTopK(c)));
    families.extend(SHAPING_CATEGORIES.iter().map(|(c, _)| Family::ShapingTopK(c)));
    let (mut compared, mut rows) = (0, 0);
    let day = 86_400_000;
    for family in families {
        for set in family.groupings() {
            let mut parts: Vec<&str> = set.split('/').collect();
            let granularity = match family {
                Family::WafTopK(_) | Family::ShapingTopK(_) => None,
                _ => Some(parts.remove(0)),
            };
            let from = if granularity == Some("day") { now - now % day - 3 * day } else { now - 3 * day };
            let raw = RawQuery {
                starttime: Some(format_time(from - from % 3_600_000)),
                endtime: Some(format_time(now + 3_600_000 - now % 3_600_000)),
                dimensions: Some(parts.join(",")),
                metrics: Some(family.metrics().join(",")).filter(|m| !m.is_empty()),
                granularity: granularity.map(String::from),
                limit: Some("1000".into()),
                ..RawQuery::default()
            };
            let query = validate(family, &raw, now).unwrap_or_else(|e| panic!("{family:?} {set}: {e:?}"));
            let answer = old.query(1, "acme", &query).unwrap();
            assert_eq!(answer, new.query(1, "acme", &query).unwrap(), "{family:?} {set}");
            compared += 1;
            rows += answer.rows.len();
        }
    }
    let raw = RawQuery {
        starttime: Some(format_time(now - now % day - 2 * day)),
        endtime: Some(format_time(now)),
        dimensions: Some("event_timestamp_ms,client_ip,rule_id,request_path".into()),
        limit: Some("1000".into()),
        ..RawQuery::default()
    };
    let events = validate(Family::Events, &raw, now).unwrap();
    assert_eq!(old.query(1, "acme", &events).unwrap().rows.len(), 40);
    assert_eq!(old.query(1, "acme", &events).unwrap(), new.query(1, "acme", &events).unwrap());
    assert!(compared > 200 && rows > 5000, "{compared} queries, {rows} rows");
}

#[tokio::test]
async fn retention_frees_the_values_no_row_uses_any_more_for_new_ones() {
    let limits = Limits { max_values: 8, daily_retention_days: Some(2), ..Limits::DEFAULT };
    let app = TestApp::with(|s| s.stats_limits = limits).await;
    assert!(ingest(&app, "accesslogs", urls(0, 8)).await.body.get("folded").is_none());
    assert_eq!(ingest(&app, "accesslogs", urls(8, 2)).await.body["folded"][0]["records"], 2);
    let values = |app: &TestApp| {
        app.state.stats.usage()[0].values.iter().find(|(d, _)| *d == "request_url").map_or(0, |(_, n)| *n)
    };
    assert_eq!(values(&app), 9, "8 and (other)");
    // 40 days on, every rollup holding those URLs has passed its retention (daily ones after two days here).
    app.advance(40 * 86_400_000);
    app.state.stats.enforce_retention(app.clock.now_ms()).unwrap();
    assert_eq!(values(&app), 0);
    assert_eq!(app.state.stats.usage()[0].rows, 0);
    let new_urls: Vec<Value> = (100..108)
        .map(|i| access("2026-02-09T10:00:00", ("a.example", "shop", "DE"), 200, 1, 0, &format!("/u{i}")))
        .collect();
    let reply = ingest(&app, "accesslogs", ndjson(&new_urls)).await;
    assert_eq!(reply.body, json!({"accepted": 8, "rejected": [], "rejected_more": 0}), "room for eight new ones");
    let day = "starttime=2026-02-09T00:00:00&endtime=2026-02-10T00:00:00";
    let top =
        get(&app, &format!("/stats/topk/url/data?{day}&dimensions=customer,property,request_url&metrics=hits")).await;
    assert_eq!(top.body["rows"].as_array().unwrap().len(), 8, "{}", top.body);
    assert!(top.body["rows"].as_array().unwrap().iter().all(|r| r[4] != "(other)"));
}
