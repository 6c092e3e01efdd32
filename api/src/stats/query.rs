//! Statistics queries: the parameters as sent, their filters and sortby read, and every rule of a valid
//! query checked at once.

use serde::{Deserialize, Serialize};

use super::{
    names::{Dimension, Metric},
    time::{format_time, parse_time},
    vocabulary::{
        DELIVERY_MAX_LIMIT, Family, Granularity, INTEGER_DIMENSIONS, SECURITY_DEFAULT_LIMIT, TOPK_DEFAULT_LIMIT,
        TOPK_MAX_LIMIT, TOPK_URL_PER_DAY,
    },
};

/// One filter condition: `dimension==value` or `dimension!=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub dimension: String,
    pub equal: bool,
    pub value: String,
}

/// Filters: all conditions joined by `;` (AND) or all by `,` (OR).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Filter {
    #[default]
    None,
    All(Vec<Condition>),
    Any(Vec<Condition>),
}

impl Filter {
    pub fn conditions(&self) -> &[Condition] {
        match self {
            Filter::None => &[],
            Filter::All(c) | Filter::Any(c) => c,
        }
    }
}

/// Parses `filters`: conditions joined by `,` (OR) or `;` (AND), never both; a backslash makes the next
/// character literal (`\,` `\;` `\\`). `dimensions` are the names that may be filtered on.
pub fn parse_filters(s: &str, dimensions: &[&str]) -> Result<Filter, String> {
    if s.trim().is_empty() {
        return Ok(Filter::None);
    }
    let mut parts = vec![String::new()];
    let mut separator = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next) => parts.last_mut().unwrap_or(&mut String::new()).push(next),
                None => return Err("filters end with a lone backslash".into()),
            },
            ',' | ';' => {
                if separator.is_some_and(|sep| sep != c) {
                    return Err("filters combine with , (OR) or ; (AND), not both in one expression".into());
                }
                separator = Some(c);
                parts.push(String::new());
            }
            _ => parts.last_mut().unwrap_or(&mut String::new()).push(c),
        }
    }
    let conditions = parts
        .iter()
        .map(|p| {
            let (at, equal) = match (p.find("=="), p.find("!=")) {
                (Some(a), Some(b)) if b < a => (b, false),
                (Some(a), _) => (a, true),
                (None, Some(b)) => (b, false),
                (None, None) => return Err(format!("{p:?} is not dimension==value or dimension!=value")),
            };
            let dimension = p[..at].trim().to_string();
            if !dimensions.contains(&dimension.as_str()) {
                return Err(format!("cannot filter on {dimension:?}: filters take one of {}", dimensions.join(", ")));
            }
            Ok(Condition { dimension, equal, value: p[at + 2..].to_string() })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match separator {
        Some(';') => Filter::All(conditions),
        _ => Filter::Any(conditions),
    })
}

/// One sort key: a dimension or metric, descending with a leading `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub field: String,
    pub descending: bool,
}

/// Parses `sortby` against the fields of the query.
pub fn parse_sortby(s: &str, fields: &[&str]) -> Result<Vec<SortKey>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| {
            let (descending, field) = match f.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, f.strip_prefix('+').unwrap_or(f)),
            };
            if fields.contains(&field) {
                Ok(SortKey { field: field.to_string(), descending })
            } else {
                Err(format!(
                    "cannot sort by {field:?}: sortby takes the query's dimensions and metrics ({})",
                    fields.join(", ")
                ))
            }
        })
        .collect()
}

/// The query parameters as sent (all text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub struct RawQuery {
    /// Start, UTC without a time-zone designator: `2026-11-22T10:00:00`.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub starttime: Option<String>,
    /// The same as starttime (the misspelling of some request templates); not both.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub startime: Option<String>,
    /// End (exclusive), UTC without a time-zone designator.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub endtime: Option<String>,
    /// Comma-separated dimensions forming a grouping set with the granularity.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub dimensions: Option<String>,
    /// Comma-separated metrics.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub metrics: Option<String>,
    /// `day`, `hour` or `5minute`.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub granularity: Option<String>,
    /// `dim==v,dim!=w` (OR) or `dim==v;dim!=w` (AND); `\` escapes `,` `;` `\`.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub filters: Option<String>,
    /// Comma-separated dimensions and metrics, `-` for descending.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub sortby: Option<String>,
    /// Zero-based index of the first row.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub start: Option<String>,
    /// Rows to return.
    #[cfg_attr(feature = "openapi", param(max_length = 2048))]
    pub limit: Option<String>,
}

