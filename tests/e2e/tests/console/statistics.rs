//! The statistics view against the real server and its demo traffic: change the range and a dimension, and see
//! the chart and the table follow; a reload keeps the view.

use edge_e2e::{Harness, PASSWORD};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_statistics_view_follows_the_range_and_the_dimensions() -> anyhow::Result<()> {
    let h = Harness::start().await?;
    h.login("demo", "admin", PASSWORD).await?;
    h.wait_for_path("/demo/stats").await?;
    // The default view: the last 24 hours by country.
    h.wait_for("#time-chart svg").await?;
    h.wait_for(".stats-table tbody tr").await?;
    // (Header cells are upper case on screen.)
    let header = h.wait_for(".stats-table thead").await?.text().await?.to_lowercase();
    assert!(header.contains("country"), "{header}");
    let before = h.wait_until(".pager .muted", |t| !t.is_empty()).await?;
    h.wait_for("#kpis .kpi[data-metric=hits] .kpi-value").await?;
    h.snapshot("statistics").await?;

    // Seven days by country: daily, as country alone is no hourly grouping set (a chart, not an empty view).
    h.click("button[data-preset='7d']").await?;
    h.wait_for("#time-chart svg").await?;
    let granularity = h.wait_for("select[name=granularity]").await?.prop("value").await?;
    assert_eq!(granularity.as_deref(), Some("day"));
    // Hourly chosen by hand: the view says what to add.
    h.select("select[name=granularity]", "hour").await?;
    h.wait_until("#dimensions .hint", |t| t.contains("not a grouping set") && t.contains("Browser")).await?;

    // Country out (totals per hour), then domain in: the table and the chart's legend follow.
    h.click("button[data-dim=country]").await?;
    let after = h.wait_until(".pager .muted", |t| !t.is_empty() && t != before).await?;
    // Two days of demo traffic ending at the last 5 minutes: 48 hourly buckets, 49 when it is not on the hour.
    assert!(after == "1–48 of 48" || after == "1–49 of 49", "one row an hour of demo traffic: {after}");
    h.wait_until(".stats-table thead", |t| !t.to_lowercase().contains("country")).await?;
    h.click("button[data-dim=domain]").await?;
    h.wait_until(".stats-table thead", |t| t.to_lowercase().contains("domain")).await?;
    h.wait_until(".stats-table tbody", |t| t.contains("shop.example") || t.contains("media.example")).await?;
    h.wait_until("ul.legend", |t| t.contains("example")).await?;
    let url = h.client.current_url().await?;
    assert!(
        url.query().unwrap_or("").contains("dims=domain") && url.query().unwrap_or("").contains("range=7d"),
        "{url}"
    );
    h.snapshot("statistics-domain").await?;

    // A reload shows the same view, from the address.
    h.client.refresh().await?;
    h.wait_until(".stats-table thead", |t| t.to_lowercase().contains("domain")).await?;
    h.wait_for("#time-chart svg").await?;
    h.wait_for("#top-urls table").await?;

    // The security view draws its charts and lists events.
    h.click("nav a[href='/demo/security']").await?;
    h.wait_for("#request-trends .chart svg").await?;
    h.wait_for("#waf-top li").await?;
    h.wait_for("#events table tbody tr").await?;
    h.snapshot("security").await?;
    h.stop().await
}
