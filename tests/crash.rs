//! A panic of the console leaves a plain "Something went wrong — Reload" screen, not a dead page (issue 25), and
//! the report it sends says what happened. In a file of its own: the screen replaces the whole page.

#![cfg(target_arch = "wasm32")]

use edge_console::crash::{REPORT_MAX_BYTES, crashed, report_body};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn a_crash_replaces_the_page_with_a_reload_screen_once() {
    let doc = web_sys::window().unwrap().document().unwrap();
    let body = doc.body().unwrap();
    let app = doc.create_element("main").unwrap();
    app.set_id("app");
    body.append_child(&app).unwrap();
    crashed("panicked at traits.rs:394: Tried to access a reactive value that has already been disposed.");
    let screen = doc.get_element_by_id("crashed").expect("the crash screen");
    assert_eq!(screen.get_attribute("role").as_deref(), Some("alert"));
    assert!(app.has_attribute("hidden"), "the dead page is hidden");
    let text = screen.text_content().unwrap_or_default();
    assert!(text.contains("Something went wrong"), "{text}");
    let reload = screen.query_selector("a").unwrap().expect("a Reload link");
    assert_eq!(reload.text_content().as_deref(), Some("Reload"));
    let here = doc.location().unwrap().href().unwrap();
    assert_eq!(reload.get_attribute("href").as_deref(), Some(here.as_str()), "Reload loads this address again");
    assert_eq!(doc.active_element().map(|e| e.tag_name()), Some("A".to_string()), "Reload has the focus");
    // A second panic (the executor left half-way) changes nothing.
    crashed("already borrowed");
    assert_eq!(doc.query_selector_all("#crashed").unwrap().length(), 1);
}

#[wasm_bindgen_test]
fn a_report_holds_the_message_cut_short_and_the_path_without_its_query() {
    let body: serde_json::Value = serde_json::from_str(&report_body(&"x".repeat(5000), "/demo/stats")).unwrap();
    assert_eq!(body["message"].as_str().unwrap().len(), 2000);
    assert_eq!(body["path"], "/demo/stats");
    // Whatever the message holds, the report fits the server's limit (server/src/crash_reports.rs).
    for message in ["é".repeat(5000), "\u{1}".repeat(5000), "\n".repeat(5000)] {
        assert!(report_body(&message, "/demo/stats").len() <= REPORT_MAX_BYTES);
    }
}
