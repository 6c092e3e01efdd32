//! What the statistics view computes from answers: totals, series over time, top values, CSV. Rows are read
//! by column name.

use std::collections::{BTreeMap, BTreeSet};

use edge_api::stats::{StatsResponse, parse_time};

use crate::{
    api::{Column, value_text},
    components::chart::Series,
};

/// Series shown by name in a chart; the rest are added up as "other".
pub const SERIES: usize = 6;

/// The first dimension of an answer (what series and bars are split by), if it has one.
fn first_dimension(r: &StatsResponse) -> Option<Column> {
    r.query.dimensions.first().map(|d| Column::of(r, d)).filter(Column::exists)
}

/// Sums of each metric over all rows of an answer.
pub fn totals(r: &StatsResponse) -> Vec<(String, f64)> {
    let metrics = r.query.metrics.clone().unwrap_or_default();
    metrics
        .into_iter()
        .map(|m| {
            let col = Column::of(r, &m);
            let sum = r.rows.iter().map(|row| col.number(row)).sum();
            (m, sum)
        })
        .collect()
}

/// The series of one metric, split by the first dimension: the largest values, the rest as "other".
pub fn series_of(r: &StatsResponse, metric: &str) -> Vec<Series> {
    let value = Column::of(r, metric);
    if !value.exists() {
        return Vec::new();
    }
    let time = Column::of(r, "starttime");
    let dim = first_dimension(r);
    let mut by: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
    for row in &r.rows {
        let Ok(t) = parse_time(&time.text(row)) else { continue };
        let key = dim.map(|d| d.text(row)).unwrap_or_else(|| "total".into());
        *by.entry(key).or_default().entry(t).or_default() += value.number(row);
    }
    // Every series has a value at every time of the answer (zero where it had no row), so that stacked areas
    // and lines do not bridge gaps.
    let times: BTreeSet<i64> = by.values().flat_map(|p| p.keys().copied()).collect();
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

/// The top `n` values of the first dimension by a metric, over the whole range.
pub fn top_values(r: &StatsResponse, metric: &str, n: usize) -> Vec<(String, f64)> {
    let (value, Some(dim)) = (Column::of(r, metric), first_dimension(r)) else { return Vec::new() };
    let mut by: BTreeMap<String, f64> = BTreeMap::new();
    for row in &r.rows {
        *by.entry(dim.text(row)).or_default() += value.number(row);
    }
    let mut v: Vec<(String, f64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v.truncate(n);
    v
}

/// CSV of an answer: a header of column names, then the rows.
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

/// Offers `text` as a file download named `name`.
pub fn download(name: &str, text: &str) {
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

/// The bars of a ranked answer (a top list): its first dimension by its first metric.
pub fn bars(r: &StatsResponse, n: usize) -> Vec<(String, f64)> {
    let metric = r.query.metrics.as_ref().and_then(|m| m.first().cloned());
    let metric = metric.or_else(|| r.columns.last().map(|c| c.name.clone())).unwrap_or_default();
    top_values(r, &metric, n)
}
