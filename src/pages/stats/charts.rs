//! The chart of one metric at a time over the range, split by the first dimension (the previous period dashed
//! when comparing, the incident timeline's markers on it), "Alert on this", and its top values.

use edge_api::stats::{Granularity, StatsResponse};
use leptos::prelude::*;

use super::view::metric_label;
use crate::components::{
    answers::{is_latency, series_over, top_values},
    chart::{BarList, Marker, Series, TimeChart, Unit},
    labels::dimension_name,
    range::{Range, now_ms},
};

/// A granularity as words for an axis title: "per 5 minutes".
fn per(g: Granularity) -> &'static str {
    match g {
        Granularity::FiveMinute => "per 5 minutes",
        Granularity::Hour => "per hour",
        Granularity::Day => "per day",
    }
}

/// The chart of one metric at a time (chosen by its chip) over the range, and its top values.
#[component]
pub(super) fn Charts(
    response: StatsResponse,
    /// The previous period's answer, when comparing.
    previous: Option<StatsResponse>,
    /// The metrics chosen (the answer may hold hits besides, for the averages of latencies).
    metrics: Vec<String>,
    range: Range,
    granularity: Granularity,
    stacked: Signal<bool>,
    add_filter: Callback<(String, String)>,
    markers: Memo<Vec<Marker>>,
    /// The address of a new alert rule on this chart's query and a metric (none when it cannot be watched).
    alert_on: Callback<String, Option<String>>,
) -> impl IntoView {
    let metric = RwSignal::new(metrics.first().cloned().unwrap_or_else(|| "hits".into()));
    let split = response.query.dimensions.first().cloned();
    let truncated = response.total_results > response.rows.len() as u64;
    let r = StoredValue::new(response);
    let previous = StoredValue::new(previous);
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
                Some(d) => format!("{} over time by {}", metric_label(&m), dimension_name(d).to_lowercase()),
                None => format!("{} over time", metric_label(&m)),
            };
            let y_title = if is_latency(&m) {
                format!("{}{}", metric_label(&m), unit.title())
            } else {
                format!("{} {}{}", metric_label(&m), per(granularity), unit.title())
            };
            let (series, partial) =
                r.with_value(|r| series_over(r, &m, range.start, range.end, granularity.millis(), now_ms()));
            // The previous period's series, moved forward by the range's length onto this one.
            let before = range.previous();
            let previous: Vec<Series> = previous.with_value(|p| {
                p.as_ref()
                    .map(|p| series_over(p, &m, before.start, before.end, granularity.millis(), now_ms()).0)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|s| Series { points: s.points.into_iter().map(|(t, v)| (t + range.span(), v)).collect(), ..s })
                    .collect()
            });
            // Averages do not stack.
            let stacked = stacked.get() && !is_latency(&m);
            let on_filter = split.clone().map(|d| Callback::new(move |v: String| add_filter.run((d.clone(), v))));
            let dim = split.clone().unwrap_or_default();
            match on_filter {
                Some(on_filter) => view! { <TimeChart label series previous start=range.start end=range.end stacked unit y_title id="time-chart" on_filter partial=partial dim markers /> }.into_any(),
                None => view! { <TimeChart label series previous start=range.start end=range.end stacked unit y_title id="time-chart" partial=partial markers /> }.into_any(),
            }
        }
    };
    view! {
        <div class="chart-metric">
            <div class="chips" role="group" aria-label="Metric">{chips}</div>
            {move || alert_on.run(metric.get()).map(|href| view! { <a class="button secondary small alert-on" href=href>"Alert on this"</a> })}
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
                                label=format!("Top {} by {}", dimension_name(&d).to_lowercase(), metric_label(&m).to_lowercase())
                                dim=d.clone()
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
