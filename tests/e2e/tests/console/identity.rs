//! Users and two-factor through the real console: an administrator creates a user, who pairs two-factor by
//! reading the seed from the page, logs out, logs in again with a one-time code, and changes the password with
//! a code too.

use edge_e2e::{Harness, PASSWORD};
use edge_server::otp::{code_at, step_of};
use fantoccini::Locator;

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_creates_a_user_who_pairs_two_factor_and_logs_in_with_a_code() -> anyhow::Result<()> {
    let h = Harness::start().await?;
    const ERIN_PASSWORD: &str = "erins-own-password";

    // The administrator creates erin.
    h.login_as("admin", PASSWORD).await?;
    h.click("nav a[href='/demo/users']").await?;
    h.wait_for("tr[data-username=admin]").await?;
    h.snapshot("users").await?;
    h.click("#new-user").await?;
    h.fill("dialog[open] input[name=username]", "erin").await?;
    h.fill("dialog[open] input[name=full_name]", "Erin Example").await?;
    h.fill("dialog[open] input[name=email]", "not-an-email").await?;
    h.fill("dialog[open] input[name=password]", ERIN_PASSWORD).await?;
    h.client.find(Locator::Css("dialog[open] select[name=role]")).await?.select_by_value("operator").await?;
    h.click("dialog[open] button[type=submit]").await?;
    // The API's message shows next to the field, and nothing is created.
    h.wait_for_text("dialog[open] .field-error", "\"not-an-email\" is not an e-mail address.").await?;
    h.snapshot("user-form-error").await?;
    h.fill("dialog[open] input[name=email]", "erin@example.com").await?;
    h.click("dialog[open] button[type=submit]").await?;
    h.wait_for_text("[role=status]", "erin was created.").await?;
    let row = h.wait_for("tr[data-username=erin]").await?.text().await?;
    assert!(row.contains("Erin Example") && row.contains("operator"), "{row}");
    h.click("#logout").await?;
    h.wait_for_path("/login").await?;

    // erin turns on two-factor, reading the key from the page.
    h.login_as("erin", ERIN_PASSWORD).await?;
    h.click("nav a[href='/demo/me']").await?;
    h.fill("input[name=otp-password]", ERIN_PASSWORD).await?;
    h.click("#two-factor button[type=submit]").await?;
    let secret = h.wait_for("#otp-secret").await?.attr("data-secret").await?.expect("the key");
    h.wait_for(".qr svg").await?;
    h.snapshot("two-factor-pairing").await?;
    let step = step_of(now_ms());
    h.fill("input[name=first]", &code_at(&secret, step - 1).expect("code")).await?;
    h.fill("input[name=second]", &code_at(&secret, step).expect("code")).await?;
    h.click("#two-factor form button[type=submit]").await?;
    h.wait_for_text(
        "#two-factor [role=status]",
        "Two-factor authentication is on. From now on, logging in asks for a code from your app.",
    )
    .await?;
    h.click("#logout").await?;
    h.wait_for_path("/login").await?;

    // Logging in again asks for a code — a prompt, not an error — with the focus in the code field, so the
    // code typed goes there (it was appended to the password), and takes the next one.
    h.login("demo", "erin", ERIN_PASSWORD).await?;
    h.wait_for_text("#otp-prompt.notice.info", "Enter the six-digit code from your authenticator app.").await?;
    assert_eq!(h.count("form.login .notice.error").await?, 0, "asking for the code is no error");
    h.wait_for("input[name=otp]:focus").await?;
    h.snapshot("login-otp").await?;
    h.snapshots("login-otp").await?;
    let login_step = step_of(now_ms()) + 1;
    h.keys(&code_at(&secret, login_step).expect("code")).await?;
    assert_eq!(h.value("input[name=password]").await?, ERIN_PASSWORD, "the password is as typed");
    h.keys(edge_e2e::ENTER).await?;
    h.wait_for_path("/demo/stats").await?;
    h.wait_for_text(".topbar .user", "erin").await?;

    // With two-factor on, changing the password asks for a code too, a later step's than the login's: the
    // server's clock moves on a step (30 s), so that the next step's code is current for it.
    h.click("nav a[href='/demo/me']").await?;
    h.fill("#change-password input[name=current]", ERIN_PASSWORD).await?;
    h.fill("#change-password input[name=new]", "erins-newer-password").await?;
    h.fill("#change-password input[name=again]", "erins-newer-password").await?;
    h.advance(30_000);
    h.fill("#change-password input[name=otp]", &code_at(&secret, login_step + 1).expect("code")).await?;
    h.click("#change-password button[type=submit]").await?;
    h.wait_for_text("#change-password [role=status]", "Your password is changed.").await?;
    h.click("#logout").await?;
    h.wait_for_path("/login").await?;

    // erin lost her phone: the administrator turns her two-factor off, and the password alone lets her in.
    h.login_as("admin", PASSWORD).await?;
    h.goto("/demo/users").await?;
    h.click_text("tr[data-username=erin] button", "Turn off two-factor").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_for_text("[role=status].notice", "Two-factor authentication of erin is off.").await?;
    h.wait_until("tr[data-username=erin]", |t| t.contains("Off")).await?;
    h.click("#logout").await?;
    h.wait_for_path("/login").await?;
    h.login("demo", "erin", "erins-newer-password").await?;
    h.wait_for_path("/demo/stats").await?;
    h.stop().await
}
