//! Every view loaded cold again and again — a new browser profile each time, logged in by its session cookie —
//! at desktop width and at 412 px with the CPU slowed 4× (as Lighthouse's mobile run does), failing on any
//! error a page logs (a wasm panic, an uncaught exception). Work that outlives its view (a read answered after
//! the view was replaced) shows here first: on a fast machine it rarely loses the race, on a slow one often.
//! Each load is watched until the console has no request in flight ([`edge_e2e::Browser::settled`]): the reads
//! still under way when the view showed have been answered and shown. [`AT_ONCE`] browsers load at once (each
//! its own profile and throttling), so the waits of one overlap the work of the others.
//!
//! `EDGE_E2E_SOAK_LOADS` sets the cold loads per view and width (default 3; 20 to measure).

use anyhow::Result;
use edge_e2e::{Browser, Harness, VIEWS};
use futures::StreamExt;

/// (label, width in CSS pixels or the window's own, CPU slow-down)
const SHAPES: [(&str, Option<u32>, u32); 2] = [("1366 px", None, 1), ("412 px, CPU 4x slower", Some(412), 4)];

/// Cold loads under way at once, each in a browser of its own.
const AT_ONCE: usize = 4;

/// The views to load: `EDGE_E2E_SOAK_VIEWS` (paths containing one of its comma-separated parts), or all.
fn chosen(path: &str) -> bool {
    match std::env::var("EDGE_E2E_SOAK_VIEWS") {
        Ok(v) if !v.is_empty() => v.split(',').any(|p| path.contains(p)),
        _ => true,
    }
}

fn loads() -> usize {
    std::env::var("EDGE_E2E_SOAK_LOADS").ok().and_then(|n| n.parse().ok()).unwrap_or(3)
}

/// One cold load of `path` in a new browser: the errors its page logged (and a load that did not finish).
async fn cold_load(
    h: &Harness,
    session: &str,
    path: &str,
    ready: &str,
    width: Option<u32>,
    cpu: u32,
) -> Result<Vec<String>> {
    let b: Browser = h.fresh_browser().await?;
    b.use_session(session).await?;
    if std::env::var_os("EDGE_E2E_DEEP_STACKS").is_some() {
        b.cdp("Page.addScriptToEvaluateOnNewDocument", serde_json::json!({"source": "Error.stackTraceLimit = 200;"}))
            .await?;
    }
    b.throttle_cpu(cpu).await?;
    b.emulate_width(width).await?;
    let loaded = b.open(path, ready).await;
    // Once it shows it has loaded, the page is watched until every read it started has been answered and
    // shown: an error of work that outlives the load is logged by then.
    let settled = match loaded {
        Ok(_) => b.settled().await,
        Err(e) => Err(e),
    };
    let mut errors = b.page_errors().await?;
    if let Err(e) = settled {
        errors.push(format!("{e:#}"));
    }
    b.client.close().await?;
    Ok(errors)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_view_loads_cold_without_an_error_at_both_widths() -> Result<()> {
    let h = Harness::start().await?;
    let session = h.session_for("admin").await?;
    let n = loads();
    let started = std::time::Instant::now();
    let jobs: Vec<_> = SHAPES
        .into_iter()
        .flat_map(|shape| VIEWS.into_iter().filter(|(p, _)| chosen(p)).map(move |view| (shape, view)))
        .flat_map(|job| (1..=n).map(move |i| (job, i)))
        .collect();
    let total = jobs.len();
    let (hr, session) = (&h, session.as_str());
    let outcomes: Vec<(String, Result<Vec<String>>)> = futures::stream::iter(jobs)
        .map(|(((shape, width, cpu), (path, ready)), i)| async move {
            (format!("{path} at {shape}, load {i}"), cold_load(hr, session, path, ready, width, cpu).await)
        })
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    let mut failed = Vec::new();
    for (what, outcome) in outcomes {
        match outcome {
            Ok(errors) if errors.is_empty() => {}
            Ok(errors) => failed.push(format!("{what}: {}", errors.join(" | "))),
            Err(e) => failed.push(format!("{what}: {e:#}")),
        }
    }
    println!(
        "soak: {} of {total} cold loads with an error ({n} per view and width, {AT_ONCE} at once, {} s)",
        failed.len(),
        started.elapsed().as_secs()
    );
    h.stop().await?;
    anyhow::ensure!(failed.is_empty(), "{} of {total} cold loads failed:\n{}", failed.len(), failed.join("\n"));
    Ok(())
}
