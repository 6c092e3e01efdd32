//! The console's workflows through the real server in headless Chromium, in four tests that run at once, each
//! with a server and a browser of its own and its steps in an order that depends on nothing outside it (each
//! step says which failed): following deployments (polling a slow server with one request in flight, growing
//! pauses up to a cap, no poll once done); statistics in the account's time zone (chart tooltips against the
//! API's numbers, copy as curl, reads that are not repeated, click-to-filter, the whole range with "other", the
//! chart's width, legend and Back); purges, property editing and sessions (dialogs and focus, purge
//! confirmation, bulk purge paced under 429s and capped at 10,000 URIs, safe property editing with rollback, a
//! draft after a reload and after the session ends, the leave guard, table rows whose cells line up, address
//! state of list views, own sessions, the session notice); lists, drill-downs and every view (drill-down from a
//! top-K client IP, a country and an event to a network list, a 50,000-line file, dark mode and a phone's
//! width).

use std::{future::Future, time::Duration};

use anyhow::{Context, Result, bail, ensure};
use edge_e2e::{ESCAPE, Harness, PASSWORD, Seen, VIEWS, most_at_once};
use serde_json::{Value, json};

/// Runs one step of a workflow: a failure names the step, and so does an error the page logged during it.
async fn step(h: &Harness, what: &str, run: impl Future<Output = Result<()>>) -> Result<()> {
    run.await.with_context(|| what.to_string())?;
    h.no_page_errors(what).await
}

/// A server with the demo data and a browser logged in as its administrator.
async fn logged_in() -> Result<Harness> {
    let h = Harness::start().await?;
    h.login_as("admin", PASSWORD).await?;
    Ok(h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_deployments() -> Result<()> {
    let h = logged_in().await?;
    step(&h, "own row", users_own_row(&h)).await?;
    step(&h, "slow server", polling_a_slow_server(&h)).await?;
    step(&h, "polling backs off", polling_backs_off(&h)).await?;
    h.stop().await
}

/// The time zone first: the axes' label names the account's zone it sets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_in_the_accounts_zone() -> Result<()> {
    let h = logged_in().await?;
    step(&h, "time zone", time_zone(&h)).await?;
    step(&h, "chart tooltips", chart_tooltips_and_curl(&h)).await?;
    step(&h, "axes, click-to-filter, top URL", axes_click_to_filter_and_a_top_url(&h)).await?;
    step(&h, "the whole range in the chart", whole_range_chart_with_other(&h)).await?;
    step(&h, "chart width, legend, Back", chart_width_legend_and_back(&h)).await?;
    step(&h, "events' actions column", events_actions_line_up(&h)).await?;
    h.stop().await
}

/// The rollback to version 1 before any other save of the property; the sessions last (they move the clock on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purges_property_editing_and_sessions() -> Result<()> {
    let mut h = logged_in().await?;
    step(&h, "dialogs and purge", dialogs_and_purge_confirmation(&h)).await?;
    step(&h, "bulk purge", bulk_purge_under_the_rate_limit(&h)).await?;
    step(&h, "property editing", safe_property_editing(&h)).await?;
    step(&h, "draft after the session ends", draft_after_the_session_ends(&h)).await?;
    step(&h, "table rows", table_rows_line_up(&h)).await?;
    step(&h, "bulk purge cap", bulk_purge_cap(&h)).await?;
    step(&h, "address state", address_state(&h)).await?;
    step(&h, "curl of reads", curl_of_lists_and_configurations(&h)).await?;
    own_sessions_and_session_notice(&mut h).await.context("sessions")?;
    h.no_page_errors("sessions").await?;
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_drill_downs_and_every_view() -> Result<()> {
    let h = logged_in().await?;
    step(&h, "drill-down", drill_down_to_a_network_list(&h)).await?;
    step(&h, "large file", large_file_into_a_list(&h)).await?;
    step(&h, "dark mode and phone", dark_mode_and_phone_width(&h)).await?;
    step(&h, "drill-down from a country and an event", drill_down_from_a_country_and_an_event(&h)).await?;
    h.stop().await
}

/// The text and UTC time (`datetime`) of the first `<time>` under `css`.
async fn first_time(h: &Harness, css: &str) -> Result<(String, String)> {
    let el = h.wait_for(&format!("{css} time")).await?;
    let text = el.prop("textContent").await?.unwrap_or_default();
    let utc = el.attr("datetime").await?.unwrap_or_default();
    Ok((text.trim().to_string(), utc))
}

/// `2026-11-22T10:00:01` plus `hours` (whole and half hours), as the console writes it.
fn shifted(utc: &str, minutes: i64) -> Result<String> {
    let t = chrono_like(utc)? + minutes * 60;
    let (days, rem) = (t.div_euclid(86_400), t.rem_euclid(86_400));
    let (y, m, d) = civil(days);
    Ok(format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60))
}

fn chrono_like(s: &str) -> Result<i64> {
    let n = |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<i64>().ok()).context("a time");
    let (y, mo, d, h, mi, se) = (n(0..4)?, n(5..7)?, n(8..10)?, n(11..13)?, n(14..16)?, n(17..19)?);
    let (y2, m2) = if mo <= 2 { (y - 1, mo + 9) } else { (y, mo - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Ok((era * 146_097 + doe - 719_468) * 86_400 + h * 3600 + mi * 60 + se)
}

fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The account's zone (chosen from the IANA list) shows in the views, with UTC on hover; this browser's own
/// choice overrides it.
async fn time_zone(h: &Harness) -> Result<()> {
    let entries = "/demo/lists?list=ip_demo_scanners";
    h.goto(entries).await?;
    let (text, utc) = first_time(h, "tr[data-entry]").await?;
    ensure!(text == shifted(&utc, 0)?, "UTC at first: {text} for {utc}");
    h.goto("/demo/account").await?;
    h.select("select[name=timezone]", "Asia/Dhaka").await?;
    h.click("form button[type=submit]").await?;
    h.wait_for_text("[role=status].notice", "The account is saved.").await?;
    h.wait_for_text(".topbar .zone", "Asia/Dhaka").await?;
    h.click("nav a[href='/demo/lists']").await?;
    h.click("tr[data-list=ip_demo_scanners] button").await?;
    let (text, utc) = first_time(h, "tr[data-entry]").await?;
    ensure!(text == shifted(&utc, 360)?, "Dhaka is UTC+6: {text} for {utc}");
    let title = h.wait_for("tr[data-entry] time").await?.attr("title").await?.unwrap_or_default();
    ensure!(title == format!("{} UTC", shifted(&utc, 0)?), "UTC on hover: {title}");
    // A reload keeps it (the account's zone is read again, and remembered meanwhile).
    h.client.refresh().await?;
    let (text, _) = first_time(h, "tr[data-entry]").await?;
    ensure!(text == shifted(&utc, 360)?, "after a reload: {text}");
    // This browser's own choice wins over the account's.
    h.goto("/demo/me").await?;
    h.select("select[name=browser-timezone]", "Asia/Tokyo").await?;
    h.wait_for_text(".topbar .zone", "Asia/Tokyo").await?;
    h.goto(entries).await?;
    let (text, utc) = first_time(h, "tr[data-entry]").await?;
    ensure!(text == shifted(&utc, 540)?, "Tokyo is UTC+9: {text} for {utc}");
    // The custom range of the statistics is entered in the zone and sent as UTC.
    h.goto("/demo/stats?range=custom&start=2026-01-01T00:00:00&end=2026-01-01T06:00:00").await?;
    ensure!(h.value("input[name=range-start]").await? == "2026-01-01T09:00", "the range's start in Tokyo time");
    h.goto("/demo/me").await?;
    h.select("select[name=browser-timezone]", "").await?;
    h.wait_for_text(".topbar .zone", "Asia/Dhaka").await?;
    Ok(())
}

/// The tooltip's values are the API's numbers for the time under the crosshair; "Copy as curl" gives the query
/// (with the cookie as a placeholder); paging, sorting and the chart style fetch neither the chart nor the
/// totals again; the legend hides a series.
async fn chart_tooltips_and_curl(h: &Harness) -> Result<()> {
    h.goto("/demo/stats?range=24h&dims=country&metrics=hits").await?;
    h.wait_for("#time-chart svg").await?;
    h.click(".chart-card .copy-curl").await?;
    let command = h.wait_until(".chart-card .curl-command code", |t| t.starts_with("curl ")).await?;
    ensure!(command.contains("--cookie \"authtoken=$EDGE_SESSION\""), "{command}");
    let cookie = h.client.get_named_cookie("authtoken").await?.value().to_string();
    ensure!(!command.contains(&cookie), "the session id is never shown");
    let start = command.find("'http").context("a quoted address")? + 1;
    let url = &command[start..command.len() - 1];
    let path = &url[url.find("/demo/").context("the API path")?..];
    // Over the chart: the crosshair and a tooltip; End moves it to the last time.
    h.click("#time-chart").await?;
    h.wait_for("#time-chart .tooltip").await?;
    h.keys(edge_e2e::END).await?;
    let tip = h.wait_for("#time-chart .tooltip").await?;
    let time = tip.attr("data-time").await?.context("the tooltip's time")?;
    let (status, answer) = h.api("admin", "GET", path, None).await?;
    ensure!(status == 200, "the copied query runs: {status} {answer}");
    let values = tooltip_values(h).await?;
    ensure!(!values.is_empty(), "the tooltip lists the series");
    let columns: Vec<String> = answer["columns"]
        .as_array()
        .context("columns")?
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect();
    let at = |n: &str| columns.iter().position(|c| c == n);
    let (t, country, hits) =
        (at("starttime").context("starttime")?, at("country").context("country")?, at("hits").context("hits")?);
    let mut compared = 0;
    for (series, value) in &values {
        if series == "other" {
            continue;
        }
        let api: f64 = answer["rows"]
            .as_array()
            .context("rows")?
            .iter()
            .filter(|r| r[t].as_str() == Some(time.as_str()) && r[country].as_str() == Some(series.as_str()))
            .filter_map(|r| r[hits].as_f64())
            .sum();
        ensure!((api - value).abs() < 1e-9, "{series} at {time}: tooltip {value}, API {api}");
        compared += 1;
    }
    ensure!(compared > 0, "compared a series: {values:?}");
    // The legend hides a series: it leaves the tooltip.
    let first = values[0].0.clone();
    h.click("#time-chart + ul.legend button.legend-item").await?;
    h.wait_for_attr("#time-chart + ul.legend button.legend-item", "aria-pressed", "false").await?;
    h.click("#time-chart").await?;
    let after = tooltip_values(h).await?;
    ensure!(!after.iter().any(|(s, _)| *s == first), "{first} is hidden: {after:?}");
    // Sorting, paging and the chart style read only the rows again.
    h.wait_for(".stats-table tbody tr").await?;
    h.seen(true);
    h.click_text(".segmented button", "Stacked").await?;
    h.click_text("th button.sort", "Requests").await?;
    h.wait_for("th[aria-sort=descending]").await?;
    // Every read the clicks started has been answered and shown: any other than the rows' is among them.
    h.settled().await?;
    let reads: Vec<Seen> = h.seen(true).into_iter().filter(|s| s.path.contains("/stats/data")).collect();
    ensure!(reads.len() == 1 && reads[0].path.contains("sortby=-hits"), "only the rows were read: {reads:?}");
    // A latency is an average: its tile says so.
    h.goto("/demo/stats?range=24h&dims=country&metrics=hits,time_to_first_byte_ms&cmp=1").await?;
    h.wait_until("#kpis .kpi[data-metric=time_to_first_byte_ms]", |t| {
        t.to_lowercase().contains("(average)") && t.contains(" ms")
    })
    .await?;
    Ok(())
}

/// The value of `name` in a request's query string.
fn param<'a>(s: &'a Seen, name: &str) -> Option<&'a str> {
    let query = s.path.split_once('?')?.1;
    query.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
}

