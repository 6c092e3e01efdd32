//! Ingestion through the router: exactness of batched and parallel ingestion against one record at a time, for
//! every statistics family; compressed bodies (gzip, zstd) and the body limit on their decompressed size; and
//! exactly-once ingestion with an `Idempotency-Key` (header rules, the replayed answer, across restarts).

use crate::common;

use std::{io::Write, sync::Arc};

use axum::http::{Method, StatusCode};
use common::*;
use edge_api::stats::{Family, format_time};
use serde_json::{Value, json};

/// A small deterministic generator.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

const HOUR: i64 = 3_600_000;
const DAY: i64 = 86_400_000;

/// Access records over the last 40 days (most in the last day), with few enough distinct values that rows
/// collapse, and a few older than what 5-minute and hourly rollups keep.
fn access_lines(n: usize) -> Vec<String> {
    let mut rng = Rng(1);
    (0..n)
        .map(|i| {
            let age = match i % 10 {
                0 => rng.below(40) as i64 * DAY + rng.below(DAY as u64) as i64,
                1 => rng.below(6) as i64 * DAY + rng.below(DAY as u64) as i64,
                _ => rng.below(DAY as u64) as i64,
            };
            let ts = T0 - 1 - age;
            json!({
                "timestamp": format_time(ts), "domain": format!("d{}.example", rng.below(6)),
                "property": format!("p{}", rng.below(3)), "country": (["DE", "FR", "US", "BR"][rng.below(4) as usize]),
                "country_code": (["DE", "FR", "US"][rng.below(3) as usize]), "browser_name": (["Chrome", "Safari"][rng.below(2) as usize]),
                "device_type": (["Desktop", "Mobile"][rng.below(2) as usize]), "device_os": (["Linux", "iOS"][rng.below(2) as usize]),
                "content_type": (["text/html", "image/png"][rng.below(2) as usize]), "request_type": "GET",
                "cache_status": rng.below(6), "gna_cache_status": 1 + rng.below(5), "scheme": 1 + rng.below(2),
                "http_status_code": ([200, 404, 503][rng.below(3) as usize]), "request_url": format!("/u{}", rng.below(40)),
                "hits": 1 + rng.below(5), "first_mile_bandwidth_bytes": rng.below(1000), "last_mile_bandwidth_bytes": rng.below(100_000),
                "middle_mile_bandwidth_bytes": rng.below(1000), "original_bandwidth_bytes": rng.below(1000),
                "request_time_ms": rng.below(500), "time_to_first_byte_ms": rng.below(100), "time_to_last_byte_ms": rng.below(900)
            })
            .to_string()
        })
        .collect()
}

/// Security events of the last two days, WAF and traffic shaping.
fn security_lines(n: usize) -> Vec<String> {
    let mut rng = Rng(2);
    (0..n)
        .map(|i| {
            let ts = T0 - 1 - if i % 7 == 0 { DAY + rng.below(DAY as u64) as i64 } else { rng.below(DAY as u64) as i64 };
            let waf = rng.below(2) == 0;
            let action = if waf { ["BLOCK", "WARN"][rng.below(2) as usize] } else { ["BLOCK", "RATE_LIMIT", "WARN"][rng.below(3) as usize] };
            json!({
                "timestamp": format_time(ts), "source": if waf { "waf" } else { "trafficshaping" }, "event_type": "CUSTOM",
                "event_action": action, "event_severity": (["LOW", "HIGH"][rng.below(2) as usize]),
                "waf_action": if waf { action } else { "" }, "rule_id": format!("9{}", rng.below(5)),
                "domain": format!("d{}.example", rng.below(4)), "property": format!("p{}", rng.below(3)),
                "client_ip": format!("192.0.2.{}", rng.below(20)), "client_connection_remote_ip": "192.0.2.1",
                "client_browser": (["curl", "Chrome"][rng.below(2) as usize]), "client_country_code": (["CN", "US", "BR"][rng.below(3) as usize]),
                "client_asn": 4134 + rng.below(3), "request_path": format!("/p{}", rng.below(10))
            })
            .to_string()
        })
        .collect()
}

