//! The rows of a statistics answer as a sortable, paged table, and the totals above the charts.

use edge_api::stats::StatsResponse;
use leptos::prelude::*;

use super::view::{PAGE_SIZE, metric_label};
use crate::{
    api::Column,
    components::{
        answers::is_latency,
        chart::Unit,
        labels::{dimension_name, value_label},
        pager::Pager,
        time::datetime,
    },
};

/// The rows of one page; sorting by a column header (descending first), paging below. A dimension's value
/// is a button that adds it as a filter; a latency is shown as the average per request of its row.
#[component]
pub fn DataTable(
    response: StatsResponse,
    /// The metrics chosen (the answer may hold hits besides).
    metrics: Vec<String>,
    sort: String,
    /// The page, counted from 0 as in the address.
    page: u64,
    on_sort: Callback<String>,
    on_page: Callback<u64>,
    on_filter: Callback<(String, String)>,
) -> impl IntoView {
    if response.rows.is_empty() {
        return view! { <div class="empty">"No traffic in this range."</div> }.into_any();
    }
    let hits = Column::of(&response, "hits");
    let dims = response.query.dimensions.clone();
    let columns: Vec<(String, Column, bool)> = response
        .columns
        .iter()
        .filter(|c| !response.query.metrics.as_ref().is_some_and(|m| m.contains(&c.name)) || metrics.contains(&c.name))
        .map(|c| (c.name.clone(), Column::of(&response, &c.name), c.column_type.as_deref() == Some("long")))
        .collect();
    let header = columns
        .iter()
        .map(|(name, _, numeric)| {
            let (state, aria) = if sort == *name {
                (" ▲", "ascending")
            } else if sort == format!("-{name}") {
                (" ▼", "descending")
            } else {
                ("", "none")
            };
            let next = if sort == format!("-{name}") { name.clone() } else { format!("-{name}") };
            let title =
                if metrics.contains(name) || name == "hits" { metric_label(name) } else { dimension_name(name) };
            view! {
                <th class:num=*numeric aria-sort=aria scope="col">
                    <button class="sort" on:click=move |_| on_sort.run(next.clone())>
                        {format!("{title}{state}")}
                    </button>
                </th>
            }
        })
        .collect_view();
    let rows = response
        .rows
        .iter()
        .map(|row| {
            let cells = columns
                .iter()
                .map(|(name, col, numeric)| {
                    let full = col.text(row);
                    if dims.contains(name) {
                        let (dim, value) = (name.clone(), full.clone());
                        let shown = value_label(name, &full);
                        return view! {
                            <td class:num=*numeric>
                                <button
                                    type="button"
                                    class="link cell-filter"
                                    title=format!("{shown} — filter to this")
                                    on:click=move |_| on_filter.run((dim.clone(), value.clone()))
                                >
                                    {shown.clone()}
                                </button>
                            </td>
                        }
                        .into_any();
                    }
                    let text = match col.value(row).and_then(|v| v.as_f64()) {
                        Some(n) if is_latency(name) => {
                            let h = hits.number(row);
                            Unit::Ms.short(if h > 0.0 { n / h } else { 0.0 })
                        }
                        Some(n) if metrics.contains(name) => Unit::of_metric(name).short(n),
                        _ if name == "starttime" || name == "endtime" => datetime(&full),
                        _ => full.clone(),
                    };
                    let full = match col.value(row).and_then(|v| v.as_f64()) {
                        Some(n) if metrics.contains(name) && !is_latency(name) => Unit::of_metric(name).exact(n),
                        _ if name == "starttime" || name == "endtime" => format!("{full} UTC"),
                        _ => full.clone(),
                    };
                    view! { <td class:num=*numeric title=full>{text}</td> }.into_any()
                })
                .collect_view();
            view! { <tr>{cells}</tr> }
        })
        .collect_view();
    let shown = response.rows.len() as u64;
    view! {
        <div class="table-scroll">
            <table class="data stats-table">
                <thead>
                    <tr>{header}</tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <Pager
            page=page + 1
            per_page=PAGE_SIZE
            shown
            total=response.total_results
            on_page=Callback::new(move |p: u64| on_page.run(p.saturating_sub(1)))
        />
    }
    .into_any()
}

/// Totals per metric for the range, and for the previous period when compared.
pub type KpiTotals = (Vec<(String, f64)>, Option<Vec<(String, f64)>>);

/// One tile per metric: its total, and the change against the previous period.
#[component]
pub fn Kpis(totals: KpiTotals) -> impl IntoView {
    let (now, before) = totals;
    let tiles = now
        .into_iter()
        .enumerate()
        .map(|(i, (m, v))| {
            let delta = before.as_ref().and_then(|b| b.get(i)).map(|(_, p)| (*p != 0.0).then(|| (v - p) / p * 100.0));
            let delta = delta.map(|d| match d {
                Some(d) => {
                    let class = if d >= 0.0 { "kpi-delta up" } else { "kpi-delta down" };
                    let tenths = (d * 10.0).round() as i64;
                    let sign = if tenths >= 0 { "+" } else { "-" };
                    let text = format!("{sign}{}.{}% vs previous period", tenths.abs() / 10, tenths.abs() % 10);
                    view! { <div class=class>{text}</div> }.into_any()
                }
                None => view! { <div class="kpi-delta muted">"no data before"</div> }.into_any(),
            });
            view! {
                <div class="kpi" data-metric=m.clone()>
                    <div class="kpi-label">{if is_latency(&m) { format!("{} (average)", metric_label(&m)) } else { metric_label(&m) }}</div>
                    <div class="kpi-value" title=Unit::of_metric(&m).exact(v)>{Unit::of_metric(&m).short(v)}</div>
                    {delta}
                </div>
            }
        })
        .collect_view();
    view! {
        <div class="kpis" id="kpis">
            {tiles}
        </div>
    }
}
