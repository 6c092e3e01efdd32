//! Alerting end to end, through the real console in headless Chromium on the real server, with a real webhook
//! receiver and a real SMTP server: the administrator makes a webhook channel (its secret shown once) and a rule
//! on the 5xx ratio of a domain in the rule editor, previews it, and saves it; traffic with 10 % errors is
//! ingested and the rule fires (the server evaluates every second here): the receiver gets one notification,
//! signed with the secret, the SMTP server one message, and the console shows the rule firing (and the count
//! in the navigation); a silence made in the console suppresses the next notification (recorded in the
//! channel's log as silenced); after it ends and traffic recovers, the rule resolves and says so; the
//! timeline's markers for the range are the rule's transitions, shown on the statistics and security charts and
//! opening the rule's history. Every tab passes axe-core and fits 400 px with the
//! CPU slowed 4×, and the console logs no error.

#[path = "../../../../server/tests/suite/receivers.rs"]
mod receivers;

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use edge_e2e::{Harness, PASSWORD};
use hmac::{Hmac, Mac};
use receivers::{HttpReceiver, SmtpSink};
use serde_json::{Value, json};
use sha2::Sha256;

const MIN: i64 = 60_000;

fn verify(secret: &str, body: &[u8], signature: &str) -> bool {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("any key");
    mac.update(body);
    signature == format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

fn now_ms(shift: i64) -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
        + shift
}

/// Traffic of domain alerts.example in the 5-minute bucket before the server's now: `ok` hits of 200, `errors`
/// of 503.
async fn traffic(h: &Harness, shift: i64, ok: u64, errors: u64) -> Result<()> {
    let bucket = now_ms(shift).div_euclid(5 * MIN) * 5 * MIN - 5 * MIN;
    let line = |at: i64, status: u16, hits: u64| {
        let ts = edge_server::clock::iso_ms(at);
        json!({"timestamp": &ts[..19], "domain": "alerts.example", "property": "shop", "scheme": 2,
               "http_status_code": status, "request_url": "/x", "hits": hits})
    };
    let mut lines = vec![line(bucket + MIN, 200, ok)];
    if errors > 0 {
        lines.push(line(bucket + 2 * MIN, 503, errors));
    }
    let body = lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    let addr = h.addr().context("the server")?;
    let status = tokio::task::spawn_blocking(move || {
        use base64::Engine;
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"));
        ureq::post(&format!("http://{addr}/demo/v1/ingest/accesslogs"))
            .set("Authorization", &format!("Basic {auth}"))
            .set("Content-Type", "application/x-ndjson")
            .send_string(&body)
            .map(|r| r.status())
            .unwrap_or(0)
    })
    .await?;
    ensure!(status == 200, "ingesting: {status}");
    Ok(())
}

