//! The Monday-morning questions — how much did we serve, what is our cache hit ratio, are 5xx errors up? —
//! answered from the overview at the top of Statistics alone, and its numbers checked against the API's for
//! the same range (asked another way: by cache status and by status code); and no view shows a raw code, a raw
//! path or a raw unit.

use anyhow::{Context, Result, ensure};
use edge_api::stats::{format_time, parse_time};
use edge_e2e::{Harness, PASSWORD, VIEWS};
use serde_json::Value;

/// Sums of `hits` in an answer, over the rows `keep` picks by the value of `dim`.
fn hits(answer: &Value, dim: &str, keep: impl Fn(&str) -> bool) -> f64 {
    let columns: Vec<&str> =
        answer["columns"].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str()).collect();
    let (d, h) = (columns.iter().position(|c| *c == dim), columns.iter().position(|c| *c == "hits"));
    let (Some(d), Some(h)) = (d, h) else { return 0.0 };
    answer["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| keep(r[d].to_string().trim_matches('"')))
        .map(|r| r[h].as_f64().unwrap_or(0.0))
        .sum()
}

/// (hit ratio, 5xx rate) over [start, end) from the API, asked by cache status and by status code.
async fn from_api(h: &Harness, start: &str, end: &str, g: &str) -> Result<(f64, f64)> {
    let q = |dims: &str| {
        format!(
            "/demo/v1/stats/data?starttime={start}&endtime={end}&granularity={g}&dimensions={dims}&metrics=hits&limit=2500"
        )
    };
    let (s1, cache) = h.api("admin", "GET", &q("cache_status"), None).await?;
    let (s2, codes) = h.api("admin", "GET", &q("http_status_code"), None).await?;
    ensure!(s1 == 200 && s2 == 200, "the API answers: {s1} {cache} / {s2} {codes}");
    ensure!(cache["total_results"].as_u64() == cache["rows"].as_array().map(|r| r.len() as u64), "one page holds it");
    let all = hits(&cache, "cache_status", |_| true);
    let hit = hits(&cache, "cache_status", |v| v == "1");
    let coded = hits(&codes, "http_status_code", |_| true);
    let e5 = hits(&codes, "http_status_code", |v| v.starts_with('5') && v.len() == 3);
    Ok((hit / all, e5 / coded))
}

fn ms(iso: &str) -> Result<i64> {
    parse_time(iso).map_err(|e| anyhow::anyhow!("{iso}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_answers_the_monday_morning_questions_with_the_apis_numbers() -> Result<()> {
    let h = Harness::start().await?;
    h.login_as("admin", PASSWORD).await?;
    h.goto("/demo/stats?range=24h").await?;
    let figure = |id: &str| format!("#overview [data-figure='{id}'][data-value]");
    h.wait_for(&figure("5xx-rate")).await?;
    let overview = h.wait_for("#overview").await?;
    let (start, end, g) = (
        overview.attr("data-start").await?.context("data-start")?,
        overview.attr("data-end").await?.context("data-end")?,
        overview.attr("data-granularity").await?.context("data-granularity")?,
    );
    let read = |name: &'static str| {
        let h = &h;
        async move {
            let tile = h.wait_for(&figure(name)).await?;
            let value: f64 = tile.attr("data-value").await?.context("a value")?.parse()?;
            let change = tile.attr("data-change").await?.and_then(|c| c.parse::<f64>().ok());
            Ok::<_, anyhow::Error>((value, change, tile.text().await?))
        }
    };
    let (hit_ratio, _, hit_text) = read("hit-ratio").await?;
    let (rate_5xx, change_5xx, rate_text) = read("5xx-rate").await?;

    let span = ms(&end)? - ms(&start)?;
    let (api_hit, api_5xx) = from_api(&h, &start, &end, &g).await?;
    let (_, before_5xx) = from_api(&h, &format_time(ms(&start)? - span), &start, &g).await?;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    ensure!(close(hit_ratio, api_hit), "hit ratio {hit_ratio} (shown {hit_text:?}) = the API's {api_hit}");
    ensure!(close(rate_5xx, api_5xx), "5xx rate {rate_5xx} (shown {rate_text:?}) = the API's {api_5xx}");
    let expected = (api_5xx - before_5xx) * 100.0;
    ensure!(
        change_5xx.is_some_and(|c| (c - expected).abs() < 1e-6),
        "the 5xx rate's change {change_5xx:?} (percentage points) = the API's {expected}"
    );
    // What is shown reads as an administrator reads it.
    ensure!(hit_text.contains('%') && rate_text.contains("vs previous period"), "{hit_text:?} / {rate_text:?}");

    // A figure opens the explorer with the query behind it.
    h.click(&figure("hit-ratio")).await?;
    h.wait_until(".stats-table thead", |t| t.to_lowercase().contains("cache status")).await?;
    let url = h.client.current_url().await?;
    ensure!(url.as_str().contains("dims=cache_status"), "the explorer shows the query behind it: {url}");
    h.wait_until(".stats-table tbody", |t| t.contains("hit (1)")).await?;
    h.stop().await
}

/// Text no view may show: API names and units (`last_mile_bandwidth_bytes`, `time_to_first_byte_ms`),
/// configuration paths (`$.origins[…]`).
fn raw_words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .filter(|w| w.contains("_bytes") || w.contains("_ms") || w.contains("$."))
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_view_shows_a_raw_code_path_or_unit() -> Result<()> {
    let h = Harness::start().await?;
    h.login_as("admin", PASSWORD).await?;
    let mut found = Vec::new();
    let extra = [
        (
            "/demo/stats?range=24h&dims=cache_status&metrics=hits,last_mile_bandwidth_bytes,time_to_first_byte_ms",
            "#time-chart svg",
        ),
        ("/demo/stats?range=24h&dims=scheme&metrics=hits", "#time-chart svg"),
    ];
    for (path, ready) in VIEWS.into_iter().chain(extra) {
        h.open(path, ready).await?;
        let text: String =
            h.client.execute("return document.body.innerText", vec![]).await?.as_str().unwrap_or("").to_string();
        for w in raw_words(&text) {
            found.push(format!("{path}: {w}"));
        }
    }
    // Cache statuses read as words in the table, the legend and the bars (the code kept beside the word).
    h.open(VIEWS_CACHE, "#time-chart svg").await?;
    let cells = h.wait_for(".stats-table tbody").await?.text().await?;
    for line in cells.lines() {
        if let Some(first) = line.split_whitespace().nth(2) {
            ensure!(first.parse::<u32>().is_err(), "a bare cache-status code in the table: {line:?}");
        }
    }
    let legend = h.wait_for("ul.legend").await?.text().await?;
    ensure!(legend.contains("hit (1)") || legend.contains("miss (2)"), "the legend names cache statuses: {legend}");
    ensure!(found.is_empty(), "raw names on screen:\n{}", found.join("\n"));
    h.stop().await
}

const VIEWS_CACHE: &str = "/demo/stats?range=24h&dims=cache_status&metrics=hits";
