//! A statistics rule measured: its watch as statistics queries (validated by the statistics endpoints' own
//! validator, answered through the [`StatsEngine`] trait's query API), summed over windows per group, and its
//! condition decided — at one time for an evaluation, at every step of a span for a preview.

use std::collections::{BTreeMap, HashMap};

use edge_api::{
    alerts::{Condition, Direction, Watch},
    stats::{Family, Query, RawQuery, format_time, validate},
};
use serde_json::{Map, Value, json};

use super::{EVENTS_METRIC, Finding, Target};
use crate::{
    stats::{Cell, QueryError, StatsEngine},
    store::CustomerId,
};

/// Rows one measurement reads at most (over its pages): a rule grouped by a dimension with more values than
/// this is refused when evaluated, and should be narrowed by its filters.
pub const MAX_ROWS: usize = 20_000;
/// Rows a page of a statistics query brings.
const PAGE_ROWS: u64 = 2_500;
const WEEK_MS: i64 = 7 * 86_400_000;

/// A group's values by bucket start; the group is its dimensions' values in the watch's order.
pub type Series = HashMap<Vec<String>, BTreeMap<i64, f64>>;

/// The query of one part of a watch (the metric with its filters) over `[from_ms, to_ms)`, as the statistics
/// endpoints validate it at `now_ms`.
pub fn query_of(
    target: &Target,
    watch: &Watch,
    part: (&str, &Option<String>),
    (from_ms, to_ms): (i64, i64),
    now_ms: i64,
) -> Result<Query, Vec<String>> {
    let (metric, filters) = part;
    let events = target.family == Family::Events;
    let raw = RawQuery {
        starttime: Some(format_time(from_ms)),
        endtime: Some(format_time(to_ms)),
        // Events have no metrics: they are counted (the answer's total), with one column asked for.
        dimensions: Some(if events { "event_type".into() } else { watch.dimensions.join(",") }),
        metrics: (!events).then(|| metric.to_string()),
        granularity: target.granularity.map(|g| g.as_str().to_string()),
        filters: filters.clone().filter(|f| !f.is_empty()),
        ..RawQuery::default()
    };
    let mut query = validate(target.family, &raw, now_ms)?;
    query.start = 0;
    query.limit = if events { 0 } else { PAGE_ROWS };
    Ok(query)
}

