//! The console never changes what the user typed (issue 25): a value that does not fit stays in its field with
//! the reason beside it and holds Save; editing another field leaves it alone; a range with host bits set is
//! refused with the network it would mean, offered as a fix; an entry a wider one covers is pointed out; the
//! review of changes and the API's problems name places as a person would.

#![cfg(target_arch = "wasm32")]

use edge_api::config::PropertyConfig;
use edge_console::pages::{
    lists::{Covered, check_lines, mark_covered, replace_entry, valid_values},
    properties::{
        labels::{human_path, human_problem},
        nodes::{Fields, StructuredEditor, whole},
    },
};
use leptos::{prelude::*, task::tick};
use serde_json::json;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{HtmlElement, HtmlInputElement};

wasm_bindgen_test_configure!(run_in_browser);

fn config() -> PropertyConfig {
    serde_json::from_value(json!({
        "id": "p1", "name": "api-gateway",
        "origins": [{"id": "o-1", "name": "api-cluster-x", "host": "api.example", "port": 443, "protocol": "https"}],
        "cache_rules": [{"id": "c-1", "path_pattern": "/api/", "ttl_seconds": 60}],
    }))
    .unwrap()
}

fn input(root: &HtmlElement, css: &str) -> HtmlInputElement {
    root.query_selector(css).unwrap().unwrap_or_else(|| panic!("no {css}")).unchecked_into()
}

/// Types `text` as a user does: the value, then an input event.
fn type_into(field: &HtmlInputElement, text: &str) {
    field.set_value(text);
    field.dispatch_event(&web_sys::Event::new("input").unwrap()).unwrap();
}

fn text_of(root: &HtmlElement, css: &str) -> String {
    root.query_selector(css).unwrap().and_then(|e| e.text_content()).unwrap_or_default()
}

#[wasm_bindgen_test]
async fn a_port_that_does_not_fit_stays_as_typed_says_why_and_survives_other_edits() {
    let root = document().create_element("div").unwrap().unchecked_into::<HtmlElement>();
    document().body().unwrap().append_child(&root).unwrap();
    let draft = RwSignal::new(Some(config()));
    let fields = StoredValue::new(None::<Fields>);
    let _h = leptos::mount::mount_to(root.clone(), move || {
        fields.set_value(Some(Fields::provide()));
        view! { <StructuredEditor draft writable=true /> }
    });
    tick().await;
    let fields = fields.get_value().unwrap();
    let origins = "div[data-section=Origins] tr[data-node=o-1]";
    let port = input(&root, &format!("{origins} input[aria-label=Port]"));
    assert_eq!(port.value(), "443");

    type_into(&port, "99999");
    tick().await;
    assert_eq!(port.value(), "99999", "what was typed stays");
    assert_eq!(port.get_attribute("aria-invalid").as_deref(), Some("true"));
    let why = text_of(&root, &format!("{origins} .field-error"));
    assert!(why.contains("99999 is over 65535") && why.contains("from 1 to 65535"), "{why}");
    assert_eq!(draft.with_untracked(|d| d.as_ref().unwrap().origins[0].port), 443, "the draft keeps a valid port");
    assert_eq!(fields.problems(), ["Origins › api-cluster-x › Port: ".to_string() + &why]);

    // Editing another field of the row does not bring the old port back (it did: 99999 became 9999).
    let name = input(&root, &format!("{origins} input[aria-label=Name]"));
    type_into(&name, "api-cluster-y");
    tick().await;
    tick().await;
    assert_eq!(draft.with_untracked(|d| d.as_ref().unwrap().origins[0].name.clone()), "api-cluster-y");
    assert_eq!(port.value(), "99999", "the port is left as typed");
    assert_eq!(fields.problems().len(), 1, "and still holds Save");

    // Corrected: the draft takes it, the reason goes.
    type_into(&port, "8443");
    tick().await;
    assert_eq!(draft.with_untracked(|d| d.as_ref().unwrap().origins[0].port), 8443);
    assert!(fields.problems().is_empty());
    assert_eq!(text_of(&root, &format!("{origins} .field-error")), "");

    // A TTL of -5 or abc stays too (it used to snap back and drop out of the review).
    let ttl = input(&root, "div[data-section='Cache rules'] input[aria-label='TTL seconds']");
    for (typed, reason) in [("-5", "-5 is below 0"), ("abc", "\"abc\" is not a whole number")] {
        type_into(&ttl, typed);
        tick().await;
        assert_eq!(ttl.value(), typed);
        let why = text_of(&root, "div[data-section='Cache rules'] .field-error");
        assert!(why.starts_with(reason), "{typed}: {why}");
        assert_eq!(draft.with_untracked(|d| d.as_ref().unwrap().cache_rules[0].ttl_seconds), 60);
    }

    // The draft replaced as a whole (Discard): the fields show it again.
    draft.set(Some(config()));
    fields.replaced();
    // The fields' effect, then the input's value: two turns.
    tick().await;
    tick().await;
    assert_eq!(ttl.value(), "60");
    assert_eq!(port.value(), "443");
    assert!(fields.problems().is_empty());
}

