//! Every statistics answer the server writes by hand (`routes/stats.rs` writes the JSON without serde, for
//! speed) is what the wire type says: it decodes into `edge_api::stats::StatsResponse`, and encoding that again
//! gives the same JSON — for every family and every top-K category, with rows and without, and with text that
//! JSON must escape.

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;
use edge_api::stats::{Family, SHAPING_CATEGORIES, StatsResponse, WAF_CATEGORIES};
use serde_json::{Value, json};

/// Text that a hand-written encoder gets wrong first: quotes, backslashes, control characters, a tab, and
/// characters outside ASCII and outside the Basic Multilingual Plane.
const TRICKY: &str = "q\"b\\s\u{1}c\ttab é 😀";

const SPAN: &str = "starttime=2025-12-31T10:00:00&endtime=2025-12-31T12:00:00";
/// A span with nothing in it.
const EMPTY_SPAN: &str = "starttime=2025-12-30T10:00:00&endtime=2025-12-30T12:00:00";
/// The top-URL report counts whole days: the fixture's day, and the empty one before it.
const DAY: &str = "starttime=2025-12-31T00:00:00&endtime=2026-01-01T00:00:00";
const EMPTY_DAY: &str = "starttime=2025-12-30T00:00:00&endtime=2025-12-31T00:00:00";

fn access(ts: &str, country: &str, browser: &str, url: &str, hits: u64) -> Value {
    json!({
        "timestamp": ts, "domain": "a.example", "property": "shop", "country": country, "country_code": country,
        "browser_name": browser, "device_type": "Desktop", "device_os": "Linux", "content_type": "text/html",
        "request_type": "GET", "cache_status": 1, "gna_cache_status": 1, "scheme": 2, "http_status_code": 200,
        "request_url": url, "hits": hits, "last_mile_bandwidth_bytes": hits * 100
    })
}

fn event(ts: &str, source: &str, action: &str, waf_action: &str, rule: &str, ip: &str) -> Value {
    json!({
        "timestamp": ts, "source": source, "event_type": "CUSTOM", "event_action": action, "event_severity": "HIGH",
        "waf_action": waf_action, "rule_id": rule, "domain": "a.example", "property": "shop", "client_ip": ip,
        "client_connection_remote_ip": ip, "client_browser": TRICKY, "client_country_code": "CN",
        "client_asn": 4134, "request_path": TRICKY
    })
}