/// Checks a watch's queries as the statistics endpoints would at `now_ms`: the dimensions form a grouping set,
/// the metrics and filters belong to the path. Every problem, prefixed with the field.
pub fn check(target: &Target, watch: &Watch, now_ms: i64) -> Result<(), Vec<String>> {
    let end = now_ms.div_euclid(target.step_ms()) * target.step_ms();
    let span = (end - target.window_ms, end);
    let mut problems = Vec::new();
    if let Err(p) = query_of(target, watch, (&watch.metric, &watch.filters), span, now_ms) {
        problems.extend(p.into_iter().map(|p| format!("condition.watch: {p}")));
    }
    if let Some(d) = &watch.denominator
        && let Err(p) = query_of(target, watch, (&d.metric, &d.filters), span, now_ms)
    {
        problems.extend(p.into_iter().map(|p| format!("condition.watch.denominator: {p}")));
    }
    if target.family != Family::Events {
        let metrics = target.family.metrics();
        if watch.metric == EVENTS_METRIC || !metrics.contains(&watch.metric.as_str()) {
            problems.push(format!("condition.watch.metric: this path has {}", metrics.join(", ")));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

fn query_error(e: QueryError) -> String {
    match e {
        QueryError::Unsupported(m) => m,
        QueryError::Unavailable(m) => format!("the statistics cannot be reached: {m}"),
        QueryError::Internal(e) => format!("the statistics query failed: {e}"),
    }
}

fn cell_text(cell: &Cell) -> String {
    match cell {
        Cell::Text(s) => s.to_string(),
        Cell::Int(v) => v.to_string(),
        Cell::Time(ms) => format_time(*ms),
    }
}

/// Reads every page of `query` into a series of `metric` (events: their count, in one bucket).
pub fn fetch(
    engine: &dyn StatsEngine,
    customer: (CustomerId, &str),
    query: &Query,
    metric: &str,
) -> Result<Series, String> {
    let mut series = Series::new();
    if query.family == Family::Events {
        let answer = engine.query(customer.0, customer.1, query).map_err(query_error)?;
        series.entry(Vec::new()).or_default().insert(query.start_ms, answer.total as f64);
        return Ok(series);
    }
    let mut q = query.clone();
    let mut read = 0usize;
    loop {
        let answer = engine.query(customer.0, customer.1, &q).map_err(query_error)?;
        let column = |name: &str| answer.columns.iter().position(|(c, _)| c == name);
        let time = column("starttime");
        let dims: Vec<usize> = q.dimensions.iter().filter_map(|d| column(d)).collect();
        let value = column(metric).ok_or_else(|| format!("the answer has no column {metric}"))?;
        for row in &answer.rows {
            let bucket = match time.and_then(|i| row.get(i)) {
                Some(Cell::Time(ms)) => *ms,
                _ => query.start_ms,
            };
            let group: Vec<String> = dims.iter().filter_map(|i| row.get(*i)).map(cell_text).collect();
            let v = match row.get(value) {
                Some(Cell::Int(v)) => *v as f64,
                _ => 0.0,
            };
            *series.entry(group).or_default().entry(bucket).or_default() += v;
        }
        read += answer.rows.len();
        if read > MAX_ROWS {
            return Err(format!(
                "the rule's query has more than {MAX_ROWS} rows: group by fewer dimensions or narrow its filters"
            ));
        }
        if (answer.rows.len() as u64) < q.limit || read as u64 >= answer.total {
            return Ok(series);
        }
        q.start = read as u64;
    }
}

/// Each group's sum of the buckets in `[from_ms, to_ms)`.
pub fn window_sums(series: &Series, from_ms: i64, to_ms: i64) -> HashMap<Vec<String>, f64> {
    series.iter().map(|(g, buckets)| (g.clone(), buckets.range(from_ms..to_ms).map(|(_, v)| v).sum())).collect()
}

/// What a watch's queries read over a span: the numerator's series and the denominator's.
pub struct Data {
    pub numerator: Series,
    pub denominator: Option<Series>,
}

/// Reads the numerator and the denominator of `watch` over `[from_ms, to_ms)`.
pub fn read(
    engine: &dyn StatsEngine,
    customer: (CustomerId, &str),
    target: &Target,
    watch: &Watch,
    span: (i64, i64),
    now_ms: i64,
) -> Result<Data, String> {
    let invalid = |p: Vec<String>| p.join("; ");
    let q = query_of(target, watch, (&watch.metric, &watch.filters), span, now_ms).map_err(invalid)?;
    let numerator = fetch(engine, customer, &q, &watch.metric)?;
    let denominator = match &watch.denominator {
        Some(d) => {
            let q = query_of(target, watch, (&d.metric, &d.filters), span, now_ms).map_err(invalid)?;
            Some(fetch(engine, customer, &q, &d.metric)?)
        }
        None => None,
    };
    Ok(Data { numerator, denominator })
}

/// One value of each group over a window: the metric, or the ratio (groups without a denominator have none),
/// with the volume (the denominator, else the value).
fn values(data: &Data, from_ms: i64, to_ms: i64) -> Vec<(Vec<String>, f64, f64, f64)> {
    let num = window_sums(&data.numerator, from_ms, to_ms);
    match &data.denominator {
        Some(den) => window_sums(den, from_ms, to_ms)
            .into_iter()
            .filter(|(_, d)| *d > 0.0)
            .map(|(g, d)| {
                let n = num.get(&g).copied().unwrap_or(0.0);
                (g, n / d, n, d)
            })
            .collect(),
        // Without rows the total is 0; a grouped query without rows has no group, and its total is 0 too.
        None if num.is_empty() => vec![(Vec::new(), 0.0, 0.0, 0.0)],
        None => num.into_iter().map(|(g, n)| (g, n, n, n)).collect(),
    }
}

fn group_object(watch: &Watch, target: &Target, group: &[String]) -> Map<String, Value> {
    let names: Vec<String> = if watch.dimensions.is_empty() {
        target.family.category_dimension().map(|d| vec![d.to_string()]).unwrap_or_default()
    } else {
        watch.dimensions.clone()
    };
    names.into_iter().zip(group.iter()).map(|(n, v)| (n, Value::String(v.clone()))).collect()
}

/// Decides the condition at `end_ms` (the end of the window) from data that covers what it needs.
pub fn decide(condition: &Condition, target: &Target, data: &Data, end_ms: i64) -> Finding {
    match condition {
        Condition::Threshold { watch, operator, value: threshold } => {
            let all = values(data, end_ms - target.window_ms, end_ms);
            let worst = all.into_iter().reduce(|a, b| {
                let b_worse = if operator.upward() { b.1 > a.1 } else { b.1 < a.1 };
                if b_worse { b } else { a }
            });
            let Some((group, value, n, d)) = worst else {
                return Finding { details: Map::from_iter([("data".into(), json!(false))]), ..Finding::default() };
            };
            let mut details = Map::from_iter([("numerator".into(), json!(n))]);
            if watch.denominator.is_some() {
                details.insert("denominator".into(), json!(d));
            }
            details.insert("threshold".into(), json!(threshold));
            Finding {
                holds: Some(operator.holds(value, *threshold)),
                value: Some(value),
                group: group_object(watch, target, &group),
                details,
                error: None,
            }
        }
        Condition::Anomaly { watch, z_score, weeks, min_volume, direction } => {
            let window = |k: i64| values(data, end_ms - k * WEEK_MS - target.window_ms, end_ms - k * WEEK_MS);
            let history: Vec<HashMap<Vec<String>, f64>> =
                (1..=i64::from(*weeks)).map(|k| window(k).into_iter().map(|(g, v, _, _)| (g, v)).collect()).collect();
            let mut worst: Option<(f64, Vec<String>, f64, f64, f64, f64)> = None;
            for (group, value, _, volume) in window(0) {
                let past: Vec<f64> = history.iter().map(|h| h.get(&group).copied().unwrap_or(0.0)).collect();
                let (z, mean, sd) = z_of(value, &past);
                let score = match direction {
                    Direction::Up => z,
                    Direction::Down => -z,
                    Direction::Both => z.abs(),
                };
                if worst.as_ref().is_none_or(|w| score > w.0) {
                    worst = Some((score, group, z, mean, sd, volume));
                }
            }
            let Some((score, group, z, mean, sd, volume)) = worst else {
                return Finding { details: Map::from_iter([("data".into(), json!(false))]), ..Finding::default() };
            };
            let current = window(0).into_iter().find(|(g, ..)| *g == group).map(|(_, v, ..)| v).unwrap_or(0.0);
            Finding {
                holds: Some(volume >= *min_volume && score >= *z_score),
                value: Some(z),
                group: group_object(watch, target, &group),
                details: Map::from_iter([
                    ("window_value".into(), json!(current)),
                    ("mean".into(), json!(mean)),
                    ("standard_deviation".into(), json!(sd)),
                    ("volume".into(), json!(volume)),
                    ("z_score".into(), json!(z_score)),
                ]),
                error: None,
            }
        }
        Condition::Audit { .. } => Finding::default(),
    }
}

/// The z-score of `value` against `past` (their mean and standard deviation). The deviation is at least a
/// tenth of the mean's size (and a millionth), so a history that barely varies does not make every change
/// an anomaly.
pub fn z_of(value: f64, past: &[f64]) -> (f64, f64, f64) {
    if past.is_empty() {
        return (0.0, value, 0.0);
    }
    let n = past.len() as f64;
    let mean = past.iter().sum::<f64>() / n;
    let variance = past.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let sd = variance.sqrt();
    let floor = (mean.abs() * 0.1).max(1e-6);
    ((value - mean) / sd.max(floor), mean, sd)
}

/// How far back a measurement at one time reads: the window, and an anomaly's previous weeks.
pub fn lookback_ms(condition: &Condition, target: &Target) -> i64 {
    match condition {
        Condition::Anomaly { weeks, .. } => i64::from(*weeks) * WEEK_MS + target.window_ms,
        _ => target.window_ms,
    }
}

/// Measures a statistics rule at `end_ms`.
pub fn measure(
    engine: &dyn StatsEngine,
    customer: (CustomerId, &str),
    condition: &Condition,
    target: &Target,
    end_ms: i64,
    now_ms: i64,
) -> Finding {
    let Some(watch) = condition.watch() else { return Finding::default() };
    let span = (end_ms - lookback_ms(condition, target), end_ms);
    match read(engine, customer, target, watch, span, now_ms) {
        Ok(data) => decide(condition, target, &data, end_ms),
        Err(error) => Finding { error: Some(error), ..Finding::default() },
    }
}

/// The evaluations of a preview: each step's end from `from_ms` to `to_ms`, with what was found. Families
/// with buckets are read once for the whole span; top-K reports and events (which have none) once a step.
pub fn preview(
    engine: &dyn StatsEngine,
    customer: (CustomerId, &str),
    condition: &Condition,
    target: &Target,
    (from_ms, to_ms): (i64, i64),
    now_ms: i64,
) -> Result<Vec<(i64, Finding)>, String> {
    let Some(watch) = condition.watch() else { return Ok(Vec::new()) };
    let step = target.step_ms();
    let ends: Vec<i64> = (0..).map(|i| from_ms + i * step).take_while(|t| *t <= to_ms).collect();
    if target.granularity.is_none() {
        return Ok(ends
            .into_iter()
            .map(|end| (end, measure(engine, customer, condition, target, end, now_ms)))
            .collect());
    }
    let span = (from_ms - lookback_ms(condition, target), to_ms);
    let data = read(engine, customer, target, watch, span, now_ms)?;
    Ok(ends.into_iter().map(|end| (end, decide(condition, target, &data, end))).collect())
}

/// The comparison drawn with a preview: the threshold, or an anomaly's z-score bound.
pub fn drawn_threshold(condition: &Condition) -> Option<f64> {
    match condition {
        Condition::Threshold { value, .. } => Some(*value),
        Condition::Anomaly { z_score, direction: Direction::Down, .. } => Some(-z_score),
        Condition::Anomaly { z_score, .. } => Some(*z_score),
        Condition::Audit { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_history_needs_more_than_a_jitter_to_be_an_anomaly() {
        let (z, mean, _) = z_of(105.0, &[100.0, 100.0, 100.0]);
        assert_eq!(mean, 100.0);
        assert!((z - 0.5).abs() < 1e-9, "{z}");
        let (z, _, sd) = z_of(200.0, &[90.0, 100.0, 110.0]);
        assert!(sd > 8.0 && z > 9.0, "{z} {sd}");
    }

    #[test]
    fn window_sums_take_the_buckets_in_the_window() {
        let mut s = Series::new();
        s.insert(vec![], BTreeMap::from([(0, 1.0), (300_000, 2.0), (600_000, 4.0)]));
        assert_eq!(window_sums(&s, 300_000, 900_000)[&Vec::<String>::new()], 6.0);
    }
}
