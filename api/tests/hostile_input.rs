//! Property-based fuzzing of every parser and validator a request reaches: statistics times, filters, sortby
//! and whole queries; purge URIs; network list entries; property configurations and their diff and merge.
//!
//! Three kinds of property: arbitrary (hostile) input never panics; valid input, built by a generator that
//! knows the grammar, is accepted and round-trips; a valid input broken in one known way is refused.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use edge_api::config::{
    self, CacheKey, CacheRule, HostPattern, Origin, PropertyConfig, ReadOnly, Security, ShapingRule, WafRule,
};
use edge_api::purge::{PurgeUri, uri_problems};
use edge_api::stats::{self, Condition, Family, Filter, Granularity, RawQuery, SortKey};
use edge_api::{COUNTRY_CODES, network_of, normalize_entry};
use ipnet::IpNet;
use proptest::prelude::*;
use serde_json::Value;

/// Any text, weighted towards the characters the parsers treat specially.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[-=!,;\\\\:.T/*0-9 a-zé\u{0}\u{2028}]{0,40}",
        prop::collection::vec(prop::sample::select(vec!["==", "!=", ",", ";", "\\", "-", "é", "T", ":", "."]), 0..12)
            .prop_map(|parts| parts.concat()),
    ]
}

fn every_family() -> Vec<Family> {
    let mut families = vec![
        Family::Delivery,
        Family::TopKUrl,
        Family::Events,
        Family::WafTrends,
        Family::RequestTrends,
        Family::ShapingTrends,
    ];
    families.extend(stats::WAF_CATEGORIES.iter().filter_map(|(c, _)| Family::topk(true, c)));
    families.extend(stats::SHAPING_CATEGORIES.iter().filter_map(|(c, _)| Family::topk(false, c)));
    families
}

// ---- statistics times ----

