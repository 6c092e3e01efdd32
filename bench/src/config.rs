//! `edge-bench config`: how the work of a property configuration update grows with its nodes — reading the
//! incoming document, matching its nodes to the stored ones and checking it, and the diff of two versions. With
//! matching by hash maps the time per node stays flat from a few hundred nodes to the cap; pairwise matching
//! made it grow with the number of nodes.

use std::time::Instant;

use anyhow::Result;
use edge_api::config::{MAX_NODES, PropertyConfig, diff};
use edge_server::config::{Stamp, apply_update, parse, stamp_new};
use serde_json::{Value, json};

use crate::Args;

const STAMP: Stamp = Stamp { author: "bench", now: "2026-01-01T00:00:00.000Z" };

/// A stored configuration of `n` nodes: half host patterns, half cache rules.
fn stored(n: usize) -> PropertyConfig {
    let hosts: Vec<Value> =
        (0..n / 2).map(|i| json!({"id": format!("h{i}"), "pattern": format!("h{i}.shop.example")})).collect();
    let rules: Vec<Value> = (0..n - n / 2)
        .map(|i| json!({"id": format!("c{i}"), "path_pattern": format!("/p{i}/*"), "ttl_seconds": 60}))
        .collect();
    let mut config: PropertyConfig =
        serde_json::from_value(json!({"name": "shop", "host_patterns": hosts, "cache_rules": rules}))
            .unwrap_or_else(|e| panic!("{e}"));
    stamp_new(&mut config, &STAMP);
    config
}

/// The update a console sends back: every list reversed, every other node without its id (matched by its
/// read-only part), every cache rule's TTL changed.
fn update(stored: &PropertyConfig) -> Value {
    let mut v = serde_json::to_value(stored).unwrap_or_default();
    for list in ["host_patterns", "cache_rules"] {
        if let Some(items) = v[list].as_array_mut() {
            items.reverse();
            for (i, item) in items.iter_mut().enumerate() {
                if i % 2 == 0 {
                    item["id"] = json!("");
                }
                if list == "cache_rules" {
                    item["ttl_seconds"] = json!(120);
                }
            }
        }
    }
    v
}

/// The median of `runs` timings of `f`, in milliseconds.
fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

pub fn run(args: &Args) -> Result<()> {
    let runs = args.number::<usize>("--runs")?.unwrap_or(9);
    println!("| nodes | update: read, match, check (ms) | per node (µs) | diff of two versions (ms) | per node (µs) |");
    println!("|---|---|---|---|---|");
    let mut per_node = Vec::new();
    for n in [MAX_NODES / 8, MAX_NODES / 4, MAX_NODES / 2, MAX_NODES] {
        let old = stored(n);
        let incoming = update(&old);
        let update_ms = median_ms(runs, || {
            let next = parse(&incoming).and_then(|next| apply_update(&old, next, &STAMP, &|_| true, &|_| false));
            assert!(next.is_ok(), "{:?}", next.err());
        });
        // Two stored versions: the update's result against the version before.
        let next = parse(&incoming).and_then(|next| apply_update(&old, next, &STAMP, &|_| true, &|_| false));
        let next = next.map_err(|p| anyhow::anyhow!("{p:?}"))?;
        let (a, b) = (serde_json::to_value(&old)?, serde_json::to_value(&next)?);
        let diff_ms = median_ms(runs, || {
            assert!(!diff(&a, &b).is_empty());
        });
        let (u, d) = (update_ms * 1000.0 / n as f64, diff_ms * 1000.0 / n as f64);
        println!("| {n} | {update_ms:.2} | {u:.2} | {diff_ms:.2} | {d:.2} |");
        per_node.push((u, d));
    }
    if let (Some(first), Some(last)) = (per_node.first(), per_node.last()) {
        println!(
            "time per node at {MAX_NODES} nodes / at {} nodes: update {:.2}×, diff {:.2}× (1× is linear; pairwise matching gives 8×)",
            MAX_NODES / 8,
            last.0 / first.0,
            last.1 / first.1
        );
    }
    Ok(())
}
