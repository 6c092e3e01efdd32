//! Statistics: delivery statistics for a time range — totals (with the previous period), a chart per metric
//! split by a dimension (lines or stacked), the top values, a sortable paged table, CSV export — and the top
//! 20 URLs per day. The whole query lives in the page's address, so a view can be bookmarked and shared.
//! Clicking a value (a legend entry's ⊕, a bar, a table cell) adds it as a filter.

mod charts;
mod load;
mod overview;
mod state;
mod table;
mod top_urls;
mod view;

use edge_api::stats::{DELIVERY_DIMENSIONS, DELIVERY_METRICS, Granularity, StatsResponse};
use leptos::prelude::*;

pub use self::overview::{Figure, Kind, figures, queries, spark_granularity};
pub use self::view::{View, disabled_reason, granularity_name, grouping_state, metric_label};
use self::{
    charts::Charts,
    load::Reads,
    overview::Overview,
    state::ViewState,
    table::{DataTable, Kpis},
    top_urls::TopUrls,
};
// What the statistics view computes from answers is shared with the security view: it lives in components
// (named here too, where the view's tests find it).
pub use crate::components::answers::{
    bars, buckets, by_status_class, fill_buckets, is_latency, partial_bucket, series_of, series_over, to_csv, totals,
};
use crate::{
    components::{
        async_view::{AsyncView, Later},
        curl::CopyCurl,
        download::download,
        filters::FilterBuilder,
        labels::dimension_name,
        range::RangePicker,
        timeline,
    },
    nav::use_customer,
};

