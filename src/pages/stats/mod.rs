//! Statistics: delivery statistics for a time range — totals (with the previous period), a chart per metric
//! split by a dimension (lines or stacked), the top values, a sortable paged table, CSV export — and the top
//! 20 URLs per day. The whole query lives in the page's address, so a view can be bookmarked and shared.
//! Clicking a value (a legend entry's ⊕, a bar, a table cell) adds it as a filter.

mod charts;
mod load;
mod state;
mod table;
mod top_urls;
mod view;

use edge_api::stats::{DELIVERY_DIMENSIONS, DELIVERY_METRICS, Granularity};
use leptos::prelude::*;

pub use self::view::{View, grouping_state, metric_label};
use self::{
    charts::Charts,
    load::Reads,
    state::ViewState,
    table::{DataTable, Kpis},
    top_urls::TopUrls,
};
// What the statistics view computes from answers is shared with the security view: it lives in components
// (named here too, where the view's tests find it).
pub use crate::components::answers::{
    bars, buckets, fill_buckets, is_latency, partial_bucket, series_of, series_over, to_csv, totals,
};
use crate::{
    components::{
        async_view::{AsyncView, Later},
        curl::CopyCurl,
        download::download,
        filters::FilterBuilder,
        range::RangePicker,
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