async fn until<T>(what: &str, secs: u64, mut f: impl AsyncFnMut() -> Option<T>) -> Result<T> {
    for _ in 0..secs * 4 {
        if let Some(t) = f().await {
            return Ok(t);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    bail!("waited {secs} s for {what}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_ratio_rule_fires_notifies_once_signed_is_silenced_and_resolves() -> Result<()> {
    let sink = SmtpSink::start().await;
    let hook = HttpReceiver::start().await;
    let smtp = sink.url.clone();
    let h = Harness::start_with(move |s| {
        s.smtp_url = Some(smtp);
        s.alert_webhooks_to_private = true;
        s.alert_interval = Duration::from_secs(1);
    })
    .await?;
    h.login_as("admin", PASSWORD).await?;

    // A webhook channel, made in the console: its secret is shown once.
    h.open("/demo/alerts?tab=channels", ".page.alerts .empty").await?;
    h.click_text("button", "New channel").await?;
    h.fill("dialog input[name=name]", "Ops webhook").await?;
    h.select("dialog select[name=type]", "webhook").await?;
    h.fill("dialog input[name=url]", &hook.url).await?;
    h.click_text("dialog button", "Save channel").await?;
    let secret = h.wait_until(".card.secret code", |t| t.starts_with("whsec_")).await?;
    h.snapshot("alerts-channel-secret").await?;
    h.click_text(".card.secret button", "Done").await?;
    h.wait_gone(".card.secret").await?;
    // An e-mail channel, through the API.
    let (status, mail) = h
        .api(
            "admin",
            "POST",
            "/demo/v1/alerts/channels",
            Some(json!({"name": "On call", "type": "email", "addresses": ["oncall@example.com"]})),
        )
        .await?;
    ensure!(status == 201, "{mail}");

    // The rule, in the editor: 503s of alerts.example over its hits, above 2 %, with its preview.
    h.open("/demo/alerts?tab=rules", ".page.alerts .empty").await?;
    h.click_text("button", "New rule").await?;
    h.fill("dialog input[name=name]", "5xx ratio of alerts.example").await?;
    h.select("dialog select[name=severity]", "critical").await?;
    h.fill("dialog input[name=filters]", "domain==alerts.example;http_status_code==503").await?;
    h.click("dialog input[name=ratio]").await?;
    h.fill("dialog input[name=denominator_filters]", "domain==alerts.example").await?;
    h.fill("dialog input[name=value]", "0.02").await?;
    h.fill("dialog input[name=renotify_minutes]", "5").await?;
    h.fill("dialog input[name=labels]", "team=edge").await?;
    for channel in h.client.find_all(fantoccini::Locator::Css("dialog input[name=channel]")).await? {
        channel.click().await?;
    }
    h.click_text("dialog button", "Preview the last 7 days").await?;
    h.wait_for_text("dialog .preview-chart p", "It would not have fired in this time.").await?;
    h.click_text("dialog button", "Save rule").await?;
    h.wait_for_text(".page.alerts tr[data-rule] strong", "5xx ratio of alerts.example").await?;
    h.no_page_errors("the rule editor").await?;

    // 10 % errors: it fires within a few rounds; one signed notification, one message.
    traffic(&h, 0, 900, 100).await?;
    let received = until("the webhook", 30, async || Some(hook.received()).filter(|r| !r.is_empty())).await?;
    let payload: Value = serde_json::from_slice(&received[0].body)?;
    ensure!(payload["kind"] == "firing" && payload["state"] == "firing", "{payload}");
    ensure!(verify(&secret, &received[0].body, &received[0].headers["x-edge-signature"]), "the signature checks");
    until("the mail", 30, async || Some(sink.mails()).filter(|m| !m.is_empty())).await?;
    // A second notification could only come from a later round (renotifying is 5 minutes away): once the rule
    // has been evaluated twice more and each channel's log holds its one delivery, sent, none is on its way.
    let (_, rules) = h.api("admin", "GET", "/demo/v1/alerts/rules", None).await?;
    let rule = format!("/demo/v1/alerts/rules/{}", rules["items"][0]["id"].as_str().context("the rule's id")?);
    let evaluated = async || -> Result<String> {
        let (_, got) = h.api("admin", "GET", &rule, None).await?;
        Ok(got["status"]["evaluated"].as_str().unwrap_or_default().to_string())
    };
    let mut seen = evaluated().await?;
    for round in ["a round", "another round"] {
        let before = seen.clone();
        seen = until(round, 30, async || evaluated().await.ok().filter(|e| *e != before)).await?;
    }
    let (_, channels) = h.api("admin", "GET", "/demo/v1/alerts/channels", None).await?;
    for channel in channels["items"].as_array().context("the channels")? {
        let log = format!("/demo/v1/alerts/channels/{}/deliveries", channel["id"].as_str().unwrap_or_default());
        until("each channel's one delivery, sent", 30, async || {
            let (_, got) = h.api("admin", "GET", &log, None).await.ok()?;
            (got["total"] == 1 && got["items"][0]["status"] == "sent").then_some(())
        })
        .await?;
    }
    ensure!(hook.received().len() == 1, "one notification, not {}", hook.received().len());
    ensure!(sink.mails().len() == 1, "one message, not {}", sink.mails().len());
    ensure!(sink.mails()[0].data.contains("[FIRING] 5xx ratio of alerts.example (critical, demo)"));
    h.open("/demo/alerts", ".page.alerts tr[data-rule]").await?;
    h.wait_for_text(".page.alerts tr[data-rule] .badge.danger", "firing").await?;
    h.wait_for_text("nav .nav-count", "1").await?;
    h.snapshot("alerts-firing").await?;
    // The editor's preview now shows when it fired.
    h.open("/demo/alerts?tab=rules", ".page.alerts tr[data-rule]").await?;
    h.click_text("tr[data-rule] button", "Edit").await?;
    h.click_text("dialog button", "Preview the last 7 days").await?;
    h.wait_for_text("dialog .preview-chart p", "It would have fired once:").await?;
    h.client.execute("document.querySelector('dialog .preview-chart').scrollIntoView({block: 'end'})", vec![]).await?;
    h.snapshot("alerts-rule-editor").await?;
    h.click_text("dialog button", "Cancel").await?;
    h.wait_gone("dialog").await?;

    // A silence made in the console: the re-notification 5 minutes later is recorded, not sent.
    h.open("/demo/alerts?tab=silences", ".page.alerts .empty").await?;
    h.click_text("button", "New silence").await?;
    h.fill("dialog input[name=labels]", "team=edge").await?;
    h.fill("dialog input[name=comment]", "deploying a fix").await?;
    h.click_text("dialog button", "Create silence").await?;
    h.wait_for_text(".page.alerts tr[data-silence] .badge", "silencing").await?;
    h.advance(5 * MIN);
    traffic(&h, 5 * MIN, 900, 100).await?;
    h.open("/demo/alerts?tab=channels", ".page.alerts tr[data-channel]").await?;
    until("the silenced re-notification", 30, async || {
        let (_, page) = h.api("admin", "GET", "/demo/v1/alerts/channels?count=10", None).await.ok()?;
        let id = page["items"].as_array()?.iter().find(|c| c["type"] == "webhook")?["id"].as_str()?.to_string();
        let (_, log) = h.api("admin", "GET", &format!("/demo/v1/alerts/channels/{id}/deliveries"), None).await.ok()?;
        (log["items"][0]["status"] == "silenced").then_some(())
    })
    .await?;
    ensure!(hook.received().len() == 1, "silenced: still one notification");
    h.click_text("tr[data-channel] button", "Deliveries").await?;
    h.wait_for("ul.deliveries li[data-status=silenced]").await?;
    h.snapshot("alerts-delivery-log").await?;

    // The silence ends; traffic recovers: resolved, and said.
    h.open("/demo/alerts?tab=silences", ".page.alerts tr[data-silence]").await?;
    h.click_text("tr[data-silence] button", "End").await?;
    h.wait_for(".page.alerts .empty").await?;
    h.advance(5 * MIN);
    traffic(&h, 10 * MIN, 1000, 0).await?;
    let received = until("the resolution", 30, async || Some(hook.received()).filter(|r| r.len() >= 2)).await?;
    let resolved: Value = serde_json::from_slice(&received[1].body)?;
    ensure!(resolved["kind"] == "resolved", "{resolved}");
    ensure!(verify(&secret, &received[1].body, &received[1].headers["x-edge-signature"]));
    h.open("/demo/alerts?tab=history", ".page.alerts tbody tr").await?;
    h.wait_until(".page.alerts tbody", |t| t.contains("resolved") && t.contains("firing")).await?;
    h.snapshot("alerts-history").await?;

    // The timeline of the range: the rule's transitions are its markers.
    let (from, to) = (edge_server::clock::iso_ms(now_ms(-MIN)), edge_server::clock::iso_ms(now_ms(11 * MIN)));
    let (status, timeline) =
        h.api("admin", "GET", &format!("/demo/v1/alerts/timeline?from={from}&to={to}"), None).await?;
    ensure!(status == 200, "{timeline}");
    let alerts: Vec<&str> = timeline["markers"]
        .as_array()
        .context("markers")?
        .iter()
        .filter(|m| m["kind"] == "alert")
        .filter_map(|m| m["operation"].as_str())
        .collect();
    ensure!(alerts == ["alert.firing", "alert.resolved"], "{alerts:?}");
    // ... and they appear on the charts over the range: the statistics chart and the security trends, each a link
    // to the rule's history (the address a notification's link names too).
    let wall = |ms: i64| edge_server::clock::iso_ms(ms)[..19].to_string();
    let range = format!("range=custom&start={}&end={}", wall(now_ms(-45 * MIN)), wall(now_ms(15 * MIN)));
    let alert_links = async |chart: &str| -> Result<Vec<String>> {
        let links = h
            .client
            .execute(
                "const chart = document.querySelector(arguments[0]);
                 if (!chart) return [];
                 chart.querySelectorAll('details.marker-group').forEach(d => d.open = true);
                 return [...chart.querySelectorAll('a[data-kind=alert]')].map(a => a.getAttribute('href'));",
                vec![json!(chart)],
            )
            .await?;
        Ok(serde_json::from_value(links)?)
    };
    h.open(&format!("/demo/stats?{range}&metrics=hits"), "#time-chart svg text").await?;
    let links = until("the alert markers on the statistics chart", 30, async || {
        alert_links("#time-chart").await.ok().filter(|l| l.len() >= 2)
    })
    .await?;
    ensure!(links.iter().all(|l| l.starts_with("/demo/alerts?tab=history&rule=")), "{links:?}");
    h.snapshot("alerts-markers-statistics").await?;
    h.open(&format!("/demo/security?{range}"), "#request-trends .chart svg text").await?;
    until("the alert markers on the security charts", 30, async || {
        alert_links("#request-trends").await.ok().filter(|l| l.len() >= 2)
    })
    .await?;
    h.snapshot("alerts-markers-security").await?;
    h.goto(&links[0]).await?;
    h.wait_until(".page.alerts .one-rule", |t| t.contains("5xx ratio of alerts.example")).await?;
    h.wait_until(".page.alerts tbody", |t| t.contains("resolved") && t.contains("firing")).await?;

    // Every tab passes axe-core; then at a phone's width with the CPU slowed 4×.
    for tab in ["firing", "rules", "history", "channels", "silences"] {
        h.open(&format!("/demo/alerts?tab={tab}"), ".page.alerts .tabs").await?;
        h.settled().await?;
        h.axe(&format!("alerts, {tab}")).await?;
        h.snapshot(&format!("alerts-{tab}-light")).await?;
    }
    h.emulate_width(Some(400)).await?;
    h.throttle_cpu(4).await?;
    for tab in ["firing", "rules", "history", "channels", "silences"] {
        h.open(&format!("/demo/alerts?tab={tab}"), ".page.alerts .tabs").await?;
        h.settled().await?;
        let wide: bool = h
            .client
            .execute("return document.documentElement.scrollWidth > window.innerWidth + 1", vec![])
            .await?
            .as_bool()
            .unwrap_or(true);
        ensure!(!wide, "the {tab} tab scrolls sideways at 400 px");
        h.snapshot(&format!("alerts-{tab}-phone")).await?;
    }
    h.throttle_cpu(1).await?;
    // Dark, at both widths: the colours are the console's variables; the screenshots show them, and no tab
    // logs an error.
    let dark = json!({"features": [{"name": "prefers-color-scheme", "value": "dark"}]});
    h.cdp("Emulation.setEmulatedMedia", dark).await?;
    for (width, suffix) in [(Some(400), "phone-dark"), (None, "dark")] {
        h.emulate_width(width).await?;
        for tab in ["firing", "rules", "history", "channels", "silences"] {
            h.open(&format!("/demo/alerts?tab={tab}"), ".page.alerts .tabs").await?;
            h.settled().await?;
            h.snapshot(&format!("alerts-{tab}-{suffix}")).await?;
        }
    }
    h.cdp("Emulation.setEmulatedMedia", json!({"features": []})).await?;
    h.emulate_width(None).await?;
    h.no_page_errors("alerts").await?;
    h.stop().await
}
