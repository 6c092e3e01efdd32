//! The incident timeline on the charts (issue 24) and the previous period drawn in them (issue 22), through the
//! real console on the real server: a configuration change, a purge and the demo's network lists are markers on
//! the statistics and security charts over the last hour; each marker is a link reached with the keyboard and
//! opens its record (the configuration change opens its diff with "Roll back", the purge its transaction, the
//! list its entries); "Alert on this" on the statistics chart opens a rule on its query; "Compare with the
//! previous period" draws the previous period dashed and puts it in the tooltip.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use edge_e2e::{END, Harness, PASSWORD};
use serde_json::{Value, json};

/// Changes the first origin's port of `property` through the API (with the etag read first): a new version.
async fn change_config(h: &Harness, property: &str) -> Result<u64> {
    let addr = h.addr().context("the server")?;
    let property = property.to_string();
    tokio::task::spawn_blocking(move || -> Result<u64> {
        use base64::Engine;
        let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}")));
        let url = format!("http://{addr}/demo/v1/properties/{property}/config");
        let read = ureq::get(&url).set("Authorization", &auth).call()?;
        let etag = read.header("ETag").context("an etag")?.to_string();
        let mut doc: Value = read.into_json()?;
        let port = doc["config"]["origins"][0]["port"].as_u64().context("an origin")?;
        doc["config"]["origins"][0]["port"] = json!(if port == 8443 { 9443 } else { 8443 });
        let saved: Value = ureq::put(&url)
            .set("Authorization", &auth)
            .set("If-Match", &etag)
            .send_json(json!({"config": doc["config"], "comment": "timeline test"}))?
            .into_json()?;
        saved["version"].as_u64().context("the new version")
    })
    .await?
}

/// Purges `uri` through the API: the transaction's id. (The answer is a 303 to the transaction; it is read as
/// it is, not followed.)
async fn purge(h: &Harness, uri: &str) -> Result<i64> {
    let addr = h.addr().context("the server")?;
    let body =
        json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": uri, "match_mode": "EXACT_LITERAL"}]}});
    tokio::task::spawn_blocking(move || -> Result<i64> {
        use base64::Engine;
        let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}")));
        let agent = ureq::AgentBuilder::new().redirects(0).build();
        let answer =
            agent.post(&format!("http://{addr}/demo/v1/cache/purge")).set("Authorization", &auth).send_json(body);
        let response = match answer {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.into()),
        };
        let status = response.status();
        let purged: Value = response.into_json()?;
        ensure!(status == 303, "purging: {status} {purged}");
        purged["transaction_id"].as_i64().context("a transaction id")
    })
    .await?
}

/// The markers' links of the chart `chart` (opening a group when markers share one), as (kind, href).
async fn marker_links(h: &Harness, chart: &str) -> Result<Vec<(String, String)>> {
    let links = h
        .client
        .execute(
            "const chart = document.querySelector(arguments[0]);
             chart.querySelectorAll('details.marker-group').forEach(d => d.open = true);
             return [...chart.querySelectorAll('a[data-kind]')].map(a => [a.dataset.kind, a.getAttribute('href')]);",
            vec![json!(chart)],
        )
        .await?;
    Ok(serde_json::from_value(links)?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_show_the_timeline_and_each_marker_opens_its_record() -> Result<()> {
    let h = Harness::start().await?;
    let version = change_config(&h, "api-gateway").await?;
    let transaction = purge(&h, "www.shop.example/x").await?;
    h.login_as("admin", PASSWORD).await?;

    // The statistics chart of the last hour: the changes are markers on it, links with a name.
    h.goto("/demo/stats?range=1h&metrics=hits").await?;
    h.wait_for("#time-chart svg text").await?;
    h.wait_for("#time-chart .marker").await?;
    let key = h.wait_for(".marker-key").await?.text().await?;
    ensure!(key.contains("configuration change") && key.contains("purge"), "the key names the kinds: {key}");
    let links = marker_links(&h, "#time-chart").await?;
    let config = links
        .iter()
        .find(|(kind, href)| kind == "config" && href.contains(&format!("to={version}")))
        .context(format!("a configuration marker of version {version}: {links:?}"))?;
    ensure!(config.1 == format!("/demo/properties?name=api-gateway&from={}&to={version}", version - 1), "{config:?}");
    ensure!(
        links.iter().any(|(kind, href)| kind == "purge" && *href == format!("/demo/purge?transaction={transaction}")),
        "{links:?}"
    );
    ensure!(links.iter().any(|(kind, href)| kind == "list" && href.starts_with("/demo/lists?list=")), "{links:?}");
    let named: Value = h
        .client
        .execute(
            "return [...document.querySelectorAll('#time-chart a[data-kind]')].every(a => a.getAttribute('aria-label') || a.textContent.trim().length > 10);",
            vec![],
        )
        .await?;
    ensure!(named == json!(true), "every marker has an accessible name");
    // A marker is reached with the keyboard: from the chart, Tab goes to its markers.
    h.client.execute("document.querySelector('#time-chart').focus();", vec![]).await?;
    h.tab_to("#time-chart .marker", 10).await?;
    h.snapshots("statistics-timeline").await?;

    // "Alert on this": a rule on the chart's query and metric.
    let alert = h.wait_for(".chart-card a.alert-on").await?.attr("href").await?.unwrap_or_default();
    ensure!(alert.starts_with("/demo/alerts?tab=rules&new=1&path=%2Fstats&metric=hits"), "{alert}");

    // The configuration marker opens the change in the property's history, with "Roll back".
    h.goto(&config.1).await?;
    h.wait_until("#version-diff", |t| t.contains(&format!("Changes from version {} to {version}", version - 1)))
        .await?;
    h.wait_until("#history .changes", |t| t.contains("Port")).await?;
    h.wait_until("#version-diff ~ button", |t| t.contains(&format!("Roll back to version {}", version - 1))).await?;
    h.snapshots("timeline-config").await?;

    // The purge marker opens its transaction.
    h.goto(&format!("/demo/purge?transaction={transaction}")).await?;
    h.wait_until("#transaction", |t| t.contains(&format!("Transaction {transaction}"))).await?;
    ensure!(h.count("table.purges tr.chosen").await? == 1, "the purge is marked among the recent ones");
    h.snapshots("timeline-purge").await?;

    // Comparing with the previous period: the previous hour dashed in the chart, and in the tooltip.
    h.goto("/demo/stats?range=24h&metrics=hits&cmp=1").await?;
    h.wait_for("#time-chart svg text").await?;
    h.wait_for("ul.legend .previous-key").await?;
    h.client.execute("document.querySelector('#time-chart').focus();", vec![]).await?;
    h.keys(END).await?;
    h.wait_for("#time-chart .tooltip .previous").await?;
    let dashes = h.count("#time-chart svg polyline").await?;
    ensure!(dashes > 20, "the previous period is dashed: {dashes} lines");
    h.snapshots("statistics-compare").await?;

    // The security charts show the same markers.
    h.goto("/demo/security?range=1h").await?;
    h.wait_for("#request-trends .chart svg text").await?;
    h.wait_for("#request-trends .marker").await?;
    let links = marker_links(&h, "#waf-trends").await?;
    ensure!(links.iter().any(|(kind, _)| kind == "config"), "{links:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.snapshots("security-timeline").await?;
    h.stop().await
}
