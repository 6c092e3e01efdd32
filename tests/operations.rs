//! Operations views' pieces in headless Chromium: the per-line checks of pasted entries and purge URIs, and the
//! progress bar.

#![cfg(target_arch = "wasm32")]

use edge_console::{
    components::progress::ProgressBar,
    pages::{
        lists::{check_lines, valid_values},
        purge::check_purge_lines,
    },
};
use leptos::{prelude::*, task::tick};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::HtmlElement;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn pasted_lines_are_checked_one_by_one_with_their_line_numbers() {
    let lines = check_lines("IP", "192.0.2.1\n\n# comment\n10.0.0.0/8, office\n\"bad\";x\n192.0.2.1/32");
    let summary: Vec<(usize, Result<&str, bool>)> =
        lines.iter().map(|l| (l.line, l.result.as_deref().map_err(|_| true))).collect();
    assert_eq!(summary, [(1, Ok("192.0.2.1")), (4, Ok("10.0.0.0/8")), (5, Err(true)), (6, Ok("192.0.2.1"))]);
    assert_eq!(valid_values(&lines), ["192.0.2.1", "10.0.0.0/8"], "duplicates merged");
    let geo = check_lines("GEO", "de\nUK");
    assert_eq!(geo[0].result, Ok("DE".to_string()));
    assert_eq!(geo[1].result, Err("\"UK\" is not an ISO 3166-1 alpha-2 country code".to_string()));
}

#[wasm_bindgen_test]
fn purge_lines_are_checked_against_the_host_patterns() {
    let patterns = vec!["www.shop.example".to_string()];
    let lines = check_purge_lines("www.shop.example/a.png\n\nother.example/b.png", "EXACT_LITERAL", "", &patterns);
    assert_eq!(lines.len(), 2);
    assert!(lines[0].problems.is_empty());
    assert_eq!(lines[1].line, 3);
    assert_eq!(lines[1].problems, ["no property serves the domain other.example: you may not purge it"]);
    let with_modifier = check_purge_lines("www.shop.example/img/", "EXACT_LITERAL", "v=*", &patterns);
    assert_eq!(with_modifier[0].problems, ["cache_key_modifier_regex is allowed only with PREFIX_LITERAL"]);
}

#[wasm_bindgen_test]
async fn a_progress_bar_follows_its_percentage() {
    let root = document().create_element("div").unwrap().unchecked_into::<HtmlElement>();
    document().body().unwrap().append_child(&root).unwrap();
    let percent = RwSignal::new(10u8);
    let _h = leptos::mount::mount_to(root.clone(), move || {
        view! { <ProgressBar percent label=Signal::derive(move || format!("{}% done", percent.get())) /> }
    });
    tick().await;
    let bar = root.query_selector("[role=progressbar]").unwrap().unwrap();
    assert_eq!(bar.get_attribute("aria-valuenow").as_deref(), Some("10"));
    percent.set(100);
    tick().await;
    assert_eq!(bar.get_attribute("aria-valuenow").as_deref(), Some("100"));
    assert_eq!(root.query_selector(".progress-label").unwrap().unwrap().text_content().as_deref(), Some("100% done"));
}
