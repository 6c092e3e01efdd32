//! Ingestion records: one JSON object per line (NDJSON), checked field by field. Bad lines are reported with
//! their numbers and never block the good ones.

use edge_api::stats::{RejectedLine, parse_time};
use serde::Deserialize;

use super::DIMS;

/// An access-log record: when, every delivery dimension (except `customer`, which is the tenant), the URL and
/// the metrics. It may stand for many requests (`hits`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRecord {
    pub ts_ms: i64,
    /// Values of the delivery dimensions and `request_url`, by [`DIMS`] id (ids 0–13).
    pub dims: [String; 14],
    /// first_mile_bandwidth_bytes, hits, last_mile_bandwidth_bytes, middle_mile_bandwidth_bytes,
    /// original_bandwidth_bytes, request_time_ms, time_to_first_byte_ms, time_to_last_byte_ms.
    pub metrics: [u64; 8],
}

/// A security event: WAF or traffic shaping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityRecord {
    pub ts_ms: i64,
    /// Values by [`DIMS`] id; delivery ids carry `domain` and `property` only.
    pub dims: Vec<(usize, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccessLine {
    timestamp: String,
    #[serde(default)]
    browser_name: String,
    #[serde(default)]
    cache_status: u8,
    #[serde(default)]
    content_type: String,
    #[serde(default)]
    country: String,
    #[serde(default)]
    country_code: String,
    #[serde(default)]
    device_os: String,
    #[serde(default)]
    device_type: String,
    domain: String,
    #[serde(default)]
    gna_cache_status: Option<u8>,
    http_status_code: u16,
    property: String,
    #[serde(default)]
    request_type: String,
    scheme: u8,
    request_url: String,
    #[serde(default)]
    first_mile_bandwidth_bytes: u64,
    #[serde(default)]
    hits: Option<u64>,
    #[serde(default)]
    last_mile_bandwidth_bytes: u64,
    #[serde(default)]
    middle_mile_bandwidth_bytes: u64,
    #[serde(default)]
    original_bandwidth_bytes: u64,
    #[serde(default)]
    request_time_ms: u64,
    #[serde(default)]
    time_to_first_byte_ms: u64,
    #[serde(default)]
    time_to_last_byte_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SecurityLine {
    timestamp: String,
    source: String,
    #[serde(default)]
    event_type: String,
    #[serde(default)]
    event_action: String,
    #[serde(default)]
    event_severity: String,
    #[serde(default)]
    waf_action: String,
    #[serde(default)]
    rule_id: String,
    domain: String,
    #[serde(default)]
    property: String,
    #[serde(default)]
    client_ip: String,
    #[serde(default)]
    client_connection_remote_ip: String,
    #[serde(default)]
    client_browser: String,
    #[serde(default)]
    client_country_code: String,
    #[serde(default)]
    client_asn: Option<u32>,
    #[serde(default)]
    request_path: String,
}

/// Longest text a field of a record may hold, in bytes.
pub const MAX_TEXT_BYTES: usize = 4096;
/// Longest message about a rejected line: it may quote what was sent.
const MAX_MESSAGE_BYTES: usize = 300;

/// Refuses the first of `fields` longer than [`MAX_TEXT_BYTES`].
fn short_texts(fields: &[(&str, &str)]) -> Result<(), String> {
    match fields.iter().find(|(_, v)| v.len() > MAX_TEXT_BYTES) {
        Some((name, v)) => Err(format!("{name} is {} bytes long; text fields hold at most {MAX_TEXT_BYTES}", v.len())),
        None => Ok(()),
    }
}

/// `message` cut to [`MAX_MESSAGE_BYTES`] (at a character boundary), so a rejected line's report stays small
/// whatever it quotes.
fn clipped(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

fn access(line: &str) -> Result<AccessRecord, String> {
    let l: AccessLine = serde_json::from_str(line).map_err(|e| e.to_string())?;
    short_texts(&[
        ("timestamp", &l.timestamp),
        ("browser_name", &l.browser_name),
        ("content_type", &l.content_type),
        ("country", &l.country),
        ("country_code", &l.country_code),
        ("device_os", &l.device_os),
        ("device_type", &l.device_type),
        ("domain", &l.domain),
        ("property", &l.property),
        ("request_type", &l.request_type),
        ("request_url", &l.request_url),
    ])?;
    let ts_ms = parse_time(&l.timestamp).map_err(|e| format!("timestamp: {e}"))?;
    if l.cache_status > 5 {
        return Err(format!("cache_status {} is not 0 to 5", l.cache_status));
    }
    if l.gna_cache_status.is_some_and(|g| !(1..=5).contains(&g)) {
        return Err("gna_cache_status is 1 to 5".into());
    }
    if !(1..=2).contains(&l.scheme) {
        return Err(format!("scheme {} is not 1 (HTTP) or 2 (HTTPS)", l.scheme));
    }
    if !(100..=599).contains(&l.http_status_code) {
        return Err(format!("http_status_code {} is not 100 to 599", l.http_status_code));
    }
    if l.domain.is_empty() || l.property.is_empty() {
        return Err("domain and property must not be empty".into());
    }
    let dims = [
        l.browser_name,
        l.cache_status.to_string(),
        l.content_type,
        l.country,
        l.country_code,
        l.device_os,
        l.device_type,
        l.domain,
        l.gna_cache_status.map(|g| g.to_string()).unwrap_or_default(),
        l.http_status_code.to_string(),
        l.property,
        l.request_type,
        l.scheme.to_string(),
        l.request_url,
    ];
    let metrics = [
        l.first_mile_bandwidth_bytes,
        l.hits.unwrap_or(1),
        l.last_mile_bandwidth_bytes,
        l.middle_mile_bandwidth_bytes,
        l.original_bandwidth_bytes,
        l.request_time_ms,
        l.time_to_first_byte_ms,
        l.time_to_last_byte_ms,
    ];
    Ok(AccessRecord { ts_ms, dims, metrics })
}

fn security(line: &str) -> Result<SecurityRecord, String> {
    let l: SecurityLine = serde_json::from_str(line).map_err(|e| e.to_string())?;
    short_texts(&[
        ("timestamp", &l.timestamp),
        ("source", &l.source),
        ("event_type", &l.event_type),
        ("event_action", &l.event_action),
        ("event_severity", &l.event_severity),
        ("waf_action", &l.waf_action),
        ("rule_id", &l.rule_id),
        ("domain", &l.domain),
        ("property", &l.property),
        ("client_ip", &l.client_ip),
        ("client_connection_remote_ip", &l.client_connection_remote_ip),
        ("client_browser", &l.client_browser),
        ("client_country_code", &l.client_country_code),
        ("request_path", &l.request_path),
    ])?;
    let ts_ms = parse_time(&l.timestamp).map_err(|e| format!("timestamp: {e}"))?;
    if !["waf", "trafficshaping"].contains(&l.source.as_str()) {
        return Err(format!("source {:?} is not waf or trafficshaping", l.source));
    }
    if l.source == "trafficshaping" && !["BLOCK", "RATE_LIMIT", "WARN"].contains(&l.event_action.as_str()) {
        return Err(format!(
            "event_action {:?} of a traffic-shaping event is not BLOCK, RATE_LIMIT or WARN",
            l.event_action
        ));
    }
    if l.domain.is_empty() {
        return Err("domain must not be empty".into());
    }
    let id = |n: &str| super::dim_id(n).unwrap_or(0);
    let dims = vec![
        (id("source"), l.source),
        (id("event_type"), l.event_type),
        (id("event_action"), l.event_action),
        (id("event_severity"), l.event_severity),
        (id("waf_action"), l.waf_action),
        (id("rule_id"), l.rule_id),
        (id("domain"), l.domain),
        (id("property"), l.property),
        (id("client_ip"), l.client_ip),
        (id("client_connection_remote_ip"), l.client_connection_remote_ip),
        (id("client_browser"), l.client_browser),
        (id("client_country_code"), l.client_country_code),
        (id("client_asn"), l.client_asn.map(|a| a.to_string()).unwrap_or_default()),
        (id("request_path"), l.request_path),
    ];
    debug_assert!(dims.iter().all(|(i, _)| *i < DIMS.len()));
    Ok(SecurityRecord { ts_ms, dims })
}

/// Parses NDJSON: the good records and the rejected lines (1-based, with why).
fn parse<T>(body: &str, one: fn(&str) -> Result<T, String>) -> (Vec<T>, Vec<RejectedLine>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in body.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match one(line) {
            Ok(r) => good.push(r),
            Err(message) => bad.push(RejectedLine { line: i as u64 + 1, message: clipped(message) }),
        }
    }
    (good, bad)
}

pub fn parse_access(body: &str) -> (Vec<AccessRecord>, Vec<RejectedLine>) {
    parse(body, access)
}

pub fn parse_security(body: &str) -> (Vec<SecurityRecord>, Vec<RejectedLine>) {
    parse(body, security)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_lines_are_kept_and_bad_ones_reported_by_number() {
        let body = concat!(
            r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.com","property":"p","http_status_code":200,"scheme":2,"request_url":"/","hits":3}"#,
            "\n\nnot json\n",
            r#"{"timestamp":"2026-01-01T00:00:00Z","domain":"a.com","property":"p","http_status_code":200,"scheme":2,"request_url":"/"}"#,
            "\n",
            r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.com","property":"p","http_status_code":200,"scheme":3,"request_url":"/"}"#,
            "\n",
            r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.com","property":"p","http_status_code":200,"scheme":1,"request_url":"/x","colour":"red"}"#,
        );
        let (good, bad) = parse_access(body);
        assert_eq!(good.len(), 1);
        assert_eq!(good[0].metrics[1], 3);
        assert_eq!(bad.iter().map(|b| b.line).collect::<Vec<_>>(), [3, 4, 5, 6]);
        assert!(bad[1].message.contains("time-zone designator"));
        assert!(bad[2].message.contains("scheme 3"));
        assert!(bad[3].message.contains("unknown field `colour`"));
    }

    #[test]
    fn hits_default_to_one_and_security_events_are_checked() {
        let (good, _) = parse_access(
            r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.com","property":"p","http_status_code":404,"scheme":1,"request_url":"/"}"#,
        );
        assert_eq!(good[0].metrics[1], 1);
        let (good, bad) = parse_security(concat!(
            r#"{"timestamp":"2026-01-01T00:00:00","source":"waf","event_action":"BLOCK","domain":"a.com","rule_id":"942100"}"#,
            "\n",
            r#"{"timestamp":"2026-01-01T00:00:00","source":"trafficshaping","event_action":"DENY","domain":"a.com"}"#,
            "\n",
            r#"{"timestamp":"2026-01-01T00:00:00","source":"cdn","domain":"a.com"}"#
        ));
        assert_eq!(good.len(), 1);
        assert_eq!(bad.len(), 2);
    }
}
