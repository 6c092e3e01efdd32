//! Statistics: delivery statistics for a time range — totals (with the previous period), a chart per metric
//! split by a dimension (lines or stacked), the top values, a sortable paged table, CSV export — and the top
//! 20 URLs per day. The whole query lives in the page's address, so a view can be bookmarked and shared.
//! Clicking a value (a legend entry's ⊕, a bar, a table cell) adds it as a filter.

mod table;
mod top_urls;
mod view;

use edge_api::stats::{DELIVERY_DIMENSIONS, DELIVERY_METRICS, Family, Granularity, StatsResponse};
use leptos::prelude::*;
use leptos_router::{
    NavigateOptions,
    hooks::{use_navigate, use_query_map},
};

pub use self::view::{View, grouping_state, metric_label};
use self::{
    table::{DataTable, Kpis},
    top_urls::TopUrls,
    view::{PAGE_SIZE, narrowable, params, rank_metric, ranking, series_dims},
};
// What the statistics view computes from answers is shared with the security view: it lives in components
// (named here too, where the view's tests find it).
pub use crate::components::answers::{
    bars, buckets, fill_buckets, is_latency, partial_bucket, series_of, series_over, to_csv, totals,
};
use crate::{
    api,
    components::{
        answers::{self, top_values},
        async_view::{AsyncView, Cancel, Later, load},
        chart::{BarList, TimeChart, Unit},
        curl::CopyCurl,
        download::download,
        filters::{FilterBuilder, with_condition},
        range::{Range, RangePicker, allowed_granularities, now_ms},
    },
    nav::use_customer,
};

/// The dimensions a delivery filter may name (the customer is implied).
const FILTER_DIMENSIONS: [&str; 13] = [
    "country",
    "domain",
    "property",
    "http_status_code",
    "cache_status",
    "content_type",
    "browser_name",
    "device_type",
    "device_os",
    "country_code",
    "gna_cache_status",
    "request_type",
    "scheme",
];

