//! What the statistics and security views compute from statistics answers: totals, series over time, top
//! values, CSV. Rows are read by column name.

use std::collections::{BTreeMap, BTreeSet};

use edge_api::stats::{StatsResponse, parse_time};
use serde_json::Value;

use crate::{
    api::{Column, value_text},
    components::{
        chart::Series,
        download::csv,
        labels::{status_class, value_meaning},
    },
};

/// Series shown by name in a chart; the rest are added up as "other".
pub const SERIES: usize = 6;

/// Values of a chart's dimension fetched as series of their own: the top values' bars show them all, the
/// chart names the first [`SERIES`].
pub const TOP: usize = 10;

/// The row of an answer from [`with_other`] that holds "other" (its dimension cells are null; the API never
/// answers null for a dimension).
fn is_other(dim: Option<Column>, row: &[Value]) -> bool {
    dim.is_some_and(|d| d.value(row).is_some_and(Value::is_null))
}

/// One series' points by time: (amount, requests behind it) — a latency is the amount over the requests.
type Points = BTreeMap<i64, (f64, f64)>;

/// The first dimension of an answer (what series and bars are split by), if it has one.
fn first_dimension(r: &StatsResponse) -> Option<Column> {
    r.query.dimensions.first().map(|d| Column::of(r, d)).filter(Column::exists)
}

/// True for a metric of time per request (milliseconds): shown as an average over requests, never summed.
pub fn is_latency(metric: &str) -> bool {
    metric.ends_with("_ms")
}

/// How a metric adds up over rows: a sum, or for a latency its sum over the hits' sum (the API's rows hold
/// the milliseconds of all their requests).
#[derive(Clone, Copy)]
struct Measure {
    value: Column,
    hits: Option<Column>,
}

impl Measure {
    fn of(r: &StatsResponse, metric: &str) -> Measure {
        let hits = is_latency(metric).then(|| Column::of(r, "hits"));
        Measure { value: Column::of(r, metric), hits }
    }

    /// (amount, weight) of a row: the weight is the row's hits for a latency.
    fn row(&self, row: &[serde_json::Value]) -> (f64, f64) {
        (self.value.number(row), self.hits.map(|h| h.number(row)).unwrap_or(1.0))
    }

    /// The value of accumulated (amount, weight); an average of no requests is 0 (for totals).
    fn value(&self, acc: (f64, f64)) -> f64 {
        let v = self.point(acc);
        if v.is_nan() { 0.0 } else { v }
    }

    /// The value of a point of a series: an average of no requests is no value (NaN, drawn as a gap).
    fn point(&self, (amount, weight): (f64, f64)) -> f64 {
        match self.hits {
            None => amount,
            Some(_) if weight > 0.0 => amount / weight,
            Some(_) => f64::NAN,
        }
    }
}

fn add(acc: &mut (f64, f64), (a, w): (f64, f64)) {
    acc.0 += a;
    acc.1 += w;
}

/// Each metric over all rows of an answer: the sum, or the average per request of a latency.
pub fn totals(r: &StatsResponse) -> Vec<(String, f64)> {
    let metrics = r.query.metrics.clone().unwrap_or_default();
    metrics
        .into_iter()
        .map(|m| {
            let measure = Measure::of(r, &m);
            let mut acc = (0.0, 0.0);
            for row in &r.rows {
                add(&mut acc, measure.row(row));
            }
            (m, measure.value(acc))
        })
        .collect()
}

