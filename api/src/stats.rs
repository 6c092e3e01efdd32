//! The statistics vocabulary — families, dimensions, metrics, grouping sets, top-K categories — and the
//! parsing and validation of statistics queries: times, filters, sortby, paging. Used by the server's engine
//! and handlers and by the console's pickers, so both sides agree on what a valid query is.

use serde::{Deserialize, Serialize};

pub const DELIVERY_DIMENSIONS: [&str; 14] = [
    "browser_name",
    "cache_status",
    "content_type",
    "country",
    "country_code",
    "customer",
    "device_os",
    "device_type",
    "domain",
    "gna_cache_status",
    "http_status_code",
    "property",
    "request_type",
    "scheme",
];

pub const DELIVERY_METRICS: [&str; 8] = [
    "first_mile_bandwidth_bytes",
    "hits",
    "last_mile_bandwidth_bytes",
    "middle_mile_bandwidth_bytes",
    "original_bandwidth_bytes",
    "request_time_ms",
    "time_to_first_byte_ms",
    "time_to_last_byte_ms",
];

/// Dimensions whose values are integers (enumerations and status codes).
pub const INTEGER_DIMENSIONS: [&str; 5] =
    ["cache_status", "gna_cache_status", "scheme", "http_status_code", "client_asn"];

pub const TOPK_URL_DIMENSIONS: [&str; 6] =
    ["content_type", "request_type", "http_status_code", "property", "request_url", "customer"];

/// Top-K URL grouping sets (after `day/`).
pub const TOPK_URL_GROUPINGS: [&str; 3] = [
    "customer/property/request_type/http_status_code/request_url",
    "customer/property/content_type/request_url",
    "customer/property/request_url",
];

/// Top 20 URLs per day.
pub const TOPK_URL_PER_DAY: u64 = 20;

pub const EVENT_DIMENSIONS: [&str; 16] = [
    "event_timestamp_ms",
    "event_severity",
    "event_type",
    "event_action",
    "domain",
    "property",
    "customer",
    "client_connection_remote_ip",
    "client_ip",
    "client_browser",
    "client_country_code",
    "client_asn",
    "rule_id",
    "request_path",
    "waf_action",
    "source",
];

pub const WAF_TREND_DIMENSIONS: [&str; 6] =
    ["waf_action", "client_country_code", "domain", "property", "rule_id", "event_severity"];
pub const SHAPING_TREND_DIMENSIONS: [&str; 5] =
    ["event_action", "client_country_code", "domain", "property", "rule_id"];
pub const REQUEST_TREND_DIMENSIONS: [&str; 4] = ["waf_action", "client_country_code", "domain", "property"];

/// WAF top-K categories and the dimension each ranks.
pub const WAF_CATEGORIES: [(&str, &str); 6] = [
    ("browser", "client_browser"),
    ("clientip", "client_ip"),
    ("country", "client_country_code"),
    ("requestpath", "request_path"),
    ("ruleid", "rule_id"),
    ("severity", "event_severity"),
];

/// Traffic-shaping top-K categories and the dimension each ranks (the rate-limit ones: of rate-limited events).
pub const SHAPING_CATEGORIES: [(&str, &str); 6] = [
    ("browser", "client_browser"),
    ("clientip", "client_ip"),
    ("country", "client_country_code"),
    ("ratelimitclientip", "client_ip"),
    ("ratelimitcountry", "client_country_code"),
    ("requestpath", "request_path"),
];

/// Dimensions a security top-K query may filter on, besides its category's.
pub const TOPK_FILTER_DIMENSIONS: [&str; 3] = ["domain", "property", "customer"];
pub const TOPK_DEFAULT_LIMIT: u64 = 20;
pub const TOPK_MAX_LIMIT: u64 = 1000;
pub const DELIVERY_MAX_LIMIT: u64 = 2500;
pub const SECURITY_DEFAULT_LIMIT: u64 = 10;

