//! The console's login through a real load balancer: two `edge-server` replicas serving the console on one
//! throwaway PostgreSQL, HAProxy (or nginx) round-robin in front, and headless Chromium going through it.

use edge_e2e::{Harness, PASSWORD};

/// `GET /demo/v1/account` at `base` with the session cookie `cookie`: the status and the error's `type`.
async fn account(base: String, cookie: String) -> anyhow::Result<(u16, String)> {
    tokio::task::spawn_blocking(move || {
        let answer = ureq::get(&format!("{base}/demo/v1/account"))
            .set("Cookie", &cookie)
            .timeout(std::time::Duration::from_secs(30))
            .call();
        let response = match answer {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.into()),
        };
        let status = response.status();
        let body: serde_json::Value = response.into_json().unwrap_or_default();
        Ok((status, body["type"].as_str().unwrap_or_default().to_string()))
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_logs_in_through_the_balancer_and_the_session_holds_on_both_replicas() -> anyhow::Result<()> {
    let h = Harness::start_cluster(2).await?;
    let cluster = h.cluster.as_ref().expect("a cluster");
    let replicas: Vec<String> = cluster.replicas.iter().map(|r| r.url()).collect();

    h.goto("/").await?;
    h.wait_for_path("/login").await?;
    h.login("demo", "admin", PASSWORD).await?;
    h.wait_for_path("/demo/stats").await?;
    h.wait_for_text("main h1", "Statistics").await?;
    h.wait_for_text(".topbar .user", "admin").await?;

    // Round-robin sends the page, its files and its API calls to both replicas: every reload stays logged in.
    for _ in 0..4 {
        h.client.refresh().await?;
        h.wait_for_text("main h1", "Statistics").await?;
        h.wait_for_text(".topbar .user", "admin").await?;
    }

    // The browser's session, sent to each replica directly, is the same session on both.
    let token = h.client.get_named_cookie("authtoken").await?.value().to_string();
    let cookie = format!("authtoken={token}");
    for base in &replicas {
        assert_eq!(account(base.clone(), cookie.clone()).await?, (200, String::new()), "at {base}");
    }

    // A logout through the balancer ends the session on every replica.
    h.click("#logout").await?;
    h.wait_for_path("/login").await?;
    for base in &replicas {
        let answer = account(base.clone(), cookie.clone()).await?;
        assert_eq!(answer, (401, "session_invalid".to_string()), "at {base}");
    }

    h.stop().await
}
