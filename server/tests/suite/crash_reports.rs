//! `POST /_console/errors`: the console's crash reports reach the log without a session, and the endpoint
//! cannot be used to flood it: bounded body, bounded rate per address and overall, one log line per report.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::http::{Method, StatusCode, header};
use common::*;
use edge_server::crash_reports::{MAX_BODY_BYTES, OVERALL, PATH, PER_ADDRESS};

/// What the log received while `f` ran (on this thread: the test runtime has one).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt().with_ansi(false).with_writer(move || writer.clone()).finish();
    let guard = tracing::subscriber::set_default(subscriber);
    (out, guard)
}

fn report(peer: &str, body: &str) -> axum::http::Request<axum::body::Body> {
    req(Method::POST, PATH).peer(peer).raw("text/plain;charset=UTF-8", body.to_string()).done()
}

#[tokio::test]
async fn a_crash_report_is_logged_without_a_session_on_one_line() {
    let app = TestApp::new().await;
    let (log, _guard) = capture();
    let body = r#"{"message":"panicked at traits.rs:394\nforged line","path":"/acme/stats","version":"0.1.0"}"#;
    let reply = app.send(report("192.0.2.7", body)).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", String::from_utf8_lossy(&reply.raw));
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("the console crashed")).collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].contains("panicked at traits.rs:394\\nforged line"), "newlines escaped: {}", lines[0]);
    assert!(lines[0].contains("path=/acme/stats") && lines[0].contains("client=192.0.2.7"), "{}", lines[0]);
}

#[tokio::test]
async fn a_report_over_4_kib_is_refused_with_413_and_not_logged() {
    let app = TestApp::new().await;
    let (log, _guard) = capture();
    let reply = app.send(report("192.0.2.7", &"x".repeat(MAX_BODY_BYTES + 1))).await;
    assert_error(&reply, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert!(!String::from_utf8_lossy(&log.0.lock().unwrap()).contains("the console crashed"));
}

#[tokio::test]
async fn reports_are_limited_per_address_and_overall_each_minute() {
    let app = TestApp::new().await;
    for _ in 0..PER_ADDRESS {
        assert_eq!(app.send(report("192.0.2.7", "boom")).await.status, StatusCode::NO_CONTENT);
    }
    let reply = app.send(report("192.0.2.7", "boom")).await;
    assert_error(&reply, StatusCode::TOO_MANY_REQUESTS, "too_many_requests");
    let retry: u64 = reply.headers[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    // Another address still gets through, until the overall limit.
    let mut taken = PER_ADDRESS;
    for i in 0..=255u8 {
        if app.send(report(&format!("198.51.100.{i}"), "boom")).await.status == StatusCode::NO_CONTENT {
            taken += 1;
        }
    }
    assert_eq!(taken, OVERALL);
    // A minute later the counts start again.
    app.advance(60_000);
    assert_eq!(app.send(report("192.0.2.7", "boom")).await.status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn the_endpoint_takes_reports_only() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::GET, PATH).done()).await;
    assert_error(&reply, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
}