#[wasm_bindgen_test]
async fn a_list_field_keeps_its_commas_while_typing() {
    let root = document().create_element("div").unwrap().unchecked_into::<HtmlElement>();
    document().body().unwrap().append_child(&root).unwrap();
    let draft = RwSignal::new(Some(config()));
    let _h = leptos::mount::mount_to(root.clone(), move || {
        Fields::provide();
        view! { <StructuredEditor draft writable=true /> }
    });
    tick().await;
    let params = input(&root, "div[data-section='Cache rules'] input[aria-label='Query parameters']");
    type_into(&params, "a, ");
    tick().await;
    assert_eq!(params.value(), "a, ", "the comma and space being typed stay");
    assert_eq!(draft.with_untracked(|d| d.as_ref().unwrap().cache_rules[0].cache_key.query_params.clone()), ["a"]);
}

#[wasm_bindgen_test]
fn whole_numbers_say_why_they_do_not_fit() {
    assert_eq!(whole("8080", 1, 65_535, "a port"), Ok(8080));
    assert_eq!(whole(" 1 ", 1, 65_535, "a port"), Ok(1));
    assert_eq!(whole("0", 1, 65_535, "a port"), Err("0 is below 1: a port is a whole number from 1 to 65535.".into()));
    assert_eq!(
        whole("99999999999999999999999", 1, 65_535, "a port"),
        Err("99999999999999999999999 is over 65535: a port is a whole number from 1 to 65535.".into())
    );
    assert!(whole("1.5", 1, 65_535, "a port").unwrap_err().starts_with("\"1.5\" is not a whole number"));
    assert_eq!(whole("", 1, 65_535, "a port"), Err("Empty: a port is a whole number from 1 to 65535.".into()));
}

#[wasm_bindgen_test]
fn a_range_with_host_bits_set_is_refused_with_its_network_as_the_fix() {
    let lines = check_lines("IP", "192.0.2.1\n1.2.3.4/8, office\n10.0.0.0/8");
    assert_eq!(lines[1].result, Err("\"1.2.3.4/8\" has host bits set: did you mean 1.0.0.0/8?".to_string()));
    assert_eq!(lines[1].fix.as_deref(), Some("1.0.0.0/8"));
    assert_eq!(lines[0].fix, None);
    assert_eq!(valid_values(&lines), ["192.0.2.1", "10.0.0.0/8"], "never stored as another range");
    // The fix replaces the entry of its line, the rest of the line as it was.
    assert_eq!(replace_entry("192.0.2.1\n1.2.3.4/8, office\n", 2, "1.0.0.0/8"), "192.0.2.1\n1.0.0.0/8, office\n");
}

#[wasm_bindgen_test]
fn an_entry_a_wider_one_already_holds_is_pointed_out() {
    let mut lines = check_lines("IP", "10.1.0.0/16\n192.168.0.0/16\n192.168.7.0/24\n172.16.0.1");
    mark_covered(&mut lines, &["10.0.0.0/8".to_string()]);
    assert_eq!(lines[0].covered_by, Some(Covered::List("10.0.0.0/8".into())));
    assert_eq!(lines[1].covered_by, None);
    assert_eq!(lines[2].covered_by, Some(Covered::Line("192.168.0.0/16".into(), 2)));
    assert_eq!(lines[3].covered_by, None);
    assert_eq!(lines[0].covered_by.as_ref().unwrap().describe(), "already covered by 10.0.0.0/8, in the list");
}

#[wasm_bindgen_test]
fn review_paths_read_as_a_person_would() {
    let after = json!({"origins": [{"id": "o-1", "name": "api-cluster-x", "port": 8443}],
        "security": {"waf_rules": [{"id": "w1", "name": "SQL injection"}]}});
    let before = json!({"origins": [{"id": "o-2", "name": "old"}]});
    assert_eq!(human_path("$.origins[id=o-1].port", &[&after, &before]), "Origins › api-cluster-x › Port");
    assert_eq!(human_path("$.origins[id=o-2]", &[&after, &before]), "Origins › old");
    assert_eq!(human_path("$.security.waf_rules[id=w1].action", &[&after]), "WAF rules › SQL injection › Action");
    assert_eq!(human_path("$.origins[id=gone].port", &[&after]), "Origins › gone › Port");
    assert_eq!(human_path("$.cache_rules[0].ttl_seconds", &[&after]), "Cache rules › item 1 › TTL (s)");
    assert_eq!(human_path("not a path", &[&after]), "not a path");
}

#[wasm_bindgen_test]
fn the_apis_problems_read_at_the_places_the_editor_names() {
    let sent =
        json!({"origins": [{"id": "o-1", "name": "shop-primary"}], "cache_rules": [{"path_pattern": "/static/*"}]});
    let read = |m: &str| human_problem(m, &[&sent]);
    assert_eq!(
        read("$.origins[0].port: 70,000 is over 65,535"),
        "Origins › shop-primary › Port: 70,000 is over 65,535"
    );
    assert_eq!(read("$.cache_rules[0].ttl_seconds: \"x\" is text"), "Cache rules › /static/* › TTL (s): \"x\" is text");
    assert_eq!(
        read("$.security.traffic_shaping_rules[0].values[1]: 7 is a number"),
        "Traffic shaping › item 1 › Values › item 2: 7 is a number"
    );
    assert_eq!(read("$: 5001 nodes"), "The whole configuration: 5001 nodes");
    assert_eq!(read("The JSON ends too early (line 1)."), "The JSON ends too early (line 1).");
}
