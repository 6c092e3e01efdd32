//! The overview at the top of Statistics: what an administrator asks first — how much was served, how much
//! the cache kept from the origin, whether errors are up — as figures for the range with their change against
//! the previous period and a sparkline; each opens the explorer below with the query behind it.

use std::cmp::Ordering;

use edge_api::stats::{Family, Granularity, StatsResponse, format_time};
use leptos::prelude::*;

use crate::{
    api::{self, Column},
    components::{
        async_view::{AsyncView, load},
        labels::{bits_per_second, bytes, one_decimal, percent, status_class},
        range::{Range, allowed_granularities, now_ms},
    },
};

/// What a figure counts, for its value and its change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Count,
    Bytes,
    BitsPerSecond,
    /// A share of 0..1: its change is in percentage points.
    Share,
}

/// One figure of the overview.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Its id in the page (`data-figure`).
    pub id: &'static str,
    pub title: &'static str,
    pub kind: Kind,
    pub value: f64,
    /// The same over the previous period, if there was traffic then.
    pub previous: Option<f64>,
    /// The value per bucket of the range (NaN where a share has nothing to divide).
    pub spark: Vec<f64>,
    /// The explorer's address parameters behind it (dimensions, metrics, filters).
    pub explore: &'static str,
}

impl Figure {
    pub fn shown(&self) -> String {
        shown(self.kind, self.value)
    }

    /// The change against the previous period: a relative change for amounts, percentage points for shares;
    /// None without a previous period (or without traffic then).
    pub fn change(&self) -> Option<f64> {
        let p = self.previous?;
        match self.kind {
            Kind::Share if p.is_nan() || self.value.is_nan() => None,
            Kind::Share => Some((self.value - p) * 100.0),
            _ if p == 0.0 => None,
            _ => Some((self.value - p) / p * 100.0),
        }
    }

    /// The change as shown, to a tenth: `+1.2%`, `−0.3 pp`, and `±0 pp` when it rounds to nothing (neither up
    /// nor down: no colour either, see [`Figure::direction`]).
    pub fn change_text(&self) -> Option<String> {
        let c = self.change()?;
        let size = one_decimal(c.abs());
        let unit = if self.kind == Kind::Share { " pp" } else { "%" };
        let sign = match self.direction()? {
            Ordering::Greater => "+",
            Ordering::Less => "−",
            Ordering::Equal => "±",
        };
        Some(format!("{sign}{size}{unit}"))
    }

    /// Whether the change, as shown to a tenth, is up, down or none.
    pub fn direction(&self) -> Option<Ordering> {
        let c = self.change()?;
        Some(if one_decimal(c.abs()) == "0" { Ordering::Equal } else { c.total_cmp(&0.0) })
    }
}

/// A value as the overview shows it.
pub fn shown(kind: Kind, v: f64) -> String {
    match kind {
        Kind::Count => crate::components::chart::short_number(v),
        Kind::Bytes => bytes(v),
        Kind::BitsPerSecond => bits_per_second(v),
        Kind::Share => percent(v),
    }
}

/// The granularity of the overview's sparklines: about a day's worth of points or fewer, and one the range
/// still has kept.
pub fn spark_granularity(range: Range, now: i64) -> Granularity {
    let wanted = if range.span() <= 6 * 3_600_000 {
        Granularity::FiveMinute
    } else if range.span() <= 8 * 86_400_000 {
        Granularity::Hour
    } else {
        Granularity::Day
    };
    let allowed = allowed_granularities(range, now);
    if allowed.contains(&wanted) {
        wanted
    } else {
        allowed.iter().copied().find(|g| g.millis() > wanted.millis()).or(allowed.first().copied()).unwrap_or(wanted)
    }
}