/// A granularity as words for an axis title: "per 5 minutes".
fn per(g: Granularity) -> &'static str {
    match g {
        Granularity::FiveMinute => "per 5 minutes",
        Granularity::Hour => "per hour",
        Granularity::Day => "per day",
    }
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
        navigate(&next.to_query(), NavigateOptions { scroll: false, ..Default::default() });
    });
    let update = move |f: &dyn Fn(&mut View)| {
        let mut v = view.get_untracked();
        f(&mut v);
        set.run(v);
    };
    // The range and granularity in effect, fixed when the view changes (presets move with the clock).
    // Only a change of the range itself reads the clock again: sorting or paging keeps the same times.
    let range_of = Memo::new(move |_| {
        let v = view.get();
        View {
            dims: Vec::new(),
            metrics: Vec::new(),
            filters: String::new(),
            sort: String::new(),
            page: 0,
            compare: false,
            stacked: false,
            ..v
        }
    });
    let range_at = Memo::new(move |_| {
        let now = now_ms();
        range_of.get().range(now).map(|r| (r, now))
    });
    // The granularity also follows the dimensions (the natural one, or one where they form a grouping set).
    let dims = Memo::new(move |_| view.get().dims);
    let resolved = Memo::new(move |_| {
        let v = View { dims: dims.get(), ..range_of.get() };
        range_at.get().map(|(r, now)| (r, v.granularity(r, now), allowed_granularities(r, now)))
    });
    let valid = Memo::new(move |_| resolved.get().map(|(_, g, _)| grouping_state(g, &view.get().dims)));
    let add_filter = Callback::new(move |(dim, value): (String, String)| {
        update(&move |v: &mut View| {
            v.filters = with_condition(&v.filters, &FILTER_DIMENSIONS, &dim, &value);
            v.page = 0;
        })
    });

    // Each read has its own key, so that paging, sorting or the chart style refetch only what they change.
    // None: the dimensions do not form a grouping set.
    let query_of = move |v: &View, page: bool| {
        let (range, g, _) = resolved.get()?;
        if !Family::Delivery.is_grouping_set(Some(g), &v.dims) {
            return None;
        }
        let p = if page {
            params(v, range, g, &v.dims, &v.sort, v.page * PAGE_SIZE, PAGE_SIZE)
        } else {
            params(v, range, g, &v.dims, "starttime", 0, 2500)
        };
        Some(api::stats_url(&customer.get(), "/stats/data", &p))
    };
    let table_url = Memo::new(move |_| query_of(&view.get(), true));
    let chart_url = Memo::new(move |_| {
        let v = view.get();
        let key = View { page: 0, sort: String::new(), stacked: false, ..v };
        query_of(&key, false)
    });
    // The chart's key: what it shows (paging, sorting and the chart style change nothing in it).
    let chart_key = Memo::new(move |_| {
        let v = view.get();
        let (range, g, _) = resolved.get()?;
        Family::Delivery
            .is_grouping_set(Some(g), &v.dims)
            .then(|| (View { page: 0, sort: String::new(), stacked: false, ..v }, range, g))
    });
    let table_cancel = Cancel::on_change(table_url);
    let chart_cancel = Cancel::on_change(chart_key);
    let table = load(move || {
        let url = table_url.get();
        let abort = url.as_ref().and_then(|u| table_cancel.signal(Some(u.clone())));
        async move {
            match url {
                Some(u) => api::get_stats(&u, abort).await.map(Some),
                None => Ok(None),
            }
        }
    });
    let chart = load(move || {
        let key = chart_key.get();
        let abort = key.as_ref().and_then(|k| chart_cancel.signal(Some(k.clone())));
        let customer = customer.get();
        async move {
            match key {
                Some((v, range, g)) => chart_answer(&customer, &v, range, g, abort).await.map(Some),
                None => Ok(None),
            }
        }
    });
    // Totals of the range and, to compare, of the period before: both asked for at once.
    let kpi_urls = Memo::new(move |_| {
        let v = view.get();
        let (range, g, _) = resolved.get()?;
        let url = |r: Range| api::stats_url(&customer.get(), "/stats/data", &params(&v, r, g, &[], "", 0, 2500));
        Some((url(range), v.compare.then(|| url(range.previous())), v.metrics.clone()))
    });
    let kpis = load(move || {
        let urls = kpi_urls.get();
        async move {
            let Some((now, before, metrics)) = urls else { return Ok(None) };
            let (now, before) = futures::future::join(api::get_stats(&now, None), async {
                match &before {
                    Some(u) => api::get_stats(u, None).await.map(Some),
                    None => Ok(None),
                }
            })
            .await;
            let chosen = |t: Vec<(String, f64)>| t.into_iter().filter(|(m, _)| metrics.contains(m)).collect::<Vec<_>>();
            Ok(Some((chosen(totals(&now?)), before?.map(|b| chosen(totals(&b))))))
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
    let stacked = Signal::derive(move || view.get().stacked);

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
                <Later>
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
                </Later>
                <Later>
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
                </Later>
                <Later>
                <FilterBuilder
                    filters=Signal::derive(move || view.get().filters)
                    dims=&FILTER_DIMENSIONS
                    on_change=Callback::new(move |f: String| {
                        update(&move |v: &mut View| {
                            v.filters = f.clone();
                            v.page = 0;
                        })
                    })
                />
                </Later>
            </div>
            <Later>
            <div class="kpis-slot">
                <AsyncView resource=kpis let:totals>
                    {totals.map(|totals| view! { <Kpis totals /> })}
                </AsyncView>
            </div>
            </Later>
            <Later>
            <div class="card panel wide chart-card">
                <div class="toolbar">
                    <h2>"Over time"</h2>
                    <span class="spacer"></span>
                    <div class="segmented" role="group" aria-label="Chart">
                        <button class="chip" class:active=move || !stacked.get() aria-pressed=move || (!stacked.get()).to_string() on:click=move |_| update(&|v: &mut View| v.stacked = false)>
                            "Lines"
                        </button>
                        <button class="chip" class:active=move || stacked.get() aria-pressed=move || stacked.get().to_string() on:click=move |_| update(&|v: &mut View| v.stacked = true)>
                            "Stacked"
                        </button>
                    </div>
                    <button
                        id="export-csv"
                        on:click=move |_| {
                            if let Some(Ok(Some(r))) = chart.get_untracked() {
                                download("statistics.csv", &to_csv(&r));
                            }
                        }
                    >
                        "Export CSV"
                    </button>
                    <CopyCurl path=move || chart_url.get() />
                </div>
                <AsyncView resource=chart let:answer>
                    {
                        match (answer, resolved.get_untracked()) {
                            (Some(r), Some((range, g, _))) => {
                                let metrics = view.get_untracked().metrics;
                                view! { <Charts response=r metrics range granularity=g stacked add_filter /> }.into_any()
                            }
                            _ => view! { <p class="muted">"Choose dimensions that form a grouping set."</p> }.into_any(),
                        }
                    }
                </AsyncView>
            </div>
            </Later>
            <Later>
            <div class="card panel wide">
                <div class="toolbar">
                    <h2>"Rows"</h2>
                    <span class="spacer"></span>
                    <CopyCurl path=move || table_url.get() />
                </div>
                <AsyncView resource=table let:answer>
                    {answer
                        .map(|r| {
                            let v = view.get_untracked();
                            view! {
                                <DataTable
                                    response=r
                                    metrics=v.metrics.clone()
                                    sort=v.sort.clone()
                                    page=v.page
                                    on_sort=Callback::new(move |s: String| {
                                        update(&move |v: &mut View| {
                                            v.sort = s.clone();
                                            v.page = 0;
                                        })
                                    })
                                    on_page=Callback::new(move |p: u64| update(&move |v: &mut View| v.page = p))
                                    on_filter=add_filter
                                />
                            }
                        })}
                </AsyncView>
            </div>
            </Later>
            <Later>
                <TopUrls range=Signal::derive(move || resolved.get().map(|(r, _, _)| r)) />
            </Later>
        </section>
    }
}

/// The answer a chart over the whole range is drawn from, in a bounded number of requests however many values
/// the dimension has (one answer holds at most 2,500 rows): the values of the first dimension ranked over the
/// range (one coarse query) and the total without the dimension, at once; then, at once, the series of each
/// of the top [`answers::TOP`] values (the view's filters AND the value); "other" is the total less their sum.
/// Without a dimension, or when the filters are joined by OR (a value cannot be added to them), it is the
/// view's query as it is. `abort` cancels every request.
async fn chart_answer(
    customer: &str,
    v: &View,
    range: Range,
    g: Granularity,
    abort: Option<web_sys::AbortSignal>,
) -> api::ApiResult<StatsResponse> {
    let get = |filters: &str, r: Range, g: Granularity, dims: &[String], sort: &str| {
        let v = View { filters: filters.to_string(), ..v.clone() };
        let url = api::stats_url(customer, "/stats/data", &params(&v, r, g, dims, sort, 0, 2500));
        let abort = abort.clone();
        async move { api::get_stats(&url, abort).await }
    };
    let Some(dim) = v.dims.first().filter(|_| narrowable(&v.filters, &FILTER_DIMENSIONS)) else {
        return get(&v.filters, range, g, &v.dims, "starttime").await;
    };
    let metric = rank_metric(&v.metrics);
    let (rank_range, rank_g, rank_dims) = ranking(&v.dims, range, g, now_ms());
    let (ranked, total) = futures::future::join(
        get(&v.filters, rank_range, rank_g, &rank_dims, &format!("-{metric}")),
        get(&v.filters, range, g, &[], "starttime"),
    )
    .await;
    let (ranked, total) = (ranked?, total?);
    let top = answers::ranked_values(&ranked, &metric, answers::TOP);
    let dims = series_dims(&v.dims, g);
    let parts = futures::future::join_all(top.iter().map(|value| {
        let filters = with_condition(&v.filters, &FILTER_DIMENSIONS, dim, value);
        get(&filters, range, g, &dims, "starttime")
    }))
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    Ok(answers::with_other(parts, &total).unwrap_or(StatsResponse { rows: Vec::new(), total_results: 0, ..ranked }))
}

/// The chart of one metric at a time (chosen by its chip) over the range, and its top values.
#[component]
fn Charts(
    response: StatsResponse,
    /// The metrics chosen (the answer may hold hits besides, for the averages of latencies).
    metrics: Vec<String>,
    range: Range,
    granularity: Granularity,
    stacked: Signal<bool>,
    add_filter: Callback<(String, String)>,
) -> impl IntoView {
    let metric = RwSignal::new(metrics.first().cloned().unwrap_or_else(|| "hits".into()));
    let split = response.query.dimensions.first().cloned();
    let truncated = response.total_results > response.rows.len() as u64;
    let r = StoredValue::new(response);
    let chips = metrics
        .into_iter()
        .map(|m| {
            let label = metric_label(&m);
            let (a, b) = (m.clone(), m.clone());
            view! {
                <button
                    class="chip small"
                    class:active=move || metric.get() == a
                    aria-pressed=move || (metric.get() == b).to_string()
                    on:click=move |_| metric.set(m.clone())
                >
                    {label}
                </button>
            }
        })
        .collect_view();
    let chart = {
        let split = split.clone();
        move || {
            let m = metric.get();
            let unit = Unit::of_metric(&m);
            let label = match &split {
                Some(d) => format!("{} over time by {d}", metric_label(&m)),
                None => format!("{} over time", metric_label(&m)),
            };
            let y_title = if is_latency(&m) {
                format!("{}{}", metric_label(&m), unit.title())
            } else {
                format!("{} {}{}", metric_label(&m), per(granularity), unit.title())
            };
            let (series, partial) =
                r.with_value(|r| series_over(r, &m, range.start, range.end, granularity.millis(), now_ms()));
            // Averages do not stack.
            let stacked = stacked.get() && !is_latency(&m);
            let on_filter = split.clone().map(|d| Callback::new(move |v: String| add_filter.run((d.clone(), v))));
            match on_filter {
                Some(on_filter) => view! { <TimeChart label series start=range.start end=range.end stacked unit y_title id="time-chart" on_filter partial=partial /> }.into_any(),
                None => view! { <TimeChart label series start=range.start end=range.end stacked unit y_title id="time-chart" partial=partial /> }.into_any(),
            }
        }
    };
    view! {
        <div class="chart-metric" role="group" aria-label="Metric">
            {chips}
        </div>
        {chart}
        {truncated
            .then(|| {
                view! {
                    <p class="hint">
                        "The chart shows the first 2,500 rows: narrow the range, add a filter or choose a coarser granularity."
                    </p>
                }
            })}
        {split
            .clone()
            .map(|d| {
                view! {
                    <h3>"Top values"</h3>
                    {move || {
                        let m = metric.get();
                        let bars = r.with_value(|r| top_values(r, &m, 10));
                        let dim = d.clone();
                        view! {
                            <BarList
                                label=format!("Top {d} by {}", metric_label(&m))
                                bars
                                unit=Unit::of_metric(&m)
                                id="top-chart"
                                on_pick=Callback::new(move |v: String| add_filter.run((dim.clone(), v)))
                                pick_label="Filter to"
                            />
                        }
                    }}
                }
            })}
    }
}