/// The series of one metric, split by the first dimension: the largest values, the rest as "other".
pub fn series_of(r: &StatsResponse, metric: &str) -> Vec<Series> {
    let measure = Measure::of(r, metric);
    if !measure.value.exists() {
        return Vec::new();
    }
    let time = Column::of(r, "starttime");
    let dim = first_dimension(r);
    let mut by: BTreeMap<String, Points> = BTreeMap::new();
    let mut other: Points = BTreeMap::new();
    for row in &r.rows {
        let Ok(t) = parse_time(&time.text(row)) else { continue };
        if is_other(dim, row) {
            add(other.entry(t).or_default(), measure.row(row));
            continue;
        }
        let key = dim.map(|d| d.text(row)).unwrap_or_else(|| "total".into());
        add(by.entry(key).or_default().entry(t).or_default(), measure.row(row));
    }
    // Every series has a value at every time of the answer (zero where it had no row), so that stacked areas
    // and lines do not bridge gaps.
    let times: BTreeSet<i64> = by.values().chain([&other]).flat_map(|p| p.keys().copied()).collect();
    for points in by.values_mut() {
        for t in &times {
            points.entry(*t).or_insert((0.0, 0.0));
        }
    }
    // Ranked by volume: the amount (for a latency, the requests behind it).
    let size = |p: &Points| p.values().map(|(a, w)| if measure.hits.is_some() { *w } else { *a }).sum::<f64>();
    let mut ranked: Vec<(String, Points)> = by.into_iter().collect();
    ranked.sort_by(|a, b| size(&b.1).total_cmp(&size(&a.1)));
    let mut out: Vec<Series> = Vec::new();
    for (i, (name, points)) in ranked.into_iter().enumerate() {
        if i < SERIES {
            out.push(Series { name, points: points.into_iter().map(|(t, acc)| (t, measure.point(acc))).collect() });
        } else {
            for (t, acc) in points {
                add(other.entry(t).or_default(), acc);
            }
        }
    }
    if !other.is_empty() {
        for t in &times {
            other.entry(*t).or_insert((0.0, 0.0));
        }
        out.push(Series {
            name: "other".into(),
            points: other.into_iter().map(|(t, acc)| (t, measure.point(acc))).collect(),
        });
    }
    out
}

/// At most this many buckets are filled in (a 24-hour range of 5-minute buckets has 288; 31 days hourly 744).
const MAX_BUCKETS: i64 = 10_000;

/// The start of every bucket of `step` milliseconds that [start, end) touches, aligned as the API's buckets
/// are (to multiples of the step since the epoch); nothing when there would be more than [`MAX_BUCKETS`].
pub fn buckets(start: i64, end: i64, step: i64) -> Vec<i64> {
    if step <= 0 || end <= start || (end - start) / step > MAX_BUCKETS {
        return Vec::new();
    }
    let first = start - start.rem_euclid(step);
    (0..).map(|i| first + i * step).take_while(|t| *t < end).collect()
}

/// Gives every series a point at every bucket: a bucket without rows is zero for a count or a sum — no rows is
/// no traffic, and a line must not bridge it — and no value (NaN, a gap) for an average, which has nothing to
/// average there.
pub fn fill_buckets(series: &mut [Series], buckets: &[i64], average: bool) {
    if buckets.is_empty() {
        return;
    }
    let missing = if average { f64::NAN } else { 0.0 };
    for s in series.iter_mut() {
        let known: BTreeMap<i64, f64> = s.points.iter().copied().collect();
        let mut points: Vec<(i64, f64)> =
            buckets.iter().map(|t| (*t, known.get(t).copied().unwrap_or(missing))).collect();
        // Rows off the buckets' grid (another alignment) are kept rather than lost.
        points.extend(known.iter().filter(|(t, _)| buckets.binary_search(t).is_err()).map(|(t, v)| (*t, *v)));
        points.sort_by_key(|(t, _)| *t);
        s.points = points;
    }
}

/// The series of one metric over [start, end) in buckets of `step` ms — every bucket present (see
/// [`fill_buckets`]) — and the start of the bucket still filling at `now`, if any.
pub fn series_over(
    r: &StatsResponse,
    metric: &str,
    start: i64,
    end: i64,
    step: i64,
    now: i64,
) -> (Vec<Series>, Option<i64>) {
    let mut series = series_of(r, metric);
    let all = buckets(start, end, step);
    fill_buckets(&mut series, &all, is_latency(metric));
    (series, partial_bucket(&all, step, now))
}