/// Grouping sets after `5minute/` (the granularity alone is valid too).
pub const GROUPINGS_FIVE_MINUTE: [&str; 33] = [
    "browser_name",
    "cache_status",
    "content_type",
    "content_type/cache_status/property",
    "content_type/property",
    "country",
    "country/browser_name",
    "country/browser_name/device_type/property",
    "country/browser_name/property",
    "country/cache_status",
    "country/cache_status/property",
    "country/content_type/property",
    "country/device_type/property",
    "country/property",
    "country/scheme/property",
    "device_type/property",
    "domain",
    "domain/content_type",
    "domain/content_type/cache_status",
    "domain/country",
    "domain/country/content_type",
    "domain/country/device_type",
    "domain/country/scheme",
    "domain/device_type",
    "domain/http_status_code",
    "domain/http_status_code/country",
    "domain/scheme",
    "gna_cache_status",
    "http_status_code",
    "http_status_code/country/property",
    "http_status_code/property",
    "property",
    "scheme/property",
];

/// Grouping sets after `hour/` (the granularity alone is valid too).
pub const GROUPINGS_HOUR: [&str; 34] = [
    "browser_name",
    "cache_status",
    "content_type/cache_status/property",
    "content_type/property",
    "country/browser_name",
    "country/browser_name/device_type/property",
    "country/browser_name/property",
    "country/cache_status",
    "country/cache_status/property",
    "country/content_type",
    "country/content_type/property",
    "country/device_type/property",
    "country/property",
    "country/scheme/property",
    "device_os/device_type",
    "device_os/property",
    "device_type/property",
    "domain",
    "domain/content_type",
    "domain/content_type/cache_status",
    "domain/country",
    "domain/country/content_type",
    "domain/country/device_type",
    "domain/country/scheme",
    "domain/device_type",
    "domain/http_status_code",
    "domain/http_status_code/country",
    "domain/scheme",
    "http_status_code",
    "http_status_code/country/property",
    "http_status_code/property",
    "property",
    "scheme",
    "scheme/property",
];

/// Grouping sets after `day/` (the granularity alone is valid too).
pub const GROUPINGS_DAY: [&str; 48] = [
    "browser_name/property",
    "cache_status/property",
    "content_type",
    "content_type/cache_status/property",
    "content_type/property",
    "country",
    "country/browser_name",
    "country/browser_name/device_type/property",
    "country/browser_name/property",
    "country/cache_status",
    "country/cache_status/property",
    "country/content_type/property",
    "country/device_os/browser_name",
    "country/device_os/browser_name/device_type/property",
    "country/device_os/browser_name/property",
    "country/device_type/property",
    "country/property",
    "country/scheme/property",
    "device_os/browser_name/device_type/property",
    "device_os/browser_name/property",
    "device_type/property",
    "domain",
    "domain/browser_name",
    "domain/cache_status",
    "domain/content_type",
    "domain/content_type/cache_status",
    "domain/country",
    "domain/country/browser_name",
    "domain/country/cache_status",
    "domain/country/content_type",
    "domain/country/device_os/browser_name",
    "domain/country/device_os/browser_name/device_type",
    "domain/country/device_type",
    "domain/country/scheme",
    "domain/device_os/browser_name",
    "domain/device_os/browser_name/device_type",
    "domain/device_type",
    "domain/gna_cache_status",
    "domain/http_status_code",
    "domain/http_status_code/country",
    "domain/scheme",
    "gna_cache_status",
    "http_status_code/country/property",
    "http_status_code/property",
    "property",
    "request_type/country/browser_name/content_type",
    "request_type/country_code/browser_name/content_type",
    "scheme/property",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Granularity {
    #[serde(rename = "5minute")]
    FiveMinute,
    #[serde(rename = "hour")]
    Hour,
    #[serde(rename = "day")]
    Day,
}

impl Granularity {
    pub const ALL: [Granularity; 3] = [Granularity::FiveMinute, Granularity::Hour, Granularity::Day];

    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::FiveMinute => "5minute",
            Granularity::Hour => "hour",
            Granularity::Day => "day",
        }
    }

    pub fn parse(s: &str) -> Option<Granularity> {
        Granularity::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// Length of a bucket in milliseconds.
    pub fn millis(self) -> i64 {
        match self {
            Granularity::FiveMinute => 5 * 60_000,
            Granularity::Hour => 3_600_000,
            Granularity::Day => 86_400_000,
        }
    }

    /// How long rollups of this granularity are kept: 5-minute a week, hourly a month, daily for ever.
    pub fn retention_ms(self) -> Option<i64> {
        match self {
            Granularity::FiveMinute => Some(7 * 86_400_000),
            Granularity::Hour => Some(31 * 86_400_000),
            Granularity::Day => None,
        }
    }

    /// The earliest bucket start a query of this granularity may ask for at `now_ms` (None: no limit): the
    /// retention, plus one bucket of slack for a client clock a little behind the server's. Engines drop only
    /// buckets before it, so a query starting at or after it reads every bucket of its span.
    pub fn kept_from(self, now_ms: i64) -> Option<i64> {
        self.retention_ms().map(|r| now_ms.saturating_sub(r).saturating_sub(self.millis()))
    }

    /// The listed grouping sets after the granularity.
    pub fn delivery_groupings(self) -> &'static [&'static str] {
        match self {
            Granularity::FiveMinute => &GROUPINGS_FIVE_MINUTE,
            Granularity::Hour => &GROUPINGS_HOUR,
            Granularity::Day => &GROUPINGS_DAY,
        }
    }
}