/// The smallest grouping set at `g` that holds `dim`: `http_status_code` alone where it is one, with
/// `property` at day.
pub fn smallest_set_with(dim: &str, g: Granularity) -> Vec<String> {
    let mut sets: Vec<Vec<&str>> =
        g.delivery_groupings().iter().map(|s| s.split('/').collect::<Vec<_>>()).filter(|s| s.contains(&dim)).collect();
    sets.sort_by_key(Vec::len);
    let set = sets.into_iter().next().unwrap_or_else(|| vec![dim]);
    debug_assert!(Family::Delivery.is_grouping_set(Some(g), &set.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
    set.into_iter().map(String::from).collect()
}

/// The overview's queries over `range` at `g`: the totals over time; the cache hits over time; the requests
/// by status code over time.
pub fn queries(customer: &str, range: Range, g: Granularity) -> [String; 3] {
    let q = |dims: &[String], metrics: &str, filters: &str| {
        let params = [
            ("starttime", format_time(range.start)),
            ("endtime", format_time(range.end)),
            ("granularity", g.as_str().to_string()),
            ("dimensions", dims.join(",")),
            ("metrics", metrics.to_string()),
            ("filters", filters.to_string()),
            ("limit", "2500".to_string()),
        ];
        api::stats_url(customer, "/stats/data", &params)
    };
    let amounts = "hits,last_mile_bandwidth_bytes,first_mile_bandwidth_bytes";
    [
        q(&[], amounts, ""),
        q(&[], "hits,last_mile_bandwidth_bytes", "cache_status==1"),
        q(&smallest_set_with("http_status_code", g), "hits", ""),
    ]
}

/// Sums of a metric per bucket start (ms), over every bucket of the range (zero where there is no row).
fn per_bucket(
    r: &StatsResponse,
    metric: &str,
    buckets: &[i64],
    keep: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<f64> {
    let (time, m) = (Column::of(r, "starttime"), Column::of(r, metric));
    let mut out = vec![0.0; buckets.len()];
    for row in r.rows.iter().filter(|row| keep(row)) {
        let Ok(t) = edge_api::stats::parse_time(&time.text(row)) else { continue };
        if let Ok(i) = buckets.binary_search(&t) {
            out[i] += m.number(row);
        }
    }
    out
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::NAN }
}

/// The figures: id, title, kind, and the explorer's query behind it.
const META: [(&str, &str, Kind, &str); 8] = [
    ("requests", "Requests", Kind::Count, "dims=&metrics=hits"),
    ("bandwidth", "Bandwidth", Kind::Bytes, "dims=&metrics=last_mile_bandwidth_bytes"),
    ("peak", "Peak bandwidth", Kind::BitsPerSecond, "dims=&metrics=last_mile_bandwidth_bytes"),
    ("hit-ratio", "Cache hit ratio (requests)", Kind::Share, "dims=cache_status&metrics=hits"),
    ("byte-hit-ratio", "Cache hit ratio (bytes)", Kind::Share, "dims=cache_status&metrics=last_mile_bandwidth_bytes"),
    (
        "offload",
        "Origin offload (bytes)",
        Kind::Share,
        "dims=&metrics=last_mile_bandwidth_bytes,first_mile_bandwidth_bytes",
    ),
    ("4xx-rate", "4xx rate", Kind::Share, "dims=http_status_code&metrics=hits&classes=1"),
    ("5xx-rate", "5xx rate", Kind::Share, "dims=http_status_code&metrics=hits&classes=1"),
];

/// The figures from the three answers of [`queries`] over `buckets` of `step` ms (and the previous period's
/// answers, if asked for).
pub fn figures(
    now: &[StatsResponse; 3],
    before: Option<&[StatsResponse; 3]>,
    buckets: &[i64],
    step: i64,
) -> Vec<Figure> {
    let all = |_: &[serde_json::Value]| true;
    // Totals are of every row of an answer, as the API counts them; the buckets are for the sparklines.
    let sum_of = |r: &StatsResponse, metric: &str, keep: &dyn Fn(&[serde_json::Value]) -> bool| {
        let m = Column::of(r, metric);
        r.rows.iter().filter(|row| keep(row)).map(|row| m.number(row)).sum::<f64>()
    };
    // (value, spark) of every figure over one period's answers.
    let compute = |[totals, hits, codes]: &[StatsResponse; 3], buckets: &[i64]| {
        let requests = per_bucket(totals, "hits", buckets, all);
        let served = per_bucket(totals, "last_mile_bandwidth_bytes", buckets, all);
        let origin = per_bucket(totals, "first_mile_bandwidth_bytes", buckets, all);
        let hit_requests = per_bucket(hits, "hits", buckets, all);
        let hit_bytes = per_bucket(hits, "last_mile_bandwidth_bytes", buckets, all);
        let code = Column::of(codes, "http_status_code");
        let class = |c: &'static str| move |row: &[serde_json::Value]| status_class(&code.text(row)) == Some(c);
        let e4 = per_bucket(codes, "hits", buckets, class("4xx"));
        let e5 = per_bucket(codes, "hits", buckets, class("5xx"));
        let coded = per_bucket(codes, "hits", buckets, all);
        let seconds = step as f64 / 1000.0;
        let each =
            |a: &[f64], b: &[f64], f: &dyn Fn(f64, f64) -> f64| a.iter().zip(b).map(|(x, y)| f(*x, *y)).collect();
        let offload = |o: f64, s: f64| if s > 0.0 { 1.0 - o / s } else { f64::NAN };
        let (all_requests, all_served) =
            (sum_of(totals, "hits", &all), sum_of(totals, "last_mile_bandwidth_bytes", &all));
        let all_coded = sum_of(codes, "hits", &all);
        vec![
            (all_requests, requests.clone()),
            (all_served, served.clone()),
            (
                served.iter().copied().fold(0.0, f64::max) * 8.0 / seconds,
                served.iter().map(|b| b * 8.0 / seconds).collect(),
            ),
            (ratio(sum_of(hits, "hits", &all), all_requests), each(&hit_requests, &requests, &ratio)),
            (ratio(sum_of(hits, "last_mile_bandwidth_bytes", &all), all_served), each(&hit_bytes, &served, &ratio)),
            (offload(sum_of(totals, "first_mile_bandwidth_bytes", &all), all_served), each(&origin, &served, &offload)),
            (ratio(sum_of(codes, "hits", &class("4xx")), all_coded), each(&e4, &coded, &ratio)),
            (ratio(sum_of(codes, "hits", &class("5xx")), all_coded), each(&e5, &coded, &ratio)),
        ]
    };
    let current = compute(now, buckets);
    // The previous period's buckets: the same, one span earlier.
    let span = buckets.len() as i64 * step;
    let earlier: Vec<i64> = buckets.iter().map(|t| t - span).collect();
    let previous = before.map(|b| compute(b, &earlier));
    current
        .into_iter()
        .enumerate()
        .map(|(i, (value, spark))| {
            let (id, title, kind, explore) = META[i];
            let previous = previous.as_ref().map(|p| p[i].0).filter(|p| !(kind != Kind::Share && *p == 0.0));
            Figure { id, title, kind, value, previous, spark, explore }
        })
        .collect()
}

/// A sparkline of `values` (NaN: no point) as SVG markup, `w` × `h`.
pub fn sparkline(values: &[f64], w: f64, h: f64) -> String {
    let max = values.iter().copied().filter(|v| v.is_finite()).fold(0.0, f64::max);
    let min = values.iter().copied().filter(|v| v.is_finite()).fold(f64::INFINITY, f64::min).min(max);
    let n = values.len().max(2) - 1;
    let mut path = String::new();
    let mut pen_up = true;
    for (i, v) in values.iter().enumerate() {
        if !v.is_finite() {
            pen_up = true;
            continue;
        }
        let x = i as f64 / n as f64 * w;
        let y = if max > min { h - 1.0 - (v - min) / (max - min) * (h - 2.0) } else { h / 2.0 };
        path.push_str(&format!("{}{:.1},{:.1} ", if pen_up { "M" } else { "L" }, x, y));
        pen_up = false;
    }
    format!(
        "<svg viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" aria-hidden=\"true\" preserveAspectRatio=\"none\">\
         <path d=\"{}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\"/></svg>",
        path.trim_end()
    )
}

/// The overview over `range` (the explorer's range), compared with the period before it.
#[component]
pub fn Overview(
    range: Signal<Option<Range>>,
    customer: Memo<String>,
    /// Opens the explorer with a figure's query (address parameters).
    on_explore: Callback<&'static str>,
) -> impl IntoView {
    let key = Memo::new(move |_| {
        let r = range.get()?;
        let g = spark_granularity(r, now_ms());
        Some((customer.get(), r, g))
    });
    let data = load(move || {
        let key = key.get();
        async move {
            let Some((customer, r, g)) = key else { return Ok(None) };
            let get_all = |r: Range| {
                let urls = queries(&customer, r, g);
                async move {
                    let [a, b, c] = urls;
                    let (a, b, c) = futures::future::join3(
                        api::get_stats(&a, None),
                        api::get_stats(&b, None),
                        api::get_stats(&c, None),
                    )
                    .await;
                    Ok::<_, api::ApiError>([a?, b?, c?])
                }
            };
            let (now, before) = futures::future::join(get_all(r), get_all(r.previous())).await;
            let step = g.millis();
            let buckets = crate::components::answers::buckets(r.start, r.end, step);
            // The previous period may be older than a rollup keeps: then there is nothing to compare.
            Ok(Some(figures(&now?, before.ok().as_ref(), &buckets, step)))
        }
    });
    // The range and granularity the figures are of, for those who check them against the API.
    let at = move |f: fn(&(String, Range, Granularity)) -> String| key.get().as_ref().map(f).unwrap_or_default();
    view! {
        <div
            class="overview"
            id="overview"
            data-start=move || at(|(_, r, _)| format_time(r.start))
            data-end=move || at(|(_, r, _)| format_time(r.end))
            data-granularity=move || at(|(_, _, g)| g.as_str().to_string())
        >
            <AsyncView resource=data loading="Loading the overview…" placeholder=placeholders let:figures>
                {figures.map(|figures| {
                    figures
                        .into_iter()
                        .map(|f| view! { <Tile figure=f on_explore /> })
                        .collect_view()
                })}
            </AsyncView>
        </div>
    }
}

/// The tiles' shape while the figures load: their titles, no values (the page below does not move when the
/// figures come).
fn placeholders() -> AnyView {
    META.iter()
        .map(|(_, title, _, _)| {
            view! {
                <button type="button" class="tile placeholder" disabled aria-hidden="true" tabindex="-1">
                    <span class="tile-title">{*title}</span>
                    <span class="tile-value">"–"</span>
                    <span class="tile-change muted">"…"</span>
                    <span class="spark"></span>
                </button>
            }
        })
        .collect_view()
        .into_any()
}

#[component]
fn Tile(figure: Figure, on_explore: Callback<&'static str>) -> impl IntoView {
    let change = figure.change_text();
    let direction = figure.direction().unwrap_or(Ordering::Equal);
    // More errors is bad news, more hits and offload good: the colour says which; no change has none.
    let up = direction == Ordering::Greater;
    let good = match figure.id {
        "4xx-rate" | "5xx-rate" => !up,
        _ => up,
    };
    let flat = direction == Ordering::Equal;
    let (good, bad) = (good && !flat, !good && !flat);
    let explore = figure.explore;
    let exact = match figure.kind {
        Kind::Bytes => format!("{} bytes", crate::components::chart::grouped(figure.value.round() as i64)),
        Kind::Count => crate::components::chart::grouped(figure.value.round() as i64),
        _ => figure.shown(),
    };
    view! {
        <button
            type="button"
            class="tile"
            data-figure=figure.id
            data-value=if figure.value.is_finite() { figure.value.to_string() } else { String::new() }
            data-change=figure.change().map(|c| c.to_string()).unwrap_or_default()
            title=format!("{exact} — open in the explorer")
            on:click=move |_| on_explore.run(explore)
        >
            <span class="tile-title">{figure.title}</span>
            <span class="tile-value">{figure.shown()}</span>
            {match change {
                Some(c) => view! { <span class="tile-change" class:good=good class:bad=bad>{format!("{c} vs previous period")}</span> }.into_any(),
                None => view! { <span class="tile-change muted">"no traffic before to compare"</span> }.into_any(),
            }}
            <span class="spark" inner_html=sparkline(&figure.spark, 120.0, 28.0)></span>
        </button>
    }
}
