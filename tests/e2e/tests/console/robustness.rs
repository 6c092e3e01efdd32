//! Issue 25's flows through the real console: a property field that does not fit stays as typed, says why and
//! holds Save, and survives editing another field; the review of changes reads at a phone's width; a top
//! client IP's panel opens in view with the focus; a panic shows the Reload screen and reaches the server.

use anyhow::{Result, ensure};
use edge_e2e::{Harness, PASSWORD};
use serde_json::json;

const API_GATEWAY: &str = "/demo/properties?name=api-gateway";
const ORIGIN: &str = "div[data-section=Origins] tbody tr:nth-child(1)";
const TTL: &str = "div[data-section='Cache rules'] tbody tr:nth-child(1) input[aria-label='TTL seconds']";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_that_does_not_fit_stays_as_typed_and_holds_save() -> Result<()> {
    let h = Harness::start().await?;
    h.login_as("admin", PASSWORD).await?;
    h.goto(API_GATEWAY).await?;
    let port = format!("{ORIGIN} input[aria-label=Port]");
    ensure!(h.value(&port).await? == "8443", "the demo's port");
    h.fill(&port, "99999").await?;
    let why = h.wait_until(&format!("{ORIGIN} .field-error"), |t| !t.is_empty()).await?;
    ensure!(why.contains("99999 is over 65535") && why.contains("1 to 65535"), "the reason beside the field: {why}");
    h.wait_until("#invalid-fields", |t| t.contains("Origins › api-cluster › Port")).await?;
    ensure!(h.wait_for("#save-config").await?.prop("disabled").await?.as_deref() == Some("true"), "Save is held");
    // Editing the name does not bring a port back (it did: 99999 became 9999, and Save would store it).
    // Once the list of invalid fields names the new name, the edit has gone through the draft (which is what
    // rewrote the port): the port must still be as typed.
    h.fill(&format!("{ORIGIN} input[aria-label=Name]"), "api-cluster-x").await?;
    h.wait_until("#invalid-fields", |t| t.contains("Origins › api-cluster-x › Port")).await?;
    ensure!(h.value(&port).await? == "99999", "the port stays as typed: {}", h.value(&port).await?);
    h.snapshots("property-invalid-field").await?;
    // A TTL of -5 or abc stays too, and says why.
    for (typed, reason) in [("-5", "-5 is below 0"), ("abc", "\"abc\" is not a whole number")] {
        h.fill(TTL, typed).await?;
        h.wait_until("div[data-section='Cache rules'] tbody tr:nth-child(1) .field-error", |t| t.starts_with(reason))
            .await?;
        ensure!(h.value(TTL).await? == typed, "{typed} stays");
    }
    // Corrected, Save is free, and the review names the changes as a person would, readable at 400 px.
    h.fill(TTL, "120").await?;
    h.fill(&port, "9443").await?;
    h.wait_gone("#invalid-fields").await?;
    h.cdp(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 400, "height": 860, "deviceScaleFactor": 1, "mobile": true }),
    )
    .await?;
    h.click("#save-config").await?;
    let review = h.wait_until("dialog#review .diff", |t| t.contains("9443")).await?;
    for expected in ["Origins › api-cluster-x › Port", "8443", "9443", "Origins › api-cluster-x › Name", "TTL (s)"]
    {
        ensure!(review.contains(expected), "{expected:?} in the review: {review}");
    }
    // Nothing is cut off: the dialog does not scroll sideways, and every change fits inside it.
    let overflow: serde_json::Value = h
        .client
        .execute(
            "const d = document.querySelector('dialog#review');
             const wide = [...d.querySelectorAll('.change')].filter(c => c.scrollWidth > c.clientWidth + 1).length;
             return [d.scrollWidth - d.clientWidth, wide, d.getBoundingClientRect().right <= window.innerWidth];",
            vec![],
        )
        .await?;
    ensure!(overflow == json!([0, 0, true]), "the review fits 400 px: {overflow}");
    h.snapshot("review-phone").await?;
    h.cdp("Emulation.clearDeviceMetricsOverride", json!({})).await?;
    h.snapshots("review").await?;
    h.click("#confirm-save").await?;
    h.wait_until("#save-notice", |t| t.starts_with("Saved as version")).await?;
    h.cdp("Emulation.clearDeviceMetricsOverride", json!({})).await?;
    let (status, body) = h.api("admin", "GET", "/demo/v1/properties/api-gateway/config", None).await?;
    ensure!(status == 200 && body["config"]["origins"][0]["port"] == 9443, "saved as corrected: {body}");
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_top_client_ips_panel_opens_in_view_with_the_focus() -> Result<()> {
    let h = Harness::start().await?;
    h.login_as("admin", PASSWORD).await?;
    // The chart of the last 24 hours, its bucket still filling marked partial.
    h.goto("/demo/stats").await?;
    h.wait_for("#time-chart svg text").await?;
    ensure!(h.count("#time-chart svg rect.partial").await? == 1, "the partial bucket is marked");
    h.snapshots("statistics-partial").await?;
    h.client.set_window_size(1366, 700).await?;
    h.goto("/demo/security?ts=clientip").await?;
    let bar = "#ts-top li button";
    h.wait_for(bar).await?;
    h.click(bar).await?;
    h.wait_for("#ts-top ~ .picked, .picked").await?;
    // Focused, and wholly in view.
    let state: serde_json::Value = h
        .client
        .execute(
            "const p = document.querySelector('.picked'); const r = p.getBoundingClientRect();
             return [document.activeElement === p, r.top >= 0 && r.bottom <= window.innerHeight];",
            vec![],
        )
        .await?;
    ensure!(state == json!([true, true]), "the panel has the focus and is in view: {state}");
    h.snapshots("security-panel").await?;
    // Escape closes it and gives the focus back to the bar.
    h.keys(edge_e2e::ESCAPE).await?;
    h.wait_gone(".picked").await?;
    let back: bool = serde_json::from_value(
        h.client.execute("return document.activeElement.matches('#ts-top li button');", vec![]).await?,
    )?;
    ensure!(back, "the focus is back on the bar");
    h.client.set_window_size(1366, 900).await?;
    h.stop().await
}
