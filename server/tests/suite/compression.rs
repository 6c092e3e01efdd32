//! API answers are compressed as the client accepts (brotli, zstd, gzip) — issue 25: the statistics view
//! fetched about 180 KiB of JSON uncompressed — while the console's files, compressed at build time, are
//! served as built and never compressed a second time.

use crate::common;

use std::io::Read;

use axum::http::{Method, StatusCode, header};
use common::*;

/// A statistics query (a day of 5-minute buckets by country).
const STATS: &str = "/acme/v1/stats/data?starttime=2025-12-31T00:00:00&endtime=2026-01-01T00:00:00&granularity=5minute&dimensions=country&metrics=hits";

fn decode(encoding: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match encoding {
        "br" => brotli::Decompressor::new(body, 4096).read_to_end(&mut out).map(drop),
        "gzip" => flate2::read::GzDecoder::new(body).read_to_end(&mut out).map(drop),
        "zstd" => zstd::stream::read::Decoder::new(body).and_then(|mut d| d.read_to_end(&mut out)).map(drop),
        other => panic!("unexpected encoding {other}"),
    }
    .expect("decodes");
    out
}

#[tokio::test]
async fn api_answers_come_compressed_as_the_client_accepts() {
    let app = TestApp::new().await;
    let plain = app.send(req(Method::GET, STATS).basic("alice", PASSWORD).done()).await;
    assert_eq!(plain.status, StatusCode::OK, "{}", plain.body);
    assert!(plain.headers.get(header::CONTENT_ENCODING).is_none(), "no Accept-Encoding, no compression");
    // What Chromium sends over HTTPS, all at the same weight: the server takes zstd, the quickest to decode.
    for (accept, expected) in [("br", "br"), ("gzip", "gzip"), ("zstd", "zstd"), ("gzip, deflate, br, zstd", "zstd")] {
        let reply =
            app.send(req(Method::GET, STATS).basic("alice", PASSWORD).header("Accept-Encoding", accept).done()).await;
        assert_eq!(reply.status, StatusCode::OK);
        let encoding = reply.headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or("");
        assert_eq!(encoding, expected, "Accept-Encoding: {accept}");
        assert!(
            reply
                .headers
                .get(header::VARY)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("accept-encoding")),
            "Vary names Accept-Encoding: {:?}",
            reply.headers
        );
        assert_eq!(decode(expected, &reply.raw), plain.raw, "the same answer, decoded");
    }
    // Error answers too, and their JSON body is intact.
    let reply = app
        .send(
            req(Method::GET, "/acme/v1/stats/data?granularity=nope")
                .basic("alice", PASSWORD)
                .header("Accept-Encoding", "gzip")
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let body: serde_json::Value = serde_json::from_slice(&if reply.headers.contains_key(header::CONTENT_ENCODING) {
        decode("gzip", &reply.raw)
    } else {
        reply.raw.clone()
    })
    .expect("JSON");
    assert_eq!(body["type"], "invalid_parameter");
}

#[tokio::test]
async fn the_consoles_files_are_served_as_built_never_compressed_twice() {
    let app = TestApp::new().await;
    let dist = app.dir.path().join("dist");
    let js = "console.log('the console');".repeat(100);
    std::fs::write(dist.join("app-5678.js"), &js).unwrap();
    // The build's brotli copy (here any bytes: what matters is that they go out as they are).
    let precompressed = b"\x1b\x0bbuilt-with-brotli".to_vec();
    std::fs::write(dist.join("app-5678.js.br"), &precompressed).unwrap();
    let reply = app.send(req(Method::GET, "/app-5678.js").header("Accept-Encoding", "br").done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok()), Some("br"));
    assert_eq!(reply.raw, precompressed, "the build's copy, byte for byte");
    // Without a copy for the encoding asked for, the file goes as it is: no compression on the fly.
    let reply = app.send(req(Method::GET, "/app-5678.js").header("Accept-Encoding", "zstd").done()).await;
    assert!(reply.headers.get(header::CONTENT_ENCODING).is_none());
    assert_eq!(reply.raw, js.as_bytes());
}