/// A statistics family: what a query asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Delivery,
    TopKUrl,
    Events,
    WafTrends,
    WafTopK(&'static str),
    RequestTrends,
    ShapingTrends,
    ShapingTopK(&'static str),
}

impl Family {
    /// The family of a WAF or traffic-shaping top-K category, if the category exists.
    pub fn topk(waf: bool, category: &str) -> Option<Family> {
        let table = if waf { &WAF_CATEGORIES } else { &SHAPING_CATEGORIES };
        let (c, _) = table.iter().find(|(c, _)| *c == category)?;
        Some(if waf { Family::WafTopK(c) } else { Family::ShapingTopK(c) })
    }

    pub fn dimensions(self) -> Vec<&'static str> {
        match self {
            Family::Delivery => DELIVERY_DIMENSIONS.to_vec(),
            Family::TopKUrl => TOPK_URL_DIMENSIONS.to_vec(),
            Family::Events => EVENT_DIMENSIONS.to_vec(),
            Family::WafTrends => WAF_TREND_DIMENSIONS.to_vec(),
            Family::RequestTrends => REQUEST_TREND_DIMENSIONS.to_vec(),
            Family::ShapingTrends => SHAPING_TREND_DIMENSIONS.to_vec(),
            Family::WafTopK(_) | Family::ShapingTopK(_) => {
                let c = self.category_dimension().unwrap_or_default();
                std::iter::once(c).chain(TOPK_FILTER_DIMENSIONS.iter().copied().filter(|x| *x != c)).collect()
            }
        }
    }

    pub fn metrics(self) -> Vec<&'static str> {
        match self {
            Family::Delivery => DELIVERY_METRICS.to_vec(),
            Family::Events => Vec::new(),
            _ => vec!["hits"],
        }
    }

    /// The dimension a top-K category ranks.
    pub fn category_dimension(self) -> Option<&'static str> {
        let (table, category) = match self {
            Family::WafTopK(c) => (&WAF_CATEGORIES, c),
            Family::ShapingTopK(c) => (&SHAPING_CATEGORIES, c),
            _ => return None,
        };
        table.iter().find(|(c, _)| *c == category).map(|(_, d)| *d)
    }

    /// The listed grouping sets, `<granularity>/<dim>/...`.
    pub fn groupings(self) -> Vec<String> {
        match self {
            Family::Delivery => Granularity::ALL
                .iter()
                .flat_map(|g| {
                    std::iter::once(g.as_str().to_string())
                        .chain(g.delivery_groupings().iter().map(move |set| format!("{}/{set}", g.as_str())))
                })
                .collect(),
            Family::TopKUrl => TOPK_URL_GROUPINGS.iter().map(|s| format!("day/{s}")).collect(),
            Family::WafTrends | Family::RequestTrends | Family::ShapingTrends => {
                let dims = self.dimensions();
                Granularity::ALL
                    .iter()
                    .flat_map(|g| {
                        let g = g.as_str();
                        let mut sets = vec![g.to_string()];
                        sets.extend(dims.iter().map(|d| format!("{g}/{d}")));
                        sets.extend(dims.iter().filter(|d| **d != "domain").map(|d| format!("{g}/domain/{d}")));
                        sets
                    })
                    .collect()
            }
            Family::WafTopK(_) | Family::ShapingTopK(_) => {
                let c = self.category_dimension().unwrap_or_default();
                let mut sets = vec![c.to_string()];
                sets.extend(TOPK_FILTER_DIMENSIONS.iter().filter(|d| **d != c).map(|d| format!("{c}/{d}")));
                sets
            }
            Family::Events => Vec::new(),
        }
    }

    /// Whether `dims` (any order) with `granularity` form a listed grouping set.
    pub fn is_grouping_set(self, granularity: Option<Granularity>, dims: &[String]) -> bool {
        let mut want: Vec<&str> = dims.iter().map(String::as_str).collect();
        want.sort_unstable();
        let prefix = granularity.map(|g| g.as_str());
        self.groupings().iter().any(|set| {
            let mut parts: Vec<&str> = set.split('/').collect();
            if let Some(p) = prefix {
                if parts.first() != Some(&p) {
                    return false;
                }
                parts.remove(0);
            }
            parts.sort_unstable();
            parts == want
        })
    }
}