/// The start of the bucket still filling at `now` (its end is after `now`), if the range reaches it: its
/// numbers are partial and the chart marks it so.
pub fn partial_bucket(buckets: &[i64], step: i64, now: i64) -> Option<i64> {
    buckets.last().copied().filter(|b| b + step > now)
}

/// The top `n` values of the first dimension by a metric, over the whole range (a latency: the slowest).
pub fn top_values(r: &StatsResponse, metric: &str, n: usize) -> Vec<(String, f64)> {
    let (measure, Some(dim)) = (Measure::of(r, metric), first_dimension(r)) else { return Vec::new() };
    let mut by: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for row in r.rows.iter().filter(|row| !is_other(Some(dim), row)) {
        add(by.entry(dim.text(row)).or_default(), measure.row(row));
    }
    let mut v: Vec<(String, f64)> = by.into_iter().map(|(k, acc)| (k, measure.value(acc))).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v.truncate(n);
    v
}

/// CSV of an answer: a header of column names, then the rows ("other" for the dimensions of the rows of
/// "other"). An enumerated dimension keeps its codes and gets a column of their meanings beside it
/// (`cache_status`, `cache_status_label`: `1`, `hit`); an HTTP status code gets its class
/// (`http_status_code_class`: `5xx`).
pub fn to_csv(r: &StatsResponse) -> String {
    let cell = |v: &Value| if v.is_null() { "other".to_string() } else { value_text(v) };
    // (column index, name of the added column, meaning of a value)
    type Meaning = fn(&str, &str) -> Option<String>;
    let meaning: Meaning = |dim, v| value_meaning(dim, v).map(String::from);
    let class: Meaning = |_, v| status_class(v).map(String::from);
    let added: Vec<(usize, String, Meaning)> = r
        .columns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match c.name.as_str() {
            "cache_status" | "gna_cache_status" | "scheme" => Some((i, format!("{}_label", c.name), meaning)),
            "http_status_code" => Some((i, format!("{}_class", c.name), class)),
            _ => None,
        })
        .collect();
    let header = r.columns.iter().enumerate().flat_map(|(i, c)| {
        std::iter::once(c.name.clone()).chain(added.iter().filter(move |(j, _, _)| *j == i).map(|(_, n, _)| n.clone()))
    });
    let rows = r.rows.iter().map(|row| {
        row.iter()
            .enumerate()
            .flat_map(|(i, v)| {
                let text = cell(v);
                let extra = added
                    .iter()
                    .filter(|(j, _, _)| *j == i)
                    .map(|(_, _, f)| f(&r.columns[i].name, &text).unwrap_or_default())
                    .collect::<Vec<_>>();
                std::iter::once(text).chain(extra)
            })
            .collect()
    });
    csv(header.collect::<Vec<_>>(), rows)
}

/// The values of the first dimension ranked by `metric` over all rows (largest first), at most `n`.
pub fn ranked_values(r: &StatsResponse, metric: &str, n: usize) -> Vec<String> {
    let mut v = top_values(r, metric, usize::MAX);
    v.retain(|(_, x)| *x > 0.0);
    v.into_iter().take(n).map(|(k, _)| k).collect()
}

