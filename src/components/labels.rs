//! The administrator's words for the API's names: metrics, dimensions and the enumerated values the API
//! answers as integers (the spec's tables), status classes derived from HTTP status codes, and bytes in
//! KB/MB/GB/TB. Every view names things through here, so a raw `_bytes`, a bare cache-status code or a
//! column name never reaches the screen.

/// A metric's name: `last_mile_bandwidth_bytes` → "Bandwidth to users".
pub fn metric_name(metric: &str) -> String {
    let known = match metric {
        "hits" => "Requests",
        "last_mile_bandwidth_bytes" => "Bandwidth to users",
        "middle_mile_bandwidth_bytes" => "Bandwidth between edge servers",
        "first_mile_bandwidth_bytes" => "Bandwidth from origin",
        "original_bandwidth_bytes" => "Bandwidth before compression",
        "request_time_ms" => "Request time",
        "time_to_first_byte_ms" => "Time to first byte",
        "time_to_last_byte_ms" => "Time to last byte",
        _ => return humanised(metric.trim_end_matches("_bytes").trim_end_matches("_ms")),
    };
    known.to_string()
}

/// A dimension's (or a column's) name: `http_status_code` → "HTTP status code", `client_ip` → "Client IP".
pub fn dimension_name(dim: &str) -> String {
    let known = match dim {
        "starttime" => "Start",
        "endtime" => "End",
        "event_timestamp_ms" => "Time",
        "http_status_code" => "HTTP status code",
        "status_class" => "Status class",
        "cache_status" => "Cache status",
        "gna_cache_status" => "Parent cache status",
        "scheme" => "Protocol",
        "country" => "Country",
        "country_code" => "Country code",
        "content_type" => "Content type",
        "browser_name" => "Browser",
        "device_type" => "Device type",
        "device_os" => "Operating system",
        "request_type" => "Request type",
        "request_url" => "URL",
        "request_path" => "Path",
        "client_ip" => "Client IP",
        "client_connection_remote_ip" => "Connecting IP",
        "client_country_code" => "Client country",
        "client_asn" => "Client network (ASN)",
        "client_browser" => "Client browser",
        "rule_id" => "Rule",
        "waf_action" => "WAF action",
        "event_action" => "Action",
        "event_severity" => "Severity",
        "event_type" => "Event type",
        "ip" => "IP address",
        _ => return humanised(dim),
    };
    known.to_string()
}

/// `some_name` → "Some name".
fn humanised(name: &str) -> String {
    let words = name.replace('_', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// What an enumerated value of `dim` means (the spec's table), if it has a meaning of its own: cache status
/// 1 → "hit", scheme 2 → "HTTPS".
pub fn value_meaning(dim: &str, value: &str) -> Option<&'static str> {
    match (dim, value) {
        ("cache_status" | "gna_cache_status", "1") => Some("hit"),
        ("cache_status" | "gna_cache_status", "2") => Some("miss"),
        ("cache_status" | "gna_cache_status", "3") => Some("expired"),
        ("cache_status" | "gna_cache_status", "4") => Some("bypassed"),
        ("cache_status" | "gna_cache_status", "5") => Some("failure"),
        ("cache_status", "0") => Some("not recorded"),
        ("scheme", "1") => Some("HTTP"),
        ("scheme", "2") => Some("HTTPS"),
        _ => None,
    }
}

/// A value as the screen shows it: its meaning when it has one (the code kept beside it for those who know
/// the codes: "hit (1)"), an HTTP status code with its class, "(none)" for an empty value, else the value.
pub fn value_label(dim: &str, value: &str) -> String {
    if value.is_empty() {
        return "(none)".into();
    }
    if let Some(m) = value_meaning(dim, value) {
        return if dim == "scheme" { m.to_string() } else { format!("{m} ({value})") };
    }
    value.to_string()
}

/// The class of an HTTP status code: 404 → "4xx"; None for what is not a status code.
pub fn status_class(code: &str) -> Option<&'static str> {
    let n: u16 = code.trim().parse().ok()?;
    Some(match n {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => return None,
    })
}

/// What a status class means, for a legend or a chip: "5xx" → "5xx server errors".
pub fn status_class_label(class: &str) -> String {
    let what = match class {
        "1xx" => "informational",
        "2xx" => "success",
        "3xx" => "redirects",
        "4xx" => "client errors",
        "5xx" => "server errors",
        _ => return class.to_string(),
    };
    format!("{class} {what}")
}

/// Bytes in binary-free decimal multiples, as traffic is billed: `138508069700` → "138.5 GB".
pub fn bytes(v: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
    let mut i = 0;
    let mut x = v.abs();
    while x >= 1000.0 && i < UNITS.len() - 1 {
        x /= 1000.0;
        i += 1;
    }
    let x = if v < 0.0 { -x } else { x };
    if i == 0 { format!("{} B", v.round() as i64) } else { format!("{} {}", one_decimal(x), UNITS[i]) }
}

/// Bits per second: `1250000` (bytes/s × 8 given) → "1.3 Mbit/s".
pub fn bits_per_second(bits: f64) -> String {
    const UNITS: [&str; 5] = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
    let mut i = 0;
    let mut x = bits.abs();
    while x >= 1000.0 && i < UNITS.len() - 1 {
        x /= 1000.0;
        i += 1;
    }
    format!("{} {}", one_decimal(x), UNITS[i])
}

/// A share as a percentage with one decimal: 0.8734 → "87.3%".
pub fn percent(share: f64) -> String {
    if share.is_nan() { "–".into() } else { format!("{}%", one_decimal(share * 100.0)) }
}

/// One decimal without the float formatter: tenths as an integer; `12.0` is written `12`.
pub fn one_decimal(v: f64) -> String {
    let tenths = (v * 10.0).round() as i64;
    let sign = if tenths < 0 { "-" } else { "" };
    match tenths.abs() % 10 {
        0 => format!("{sign}{}", tenths.abs() / 10),
        d => format!("{sign}{}.{d}", tenths.abs() / 10),
    }
}

/// A security top-K category in words: `ratelimitclientip` → "Rate-limited client IPs".
pub fn category_name(category: &str) -> String {
    let known = match category {
        "browser" => "Browsers",
        "clientip" => "Client IPs",
        "country" => "Countries",
        "requestpath" => "Paths",
        "ruleid" => "Rules",
        "severity" => "Severities",
        "ratelimitclientip" => "Rate-limited client IPs",
        "ratelimitcountry" => "Rate-limited countries",
        _ => return humanised(category),
    };
    known.to_string()
}

/// Whether values of `dim` are identifiers (IPs, domains, ids, paths, URLs): shown monospace and never broken
/// inside, cut with an ellipsis and whole on hover.
pub fn is_identifier(dim: &str) -> bool {
    matches!(
        dim,
        "client_ip"
            | "client_connection_remote_ip"
            | "ip"
            | "domain"
            | "property"
            | "rule_id"
            | "request_path"
            | "request_url"
            | "client_asn"
            | "event_action"
            | "waf_action"
            | "event_type"
            | "id"
    )
}