/// A validated query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub family: Family,
    pub start_ms: i64,
    pub end_ms: i64,
    pub dimensions: Vec<String>,
    pub metrics: Vec<String>,
    pub granularity: Option<Granularity>,
    pub filter: Filter,
    pub sortby: Vec<SortKey>,
    pub start: u64,
    pub limit: u64,
    /// The filters and sortby as sent, for the echo.
    pub filters_text: Option<String>,
}

fn list(s: &Option<String>) -> Vec<String> {
    s.as_deref().unwrap_or("").split(',').map(str::trim).filter(|x| !x.is_empty()).map(String::from).collect()
}

/// Validates a query of `family` at time `now_ms`; every problem, in words.
pub fn validate(family: Family, raw: &RawQuery, now_ms: i64) -> Result<Query, Vec<String>> {
    let mut problems = Vec::new();
    let start_text = match (&raw.starttime, &raw.startime) {
        (Some(_), Some(_)) => {
            problems.push("give starttime or startime, not both".to_string());
            None
        }
        (Some(s), None) | (None, Some(s)) => Some(s),
        (None, None) => {
            problems.push("starttime is required".to_string());
            None
        }
    };
    let time = |name: &str, t: Option<&String>, problems: &mut Vec<String>| match t.map(|t| parse_time(t)) {
        Some(Ok(ms)) => Some(ms),
        Some(Err(e)) => {
            problems.push(format!("{name}: {e}"));
            None
        }
        None => {
            if name == "endtime" {
                problems.push("endtime is required".into());
            }
            None
        }
    };
    let start_ms = time("starttime", start_text, &mut problems);
    let end_ms = time("endtime", raw.endtime.as_ref(), &mut problems);
    if let (Some(s), Some(e)) = (start_ms, end_ms)
        && s >= e
    {
        problems.push("starttime must be earlier than endtime".into());
    }

    let all_dims = family.dimensions();
    let mut dimensions = list(&raw.dimensions);
    for d in &dimensions {
        if !all_dims.contains(&d.as_str()) {
            problems.push(format!("unknown dimension {d:?}; this family has {}", all_dims.join(", ")));
        }
    }
    let mut seen = std::collections::HashSet::new();
    if dimensions.iter().any(|d| !seen.insert(d.clone())) {
        problems.push("a dimension is listed twice".into());
    }
    let all_metrics = family.metrics();
    let mut metrics = list(&raw.metrics);
    for m in &metrics {
        if !all_metrics.contains(&m.as_str()) {
            problems.push(format!("unknown metric {m:?}; this family has {}", all_metrics.join(", ")));
        }
    }

    let granularity = match (family, raw.granularity.as_deref()) {
        (Family::Events | Family::WafTopK(_) | Family::ShapingTopK(_), _) => None,
        (Family::TopKUrl, None) => Some(Granularity::Day),
        (_, Some(g)) => match Granularity::parse(g) {
            Some(g) => Some(g),
            None => {
                problems.push(format!("granularity {g:?} is not day, hour or 5minute"));
                None
            }
        },
        (_, None) => {
            problems.push("granularity is required (day, hour or 5minute)".into());
            None
        }
    };
    if family == Family::TopKUrl && granularity.is_some_and(|g| g != Granularity::Day) {
        problems.push("the top-K URL report has granularity day only".into());
    }

    match family {
        Family::Events => {
            if dimensions.is_empty() {
                problems.push("dimensions is required".into());
            }
            // event_timestamp_ms is always the first column.
            dimensions.retain(|d| d != Dimension::EventTimestampMs.as_str());
            dimensions.insert(0, Dimension::EventTimestampMs.as_str().into());
        }
        Family::WafTopK(_) | Family::ShapingTopK(_) => {
            if dimensions.is_empty() {
                dimensions.push(family.category_dimension().unwrap_or_default().to_string());
            }
            if metrics.is_empty() {
                metrics.push(Metric::Hits.as_str().into());
            }
            if !family.is_grouping_set(None, &dimensions) {
                problems.push(format!(
                    "dimensions {} do not form a grouping set of this category; valid: {}",
                    dimensions.join(","),
                    family.groupings().join("; ")
                ));
            }
        }
        _ => {
            if metrics.is_empty() {
                problems.push("metrics is required (at least one)".into());
            }
            if granularity.is_some() && problems.is_empty() && !family.is_grouping_set(granularity, &dimensions) {
                problems.push(format!(
                    "dimensions [{}] with granularity {} are not a listed grouping set (see the groupings method)",
                    dimensions.join(","),
                    granularity.map(|g| g.as_str()).unwrap_or_default()
                ));
            }
        }
    }
    if family == Family::TopKUrl && metrics.iter().any(|m| m != Metric::Hits.as_str()) {
        problems.push("the top-K URL report has the metric hits only".into());
    }

    let filter = match parse_filters(raw.filters.as_deref().unwrap_or(""), &all_dims) {
        Ok(f) => f,
        Err(e) => {
            problems.push(format!("filters: {e}"));
            Filter::None
        }
    };
    for c in filter.conditions() {
        if INTEGER_DIMENSIONS.contains(&c.dimension.as_str()) && c.value.trim().parse::<i64>().is_err() {
            problems.push(format!("filters: {} takes an integer, not {:?}", c.dimension, c.value));
        }
    }
    let mut fields: Vec<&str> = dimensions.iter().chain(metrics.iter()).map(String::as_str).collect();
    if granularity.is_some() {
        fields.extend(["starttime", "endtime"]);
    }
    let sortby = match family {
        Family::TopKUrl | Family::WafTopK(_) | Family::ShapingTopK(_) => {
            vec![SortKey { field: Metric::Hits.as_str().into(), descending: true }]
        }
        _ => parse_sortby(raw.sortby.as_deref().unwrap_or(""), &fields).unwrap_or_else(|e| {
            problems.push(format!("sortby: {e}"));
            Vec::new()
        }),
    };
    let number = |name: &str, v: &Option<String>, problems: &mut Vec<String>| -> Option<u64> {
        let v = v.as_deref()?.trim();
        match v.parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                problems.push(format!("{name}: {v:?} is not a non-negative integer"));
                None
            }
        }
    };
    let start = number("start", &raw.start, &mut problems).unwrap_or(0);
    let limit = number("limit", &raw.limit, &mut problems);
    let limit = match family {
        Family::Delivery => limit.unwrap_or(DELIVERY_MAX_LIMIT).min(DELIVERY_MAX_LIMIT),
        Family::TopKUrl => TOPK_URL_PER_DAY,
        Family::WafTopK(_) | Family::ShapingTopK(_) => limit.unwrap_or(TOPK_DEFAULT_LIMIT).min(TOPK_MAX_LIMIT),
        _ => limit.unwrap_or(SECURITY_DEFAULT_LIMIT),
    };

    // Rollups are kept for their retention: a span reaching further back would be answered with rows missing,
    // so it is refused, saying from when the granularity is kept and what to use instead.
    if let (Some(g), Some(start)) = (granularity, start_ms)
        && let Some(from) = g.kept_from(now_ms).map(|ms| ms.saturating_add(999).div_euclid(1000).saturating_mul(1000))
        && start < from
    {
        let (kept, instead) = match g {
            Granularity::FiveMinute => ("5-minute data is kept for one week", "hour or day"),
            _ => ("hourly data is kept for 31 days", "day"),
        };
        problems.push(format!(
            "{kept}: with granularity {} starttime must be {} or later; use {instead} for older spans",
            g.as_str(),
            format_time(from)
        ));
    }

    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Query {
        family,
        start_ms: start_ms.unwrap_or_default(),
        end_ms: end_ms.unwrap_or_default(),
        dimensions,
        metrics,
        granularity,
        filter,
        sortby,
        start,
        limit,
        filters_text: raw.filters.clone().filter(|f| !f.trim().is_empty()),
    })
}
