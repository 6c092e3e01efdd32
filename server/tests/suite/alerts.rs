//! Alerting through the real router, with a manual clock, generated traffic, a real HTTP receiver for webhooks
//! and a real SMTP server: rules, channels and silences managed as the API's conventions say (paged envelopes,
//! JSON errors, audit records, roles, tenants, bounds), a 5xx-ratio rule that fires, notifies once by webhook
//! (signed) and e-mail, is silenced, notifies again after its interval, resolves; retries; audit rules; the
//! preview; the timeline.

use crate::common;
use crate::receivers;

use axum::http::{Method, StatusCode};
use common::*;
use edge_server::alerting;
use hmac::{Hmac, Mac};
use receivers::{HttpReceiver, SmtpSink};
use serde_json::{Value, json};
use sha2::Sha256;

const MIN: i64 = 60_000;

fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap().format("%Y-%m-%dT%H:%M:%S").to_string()
}

fn iso(ms: i64) -> String {
    format!("{}Z", time(ms))
}

fn access(ms: i64, status: u16, hits: u64) -> Value {
    json!({
        "timestamp": time(ms), "domain": "a.example", "property": "shop", "country": "DE", "country_code": "DE",
        "scheme": 2, "http_status_code": status, "request_url": "/x", "hits": hits, "cache_status": 1
    })
}