/// Parses a statistics time: `YYYY-MM-DDTHH:MM:SS` (optionally with fractional seconds), UTC, without a
/// time-zone designator. Milliseconds since the epoch.
pub fn parse_time(s: &str) -> Result<i64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("is empty".into());
    }
    if t.ends_with('Z') || t.ends_with('z') || t.get(19..).is_some_and(|rest| rest.contains(['+', '-'])) {
        return Err(format!(
            "{t:?} has a time-zone designator; times are UTC and written without one, e.g. 2026-11-22T10:00:00"
        ));
    }
    let bad = || format!("{t:?} is not a time like 2026-11-22T10:00:00");
    let b = t.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| t.get(r).and_then(|x| x.parse::<i64>().ok()).ok_or_else(bad);
    let (y, mo, d, h, mi, se) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    let mut millis = 0;
    if b.len() > 19 {
        let frac = t
            .get(20..)
            .filter(|f| b[19] == b'.' && !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()))
            .ok_or_else(bad)?;
        millis = format!("{frac:0<3}")[..3].parse::<i64>().map_err(|_| bad())?;
    }
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 59 {
        return Err(bad());
    }
    Ok((days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se) * 1000 + millis)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS`.
pub fn format_time(ms: i64) -> String {
    let mut out = String::with_capacity(19);
    write_time(&mut out, ms);
    out
}

/// Appends [`format_time`] of `ms` to `out`. Statistics answers write two times a row, so this avoids the
/// formatting machinery for the years 0 to 9999.
pub fn write_time(out: &mut String, ms: i64) {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, se) = (rem / 3600, rem % 3600 / 60, rem % 60);
    if !(0..=9999).contains(&y) {
        use std::fmt::Write as _;
        let _ = write!(out, "{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{se:02}");
        return;
    }
    let mut b = *b"0000-00-00T00:00:00";
    let digit = |v: i64| b'0' + (v % 10) as u8;
    (b[0], b[1], b[2], b[3]) = (digit(y / 1000), digit(y / 100), digit(y / 10), digit(y));
    for (at, v) in [(5, m), (8, d), (11, h), (14, mi), (17, se)] {
        (b[at], b[at + 1]) = (digit(v / 10), digit(v));
    }
    out.push_str(std::str::from_utf8(&b).unwrap_or_default());
}

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
            dimensions.retain(|d| d != "event_timestamp_ms");
            dimensions.insert(0, "event_timestamp_ms".into());
        }
        Family::WafTopK(_) | Family::ShapingTopK(_) => {
            if dimensions.is_empty() {
                dimensions.push(family.category_dimension().unwrap_or_default().to_string());
            }
            if metrics.is_empty() {
                metrics.push("hits".into());
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
    if family == Family::TopKUrl && metrics.iter().any(|m| m != "hits") {
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
            vec![SortKey { field: "hits".into(), descending: true }]
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

/// The echo of the effective query in a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueryEcho {
    pub starttime: String,
    pub endtime: String,
    pub start: u64,
    pub limit: u64,
    pub dimensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granularity: Option<String>,
    pub sortby: Option<Vec<String>>,
    pub filters: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatsColumn {
    pub name: String,
    /// `string` or `long` (delivery statistics only).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub column_type: Option<String>,
}

/// A statistics answer: the echo, columns, rows in column order, the total, and for delivery statistics the
/// addresses of this, the next and the previous slice (blank when none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatsResponse {
    pub query: QueryEcho,
    pub columns: Vec<StatsColumn>,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schema::stats_rows))]
    pub rows: Vec<Vec<serde_json::Value>>,
    pub total_results: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_uri: Option<String>,
}

/// `{"dimensions": [...]}`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DimensionList {
    pub dimensions: Vec<String>,
}

/// `{"groupings": [...]}`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupingList {
    pub groupings: Vec<String>,
}

/// `{"metrics": [...]}`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetricList {
    pub metrics: Vec<String>,
}

/// An ingestion answer lists at most this many rejected lines; the rest are counted in `rejected_more`.
pub const MAX_REJECTED: usize = 100;

/// The value a text dimension's values are stored as once the customer holds as many distinct values of that
/// dimension as the server allows (integer dimensions: 0). Queries see it as any other value; a record that
/// sends it as is counts with the folded ones.
pub const OTHER_VALUE: &str = "(other)";

/// Answer of an ingestion call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IngestResult {
    /// Records stored.
    pub accepted: u64,
    /// The first 100 rejected lines (in line order), each with its number and why.
    pub rejected: Vec<RejectedLine>,
    /// How many more lines were rejected than `rejected` lists (0 when it lists them all), so an answer stays
    /// small whatever the body held.
    #[serde(default)]
    pub rejected_more: u64,
    /// The dimensions whose new values were stored as `(other)` (0 for integer dimensions) because the
    /// customer already holds as many distinct values of them as the server allows; the records are stored,
    /// counted under that value. Left out when nothing was folded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folded: Vec<FoldedDimension>,
}

/// Records of an ingestion call whose value of a dimension was folded into `(other)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FoldedDimension {
    pub dimension: String,
    /// Records of the call whose value was folded.
    pub records: u64,
    /// Distinct values of the dimension a customer may hold.
    pub limit: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RejectedLine {
    /// 1-based line number.
    pub line: u64,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_without_designator() {
        assert_eq!(parse_time("1970-01-01T00:00:00"), Ok(0));
        assert_eq!(parse_time("2026-01-01T00:00:00"), Ok(1_767_225_600_000));
        assert_eq!(parse_time("2026-01-01T00:00:00.25"), Ok(1_767_225_600_250));
        assert_eq!(format_time(1_767_225_600_000), "2026-01-01T00:00:00");
        assert_eq!(format_time(951_782_400_000), "2000-02-29T00:00:00");
        for bad in ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00+01:00", "2026-01-01T00:00:00-0500"] {
            assert!(parse_time(bad).unwrap_err().contains("time-zone designator"), "{bad}");
        }
        for bad in [
            "",
            "2026-01-01",
            "2026-02-30T00:00:00",
            "2026-01-01 00:00:00",
            "2026-13-01T00:00:00",
            "2026-01-01T24:00:00",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        for ms in [0, 1_767_225_600_000, 4_102_444_799_000] {
            assert_eq!(parse_time(&format_time(ms)), Ok(ms));
        }
    }

    #[test]
    fn filters_are_all_and_or_all_or_with_escapes() {
        let dims = ["domain", "country", "http_status_code"];
        assert_eq!(parse_filters("", &dims), Ok(Filter::None));
        assert_eq!(
            parse_filters("domain==a.com;country!=DE", &dims),
            Ok(Filter::All(vec![
                Condition { dimension: "domain".into(), equal: true, value: "a.com".into() },
                Condition { dimension: "country".into(), equal: false, value: "DE".into() },
            ]))
        );
        assert_eq!(
            parse_filters(r"domain==a\,b,domain==c\;d\\", &dims),
            Ok(Filter::Any(vec![
                Condition { dimension: "domain".into(), equal: true, value: "a,b".into() },
                Condition { dimension: "domain".into(), equal: true, value: r"c;d\".into() },
            ]))
        );
        assert_eq!(
            parse_filters("domain==x=y", &dims),
            Ok(Filter::Any(vec![Condition { dimension: "domain".into(), equal: true, value: "x=y".into() }]))
        );
        assert!(parse_filters("domain==a,country==b;country==c", &dims).unwrap_err().contains("not both"));
        assert!(parse_filters("hits==5", &dims).unwrap_err().contains("cannot filter on \"hits\""));
        assert!(parse_filters("domain=a", &dims).is_err());
        assert!(parse_filters("domain==a\\", &dims).is_err());
    }

    #[test]
    fn grouping_sets_accept_any_order_and_nothing_unlisted() {
        let q = |g, dims: &[&str]| {
            Family::Delivery.is_grouping_set(Some(g), &dims.iter().map(|d| d.to_string()).collect::<Vec<_>>())
        };
        assert!(q(Granularity::FiveMinute, &["property", "country"]));
        assert!(q(Granularity::FiveMinute, &[]));
        assert!(!q(Granularity::FiveMinute, &["device_os", "property"]), "hour and day only");
        assert!(q(Granularity::Hour, &["device_os", "property"]));
        assert!(!q(Granularity::Day, &["scheme"]), "only listed for hour");
        assert_eq!(Family::Delivery.groupings().len(), 3 + 33 + 34 + 48);
        assert!(Family::WafTrends.groupings().contains(&"hour/domain/rule_id".to_string()));
        assert!(Family::topk(true, "ratelimitcountry").is_none());
        assert_eq!(
            Family::topk(false, "ratelimitcountry").and_then(Family::category_dimension),
            Some("client_country_code")
        );
    }

    fn raw(pairs: &[(&str, &str)]) -> RawQuery {
        let mut r = RawQuery::default();
        for (k, v) in pairs {
            let v = Some(v.to_string());
            match *k {
                "starttime" => r.starttime = v,
                "startime" => r.startime = v,
                "endtime" => r.endtime = v,
                "dimensions" => r.dimensions = v,
                "metrics" => r.metrics = v,
                "granularity" => r.granularity = v,
                "filters" => r.filters = v,
                "sortby" => r.sortby = v,
                "start" => r.start = v,
                "limit" => r.limit = v,
                _ => panic!("{k}"),
            }
        }
        r
    }

    const NOW: i64 = 1_767_225_600_000;

    #[test]
    fn a_delivery_query_is_validated_with_every_rule() {
        let ok = raw(&[
            ("startime", "2025-12-31T00:00:00"),
            ("endtime", "2026-01-01T00:00:00"),
            ("dimensions", "property,country"),
            ("metrics", "hits,last_mile_bandwidth_bytes"),
            ("granularity", "hour"),
            ("sortby", "-hits,country"),
            ("limit", "9000"),
        ]);
        let q = validate(Family::Delivery, &ok, NOW).unwrap();
        assert_eq!(q.limit, 2500, "a larger limit yields 2500");
        assert_eq!(q.dimensions, ["property", "country"]);
        assert_eq!(q.sortby[0], SortKey { field: "hits".into(), descending: true });

        let problems = |pairs: &[(&str, &str)]| validate(Family::Delivery, &raw(pairs), NOW).unwrap_err();
        let base = [
            ("starttime", "2025-12-31T00:00:00"),
            ("endtime", "2026-01-01T00:00:00"),
            ("metrics", "hits"),
            ("granularity", "hour"),
        ];
        let with = |extra: &[(&str, &str)]| {
            let mut v = base.to_vec();
            for e in extra {
                v.retain(|(k, _)| k != &e.0);
                v.push(*e);
            }
            problems(&v)
        };
        assert!(with(&[("starttime", "2026-01-01T00:00:00Z")])[0].contains("time-zone designator"));
        assert!(with(&[("starttime", "2026-01-02T00:00:00")])[0].contains("earlier than endtime"));
        assert!(with(&[("dimensions", "colour")])[0].contains("unknown dimension"));
        assert!(
            with(&[("dimensions", "device_os,property"), ("granularity", "5minute")])[0]
                .contains("not a listed grouping set")
        );
        assert!(with(&[("metrics", "")])[0].contains("metrics is required"));
        assert!(with(&[("granularity", "week")])[0].contains("granularity"));
        assert!(with(&[("filters", "hits==1")])[0].contains("cannot filter"));
        assert!(with(&[("filters", "http_status_code==ok")])[0].contains("takes an integer"));
        assert!(with(&[("sortby", "-colour")])[0].contains("cannot sort"));
        assert!(with(&[("start", "-1")])[0].contains("start"));
        assert!(with(&[("startime", "2025-12-31T00:00:00")])[0].contains("not both"));
        assert!(
            problems(&[
                ("starttime", "2025-11-01T00:00:00"),
                ("endtime", "2025-11-02T00:00:00"),
                ("metrics", "hits"),
                ("granularity", "5minute")
            ])[0]
                .contains("one week")
        );
        // Retention bounds the span's start, not its end: half a span outside what is kept is refused too,
        // naming the earliest start (retention plus one bucket, rounded up to the second) and the fallback.
        let at = |g: &str, start: &str| {
            validate(
                Family::Delivery,
                &raw(&[
                    ("starttime", start),
                    ("endtime", "2025-12-31T00:00:00"),
                    ("metrics", "hits"),
                    ("granularity", g),
                ]),
                NOW,
            )
        };
        let refused = at("5minute", "2025-12-24T23:54:59").unwrap_err();
        assert_eq!(
            refused,
            ["5-minute data is kept for one week: with granularity 5minute starttime must be 2025-12-24T23:55:00 or \
              later; use hour or day for older spans"]
        );
        assert!(at("5minute", "2025-12-24T23:55:00").is_ok());
        let refused = at("hour", "2025-11-30T22:00:00").unwrap_err();
        assert!(refused[0].contains("hourly data is kept for 31 days"), "{refused:?}");
        assert!(refused[0].contains("2025-11-30T23:00:00 or later; use day"), "{refused:?}");
        assert!(at("hour", "2025-11-30T23:00:00").is_ok());
        assert!(at("day", "2020-01-01T00:00:00").is_ok(), "daily data is kept for ever");
    }

    #[test]
    fn events_always_begin_with_the_timestamp_and_topk_has_its_defaults() {
        let q = validate(
            Family::Events,
            &raw(&[
                ("starttime", "2025-12-31T00:00:00"),
                ("endtime", "2026-01-01T00:00:00"),
                ("dimensions", "client_ip,event_timestamp_ms"),
            ]),
            NOW,
        )
        .unwrap();
        assert_eq!(q.dimensions, ["event_timestamp_ms", "client_ip"]);
        assert_eq!(q.limit, 10);
        let family = Family::topk(true, "country").unwrap();
        let q =
            validate(family, &raw(&[("starttime", "2025-12-31T00:00:00"), ("endtime", "2026-01-01T00:00:00")]), NOW)
                .unwrap();
        assert_eq!(
            (q.dimensions.clone(), q.metrics.clone(), q.limit),
            (vec!["client_country_code".to_string()], vec!["hits".to_string()], 20)
        );
        let q = validate(
            family,
            &raw(&[("starttime", "2025-12-31T00:00:00"), ("endtime", "2026-01-01T00:00:00"), ("limit", "5000")]),
            NOW,
        )
        .unwrap();
        assert_eq!(q.limit, 1000);
    }
}
