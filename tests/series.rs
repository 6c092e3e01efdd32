//! Charts over time tell the truth about missing rows (issue 25): a bucket without rows is zero for a count or
//! a sum and a gap for an average, never a straight line across; the bucket still filling is marked partial.

#![cfg(target_arch = "wasm32")]

use edge_api::stats::{QueryEcho, StatsColumn, StatsResponse};
use edge_console::{
    components::chart::{Series, Unit, time_chart_svg},
    pages::stats::{buckets, partial_bucket, series_over},
};
use serde_json::json;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// 2026-01-01T18:00:00Z
const T: i64 = 1_767_290_400_000;
const FIVE: i64 = 300_000;

fn iso(ms: i64) -> String {
    edge_api::stats::format_time(ms)
}

/// Rows of hits (and latency) at the given 5-minute buckets after T.
fn answer(at: &[i64], metrics: &[&str]) -> StatsResponse {
    let mut columns = vec!["starttime", "endtime"];
    columns.extend_from_slice(metrics);
    StatsResponse {
        query: QueryEcho {
            starttime: String::new(),
            endtime: String::new(),
            start: 0,
            limit: 2500,
            dimensions: vec![],
            metrics: Some(metrics.iter().map(|m| m.to_string()).collect()),
            granularity: None,
            sortby: None,
            filters: None,
        },
        columns: columns.iter().map(|c| StatsColumn { name: c.to_string(), column_type: None }).collect(),
        total_results: at.len() as u64,
        rows: at
            .iter()
            .map(|i| {
                let t = T + i * FIVE;
                let mut row = vec![json!(iso(t)), json!(iso(t + FIVE))];
                row.extend(metrics.iter().map(|m| if *m == "hits" { json!(10) } else { json!(500) }));
                row
            })
            .collect(),
        uri: None,
        next_uri: None,
        prev_uri: None,
    }
}

#[wasm_bindgen_test]
fn buckets_without_rows_are_zero_for_counts_and_a_gap_for_averages() {
    // Rows at 18:00, 18:05 and 18:40; nothing between 18:10 and 18:35.
    let r = answer(&[0, 1, 8], &["hits", "origin_latency_ms"]);
    let end = T + 9 * FIVE;
    let (hits, _) = series_over(&r, "hits", T, end, FIVE, end + 3_600_000);
    let values: Vec<f64> = hits[0].points.iter().map(|(_, v)| *v).collect();
    assert_eq!(values, [10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 10.0], "every bucket, zero where no rows");
    let (latency, _) = series_over(&r, "origin_latency_ms", T, end, FIVE, end + 3_600_000);
    let values: Vec<f64> = latency[0].points.iter().map(|(_, v)| *v).collect();
    assert_eq!(values.len(), 9);
    assert_eq!(values[0], 50.0, "500 ms over 10 requests");
    assert!(values[2..8].iter().all(|v| v.is_nan()), "no requests, no average: {values:?}");
}

#[wasm_bindgen_test]
fn the_bucket_still_filling_is_partial() {
    let all = buckets(T + 60_000, T + 30 * 60_000, FIVE);
    assert_eq!(all.first(), Some(&T), "aligned as the API's buckets");
    assert_eq!(all.len(), 6);
    // At 18:27 the 18:25 bucket is still filling.
    assert_eq!(partial_bucket(&all, FIVE, T + 27 * 60_000), Some(T + 25 * 60_000));
    // A range that ended long ago has none.
    assert_eq!(partial_bucket(&all, FIVE, T + 86_400_000), None);
    assert!(buckets(0, 86_400_000 * 365, FIVE).is_empty(), "too many buckets: left as they are");
}

#[wasm_bindgen_test]
fn a_gap_breaks_the_line_and_the_partial_bucket_is_marked() {
    let at = |i: i64, v: f64| (T + i * FIVE, v);
    let s = Series {
        name: "total".into(),
        points: vec![at(0, 5.0), at(1, 6.0), at(2, f64::NAN), at(3, 7.0), at(4, 8.0), at(5, 1.0)],
    };
    let svg = time_chart_svg(&[(0, &s)], T, T + 6 * FIVE, false, Unit::Ms, "ms", 800, 300, Some(T + 5 * FIVE));
    assert_eq!(svg.matches("<polyline").count(), 3, "two runs and the dashed step into the partial bucket: {svg}");
    assert_eq!(svg.matches("stroke-dasharray").count(), 1);
    assert!(svg.contains(">partial</text>") && svg.contains("class=\"partial\""), "{svg}");
    let without = time_chart_svg(&[(0, &s)], T, T + 6 * FIVE, false, Unit::Ms, "ms", 800, 300, None);
    assert!(!without.contains("partial"));
    assert_eq!(without.matches("<polyline").count(), 2, "the gap breaks the line: {without}");
    // A value alone between gaps is a dot.
    let lone = Series { name: "total".into(), points: vec![at(0, f64::NAN), at(1, 3.0), at(2, f64::NAN)] };
    let svg = time_chart_svg(&[(0, &lone)], T, T + 3 * FIVE, false, Unit::Ms, "ms", 800, 300, None);
    assert!(svg.contains("<circle") && !svg.contains("<polyline"), "{svg}");
}