/// The dimensions a delivery filter may name (the customer is implied).
pub(super) const FILTER_DIMENSIONS: [&str; 13] = [
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

/// The page's layout: the controls, the totals, the chart, the rows and the top URLs (the state is
/// [`ViewState`]'s, the reads [`Reads`]').
#[component]
pub fn Statistics() -> impl IntoView {
    let state = ViewState::from_address();
    let ViewState { view, resolved, valid, add_filter, .. } = state;
    let Reads { table_url, chart_url, table, chart, kpis } = Reads::of(state, use_customer());
    let update = move |f: &dyn Fn(&mut View)| state.update(f);
    let toggle_dim = move |d: &'static str| state.toggle_dim(d);
    let toggle_metric = move |m: &'static str| state.toggle_metric(m);
    let stacked = Signal::derive(move || view.get().stacked);

    let customer = use_customer();
    let markers = timeline::markers(customer, Signal::derive(move || resolved.get().map(|(r, _, _)| r)));
    // "Alert on this": a new rule on the chart's query and metric (the top URLs cannot be watched).
    let alert_on = Callback::new(move |metric: String| {
        let path =
            chart_url.get_untracked().and_then(|u| crate::api::watch_path(&u)).filter(|p| crate::api::watchable(p))?;
        let v = view.get_untracked();
        Some(crate::api::alert_on_this_url(&customer.get_untracked(), &path, &metric, &v.filters, &v.dims.join(",")))
    });
    // "Errors only": the status codes of class 4xx and 5xx seen in the range, as the filter (the API's filters
    // compare with == and != only, so the console names the codes).
    let errors_only = Callback::new(move |()| {
        let Some((range, _, _)) = resolved.get_untracked() else { return };
        let c = customer.get_untracked();
        leptos::task::spawn_local(async move {
            // Daily rows of whole days: a few rows per code, whatever the range.
            let params = [
                ("starttime", edge_api::stats::format_time(range.start - range.start.rem_euclid(86_400_000))),
                ("endtime", edge_api::stats::format_time(range.end)),
                ("granularity", Granularity::Day.as_str().to_string()),
                ("dimensions", overview::smallest_set_with("http_status_code", Granularity::Day).join(",")),
                ("metrics", "hits".to_string()),
                ("limit", "2500".to_string()),
            ];
            let Ok(r) = crate::api::stats(&c, "/stats/data", &params).await else { return };
            let filters = errors_filter(&r);
            // The view may be gone by then.
            if state.view.try_get_untracked().is_some() {
                state.update(&move |v: &mut View| {
                    v.filters = filters.clone();
                    v.classes = true;
                    v.page = 0;
                })
            }
        });
    });
    // A figure of the overview opens the explorer below with the query behind it.
    let explore = Callback::new(move |query: &'static str| {
        update(&move |v: &mut View| {
            let get = |k: &str| query.split('&').find_map(|p| p.strip_prefix(k)?.strip_prefix('='));
            let list = |k: &str| get(k).map(|s| s.split(',').filter(|x| !x.is_empty()).map(String::from).collect());
            v.dims = list("dims").unwrap_or_default();
            v.metrics = list("metrics").unwrap_or_else(|| vec!["hits".into()]);
            v.classes = get("classes") == Some("1");
            v.filters.clear();
            v.sort.clear();
            v.page = 0;
        });
        if let Some(e) = document().get_element_by_id("explorer") {
            e.scroll_into_view();
        }
    });
    view! {
        <section class="page stats">
            <h1>"Statistics"</h1>
            <Overview range=Signal::derive(move || resolved.get().map(|(r, _, _)| r)) customer on_explore=explore />
            <h2 class="explorer-title" id="explorer">"Explorer"</h2>
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
                                        allowed.into_iter().map(|g| view! { <option value=g.as_str()>{granularity_name(g)}</option> }).collect_view()
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
                            // Why it cannot be added, on hover and for screen readers (aria-disabled keeps it
                            // focusable, so its description is read).
                            let reason = move || {
                                (!enabled())
                                    .then(|| resolved.get().map(|(_, g, _)| disabled_reason(d, &view.get().dims, g)))
                                    .flatten()
                            };
                            let reason_id = format!("why-{d}");
                            view! {
                                <button
                                    class="chip"
                                    class:active=on
                                    aria-pressed=move || on().to_string()
                                    data-dim=d
                                    aria-disabled=move || (!enabled()).to_string()
                                    title=reason
                                    aria-describedby=reason_id.clone()
                                    on:click=move |_| {
                                        if enabled() {
                                            toggle_dim(d)
                                        }
                                    }
                                >
                                    {dimension_name(d)}
                                    <span class="sr-only" id=reason_id.clone()>{reason}</span>
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
                                            if addable.is_empty() { "(none — remove one)".to_string() } else { addable.iter().map(|d| dimension_name(d)).collect::<Vec<_>>().join(", ") },
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
                    <StatusClasses view update errors_only />
                    <button
                        id="export-csv"
                        on:click=move |_| {
                            if let Some(Ok(Some(r))) = chart.get_untracked() {
                                download("statistics.csv", &to_csv(&r.now));
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
                                let v = view.get_untracked();
                                let classes = |r: StatsResponse| if v.classes { by_status_class(&r) } else { r };
                                let previous = r.previous.map(classes);
                                view! { <Charts response=classes(r.now) previous metrics=v.metrics range granularity=g stacked add_filter markers alert_on /> }.into_any()
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
                            let r = if v.classes { by_status_class(&r) } else { r };
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

/// The filter of the error status codes (4xx and 5xx) of an answer with the column `http_status_code`:
/// `http_status_code==404,http_status_code==500`; a code that matches nothing when there are none.
pub fn errors_filter(r: &StatsResponse) -> String {
    let code = crate::api::Column::of(r, "http_status_code");
    let mut codes: Vec<String> = r
        .rows
        .iter()
        .map(|row| code.text(row))
        .filter(|c| matches!(crate::components::labels::status_class(c), Some("4xx" | "5xx")))
        .collect();
    codes.sort();
    codes.dedup();
    if codes.is_empty() {
        // No error in the range: a filter that shows exactly that.
        codes.push("599".into());
    }
    codes.iter().map(|c| format!("http_status_code=={c}")).collect::<Vec<_>>().join(",")
}

/// Beside the chart when the view is split by HTTP status code: group the codes into classes, and show the
/// errors only (4xx and 5xx) in one click.
#[component]
fn StatusClasses(
    view: Memo<View>,
    update: impl Fn(&dyn Fn(&mut View)) + Copy + Send + Sync + 'static,
    errors_only: Callback<()>,
) -> impl IntoView {
    let shown = move || view.get().dims.iter().any(|d| d == "http_status_code");
    move || {
        shown().then(|| {
            let on = move || view.get().classes;
            view! {
                <button
                    class="chip"
                    id="status-classes"
                    class:active=on
                    aria-pressed=move || on().to_string()
                    on:click=move |_| update(&|v: &mut View| v.classes = !v.classes)
                >
                    "Status classes"
                </button>
                <button id="errors-only" on:click=move |_| errors_only.run(())>"Errors only"</button>
            }
        })
    }
}
