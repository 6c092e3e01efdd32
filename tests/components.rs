//! The shared pieces in headless Chromium: rows read by column name (a changed answer shows blanks, never stops
//! the console), the pager, the time formatter, charts with an accessible name and a data table, the sign-in
//! app's prefetch list.

#![cfg(target_arch = "wasm32")]

use edge_api::stats::{QueryEcho, StatsColumn, StatsResponse};
use edge_console::{
    api::Column,
    components::{
        chart::{Series, TimeChart, short_number},
        pager::Pager,
        time::{axis_label, date, datetime, datetime_ms},
    },
    pages::stats::{bars, series_of, totals},
    signin::asset_names,
};
use leptos::{prelude::*, task::tick};
use serde_json::json;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::HtmlElement;

wasm_bindgen_test_configure!(run_in_browser);

fn answer(dimensions: &[&str], columns: &[&str], rows: Vec<Vec<serde_json::Value>>) -> StatsResponse {
    StatsResponse {
        query: QueryEcho {
            starttime: String::new(),
            endtime: String::new(),
            start: 0,
            limit: 2500,
            dimensions: dimensions.iter().map(|d| d.to_string()).collect(),
            metrics: Some(vec!["hits".into()]),
            granularity: None,
            sortby: None,
            filters: None,
        },
        columns: columns.iter().map(|c| StatsColumn { name: c.to_string(), column_type: None }).collect(),
        total_results: rows.len() as u64,
        rows,
        uri: None,
        next_uri: None,
        prev_uri: None,
    }
}

#[wasm_bindgen_test]
fn rows_are_read_by_column_name_whatever_their_order() {
    // The same data with the columns in another order reads the same.
    let a = answer(
        &["country"],
        &["starttime", "endtime", "country", "hits"],
        vec![vec![json!("2026-01-01T00:00:00"), json!("2026-01-01T00:05:00"), json!("DE"), json!(5)]],
    );
    let b = answer(
        &["country"],
        &["hits", "country", "endtime", "starttime"],
        vec![vec![json!(5), json!("DE"), json!("2026-01-01T00:05:00"), json!("2026-01-01T00:00:00")]],
    );
    assert_eq!(series_of(&a, "hits"), series_of(&b, "hits"));
    assert_eq!(series_of(&a, "hits")[0].name, "DE");
    assert_eq!(totals(&a), vec![("hits".to_string(), 5.0)]);
    assert_eq!(bars(&b, 10), vec![("DE".to_string(), 5.0)]);
}

#[wasm_bindgen_test]
fn a_changed_answer_shows_blanks_instead_of_stopping_the_console() {
    // A row shorter than the header, a metric missing, a number where text was expected.
    let r = answer(&["country"], &["starttime", "endtime", "country", "hits"], vec![vec![json!("bad time")], vec![]]);
    assert_eq!(Column::of(&r, "hits").number(&r.rows[0]), 0.0);
    assert_eq!(Column::of(&r, "nothing").text(&r.rows[0]), "");
    assert!(!Column::of(&r, "nothing").exists());
    assert!(series_of(&r, "hits").is_empty(), "rows without a time are left out");
    assert!(series_of(&r, "no_such_metric").is_empty());
    assert_eq!(bars(&r, 10), vec![(String::new(), 0.0)]);
}

#[wasm_bindgen_test]
fn times_and_numbers_read_the_same_everywhere() {
    assert_eq!(datetime("2026-11-22T10:00:01.123Z"), "2026-11-22 10:00:01");
    assert_eq!(datetime("not a time"), "not a time");
    assert_eq!(datetime_ms(1_767_225_600_000), "2026-01-01 00:00:00");
    assert_eq!(date("2026-11-22T10:00:01Z"), "2026-11-22");
    assert_eq!(axis_label(1_767_225_600_000, 3_600_000), "00:00");
    assert_eq!(axis_label(1_767_225_600_000, 7 * 86_400_000), "01-01");
    assert_eq!(short_number(1234.0), "1.2k");
    assert_eq!(short_number(-2_500_000.0), "-2.5M");
    assert_eq!(short_number(999.0), "999");
}

