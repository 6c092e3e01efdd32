//! The OpenAPI document states what the validators accept: every value its patterns and bounds allow is
//! accepted by the validator behind them (so a client, or a contract fuzzer, that follows the document is not
//! refused), and where the document can say it exactly (times, usernames) it refuses what they refuse.

use edge_api::{
    PurgeUri,
    config::is_host_pattern,
    networklists::normalize_entry,
    stats::{Family, INTEGER_DIMENSIONS, parse_filters, parse_time},
    uri_problems,
};
use proptest::prelude::*;
use regex::Regex;
use serde_json::Value;

/// The document, built once for every case.
fn document() -> &'static Value {
    static DOC: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
        serde_json::to_value(edge_server::routes::openapi_document()).expect("the document is JSON")
    });
    &DOC
}

fn parameter(doc: &Value, path: &str, name: &str) -> Value {
    let params = doc["paths"][path]["get"]["parameters"].as_array().expect("parameters");
    params.iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{path} documents {name}"))["schema"].clone()
}

/// The compiled pattern of a schema (each compiled once: a pattern of the document is hundreds of bytes).
fn pattern(schema: &Value) -> Regex {
    compiled(schema["pattern"].as_str().expect("a pattern"))
}

fn compiled(pattern: &str) -> Regex {
    static CACHE: std::sync::Mutex<Vec<(String, Regex)>> = std::sync::Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = cache.iter().find(|(p, _)| p == pattern) {
        return r.clone();
    }
    let r = Regex::new(pattern).expect("the pattern compiles");
    cache.push((pattern.to_string(), r.clone()));
    r
}

/// Whether `value` fits `schema`: its pattern and length bounds, or one of its `oneOf` alternatives.
fn fits(schema: &Value, value: &str) -> bool {
    if let Some(alternatives) = schema["oneOf"].as_array() {
        return alternatives.iter().any(|s| fits(s, value));
    }
    let chars = value.chars().count() as u64;
    schema["pattern"].as_str().is_none_or(|p| compiled(p).is_match(value))
        && schema["maxLength"].as_u64().is_none_or(|max| chars <= max)
        && schema["minLength"].as_u64().is_none_or(|min| chars >= min)
}

