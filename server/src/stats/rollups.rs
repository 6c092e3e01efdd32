//! The rollup vocabulary both engines share: every dimension and its id, the metrics, which rollups are kept
//! (kind, granularity and grouping set), which one answers a query, and how long raw security events stay.

use edge_api::stats::{Family, Granularity, INTEGER_DIMENSIONS, Query, TOPK_URL_GROUPINGS};

/// Every dimension the engine knows, across families. Its position is the dimension's id.
pub const DIMS: [&str; 26] = [
    "browser_name",
    "cache_status",
    "content_type",
    "country",
    "country_code",
    "device_os",
    "device_type",
    "domain",
    "gna_cache_status",
    "http_status_code",
    "property",
    "request_type",
    "scheme",
    "request_url",
    "event_severity",
    "event_type",
    "event_action",
    "client_connection_remote_ip",
    "client_ip",
    "client_browser",
    "client_country_code",
    "client_asn",
    "rule_id",
    "request_path",
    "waf_action",
    "source",
];

pub fn dim_id(name: &str) -> Option<usize> {
    DIMS.iter().position(|d| *d == name)
}

pub(super) const METRICS: usize = 8;
pub(super) const HITS: usize = 1;
/// Raw security events are kept for the previous three days plus today.
pub(super) const EVENT_DAYS: i64 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Delivery,
    TopKUrl,
    WafTrend,
    ShapingTrend,
    RequestTrend,
    /// Security top-K of events of this source ("waf" / "trafficshaping"), rate-limited only if `rate_limited`.
    TopK {
        waf: bool,
        rate_limited: bool,
    },
}

/// What one rollup aggregates: which records, at which granularity, by which dimensions.
#[derive(Debug, Clone)]
pub(super) struct Spec {
    pub(super) kind: Kind,
    pub(super) granularity: Granularity,
    /// Dimension ids, ascending.
    pub(super) dims: Vec<usize>,
    pub(super) metrics: usize,
}

pub(super) fn ids(names: &[&str]) -> Vec<usize> {
    let mut v: Vec<usize> = names.iter().filter(|n| **n != "customer").filter_map(|n| dim_id(n)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Every rollup the engine keeps.
pub(super) fn all_specs() -> Vec<Spec> {
    let mut specs = Vec::new();
    for g in Granularity::ALL {
        specs.push(Spec { kind: Kind::Delivery, granularity: g, dims: Vec::new(), metrics: METRICS });
        for set in g.delivery_groupings() {
            specs.push(Spec {
                kind: Kind::Delivery,
                granularity: g,
                dims: ids(&set.split('/').collect::<Vec<_>>()),
                metrics: METRICS,
            });
        }
        for (kind, family) in [
            (Kind::WafTrend, Family::WafTrends),
            (Kind::ShapingTrend, Family::ShapingTrends),
            (Kind::RequestTrend, Family::RequestTrends),
        ] {
            for set in family.groupings() {
                let mut parts: Vec<&str> = set.split('/').collect();
                if parts.remove(0) == g.as_str() {
                    specs.push(Spec { kind, granularity: g, dims: ids(&parts), metrics: 1 });
                }
            }
        }
    }
    for set in TOPK_URL_GROUPINGS {
        specs.push(Spec {
            kind: Kind::TopKUrl,
            granularity: Granularity::Day,
            dims: ids(&set.split('/').collect::<Vec<_>>()),
            metrics: 1,
        });
    }
    for (waf, rate_limited, dim) in [
        (true, false, "client_browser"),
        (true, false, "client_ip"),
        (true, false, "client_country_code"),
        (true, false, "request_path"),
        (true, false, "rule_id"),
        (true, false, "event_severity"),
        (false, false, "client_browser"),
        (false, false, "client_ip"),
        (false, false, "client_country_code"),
        (false, false, "request_path"),
        (false, true, "client_ip"),
        (false, true, "client_country_code"),
    ] {
        for g in [Granularity::Hour, Granularity::Day] {
            for extra in [&[][..], &["domain"], &["property"], &["domain", "property"]] {
                let mut names = vec![dim];
                names.extend_from_slice(extra);
                specs.push(Spec {
                    kind: Kind::TopK { waf, rate_limited },
                    granularity: g,
                    dims: ids(&names),
                    metrics: 1,
                });
            }
        }
    }
    specs
}

/// Which rollup serves `dims` plus the dimensions filtered on: the exact grouping set when it holds the
/// filtered dimensions, else the smallest one that holds them all (aggregated at query time).
pub(super) fn choose(
    specs: &[Spec],
    kind: Kind,
    granularity: Granularity,
    dims: &[usize],
    filtered: &[usize],
) -> Option<(usize, bool)> {
    let mut need: Vec<usize> = dims.iter().chain(filtered).copied().collect();
    need.sort_unstable();
    need.dedup();
    let mut exact: Vec<usize> = dims.to_vec();
    exact.sort_unstable();
    let candidates = specs.iter().enumerate().filter(|(_, s)| s.kind == kind && s.granularity == granularity);
    if let Some((i, _)) = candidates.clone().find(|(_, s)| s.dims == exact && need == exact) {
        return Some((i, false));
    }
    candidates
        .filter(|(_, s)| need.iter().all(|d| s.dims.contains(d)))
        .min_by_key(|(_, s)| s.dims.len())
        .map(|(i, _)| (i, true))
}

pub(super) fn day_start(ms: i64) -> i64 {
    ms - ms.rem_euclid(86_400_000)
}

pub(super) fn kind_of(family: Family) -> Kind {
    match family {
        Family::Delivery => Kind::Delivery,
        Family::TopKUrl => Kind::TopKUrl,
        Family::WafTrends => Kind::WafTrend,
        Family::ShapingTrends => Kind::ShapingTrend,
        Family::RequestTrends => Kind::RequestTrend,
        Family::WafTopK(_) => Kind::TopK { waf: true, rate_limited: false },
        Family::ShapingTopK(c) => Kind::TopK { waf: false, rate_limited: c.starts_with("ratelimit") },
        Family::Events => Kind::Delivery,
    }
}

pub(super) fn metric_index(family: Family, name: &str) -> usize {
    match family {
        Family::Delivery => edge_api::stats::DELIVERY_METRICS.iter().position(|m| *m == name).unwrap_or(HITS),
        _ => 0,
    }
}

pub(super) fn is_int(dim: &str) -> bool {
    INTEGER_DIMENSIONS.contains(&dim)
}

/// The columns of an answer, as both engines give them: the bucket's start and end unless the family has no
/// time, then the query's dimensions (integers where the API says so), then its metrics.
pub(super) fn answer_columns(q: &Query, with_time: bool) -> Vec<(String, bool)> {
    let mut columns = Vec::new();
    if with_time {
        columns.push(("starttime".to_string(), false));
        columns.push(("endtime".to_string(), false));
    }
    columns.extend(q.dimensions.iter().map(|d| (d.clone(), is_int(d))));
    columns.extend(q.metrics.iter().map(|m| (m.clone(), true)));
    columns
}
