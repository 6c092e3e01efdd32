//! `cargo xtask perf-console`: how fast the console comes up in headless Chromium through the real server —
//! the time to the login form (from the start of navigation) and from clicking "Log in" to the first chart —
//! on loopback and on an emulated 10 Mbit/s link with 40 ms latency (DevTools network emulation), each with a
//! cold cache (a new browser profile per run). Prints the medians of a few runs; not a test.

use std::time::Duration;

use anyhow::{Context, Result};
use edge_e2e::{Browser, Harness, PASSWORD};

/// Runs per link; the median is reported.
const RUNS: usize = 5;

struct Link {
    name: &'static str,
    /// (latency in ms, bits per second); none for loopback as it is.
    emulated: Option<(u32, u64)>,
}

const LINKS: [Link; 2] = [
    Link { name: "loopback", emulated: None },
    Link { name: "10 Mbit/s, 40 ms (emulated)", emulated: Some((40, 10_000_000)) },
];

#[tokio::main]
async fn main() -> Result<()> {
    let mut h = Harness::start().await?;
    println!("| link | login form (ms) | login to first chart (ms) | wasm encoding |");
    println!("|---|---|---|---|");
    let mut over = Vec::new();
    for link in LINKS {
        let (mut form, mut chart) = (Vec::new(), Vec::new());
        let mut encoding = String::new();
        for _ in 0..RUNS {
            // A new session: a new profile, so nothing is cached.
            let b = h.second_browser().await?;
            let (f, c, e) = measure(&b, &link).await.with_context(|| format!("measuring on {}", link.name))?;
            form.push(f);
            chart.push(c);
            encoding = e;
            b.client.clone().close().await?;
        }
        let (f, c) = (median(&mut form), median(&mut chart));
        println!("| {} | {f:.0} | {c:.0} | {encoding} |", link.name);
        if link.emulated.is_some() && (f > 1000.0 || c > 1500.0) {
            over.push(link.name);
        }
    }
    println!(
        "perf-console: medians of {RUNS} runs, cold cache; goals on the emulated link: login form < 1000 ms, first chart < 1500 ms"
    );
    h.stop().await?;
    if !over.is_empty() {
        anyhow::bail!("over the goal on: {}", over.join(", "));
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One cold load: the login form's time, the time from clicking "Log in" to the first chart, and how the
/// wasm came over the wire.
async fn measure(b: &Browser, link: &Link) -> Result<(f64, f64, String)> {
    b.accept_brotli().await?;
    if let Some((latency, bits)) = link.emulated {
        b.emulate_network(latency, bits).await?;
    }
    b.goto("/login").await?;
    b.wait_for("input[name=customer]").await?;
    let form = mark(b, "edge:login-form").await?;
    b.fill("input[name=customer]", "demo").await?;
    b.fill("input[name=username]", "admin").await?;
    b.fill("input[name=password]", PASSWORD).await?;
    let clicked: f64 = serde_json::from_value(
        b.client
            .execute(
                "const t = performance.timeOrigin + performance.now(); \
                 document.querySelector('button[type=submit]').click(); return t;",
                vec![],
            )
            .await?,
    )?;
    b.wait_for_path("/demo/stats").await?;
    b.wait_for("#time-chart svg").await?;
    let chart = mark(b, "edge:first-chart").await? - clicked;
    let encoding: String = serde_json::from_value(
        b.client
            .execute(
                "const e = performance.getEntriesByType('resource').find(r => r.name.endsWith('.wasm'));
                 return e ? `${Math.round(e.encodedBodySize / 1024)} KB of ${Math.round(e.decodedBodySize / 1024)} KB` : '';",
                vec![],
            )
            .await?,
    )?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok((form, chart, encoding))
}

/// When the page set performance mark `name`: relative to navigation start for the login form, as an absolute
/// time for the chart (it is set in another document than the click).
async fn mark(b: &Browser, name: &str) -> Result<f64> {
    let script = "const [name] = arguments; const m = performance.getEntriesByName(name)[0]; \
                  if (!m) return null; \
                  return name === 'edge:login-form' ? m.startTime : performance.timeOrigin + m.startTime;";
    let value = b.client.execute(script, vec![serde_json::json!(name)]).await?;
    serde_json::from_value::<Option<f64>>(value)?.with_context(|| format!("the page set no mark {name}"))
}