/// The chart's axes have titles with the unit and the zone; the comparison period is asked for beside the
/// range, not after it; a top value and a table value become filters (in the address); a top URL is purged
/// from the statistics, confirmed, and its transaction followed.
async fn axes_click_to_filter_and_a_top_url(h: &Harness) -> Result<()> {
    h.slow("GET", "/stats/data", Duration::from_millis(800));
    h.seen(true);
    h.goto("/demo/stats?range=24h&dims=country&metrics=last_mile_bandwidth_bytes&cmp=1").await?;
    h.wait_for("#time-chart svg").await?;
    h.wait_for("#kpis .kpi").await?;
    h.fast();
    let seen = h.seen(true);
    let data: Vec<&Seen> = seen.iter().filter(|s| s.path.contains("/stats/data")).collect();
    let earliest = data.iter().filter_map(|s| param(s, "starttime")).min().context("a data query")?.to_string();
    let before: Vec<&&Seen> = data.iter().filter(|s| param(s, "starttime") == Some(earliest.as_str())).collect();
    let now: Vec<&&Seen> = data.iter().filter(|s| param(s, "starttime") != Some(earliest.as_str())).collect();
    ensure!(!before.is_empty() && !now.is_empty(), "the range and the period before: {data:?}");
    let overlaps = |a: &Seen, b: &Seen| a.start < b.end.unwrap_or(b.start) && b.start < a.end.unwrap_or(a.start);
    ensure!(
        before.iter().any(|b| now.iter().any(|n| overlaps(b, n))),
        "the period before is asked for in parallel: {data:?}"
    );
    let svg: String = serde_json::from_value(
        h.client.execute("return document.querySelector('#time-chart svg').textContent;", vec![]).await?,
    )?;
    ensure!(svg.contains("Bandwidth to users per 5 minutes"), "the y axis is titled with what it counts: {svg}");
    ensure!(svg.contains("Time (Asia/Dhaka)"), "the x axis names the zone: {svg}");
    ensure!(["KB", "MB", "GB", "TB"].iter().any(|u| svg.contains(u)), "bytes in KB/MB/GB/TB: {svg}");
    // A top value becomes a filter, in the address.
    let value = h.wait_for("#top-chart li").await?.attr("data-value").await?.context("a top value")?;
    h.click("#top-chart li button.bar-name").await?;
    h.wait_until("#filters", |t| t.contains(&value)).await?;
    ensure!(h.client.current_url().await?.as_str().contains("filters=country"), "the filter is in the address");
    // Removed again; a table value becomes one too.
    h.click("#filters .filter-chip button").await?;
    h.wait_for(".stats-table button.cell-filter").await?;
    h.wait_until("#filters", |t| !t.contains(&value)).await?;
    let cell = h.wait_for(".stats-table tbody tr:nth-child(2) button.cell-filter").await?.text().await?;
    h.click(".stats-table tbody tr:nth-child(2) button.cell-filter").await?;
    h.wait_until("#filters", |t| t.contains(cell.trim())).await?;
    // From a top URL to its purge.
    h.goto("/demo/stats?range=7d").await?;
    h.click("#top-urls button.purge-url").await?;
    h.wait_until("dialog#purge-url", |t| t.contains("host(s)")).await?;
    let focused = active_text(h).await?;
    ensure!(focused == "Cancel", "the safe choice has the focus: {focused}");
    h.click("dialog#purge-url button.danger").await?;
    // The dialog's text on a timeout tells what went wrong (an error, a transaction still pending).
    h.wait_until("dialog#purge-url", |t| t.contains(": Completed")).await?;
    h.wait_for("dialog#purge-url .transaction[data-status=SUCCESS]").await?;
    h.snapshot("purge-top-url").await?;
    h.keys(ESCAPE).await?;
    h.wait_gone("dialog[open]").await?;
    Ok(())
}

/// "Copy as curl" on a network list's entries and on a property's configuration gives their API reads.
async fn curl_of_lists_and_configurations(h: &Harness) -> Result<()> {
    for (page, read) in [
        ("/demo/lists?list=ip_demo_scanners", "/demo/v1/config/networklists/ip_demo_scanners"),
        ("/demo/properties?name=www-shop", "/demo/v1/properties/www-shop/config"),
    ] {
        h.goto(page).await?;
        h.wait_for(".copy-curl").await?;
        let commands: Vec<String> = serde_json::from_value(
            h.client
                .execute(
                    "document.querySelectorAll('.copy-curl').forEach(b => b.click()); \
                     await new Promise(r => setTimeout(r, 200)); \
                     return [...document.querySelectorAll('.curl-command code')].map(c => c.textContent);",
                    vec![],
                )
                .await?,
        )?;
        ensure!(
            commands.iter().any(|c| c.starts_with("curl ") && c.contains(read) && c.contains("$EDGE_SESSION")),
            "{page}: {commands:?}"
        );
    }
    Ok(())
}

