//! Statistics: delivery statistics for a time range — totals (with the previous period), a chart per metric
//! split by a dimension (lines or stacked), the top values, a sortable paged table, CSV export — and the top
//! 20 URLs per day. The whole query lives in the page's address, so a view can be bookmarked and shared.

use std::collections::BTreeMap;

use edge_api::stats::{
    DELIVERY_DIMENSIONS, DELIVERY_METRICS, Family, Granularity, StatsResponse, format_time, parse_filters,
};
use leptos::{ev, prelude::*};
use leptos_router::{
    NavigateOptions,
    hooks::{use_navigate, use_query_map},
};
use serde_json::Value;

use crate::{
    api::{self, ApiError},
    components::{
        chart::{Series, bar_chart, colour_hex, short_number, time_chart},
        errors::ApiErrorNotice,
        range::{Range, RangePicker, allowed_granularities, natural_granularity, now_ms, resolve},
    },
    pages::use_customer,
};

const PAGE_SIZE: u64 = 50;
const SERIES: usize = 6;

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
                let n = natural_granularity(range);
                if allowed.contains(&n) { n } else { allowed[0] }
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

fn metric_label(m: &str) -> String {
    m.trim_end_matches("_bytes").replace('_', " ")
}

pub(crate) fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Sums of each metric over all rows of a response.
fn totals(r: &StatsResponse) -> Vec<(String, f64)> {
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    r.query
        .metrics
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            let i = names.iter().position(|n| *n == m).unwrap_or(0);
            let sum = r.rows.iter().map(|row| row.get(i).and_then(Value::as_f64).unwrap_or(0.0)).sum();
            (m, sum)
        })
        .collect()
}

/// The series of one metric, split by the first dimension: the largest values, the rest as "other".
pub(crate) fn series_of(r: &StatsResponse, metric: &str) -> Vec<Series> {
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    let Some(mi) = names.iter().position(|n| *n == metric) else { return Vec::new() };
    let di = (names.len() > 2 + r.query.metrics.as_ref().map_or(0, Vec::len)).then_some(2);
    let mut by: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
    for row in &r.rows {
        let t = row.first().and_then(Value::as_str).and_then(|s| edge_api::stats::parse_time(s).ok()).unwrap_or(0);
        let key = di.map(|i| value_text(&row[i])).unwrap_or_else(|| "total".into());
        *by.entry(key).or_default().entry(t).or_default() += row[mi].as_f64().unwrap_or(0.0);
    }
    // Every series has a value at every time of the answer (zero where it had no row), so that stacked areas
    // and lines do not bridge gaps.
    let times: std::collections::BTreeSet<i64> = by.values().flat_map(|p| p.keys().copied()).collect();
    for points in by.values_mut() {
        for t in &times {
            points.entry(*t).or_insert(0.0);
        }
    }
    let mut ranked: Vec<(String, BTreeMap<i64, f64>)> = by.into_iter().collect();
    ranked.sort_by(|a, b| b.1.values().sum::<f64>().total_cmp(&a.1.values().sum::<f64>()));
    let mut out: Vec<Series> = Vec::new();
    let mut other: BTreeMap<i64, f64> = BTreeMap::new();
    for (i, (name, points)) in ranked.into_iter().enumerate() {
        if i < SERIES {
            out.push(Series { name, points: points.into_iter().collect() });
        } else {
            for (t, v) in points {
                *other.entry(t).or_default() += v;
            }
        }
    }
    if !other.is_empty() {
        out.push(Series { name: "other".into(), points: other.into_iter().collect() });
    }
    out
}

/// The top values of the first dimension by a metric, over the whole range.
fn top_values(r: &StatsResponse, metric: &str, n: usize) -> Vec<(String, f64)> {
    series_of_all(r, metric).into_iter().take(n).collect()
}

