//! The statistics view's state as kept in the page's address, and the queries it makes.

use edge_api::stats::{DELIVERY_DIMENSIONS, Family, Filter, Granularity, format_time, parse_filters};

use crate::{
    api,
    components::range::{Range, allowed_granularities, natural_granularity, resolve},
};

pub const PAGE_SIZE: u64 = 50;

/// The view's state, as kept in the address.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub preset: String,
    pub start: String,
    pub end: String,
    pub granularity: Option<Granularity>,
    pub dims: Vec<String>,
    pub metrics: Vec<String>,
    /// The API filter expression.
    pub filters: String,
    pub sort: String,
    pub page: u64,
    pub compare: bool,
    pub stacked: bool,
    /// HTTP status codes grouped into their classes (2xx, 3xx, 4xx, 5xx).
    pub classes: bool,
}

impl View {
    pub fn from_params(get: impl Fn(&str) -> Option<String>) -> View {
        let list = |k: &str| {
            get(k)
                .map(|v| v.split(',').filter(|s| !s.is_empty()).map(String::from).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let metrics = list("metrics");
        View {
            preset: get("range").unwrap_or_else(|| "24h".into()),
            start: get("start").unwrap_or_default(),
            end: get("end").unwrap_or_default(),
            granularity: get("g").and_then(|g| Granularity::parse(&g)),
            dims: get("dims").map(|_| list("dims")).unwrap_or_else(|| vec!["country".into()]),
            metrics: if metrics.is_empty() { vec!["hits".into(), "last_mile_bandwidth_bytes".into()] } else { metrics },
            filters: get("filters").unwrap_or_default(),
            sort: get("sort").unwrap_or_default(),
            page: get("page").and_then(|p| p.parse().ok()).unwrap_or(0),
            compare: get("cmp").as_deref() == Some("1"),
            stacked: get("chart").as_deref() == Some("stacked"),
            classes: get("classes").as_deref() == Some("1"),
        }
    }

    /// The address's query string.
    pub fn to_query(&self) -> String {
        let mut p = vec![format!("range={}", self.preset)];
        if self.preset == "custom" {
            p.push(format!("start={}", self.start));
            p.push(format!("end={}", self.end));
        }
        if let Some(g) = self.granularity {
            p.push(format!("g={}", g.as_str()));
        }
        p.push(format!("dims={}", self.dims.join(",")));
        p.push(format!("metrics={}", self.metrics.join(",")));
        if !self.filters.is_empty() {
            p.push(format!("filters={}", api::encode(&self.filters)));
        }
        if !self.sort.is_empty() {
            p.push(format!("sort={}", api::encode(&self.sort)));
        }
        if self.page > 0 {
            p.push(format!("page={}", self.page));
        }
        if self.compare {
            p.push("cmp=1".into());
        }
        if self.stacked {
            p.push("chart=stacked".into());
        }
        if self.classes {
            p.push("classes=1".into());
        }
        format!("?{}", p.join("&"))
    }

    pub fn range(&self, now: i64) -> Option<Range> {
        resolve(&self.preset, &self.start, &self.end, now)
    }

    /// The granularity in effect: as chosen if the guidance allows it, else the natural one.
    pub fn granularity(&self, range: Range, now: i64) -> Granularity {
        let allowed = allowed_granularities(range, now);
        match self.granularity {
            Some(g) if allowed.contains(&g) => g,
            _ => {
                // The span's natural granularity, else the nearest one (coarser first) at which the dimensions
                // form a grouping set: "Last 7 days" by country is daily, as country has no hourly set.
                let n = natural_granularity(range);
                let coarser = allowed.iter().filter(|g| g.millis() > n.millis());
                let finer = allowed.iter().rev().filter(|g| g.millis() < n.millis());
                let candidates = allowed.iter().filter(|g| **g == n).chain(coarser).chain(finer);
                candidates
                    .copied()
                    .find(|g| Family::Delivery.is_grouping_set(Some(*g), &self.dims))
                    .unwrap_or(if allowed.contains(&n) { n } else { allowed[0] })
            }
        }
    }
}

/// Whether `dims` form a grouping set at `g`, and which single dimensions could be added and still lead to
/// one.
pub fn grouping_state(g: Granularity, dims: &[String]) -> (bool, Vec<&'static str>) {
    let valid = Family::Delivery.is_grouping_set(Some(g), dims);
    let addable = DELIVERY_DIMENSIONS
        .iter()
        .copied()
        .filter(|d| *d != "customer" && !dims.iter().any(|x| x == d))
        .filter(|d| {
            g.delivery_groupings().iter().any(|set| {
                let parts: Vec<&str> = set.split('/').collect();
                parts.contains(d) && dims.iter().all(|x| parts.contains(&x.as_str()))
            })
        })
        .collect();
    (valid, addable)
}

/// The parameters of a delivery query for a view over `range`.
pub fn params(
    v: &View,
    range: Range,
    g: Granularity,
    dims: &[String],
    sort: &str,
    start: u64,
    limit: u64,
) -> Vec<(&'static str, String)> {
    vec![
        ("starttime", format_time(range.start)),
        ("endtime", format_time(range.end)),
        ("granularity", g.as_str().into()),
        ("dimensions", dims.join(",")),
        ("metrics", query_metrics(&v.metrics).join(",")),
        ("filters", v.filters.clone()),
        ("sortby", sort.into()),
        ("start", start.to_string()),
        ("limit", limit.to_string()),
    ]
}

/// Whether one more condition can be joined to `filters` by AND: the API takes AND or OR in one expression,
/// never both, so not when two or more conditions are joined by OR.
pub fn narrowable(filters: &str, dims: &[&str]) -> bool {
    match parse_filters(filters, dims) {
        Ok(Filter::Any(c)) => c.len() <= 1,
        Ok(_) => true,
        Err(_) => false,
    }
}

/// The dimensions of a chart's series at `g`: the first dimension alone when that is a grouping set (one row
/// per time and value), else all of them.
pub fn series_dims(dims: &[String], g: Granularity) -> Vec<String> {
    match dims.first() {
        Some(d) if Family::Delivery.is_grouping_set(Some(g), std::slice::from_ref(d)) => vec![d.clone()],
        _ => dims.to_vec(),
    }
}

/// The query that ranks the values of a chart's first dimension over `range` at `g`: the coarsest
/// granularity (day, then hour) at which the dimension (alone, else with the others) is a grouping set and
/// whose rollup is kept from the start of the range's first whole bucket — a few rows per value cover the
/// range and a little before — else `g` itself. Returns the range, granularity and dimensions to ask for.
pub fn ranking(dims: &[String], range: Range, g: Granularity, now: i64) -> (Range, Granularity, Vec<String>) {
    let first: Vec<String> = dims.iter().take(1).cloned().collect();
    [Granularity::Day, Granularity::Hour]
        .into_iter()
        .filter(|c| c.millis() > g.millis())
        .flat_map(|c| [(c, first.clone()), (c, dims.to_vec())])
        .filter(|(c, d)| Family::Delivery.is_grouping_set(Some(*c), d))
        .map(|(c, d)| (Range { start: range.start - range.start.rem_euclid(c.millis()), end: range.end }, c, d))
        .find(|(r, c, _)| allowed_granularities(*r, now).contains(c))
        .unwrap_or_else(|| (range, g, series_dims(dims, g)))
}

/// The metric that ranks the values of a chart: the first chosen that adds up (a latency is ranked by its
/// requests).
pub fn rank_metric(metrics: &[String]) -> String {
    metrics.iter().find(|m| !crate::components::answers::is_latency(m)).cloned().unwrap_or_else(|| "hits".into())
}

/// The metrics to ask for: those chosen, and hits when a latency is among them (its average is its sum over
/// the hits).
pub fn query_metrics(chosen: &[String]) -> Vec<String> {
    let mut m = chosen.to_vec();
    if m.iter().any(|x| crate::components::answers::is_latency(x)) && !m.iter().any(|x| x == "hits") {
        m.push("hits".into());
    }
    m
}

/// How a metric reads in a label: `last_mile_bandwidth_bytes` → "Bandwidth to users".
pub fn metric_label(m: &str) -> String {
    crate::components::labels::metric_name(m)
}

/// Why dimension `d` cannot be added to `dims` at `g` — which grouping sets it would need — in words, for the
/// chip's hover text and its screen-reader description.
pub fn disabled_reason(d: &str, dims: &[String], g: Granularity) -> String {
    use crate::components::labels::dimension_name;
    let name = dimension_name(d);
    let with: Vec<String> = dims.iter().map(|x| dimension_name(x)).collect();
    let holds = |set: &str| {
        let parts: Vec<&str> = set.split('/').collect();
        parts.contains(&d) && dims.iter().all(|x| parts.contains(&x.as_str()))
    };
    let elsewhere: Vec<String> = Granularity::ALL
        .into_iter()
        .filter(|o| *o != g)
        .filter_map(|o| {
            let set = o.delivery_groupings().iter().filter(|s| holds(s)).min_by_key(|s| s.len())?;
            let set: Vec<String> = set.split('/').map(dimension_name).collect();
            Some(format!("{} granularity ({})", granularity_name(o), set.join(" + ")))
        })
        .collect();
    if with.is_empty() {
        return format!("{name} is not kept at {} granularity.", granularity_name(g));
    }
    match elsewhere.is_empty() {
        true => format!("{name} is never kept together with {}: remove one of those first.", with.join(" and ")),
        false => format!("{name} is kept together with {} only at {}.", with.join(" and "), elsewhere.join(" or ")),
    }
}

/// A granularity in words: "5-minute", "hourly", "daily".
pub fn granularity_name(g: Granularity) -> &'static str {
    match g {
        Granularity::FiveMinute => "5-minute",
        Granularity::Hour => "hourly",
        Granularity::Day => "daily",
    }
}
