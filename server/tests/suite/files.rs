//! What the server writes to disk is its user's alone (issue 19's review, finding 8): the data dir and its
//! folders 0700, the database with its WAL files and the mail of the outbox 0600, whatever the umask.

use crate::common;

use std::{os::unix::fs::PermissionsExt, path::Path};

use axum::http::{Method, StatusCode};
use common::*;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

#[tokio::test]
async fn the_data_dir_the_database_and_mailed_reset_links_are_private() {
    let app = TestApp::new().await;
    let bob = app.add_user("acme", "bob", "viewer").await;
    let reply = app
        .send(req(Method::POST, &format!("/acme/v1/users/{bob}/password/resets")).basic("alice", PASSWORD).done())
        .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.body);
    let data = app.dir.path().join("data");
    assert_eq!(mode(&data), 0o700, "data dir");
    assert_eq!(mode(&data.join("stats")), 0o700, "stats/");
    let outbox = data.join("outbox");
    assert_eq!(mode(&outbox), 0o700, "outbox/");
    let mails: Vec<_> = std::fs::read_dir(&outbox).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(mails.len(), 1);
    assert_eq!(mode(&mails[0]), 0o600, "the mail with the reset link");
    if !app.on_postgres() {
        for file in ["edge.db", "edge.db-wal", "edge.db-shm"] {
            assert_eq!(mode(&data.join(file)), 0o600, "{file}");
        }
    }
}

#[tokio::test]
async fn a_data_dir_from_before_is_made_private_at_start() {
    let app = TestApp::new().await;
    let data = app.dir.path().join("data");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    if !app.on_postgres() {
        std::fs::set_permissions(data.join("edge.db"), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let _restarted = app.restarted().await;
    assert_eq!(mode(&data), 0o700);
    if !app.on_postgres() {
        assert_eq!(mode(&data.join("edge.db")), 0o600);
    }
}
