//! Every view loaded cold again and again — a new browser profile each time, logged in by its session cookie —
//! at desktop width and at 412 px with the CPU slowed 4× (as Lighthouse's mobile run does), failing on any
//! error a page logs (a wasm panic, an uncaught exception). Work that outlives its view (a read answered after
//! the view was replaced) shows here first: on a fast machine it rarely loses the race, on a slow one often.
//!
//! `EDGE_E2E_SOAK_LOADS` sets the cold loads per view and width (default 3; 20 to measure).

use std::time::Duration;

use anyhow::Result;
use edge_e2e::{Harness, VIEWS};

/// (label, width in CSS pixels or the window's own, CPU slow-down)
const SHAPES: [(&str, Option<u32>, u32); 2] = [("1366 px", None, 1), ("412 px, CPU 4x slower", Some(412), 4)];

/// How long a page is watched after it shows it has loaded: the reads that were still in flight finish.
const SETTLE: Duration = Duration::from_millis(1500);

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_view_loads_cold_without_an_error_at_both_widths() -> Result<()> {
    let mut h = Harness::start().await?;
    let session = h.session_for("admin").await?;
    let (n, mut failed, mut total) = (loads(), Vec::new(), 0);
    let started = std::time::Instant::now();
    for (shape, width, cpu) in SHAPES {
        for (path, ready) in VIEWS.into_iter().filter(|(p, _)| chosen(p)) {
            for i in 0..n {
                total += 1;
                let b = h.second_browser().await?;
                b.use_session(&session).await?;
                if std::env::var_os("EDGE_E2E_DEEP_STACKS").is_some() {
                    b.cdp(
                        "Page.addScriptToEvaluateOnNewDocument",
                        serde_json::json!({"source": "Error.stackTraceLimit = 200;"}),
                    )
                    .await?;
                }
                b.throttle_cpu(cpu).await?;
                b.emulate_width(width).await?;
                let loaded = b.open(path, ready).await;
                tokio::time::sleep(SETTLE).await;
                let mut errors = b.page_errors().await?;
                if let Err(e) = loaded {
                    errors.push(format!("{e:#}"));
                }
                if !errors.is_empty() {
                    failed.push(format!("{path} at {shape}, load {}: {}", i + 1, errors.join(" | ")));
                }
                b.client.close().await?;
            }
        }
    }
    println!(
        "soak: {} of {total} cold loads with an error ({n} per view and width, {} s)",
        failed.len(),
        started.elapsed().as_secs()
    );
    h.stop().await?;
    anyhow::ensure!(failed.is_empty(), "{} of {total} cold loads failed:\n{}", failed.len(), failed.join("\n"));
    Ok(())
}
