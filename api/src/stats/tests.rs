//! The vocabulary, the time format and the query rules.

use super::*;

#[test]
fn times_are_utc_without_designator() {
    assert_eq!(parse_time("1970-01-01T00:00:00"), Ok(0));
    assert_eq!(parse_time("2026-01-01T00:00:00"), Ok(1_767_225_600_000));
    assert_eq!(parse_time("2026-01-01T00:00:00.25"), Ok(1_767_225_600_250));
    assert_eq!(format_time(1_767_225_600_000), "2026-01-01T00:00:00");
    assert_eq!(format_time(951_782_400_000), "2000-02-29T00:00:00");
    for bad in ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00+01:00", "2026-01-01T00:00:00-0500"] {
        assert!(parse_time(bad).unwrap_err().contains("time-zone designator"), "{bad}");
    }
    for bad in
        ["", "2026-01-01", "2026-02-30T00:00:00", "2026-01-01 00:00:00", "2026-13-01T00:00:00", "2026-01-01T24:00:00"]
    {
        assert!(parse_time(bad).is_err(), "{bad}");
    }
    for ms in [0, 1_767_225_600_000, 4_102_444_799_000] {
        assert_eq!(parse_time(&format_time(ms)), Ok(ms));
    }
}

#[test]
fn filters_are_all_and_or_all_or_with_escapes() {
    let dims = ["domain", "country", "http_status_code"];
    assert_eq!(parse_filters("", &dims), Ok(Filter::None));
    assert_eq!(
        parse_filters("domain==a.com;country!=DE", &dims),
        Ok(Filter::All(vec![
            Condition { dimension: "domain".into(), equal: true, value: "a.com".into() },
            Condition { dimension: "country".into(), equal: false, value: "DE".into() },
        ]))
    );
    assert_eq!(
        parse_filters(r"domain==a\,b,domain==c\;d\\", &dims),
        Ok(Filter::Any(vec![
            Condition { dimension: "domain".into(), equal: true, value: "a,b".into() },
            Condition { dimension: "domain".into(), equal: true, value: r"c;d\".into() },
        ]))
    );
    assert_eq!(
        parse_filters("domain==x=y", &dims),
        Ok(Filter::Any(vec![Condition { dimension: "domain".into(), equal: true, value: "x=y".into() }]))
    );
    assert!(parse_filters("domain==a,country==b;country==c", &dims).unwrap_err().contains("not both"));
    assert!(parse_filters("hits==5", &dims).unwrap_err().contains("cannot filter on \"hits\""));
    assert!(parse_filters("domain=a", &dims).is_err());
    assert!(parse_filters("domain==a\\", &dims).is_err());
}

#[test]
fn grouping_sets_accept_any_order_and_nothing_unlisted() {
    let q = |g, dims: &[&str]| {
        Family::Delivery.is_grouping_set(Some(g), &dims.iter().map(|d| d.to_string()).collect::<Vec<_>>())
    };
    assert!(q(Granularity::FiveMinute, &["property", "country"]));
    assert!(q(Granularity::FiveMinute, &[]));
    assert!(!q(Granularity::FiveMinute, &["device_os", "property"]), "hour and day only");
    assert!(q(Granularity::Hour, &["device_os", "property"]));
    assert!(!q(Granularity::Day, &["scheme"]), "only listed for hour");
    assert_eq!(Family::Delivery.groupings().len(), 3 + 33 + 34 + 48);
    assert!(Family::WafTrends.groupings().contains(&"hour/domain/rule_id".to_string()));
    assert!(Family::topk(true, "ratelimitcountry").is_none());
    assert_eq!(
        Family::topk(false, "ratelimitcountry").and_then(Family::category_dimension),
        Some("client_country_code")
    );
}

fn raw(pairs: &[(&str, &str)]) -> RawQuery {
    let mut r = RawQuery::default();
    for (k, v) in pairs {
        let v = Some(v.to_string());
        match *k {
            "starttime" => r.starttime = v,
            "startime" => r.startime = v,
            "endtime" => r.endtime = v,
            "dimensions" => r.dimensions = v,
            "metrics" => r.metrics = v,
            "granularity" => r.granularity = v,
            "filters" => r.filters = v,
            "sortby" => r.sortby = v,
            "start" => r.start = v,
            "limit" => r.limit = v,
            _ => panic!("{k}"),
        }
    }
    r
}

const NOW: i64 = 1_767_225_600_000;

#[test]
fn a_delivery_query_is_validated_with_every_rule() {
    let ok = raw(&[
        ("startime", "2025-12-31T00:00:00"),
        ("endtime", "2026-01-01T00:00:00"),
        ("dimensions", "property,country"),
        ("metrics", "hits,last_mile_bandwidth_bytes"),
        ("granularity", "hour"),
        ("sortby", "-hits,country"),
        ("limit", "9000"),
    ]);
    let q = validate(Family::Delivery, &ok, NOW).unwrap();
    assert_eq!(q.limit, 2500, "a larger limit yields 2500");
    assert_eq!(q.dimensions, ["property", "country"]);
    assert_eq!(q.sortby[0], SortKey { field: "hits".into(), descending: true });

    let problems = |pairs: &[(&str, &str)]| validate(Family::Delivery, &raw(pairs), NOW).unwrap_err();
    let base = [
        ("starttime", "2025-12-31T00:00:00"),
        ("endtime", "2026-01-01T00:00:00"),
        ("metrics", "hits"),
        ("granularity", "hour"),
    ];
    let with = |extra: &[(&str, &str)]| {
        let mut v = base.to_vec();
        for e in extra {
            v.retain(|(k, _)| k != &e.0);
            v.push(*e);
        }
        problems(&v)
    };
    assert!(with(&[("starttime", "2026-01-01T00:00:00Z")])[0].contains("time-zone designator"));
    assert!(with(&[("starttime", "2026-01-02T00:00:00")])[0].contains("earlier than endtime"));
    assert!(with(&[("dimensions", "colour")])[0].contains("unknown dimension"));
    assert!(
        with(&[("dimensions", "device_os,property"), ("granularity", "5minute")])[0]
            .contains("not a listed grouping set")
    );
    assert!(with(&[("metrics", "")])[0].contains("metrics is required"));
    assert!(with(&[("granularity", "week")])[0].contains("granularity"));
    assert!(with(&[("filters", "hits==1")])[0].contains("cannot filter"));
    assert!(with(&[("filters", "http_status_code==ok")])[0].contains("takes an integer"));
    assert!(with(&[("sortby", "-colour")])[0].contains("cannot sort"));
    assert!(with(&[("start", "-1")])[0].contains("start"));
    assert!(with(&[("startime", "2025-12-31T00:00:00")])[0].contains("not both"));
    assert!(
        problems(&[
            ("starttime", "2025-11-01T00:00:00"),
            ("endtime", "2025-11-02T00:00:00"),
            ("metrics", "hits"),
            ("granularity", "5minute")
        ])[0]
            .contains("one week")
    );
    // Retention bounds the span's start, not its end: half a span outside what is kept is refused too,
    // naming the earliest start (retention plus one bucket, rounded up to the second) and the fallback.
    let at = |g: &str, start: &str| {
        validate(
            Family::Delivery,
            &raw(&[("starttime", start), ("endtime", "2025-12-31T00:00:00"), ("metrics", "hits"), ("granularity", g)]),
            NOW,
        )
    };
    let refused = at("5minute", "2025-12-24T23:54:59").unwrap_err();
    assert_eq!(
        refused,
        ["5-minute data is kept for one week: with granularity 5minute starttime must be 2025-12-24T23:55:00 or \
          later; use hour or day for older spans"]
    );
    assert!(at("5minute", "2025-12-24T23:55:00").is_ok());
    let refused = at("hour", "2025-11-30T22:00:00").unwrap_err();
    assert!(refused[0].contains("hourly data is kept for 31 days"), "{refused:?}");
    assert!(refused[0].contains("2025-11-30T23:00:00 or later; use day"), "{refused:?}");
    assert!(at("hour", "2025-11-30T23:00:00").is_ok());
    assert!(at("day", "2020-01-01T00:00:00").is_ok(), "daily data is kept for ever");
}

#[test]
fn events_always_begin_with_the_timestamp_and_topk_has_its_defaults() {
    let q = validate(
        Family::Events,
        &raw(&[
            ("starttime", "2025-12-31T00:00:00"),
            ("endtime", "2026-01-01T00:00:00"),
            ("dimensions", "client_ip,event_timestamp_ms"),
        ]),
        NOW,
    )
    .unwrap();
    assert_eq!(q.dimensions, ["event_timestamp_ms", "client_ip"]);
    assert_eq!(q.limit, 10);
    let family = Family::topk(true, "country").unwrap();
    let q = validate(family, &raw(&[("starttime", "2025-12-31T00:00:00"), ("endtime", "2026-01-01T00:00:00")]), NOW)
        .unwrap();
    assert_eq!(
        (q.dimensions.clone(), q.metrics.clone(), q.limit),
        (vec!["client_country_code".to_string()], vec!["hits".to_string()], 20)
    );
    let q = validate(
        family,
        &raw(&[("starttime", "2025-12-31T00:00:00"), ("endtime", "2026-01-01T00:00:00"), ("limit", "5000")]),
        NOW,
    )
    .unwrap();
    assert_eq!(q.limit, 1000);
}

#[test]
fn every_name_in_the_tables_is_a_dimension_or_a_metric() {
    let dimension = |d: &str| assert!(Dimension::parse(d).is_some(), "{d} is not a Dimension");
    let tables = [
        &DELIVERY_DIMENSIONS[..],
        &INTEGER_DIMENSIONS,
        &TOPK_URL_DIMENSIONS,
        &EVENT_DIMENSIONS,
        &WAF_TREND_DIMENSIONS,
        &SHAPING_TREND_DIMENSIONS,
        &REQUEST_TREND_DIMENSIONS,
        &TOPK_FILTER_DIMENSIONS,
    ];
    tables.iter().flat_map(|t| t.iter()).for_each(|d| dimension(d));
    WAF_CATEGORIES.iter().chain(&SHAPING_CATEGORIES).for_each(|(_, d)| dimension(d));
    let sets = [&GROUPINGS_FIVE_MINUTE[..], &GROUPINGS_HOUR, &GROUPINGS_DAY, &TOPK_URL_GROUPINGS];
    sets.iter().flat_map(|t| t.iter()).flat_map(|set| set.split('/')).for_each(dimension);
    for m in DELIVERY_METRICS {
        assert!(Metric::parse(m).is_some(), "{m} is not a Metric");
    }
    assert!(Dimension::HttpStatusCode.is_integer() && !Dimension::Country.is_integer());
    assert_eq!(Dimension::ALL.len(), 28);
    assert_eq!(Metric::ALL.len(), DELIVERY_METRICS.len());
}