/// The tooltip's (series, value) pairs.
async fn tooltip_values(h: &Harness) -> Result<Vec<(String, f64)>> {
    let v = h
        .client
        .execute(
            r##"return [...document.querySelectorAll("#time-chart .tooltip li")]
                 .map(li => [li.dataset.series, Number(li.dataset.value)]);"##,
            vec![],
        )
        .await?;
    Ok(serde_json::from_value(v)?)
}

/// From a WAF top-K client IP to its events, then into a network list, watching the deployment to COMPLETED.
async fn drill_down_to_a_network_list(h: &Harness) -> Result<()> {
    h.goto("/demo/security?waf=clientip").await?;
    h.wait_for("#waf-top li button").await?;
    let ip = h.wait_for("#waf-top li").await?.attr("data-value").await?.context("an IP")?;
    h.click("#waf-top li button").await?;
    h.click_text(".picked button", "Show events").await?;
    h.wait_until("#events table tbody", |t| {
        !t.is_empty() && t.lines().filter(|l| !l.contains("Add to list")).all(|l| l.contains(&ip))
    })
    .await?;
    ensure!(h.client.current_url().await?.as_str().contains("filters=client_ip"), "the filter is in the address");
    h.wait_until("#filters .filter-chip", |t| t.contains(&ip)).await?;
    h.click_text(".picked button", "Add to network list…").await?;
    h.select("dialog#add-to-list select[name=list]", "ip_demo_scanners").await?;
    h.snapshot("add-to-list").await?;
    h.click("#confirm-add").await?;
    h.wait_for("dialog#add-to-list .task-progress[data-status=COMPLETED]").await?;
    h.click_text("dialog#add-to-list button", "Close").await?;
    h.wait_gone("dialog[open]").await?;
    h.goto(&format!("/demo/lists?list=ip_demo_scanners&q={ip}")).await?;
    h.wait_for(&format!("tr[data-entry='{ip}']")).await?;
    Ok(())
}