async fn post(
    app: &TestApp,
    customer: &str,
    kind: &str,
    body: impl Into<axum::body::Body>,
    encoding: Option<&str>,
) -> Reply {
    let admin = if customer == "acme" { "alice" } else { "gina" };
    let mut r = req(Method::POST, &format!("/{customer}/v1/ingest/{kind}")).basic(admin, PASSWORD);
    if let Some(e) = encoding {
        r = r.header("content-encoding", e);
    }
    app.send(r.raw("application/x-ndjson", body).done()).await
}

async fn get(app: &TestApp, customer: &str, path_and_query: &str) -> Reply {
    let admin = if customer == "acme" { "alice" } else { "gina" };
    app.send(req(Method::GET, &format!("/{customer}/v1{path_and_query}")).basic(admin, PASSWORD).done()).await
}

/// Every query of every family worth comparing: each grouping set at each granularity over what it keeps,
/// every top-K category with each of its grouping sets, the top-K URL report and the raw events.
fn queries() -> Vec<String> {
    let range = |g: &str| {
        let from = match g {
            "5minute" => T0 - 6 * DAY,
            "hour" => T0 - 30 * DAY,
            _ => T0 - 60 * DAY,
        };
        format!("starttime={}&endtime={}", format_time(from), format_time(T0))
    };
    let mut out = Vec::new();
    for (family, path) in [
        (Family::Delivery, "/stats/data"),
        (Family::WafTrends, "/stats/security/waf/trends/data"),
        (Family::ShapingTrends, "/stats/security/trafficshaping/trends/data"),
        (Family::RequestTrends, "/stats/security/request/trends/data"),
    ] {
        let metrics = family.metrics().join(",");
        for set in family.groupings() {
            let (g, dims) = set.split_once('/').unwrap_or((set.as_str(), ""));
            let dims = dims.replace('/', ",");
            out.push(format!("{path}?{}&granularity={g}&dimensions={dims}&metrics={metrics}&limit=2500", range(g)));
        }
    }
    for set in Family::TopKUrl.groupings() {
        let dims = set.trim_start_matches("day/").replace('/', ",");
        out.push(format!("/stats/topk/url/data?{}&dimensions={dims}&metrics=hits", range("day")));
    }
    for (waf, table, path) in [
        (true, &edge_api::stats::WAF_CATEGORIES[..], "waf"),
        (false, &edge_api::stats::SHAPING_CATEGORIES[..], "trafficshaping"),
    ] {
        for (category, _) in table {
            let family = Family::topk(waf, category).unwrap();
            for set in family.groupings() {
                for (from, to) in [(T0 - 2 * HOUR, T0), (T0 - 20 * DAY, T0)] {
                    out.push(format!(
                        "/stats/security/{path}/topk/{category}/data?starttime={}&endtime={}&dimensions={}&limit=1000",
                        format_time(from),
                        format_time(to),
                        set.replace('/', ",")
                    ));
                }
            }
        }
    }
    let events = edge_api::stats::EVENT_DIMENSIONS.iter().filter(|d| **d != "customer").copied().collect::<Vec<_>>();
    out.push(format!(
        "/stats/security/events/data?starttime={}&endtime={}&dimensions={}&limit=100000",
        format_time(T0 - 3 * DAY),
        format_time(T0),
        events.join(",")
    ));
    out
}