fn component<'a>(doc: &'a Value, name: &str) -> &'a Value {
    &doc["components"]["schemas"][name]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// The time pattern is the calendar: 2023-02-29 is refused by both, 2024-02-29 accepted by both.
    #[test]
    fn statistics_times_fit_the_pattern_exactly_when_the_parser_takes_them(
        t in "[0-9]{4}-(0[0-9]|1[0-3])-[0-3][0-9]T[0-2][0-9]:[0-6][0-9]:[0-6][0-9](\\.[0-9]{1,4})?"
    ) {
        let doc = document();
        let time = pattern(&parameter(doc, "/{customer}/v1/stats/data", "starttime"));
        prop_assert_eq!(time.is_match(&t), parse_time(&t).is_ok(), "{}", t);
    }

    /// Every filter the pattern of a family allows is one its parser takes, integer dimensions with integers.
    #[test]
    fn statistics_filters_that_fit_the_pattern_are_accepted(
        conditions in prop::collection::vec(
            ("(country|http_status_code|cache_status|domain|nosuch|client_asn)", " ?(==|!=) ?", "[a-z0-9\\\\,; +-]{0,6}"),
            0..4,
        ),
        separator in "[,;]",
    ) {
        let doc = document();
        for (path, family) in [
            ("/{customer}/v1/stats/data", Family::Delivery),
            ("/{customer}/v1/stats/security/events/data", Family::Events),
        ] {
            let filters = pattern(&parameter(doc, path, "filters"));
            let text: Vec<String> = conditions.iter().map(|(d, op, v)| format!("{d}{op}{v}")).collect();
            let text = text.join(&separator);
            if filters.is_match(&text) {
                let parsed = parse_filters(&text, &family.dimensions());
                prop_assert!(parsed.is_ok(), "{} fits the pattern of {:?} but: {:?}", text, family, parsed);
                for c in parsed.unwrap().conditions() {
                    if INTEGER_DIMENSIONS.contains(&c.dimension.as_str()) {
                        prop_assert!(c.value.trim().parse::<i64>().is_ok(), "{}", text);
                    }
                }
            }
        }
    }

    /// Host patterns of a new property: what fits is a host pattern.
    #[test]
    fn host_patterns_that_fit_the_schema_are_host_patterns(host in "(\\*\\.)?[a-z0-9-]{0,5}(\\.[a-zA-Z0-9-]{0,5}){0,3}") {
        let doc = document();
        let schema = &component(doc, "NewProperty")["properties"]["host_patterns"]["items"];
        if fits(schema, &host) {
            prop_assert!(is_host_pattern(&host), "{}", host);
        }
    }

    /// IP entries: what fits is an address or a range, taken unless its address has bits set past the prefix
    /// (`1.2.3.4/8`), the one rule the pattern cannot state and its description does (refused since issue 25).
    #[test]
    fn ip_entries_that_fit_the_schema_are_taken_unless_host_bits_are_set(
        entry in "([0-9]{1,3}\\.){3}[0-9]{1,3}(/[0-9]{1,2})?|[0-9a-f:]{2,12}(/[0-9]{1,3})?"
    ) {
        let doc = document();
        let ip = &component(doc, "NewNetworkList")["oneOf"][0]["properties"]["list"]["items"];
        if fits(ip, &entry) {
            let normalized = normalize_entry("IP", &entry);
            let host_bits = |e: &String| e.contains("has host bits set: did you mean");
            prop_assert!(
                normalized.is_ok() || (entry.contains('/') && normalized.as_ref().is_err_and(host_bits)),
                "{}: {:?}", entry, normalized
            );
        }
    }

    /// Usernames: the schema and check_username agree.
    #[test]
    fn usernames_fit_the_schema_exactly_when_the_server_takes_them(name in "[ a-z:\\t\u{85}é]{0,6}") {
        let doc = document();
        let schema = &component(doc, "NewUser")["properties"]["username"];
        prop_assert_eq!(fits(schema, &name), edge_server::admin::check_username(&name).is_ok(), "{:?}", name);
    }

    /// Purge URIs: one that fits the schema has no problem of form (only, maybe, a host the customer lacks).
    #[test]
    fn purge_uris_that_fit_the_schema_have_the_documented_form(
        uri in "( ?)(https?://)?(\\*\\.)?[a-z0-9-]{1,4}(\\.[a-z0-9-]{1,4}){0,2}(/[a-z \\t]{0,4})?( ?)"
    ) {
        let doc = document();
        let schema = &component(doc, "PurgeRequest")["properties"]["purge_request"]["properties"]["uris"]["items"]
            ["properties"]["uri_pattern"];
        if fits(schema, &uri) {
            let rest = uri.trim().trim_start_matches("https://").trim_start_matches("http://");
            let host = rest.split('/').next().unwrap_or_default().to_string();
            let u = PurgeUri { uri_pattern: uri.clone(), match_mode: "PREFIX_LITERAL".into(), cache_key_modifier_regex: None };
            let problems = uri_problems(&u, &[host]);
            prop_assert!(problems.is_empty(), "{:?}: {:?}", uri, problems);
        }
    }
}

#[test]
fn the_leap_day_is_stated_for_leap_years_only() {
    let doc = document();
    let time = pattern(&parameter(doc, "/{customer}/v1/stats/data", "endtime"));
    for (t, ok) in [
        ("2024-02-29T00:00:00", true),
        ("2000-02-29T23:59:59.5", true),
        ("2023-02-29T00:00:00", false),
        ("1900-02-29T00:00:00", false),
        ("2026-04-31T00:00:00", false),
        ("2026-11-22T24:00:00", false),
    ] {
        assert_eq!(time.is_match(t), ok, "{t}");
        assert_eq!(parse_time(t).is_ok(), ok, "{t}");
    }
}

#[test]
fn parameters_each_family_requires_are_marked_required() {
    let doc = document();
    let required = |path: &str, name: &str| {
        let params = doc["paths"][path]["get"]["parameters"].as_array().expect("parameters");
        params.iter().find(|p| p["name"] == name).expect("documented")["required"] == true
    };
    assert!(required("/{customer}/v1/stats/data", "endtime"));
    assert!(required("/{customer}/v1/stats/data", "granularity"));
    assert!(required("/{customer}/v1/stats/data", "metrics"));
    assert!(!required("/{customer}/v1/stats/data", "starttime"), "startime may stand for it");
    assert!(required("/{customer}/v1/stats/security/events/data", "dimensions"));
    assert!(!required("/{customer}/v1/stats/security/events/data", "granularity"));
    assert!(!required("/{customer}/v1/stats/topk/url/data", "metrics"));
}
