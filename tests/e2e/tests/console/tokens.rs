//! API tokens through the real console, cold, at phone width with the CPU slowed 4×: an administrator makes a
//! purge-only token in My account, copies its secret (which then works, and only for purges), rolls it, sees
//! it under Users & roles and revokes it there. Fails on any console error.

use edge_e2e::Harness;

/// In screenshot mode, the view at 1366 and 400 px, light and dark; then back to the phone's width the test runs at.
async fn look(h: &Harness, name: &str) -> anyhow::Result<()> {
    h.snapshots(name).await?;
    h.emulate_width(Some(400)).await
}

/// `GET path` with `Authorization: Bearer token`: the status.
async fn with_token(h: &Harness, token: &str, path: &str) -> anyhow::Result<u16> {
    let url = h.url(path);
    let token = token.to_string();
    Ok(tokio::task::spawn_blocking(move || {
        match ureq::get(&url).set("Authorization", &format!("Bearer {token}")).call() {
            Ok(r) => r.status(),
            Err(ureq::Error::Status(code, _)) => code,
            Err(_) => 0,
        }
    })
    .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_made_copied_once_rolled_and_revoked_from_the_console() -> anyhow::Result<()> {
    let h = Harness::start().await?;
    // Cold: the session is given without a page load, so the first load of My account fetches everything.
    let session = h.session_for("admin").await?;
    h.use_session(&session).await?;
    h.emulate_width(Some(400)).await?;
    h.throttle_cpu(4).await?;
    h.goto("/demo/me").await?;
    h.wait_for("#api-tokens .empty").await?;
    look(&h, "tokens-empty").await?;

    h.click("#new-token").await?;
    h.click("#api-tokens button[type=submit]").await?;
    h.wait_for_text("#api-tokens .notice.error", "Give the token a name: what uses it.").await?;
    h.fill("input[name=token-name]", "deploy purge").await?;
    h.click("input[name=token-scope][value=purge]").await?;
    look(&h, "tokens-new").await?;
    h.click("#api-tokens button[type=submit]").await?;
    let secret = h.wait_for("#token-secret").await?.text().await?;
    assert!(edge_api::tokens::is_well_formed(&secret), "{secret:?}");
    h.wait_for("tr[data-token]").await?;
    look(&h, "tokens-secret").await?;
    let row = h.wait_for("tr[data-token]").await?.text().await?;
    assert!(row.contains("deploy purge") && row.contains("purge") && row.contains(&secret[..9]), "{row}");
    assert!(!row.contains(&secret), "the list never shows the secret: {row}");
    // The secret works for what its scope covers, and for nothing else.
    assert_eq!(with_token(&h, &secret, "/demo/v1/transactions").await?, 200);
    assert_eq!(with_token(&h, &secret, "/demo/v1/config/networklists").await?, 403);
    h.click_text("#api-tokens .secret-once button", "Done").await?;
    h.wait_gone("#token-secret").await?;

    // Rolled: a new secret once more, the old one ends at once; the last use shows.
    h.goto("/demo/me").await?;
    h.wait_until("tr[data-token]", |t| t.contains("127.0.0.1")).await?;
    h.click_text("tr[data-token] button", "Roll").await?;
    h.click_text("dialog[open] div.actions button.danger", "Roll").await?;
    let rolled = h.wait_for("#token-secret").await?.text().await?;
    assert_ne!(rolled, secret);
    // (Purge paths answer a failed authentication 400 with their own code 403, as the API states: another path.)
    assert_eq!(with_token(&h, &secret, "/demo/v1/account").await?, 401);
    assert_eq!(with_token(&h, &rolled, "/demo/v1/transactions").await?, 200);

    // An administrator sees it under Users & roles and revokes it there.
    h.goto("/demo/users").await?;
    h.click_text("tr[data-username=admin] button", "API tokens").await?;
    h.wait_for("dialog[open] tr[data-token]").await?;
    look(&h, "tokens-of-a-user").await?;
    h.click_text("dialog[open] tr[data-token] button", "Revoke").await?;
    h.click_text("dialog[open] div.actions button.danger", "Revoke").await?;
    h.wait_for("dialog[open] #user-tokens .empty").await?;
    assert_eq!(with_token(&h, &rolled, "/demo/v1/account").await?, 401);
    h.no_page_errors("tokens").await?;
    h.stop().await
}
