//! Logging in and out of the real console served by the real server, in headless Chromium.

use edge_e2e::{Harness, PASSWORD};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_logs_in_sees_the_layout_survives_a_reload_and_logs_out() -> anyhow::Result<()> {
    let h = Harness::start().await?;

    // A fresh browser at / lands on the login page.
    h.goto("/").await?;
    h.wait_for_path("/login").await?;
    h.wait_for("input[name=customer]").await?;
    h.snapshot("login").await?;

    h.login("demo", "admin", PASSWORD).await?;
    h.wait_for_path("/demo/stats").await?;
    h.wait_for_text(".topbar .user", "admin").await?;
    h.wait_for_text(".topbar .customer", "demo").await?;
    h.wait_for_text("main h1", "Statistics").await?;
    let nav = h.wait_for("nav[aria-label=Main]").await?.text().await?;
    for label in [
        "Statistics",
        "Security",
        "Users & roles",
        "My account",
        "Properties",
        "Purge",
        "Network lists",
        "Tasks",
        "Account",
    ] {
        assert!(nav.contains(label), "navigation lists {label}: {nav}");
    }
    h.snapshot("layout").await?;

    // Navigation moves between views without a page load.
    h.click("nav a[href='/demo/users']").await?;
    h.wait_for_path("/demo/users").await?;
    h.wait_for_text("main h1", "Users & roles").await?;

    // A reload keeps the session (the cookie) and the view.
    h.client.refresh().await?;
    h.wait_for_text("main h1", "Users & roles").await?;
    h.wait_for_text(".topbar .user", "admin").await?;

    // Logout ends the session: the console is back at the login page and the views need a login again.
    h.click("#logout").await?;
    h.wait_for_path("/login").await?;
    h.goto("/demo/stats").await?;
    h.wait_for_path("/login").await?;
    let customer = h.wait_for("input[name=customer]").await?.prop("value").await?;
    assert_eq!(customer.as_deref(), Some("demo"), "the customer is prefilled");

    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_shows_the_api_message_and_stays_on_the_login_page() -> anyhow::Result<()> {
    let h = Harness::start().await?;
    h.login("demo", "admin", "not-the-password").await?;
    h.wait_for_text("[role=alert]", "The username or password is wrong.").await?;
    h.snapshot("login-error").await?;
    h.wait_for_path("/login").await?;
    h.stop().await
}
