//! The statistics view's logic in headless Chromium: the address holds the whole view, grouping-set guidance,
//! CSV export.

#![cfg(target_arch = "wasm32")]

use edge_api::stats::{Granularity, QueryEcho, StatsColumn, StatsResponse};
use edge_console::pages::stats::{Figure, Kind, View, grouping_state, to_csv};
use serde_json::json;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn the_view_round_trips_through_the_address() {
    let params = |q: &str| -> Vec<(String, String)> {
        q.trim_start_matches('?')
            .split('&')
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.to_string(), js_sys::decode_uri_component(v).unwrap().as_string().unwrap()))
            .collect()
    };
    let view = View {
        preset: "custom".into(),
        start: "2026-01-01T00:00:00".into(),
        end: "2026-01-02T00:00:00".into(),
        granularity: Some(Granularity::Hour),
        dims: vec!["domain".into(), "country".into()],
        metrics: vec!["hits".into()],
        filters: "domain==a\\,b;country!=DE".into(),
        sort: "-hits".into(),
        page: 2,
        compare: true,
        stacked: true,
        classes: true,
    };
    let p = params(&view.to_query());
    let back = View::from_params(|k| p.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone()));
    assert_eq!(back, view);
    let defaults = View::from_params(|_| None);
    assert_eq!((defaults.preset.as_str(), defaults.dims.clone()), ("24h", vec!["country".to_string()]));
}

#[wasm_bindgen_test]
fn a_preset_range_picks_a_granularity_at_which_the_dimensions_form_a_grouping_set() {
    let now = 1_790_000_000_000;
    let view = |preset: &str, dims: &[&str]| View {
        preset: preset.into(),
        dims: dims.iter().map(|d| d.to_string()).collect(),
        ..View::from_params(|_| None)
    };
    let granularity = |v: &View| v.granularity(v.range(now).unwrap(), now);
    // The natural granularities where the dimensions allow them.
    assert_eq!(granularity(&view("24h", &["country"])), Granularity::FiveMinute);
    assert_eq!(granularity(&view("7d", &["domain"])), Granularity::Hour);
    assert_eq!(granularity(&view("30d", &["country"])), Granularity::Day);
    // Country has no hourly set: a week by country is daily, not an empty chart.
    assert_eq!(granularity(&view("7d", &["country"])), Granularity::Day);
    // A granularity the user chose stays, valid or not (the view then says what to add).
    let chosen = View { granularity: Some(Granularity::Hour), ..view("7d", &["country"]) };
    assert_eq!(granularity(&chosen), Granularity::Hour);
}

#[wasm_bindgen_test]
fn grouping_guidance_names_what_can_be_added() {
    let (valid, addable) = grouping_state(Granularity::Hour, &["country".into()]);
    assert!(!valid, "country alone is not an hourly grouping set");
    assert!(addable.contains(&"browser_name") && addable.contains(&"property"));
    assert!(!addable.contains(&"device_os"), "no hourly set has country with device_os");
    let (valid, _) = grouping_state(Granularity::FiveMinute, &["country".into()]);
    assert!(valid);
}

#[wasm_bindgen_test]
fn csv_export_quotes_what_needs_quoting() {
    let r = StatsResponse {
        query: QueryEcho {
            starttime: String::new(),
            endtime: String::new(),
            start: 0,
            limit: 2500,
            dimensions: vec!["request_url".into()],
            metrics: Some(vec!["hits".into()]),
            granularity: None,
            sortby: None,
            filters: None,
        },
        columns: vec![
            StatsColumn { name: "request_url".into(), column_type: Some("string".into()) },
            StatsColumn { name: "hits".into(), column_type: Some("long".into()) },
        ],
        rows: vec![vec![json!("/a,b"), json!(3)], vec![json!("/say \"hi\""), json!(1)]],
        total_results: 2,
        uri: None,
        next_uri: None,
        prev_uri: None,
    };
    assert_eq!(to_csv(&r), "request_url,hits\n\"/a,b\",3\n\"/say \"\"hi\"\"\",1\n");
}

#[wasm_bindgen_test]
fn csv_export_neutralises_what_a_spreadsheet_would_run_as_a_formula() {
    use edge_console::components::download::csv;
    // The review's failed login, as the audit export writes it, and every other formula prefix.
    let rows = vec![
        vec!["=cmd|' /C calc'!A0".to_string(), "login.failure".to_string()],
        vec!["+1+1".into(), "@SUM(A1:A9)".into()],
        vec!["-2+3".into(), "\t=1".into()],
        vec!["\r=1".into(), "plain".into()],
        vec!["-5".into(), "+1.5".into()],
    ];
    assert_eq!(
        csv(["actor".to_string(), "operation".to_string()], rows),
        "actor,operation\n'=cmd|' /C calc'!A0,login.failure\n'+1+1,'@SUM(A1:A9)\n'-2+3,'\t=1\n\"'\r=1\",plain\n-5,+1.5\n"
    );
}

#[wasm_bindgen_test]
fn an_overview_change_that_rounds_to_nothing_reads_plus_minus_zero_and_is_neither_up_nor_down() {
    let figure = |kind, value, previous| Figure {
        id: "5xx-rate",
        title: "5xx rate",
        kind,
        value,
        previous: Some(previous),
        spark: Vec::new(),
        explore: "",
    };
    // A share's change in percentage points, to a tenth: 1.40% after 1.42% is −0.02 pp, shown as no change.
    let flat = figure(Kind::Share, 0.0140, 0.0142);
    assert_eq!(flat.change_text().as_deref(), Some("±0 pp"));
    assert_eq!(flat.direction(), Some(std::cmp::Ordering::Equal));
    let down = figure(Kind::Share, 0.0140, 0.0160);
    assert_eq!(down.change_text().as_deref(), Some("−0.2 pp"));
    assert_eq!(down.direction(), Some(std::cmp::Ordering::Less));
    // An amount's change in percent: 1,000 after 990 is +1%; 1,000 after 999.9 rounds to nothing.
    assert_eq!(figure(Kind::Count, 1000.0, 990.0).change_text().as_deref(), Some("+1%"));
    assert_eq!(figure(Kind::Count, 1000.0, 999.9).change_text().as_deref(), Some("±0%"));
    // Without traffic before, no change at all.
    assert_eq!(figure(Kind::Count, 1000.0, 0.0).change_text(), None);
}
