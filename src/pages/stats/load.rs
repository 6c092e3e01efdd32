//! The statistics view's reads, each with its own key so that paging, sorting or the chart style refetch only
//! what they change, and a read cancelled when its key changes: the table's page, the chart's answer (in a
//! bounded number of requests, and the previous period's when comparing) and the totals.

use edge_api::stats::{Family, Granularity, StatsResponse};
use leptos::prelude::*;

use super::{
    FILTER_DIMENSIONS,
    state::ViewState,
    table::KpiTotals,
    view::{PAGE_SIZE, View, narrowable, params, rank_metric, ranking, series_dims},
};
use crate::{
    api,
    components::{
        answers::{self, totals},
        async_view::{Cancel, Load, load},
        filters::with_condition,
        range::{Range, now_ms},
    },
};

/// What the view reads, and the addresses it reads from (for the curl commands).
pub(super) struct Reads {
    pub table_url: Memo<Option<String>>,
    pub chart_url: Memo<Option<String>>,
    /// None: the dimensions do not form a grouping set.
    pub table: Load<Option<StatsResponse>>,
    pub chart: Load<Option<ChartAnswer>>,
    pub kpis: Load<Option<KpiTotals>>,
}

impl Reads {
    pub fn of(state: ViewState, customer: Memo<String>) -> Reads {
        let ViewState { view, resolved, .. } = state;
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
                let chosen =
                    |t: Vec<(String, f64)>| t.into_iter().filter(|(m, _)| metrics.contains(m)).collect::<Vec<_>>();
                Ok(Some((chosen(totals(&now?)), before?.map(|b| chosen(totals(&b))))))
            }
        });
        Reads { table_url, chart_url, table, chart, kpis }
    }
}

/// What the chart is drawn from: the range's answer and, when comparing, the previous period's (the same
/// values of the dimension, so that each series meets its own past).
#[derive(Clone)]
pub(super) struct ChartAnswer {
    pub now: StatsResponse,
    pub previous: Option<StatsResponse>,
}

/// `f`'s answer, if there is an `f`.
async fn maybe<T>(f: Option<impl Future<Output = api::ApiResult<T>>>) -> api::ApiResult<Option<T>> {
    match f {
        Some(f) => f.await.map(Some),
        None => Ok(None),
    }
}

/// The answer a chart over the whole range is drawn from, in a bounded number of requests however many values
/// the dimension has (one answer holds at most 2,500 rows): the values of the first dimension ranked over the
/// range (one coarse query) and the total without the dimension, at once; then, at once, the series of each
/// of the top [`answers::TOP`] values (the view's filters AND the value); "other" is the total less their sum.
/// Without a dimension, or when the filters are joined by OR (a value cannot be added to them), it is the
/// view's query as it is. When comparing, the previous period's answer is asked for alongside, for the same
/// values. `abort` cancels every request.
async fn chart_answer(
    customer: &str,
    v: &View,
    range: Range,
    g: Granularity,
    abort: Option<web_sys::AbortSignal>,
) -> api::ApiResult<ChartAnswer> {
    let before = v.compare.then(|| range.previous());
    let get = |filters: &str, r: Range, g: Granularity, dims: &[String], sort: &str| {
        let v = View { filters: filters.to_string(), ..v.clone() };
        let url = api::stats_url(customer, "/stats/data", &params(&v, r, g, dims, sort, 0, 2500));
        let abort = abort.clone();
        async move { api::get_stats(&url, abort).await }
    };
    let Some(dim) = v.dims.first().filter(|_| narrowable(&v.filters, &FILTER_DIMENSIONS)) else {
        let whole = |r: Range| get(&v.filters, r, g, &v.dims, "starttime");
        let (now, previous) = futures::future::join(whole(range), maybe(before.map(whole))).await;
        return Ok(ChartAnswer { now: now?, previous: previous? });
    };
    let metric = rank_metric(&v.metrics);
    let (rank_range, rank_g, rank_dims) = ranking(&v.dims, range, g, now_ms());
    let total = |r: Range| get(&v.filters, r, g, &[], "starttime");
    let (ranked, now_total, before_total) = futures::future::join3(
        get(&v.filters, rank_range, rank_g, &rank_dims, &format!("-{metric}")),
        total(range),
        maybe(before.map(total)),
    )
    .await;
    let (ranked, now_total, before_total) = (ranked?, now_total?, before_total?);
    let top = answers::ranked_values(&ranked, &metric, answers::TOP);
    let dims = series_dims(&v.dims, g);
    let parts = |r: Range| {
        futures::future::join_all(top.iter().map(|value| {
            let filters = with_condition(&v.filters, &FILTER_DIMENSIONS, dim, value);
            get(&filters, r, g, &dims, "starttime")
        }))
    };
    let (now_parts, before_parts) = futures::future::join(
        parts(range),
        maybe(before.map(|r| async move { parts(r).await.into_iter().collect::<Result<Vec<_>, _>>() })),
    )
    .await;
    let now_parts = now_parts.into_iter().collect::<Result<Vec<_>, _>>()?;
    let empty = || StatsResponse { rows: Vec::new(), total_results: 0, ..ranked.clone() };
    let previous = match (before_parts?, before_total) {
        (Some(parts), Some(total)) => Some(answers::with_other(parts, &total).unwrap_or_else(empty)),
        _ => None,
    };
    Ok(ChartAnswer { now: answers::with_other(now_parts, &now_total).unwrap_or_else(empty), previous })
}