/// One answer for a chart split by a dimension: the rows of each top value's answer (`parts`, one per value,
/// all with the same columns) and, per time, a row of "other" (null dimensions) holding what `total` (the
/// same query without the dimension) has beyond the sum of the parts — only where that is more than nothing.
/// Latencies stay right: their rows hold sums of milliseconds and of hits, which subtract like any sum.
pub fn with_other(parts: Vec<StatsResponse>, total: &StatsResponse) -> Option<StatsResponse> {
    let mut out = parts.first()?.clone();
    let truncated =
        parts.iter().any(|p| p.total_results > p.rows.len() as u64) || total.total_results > total.rows.len() as u64;
    out.rows = parts.into_iter().flat_map(|p| p.rows).collect();
    let time = Column::of(&out, "starttime");
    let metrics: Vec<(usize, Column)> = out
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| out.query.metrics.as_ref().is_some_and(|m| m.contains(&c.name)))
        .map(|(i, c)| (i, Column::of(total, &c.name)))
        .collect();
    // Sum of the parts per time and metric column.
    let mut sums: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for row in &out.rows {
        let sum = sums.entry(time.text(row)).or_insert_with(|| vec![0.0; out.columns.len()]);
        for (i, _) in &metrics {
            sum[*i] += row.get(*i).and_then(Value::as_f64).unwrap_or(0.0);
        }
    }
    let (t_start, t_end) = (Column::of(total, "starttime"), Column::of(total, "endtime"));
    let mut others = Vec::new();
    for row in &total.rows {
        let start = t_start.text(row);
        let sum = sums.get(&start);
        let mut cells = vec![Value::Null; out.columns.len()];
        let mut any = false;
        for (i, c) in &metrics {
            // Never below zero: records that arrived between the queries are not "other".
            let rest = (c.number(row) - sum.map_or(0.0, |s| s[*i])).max(0.0).round() as i64;
            any |= rest > 0;
            cells[*i] = Value::from(rest);
        }
        if any {
            if let Some(i) = out.columns.iter().position(|c| c.name == "starttime") {
                cells[i] = Value::from(start.clone());
            }
            if let Some(i) = out.columns.iter().position(|c| c.name == "endtime") {
                cells[i] = Value::from(t_end.text(row));
            }
            others.push(cells);
        }
    }
    out.rows.extend(others);
    out.total_results = out.rows.len() as u64 + u64::from(truncated);
    Some(out)
}

/// The bars of a ranked answer (a top list): its first dimension by its first metric.
pub fn bars(r: &StatsResponse, n: usize) -> Vec<(String, f64)> {
    let metric = r.query.metrics.as_ref().and_then(|m| m.first().cloned());
    let metric = metric.or_else(|| r.columns.last().map(|c| c.name.clone())).unwrap_or_default();
    top_values(r, &metric, n)
}

/// The answer with its HTTP status codes grouped into their classes (`404` → `4xx`): rows that then share
/// their time and dimension values are added up, metric by metric. An answer without the column is returned
/// as it is.
pub fn by_status_class(r: &StatsResponse) -> StatsResponse {
    let Some(code) = r.columns.iter().position(|c| c.name == "http_status_code") else { return r.clone() };
    let metrics = r.query.metrics.clone().unwrap_or_default();
    let is_metric: Vec<bool> = r.columns.iter().map(|c| metrics.contains(&c.name)).collect();
    let mut out = StatsResponse { rows: Vec::new(), ..r.clone() };
    let mut index: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for row in &r.rows {
        let mut row = row.clone();
        if let Some(class) = row.get(code).and_then(|v| crate::components::labels::status_class(&value_text(v))) {
            row[code] = Value::from(class);
        }
        let key: Vec<String> = row.iter().zip(&is_metric).filter(|(_, m)| !**m).map(|(v, _)| v.to_string()).collect();
        match index.get(&key) {
            Some(i) => {
                for (j, v) in row.iter().enumerate().filter(|(j, _)| is_metric[*j]) {
                    let sum = out.rows[*i][j].as_f64().unwrap_or(0.0) + v.as_f64().unwrap_or(0.0);
                    out.rows[*i][j] = Value::from(sum.round() as i64);
                }
            }
            None => {
                index.insert(key, out.rows.len());
                out.rows.push(row);
            }
        }
    }
    // A cut answer stays marked as cut.
    out.total_results = out.rows.len() as u64 + u64::from(r.total_results > r.rows.len() as u64);
    out
}