fn series_of_all(r: &StatsResponse, metric: &str) -> Vec<(String, f64)> {
    let names: Vec<&str> = r.columns.iter().map(|c| c.name.as_str()).collect();
    let Some(mi) = names.iter().position(|n| *n == metric) else { return Vec::new() };
    let mut by: BTreeMap<String, f64> = BTreeMap::new();
    for row in &r.rows {
        let key = row.get(2).map(value_text).unwrap_or_default();
        *by.entry(key).or_default() += row[mi].as_f64().unwrap_or(0.0);
    }
    let mut v: Vec<(String, f64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

/// CSV of a response: a header of column names, then the rows.
pub fn to_csv(r: &StatsResponse) -> String {
    let field = |s: String| if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s };
    let mut out = r.columns.iter().map(|c| field(c.name.clone())).collect::<Vec<_>>().join(",");
    out.push('\n');
    for row in &r.rows {
        out.push_str(&row.iter().map(|v| field(value_text(v))).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

fn download(name: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/csv");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    let document = leptos::prelude::document();
    if let Ok(a) = document.create_element("a") {
        let _ = a.set_attribute("href", &url);
        let _ = a.set_attribute("download", name);
        if let Some(a) = wasm_bindgen::JsCast::dyn_ref::<web_sys::HtmlElement>(&a) {
            a.click();
        }
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// The parameters of a delivery query for a view over `range`.
fn params(
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
        ("metrics", v.metrics.join(",")),
        ("filters", v.filters.clone()),
        ("sortby", sort.into()),
        ("start", start.to_string()),
        ("limit", limit.to_string()),
    ]
}

#[component]
pub fn Statistics() -> impl IntoView {
    let query = use_query_map();
    let navigate = use_navigate();
    let customer = use_customer();
    let view = Memo::new(move |_| {
        let q = query.read();
        View::from_params(|k| q.get(k))
    });
    let set = Callback::new(move |next: View| {
        navigate(&next.to_query(), NavigateOptions { replace: true, scroll: false, ..Default::default() });
    });
    let update = move |f: &dyn Fn(&mut View)| {
        let mut v = view.get_untracked();
        f(&mut v);
        set.run(v);
    };
    // The range and granularity in effect, fixed when the view changes (presets move with the clock).
    let resolved = Memo::new(move |_| {
        let v = view.get();
        let now = now_ms();
        v.range(now).map(|r| (r, v.granularity(r, now), allowed_granularities(r, now)))
    });
    let valid = Memo::new(move |_| resolved.get().map(|(_, g, _)| grouping_state(g, &view.get().dims)));

    let table = LocalResource::new(move || {
        let (v, c, res) = (view.get(), customer.get(), resolved.get());
        async move {
            let Some((range, g, _)) = res else { return Ok(None) };
            if !Family::Delivery.is_grouping_set(Some(g), &v.dims) {
                return Ok(None);
            }
            api::stats(&c, "/stats/data", &params(&v, range, g, &v.dims, &v.sort, v.page * PAGE_SIZE, PAGE_SIZE))
                .await
                .map(Some)
        }
    });
    let chart = LocalResource::new(move || {
        let (v, c, res) = (view.get(), customer.get(), resolved.get());
        async move {
            let Some((range, g, _)) = res else { return Ok(None) };
            if !Family::Delivery.is_grouping_set(Some(g), &v.dims) {
                return Ok(None);
            }
            api::stats(&c, "/stats/data", &params(&v, range, g, &v.dims, "starttime", 0, 2500)).await.map(Some)
        }
    });
    let kpis = LocalResource::new(move || {
        let (v, c, res) = (view.get(), customer.get(), resolved.get());
        async move {
            let Some((range, g, _)) = res else { return Ok::<_, ApiError>(None) };
            let now = api::stats(&c, "/stats/data", &params(&v, range, g, &[], "", 0, 2500)).await?;
            let before = match v.compare {
                true => Some(api::stats(&c, "/stats/data", &params(&v, range.previous(), g, &[], "", 0, 2500)).await?),
                false => None,
            };
            Ok(Some((totals(&now), before.as_ref().map(totals))))
        }
    });

    let toggle_dim = move |d: &'static str| {
        update(&move |v: &mut View| {
            if let Some(i) = v.dims.iter().position(|x| x == d) {
                v.dims.remove(i);
            } else {
                v.dims.push(d.to_string());
            }
            v.page = 0;
            v.sort.clear();
        })
    };
    let toggle_metric = move |m: &'static str| {
        update(&move |v: &mut View| {
            if let Some(i) = v.metrics.iter().position(|x| x == m) {
                if v.metrics.len() > 1 {
                    v.metrics.remove(i);
                }
            } else {
                v.metrics.push(m.to_string());
            }
            v.page = 0;
        })
    };

    view! {
        <section class="page stats">
            <h1>"Statistics"</h1>
            <div class="card panel wide controls">
                <RangePicker
                    preset=Signal::derive(move || view.get().preset)
                    range=Signal::derive(move || resolved.get().map(|(r, _, _)| r))
                    on_change=Callback::new(move |(preset, start, end): (String, String, String)| {
                        update(&move |v: &mut View| {
                            v.preset = preset.clone();
                            v.start = start.clone();
                            v.end = end.clone();
                            v.page = 0;
                        })
                    })
                />
                <div class="row">
                    <label class="inline">
                        "Granularity "
                        <select
                            name="granularity"
                            prop:value=move || resolved.get().map(|(_, g, _)| g.as_str().to_string()).unwrap_or_default()
                            on:change=move |e| {
                                let g = Granularity::parse(&event_target_value(&e));
                                update(&move |v: &mut View| {
                                    v.granularity = g;
                                    v.page = 0;
                                })
                            }
                        >
                            {move || {
                                resolved
                                    .get()
                                    .map(|(_, _, allowed)| {
                                        allowed.into_iter().map(|g| view! { <option value=g.as_str()>{g.as_str()}</option> }).collect_view()
                                    })
                            }}
                        </select>
                    </label>
                    <label class="check inline">
                        <input
                            type="checkbox"
                            name="compare"
                            prop:checked=move || view.get().compare
                            on:change=move |e| {
                                let on = event_target_checked(&e);
                                update(&move |v: &mut View| v.compare = on)
                            }
                        />
                        "Compare with the previous period"
                    </label>
                </div>
                <fieldset class="picker" id="dimensions">
                    <legend>"Dimensions"</legend>
                    {DELIVERY_DIMENSIONS
                        .iter()
                        .copied()
                        .filter(|d| *d != "customer")
                        .map(|d| {
                            let on = move || view.get().dims.iter().any(|x| x == d);
                            let enabled = move || on() || valid.get().is_some_and(|(_, addable)| addable.contains(&d));
                            view! {
                                <button
                                    class="chip"
                                    class:active=on
                                    aria-pressed=move || on().to_string()
                                    data-dim=d
                                    disabled=move || !enabled()
                                    on:click=move |_| toggle_dim(d)
                                >
                                    {d}
                                </button>
                            }
                        })
                        .collect_view()}
                    {move || {
                        valid
                            .get()
                            .filter(|(ok, _)| !ok)
                            .map(|(_, addable)| {
                                view! {
                                    <p class="hint" role="status">
                                        {format!(
                                            "These dimensions are not a grouping set at this granularity. Add one of: {}.",
                                            if addable.is_empty() { "(none — remove one)".to_string() } else { addable.join(", ") },
                                        )}
                                    </p>
                                }
                            })
                    }}
                </fieldset>
                <fieldset class="picker" id="metrics">
                    <legend>"Metrics"</legend>
                    {DELIVERY_METRICS
                        .iter()
                        .copied()
                        .map(|m| {
                            let on = move || view.get().metrics.iter().any(|x| x == m);
                            view! {
                                <button class="chip" class:active=on aria-pressed=move || on().to_string() data-metric=m on:click=move |_| toggle_metric(m)>
                                    {metric_label(m)}
                                </button>
                            }
                        })
                        .collect_view()}
                </fieldset>
                <FilterBuilder
                    filters=Signal::derive(move || view.get().filters)
                    on_change=Callback::new(move |f: String| {
                        update(&move |v: &mut View| {
                            v.filters = f.clone();
                            v.page = 0;
                        })
                    })
                />
            </div>
            <Kpis kpis />
            <div class="card panel wide chart-card">
                <div class="toolbar">
                    <h2>"Over time"</h2>
                    <span class="spacer"></span>
                    <div class="segmented" role="group" aria-label="Chart">
                        <button class="chip" class:active=move || !view.get().stacked on:click=move |_| update(&|v: &mut View| v.stacked = false)>
                            "Lines"
                        </button>
                        <button class="chip" class:active=move || view.get().stacked on:click=move |_| update(&|v: &mut View| v.stacked = true)>
                            "Stacked"
                        </button>
                    </div>
                    <button
                        id="export-csv"
                        on:click=move |_| {
                            if let Some(Ok(Some(r))) = chart.get() {
                                download("statistics.csv", &to_csv(&r));
                            }
                        }
                    >
                        "Export CSV"
                    </button>
                </div>
                <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                    {move || Suspend::new(async move {
                        let stacked = view.get_untracked().stacked;
                        let range = resolved.get_untracked().map(|(r, _, _)| r);
                        match (chart.await, range) {
                            (Err(error), _) => view! { <ApiErrorNotice error /> }.into_any(),
                            (Ok(None), _) | (_, None) => view! { <p class="muted">"Choose dimensions that form a grouping set."</p> }.into_any(),
                            (Ok(Some(r)), Some(range)) => view! { <Charts response=r range stacked /> }.into_any(),
                        }
                    })}
                </Transition>
            </div>
            <div class="card panel wide">
                <h2>"Rows"</h2>
                <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                    {move || Suspend::new(async move {
                        match table.await {
                            Err(error) => view! { <ApiErrorNotice error /> }.into_any(),
                            Ok(None) => ().into_any(),
                            Ok(Some(r)) => {
                                let v = view.get_untracked();
                                view! {
                                    <DataTable
                                        response=r
                                        sort=v.sort.clone()
                                        page=v.page
                                        on_sort=Callback::new(move |s: String| {
                                            update(&move |v: &mut View| {
                                                v.sort = s.clone();
                                                v.page = 0;
                                            })
                                        })
                                        on_page=Callback::new(move |p: u64| update(&move |v: &mut View| v.page = p))
                                    />
                                }
                                    .into_any()
                            }
                        }
                    })}
                </Transition>
            </div>
            <TopUrls range=Signal::derive(move || resolved.get().map(|(r, _, _)| r)) />
        </section>
    }
}

/// Totals per metric for the range, and for the previous period when compared.
type KpiTotals = (Vec<(String, f64)>, Option<Vec<(String, f64)>>);

#[component]
fn Kpis(kpis: LocalResource<Result<Option<KpiTotals>, ApiError>>) -> impl IntoView {
    view! {
        <Transition fallback=|| view! { <div class="kpis"></div> }>
            {move || Suspend::new(async move {
                match kpis.await {
                    Err(error) => view! { <ApiErrorNotice error /> }.into_any(),
                    Ok(None) => ().into_any(),
                    Ok(Some((now, before))) => {
                        view! {
                            <div class="kpis" id="kpis">
                                {now
                                    .into_iter()
                                    .enumerate()
                                    .map(|(i, (m, v))| {
                                        let delta = before.as_ref().and_then(|b| b.get(i)).map(|(_, p)| {
                                            if *p == 0.0 { None } else { Some((v - p) / p * 100.0) }
                                        });
                                        view! {
                                            <div class="kpi" data-metric=m.clone()>
                                                <div class="kpi-label">{metric_label(&m)}</div>
                                                <div class="kpi-value">{short_number(v)}</div>
                                                {delta
                                                    .map(|d| match d {
                                                        Some(d) => {
                                                            let class = if d >= 0.0 { "kpi-delta up" } else { "kpi-delta down" };
                                                            view! {
                                                                <div class=class>
                                                                    {format!("{}{d:.1}% vs previous period", if d >= 0.0 { "+" } else { "" })}
                                                                </div>
                                                            }
                                                                .into_any()
                                                        }
                                                        None => view! { <div class="kpi-delta muted">"no data before"</div> }.into_any(),
                                                    })}
                                            </div>
                                        }
                                    })
                                    .collect_view()}
                            </div>
                        }
                            .into_any()
                    }
                }
            })}
        </Transition>
    }
}

#[component]
fn Charts(response: StatsResponse, range: Range, stacked: bool) -> impl IntoView {
    let metrics = response.query.metrics.clone().unwrap_or_default();
    let metric = RwSignal::new(metrics.first().cloned().unwrap_or_else(|| "hits".into()));
    let has_dim = !response.query.dimensions.is_empty();
    let truncated = response.total_results > response.rows.len() as u64;
    let r = StoredValue::new(response);
    let series = Memo::new(move |_| r.with_value(|r| series_of(r, &metric.get())));
    view! {
        <div class="chart-metric">
            {metrics
                .into_iter()
                .map(|m| {
                    let m2 = m.clone();
                    view! {
                        <button class="chip small" class:active=move || metric.get() == m on:click=move |_| metric.set(m2.clone())>
                            {metric_label(&m)}
                        </button>
                    }
                })
                .collect_view()}
        </div>
        <div class="chart" id="time-chart" inner_html=move || time_chart(&series.get(), range.start, range.end, stacked, 1100, 300)></div>
        <ul class="legend">
            {move || {
                series
                    .get()
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        view! {
                            <li>
                                <span class="swatch" style:background=colour_hex(i)></span>
                                {if s.name.is_empty() { "(none)".to_string() } else { s.name.clone() }}
                            </li>
                        }
                    })
                    .collect_view()
            }}
        </ul>
        {truncated.then(|| view! { <p class="hint">"The chart shows the first 2,500 rows: narrow the range, add a filter or choose a coarser granularity."</p> })}
        {has_dim
            .then(|| {
                view! {
                    <h3>"Top values"</h3>
                    <div class="chart" id="top-chart" inner_html=move || r.with_value(|r| bar_chart(&top_values(r, &metric.get(), 10), 1100, 26))></div>
                }
            })}
    }
}

#[component]
fn DataTable(
    response: StatsResponse,
    sort: String,
    page: u64,
    on_sort: Callback<String>,
    on_page: Callback<u64>,
) -> impl IntoView {
    let total = response.total_results;
    let shown = response.rows.len() as u64;
    let first = page * PAGE_SIZE + 1;
    let has_more = page * PAGE_SIZE + shown < total;
    if response.rows.is_empty() {
        return view! { <div class="empty">"No traffic in this range."</div> }.into_any();
    }
    let header = response
        .columns
        .iter()
        .map(|c| {
            let name = c.name.clone();
            let numeric = c.column_type.as_deref() == Some("long");
            let state = if sort == name { " ▲" } else if sort == format!("-{name}") { " ▼" } else { "" };
            let next = if sort == format!("-{name}") { name.clone() } else { format!("-{name}") };
            let class = if numeric { "num" } else { "" };
            view! {
                <th class=class>
                    <button class="sort" on:click=move |_| on_sort.run(next.clone())>{format!("{}{state}", c.name)}</button>
                </th>
            }
        })
        .collect_view();
    let numeric: Vec<bool> = response.columns.iter().map(|c| c.column_type.as_deref() == Some("long")).collect();
    let metric_cols: Vec<bool> =
        response.columns.iter().map(|c| response.query.metrics.as_ref().is_some_and(|m| m.contains(&c.name))).collect();
    view! {
        <div class="table-scroll">
            <table class="data stats-table">
                <thead>
                    <tr>{header}</tr>
                </thead>
                <tbody>
                    {response
                        .rows
                        .iter()
                        .map(|row| {
                            view! {
                                <tr>
                                    {row
                                        .iter()
                                        .enumerate()
                                        .map(|(i, v)| {
                                            let text = match (metric_cols[i], v.as_f64()) {
                                                (true, Some(n)) => short_number(n),
                                                _ => value_text(v),
                                            };
                                            view! { <td class:num=numeric[i] title=value_text(v)>{text}</td> }
                                        })
                                        .collect_view()}
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
        <div class="pager">
            <span class="muted">{format!("{first}–{} of {total}", first + shown - 1)}</span>
            <button disabled=page == 0 on:click=move |_| on_page.run(page.saturating_sub(1))>"Previous"</button>
            <button disabled=!has_more on:click=move |_| on_page.run(page + 1)>"Next"</button>
        </div>
    }
    .into_any()
}

/// Filter rows joined by AND or OR, as the API's filter expression.
#[component]
fn FilterBuilder(#[prop(into)] filters: Signal<String>, on_change: Callback<String>) -> impl IntoView {
    let dims: Vec<&str> = DELIVERY_DIMENSIONS.to_vec();
    let parsed = Memo::new(move |_| {
        let f = filters.get();
        let filter = parse_filters(&f, &DELIVERY_DIMENSIONS).unwrap_or_default();
        let and = matches!(filter, edge_api::stats::Filter::All(_));
        (filter.conditions().iter().map(|c| (c.dimension.clone(), c.equal, c.value.clone())).collect::<Vec<_>>(), and)
    });
    let escape = |v: &str| v.replace('\\', "\\\\").replace(',', "\\,").replace(';', "\\;");
    let emit = move |rows: Vec<(String, bool, String)>, and: bool| {
        let sep = if and { ";" } else { "," };
        let text = rows
            .iter()
            .filter(|(_, _, v)| !v.is_empty())
            .map(|(d, eq, v)| format!("{d}{}{}", if *eq { "==" } else { "!=" }, escape(v)))
            .collect::<Vec<_>>()
            .join(sep);
        on_change.run(text);
    };
    let new_dim = RwSignal::new("domain".to_string());
    let new_op = RwSignal::new(true);
    let new_value = RwSignal::new(String::new());
    let add = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let value = new_value.get_untracked();
        if value.trim().is_empty() {
            return;
        }
        let (mut rows, and) = parsed.get_untracked();
        rows.push((new_dim.get_untracked(), new_op.get_untracked(), value.trim().to_string()));
        new_value.set(String::new());
        emit(rows, and);
    };
    view! {
        <fieldset class="picker" id="filters">
            <legend>"Filters"</legend>
            {move || {
                let (rows, and) = parsed.get();
                let n = rows.len();
                let rows_view = rows
                    .iter()
                    .enumerate()
                    .map(|(i, (d, eq, v))| {
                        let all = rows.clone();
                        view! {
                            <span class="filter-chip">
                                {format!("{d} {} {v}", if *eq { "is" } else { "is not" })}
                                <button
                                    class="icon"
                                    aria-label="Remove filter"
                                    on:click=move |_| {
                                        let mut all = all.clone();
                                        all.remove(i);
                                        emit(all, and);
                                    }
                                >
                                    "×"
                                </button>
                            </span>
                        }
                    })
                    .collect_view();
                let rows_for_join = rows.clone();
                view! {
                    {rows_view}
                    {(n > 1)
                        .then(|| {
                            view! {
                                <select
                                    aria-label="Join filters"
                                    prop:value=if and { "and" } else { "or" }
                                    on:change=move |e| emit(rows_for_join.clone(), event_target_value(&e) == "and")
                                >
                                    <option value="and">"all must match (AND)"</option>
                                    <option value="or">"any may match (OR)"</option>
                                </select>
                            }
                        })}
                }
            }}
            <form class="filter-add" on:submit=add>
                <select aria-label="Filter dimension" on:change=move |e| new_dim.set(event_target_value(&e)) prop:value=move || new_dim.get()>
                    {dims.iter().map(|d| view! { <option value=*d>{*d}</option> }).collect_view()}
                </select>
                <select aria-label="Filter operator" on:change=move |e| new_op.set(event_target_value(&e) == "eq")>
                    <option value="eq">"is"</option>
                    <option value="ne">"is not"</option>
                </select>
                <input name="filter-value" placeholder="value" bind:value=new_value />
                <button type="submit">"Add filter"</button>
            </form>
        </fieldset>
    }
}

/// The top 20 URLs of each day of the range.
#[component]
fn TopUrls(#[prop(into)] range: Signal<Option<Range>>) -> impl IntoView {
    let customer = use_customer();
    let property = RwSignal::new(String::new());
    let urls = LocalResource::new(move || {
        let (c, r, p) = (customer.get(), range.get(), property.get());
        async move {
            let Some(r) = r else { return Ok(None) };
            // Whole days: the report is daily.
            let day = 86_400_000;
            let (start, end) = (
                r.start - r.start.rem_euclid(day),
                r.end - r.end.rem_euclid(day) + if r.end % day == 0 { 0 } else { day },
            );
            let filters = if p.is_empty() { String::new() } else { format!("property=={p}") };
            api::stats(
                &c,
                "/stats/topk/url/data",
                &[
                    ("starttime", format_time(start)),
                    ("endtime", format_time(end)),
                    ("dimensions", "customer,property,request_url".into()),
                    ("metrics", "hits".into()),
                    ("granularity", "day".into()),
                    ("filters", filters),
                ],
            )
            .await
            .map(Some)
        }
    });
    view! {
        <div class="card panel wide" id="top-urls">
            <div class="toolbar">
                <h2>"Top 20 URLs per day"</h2>
                <span class="spacer"></span>
                <input placeholder="Property (all)" aria-label="Property" on:change=move |e| property.set(event_target_value(&e).trim().to_string()) />
            </div>
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match urls.await {
                        Err(error) => view! { <ApiErrorNotice error /> }.into_any(),
                        Ok(None) => ().into_any(),
                        Ok(Some(r)) if r.rows.is_empty() => view! { <div class="empty">"No requests in this range."</div> }.into_any(),
                        Ok(Some(r)) => {
                            view! {
                                <table class="data">
                                    <thead>
                                        <tr>
                                            <th>"Day"</th>
                                            <th>"Property"</th>
                                            <th>"URL"</th>
                                            <th class="num">"Hits"</th>
                                        </tr>
                                    </thead>
                                    <tbody>
                                        {r
                                            .rows
                                            .iter()
                                            .map(|row| {
                                                view! {
                                                    <tr>
                                                        <td>{value_text(&row[0])[..10].to_string()}</td>
                                                        <td>{value_text(&row[3])}</td>
                                                        <td><code>{value_text(&row[4])}</code></td>
                                                        <td class="num">{short_number(row[5].as_f64().unwrap_or(0.0))}</td>
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
                            }
                                .into_any()
                        }
                    }
                })}
            </Transition>
        </div>
    }
}