#[wasm_bindgen_test]
fn the_sign_in_app_prefetches_what_the_console_loads() {
    let index = r#"<link rel="stylesheet" href="/main-1.css"/><script type="module">
import init from '/edge-console-2.js';
await init({ module_or_path: '/edge-console-2_bg.wasm' });</script>
<link rel="modulepreload" href="/edge-console-2.js"><link rel="icon" href="/favicon.png">"#;
    assert_eq!(asset_names(index), ["/main-1.css", "/edge-console-2.js", "/edge-console-2_bg.wasm"]);
}

async fn next_frame() {
    let frame = js_sys::Promise::new(&mut |done, _| {
        let _ = web_sys::window().unwrap().request_animation_frame(&done);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(frame).await;
}

fn container() -> HtmlElement {
    let div = document().create_element("div").unwrap().unchecked_into::<HtmlElement>();
    document().body().unwrap().append_child(&div).unwrap();
    div
}

#[wasm_bindgen_test]
async fn the_pager_says_where_it_is_and_stops_at_the_ends() {
    let root = container();
    let asked = RwSignal::new(0u64);
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        view! { <Pager page=3 per_page=20 shown=5 total=45 on_page=Callback::new(move |p| asked.set(p)) /> }
    });
    tick().await;
    let text = root.query_selector("[role=status]").unwrap().unwrap().text_content().unwrap();
    assert_eq!(text, "41–45 of 45");
    let buttons = root.query_selector_all("button").unwrap();
    let next = buttons.item(1).unwrap().unchecked_into::<web_sys::HtmlButtonElement>();
    assert!(next.disabled(), "the last page has no next");
    buttons.item(0).unwrap().unchecked_into::<HtmlElement>().click();
    assert_eq!(asked.get_untracked(), 2);
}

#[wasm_bindgen_test]
async fn a_chart_has_an_accessible_name_and_its_numbers_as_a_table() {
    let root = container();
    let series = vec![
        Series { name: "DE".into(), points: vec![(0, 1.0), (300_000, 3.0)] },
        Series { name: "other".into(), points: vec![(0, 2.0), (300_000, 0.0)] },
    ];
    let _handle = leptos::mount::mount_to(root.clone(), move || {
        view! { <TimeChart label="hits over time".to_string() series=series.clone() start=0 end=600_000 stacked=true /> }
    });
    tick().await;
    let chart = root.query_selector("[role=group]").unwrap().expect("a chart");
    assert_eq!(
        chart.get_attribute("aria-label").as_deref(),
        Some("hits over time. Use the arrow keys to read the values at each time.")
    );
    // End shows the last time's exact values in the tooltip.
    let init = web_sys::KeyboardEventInit::new();
    init.set_key("End");
    init.set_bubbles(true);
    chart
        .dispatch_event(&web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap())
        .unwrap();
    tick().await;
    let de = root.query_selector(".tooltip li[data-series=DE]").unwrap().expect("DE in the tooltip");
    assert_eq!(de.get_attribute("data-value").as_deref(), Some("3"));
    // Drawn once its width is measured, in a task after the next animation frame.
    next_frame().await;
    edge_console::components::progress::sleep(0).await;
    tick().await;
    assert!(chart.query_selector("svg[aria-hidden=true] polygon").unwrap().is_some(), "stacked areas");
    assert!(root.query_selector("table").unwrap().is_none(), "the table is built when asked for");
    let details = root.query_selector("details").unwrap().unwrap().unchecked_into::<web_sys::HtmlDetailsElement>();
    details.set_open(true);
    details.dispatch_event(&web_sys::Event::new("toggle").unwrap()).unwrap();
    tick().await;
    let rows = root.query_selector_all("table tbody tr").unwrap();
    assert_eq!(rows.length(), 2);
    assert_eq!(rows.item(1).unwrap().text_content().unwrap(), "1970-01-01 00:05:0030");
}
