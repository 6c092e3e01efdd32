//! The API contract under review: `/openapi.json` as the router serves it is kept as an insta snapshot
//! (`snapshots/suite__openapi__openapi.json.snap`), so every change of a path, parameter, schema or answer shows as a
//! diff of that file in the commit that makes it. A change that is meant is accepted with
//! `INSTA_UPDATE=always cargo test -p edge-server --test suite openapi::` (or `cargo insta review`).

use crate::common;

use axum::http::{Method, StatusCode};
use common::*;

#[tokio::test]
async fn the_openapi_document_is_the_reviewed_contract() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::GET, "/openapi.json").done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    // Built twice, the same document: nothing in it depends on the order of a hash map.
    let again = app.send(req(Method::GET, "/openapi.json").done()).await;
    assert_eq!(reply.raw, again.raw);
    insta::assert_json_snapshot!("openapi.json", reply.body);
}
