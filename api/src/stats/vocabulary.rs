//! The statistics vocabulary: families, dimensions, metrics, grouping sets, granularities and top-K
//! categories, as data both sides read (the validator, the `/dimensions` `/groupings` `/metrics` answers, the
//! engines and the console's pickers).

use serde::{Deserialize, Serialize};

use super::names::{Dimension, Metric};

/// The names of `dimensions`, for the tables below.
macro_rules! dimensions {
    ($($d:ident),* $(,)?) => {
        [$(Dimension::$d.as_str()),*]
    };
}

pub const DELIVERY_DIMENSIONS: [&str; 14] = dimensions!(
    BrowserName,
    CacheStatus,
    ContentType,
    Country,
    CountryCode,
    Customer,
    DeviceOs,
    DeviceType,
    Domain,
    GnaCacheStatus,
    HttpStatusCode,
    Property,
    RequestType,
    Scheme,
);

pub const DELIVERY_METRICS: [&str; 8] = {
    use Metric::*;
    [
        FirstMileBandwidthBytes.as_str(),
        Hits.as_str(),
        LastMileBandwidthBytes.as_str(),
        MiddleMileBandwidthBytes.as_str(),
        OriginalBandwidthBytes.as_str(),
        RequestTimeMs.as_str(),
        TimeToFirstByteMs.as_str(),
        TimeToLastByteMs.as_str(),
    ]
};

/// Dimensions whose values are integers (enumerations and status codes).
pub const INTEGER_DIMENSIONS: [&str; 5] = dimensions!(CacheStatus, GnaCacheStatus, Scheme, HttpStatusCode, ClientAsn);

impl Dimension {
    /// Whether its values are integers (enumerations and status codes): filtered as numbers, typed `long`.
    pub fn is_integer(self) -> bool {
        INTEGER_DIMENSIONS.contains(&self.as_str())
    }
}

pub const TOPK_URL_DIMENSIONS: [&str; 6] =
    dimensions!(ContentType, RequestType, HttpStatusCode, Property, RequestUrl, Customer);

/// Top-K URL grouping sets (after `day/`).
pub const TOPK_URL_GROUPINGS: [&str; 3] = [
    "customer/property/request_type/http_status_code/request_url",
    "customer/property/content_type/request_url",
    "customer/property/request_url",
];

/// Top 20 URLs per day.
pub const TOPK_URL_PER_DAY: u64 = 20;

pub const EVENT_DIMENSIONS: [&str; 16] = dimensions!(
    EventTimestampMs,
    EventSeverity,
    EventType,
    EventAction,
    Domain,
    Property,
    Customer,
    ClientConnectionRemoteIp,
    ClientIp,
    ClientBrowser,
    ClientCountryCode,
    ClientAsn,
    RuleId,
    RequestPath,
    WafAction,
    Source,
);

pub const WAF_TREND_DIMENSIONS: [&str; 6] =
    dimensions!(WafAction, ClientCountryCode, Domain, Property, RuleId, EventSeverity);
pub const SHAPING_TREND_DIMENSIONS: [&str; 5] = dimensions!(EventAction, ClientCountryCode, Domain, Property, RuleId);
pub const REQUEST_TREND_DIMENSIONS: [&str; 4] = dimensions!(WafAction, ClientCountryCode, Domain, Property);

/// WAF top-K categories and the dimension each ranks.
pub const WAF_CATEGORIES: [(&str, &str); 6] = [
    ("browser", Dimension::ClientBrowser.as_str()),
    ("clientip", Dimension::ClientIp.as_str()),
    ("country", Dimension::ClientCountryCode.as_str()),
    ("requestpath", Dimension::RequestPath.as_str()),
    ("ruleid", Dimension::RuleId.as_str()),
    ("severity", Dimension::EventSeverity.as_str()),
];

/// Traffic-shaping top-K categories and the dimension each ranks (the rate-limit ones: of rate-limited events).
pub const SHAPING_CATEGORIES: [(&str, &str); 6] = [
    ("browser", Dimension::ClientBrowser.as_str()),
    ("clientip", Dimension::ClientIp.as_str()),
    ("country", Dimension::ClientCountryCode.as_str()),
    ("ratelimitclientip", Dimension::ClientIp.as_str()),
    ("ratelimitcountry", Dimension::ClientCountryCode.as_str()),
    ("requestpath", Dimension::RequestPath.as_str()),
];

/// Dimensions a security top-K query may filter on, besides its category's.
pub const TOPK_FILTER_DIMENSIONS: [&str; 3] = dimensions!(Domain, Property, Customer);
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
            _ => vec![Metric::Hits.as_str()],
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
                        sets.extend(
                            dims.iter()
                                .filter(|d| **d != Dimension::Domain.as_str())
                                .map(|d| format!("{g}/domain/{d}")),
                        );
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
