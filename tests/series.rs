//! Charts over time tell the truth about missing rows (issue 25): a bucket without rows is zero for a count or
//! a sum and a gap for an average, never a straight line across; the bucket still filling is marked partial.
//! The previous period is drawn dashed (issue 22); time labels fall on round times; timeline markers close
//! together share one button (issue 24).

#![cfg(target_arch = "wasm32")]

use edge_api::stats::{QueryEcho, StatsColumn, StatsResponse};
use edge_console::{
    components::chart::{Marker, Plot, Series, Unit, groups, ticks, time_chart_svg},
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

fn svg(
    series: &[(usize, &Series)],
    previous: &[(usize, &Series)],
    end: i64,
    partial: Option<i64>,
    stacked: bool,
) -> String {
    let plot = Plot { series, previous, start: T, end, stacked, unit: Unit::Ms, y_title: "ms", partial };
    time_chart_svg(&plot, 800, 300)
}

/// The texts of an SVG, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split("</text>").next()?.trim().to_string()))
        .collect()
}

/// How many lines (polylines: a path, or one dash of a dashed one) are drawn in blue, the first series' colour.
fn blue_lines(svg: &str) -> usize {
    svg.split("<polyline").skip(1).filter(|p| p.split("/>").next().unwrap_or("").contains("stroke=\"#1F6FEB\"")).count()
}

#[wasm_bindgen_test]
fn a_gap_breaks_the_line_and_the_partial_bucket_is_marked() {
    let at = |i: i64, v: f64| (T + i * FIVE, v);
    let s = Series {
        name: "total".into(),
        points: vec![at(0, 5.0), at(1, 6.0), at(2, f64::NAN), at(3, 7.0), at(4, 8.0), at(5, 1.0)],
    };
    let with = svg(&[(0, &s)], &[], T + 6 * FIVE, Some(T + 5 * FIVE), false);
    // Two runs, and the dashed step into the partial bucket (a short dash or more).
    assert!(blue_lines(&with) >= 3, "two runs and the dashed step: {with}");
    assert!(texts(&with).contains(&"partial".to_string()), "{with}");
    assert!(with.contains("aria-hidden=\"true\""), "{with}");
    let without = svg(&[(0, &s)], &[], T + 6 * FIVE, None, false);
    assert!(!without.contains("partial"));
    assert_eq!(blue_lines(&without), 2, "the gap breaks the line: {without}");
    // A value alone between gaps is a dot.
    let lone = Series { name: "total".into(), points: vec![at(0, f64::NAN), at(1, 3.0), at(2, f64::NAN)] };
    let dot = svg(&[(0, &lone)], &[], T + 3 * FIVE, None, false);
    assert!(dot.contains("<circle") && blue_lines(&dot) == 0, "{dot}");
}

#[wasm_bindgen_test]
fn the_previous_period_is_drawn_dashed_in_the_colour_of_its_series() {
    let at = |i: i64, v: f64| (T + i * FIVE, v);
    let now = Series { name: "total".into(), points: (0..12).map(|i| at(i, 10.0)).collect() };
    let before = Series { name: "total".into(), points: (0..12).map(|i| at(i, 20.0)).collect() };
    let plain = svg(&[(0, &now)], &[], T + 12 * FIVE, None, false);
    let compared = svg(&[(0, &now)], &[(0, &before)], T + 12 * FIVE, None, false);
    assert_eq!(blue_lines(&plain), 1);
    assert!(blue_lines(&compared) > 10, "one line and the dashes of the previous period: {compared}");
    // The axis reaches the previous period's values too.
    assert!(texts(&compared).contains(&"20 ms".to_string()), "{compared}");
    // Stacked, the previous period is one dashed line of its total, in the ink's colour.
    let stacked = svg(&[(0, &now)], &[(0, &before)], T + 12 * FIVE, None, true);
    assert!(stacked.contains("class=\"ink\""), "{stacked}");
    assert!(stacked.contains("<polygon"), "{stacked}");
}

#[wasm_bindgen_test]
fn time_labels_fall_on_round_times_and_stay_few() {
    // 24 hours from 18:02 UTC over 700 pixels: every 3 hours, on the hour.
    let start = T + 120_000;
    let t = ticks(start, start + 86_400_000, 700.0, 90.0);
    assert!(!t.is_empty() && t.len() <= 8, "{t:?}");
    assert!(t.iter().all(|x| x % 10_800_000 == 0 && *x >= start), "{t:?}");
    // 30 days: whole days.
    let t = ticks(T, T + 30 * 86_400_000, 700.0, 90.0);
    assert!(t.iter().all(|x| x % 86_400_000 == 0), "{t:?}");
    assert!(t.len() <= 8, "{t:?}");
}

#[wasm_bindgen_test]
fn markers_close_together_share_one_button() {
    use edge_api::alerts::MarkerKind;
    let m = |t: i64| Marker {
        time: t,
        kind: MarkerKind::Alert,
        title: "5xx: firing".into(),
        actor: "5xx".into(),
        href: "/x".into(),
    };
    let all = vec![m(T), m(T + 1_000), m(T + 12 * FIVE), m(T + 48 * 3_600_000)];
    let g = groups(&all, T, T + 24 * 3_600_000, 800.0);
    assert_eq!(g.len(), 2, "the one outside the range is left out: {g:?}");
    assert_eq!(g[0].1.len(), 2);
    assert_eq!(g[1].1.len(), 1);
}

#[wasm_bindgen_test]
fn a_count_axis_steps_by_whole_numbers() {
    let empty = Series { name: "total".into(), points: vec![(T, 0.0), (T + FIVE, 0.0)] };
    let shown = [(0, &empty)];
    let plot = Plot {
        series: &shown,
        previous: &[],
        start: T,
        end: T + 2 * FIVE,
        stacked: false,
        unit: Unit::Count,
        y_title: "",
        partial: None,
    };
    let labels: Vec<String> =
        texts(&time_chart_svg(&plot, 800, 300)).into_iter().filter(|t| t.chars().all(|c| c.is_ascii_digit())).collect();
    let mut labels = labels;
    labels.sort();
    assert_eq!(labels, ["0", "1"], "no chart of nothing labelled 0, 0, 1, 1");
}
