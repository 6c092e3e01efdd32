//! The rollup vocabulary both engines share: every dimension and its id, the metrics, which rollups are kept
//! (kind, granularity and grouping set), which one answers a query, and how long raw security events stay.

use edge_api::stats::{Condition, Family, Filter, Granularity, INTEGER_DIMENSIONS, Query, TOPK_URL_GROUPINGS};

use super::QueryError;

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

/// The rollup whose rows stand for each spec's (an index into `specs`): its own if no other rollup kept
/// `together` with it holds all its dimensions, else the smallest of those that no other holds. Only those
/// rollups are summed as batches come; another one is summed from its stand-in's rows when read — the same
/// sums, its rows in the same order (a row's first record is that of the first stand-in row holding it).
pub(super) fn stand_ins(specs: &[Spec], together: impl Fn(usize, usize) -> bool) -> Vec<usize> {
    let holds = |j: usize, i: usize| {
        together(j, i)
            && specs[j].dims.len() > specs[i].dims.len()
            && specs[i].dims.iter().all(|d| specs[j].dims.contains(d))
    };
    let kept = |i: usize| !(0..specs.len()).any(|j| holds(j, i));
    (0..specs.len())
        .map(|i| {
            if kept(i) {
                return i;
            }
            (0..specs.len())
                .filter(|j| kept(*j) && holds(*j, i))
                .min_by_key(|j| (specs[*j].dims.len(), *j))
                .unwrap_or(i)
        })
        .collect()
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
fn choose(
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

/// The rollup that answers a query of a rollup family, and how: what both engines decide before they read.
pub(super) struct Target {
    pub(super) granularity: Granularity,
    /// One row a combination of values over the whole range (the security top-K families), not one a bucket.
    pub(super) whole_range: bool,
    /// The query's dimensions held in rollups (all but `customer`, the tenant): their place in the query and
    /// their id.
    pub(super) stored: Vec<(usize, usize)>,
    /// The rollup read: its index in [`all_specs`].
    pub(super) spec: usize,
    /// Whether the rollup holds more dimensions than the query's, so that its rows are grouped as read.
    pub(super) aggregate: bool,
}

impl Target {
    /// The rollup of `specs` that answers `q` at `now_ms`, at the query's granularity (daily by default), or
    /// [`QueryError::Unsupported`] when no rollup holds the dimensions filtered on with the query's.
    pub(super) fn of(specs: &[Spec], q: &Query, now_ms: i64) -> Result<Target, QueryError> {
        let whole_range = matches!(q.family, Family::WafTopK(_) | Family::ShapingTopK(_));
        let granularity = if whole_range {
            // Hourly rollups while they are kept, daily (whole days) before.
            let hourly_from = Granularity::Hour.kept_from(now_ms).unwrap_or(i64::MIN) + Granularity::Hour.millis();
            if q.start_ms >= hourly_from { Granularity::Hour } else { Granularity::Day }
        } else {
            q.granularity.unwrap_or(Granularity::Day)
        };
        let stored: Vec<(usize, usize)> = q
            .dimensions
            .iter()
            .enumerate()
            .filter(|(_, d)| *d != "customer")
            .filter_map(|(pos, d)| dim_id(d).map(|id| (pos, id)))
            .collect();
        let dim_ids: Vec<usize> = stored.iter().map(|(_, id)| *id).collect();
        let filtered: Vec<usize> = q.filter.conditions().iter().filter_map(|c| dim_id(&c.dimension)).collect();
        let (spec, aggregate) = choose(specs, kind_of(q.family), granularity, &dim_ids, &filtered).ok_or_else(|| {
            QueryError::Unsupported("no rollup holds the dimensions filtered on together with the query's; filter on the query's dimensions".into())
        })?;
        Ok(Target { granularity, whole_range, stored, spec, aggregate })
    }

    /// The ids of the query's stored dimensions, in the query's order.
    pub(super) fn dim_ids(&self) -> Vec<usize> {
        self.stored.iter().map(|(_, id)| *id).collect()
    }
}

/// A filter as an engine tests it: its conditions on the `customer` dimension (the tenant, a constant)
/// decided, each other one made into what the engine tests with.
pub(super) enum Conditions<T> {
    Nothing,
    Everything,
    All(Vec<T>),
    Any(Vec<T>),
}

impl<T> Conditions<T> {
    /// `filter` for the customer named `customer`: each condition on a stored dimension becomes
    /// `test(dimension id, equal, value)`, the value of an integer dimension written as stored (`007` is
    /// `7`; not a number, it matches no stored value); `test` gives None when what the engine reads does not
    /// hold the dimension.
    pub(super) fn of(
        filter: &Filter,
        customer: &str,
        test: impl Fn(usize, bool, String) -> Option<T>,
    ) -> Result<Conditions<T>, QueryError> {
        let constant = |c: &Condition| (c.value == customer) == c.equal;
        let tests = |conds: &[Condition]| -> Result<Vec<T>, QueryError> {
            conds
                .iter()
                .filter(|c| c.dimension != "customer")
                .map(|c| {
                    let d = dim_id(&c.dimension)
                        .ok_or_else(|| QueryError::Unsupported(format!("cannot filter on {}", c.dimension)))?;
                    let value = if is_int(&c.dimension) {
                        c.value.trim().parse::<i64>().map(|v| v.to_string()).unwrap_or_default()
                    } else {
                        c.value.clone()
                    };
                    test(d, c.equal, value).ok_or_else(|| {
                        QueryError::Unsupported(format!("no rollup holds {} for this query", c.dimension))
                    })
                })
                .collect()
        };
        Ok(match filter {
            Filter::None => Conditions::Everything,
            Filter::All(conds) => {
                if conds.iter().any(|c| c.dimension == "customer" && !constant(c)) {
                    Conditions::Nothing
                } else {
                    let t = tests(conds)?;
                    if t.is_empty() { Conditions::Everything } else { Conditions::All(t) }
                }
            }
            Filter::Any(conds) => {
                if conds.iter().any(|c| c.dimension == "customer" && constant(c)) {
                    Conditions::Everything
                } else {
                    let t = tests(conds)?;
                    if t.is_empty() { Conditions::Nothing } else { Conditions::Any(t) }
                }
            }
        })
    }
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