async fn ingest(app: &TestApp, customer: &str, lines: &[Value]) {
    let admin = if customer == "acme" { "alice" } else { "gina" };
    let body = lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    let reply = app
        .send(
            req(Method::POST, &format!("/{customer}/v1/ingest/accesslogs"))
                .basic(admin, PASSWORD)
                .raw("application/x-ndjson", body)
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

/// Traffic of the 5-minute bucket starting at `bucket_ms`: `ok` hits of 200 and `errors` of 503.
async fn traffic(app: &TestApp, bucket_ms: i64, ok: u64, errors: u64) {
    let mut lines = vec![access(bucket_ms + MIN, 200, ok)];
    if errors > 0 {
        lines.push(access(bucket_ms + 2 * MIN, 503, errors));
    }
    ingest(app, "acme", &lines).await;
}

async fn call(app: &TestApp, method: Method, path: &str, user: &str, body: Option<Value>) -> Reply {
    let customer = if ["gina"].contains(&user) { "globex" } else { "acme" };
    let mut r = req(method, &format!("/{customer}/v1{path}")).basic(user, PASSWORD);
    if let Some(b) = body {
        r = r.json(&b);
    }
    app.send(r.done()).await
}

fn ratio_rule(channels: &[&str]) -> Value {
    json!({
        "name": "5xx ratio", "severity": "critical", "renotify_minutes": 10,
        "condition": {"type": "threshold", "operator": ">", "value": 0.02, "watch": {
            "path": "/stats", "metric": "hits", "window_minutes": 5,
            "filters": "http_status_code==500,http_status_code==502,http_status_code==503,http_status_code==504",
            "denominator": {"metric": "hits"}}},
        "channels": channels, "labels": {"team": "edge"}
    })
}

fn verify(secret: &str, body: &[u8], signature: &str) -> bool {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    signature == format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// One round of evaluation (the clock's minute) and the sender's attempts.
async fn round(app: &TestApp) -> alerting::Round {
    let round = alerting::evaluate_round(&app.state).await.unwrap().expect("this process claims the round");
    while alerting::deliver_due(&app.state).await > 0 {}
    round
}

async fn with_mail() -> (TestApp, SmtpSink, HttpReceiver) {
    let sink = SmtpSink::start().await;
    let url = sink.url.clone();
    let app = TestApp::with(move |s| {
        s.smtp_url = Some(url);
        s.alert_webhooks_to_private = true;
    })
    .await;
    (app, sink, HttpReceiver::start().await)
}

async fn channels(app: &TestApp, hook: &HttpReceiver) -> (String, String, String) {
    let webhook = call(
        app,
        Method::POST,
        "/alerts/channels",
        "alice",
        Some(json!({"name": "ops hook", "type": "webhook", "url": hook.url})),
    )
    .await;
    assert_eq!(webhook.status, StatusCode::CREATED, "{}", webhook.body);
    let secret = webhook.body["secret"].as_str().expect("the secret, shown once").to_string();
    let mail = call(
        app,
        Method::POST,
        "/alerts/channels",
        "alice",
        Some(json!({"name": "on call", "type": "email", "addresses": ["oncall@example.com"]})),
    )
    .await;
    assert_eq!(mail.status, StatusCode::CREATED, "{}", mail.body);
    (webhook.body["id"].as_str().unwrap().into(), mail.body["id"].as_str().unwrap().into(), secret)
}

#[tokio::test]
async fn a_5xx_ratio_rule_fires_once_is_silenced_notifies_again_and_resolves_when_traffic_recovers() {
    let (app, sink, hook) = with_mail().await;
    let (webhook, mail, secret) = channels(&app, &hook).await;
    // The secret is shown once: reading the channel again does not show it.
    let again = call(&app, Method::GET, &format!("/alerts/channels/{webhook}"), "alice", None).await;
    assert_eq!(again.body["secret"], Value::Null);
    let rule = call(&app, Method::POST, "/alerts/rules", "alice", Some(ratio_rule(&[&webhook, &mail]))).await;
    assert_eq!(rule.status, StatusCode::CREATED, "{}", rule.body);
    let id = rule.body["id"].as_str().unwrap().to_string();
    assert_eq!(rule.headers["location"], format!("/acme/v1/alerts/rules/{id}"));
    assert_eq!(rule.body["status"]["state"], "ok");

    // Healthy traffic: 1 % errors. Evaluated at T0+10 min: the window is the bucket T0+5..T0+10.
    traffic(&app, T0 + 5 * MIN, 990, 10).await;
    app.advance(10 * MIN);
    let r = round(&app).await;
    assert_eq!((r.rules, r.transitions, r.deliveries), (1, 0, 0));
    let got = call(&app, Method::GET, &format!("/alerts/rules/{id}"), "alice", None).await;
    assert_eq!(got.body["status"]["state"], "ok");
    assert!((got.body["status"]["value"].as_f64().unwrap() - 0.01).abs() < 1e-9, "{}", got.body);

    // 5 % errors in the next bucket: firing at once (no for-duration), one signed webhook and one mail.
    traffic(&app, T0 + 10 * MIN, 950, 50).await;
    app.advance(5 * MIN);
    let r = round(&app).await;
    assert_eq!((r.transitions, r.deliveries), (1, 2));
    let got = call(&app, Method::GET, &format!("/alerts/rules/{id}"), "alice", None).await;
    assert_eq!(got.body["status"]["state"], "firing", "{}", got.body);
    let received = hook.received();
    assert_eq!(received.len(), 1);
    let signature = &received[0].headers["x-edge-signature"];
    assert!(verify(&secret, &received[0].body, signature), "the signature checks with the channel's secret");
    assert!(!verify("another secret", &received[0].body, signature));
    let payload: Value = serde_json::from_slice(&received[0].body).unwrap();
    assert_eq!((payload["kind"].as_str(), payload["state"].as_str()), (Some("firing"), Some("firing")));
    assert_eq!((payload["rule"]["id"].as_str(), payload["customer"].as_str()), (Some(id.as_str()), Some("acme")));
    assert!((payload["value"].as_f64().unwrap() - 0.05).abs() < 1e-9);
    assert_eq!(received[0].headers["x-edge-delivery"], payload["id"].as_str().unwrap());
    assert_eq!(payload["console_url"], format!("https://console.example/acme/alerts?rule={id}"));
    let mails = sink.mails();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].to, ["<oncall@example.com>"]);
    assert!(mails[0].data.contains("[FIRING] 5xx ratio (critical, acme)"), "{}", mails[0].data);

    // Still firing a minute later: nothing more is sent.
    app.advance(MIN);
    assert_eq!(round(&app).await.deliveries, 0);
    assert_eq!(hook.received().len(), 1);

    // A silence on the rule's labels: the re-notification after 10 minutes is recorded, not sent.
    let silence = call(
        &app,
        Method::POST,
        "/alerts/silences",
        "alice",
        Some(json!({
        "comment": "deploying a fix", "labels": {"team": "edge"},
        "starts": iso(T0 + 16 * MIN), "ends": iso(T0 + 40 * MIN)})),
    )
    .await;
    assert_eq!(silence.status, StatusCode::CREATED, "{}", silence.body);
    assert_eq!(silence.body["active"], true);
    for bucket in [15, 20] {
        traffic(&app, T0 + bucket * MIN, 900, 100).await;
    }
    app.advance(9 * MIN);
    let r = round(&app).await;
    assert_eq!((r.transitions, r.deliveries), (0, 2), "a re-notification, to both channels");
    assert_eq!(hook.received().len(), 1, "silenced: not sent");
    assert_eq!(sink.mails().len(), 1);
    let log = call(&app, Method::GET, &format!("/alerts/channels/{webhook}/deliveries"), "alice", None).await;
    let statuses: Vec<(&str, &str)> = log.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["kind"].as_str().unwrap(), d["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses, [("renotify", "silenced"), ("firing", "sent")]);

    // The silence ends; traffic recovers: resolved, notified.
    let sid = silence.body["id"].as_str().unwrap();
    assert_eq!(
        call(&app, Method::DELETE, &format!("/alerts/silences/{sid}"), "alice", None).await.status,
        StatusCode::NO_CONTENT
    );
    traffic(&app, T0 + 25 * MIN, 1000, 0).await;
    app.advance(5 * MIN);
    let r = round(&app).await;
    assert_eq!((r.transitions, r.deliveries), (1, 2));
    let received = hook.received();
    assert_eq!(received.len(), 2);
    let resolved: Value = serde_json::from_slice(&received[1].body).unwrap();
    assert_eq!((resolved["kind"].as_str(), resolved["previous_state"].as_str()), (Some("resolved"), Some("firing")));
    assert!(verify(&secret, &received[1].body, &received[1].headers["x-edge-signature"]));
    assert_eq!(sink.mails().len(), 2);

    // The events: ok → firing → resolved, newest first, with the values.
    let events = call(&app, Method::GET, &format!("/alerts/events?rule_id={id}"), "alice", None).await;
    let moves: Vec<(&str, &str)> = events.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["from"].as_str().unwrap(), e["to"].as_str().unwrap()))
        .collect();
    assert_eq!(moves, [("firing", "resolved"), ("ok", "firing")]);
    assert_eq!(events.body["items"][1]["details"]["numerator"], 50.0);
    assert_eq!(events.body["items"][1]["details"]["denominator"], 1000.0);
    assert_eq!(events.body["total"], 2);

    // The timeline of the hour has both transitions as markers.
    let timeline =
        call(&app, Method::GET, &format!("/alerts/timeline?from={}&to={}", iso(T0), iso(T0 + 60 * MIN)), "alice", None)
            .await;
    assert_eq!(timeline.status, StatusCode::OK, "{}", timeline.body);
    let kinds: Vec<&str> =
        timeline.body["markers"].as_array().unwrap().iter().map(|m| m["operation"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["alert.firing", "alert.resolved"]);
}

#[tokio::test]
async fn a_failing_webhook_is_retried_with_backoff_and_a_4xx_ends_it() {
    let (app, _sink, hook) = with_mail().await;
    let (webhook, _, _) = channels(&app, &hook).await;
    hook.answer(&[503, 500]);
    let test = call(&app, Method::POST, &format!("/alerts/channels/{webhook}/test"), "alice", None).await;
    assert_eq!(test.status, StatusCode::OK, "{}", test.body);
    assert_eq!((test.body["status"].as_str(), test.body["response_status"].as_u64()), (Some("pending"), Some(503)));
    assert_eq!(test.body["attempts"], 1);
    // Not due before its wait: 30 s, then 2 minutes.
    assert_eq!(alerting::deliver_due(&app.state).await, 0);
    app.advance(30_000);
    assert_eq!(alerting::deliver_due(&app.state).await, 1);
    app.advance(119_000);
    assert_eq!(alerting::deliver_due(&app.state).await, 0);
    app.advance(1_000);
    assert_eq!(alerting::deliver_due(&app.state).await, 1);
    let log = call(&app, Method::GET, &format!("/alerts/channels/{webhook}/deliveries"), "alice", None).await;
    let d = &log.body["items"][0];
    assert_eq!(
        (d["status"].as_str(), d["attempts"].as_u64(), d["response_status"].as_u64()),
        (Some("sent"), Some(3), Some(200))
    );
    assert_eq!(hook.received().len(), 3);
    // A 404 is not retried.
    hook.answer(&[404]);
    let test = call(&app, Method::POST, &format!("/alerts/channels/{webhook}/test"), "alice", None).await;
    assert_eq!((test.body["status"].as_str(), test.body["response_status"].as_u64()), (Some("failed"), Some(404)));
    // Without the operator's leave, a webhook cannot reach the server's own network.
    let closed = TestApp::new().await;
    let created = call(
        &closed,
        Method::POST,
        "/alerts/channels",
        "alice",
        Some(json!({"name": "inside", "type": "webhook", "url": hook.url})),
    )
    .await;
    let id = created.body["id"].as_str().unwrap();
    let test = call(&closed, Method::POST, &format!("/alerts/channels/{id}/test"), "alice", None).await;
    assert_eq!(test.body["status"], "failed");
    assert!(test.body["error"].as_str().unwrap().contains("own network"), "{}", test.body);
}

#[tokio::test]
async fn an_audit_rule_fires_on_a_matching_change_and_resolves_the_next_minute() {
    let (app, _sink, hook) = with_mail().await;
    let (webhook, _, _) = channels(&app, &hook).await;
    let rule = call(
        &app,
        Method::POST,
        "/alerts/rules",
        "alice",
        Some(json!({
        "name": "config changes", "severity": "info", "channels": [webhook],
        "condition": {"type": "audit", "operations": ["property.config.*", "property.create"]}})),
    )
    .await;
    assert_eq!(rule.status, StatusCode::CREATED, "{}", rule.body);
    // An operator may not watch the audit log it cannot read.
    app.add_user("acme", "oscar", "operator").await;
    let refused = call(
        &app,
        Method::POST,
        "/alerts/rules",
        "oscar",
        Some(json!({
        "name": "x", "severity": "info", "condition": {"type": "audit", "operations": ["*"]}})),
    )
    .await;
    assert_error(&refused, StatusCode::FORBIDDEN, "forbidden");

    app.advance(MIN);
    app.add_property("www", &["www.example.com"]).await;
    app.advance(MIN);
    let r = round(&app).await;
    assert_eq!((r.transitions, r.deliveries), (1, 1));
    let payload: Value = serde_json::from_slice(&hook.received()[0].body).unwrap();
    assert_eq!(payload["details"]["records"][0]["operation"], "property.create");
    assert_eq!(payload["details"]["records"][0]["target"]["id"], "www");
    app.advance(MIN);
    let r = round(&app).await;
    assert_eq!((r.transitions, r.deliveries), (1, 0), "resolved, without a notification");
    // A viewer reads the event, without who acted.
    app.add_user("acme", "vera", "viewer").await;
    let events = call(&app, Method::GET, "/alerts/events?state=firing", "vera", None).await;
    assert_eq!(events.body["items"][0]["details"]["records"][0]["actor"], Value::Null);
    let events = call(&app, Method::GET, "/alerts/events?state=firing", "alice", None).await;
    assert_eq!(events.body["items"][0]["details"]["records"][0]["actor"], "alice");
}

#[tokio::test]
async fn the_preview_shows_when_a_draft_would_have_fired_over_the_last_days() {
    let app = TestApp::new().await;
    app.advance(3 * 86_400_000);
    let now = T0 + 3 * 86_400_000;
    // Hourly: healthy except one hour with 10 % errors, two days ago.
    let mut lines = Vec::new();
    for h in 1..48 {
        let at = now - h * 3_600_000;
        lines.push(access(at, 200, 100));
        if h == 30 {
            lines.push(access(at, 503, 20));
        }
    }
    ingest(&app, "acme", &lines).await;
    let mut draft = ratio_rule(&[]);
    draft["condition"]["watch"]["window_minutes"] = json!(60);
    let preview = call(&app, Method::POST, "/alerts/rules/preview", "alice", Some(draft)).await;
    assert_eq!(preview.status, StatusCode::OK, "{}", preview.body);
    assert_eq!((preview.body["step_minutes"].as_u64(), preview.body["threshold"].as_f64()), (Some(60), Some(0.02)));
    let firings = preview.body["firings"].as_array().unwrap();
    assert_eq!(firings.len(), 1, "{}", preview.body["firings"]);
    let hour = now.div_euclid(3_600_000) * 3_600_000 - 30 * 3_600_000;
    assert_eq!(firings[0]["from"], format!("{}.000Z", time(hour + 3_600_000)));
    assert_eq!(firings[0]["until"], format!("{}.000Z", time(hour + 2 * 3_600_000)));
    assert_eq!(preview.body["points"].as_array().unwrap().len(), 7 * 24 + 1);
    // Nothing was stored.
    assert_eq!(call(&app, Method::GET, "/alerts/rules", "alice", None).await.body["total"], 0);
}

#[tokio::test]
async fn rules_channels_and_silences_are_managed_with_audit_records_and_paged() {
    let app = TestApp::new().await;
    let hook = HttpReceiver::start().await;
    let (webhook, mail, _) = channels(&app, &hook).await;
    for i in 0..3 {
        let mut r = ratio_rule(&[&mail]);
        r["name"] = json!(format!("rule {i}"));
        assert_eq!(call(&app, Method::POST, "/alerts/rules", "alice", Some(r)).await.status, StatusCode::CREATED);
    }
    let page = call(&app, Method::GET, "/alerts/rules?count=2&page=2", "alice", None).await;
    assert_eq!((page.body["total"].as_u64(), page.body["page_count"].as_u64()), (Some(3), Some(2)));
    assert_eq!(page.body["items"][0]["name"], "rule 2");
    assert_eq!(page.body["prev_uri"], "/acme/v1/alerts/rules?page=1&count=2");
    let id = page.body["items"][0]["id"].as_str().unwrap().to_string();
    let mut changed = ratio_rule(&[&webhook]);
    changed["name"] = json!("renamed");
    changed["enabled"] = json!(false);
    let put = call(&app, Method::PUT, &format!("/alerts/rules/{id}"), "alice", Some(changed)).await;
    assert_eq!(
        (put.status, put.body["name"].as_str(), put.body["enabled"].as_bool()),
        (StatusCode::OK, Some("renamed"), Some(false))
    );
    // A channel that rules notify is not deleted.
    let busy = call(&app, Method::DELETE, &format!("/alerts/channels/{mail}"), "alice", None).await;
    assert_error(&busy, StatusCode::CONFLICT, "channel_in_use");
    assert_eq!(
        call(&app, Method::DELETE, &format!("/alerts/rules/{id}"), "alice", None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        call(&app, Method::GET, &format!("/alerts/rules/{id}"), "alice", None).await.status,
        StatusCode::NOT_FOUND
    );
    let summary = call(&app, Method::GET, "/alerts/summary", "alice", None).await;
    assert_eq!(summary.body, json!({"firing": 0, "pending": 0, "rules": 2}));
    // A daily maintenance window.
    let silence = call(
        &app,
        Method::POST,
        "/alerts/silences",
        "alice",
        Some(json!({
        "comment": "nightly backup", "labels": {"team": "edge"}, "starts": iso(T0 + 120 * MIN),
        "ends": iso(T0 + 150 * MIN), "repeat": "daily"})),
    )
    .await;
    assert_eq!(silence.status, StatusCode::CREATED, "{}", silence.body);
    assert_eq!((silence.body["active"].as_bool(), silence.body["expired"].as_bool()), (Some(false), Some(false)));
    let audit = call(&app, Method::GET, "/audit?operation=alert&count=100", "alice", None).await;
    let mut ops: Vec<&str> =
        audit.body["items"].as_array().unwrap().iter().map(|r| r["operation"].as_str().unwrap()).collect();
    ops.sort();
    ops.dedup();
    assert_eq!(
        ops,
        ["alert.channel.create", "alert.rule.create", "alert.rule.delete", "alert.rule.update", "alert.silence.create"]
    );
}

#[tokio::test]
async fn viewers_read_alerts_and_may_not_change_them() {
    let app = TestApp::new().await;
    app.add_user("acme", "vera", "viewer").await;
    assert_eq!(call(&app, Method::GET, "/alerts/rules", "vera", None).await.status, StatusCode::OK);
    assert_eq!(call(&app, Method::GET, "/alerts/events", "vera", None).await.status, StatusCode::OK);
    let writes: [(Method, &str, Value); 4] = [
        (Method::POST, "/alerts/rules", ratio_rule(&[])),
        (Method::POST, "/alerts/channels", json!({"name": "x", "type": "email", "addresses": ["a@example.com"]})),
        (Method::POST, "/alerts/silences", json!({"labels": {"a": "b"}, "starts": iso(T0), "ends": iso(T0 + MIN)})),
        (Method::DELETE, "/alerts/rules/abc", json!({})),
    ];
    for (method, path, body) in writes {
        let reply = call(&app, method, path, "vera", Some(body)).await;
        assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
    }
    app.add_user("acme", "oscar", "operator").await;
    assert_eq!(
        call(&app, Method::POST, "/alerts/rules", "oscar", Some(ratio_rule(&[]))).await.status,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn another_customers_rules_channels_and_silences_do_not_exist_here() {
    let app = TestApp::new().await;
    let hook = HttpReceiver::start().await;
    let (webhook, _, _) = channels(&app, &hook).await;
    let rule = call(&app, Method::POST, "/alerts/rules", "alice", Some(ratio_rule(&[&webhook]))).await;
    let rule_id = rule.body["id"].as_str().unwrap();
    let silence = call(
        &app,
        Method::POST,
        "/alerts/silences",
        "alice",
        Some(json!({"rule_id": rule_id, "starts": iso(T0), "ends": iso(T0 + MIN)})),
    )
    .await;
    let silence_id = silence.body["id"].as_str().unwrap();
    for path in [
        format!("/alerts/rules/{rule_id}"),
        format!("/alerts/channels/{webhook}"),
        format!("/alerts/channels/{webhook}/deliveries"),
        format!("/alerts/silences/{silence_id}"),
    ] {
        assert_error(&call(&app, Method::GET, &path, "gina", None).await, StatusCode::NOT_FOUND, "not_found");
        if !path.ends_with("/deliveries") {
            assert_error(&call(&app, Method::DELETE, &path, "gina", None).await, StatusCode::NOT_FOUND, "not_found");
        }
    }
    assert_error(
        &call(&app, Method::POST, &format!("/alerts/channels/{webhook}/test"), "gina", None).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    // Nor can globex notify acme's channel or silence acme's rule.
    let theirs = call(&app, Method::POST, "/alerts/rules", "gina", Some(ratio_rule(&[&webhook]))).await;
    assert_error(&theirs, StatusCode::BAD_REQUEST, "invalid_alert_rule");
    let theirs = call(
        &app,
        Method::POST,
        "/alerts/silences",
        "gina",
        Some(json!({"rule_id": rule_id, "starts": iso(T0), "ends": iso(T0 + MIN)})),
    )
    .await;
    assert_error(&theirs, StatusCode::BAD_REQUEST, "invalid_silence");
    assert_eq!(call(&app, Method::GET, "/alerts/rules", "gina", None).await.body["total"], 0);
    assert_eq!(call(&app, Method::GET, "/alerts/events", "gina", None).await.body["total"], 0);
}

#[tokio::test]
async fn invalid_and_hostile_definitions_are_refused_with_every_problem_and_change_nothing() {
    let app = TestApp::new().await;
    let long = "x".repeat(10_000);
    let mut labels = serde_json::Map::new();
    for i in 0..21 {
        labels.insert(format!("l{i}"), json!("v"));
    }
    let cases: Vec<(Value, &str)> = vec![
        (json!({"name": long, "severity": "info", "condition": {"type": "audit", "operations": ["*"]}}), "name"),
        (
            json!({"name": "x", "severity": "info", "labels": labels, "condition": {"type": "audit", "operations": ["*"]}}),
            "labels",
        ),
        (
            json!({"name": "x", "severity": "info", "condition": {"type": "audit", "operations": ["no.such"]}}),
            "condition.operations",
        ),
        (
            json!({"name": "x", "severity": "info", "condition": {"type": "threshold", "operator": ">", "value": 1,
            "watch": {"path": "/stats", "metric": "hits", "window_minutes": 3}}}),
            "window_minutes",
        ),
        (
            json!({"name": "x", "severity": "info", "condition": {"type": "threshold", "operator": ">", "value": 1,
            "watch": {"path": "/etc/passwd", "metric": "hits", "window_minutes": 5}}}),
            "path",
        ),
        (
            json!({"name": "x", "severity": "info", "condition": {"type": "threshold", "operator": ">", "value": 1,
            "watch": {"path": "/stats", "metric": "hits", "window_minutes": 5, "dimensions": ["device_os", "scheme"]}}}),
            "grouping set",
        ),
        (
            json!({"name": "x", "severity": "info", "condition": {"type": "threshold", "operator": ">", "value": 1,
            "watch": {"path": "/stats", "metric": "hits", "window_minutes": 5, "filters": "nope==1;a==b,c==d"}}}),
            "filters",
        ),
        (
            json!({"name": "x", "severity": "info", "condition": {"type": "threshold", "operator": ">", "value": 1,
            "watch": {"path": "/stats", "metric": "hits", "window_minutes": 5, "filters": long}}}),
            "512",
        ),
        (
            json!({"name": "x", "severity": "info", "channels": ["nope"], "condition": {"type": "audit", "operations": ["*"]}}),
            "channels",
        ),
    ];
    for (body, says) in cases {
        let reply = call(&app, Method::POST, "/alerts/rules", "alice", Some(body)).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_alert_rule");
        assert!(reply.body["details"].to_string().contains(says), "{says}: {}", reply.body);
    }
    let bad = [
        json!({"name": "", "type": "email", "addresses": []}),
        json!({"name": "x", "type": "webhook", "url": "ftp://example.com"}),
        json!({"name": "x", "type": "webhook", "url": format!("https://example.com/{long}")}),
        json!({"name": "x", "type": "email", "addresses": ["not an address"]}),
    ];
    for body in bad {
        let reply = call(&app, Method::POST, "/alerts/channels", "alice", Some(body)).await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_alert_channel");
    }
    let reply = call(
        &app,
        Method::POST,
        "/alerts/silences",
        "alice",
        Some(json!({"labels": {"a": "b"}, "starts": iso(T0 + MIN), "ends": iso(T0), "repeat_until": "soon"})),
    )
    .await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_silence");
    assert_eq!(reply.body["details"].as_array().unwrap().len(), 3, "{}", reply.body);
    let audit = call(&app, Method::GET, "/audit?operation=alert", "alice", None).await;
    assert_eq!(audit.body["total"], 0, "nothing was changed, nothing recorded");
}

#[tokio::test]
async fn a_customer_has_at_most_200_rules() {
    let app = TestApp::new().await;
    for i in 0..edge_api::alerts::MAX_RULES {
        let mut r = ratio_rule(&[]);
        r["name"] = json!(format!("r{i}"));
        let reply = call(&app, Method::POST, "/alerts/rules", "alice", Some(r)).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }
    let reply = call(&app, Method::POST, "/alerts/rules", "alice", Some(ratio_rule(&[]))).await;
    assert_error(&reply, StatusCode::BAD_REQUEST, "limit_exceeded");
    // Another customer is not counted against it.
    assert_eq!(
        call(&app, Method::POST, "/alerts/rules", "gina", Some(ratio_rule(&[]))).await.status,
        StatusCode::CREATED
    );
}