/// Dialogs are modal `<dialog>`s: the safe choice has the focus, Escape closes them and the focus returns to
/// what opened them. A prefix purge warns; the confirmation names the count and the hosts.
async fn dialogs_and_purge_confirmation(h: &Harness) -> Result<()> {
    h.goto("/demo/purge").await?;
    h.select("select[name=match_mode]", "PREFIX_LITERAL").await?;
    h.fill("textarea[name=uris]", "www.shop.example/\nshop.example/images/").await?;
    h.wait_until("#purge-report", |t| t.contains("2 line(s), 0 with problems")).await?;
    h.click("#purge-form button[type=submit]").await?;
    let text = h.wait_until("dialog[open]", |t| t.contains("2 URI(s) on 2 host(s)")).await?;
    ensure!(text.contains("www.shop.example") && text.contains("shop.example"), "{text}");
    h.wait_for("dialog[open] #prefix-warning").await?;
    let focused = active_text(h).await?;
    ensure!(focused == "Cancel", "the safe choice has the focus: {focused}");
    // Tab stays inside the dialog.
    for _ in 0..6 {
        h.keys(edge_e2e::TAB).await?;
        let inside: bool = serde_json::from_value(
            h.client.execute("return !!document.activeElement.closest('dialog[open]');", vec![]).await?,
        )?;
        ensure!(inside, "the focus stays in the dialog");
    }
    h.keys(ESCAPE).await?;
    h.wait_gone("dialog[open]").await?;
    let mut back = String::new();
    for _ in 0..40 {
        back = active_text(h).await?;
        if back.starts_with("Purge 2 URI(s)") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ensure!(back.starts_with("Purge 2 URI(s)"), "the focus returns to the opener: {back}");
    Ok(())
}

async fn active_text(h: &Harness) -> Result<String> {
    Ok(serde_json::from_value::<String>(
        h.client.execute("return document.activeElement.textContent.trim();", vec![]).await?,
    )?)
}

/// 1,200 URIs go as three requests, paced at most two a second; while someone else uses up the rate limit
/// the console waits as each 429 says and sends again; every transaction completes.
async fn bulk_purge_under_the_rate_limit(h: &Harness) -> Result<()> {
    h.goto("/demo/purge").await?;
    h.wait_for("textarea[name=uris]").await?;
    let uris: Vec<String> = (0..1200).map(|i| format!("www.shop.example/bulk/{i}.html")).collect();
    h.client
        .execute(
            "const t = document.querySelector('textarea[name=uris]'); t.value = arguments[0]; \
             t.dispatchEvent(new Event('input', { bubbles: true }));",
            vec![json!(uris.join("\n"))],
        )
        .await?;
    h.wait_until("#purge-report", |t| t.contains("1200 line(s), 0 with problems")).await?;
    h.click("#purge-form button[type=submit]").await?;
    h.wait_until("dialog[open]", |t| t.contains("1200 URI(s) on 1 host(s), sent as 3 request(s)")).await?;
    h.seen(true);
    // Someone else purges meanwhile, twice a second and more: the console meets 429s. The limit is used up
    // first, and the server's clock held back a minute (the bucket gains nothing until the clock passes the
    // time it was last drawn from), so that the console's first request is refused for sure however slow the
    // machine; once it has been, the clock goes on and the bucket refills as ever.
    let one = json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": "www.shop.example/x", "match_mode": "EXACT_LITERAL"}]}});
    for _ in 0..3 {
        h.api("operator", "POST", "/demo/v1/cache/purge", Some(one.clone())).await?;
    }
    h.advance(-60_000);
    let other = async {
        for _ in 0..12 {
            let body = json!({"purge_request": {"action": "PURGE", "uris": [{"uri_pattern": "www.shop.example/x", "match_mode": "EXACT_LITERAL"}]}});
            let _ = h.api("operator", "POST", "/demo/v1/cache/purge", Some(body)).await;
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    };
    let click = async {
        h.click("dialog[open] button.danger").await?;
        let refused = seen_until(h, "the console's first purge refused", |seen| {
            seen.iter().any(|s| s.cookie && s.path.ends_with("/cache/purge") && s.status == Some(429))
        })
        .await;
        h.advance(60_000);
        refused
    };
    let (_, clicked) = tokio::join!(other, click);
    clicked?;
    h.wait_until("#purge-overall", |t| t.contains("3 of 3 request(s) complete")).await?;
    ensure!(h.count("#running-purges li.transaction[data-status=SUCCESS]").await? == 3, "three transactions");
    h.snapshot("purge-done").await?;
    let posts = console_purges(h.seen(false));
    ensure!(posts.iter().filter(|s| s.status.is_some_and(|c| c < 400)).count() == 3, "three taken: {posts:?}");
    let all: Vec<(bool, Option<u16>)> =
        h.seen(false).into_iter().filter(|s| s.path.ends_with("/cache/purge")).map(|s| (s.cookie, s.status)).collect();
    ensure!(
        posts.iter().any(|s| s.status == Some(429)),
        "the console met the rate limit: {posts:?}; all purges: {all:?}"
    );
    paced_under_the_limit(&posts)?;
    Ok(())
}

/// The purge requests the console sent (with the browser's session cookie).
fn console_purges(seen: Vec<Seen>) -> Vec<Seen> {
    seen.into_iter().filter(|s| s.cookie && s.method == "POST" && s.path.ends_with("/cache/purge")).collect()
}

/// Fails unless successive requests started at least 450 ms apart: the API takes two purges a second.
fn paced_under_the_limit(posts: &[Seen]) -> Result<()> {
    for pair in posts.windows(2) {
        let gap = pair[1].start.duration_since(pair[0].start);
        ensure!(gap >= Duration::from_millis(450), "at most two a second: {gap:?} between {pair:?}");
    }
    Ok(())
}

/// The property the editing steps change, and the TTL field of its first cache rule.
const SHOP: &str = "/demo/properties?name=www-shop";
const TTL: &str = "div[data-section='Cache rules'] tbody tr:nth-child(1) input[aria-label='TTL seconds']";

/// Types `value` (a number) into the TTL field and waits until the change is marked unsaved and kept in the
/// browser (its draft holds the value).
async fn edit_ttl(h: &Harness, value: &str) -> Result<()> {
    h.fill(TTL, value).await?;
    h.wait_for("#unsaved").await?;
    let deadline = std::time::Instant::now() + edge_e2e::WAIT;
    loop {
        let kept = h
            .client
            .execute(
                "const d = JSON.parse(localStorage.getItem('edge-console.draft.demo.www-shop') || 'null');
                 return d && d.config.cache_rules[0].ttl_seconds === Number(arguments[0]);",
                vec![json!(value)],
            )
            .await?;
        if kept == json!(true) {
            return Ok(());
        }
        ensure!(std::time::Instant::now() < deadline, "the draft of TTL {value} is kept in the browser");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Unsaved changes are marked and kept in the browser (offered back after a reload); leaving asks; rollback
/// after a reload saves through the save path without a page load.
async fn safe_property_editing(h: &Harness) -> Result<()> {
    h.goto(SHOP).await?;
    let original = h.value(TTL).await?;
    edit_ttl(h, "111").await?;
    h.click("#save-config").await?;
    h.wait_until("dialog#review", |t| t.contains("Cache rules › ") && t.contains("TTL (s)") && t.contains("111"))
        .await?;
    h.click("#confirm-save").await?;
    h.wait_until("#save-notice", |t| t.starts_with("Saved as version")).await?;
    let saved_as = h.wait_for("tr[data-version]").await?.attr("data-version").await?.context("a version")?;
    // After a reload (a direct link), "Roll back" is offered and works without a page load.
    h.client.refresh().await?;
    h.wait_for("tr[data-version='1']").await?;
    h.client.execute("window.__stays = 42;", vec![]).await?;
    h.click_text("tr[data-version='1'] button", "Roll back to this").await?;
    h.click("dialog[open] button.danger").await?;
    let next: u64 = saved_as.parse::<u64>()? + 1;
    h.wait_for(&format!("tr[data-version='{next}']")).await?;
    h.wait_until("#save-notice", |t| t.starts_with(&format!("Rolled back as version {next}"))).await?;
    ensure!(h.value(TTL).await? == original, "version 1's TTL is back");
    let stayed: Value = h.client.execute("return window.__stays;", vec![]).await?;
    ensure!(stayed == json!(42), "no page load: {stayed}");
    // A draft survives a reload: offered back, restored, then discarded.
    edit_ttl(h, "333").await?;
    // Leaving through the navigation asks first.
    h.click("nav a[href='/demo/tasks']").await?;
    h.wait_until("dialog[open]", |t| t.contains("not saved")).await?;
    h.keys(ESCAPE).await?;
    h.wait_gone("dialog[open]").await?;
    ensure!(h.client.current_url().await?.as_str().ends_with(SHOP), "still on the property");
    h.client.refresh().await?;
    h.wait_for("#draft-offer").await?;
    ensure!(h.value(TTL).await? == original, "the saved version shows until restored");
    h.snapshot("property-draft").await?;
    h.click_text("#draft-offer button", "Restore my changes").await?;
    h.wait_for("#unsaved").await?;
    ensure!(h.value(TTL).await? == "333", "the draft is back");
    h.click("#discard").await?;
    h.wait_gone("#unsaved").await?;
    ensure!(h.value(TTL).await? == original, "discarded");
    h.client.refresh().await?;
    h.wait_for(TTL).await?;
    ensure!(h.count("#draft-offer").await? == 0, "a discarded draft is not offered again");
    Ok(())
}

/// A draft kept in the browser is offered back after the session ends, not only after a reload: the session
/// is revoked while a change is unsaved; saving leads to the login form; after logging in again the draft is
/// offered and restores the change, and once saved it is offered no more.
async fn draft_after_the_session_ends(h: &Harness) -> Result<()> {
    h.goto(SHOP).await?;
    let saved = h.value(TTL).await?;
    let edited = if saved == "444" { "445" } else { "444" };
    edit_ttl(h, edited).await?;
    // The session ends on the server (as when it is ended from another browser).
    let session = h.client.get_named_cookie("authtoken").await?.value().to_string();
    let (status, body) = h.api("admin", "DELETE", &format!("/demo/v1/sessions/{session}"), None).await?;
    ensure!(status == 204, "the browser's session is ended: {status} {body}");
    h.click("#save-config").await?;
    h.click("#confirm-save").await?;
    h.wait_for_path("/login").await?;
    h.wait_until(".notice.info", |t| t.contains("Your session has ended")).await?;
    h.fill("input[name=password]", PASSWORD).await?;
    h.click("button[type=submit]").await?;
    h.wait_for_path(SHOP).await?;
    h.wait_for("#draft-offer").await?;
    ensure!(h.value(TTL).await? == saved, "the saved version shows until the draft is restored");
    h.click_text("#draft-offer button", "Restore my changes").await?;
    h.wait_for("#unsaved").await?;
    ensure!(h.value(TTL).await? == edited, "the draft is back");
    h.click("#save-config").await?;
    h.click("#confirm-save").await?;
    h.wait_until("#save-notice", |t| t.starts_with("Saved as version")).await?;
    h.wait_gone("#unsaved").await?;
    h.client.refresh().await?;
    h.wait_for("#history table").await?;
    ensure!(h.value(TTL).await? == edited, "the draft was saved");
    ensure!(h.count("#draft-offer").await? == 0, "a saved draft is not offered again");
    let kept: Value =
        h.client.execute("return localStorage.getItem('edge-console.draft.demo.www-shop');", vec![]).await?;
    ensure!(kept.is_null(), "nothing is left in the browser: {kept}");
    Ok(())
}

/// More than 10,000 URIs (a file of 10,001) are refused with a message, and nothing is sent; exactly 10,000
/// (pasted) are taken as 20 requests of 500, sent two a second at most.
async fn bulk_purge_cap(h: &Harness) -> Result<()> {
    let uris = |n: usize| (0..n).map(|i| format!("www.shop.example/cap/{i}.html")).collect::<Vec<_>>().join("\n");
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("too-many.txt");
    std::fs::write(&file, uris(10_001))?;
    h.goto("/demo/purge").await?;
    h.seen(true);
    h.wait_for("input[name=uri-file]").await?.send_keys(&file.to_string_lossy()).await?;
    h.wait_for("#purge-file").await?;
    let report = h.wait_until("#purge-report", |t| t.contains("10001 line(s)")).await?;
    ensure!(report.contains("At most 10000 URIs at once: split the list."), "the cap is named: {report}");
    let submit = h.wait_for("#purge-form button[type=submit]").await?;
    ensure!(submit.prop("disabled").await?.as_deref() == Some("true"), "no purge of 10,001");
    // Submitting anyway (as Enter in a field would) asks nothing and sends nothing.
    // (The form's handler runs within requestSubmit: once two frames have passed and nothing is in flight, a
    // dialog or a request it made would be there.)
    h.client.execute("document.querySelector('#purge-form').requestSubmit();", vec![]).await?;
    h.settled().await?;
    ensure!(h.count("dialog[open]").await? == 0, "no confirmation for 10,001");
    let sent: Vec<Seen> = h.seen(true).into_iter().filter(|s| s.method == "POST").collect();
    ensure!(sent.is_empty(), "nothing is sent: {sent:?}");
    // Exactly 10,000, pasted.
    h.click_text("#purge-file button", "Type or paste instead").await?;
    h.wait_for("textarea[name=uris]").await?;
    let began = std::time::Instant::now();
    h.client
        .execute(
            "const t = document.querySelector('textarea[name=uris]'); t.value = arguments[0]; \
             t.dispatchEvent(new Event('input', { bubbles: true }));",
            vec![json!(uris(10_000))],
        )
        .await?;
    h.wait_until("#purge-report", |t| t.contains("10000 line(s), 0 with problems")).await?;
    ensure!(!h.wait_until("#purge-report", |_| true).await?.contains("At most"), "10,000 is within the cap");
    h.click("#purge-form button[type=submit]").await?;
    h.wait_until("dialog[open]", |t| t.contains("10000 URI(s) on 1 host(s), sent as 20 request(s) two a second"))
        .await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_until("#running-purges h3", |t| t.contains("10000 URI(s) in 20 request(s)")).await?;
    ensure!(h.count("#running-purges li.transaction").await? == 20, "twenty requests, each shown");
    // All twenty are taken (each answered with its transaction), paced.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while h
        .count(
            "#running-purges li.transaction[data-status=WAITING], #running-purges li.transaction[data-status=RETRYING]",
        )
        .await?
        > 0
    {
        if std::time::Instant::now() > deadline {
            bail!("every request is sent");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let posts = console_purges(h.seen(true));
    ensure!(posts.iter().filter(|s| s.status.is_some_and(|c| c < 400)).count() == 20, "twenty taken: {posts:?}");
    paced_under_the_limit(&posts)?;
    eprintln!("bulk purge of 10,000 URIs: all 20 requests sent {:.1} s after pasting", began.elapsed().as_secs_f64());
    Ok(())
}

/// Table rows of buttons line up: in the property's tables (the "Remove" column) and its history, every cell of
/// a row spans the row's full height, so the row borders run straight, at a desktop's width and a phone's.
async fn table_rows_line_up(h: &Harness) -> Result<()> {
    let cdp =
        |cmd: &'static str, params: Value| h.chromium("goog/cdp/execute", json!({ "cmd": cmd, "params": params }));
    for width in [1366, 400] {
        cdp(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500 }),
        )
        .await?;
        h.goto("/demo/properties?name=www-shop").await?;
        h.wait_for("div[data-section='Cache rules'] td.actions button").await?;
        h.wait_for("#history tr[data-version]").await?;
        let crooked: Vec<String> = serde_json::from_value(
            h.client
                .execute(
                    r#"return [...document.querySelectorAll("main table.data tbody tr")].flatMap(tr => {
                         const row = tr.getBoundingClientRect();
                         return [...tr.children]
                           .filter(td => { const r = td.getBoundingClientRect();
                             return Math.abs(r.top - row.top) > 0.5 || Math.abs(r.bottom - row.bottom) > 0.5; })
                           .map(td => `${td.className || td.tagName} in ${tr.closest("[data-section], section[id], div[id]")?.dataset.section ?? ""}: ${getComputedStyle(td).display}`);
                       });"#,
                    vec![],
                )
                .await?,
        )?;
        ensure!(crooked.is_empty(), "cells shorter than their row at {width} px: {crooked:?}");
    }
    cdp("Emulation.clearDeviceMetricsOverride", json!({})).await?;
    Ok(())
}

/// A slow server: following a deployment keeps one request in flight and asks less often; a superseded
/// statistics query is cancelled.
async fn polling_a_slow_server(h: &Harness) -> Result<()> {
    h.slow("GET", "/v1/tasks/", Duration::from_millis(2500));
    deploy_to_partners(h, "100.64.40.0/24").await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while h.count("#add-entries .task-progress[data-status=COMPLETED]").await? == 0 {
        if std::time::Instant::now() > deadline {
            bail!("the deployment did not complete");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    h.fast();
    let seen = h.seen(true);
    let polls = |s: &Seen| s.cookie && s.method == "GET" && s.path.contains("/v1/tasks/");
    let n = seen.iter().filter(|s| polls(s)).count();
    ensure!(n >= 1, "the task was followed");
    ensure!(
        most_at_once(&seen, polls) == 1,
        "one request in flight at a time: {:?}",
        seen.iter().filter(|s| polls(s)).collect::<Vec<_>>()
    );
    // A statistics query superseded while it runs is cancelled by the browser.
    h.goto("/demo/stats?range=24h&dims=country&metrics=hits").await?;
    h.wait_for("#time-chart svg").await?;
    h.slow("GET", "/stats/data", Duration::from_millis(3000));
    h.seen(true);
    h.click("button[data-metric=last_mile_bandwidth_bytes]").await?;
    seen_until(h, "the slowed query in flight", |seen| {
        seen.iter().any(|s| s.path.contains("last_mile_bandwidth_bytes") && s.end.is_none())
    })
    .await?;
    h.click("button[data-metric=last_mile_bandwidth_bytes]").await?;
    h.wait_until("#metrics", |_| true).await?;
    let dropped = |s: &Seen| s.path.contains("/stats/data") && s.status.is_none() && s.end.is_some();
    let cancelled = seen_until(h, "a superseded query cancelled", |seen| seen.iter().any(dropped)).await;
    h.fast();
    h.wait_for("#time-chart svg").await?;
    let seen = h.seen(true);
    ensure!(cancelled.is_ok(), "a superseded query was cancelled: {seen:?}");
    Ok(())
}

/// Adds `entry` to the partners' list and returns the id of the deployment task the view then follows (the
/// requests seen so far are forgotten first).
async fn deploy_to_partners(h: &Harness, entry: &str) -> Result<String> {
    h.goto("/demo/lists?list=ip_demo_partners").await?;
    h.wait_for("textarea[name=entries]").await?;
    h.seen(true);
    h.fill("textarea[name=entries]", entry).await?;
    h.click_text("#add-entries button", "Check").await?;
    h.click("#add-entries .report button.primary").await?;
    h.wait_for("#add-entries .task-progress").await?.attr("data-task").await?.context("the task's id")
}

/// How long the server's clock is held back so that a deployment stays queued while its polling is watched.
const HOLD_MS: i64 = 120_000;

/// While the server is slow, the pause between two progress polls of a task grows (half as long again each
/// time, from 0.7 s) up to its cap of 5 s; once the task is done, polling stops.
async fn polling_backs_off(h: &Harness) -> Result<()> {
    h.slow("GET", "/v1/tasks/", Duration::from_millis(1000));
    let task = deploy_to_partners(h, "100.64.41.0/24").await?;
    // The server's clock goes back: the task is queued (not done) until it comes forward again.
    h.advance(-HOLD_MS);
    let polls_of = |seen: Vec<Seen>| -> Vec<Seen> {
        seen.into_iter()
            .filter(|s| s.cookie && s.method == "GET" && s.path.ends_with(&format!("/tasks/{task}")))
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let polls = loop {
        let polls = polls_of(h.seen(false));
        if polls.len() >= 7 && polls.iter().all(|p| p.end.is_some()) {
            break polls;
        }
        if std::time::Instant::now() > deadline {
            bail!("seven polls of the task: {polls:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The pause from one poll's answer to the next poll.
    let pauses: Vec<f64> =
        polls.windows(2).map(|w| w[1].start.duration_since(w[0].end.unwrap_or(w[0].start)).as_secs_f64()).collect();
    h.advance(HOLD_MS);
    h.fast();
    eprintln!("pauses between polls: {pauses:.2?}");
    let expected = [1.05, 1.575, 2.3625, 3.544, 5.0, 5.0];
    for (i, (pause, want)) in pauses.iter().zip(expected).enumerate() {
        ensure!(*pause >= want - 0.1 && *pause <= want + 0.8, "pause {i} is {pause:.2} s, not {want} s: {pauses:?}");
    }
    ensure!(pauses.windows(2).take(4).all(|w| w[1] > w[0] * 1.3), "the pauses grow: {pauses:?}");
    // Done: the view says so and has stopped following the task (its loop has ended: no poll can come).
    h.wait_for("#add-entries .task-progress[data-status=COMPLETED]").await?;
    h.wait_for_attr("#add-entries .task-progress", "data-following", "false").await?;
    let done = polls_of(h.seen(false)).len();
    h.settled().await?;
    let after = polls_of(h.seen(true));
    ensure!(after.len() == done, "no poll after the task is done: {} then {}", done, after.len());
    ensure!(most_at_once(&after, |_| true) == 1, "one poll in flight at a time: {after:?}");
    Ok(())
}

/// Every list view keeps its search, filters and page in the address: a reload and the back button show the
/// same.
async fn address_state(h: &Harness) -> Result<()> {
    h.goto("/demo/users").await?;
    h.fill("input[name=q]", "oper").await?;
    h.click_text("form.search button", "Search").await?;
    h.wait_until("table.users tbody", |t| t.contains("operator") && !t.contains("viewer")).await?;
    ensure!(h.client.current_url().await?.as_str().contains("q=oper"), "the search is in the address");
    h.client.refresh().await?;
    h.wait_until("table.users tbody", |t| t.contains("operator") && !t.contains("viewer")).await?;
    ensure!(h.value("input[name=q]").await? == "oper", "the search field shows it");
    h.client.back().await?;
    h.wait_until("table.users tbody", |t| t.contains("viewer")).await?;
    h.goto("/demo/lists").await?;
    h.select("select[name=list-type]", "GEO").await?;
    h.wait_until("table.lists tbody", |t| !t.contains("Known scanners")).await?;
    h.client.refresh().await?;
    ensure!(h.value("select[name=list-type]").await? == "GEO", "the type filter survives a reload");
    h.goto("/demo/tasks").await?;
    h.select("select[name=status]", "COMPLETED").await?;
    ensure!(h.client.current_url().await?.as_str().contains("status=COMPLETED"), "the task filter is in the address");
    h.client.refresh().await?;
    ensure!(h.value("select[name=status]").await? == "COMPLETED", "after a reload");
    h.goto("/demo/lists?list=ip_demo_scanners").await?;
    h.fill("input[aria-label='Search entries']", "192.0.2").await?;
    h.click_text("form.search button", "Search").await?;
    ensure!(h.client.current_url().await?.as_str().contains("q=192.0.2"), "the entry search is in the address");
    Ok(())
}

/// A file of 50,000 addresses is read, checked and sent in calls of 5,000 without going through the text area,
/// each call with its deployment; the same file can be chosen again.
async fn large_file_into_a_list(h: &Harness) -> Result<()> {
    let (status, list) = h
        .api(
            "admin",
            "POST",
            "/demo/v1/config/networklists",
            Some(json!({"name": "Bulk", "type": "IP", "description": "", "list": []})),
        )
        .await?;
    ensure!(status == 201, "{status} {list}");
    let id = list["id"].as_str().context("an id")?.to_string();
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("addresses.txt");
    let lines: Vec<String> = (0..50_000u32).map(|i| format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255)).collect();
    std::fs::write(&file, lines.join("\n"))?;
    h.goto(&format!("/demo/lists?list={id}")).await?;
    let input = h.wait_for("input[name=entries-file]").await?;
    input.send_keys(&file.to_string_lossy()).await?;
    h.wait_for("#entries-file").await?;
    ensure!(h.count("textarea[name=entries]").await? == 0, "the file is not put into the text area");
    h.wait_until("#add-entries .report", |t| t.contains("50000 valid") && t.contains("sent in 10 calls")).await?;
    h.click("#add-entries .report button.primary").await?;
    h.wait_until_progressing("#add-summary", |t| t.contains("Added 50000 entries")).await?;
    ensure!(h.count("#add-entries li.call[data-status=ok]").await? == 10, "ten calls, each reported");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while h.count("#add-entries li.call .task-progress[data-status=COMPLETED]").await? < 10 {
        if std::time::Instant::now() > deadline {
            bail!("every call's deployment completes");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // The same file again: read again (and all already there).
    let input = h.wait_for("input[name=entries-file]").await?;
    input.send_keys(&file.to_string_lossy()).await?;
    h.wait_until("#add-entries .report", |t| t.contains("50000 valid")).await?;
    Ok(())
}

/// An administrator cannot delete or demote themselves from the users list.
async fn users_own_row(h: &Harness) -> Result<()> {
    h.goto("/demo/users").await?;
    let row = h.wait_until("tr[data-username=admin]", |t| t.contains("(you)")).await?;
    ensure!(!row.contains("Delete"), "no Delete on one's own row: {row}");
    h.click_text("tr[data-username=admin] button", "Edit").await?;
    let disabled = h.wait_for("dialog[open] select[name=role]").await?.prop("disabled").await?;
    ensure!(disabled.as_deref() == Some("true"), "one's own role is not changed here");
    h.keys(ESCAPE).await?;
    h.wait_gone("dialog[open]").await?;
    Ok(())
}

/// Dark colours follow the system's choice (and stay accessible); at 400 px no view scrolls sideways.
async fn dark_mode_and_phone_width(h: &Harness) -> Result<()> {
    let cdp =
        |cmd: &'static str, params: Value| h.chromium("goog/cdp/execute", json!({ "cmd": cmd, "params": params }));
    cdp("Emulation.setEmulatedMedia", json!({ "features": [{ "name": "prefers-color-scheme", "value": "dark" }] }))
        .await?;
    for path in ["/demo/stats", "/demo/security", "/demo/properties?name=www-shop", "/demo/me"] {
        h.goto(path).await?;
        h.wait_for("main h1").await?;
        h.settled().await?;
        let bg: String = serde_json::from_value(
            h.client.execute("return getComputedStyle(document.documentElement).backgroundColor;", vec![]).await?,
        )?;
        ensure!(bg == "rgb(15, 20, 27)", "{path} is dark: {bg}");
        h.axe(&format!("{path} (dark)")).await?;
        if path == "/demo/stats" {
            h.wait_for("#time-chart svg").await?;
            h.snapshot("statistics-dark").await?;
        }
    }
    cdp("Emulation.setEmulatedMedia", json!({ "features": [{ "name": "prefers-color-scheme", "value": "light" }] }))
        .await?;
    cdp(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 400, "height": 860, "deviceScaleFactor": 1, "mobile": true }),
    )
    .await?;
    let mut wide = Vec::new();
    for (path, ready) in VIEWS {
        h.open(path, ready).await.context("at 400 px")?;
        h.settled().await?;
        let width: i64 = serde_json::from_value(
            h.client
                .execute("return Math.max(document.documentElement.scrollWidth, document.body.scrollWidth);", vec![])
                .await?,
        )?;
        if width > 400 {
            wide.push(format!("{path}: {width} px"));
        }
        if path == "/demo/stats" {
            h.snapshot("statistics-phone").await?;
        }
    }
    cdp("Emulation.clearDeviceMetricsOverride", json!({})).await?;
    ensure!(wide.is_empty(), "views wider than 400 px: {wide:?}");
    Ok(())
}

/// My account lists the user's own sessions; ending another one ends it. Two minutes before the session
/// ends a notice offers to stay, and staying keeps it alive with the expiry the server answers.
async fn own_sessions_and_session_notice(h: &mut Harness) -> Result<()> {
    let (status, other) = h.api("admin", "POST", "/demo/v1/sessions", None).await?;
    ensure!(status == 201, "another session: {status}");
    let other_id = other["id"].as_str().context("its id")?.to_string();
    h.goto("/demo/me").await?;
    h.wait_for("#sessions tr[data-current=true]").await?;
    let rows = h.count("#sessions tbody tr").await?;
    ensure!(rows >= 2, "this session and the other: {rows}");
    h.snapshot("sessions").await?;
    h.click("#sessions tr[data-current=false] button").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_until("#sessions tbody", |_| true).await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while h.count("#sessions tbody tr").await? != rows - 1 {
        if std::time::Instant::now() > deadline {
            bail!("the ended session leaves the list");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, _) = h.api("admin", "GET", &format!("/demo/v1/sessions/{other_id}"), None).await?;
    ensure!(status == 404, "the other session is gone: {status}");
    // 28.5 minutes later (the server's clock and the page's), with no activity: the notice.
    let later = 28 * 60 * 1000 + 30_000;
    h.client.execute(&format!("const now = Date.now.bind(Date); Date.now = () => now() + {later};"), vec![]).await?;
    h.advance(later);
    let notice = h.wait_until("#session-notice", |t| t.contains("Your session ends in")).await?;
    ensure!(notice.contains("1:") || notice.contains("0:"), "{notice}");
    h.snapshot("session-notice").await?;
    h.click_text("#session-notice button", "Stay logged in").await?;
    h.wait_gone("#session-notice").await?;
    h.wait_for_text(".topbar .user", "admin").await?;
    Ok(())
}

/// An API time (`YYYY-MM-DDTHH:MM:SS`) `minutes` after `utc`.
fn api_time(utc: &str, minutes: i64) -> Result<String> {
    Ok(shifted(utc, minutes)?.replace(' ', "T"))
}

/// The default view (last 24 hours by country at 5 minutes) with far more rows than one answer holds (2,500):
/// the chart still reaches the end of the range, its tooltip's values are the API's, and what lies beyond the
/// top values is "other", drawn in grey.
async fn whole_range_chart_with_other(h: &Harness) -> Result<()> {
    // 20 more countries in every 5 minutes of the last day: about 8,000 rows by country and time. The range the
    // console picks ends with the 5 minutes it is in: should a boundary pass between the records and the view,
    // the new 5 minutes get their records too and the view is loaded again.
    let mut last_slot = ingest_testland(h, None).await?;
    let mut end = None;
    for _ in 0..3 {
        h.goto("/demo/stats").await?;
        h.wait_for("#time-chart svg").await?;
        let range_end = overview_end(h).await?;
        if range_end - 300_000 <= last_slot {
            end = Some(range_end);
            break;
        }
        last_slot = ingest_testland(h, Some(last_slot + 300_000)).await?;
    }
    let end = end.context("the view's range ends with records")?;
    let card = h.wait_for(".chart-card").await?.text().await?;
    ensure!(!card.contains("2,500 rows"), "the chart is not cut short: {card}");
    // The last point is the last 5 minutes of the range.
    h.click("#time-chart").await?;
    h.wait_for("#time-chart .tooltip").await?;
    h.keys(edge_e2e::END).await?;
    let time = h.wait_for("#time-chart .tooltip").await?.attr("data-time").await?.context("the tooltip's time")?;
    let last = chrono_like(&time)? * 1000;
    ensure!(end - last <= 300_000 && last < end, "the last point {time} is within 5 minutes of the range's end");
    // One answer of the view's query (2,500 rows from the start) ends hours before that.
    let whole = format!(
        "/demo/v1/stats/data?starttime={}&endtime={}&granularity=5minute&dimensions=country&metrics=hits&sortby=starttime&limit=2500",
        api_time(&time, -24 * 60 + 5)?,
        api_time(&time, 5)?
    );
    let (status, one) = h.api("admin", "GET", &whole, None).await?;
    let first_answer_ends =
        one["rows"].as_array().and_then(|r| r.last()).and_then(|r| r[0].as_str()).unwrap_or_default();
    ensure!(
        status == 200
            && one["total_results"].as_u64() > Some(2500)
            && first_answer_ends < api_time(&time, -60)?.as_str(),
        "more rows than one answer: {status} {} rows, the first answer ends at {first_answer_ends}",
        one["total_results"]
    );
    // Its values are the API's: each top country's, and "other" is all the rest.
    let query = format!(
        "/demo/v1/stats/data?starttime={time}&endtime={}&granularity=5minute&dimensions=country&metrics=hits&limit=2500",
        api_time(&time, 5)?
    );
    let (status, api) = h.api("admin", "GET", &query, None).await?;
    ensure!(status == 200, "{status} {api}");
    let rows: Vec<(String, f64)> = api["rows"]
        .as_array()
        .context("rows")?
        .iter()
        .map(|r| (r[2].as_str().unwrap_or_default().to_string(), r[3].as_f64().unwrap_or_default()))
        .collect();
    ensure!(rows.len() > 7, "more countries than series at {time}: {rows:?}");
    let values = tooltip_values(h).await?;
    let named: Vec<&(String, f64)> = values.iter().filter(|(s, _)| s != "other").collect();
    ensure!(named.len() == 6 && values.len() == 7, "six top countries and other: {values:?}");
    for (series, value) in &named {
        let api = rows.iter().find(|(c, _)| c == series).map_or(0.0, |(_, v)| *v);
        ensure!(api == *value, "{series} at {time}: tooltip {value}, API {api}");
    }
    let rest: f64 = rows.iter().filter(|(c, _)| !named.iter().any(|(s, _)| s == c)).map(|(_, v)| v).sum();
    let other = values.iter().find(|(s, _)| s == "other").map_or(0.0, |(_, v)| *v);
    ensure!(other == rest && rest > 0.0, "other at {time}: tooltip {other}, API {rest}");
    // "other" is grey, in the legend and in the chart (a line, and the dashes of the step into the partial
    // bucket).
    let grey: Value = h
        .client
        .execute(
            r##"const item = [...document.querySelectorAll("#time-chart + ul.legend button.legend-item")]
                 .find(b => b.textContent.trim() === "other");
               return [item ? getComputedStyle(item.querySelector(".swatch")).backgroundColor : null,
                 document.querySelectorAll('#time-chart svg polyline[stroke="#7F8C8D"]').length > 0];"##,
            vec![],
        )
        .await?;
    ensure!(grey == json!(["rgb(127, 140, 141)", true]), "other in grey (swatch, line): {grey}");
    // The top values list ten countries, the chart names six.
    ensure!(h.count("#top-chart li").await? == 10, "ten top values");
    h.snapshot("statistics-other").await?;
    Ok(())
}

/// The chart is as wide as its card as the window changes; the legend hides and shows a series and its ⊕
/// adds the value as a filter; Back restores the view without it (the address is the state).
async fn chart_width_legend_and_back(h: &Harness) -> Result<()> {
    h.goto("/demo/stats?range=24h&dims=country&metrics=hits").await?;
    h.wait_for("#time-chart svg").await?;
    let widths = || async {
        let v = h
            .client
            .execute(
                r##"const svg = document.querySelector("#time-chart svg");
                   return [Number(svg.getAttribute("width")), svg.parentElement.clientWidth,
                     document.querySelector(".chart-card").clientWidth];"##,
                vec![],
            )
            .await?;
        anyhow::Ok(serde_json::from_value::<(i64, i64, i64)>(v)?)
    };
    let (wide, box_wide, card_wide) = widths().await?;
    ensure!(wide == box_wide && wide > card_wide / 2, "the chart fills its card: {wide} in {box_wide} ({card_wide})");
    h.client.set_window_size(800, 900).await?;
    let mut narrow = (0, 0, 0);
    for _ in 0..50 {
        narrow = widths().await?;
        if narrow.0 < wide - 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(narrow.0 < wide - 200 && narrow.0 == narrow.1, "narrower with the window: {wide} then {narrow:?}");
    h.client.set_window_size(1366, 900).await?;
    for _ in 0..50 {
        if widths().await?.0 == wide {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(widths().await?.0 == wide, "as wide as before again");
    // The legend hides a series and shows it again.
    let lines = || async {
        let n =
            // Series drawn, by colour: a series may be several lines (runs between gaps, the dashed step into
            // the partial bucket).
            h.client
                .execute(
                    "return new Set([...document.querySelectorAll('#time-chart svg polyline')].map(l => l.getAttribute('stroke'))).size;",
                    vec![],
                )
                .await?;
        anyhow::Ok(n.as_u64().unwrap_or_default())
    };
    let all = lines().await?;
    let first = "#time-chart + ul.legend li:first-child button.legend-item";
    h.click(first).await?;
    // The chart is drawn in the animation frame after the change (at its measured width): a moment later.
    let lines_become = |n: u64| async move {
        for _ in 0..50 {
            if lines().await? == n {
                return anyhow::Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        anyhow::Ok(false)
    };
    h.wait_for_attr(first, "aria-pressed", "false").await?;
    ensure!(lines_become(all - 1).await?, "one line fewer");
    h.click(first).await?;
    h.wait_for_attr(first, "aria-pressed", "true").await?;
    ensure!(lines_become(all).await?, "the line is back");
    // Its ⊕ filters to the value; Back brings the unfiltered view back.
    let value = h.wait_for(first).await?.text().await?.trim().to_string();
    let kpis = h.wait_for("#kpis").await?.text().await?;
    h.click("#time-chart + ul.legend li:first-child button.filter").await?;
    h.wait_until("#filters", |t| t.contains(&value)).await?;
    ensure!(h.client.current_url().await?.as_str().contains("filters=country"), "the filter is in the address");
    wait_count(h, "#time-chart + ul.legend li", |n| n == 1).await?;
    h.wait_until(".stats-table tbody", |t| t.lines().all(|l| l.contains(&value))).await?;
    h.wait_until("#kpis", |t| t != kpis).await?;
    h.client.back().await?;
    h.wait_until("#filters", |t| !t.contains(&value)).await?;
    ensure!(!h.client.current_url().await?.as_str().contains("filters="), "no filter in the address after Back");
    ensure!(h.count("#filters .filter-chip").await? == 0, "no filter chip after Back");
    h.wait_until(".stats-table tbody", |t| t.lines().any(|l| !l.contains(&value))).await?;
    wait_count(h, "#time-chart + ul.legend li", |n| n > 1).await?;
    h.wait_until("#kpis", |t| t == kpis).await?;
    // Back before the filtered view has loaded (a slow server): the unfiltered view wins.
    h.slow("GET", "/stats/data", Duration::from_millis(1500));
    h.seen(true);
    h.click("#time-chart + ul.legend li:first-child button.filter").await?;
    h.wait_until("#filters", |t| t.contains(&value)).await?;
    h.client.back().await?;
    h.wait_until("#filters", |t| !t.contains(&value)).await?;
    // Every read still in flight (the filtered ones not cancelled, the unfiltered) answered and shown.
    h.settled().await?;
    h.fast();
    let filtered = h.seen(true).into_iter().filter(|s| s.path.contains("/stats/data") && s.path.contains("filters="));
    ensure!(filtered.count() > 0, "the filtered view was being read when Back came");
    ensure!(!h.client.current_url().await?.as_str().contains("filters="), "no filter in the address after Back");
    h.wait_until(".stats-table tbody", |t| t.lines().any(|l| !l.contains(&value))).await?;
    wait_count(h, "#time-chart + ul.legend li", |n| n > 1).await?;
    h.wait_until("#kpis", |t| t == kpis).await?;
    // The filter builder's own filter, and Back.
    h.fill("#filters input[name=filter-value]", &value).await?;
    h.click("#filters form button[type=submit]").await?;
    h.wait_until("#filters .filter-chip", |t| t.contains(&value)).await?;
    h.client.back().await?;
    h.wait_until("#filters", |t| !t.contains(&format!("is {value}"))).await?;
    ensure!(h.count("#filters .filter-chip").await? == 0, "no filter chip after Back");
    h.wait_until(".stats-table tbody", |t| t.lines().any(|l| !l.contains(&value))).await?;
    Ok(())
}

/// Waits until the number of elements matching `css` passes `ok`.
async fn wait_count(h: &Harness, css: &str, ok: impl Fn(usize) -> bool) -> Result<usize> {
    for _ in 0..100 {
        let n = h.count(css).await?;
        if ok(n) {
            return Ok(n);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{css}: {} element(s)", h.count(css).await?)
}

/// From a WAF top country to its events; from an event to "Add to network list" with its country, followed to
/// COMPLETED, and the country in the list.
async fn drill_down_from_a_country_and_an_event(h: &Harness) -> Result<()> {
    h.goto("/demo/security?waf=country").await?;
    h.wait_for("#waf-top li button").await?;
    let values: Vec<String> = serde_json::from_value(
        h.client
            .execute("return [...document.querySelectorAll('#waf-top li')].map(li => li.dataset.value);", vec![])
            .await?,
    )?;
    let country = values
        .iter()
        .find(|c| !["KP", "IR", "SY", "CU"].contains(&c.as_str()) && !c.is_empty())
        .context("a country outside the embargo list")?
        .clone();
    h.click(&format!("#waf-top li[data-value='{country}'] button")).await?;
    h.click_text(".picked button", "Show events").await?;
    h.wait_until("#events table tbody", |t| {
        !t.is_empty() && t.lines().filter(|l| !l.contains("Add to list")).all(|l| l.contains(&country))
    })
    .await?;
    ensure!(
        h.client.current_url().await?.as_str().contains("filters=client_country_code"),
        "the filter is in the address"
    );
    h.click("#events tbody tr:first-child button.add-to-list").await?;
    h.wait_for("dialog#add-to-list[open] input[name=value]").await?;
    let label = h.wait_for("dialog#add-to-list fieldset.choices label:nth-of-type(2)").await?.text().await?;
    ensure!(label.contains(&country) && label.contains("country"), "the event's country is offered: {label}");
    h.click("dialog#add-to-list fieldset.choices label:nth-of-type(2) input").await?;
    h.wait_for("dialog#add-to-list select[name=list] option[value=geo_demo_embargo]").await?;
    h.select("dialog#add-to-list select[name=list]", "geo_demo_embargo").await?;
    h.click("#confirm-add").await?;
    h.wait_for("dialog#add-to-list .task-progress[data-status=COMPLETED]").await?;
    h.click_text("dialog#add-to-list button", "Close").await?;
    h.wait_gone("dialog[open]").await?;
    h.goto(&format!("/demo/lists?list=geo_demo_embargo&q={country}")).await?;
    h.wait_for(&format!("tr[data-entry='{country}']")).await?;
    Ok(())
}

/// The events' "Actions" header lines up with its column: the text of "Add to list…" ends where the header's
/// does, and starts on the line of the row's other values; the statistics chart (with "other") fits the
/// screen (light and dark, desktop and phone width).
async fn events_actions_line_up(h: &Harness) -> Result<()> {
    let cdp =
        |cmd: &'static str, params: Value| h.chromium("goog/cdp/execute", json!({ "cmd": cmd, "params": params }));
    for scheme in ["light", "dark"] {
        cdp("Emulation.setEmulatedMedia", json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }))
            .await?;
        for width in [1366, 400] {
            cdp(
                "Emulation.setDeviceMetricsOverride",
                json!({ "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 500 }),
            )
            .await?;
            h.goto("/demo/security").await?;
            h.wait_for("#events td.actions button.add-to-list").await?;
            let offsets: Vec<f64> = serde_json::from_value(
                h.client
                    .execute(
                        r##"document.querySelector("#events").scrollIntoView();
                           const text = e => { const r = document.createRange(); r.selectNodeContents(e);
                             return r.getBoundingClientRect(); };
                           const th = text(document.querySelector("#events thead th.actions"));
                           const row = document.querySelector("#events tbody tr");
                           const add = text(row.querySelector("td.actions button"));
                           const value = text(row.querySelector("td button.cell-filter"));
                           const cells = [...document.querySelectorAll("#events tbody tr")].map(tr => tr.children.length);
                           const heads = document.querySelectorAll("#events thead th").length;
                           return [add.right - th.right, add.top - value.top, cells.filter(n => n !== heads).length];"##,
                        vec![],
                    )
                    .await?,
            )?;
            ensure!(
                offsets.len() == 3 && offsets.iter().all(|d| d.abs() <= 1.0),
                "{scheme} at {width} px: Add to list… off the Actions header (right edge, top, rows short) {offsets:?}"
            );
            h.snapshot(&format!("security-events-{scheme}-{width}")).await?;
            // The chart with "other", as wide as its card and no wider than the screen.
            h.goto("/demo/stats").await?;
            h.wait_for("#time-chart svg").await?;
            let fits: bool = serde_json::from_value(
                h.client
                    .execute(
                        r##"document.querySelector(".chart-card").scrollIntoView();
                           return document.documentElement.scrollWidth <= window.innerWidth;"##,
                        vec![],
                    )
                    .await?,
            )?;
            ensure!(fits, "{scheme} at {width} px: the statistics view scrolls sideways");
            h.snapshot(&format!("statistics-chart-{scheme}-{width}")).await?;
        }
    }
    cdp("Emulation.setEmulatedMedia", json!({ "features": [{ "name": "prefers-color-scheme", "value": "light" }] }))
        .await?;
    cdp("Emulation.clearDeviceMetricsOverride", json!({})).await?;
    Ok(())
}

/// Ingests, for 20 countries "Testland 00" to "Testland 19", a record in every 5 minutes from `first` (ms; the
/// start of the last day when None) to the 5 minutes the browser's clock is in; returns the start of those.
async fn ingest_testland(h: &Harness, first: Option<i64>) -> Result<i64> {
    let answer = h
        .client
        .execute(
            r##"const now = Date.now(), step = 300000, last = now - now % step, lines = [];
               const first = arguments[0] === null ? last - 288 * step : arguments[0];
               for (let t = first; t <= last; t += step) {
                 for (let i = 0; i < 20; i++) {
                   const timestamp = new Date(Math.min(t + i * 1000, now)).toISOString().slice(0, 19);
                   lines.push(JSON.stringify({ timestamp, domain: "www.shop.example", property: "www-shop",
                     country: "Testland " + String(i).padStart(2, "0"), http_status_code: 200, scheme: 2,
                     request_url: "/", hits: 1 + i }));
                 }
               }
               const r = await fetch("/demo/v1/ingest/accesslogs",
                 { method: "POST", headers: { "Content-Type": "application/x-ndjson" }, body: lines.join("\n") });
               return [r.status, await r.json(), lines.length, last];"##,
            vec![json!(first)],
        )
        .await?;
    ensure!(answer[0] == 200 && answer[1]["accepted"] == answer[2], "ingested: {answer}");
    answer[3].as_i64().context("the last 5 minutes ingested")
}

/// The end of the range the statistics view shows (`#overview[data-end]`), in ms.
async fn overview_end(h: &Harness) -> Result<i64> {
    let deadline = std::time::Instant::now() + edge_e2e::WAIT;
    loop {
        let end = h.wait_for("#overview").await?.attr("data-end").await?.unwrap_or_default();
        if !end.is_empty() {
            return Ok(chrono_like(&end)? * 1000);
        }
        ensure!(std::time::Instant::now() < deadline, "the overview names its range");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the requests seen so far satisfy `ok` (looked at every 50 ms, for at most [`edge_e2e::WAIT`]).
async fn seen_until(h: &Harness, what: &str, ok: impl Fn(&[Seen]) -> bool) -> Result<()> {
    let deadline = std::time::Instant::now() + edge_e2e::WAIT;
    while !ok(&h.seen(false)) {
        ensure!(std::time::Instant::now() < deadline, "{what}: not within {:?}", edge_e2e::WAIT);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