/// Every row of a query (following `start` past the delivery limit), in a canonical order with the customer's
/// name blanked, and the total: rows of equal rank come in arrival order, which batching may change.
async fn canonical(app: &TestApp, customer: &str, q: &str) -> (Vec<String>, Value) {
    let mut rows = Vec::new();
    let total = loop {
        let reply = get(app, customer, &format!("{q}&start={}", rows.len())).await;
        assert_eq!(reply.status, StatusCode::OK, "{q}: {}", reply.body);
        let page = reply.body["rows"].as_array().unwrap_or_else(|| panic!("rows: {}", reply.body)).clone();
        let total = reply.body["total_results"].clone();
        rows.extend(page.iter().cloned());
        if page.is_empty() || q.contains("/topk/") || rows.len() as u64 >= total.as_u64().unwrap_or(0) {
            break total;
        }
    };
    if q.starts_with("/stats/topk/url/") {
        // The top 20 of a day: the rows above the day's smallest count, and the counts of all.
        let last = |r: &Value| r.as_array().and_then(|r| r.last()).and_then(Value::as_u64).unwrap_or(0);
        let mut least = std::collections::HashMap::new();
        for r in &rows {
            let e = least.entry(r[0].to_string()).or_insert(u64::MAX);
            *e = (*e).min(last(r));
        }
        rows = rows
            .into_iter()
            .map(|r| if last(&r) > least[&r[0].to_string()] { r } else { json!([r[0], last(&r)]) })
            .collect();
    }
    let mut rows: Vec<String> =
        rows.iter().map(|r| r.to_string().replace(&format!("\"{customer}\""), "\"C\"")).collect();
    rows.sort();
    (rows, total)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rollups_after_parallel_batches_equal_those_of_one_record_at_a_time_for_every_family() {
    let app = Arc::new(TestApp::new().await);
    let (access, security) = (access_lines(800), security_lines(300));
    // acme: batches of 250 to 500, four requests at a time.
    let mut posts = Vec::new();
    for (kind, lines) in [("accesslogs", &access), ("securityevents", &security)] {
        for (i, chunk) in lines.chunks(100 + 50 * (lines.len() % 6)).enumerate() {
            let (app, body) = (app.clone(), chunk.join("\n"));
            // Every other batch compressed: decompression is on the same path.
            let (body, encoding) =
                if i % 2 == 0 { (gzip(body.as_bytes()), Some("gzip")) } else { (body.into_bytes(), None) };
            posts.push(tokio::spawn(async move {
                let reply = post(&app, "acme", kind, body, encoding).await;
                assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
                reply.body["accepted"].as_u64().unwrap()
            }));
            if posts.len() % 4 == 0 {
                for p in posts.drain(..) {
                    assert!(p.await.unwrap() > 0);
                }
            }
        }
    }
    for p in posts {
        assert!(p.await.unwrap() > 0);
    }
    // globex: the same records, one request each; its security events with the path's slash escaped (`\/`,
    // the same text), which leaves them to serde rather than to the plain-line scanner acme's went through.
    for (kind, lines) in [("accesslogs", &access), ("securityevents", &security)] {
        for line in lines {
            let line = if kind == "securityevents" {
                let escaped = line.replace(r#""request_path":"/"#, r#""request_path":"\/"#);
                assert_ne!(&escaped, line);
                escaped
            } else {
                line.clone()
            };
            let reply = post(&app, "globex", kind, line, None).await;
            assert_eq!(reply.body["accepted"], 1, "{}", reply.body);
        }
    }
    let queries = queries();
    assert!(queries.len() > 200, "{} queries", queries.len());
    let mut non_empty = 0;
    for q in &queries {
        let (a, g) = (canonical(&app, "acme", q).await, canonical(&app, "globex", q).await);
        if a != g {
            let only =
                |x: &[String], y: &[String]| x.iter().filter(|r| !y.contains(r)).take(3).cloned().collect::<Vec<_>>();
            panic!(
                "{q}: totals {} and {}; only batched: {:?}; only one by one: {:?}",
                a.1,
                g.1,
                only(&a.0, &g.0),
                only(&g.0, &a.0)
            );
        }
        non_empty += usize::from(!a.0.is_empty());
    }
    assert!(non_empty * 10 > queries.len() * 9, "most queries have rows: {non_empty} of {}", queries.len());
}

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(body).unwrap();
    e.finish().unwrap()
}

async fn day_hits(app: &TestApp) -> Value {
    let q = format!(
        "/stats/data?starttime={}&endtime={}&metrics=hits&granularity=day",
        format_time(T0 - 60 * DAY),
        format_time(T0)
    );
    get(app, "acme", &q).await.body["rows"].clone()
}

#[tokio::test]
async fn gzip_and_zstd_bodies_are_stored_like_plain_ones() {
    let app = TestApp::new().await;
    let body = access_lines(200).join("\n");
    let reply = post(&app, "globex", "accesslogs", body.clone(), None).await;
    assert_eq!(reply.body, json!({"accepted": 200, "rejected": [], "rejected_more": 0}));
    for (encoding, compressed) in
        [("gzip", gzip(body.as_bytes())), ("zstd", zstd::encode_all(body.as_bytes(), 3).unwrap())]
    {
        assert!(compressed.len() * 4 < body.len(), "{encoding} compresses");
        let reply = post(&app, "acme", "accesslogs", compressed, Some(encoding)).await;
        assert_eq!(reply.status, StatusCode::OK, "{encoding}: {}", reply.body);
        assert_eq!(reply.body, json!({"accepted": 200, "rejected": [], "rejected_more": 0}), "{encoding}");
    }
    // Twice the plain customer's hits, day by day.
    let plain = get(
        &app,
        "globex",
        &format!(
            "/stats/data?starttime={}&endtime={}&metrics=hits&granularity=day",
            format_time(T0 - 60 * DAY),
            format_time(T0)
        ),
    )
    .await
    .body["rows"]
        .clone();
    let doubled: Vec<Value> =
        plain.as_array().unwrap().iter().map(|r| json!([r[0], r[1], r[2].as_u64().unwrap() * 2])).collect();
    assert_eq!(day_hits(&app).await, json!(doubled));
    // Security events too.
    let events = security_lines(50).join("\n");
    let reply =
        post(&app, "acme", "securityevents", zstd::encode_all(events.as_bytes(), 1).unwrap(), Some("zstd")).await;
    assert_eq!(reply.body, json!({"accepted": 50, "rejected": [], "rejected_more": 0}));
}

#[tokio::test]
async fn a_decompression_bomb_is_refused_with_413_and_stores_nothing() {
    let app = TestApp::new().await;
    // Valid records repeated well past the 10 MiB limit once decompressed: small on the wire.
    let line = access_lines(1).remove(0);
    let mut body = String::new();
    while body.len() <= 11 * 1024 * 1024 {
        body.push_str(&line);
        body.push('\n');
    }
    for (encoding, compressed) in
        [("gzip", gzip(body.as_bytes())), ("zstd", zstd::encode_all(body.as_bytes(), 19).unwrap())]
    {
        assert!(compressed.len() < 1024 * 1024, "{encoding}: {} bytes on the wire", compressed.len());
        let reply = post(&app, "acme", "accesslogs", compressed, Some(encoding)).await;
        assert_error(&reply, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    }
    assert_eq!(day_hits(&app).await, json!([]), "nothing stored");
    assert_eq!(app.state.stats.log_bytes(), 0, "nothing logged");
    // Just under the limit it is accepted.
    let fits: String = body[..10 * 1024 * 1024].rsplit_once('\n').unwrap().0.to_string();
    let reply = post(&app, "acme", "accesslogs", gzip(fits.as_bytes()), Some("gzip")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["accepted"].as_u64(), Some(fits.lines().count() as u64));
}

#[tokio::test]
async fn unknown_encodings_are_415_and_corrupt_compressed_bodies_400() {
    let app = TestApp::new().await;
    let body = access_lines(3).join("\n");
    let reply = post(&app, "acme", "accesslogs", body.clone(), Some("br")).await;
    assert_error(&reply, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
    let mut broken = gzip(body.as_bytes());
    broken.truncate(broken.len() / 2);
    let reply = post(&app, "acme", "accesslogs", broken, Some("gzip")).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_encoding");
    let reply = post(&app, "acme", "securityevents", body.into_bytes(), Some("zstd")).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_encoding");
    assert_eq!(day_hits(&app).await, json!([]), "nothing stored");
}

/// The fields docs/api.md lists as required in its bullet starting with `bullet`: the backquoted names between
/// "required" and the next semicolon, outside parentheses.
fn documented_required(bullet: &str) -> Vec<String> {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/api.md")).unwrap();
    let start = docs.find(bullet).unwrap_or_else(|| panic!("docs/api.md has no bullet {bullet:?}"));
    let text = &docs[start..];
    let text = &text[..text.find("\n- ").unwrap_or(text.len())];
    let required = &text[text.find("required").unwrap_or_else(|| panic!("no 'required' in {text}"))..];
    let required = &required[..required.find(';').unwrap_or(required.len())];
    // Without what parentheses say about a field (`source` (`waf` or `trafficshaping`)).
    let mut depth = 0;
    let required: String = required
        .chars()
        .filter(|c| {
            depth += (*c == '(') as i32;
            let keep = depth == 0;
            depth -= (*c == ')') as i32;
            keep
        })
        .collect();
    let mut names: Vec<String> = required
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|n| n.chars().all(|c| c == '_' || c.is_ascii_lowercase()))
        .map(String::from)
        .collect();
    names.sort();
    names
}

/// The fields of `full` (a valid record) without which the server rejects the record.
async fn required_by_the_server(app: &TestApp, kind: &str, full: Value) -> Vec<String> {
    let mut required = Vec::new();
    for field in full.as_object().unwrap().keys() {
        let mut record = full.clone();
        record.as_object_mut().unwrap().remove(field);
        let reply = app
            .send(
                req(Method::POST, &format!("/acme/v1/ingest/{kind}"))
                    .basic("alice", PASSWORD)
                    .raw("application/x-ndjson", record.to_string())
                    .done(),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        if reply.body["accepted"] == 0 {
            required.push(field.clone());
        }
    }
    required.sort();
    required
}

#[tokio::test]
async fn the_documented_required_fields_are_the_ones_the_server_requires() {
    let app = TestApp::new().await;
    let access = json!({
        "timestamp": format_time(T0 - HOUR), "browser_name": "Firefox", "cache_status": 1, "content_type": "text/html",
        "country": "Germany", "country_code": "DE", "device_os": "Linux", "device_type": "Desktop",
        "domain": "www.example.com", "gna_cache_status": 2, "http_status_code": 200, "property": "shop",
        "request_type": "GET", "scheme": 2, "request_url": "/", "first_mile_bandwidth_bytes": 1, "hits": 1,
        "last_mile_bandwidth_bytes": 1, "middle_mile_bandwidth_bytes": 1, "original_bandwidth_bytes": 1,
        "request_time_ms": 1, "time_to_first_byte_ms": 1, "time_to_last_byte_ms": 1,
    });
    assert_eq!(documented_required("- Access-log fields:"), required_by_the_server(&app, "accesslogs", access).await);
    let security = json!({
        "timestamp": format_time(T0 - HOUR), "source": "waf", "event_type": "sqli", "event_action": "BLOCK",
        "event_severity": "HIGH", "waf_action": "BLOCK", "rule_id": "942100", "domain": "www.example.com",
        "property": "shop", "client_ip": "203.0.113.7", "client_connection_remote_ip": "203.0.113.7",
        "client_browser": "curl", "client_country_code": "DE", "client_asn": 64500, "request_path": "/login",
    });
    assert_eq!(
        documented_required("- Security-event fields:"),
        required_by_the_server(&app, "securityevents", security).await
    );
}

/// A POST of `body` to `kind` with an `Idempotency-Key` (and a Content-Encoding, if given).
async fn post_keyed(
    app: &TestApp,
    customer: &str,
    kind: &str,
    key: &str,
    body: Vec<u8>,
    encoding: Option<&str>,
) -> Reply {
    let admin = if customer == "acme" { "alice" } else { "gina" };
    let mut r = req(Method::POST, &format!("/{customer}/v1/ingest/{kind}"))
        .basic(admin, PASSWORD)
        .header("idempotency-key", key);
    if let Some(e) = encoding {
        r = r.header("content-encoding", e);
    }
    app.send(r.raw("application/x-ndjson", body).done()).await
}

fn replayed(reply: &Reply) -> Option<&str> {
    reply.headers.get("idempotent-replayed").and_then(|v| v.to_str().ok())
}

/// Every query of [`queries`] answers the same for `a` at `app_a` as for `b` at `app_b`.
async fn same_answers(app_a: &TestApp, a: &str, app_b: &TestApp, b: &str) {
    for q in queries() {
        assert_eq!(canonical(app_a, a, &q).await, canonical(app_b, b, &q).await, "{q}");
    }
}

/// Access lines and security lines of a chunk, each with one line the server rejects.
fn chunk() -> (Vec<u8>, Vec<u8>) {
    let mut access = access_lines(300);
    access.insert(7, "{\"timestamp\": \"not a time\"}".into());
    let mut security = security_lines(120);
    security.push("not json".into());
    (access.join("\n").into_bytes(), security.join("\n").into_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chunk_sent_twice_with_its_idempotency_key_is_stored_once_and_answered_alike() {
    let app = TestApp::new().await;
    let (access, security) = chunk();
    // globex gets the chunk once, without a key: what acme must hold however often it retries.
    assert_eq!(post(&app, "globex", "accesslogs", access.clone(), None).await.status, StatusCode::OK);
    assert_eq!(post(&app, "globex", "securityevents", security.clone(), None).await.status, StatusCode::OK);

    let first = post_keyed(&app, "acme", "accesslogs", "app.log:0-300", access.clone(), None).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body["accepted"], 300);
    assert_eq!(first.body["rejected"].as_array().map(Vec::len), Some(1), "{}", first.body);
    assert_eq!(replayed(&first), None);
    let again = post_keyed(&app, "acme", "accesslogs", "app.log:0-300", access.clone(), None).await;
    assert_eq!((again.status, &again.body), (StatusCode::OK, &first.body));
    assert_eq!(replayed(&again), Some("true"));
    // The same text compressed is the same body.
    let gz = post_keyed(&app, "acme", "accesslogs", "app.log:0-300", gzip(&access), Some("gzip")).await;
    assert_eq!((gz.status, &gz.body, replayed(&gz)), (StatusCode::OK, &first.body, Some("true")));
    // The key is scoped to the endpoint: security events with it are a chunk of their own.
    let events = post_keyed(&app, "acme", "securityevents", "app.log:0-300", security.clone(), None).await;
    assert_eq!((events.status, events.body["accepted"].as_u64(), replayed(&events)), (StatusCode::OK, Some(120), None));
    let events_again = post_keyed(&app, "acme", "securityevents", "app.log:0-300", security.clone(), None).await;
    assert_eq!((&events_again.body, replayed(&events_again)), (&events.body, Some("true")));
    // Another body under a kept key is refused and stores nothing.
    let other = post_keyed(&app, "acme", "accesslogs", "app.log:0-300", access_lines(5).join("\n").into(), None).await;
    assert_error(&other, StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused");
    same_answers(&app, "acme", &app, "globex").await;

    // Scoped to the customer: globex's retry with acme's key stores its chunk again (it sent none with a key).
    let theirs = post_keyed(&app, "globex", "securityevents", "app.log:0-300", security.clone(), None).await;
    assert_eq!((theirs.status, replayed(&theirs)), (StatusCode::OK, None));
}

/// Restarts `app`'s state over the same data dir (the engine replays its log, or loads its snapshot).
async fn restart(app: TestApp) -> TestApp {
    let TestApp { state, clock, dir, .. } = app;
    let settings = state.settings.as_ref().clone();
    drop(state);
    let state = edge_server::AppState::open_with_clock(settings, Arc::new(clock.clone())).await.expect("state");
    let router = edge_server::app(state.clone());
    TestApp { state, clock, router, dir }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_keys_survive_a_restart_from_the_log_and_from_a_snapshot() {
    let once = TestApp::new().await;
    let (access, security) = chunk();
    post(&once, "acme", "accesslogs", access.clone(), None).await;
    post(&once, "acme", "securityevents", security.clone(), None).await;

    let app = TestApp::new().await;
    let first = post_keyed(&app, "acme", "accesslogs", "a:0", access.clone(), None).await;
    let events = post_keyed(&app, "acme", "securityevents", "s:0", security.clone(), None).await;
    assert_eq!((first.status, events.status), (StatusCode::OK, StatusCode::OK));
    // From the log alone.
    let app = restart(app).await;
    assert!(app.state.stats.log_bytes() > 0, "the batches are in the log");
    let again = post_keyed(&app, "acme", "accesslogs", "a:0", access.clone(), None).await;
    assert_eq!((again.status, &again.body, replayed(&again)), (StatusCode::OK, &first.body, Some("true")));
    same_answers(&app, "acme", &once, "acme").await;
    // From a snapshot (the log emptied), with one more keyed batch logged after it.
    app.state.stats.checkpoint().expect("checkpoint");
    let more = access_lines(20).join("\n").into_bytes();
    assert_eq!(post_keyed(&app, "acme", "accesslogs", "a:1", more.clone(), None).await.status, StatusCode::OK);
    assert_eq!(post(&once, "acme", "accesslogs", more.clone(), None).await.status, StatusCode::OK);
    let app = restart(app).await;
    for (kind, key, body, answer) in
        [("accesslogs", "a:0", &access, &first.body), ("securityevents", "s:0", &security, &events.body)]
    {
        let reply = post_keyed(&app, "acme", kind, key, body.clone(), None).await;
        assert_eq!((reply.status, &reply.body, replayed(&reply)), (StatusCode::OK, answer, Some("true")), "{kind}");
    }
    assert_eq!(replayed(&post_keyed(&app, "acme", "accesslogs", "a:1", more, None).await), Some("true"));
    same_answers(&app, "acme", &once, "acme").await;
    // A day later the keys are forgotten: the same chunk is stored again.
    app.advance(DAY + 1);
    let late = post_keyed(&app, "acme", "accesslogs", "a:0", access.clone(), None).await;
    assert_eq!((late.status, replayed(&late)), (StatusCode::OK, None));
}

#[tokio::test]
async fn a_bad_idempotency_key_is_400_invalid_header_and_stores_nothing() {
    let app = TestApp::new().await;
    let body = access_lines(10).join("\n").into_bytes();
    let long = "k".repeat(201);
    for key in ["", long.as_str()] {
        let reply = post_keyed(&app, "acme", "accesslogs", key, body.clone(), None).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_header");
    }
    for raw in [&b"caf\xc3\xa9"[..], b"tab\there", b"\xff"] {
        let r = req(Method::POST, "/acme/v1/ingest/securityevents")
            .basic("alice", PASSWORD)
            .header("idempotency-key", "x")
            .done();
        let (mut parts, _) = r.into_parts();
        parts.headers.insert("idempotency-key", axum::http::HeaderValue::from_bytes(raw).unwrap());
        parts.headers.insert("content-type", axum::http::HeaderValue::from_static("application/x-ndjson"));
        let reply = app.send(axum::http::Request::from_parts(parts, security_lines(3).join("\n").into())).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_header");
    }
    let two = req(Method::POST, "/acme/v1/ingest/accesslogs")
        .basic("alice", PASSWORD)
        .header("idempotency-key", "a")
        .header("idempotency-key", "b")
        .raw("application/x-ndjson", body.clone())
        .done();
    assert_error(&app.send(two).await, StatusCode::BAD_REQUEST, "invalid_header");
    assert_eq!(day_hits(&app).await, json!([]), "nothing was stored");
    // The longest key, spaces and all printable characters included, is taken.
    let mut longest: String = (b'!'..=b'~').map(char::from).collect();
    longest.push_str(" with spaces ");
    longest.push_str(&"x".repeat(200 - longest.len()));
    let reply = post_keyed(&app, "acme", "accesslogs", &longest, body.clone(), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

#[tokio::test]
async fn a_key_in_flight_is_409_with_retry_after_and_a_failed_batch_keeps_no_key() {
    let app = TestApp::new().await;
    let body = access_lines(10).join("\n").into_bytes();
    // A request with the key being handled by this process (as while a large chunk is being stored).
    let customer = app.state.store.customer_by_name("acme").await.unwrap().unwrap().id;
    let id = (customer, edge_server::stats::Endpoint::AccessLogs, "busy".to_string());
    app.state.ingest_keys.lock().unwrap().insert(id.clone());
    let reply = post_keyed(&app, "acme", "accesslogs", "busy", body.clone(), None).await;
    assert_error(&reply, StatusCode::CONFLICT, "idempotency_key_in_use");
    assert_eq!(reply.headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    // Another endpoint's key of the same text is free.
    let events = post_keyed(&app, "acme", "securityevents", "busy", security_lines(2).join("\n").into(), None).await;
    assert_eq!(events.status, StatusCode::OK, "{}", events.body);
    app.state.ingest_keys.lock().unwrap().remove(&id);
    assert_eq!(post_keyed(&app, "acme", "accesslogs", "busy", body.clone(), None).await.status, StatusCode::OK);
    assert!(app.state.ingest_keys.lock().unwrap().is_empty(), "a finished request releases its key");

    // A body refused (corrupt gzip) keeps no key: the retry with a good body under it is stored.
    let refused = post_keyed(&app, "acme", "accesslogs", "k2", b"\x1f\x8b not gzip".to_vec(), Some("gzip")).await;
    assert_error(&refused, StatusCode::BAD_REQUEST, "invalid_encoding");
    let stored = post_keyed(&app, "acme", "accesslogs", "k2", body.clone(), None).await;
    assert_eq!((stored.status, replayed(&stored), stored.body["accepted"].as_u64()), (StatusCode::OK, None, Some(10)));
}

#[tokio::test]
async fn a_batch_refused_as_statistics_full_keeps_no_key() {
    let limits = edge_server::stats::Limits { max_rows: 50, ..edge_server::stats::Limits::DEFAULT };
    let app = TestApp::with(|s| s.stats_limits = limits).await;
    assert_eq!(post(&app, "acme", "accesslogs", access_lines(200).join("\n"), None).await.status, StatusCode::OK);
    let body = access_lines(10).join("\n").into_bytes();
    let full = post_keyed(&app, "acme", "accesslogs", "k", body.clone(), None).await;
    assert_error(&full, StatusCode::CONFLICT, "statistics_full");
    let customer = app.state.store.customer_by_name("acme").await.unwrap().unwrap().id;
    let kept = app.state.stats.kept(customer, edge_server::stats::Endpoint::AccessLogs, "k").unwrap();
    assert_eq!(kept, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_keyed_chunk_sent_four_times_at_once_is_stored_once() {
    let app = Arc::new(TestApp::new().await);
    let body = access_lines(6_000).join("\n").into_bytes();
    let sends: Vec<_> = (0..4)
        .map(|_| {
            let (app, body) = (app.clone(), body.clone());
            tokio::spawn(async move { post_keyed(&app, "acme", "accesslogs", "same", body, None).await })
        })
        .collect();
    let mut stored = 0;
    for send in sends {
        let reply = send.await.unwrap();
        match (reply.status, replayed(&reply)) {
            (StatusCode::OK, None) => stored += 1,
            (StatusCode::OK, Some("true")) => assert_eq!(reply.body["accepted"], 6_000),
            _ => assert_error(&reply, StatusCode::CONFLICT, "idempotency_key_in_use"),
        }
    }
    assert_eq!(stored, 1, "one of them stored the chunk");
    assert_eq!(post(&app, "globex", "accesslogs", body.clone(), None).await.status, StatusCode::OK);
    same_answers(&app, "acme", &app, "globex").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_answer_names_the_values_folded_the_first_time() {
    let limits = edge_server::stats::Limits { max_values: 1_000, ..edge_server::stats::Limits::DEFAULT };
    let app = TestApp::with(|s| s.stats_limits = limits).await;
    let lines: Vec<String> = access_lines(1_200)
        .into_iter()
        .enumerate()
        .map(|(i, l)| l.replacen("\"request_url\":\"/u", &format!("\"request_url\":\"/{i}/u"), 1))
        .collect();
    let body = lines.join("\n").into_bytes();
    let first = post_keyed(&app, "acme", "accesslogs", "urls", body.clone(), None).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body["folded"][0]["dimension"], "request_url", "{}", first.body);
    // Retried, and after a restart (the answer comes from the kept key, not from storing again).
    let again = post_keyed(&app, "acme", "accesslogs", "urls", body.clone(), None).await;
    assert_eq!((&again.body, replayed(&again)), (&first.body, Some("true")));
    let app = restart(app).await;
    let after = post_keyed(&app, "acme", "accesslogs", "urls", body.clone(), None).await;
    assert_eq!((&after.body, replayed(&after)), (&first.body, Some("true")));
}