/// A valid time: its text and its components.
fn valid_time() -> impl Strategy<Value = (String, (i64, i64, i64, i64, i64, i64))> {
    (0i64..=9999, 1i64..=12, 1i64..=31, 0i64..=23, 0i64..=59, 0i64..=59)
        .prop_filter("a real calendar day", |(y, m, d, ..)| {
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let days = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            *d <= days
        })
        .prop_map(|c| (format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", c.0, c.1, c.2, c.3, c.4, c.5), c))
}

proptest! {
    #[test]
    fn times_never_panic(s in hostile_text()) {
        if let Ok(ms) = stats::parse_time(&s) {
            // Whatever was accepted names the instant written in its first 19 characters.
            prop_assert_eq!(stats::format_time(ms), s.trim()[..19].to_string());
        }
    }

    #[test]
    fn valid_times_round_trip((text, (_, _, _, h, mi, se)) in valid_time(), frac in "[0-9]{0,6}") {
        let ms = stats::parse_time(&text).map_err(TestCaseError::fail)?;
        prop_assert_eq!(stats::format_time(ms), text.clone());
        prop_assert_eq!(ms.rem_euclid(86_400_000), (h * 3600 + mi * 60 + se) * 1000);
        if !frac.is_empty() {
            let with_frac = stats::parse_time(&format!("{text}.{frac}")).map_err(TestCaseError::fail)?;
            let millis: i64 = format!("{frac:0<3}")[..3].parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
            prop_assert_eq!(with_frac, ms + millis);
        }
    }

    #[test]
    fn times_with_a_zone_or_out_of_range_fields_are_refused(
        (text, _) in valid_time(),
        zone in prop::sample::select(vec!["Z", "z", "+01:00", "-05:00"]),
        field in 0usize..5,
    ) {
        let zoned = format!("{text}{zone}");
        prop_assert!(stats::parse_time(&zoned).is_err(), "{} was accepted", zoned);
        // Month 13, day 32, hour 24, minute 60, second 60.
        let (at, bad) = [(5, "13"), (8, "32"), (11, "24"), (14, "60"), (17, "60")][field];
        let broken = format!("{}{bad}{}", &text[..at], &text[at + 2..]);
        prop_assert!(stats::parse_time(&broken).is_err(), "{} was accepted", broken);
    }
}

// ---- statistics filters and sortby ----

/// Escapes a filter value the way the console does.
fn escape(value: &str) -> String {
    value.chars().flat_map(|c| if matches!(c, ',' | ';' | '\\') { vec!['\\', c] } else { vec![c] }).collect()
}

fn condition() -> impl Strategy<Value = Condition> {
    (prop::sample::select(stats::DELIVERY_DIMENSIONS.to_vec()), any::<bool>(), hostile_text())
        .prop_map(|(d, equal, value)| Condition { dimension: d.to_string(), equal, value })
}

proptest! {
    #[test]
    fn filters_never_panic(s in hostile_text()) {
        if let Ok(f) = stats::parse_filters(&s, &stats::DELIVERY_DIMENSIONS) {
            for c in f.conditions() {
                prop_assert!(stats::DELIVERY_DIMENSIONS.contains(&c.dimension.as_str()));
            }
        }
    }

    #[test]
    fn valid_filters_round_trip(conditions in prop::collection::vec(condition(), 1..5), and in any::<bool>()) {
        let text = conditions
            .iter()
            .map(|c| format!("{}{}{}", c.dimension, if c.equal { "==" } else { "!=" }, escape(&c.value)))
            .collect::<Vec<_>>()
            .join(if and { ";" } else { "," });
        let parsed = stats::parse_filters(&text, &stats::DELIVERY_DIMENSIONS).map_err(TestCaseError::fail)?;
        let want = if and && conditions.len() > 1 { Filter::All(conditions) } else { Filter::Any(conditions) };
        prop_assert_eq!(parsed, want);
    }

    #[test]
    fn filters_mixing_and_with_or_are_refused(conditions in prop::collection::vec(condition(), 3..5)) {
        let mut text = String::new();
        for (i, c) in conditions.iter().enumerate() {
            if i > 0 {
                text.push(if i == 1 { ',' } else { ';' });
            }
            text.push_str(&format!("{}=={}", c.dimension, escape(&c.value)));
        }
        prop_assert!(stats::parse_filters(&text, &stats::DELIVERY_DIMENSIONS).is_err());
    }

    #[test]
    fn sortby_never_panics_and_round_trips(
        s in hostile_text(),
        keys in prop::collection::vec((prop::sample::select(stats::DELIVERY_METRICS.to_vec()), any::<bool>()), 0..4),
    ) {
        if let Ok(parsed) = stats::parse_sortby(&s, &stats::DELIVERY_METRICS) {
            prop_assert!(parsed.iter().all(|k| stats::DELIVERY_METRICS.contains(&k.field.as_str())));
        }
        let text = keys.iter().map(|(f, d)| format!("{}{f}", if *d { "-" } else { "" })).collect::<Vec<_>>().join(",");
        let want: Vec<SortKey> = keys.iter().map(|(f, d)| SortKey { field: f.to_string(), descending: *d }).collect();
        prop_assert_eq!(stats::parse_sortby(&text, &stats::DELIVERY_METRICS), Ok(want));
    }
}

// ---- whole statistics queries ----

fn maybe(s: impl Strategy<Value = String>) -> impl Strategy<Value = Option<String>> {
    prop::option::weighted(0.8, s)
}

/// A query with every parameter hostile, or plausible: real names, real times.
fn raw_query() -> impl Strategy<Value = RawQuery> {
    let names = prop::collection::vec(
        prop::sample::select([stats::DELIVERY_DIMENSIONS.to_vec(), stats::DELIVERY_METRICS.to_vec()].concat()),
        0..4,
    )
    .prop_map(|v| v.join(","));
    let time = prop_oneof![valid_time().prop_map(|(t, _)| t), hostile_text()];
    let text = || prop_oneof![hostile_text(), names.clone()];
    (
        (maybe(time.clone()), maybe(hostile_text()), maybe(time)),
        (maybe(text()), maybe(text()), maybe(prop_oneof!["day|hour|5minute", hostile_text()])),
        (maybe(text()), maybe(text()), maybe(prop_oneof!["[0-9]{1,25}", hostile_text()]), maybe("-?[0-9]{1,25}")),
    )
        .prop_map(
            |((starttime, startime, endtime), (dimensions, metrics, granularity), (filters, sortby, start, limit))| {
                RawQuery {
                    starttime,
                    startime,
                    endtime,
                    dimensions,
                    metrics,
                    granularity,
                    filters,
                    sortby,
                    start,
                    limit,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn queries_never_panic_and_accepted_ones_are_sound(raw in raw_query(), now in 0i64..400_000_000_000_000) {
        for family in every_family() {
            let Ok(q) = stats::validate(family, &raw, now) else { continue };
            prop_assert!(q.start_ms < q.end_ms);
            let dims = family.dimensions();
            prop_assert!(q.dimensions.iter().all(|d| dims.contains(&d.as_str()) || d == "event_timestamp_ms"));
            let metrics = family.metrics();
            prop_assert!(q.metrics.iter().all(|m| metrics.contains(&m.as_str())));
            prop_assert!(q.filter.conditions().iter().all(|c| dims.contains(&c.dimension.as_str())));
            if family == Family::Delivery {
                prop_assert!(q.limit <= stats::DELIVERY_MAX_LIMIT);
            }
        }
    }

    #[test]
    fn every_listed_delivery_grouping_set_is_a_valid_query(
        index in any::<prop::sample::Index>(),
        (start, _) in valid_time(),
    ) {
        let sets = Family::Delivery.groupings();
        let set = index.get(&sets);
        let mut parts = set.split('/');
        let granularity = parts.next().unwrap_or_default().to_string();
        let g = Granularity::parse(&granularity).ok_or_else(|| TestCaseError::fail(set.clone()))?;
        let start_ms = stats::parse_time(&start).map_err(TestCaseError::fail)?;
        let raw = RawQuery {
            starttime: Some(start),
            endtime: Some(stats::format_time(start_ms + g.millis())),
            dimensions: Some(parts.collect::<Vec<_>>().join(",")),
            metrics: Some("hits,last_mile_bandwidth_bytes".into()),
            granularity: Some(granularity),
            ..RawQuery::default()
        };
        // "now" is the end of the span, so every granularity is within its retention.
        let q = stats::validate(Family::Delivery, &raw, start_ms + g.millis());
        prop_assert!(q.is_ok(), "{}: {:?}", set, q);
    }
}

// ---- purge URIs ----

fn host() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?){1,3}"
}

proptest! {
    #[test]
    fn purge_uris_never_panic(
        uri_pattern in hostile_text(),
        match_mode in prop_oneof![Just("EXACT_LITERAL".to_string()), Just("PREFIX_LITERAL".to_string()), hostile_text()],
        regex in prop::option::of(hostile_text()),
        patterns in prop::collection::vec(prop_oneof![host(), hostile_text()], 0..3),
    ) {
        let uri = PurgeUri { uri_pattern, match_mode, cache_key_modifier_regex: regex };
        let _ = uri_problems(&uri, &patterns);
    }

    #[test]
    fn purge_uris_of_served_hosts_are_accepted(
        host in host(),
        path in "(/[a-zA-Z0-9._~%-]{1,12}){1,4}",
        scheme in prop::sample::select(vec!["", "http://", "https://"]),
        prefix in any::<bool>(),
        regex in prop::option::of("[a-z=&]{1,10}\\*?"),
    ) {
        let patterns = vec![host.clone()];
        let regex = if prefix { regex } else { None };
        let mode = if prefix { "PREFIX_LITERAL" } else { "EXACT_LITERAL" };
        let uri = PurgeUri {
            uri_pattern: format!("{scheme}{host}{path}"),
            match_mode: mode.into(),
            cache_key_modifier_regex: regex.clone(),
        };
        prop_assert_eq!(uri_problems(&uri, &patterns), Vec::<String>::new());
        // The same object on a host no property serves is refused.
        let other = PurgeUri { uri_pattern: format!("{host}.invalid{path}"), ..uri.clone() };
        prop_assert!(!uri_problems(&other, &patterns).is_empty());
        // A wildcard anywhere but at the end of the modifier is refused.
        let star = PurgeUri { match_mode: "PREFIX_LITERAL".into(), cache_key_modifier_regex: Some("*a".into()), ..uri };
        prop_assert!(!uri_problems(&star, &patterns).is_empty());
    }
}

// ---- network list entries ----

fn ip_net() -> impl Strategy<Value = IpNet> {
    prop_oneof![
        (any::<u32>(), 0u8..=32).prop_map(|(a, p)| IpNet::new(IpAddr::V4(Ipv4Addr::from(a)), p)),
        (any::<u128>(), 0u8..=128).prop_map(|(a, p)| IpNet::new(IpAddr::V6(Ipv6Addr::from(a)), p)),
    ]
    .prop_filter_map("a valid prefix", Result::ok)
}

proptest! {
    #[test]
    fn list_entries_never_panic_and_normalising_is_idempotent(
        text in hostile_text(),
        list_type in prop_oneof![Just("IP".to_string()), Just("GEO".to_string()), hostile_text()],
    ) {
        if let Ok(entry) = normalize_entry(&list_type, &text) {
            prop_assert_eq!(normalize_entry(&list_type, &entry), Ok(entry.clone()));
        }
    }

    #[test]
    fn ip_ranges_are_taken_as_they_are_or_refused_with_the_network_that_holds_them(net in ip_net(), pad in "[ \t]{0,2}") {
        let answer = normalize_entry("IP", &format!("{pad}{net}{pad}"));
        let meant = net.trunc();
        let meant_text = if meant.prefix_len() == meant.max_prefix_len() { meant.addr().to_string() } else { meant.to_string() };
        if net != meant {
            // Host bits set: never silently another range.
            let problem = answer.err().ok_or_else(|| TestCaseError::fail(format!("{net} was taken")))?;
            prop_assert!(problem.ends_with(&format!("did you mean {meant_text}?")), "{}", problem);
            prop_assert_eq!(network_of(&net.to_string()), Some(meant_text));
            return Ok(());
        }
        let entry = answer.map_err(TestCaseError::fail)?;
        let normalised: IpNet = entry.parse().or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
            .map_err(|e| TestCaseError::fail(format!("{entry}: {e}")))?;
        prop_assert_eq!(normalised, net);
        // A prefix longer than the address is not a range.
        let too_long = format!("{}/{}", net.addr(), net.max_prefix_len() + 1);
        prop_assert!(normalize_entry("IP", &too_long).is_err());
    }

    #[test]
    fn country_codes_in_any_case_are_accepted(code in prop::sample::select(COUNTRY_CODES.to_vec()), lower in any::<bool>()) {
        let text = if lower { code.to_ascii_lowercase() } else { code.to_string() };
        prop_assert_eq!(normalize_entry("GEO", &text), Ok(code.to_string()));
        prop_assert!(normalize_entry("IP", &text).is_err());
    }
}

// ---- property configurations ----

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9 _-]{0,15}"
}

fn origin() -> impl Strategy<Value = Origin> {
    (name(), prop_oneof![host(), any::<Ipv4Addr>().prop_map(|a| a.to_string())], 1u16.., any::<bool>()).prop_map(
        |(name, host, port, tls)| Origin {
            id: String::new(),
            readonly: ReadOnly::default(),
            name,
            host,
            port,
            protocol: if tls { "https" } else { "http" }.into(),
        },
    )
}

fn cache_rule() -> impl Strategy<Value = CacheRule> {
    (
        "/[a-z0-9/._*-]{0,20}",
        0u32..=31_536_000,
        prop::sample::select(vec!["all", "none", "include", "exclude"]),
        prop::collection::vec("[a-zA-Z0-9_.\\[\\]-]{1,10}", 0..3),
        any::<bool>(),
    )
        .prop_map(|(path_pattern, ttl_seconds, query, query_params, ignore_case)| CacheRule {
            id: String::new(),
            readonly: ReadOnly::default(),
            path_pattern,
            ttl_seconds,
            cache_key: CacheKey { query: query.into(), query_params, ignore_case },
        })
}

fn waf_rule() -> impl Strategy<Value = WafRule> {
    (
        "[0-9]{1,7}",
        name(),
        prop::sample::select(config::SEVERITIES.to_vec()),
        prop::sample::select(config::WAF_ACTIONS.to_vec()),
        any::<bool>(),
    )
        .prop_map(|(rule_id, name, severity, action, enabled)| WafRule {
            id: String::new(),
            readonly: ReadOnly::default(),
            rule_id,
            name,
            severity: severity.into(),
            action: action.into(),
            enabled,
        })
}

fn shaping_rule() -> impl Strategy<Value = ShapingRule> {
    let values = prop_oneof![
        prop::collection::vec(ip_net().prop_map(|n| n.trunc().to_string()), 1..4).prop_map(|v| ("IP", v)),
        prop::collection::vec(prop::sample::select(COUNTRY_CODES.to_vec()).prop_map(String::from), 1..4)
            .prop_map(|v| ("GEO", v)),
        prop::collection::vec("list-[0-9]{1,3}", 1..3).prop_map(|v| ("NETWORK_LIST", v)),
    ];
    (name(), prop::sample::select(config::SHAPING_ACTIONS.to_vec()), values, 1u32.., any::<bool>()).prop_map(
        |(name, action, (match_type, values), rate, enabled)| ShapingRule {
            id: String::new(),
            readonly: ReadOnly::default(),
            name,
            action: action.into(),
            match_type: match_type.into(),
            values,
            rate_limit_per_minute: (action == "RATE_LIMIT").then_some(rate),
            enabled,
        },
    )
}

/// A valid configuration; its nodes get distinct ids.
fn valid_config() -> impl Strategy<Value = PropertyConfig> {
    (
        "[a-z0-9][a-z0-9._-]{0,20}",
        prop::collection::btree_set(prop_oneof![host(), host().prop_map(|h| format!("*.{h}"))], 0..4),
        prop::collection::vec(origin(), 0..3),
        prop::collection::vec(cache_rule(), 0..3),
        prop::collection::vec(waf_rule(), 0..3),
        prop::collection::vec(shaping_rule(), 0..3),
    )
        .prop_map(|(name, hosts, origins, cache_rules, waf_rules, traffic_shaping_rules)| {
            let mut next = 0;
            let mut id = || {
                next += 1;
                format!("n{next}")
            };
            let mut c = PropertyConfig {
                id: id(),
                name,
                readonly: ReadOnly::default(),
                host_patterns: hosts
                    .into_iter()
                    .map(|pattern| HostPattern { id: id(), readonly: ReadOnly::default(), pattern })
                    .collect(),
                origins,
                cache_rules,
                security: Security { waf_rules, traffic_shaping_rules },
            };
            c.origins.iter_mut().for_each(|o| o.id = id());
            c.cache_rules.iter_mut().for_each(|r| r.id = id());
            c.security.waf_rules.iter_mut().for_each(|r| r.id = id());
            c.security.traffic_shaping_rules.iter_mut().for_each(|r| r.id = id());
            c
        })
}

fn lists_exist(id: &str) -> bool {
    id.starts_with("list-")
}

/// Breaks a valid configuration in one of several ways (or leaves it alone when it has no such node).
fn break_config(mut c: PropertyConfig, how: usize) -> (PropertyConfig, bool) {
    let broke = match how {
        0 => c.origins.first_mut().map(|o| o.port = 0).is_some(),
        1 => c.origins.first_mut().map(|o| o.protocol = "ftp".into()).is_some(),
        2 => c.origins.first_mut().map(|o| o.host = "not a host".into()).is_some(),
        3 => c.cache_rules.first_mut().map(|r| r.path_pattern = "no-slash".into()).is_some(),
        4 => c.cache_rules.first_mut().map(|r| r.ttl_seconds = 31_536_001).is_some(),
        5 => c.security.waf_rules.first_mut().map(|r| r.severity = "SEVERE".into()).is_some(),
        6 => c.security.traffic_shaping_rules.first_mut().map(|r| r.values.clear()).is_some(),
        7 => {
            let id = c.id.clone();
            c.origins.first_mut().map(|o| o.id = id).is_some()
        }
        _ => {
            let dup = c.host_patterns.first().cloned();
            dup.map(|mut h| {
                h.id = "dup".into();
                c.host_patterns.push(h);
            })
            .is_some()
        }
    };
    (c, broke)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn valid_configs_validate_and_round_trip(c in valid_config()) {
        prop_assert_eq!(config::validate(&c, &lists_exist), Vec::<String>::new());
        let json = serde_json::to_value(&c).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let back: PropertyConfig = serde_json::from_value(json.clone()).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(&back, &c);
        prop_assert!(config::diff(&json, &json).is_empty());
    }

    #[test]
    fn broken_configs_are_refused(c in valid_config(), how in 0usize..9) {
        let (broken, did) = break_config(c, how);
        if did {
            prop_assert!(!config::validate(&broken, &lists_exist).is_empty(), "{:#?}", broken);
        }
    }

    #[test]
    fn arbitrary_json_never_panics_the_config_code(doc in json(), other in json(), path in hostile_text()) {
        if let Ok(c) = serde_json::from_value::<PropertyConfig>(doc.clone()) {
            let _ = config::validate(&c, &lists_exist);
        }
        let _ = config::diff(&doc, &other);
        let _ = config::merge3(&doc, &other, &doc);
        let mut target = doc.clone();
        let _ = config::set_at(&mut target, &path, Some(other.clone()));
        let _ = config::set_at(&mut target, &format!("$.{path}"), None);
    }

    /// The merge identities: a change on one side only is taken whole; the same change on both sides is no
    /// conflict.
    #[test]
    fn merge_takes_one_sided_changes(base in valid_config(), theirs in valid_config(), mine in valid_config()) {
        let v = |c: &PropertyConfig| serde_json::to_value(c).unwrap_or(Value::Null);
        let (b, t, m) = (v(&base), v(&theirs), v(&mine));
        prop_assert_eq!(config::merge3(&b, &t, &b), (t.clone(), vec![]));
        prop_assert_eq!(config::merge3(&b, &b, &m), (m.clone(), vec![]));
        prop_assert_eq!(config::merge3(&b, &m, &m), (m.clone(), vec![]));
        // Where both changed, the conflicts are the same seen from either side, and each can be resolved at
        // its path.
        let (mut merged, conflicts) = config::merge3(&b, &t, &m);
        let (_, mirrored) = config::merge3(&b, &m, &t);
        let paths = |cs: &[config::Conflict]| cs.iter().map(|c| c.path.clone()).collect::<std::collections::BTreeSet<_>>();
        prop_assert_eq!(paths(&conflicts), paths(&mirrored));
        for c in &conflicts {
            prop_assert!(config::set_at(&mut merged, &c.path, c.mine.clone()), "{}", c.path);
        }
    }

    #[test]
    fn edits_to_different_nodes_merge_cleanly(base in valid_config(), ttl in 0u32..1000, port in 1u16..) {
        prop_assume!(!base.cache_rules.is_empty() && !base.origins.is_empty());
        let (mut theirs, mut mine) = (base.clone(), base.clone());
        theirs.cache_rules[0].ttl_seconds = ttl;
        mine.origins[0].port = port;
        let mut both = base.clone();
        both.cache_rules[0].ttl_seconds = ttl;
        both.origins[0].port = port;
        let v = |c: &PropertyConfig| serde_json::to_value(c).unwrap_or(Value::Null);
        let (merged, conflicts) = config::merge3(&v(&base), &v(&theirs), &v(&mine));
        prop_assert_eq!(conflicts, vec![]);
        prop_assert_eq!(merged, v(&both));
    }
}

/// Any JSON document, a few levels deep, with keys that the configuration code treats specially.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        hostile_text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            prop::sample::select(vec!["id", "name", "readonly", "origins", "cache_rules", "port", "security"])
                .prop_map(String::from),
            hostile_text(),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(key, inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