fn ndjson(lines: &[Value]) -> String {
    lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

async fn ingest(app: &TestApp, kind: &str, lines: &[Value]) {
    let reply = app
        .send(
            req(Method::POST, &format!("/acme/v1/ingest/{kind}"))
                .basic("alice", PASSWORD)
                .raw("application/x-ndjson", ndjson(lines))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["accepted"], lines.len(), "{}", reply.body);
}

/// Access logs and security events of every source and action, some of their text needing escapes.
async fn fixture() -> TestApp {
    let app = TestApp::new().await;
    ingest(
        &app,
        "accesslogs",
        &[
            access("2025-12-31T10:01:00", "DE", TRICKY, TRICKY, 5),
            access("2025-12-31T10:07:00", "FR", "Firefox", "/b", 3),
            access("2025-12-31T11:30:00", "DE", "Chrome", "/a", 1),
        ],
    )
    .await;
    ingest(
        &app,
        "securityevents",
        &[
            event("2025-12-31T10:00:00", "waf", "BLOCK", "BLOCK", TRICKY, "192.0.2.1"),
            event("2025-12-31T10:02:00", "waf", "WARN", "WARN", "913100", "192.0.2.2"),
            event("2025-12-31T10:10:00", "trafficshaping", "RATE_LIMIT", "", "rl-1", "192.0.2.3"),
            event("2025-12-31T10:20:00", "trafficshaping", "BLOCK", "", "geo-1", "192.0.2.4"),
        ],
    )
    .await;
    app
}

/// A data query of `family` over `span` that sets every part the answer echoes (sortby, filters, a limit
/// below the total where the family pages). The match names every family, so a new one cannot be left out.
fn query(family: Family, span: &str) -> String {
    match family {
        Family::Delivery => format!(
            "/stats/data?{span}&dimensions=browser_name&metrics=hits,last_mile_bandwidth_bytes&granularity=5minute\
             &sortby=-hits&filters=browser_name!=Safari&limit=1"
        ),
        Family::TopKUrl => format!(
            "/stats/topk/url/data?{}&dimensions=customer,property,request_url&metrics=hits&granularity=day\
             &filters=property==shop",
            if span == SPAN { DAY } else { EMPTY_DAY }
        ),
        Family::Events => format!(
            "/stats/security/events/data?{span}&dimensions=client_ip,client_asn,rule_id,request_path,client_browser\
             &sortby=-event_timestamp_ms&filters=client_country_code==CN"
        ),
        Family::WafTrends => format!(
            "/stats/security/waf/trends/data?{span}&dimensions=rule_id&metrics=hits&granularity=hour&sortby=rule_id"
        ),
        Family::RequestTrends => format!(
            "/stats/security/request/trends/data?{span}&dimensions=waf_action&metrics=hits&granularity=hour\
             &sortby=starttime,waf_action"
        ),
        Family::ShapingTrends => format!(
            "/stats/security/trafficshaping/trends/data?{span}&dimensions=event_action&metrics=hits\
             &granularity=5minute&filters=domain==a.example"
        ),
        Family::WafTopK(category) => format!("/stats/security/waf/topk/{category}/data?{span}"),
        Family::ShapingTopK(category) => {
            format!("/stats/security/trafficshaping/topk/{category}/data?{span}&filters=domain==a.example&limit=5")
        }
    }
}

fn every_family() -> Vec<Family> {
    let mut families = vec![
        Family::Delivery,
        Family::TopKUrl,
        Family::Events,
        Family::WafTrends,
        Family::RequestTrends,
        Family::ShapingTrends,
    ];
    families.extend(WAF_CATEGORIES.iter().filter_map(|(c, _)| Family::topk(true, c)));
    families.extend(SHAPING_CATEGORIES.iter().filter_map(|(c, _)| Family::topk(false, c)));
    families
}

/// The answer at `path`, decoded into the wire type and checked to encode back to the same JSON.
async fn decoded(app: &TestApp, path: &str) -> StatsResponse {
    let reply = app.send(req(Method::GET, &format!("/acme/v1{path}")).basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.body);
    let answer: StatsResponse = serde_json::from_slice(&reply.raw)
        .unwrap_or_else(|e| panic!("{path}: not a StatsResponse ({e}): {}", String::from_utf8_lossy(&reply.raw)));
    assert_eq!(serde_json::to_value(&answer).unwrap(), reply.body, "{path}: encoded again, the JSON differs");
    assert_eq!(answer.total_results.to_string(), reply.headers["x-total-results"].to_str().unwrap(), "{path}");
    answer
}

#[tokio::test]
async fn every_familys_answer_decodes_into_the_wire_type_and_encodes_back_the_same() {
    let app = fixture().await;
    let families = every_family();
    assert_eq!(families.len(), 6 + WAF_CATEGORIES.len() + SHAPING_CATEGORIES.len());
    for family in families {
        let path = query(family, SPAN);
        let answer = decoded(&app, &path).await;
        assert!(!answer.rows.is_empty(), "{path}: the fixture has rows for every family");
        assert!(answer.rows.iter().all(|r| r.len() == answer.columns.len()), "{path}: a cell per column");
        // Slice addresses belong to delivery statistics alone.
        assert_eq!(answer.uri.is_some(), family == Family::Delivery, "{path}");
        let empty = decoded(&app, &query(family, EMPTY_SPAN)).await;
        assert_eq!((empty.rows.len(), empty.total_results), (0, 0), "{path}");
    }
}

#[tokio::test]
async fn text_that_json_must_escape_comes_back_exactly_as_ingested() {
    let app = fixture().await;
    let delivery = decoded(&app, &query(Family::Delivery, SPAN)).await;
    assert_eq!(delivery.rows[0][2], json!(TRICKY), "the busiest browser, in the first slice");
    assert!(delivery.next_uri.as_deref().is_some_and(|n| n.contains("start=1")), "{:?}", delivery.next_uri);
    let top_urls = decoded(&app, &query(Family::TopKUrl, SPAN)).await;
    assert!(top_urls.rows.iter().any(|r| r[4] == json!(TRICKY)), "{:?}", top_urls.rows);
    let events = decoded(&app, &query(Family::Events, SPAN)).await;
    let blocked = events.rows.iter().find(|r| r[3] == json!(TRICKY)).expect("the event with the tricky rule id");
    assert_eq!((&blocked[4], &blocked[5]), (&json!(TRICKY), &json!(TRICKY)));
    let waf = decoded(&app, &query(Family::WafTrends, SPAN)).await;
    assert!(waf.rows.iter().any(|r| r[2] == json!(TRICKY)), "{:?}", waf.rows);
}
