//! Ingestion: one JSON object per line (NDJSON), checked field by field, parsed into columnar batches — each
//! text column as the batch's distinct values and one index per record — which is what the engines take.
//! Bad lines are reported with their numbers and never block the good ones.
//!
//! Here: checking a line's fields and parsing a body (in halves when large). The parts: `batch` (columnar
//! batches and their records), `lines` (the lines as serde reads them), `scan` (the same without serde, for
//! lines of the plain shape), `encoding` (gzip and zstd bodies).

use std::borrow::Cow;

use edge_api::stats::{MAX_REJECTED, RejectedLine, parse_time};

mod batch;
mod encoding;
mod lines;
mod scan;

pub use batch::{AccessBatch, AccessRecord, Column, SECURITY_DIMS, SecurityBatch, SecurityRecord};
use batch::{AccessBuilder, SecurityBuilder};
pub use encoding::{DecodeError, Encoding, decompress};
use lines::{AccessLine, SecurityLine};
use scan::scan_security;

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

/// Small integers as text, for the integer dimensions.
fn int_text<'a>(v: u64) -> Cow<'a, str> {
    const SMALL: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
    match SMALL.get(v as usize) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(v.to_string()),
    }
}

fn access<'a>(line: &'a str, out: &mut AccessBuilder<'a>) -> Result<(), String> {
    let l: AccessLine<'a> = match scan::scan_access(line) {
        Some(l) => l,
        None => serde_json::from_str(line).map_err(|e| e.to_string())?,
    };
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
        int_text(u64::from(l.cache_status)),
        l.content_type,
        l.country,
        l.country_code,
        l.device_os,
        l.device_type,
        l.domain,
        l.gna_cache_status.map(|g| int_text(u64::from(g))).unwrap_or_default(),
        int_text(u64::from(l.http_status_code)),
        l.property,
        l.request_type,
        int_text(u64::from(l.scheme)),
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
    out.push(ts_ms, dims.into_iter(), metrics);
    Ok(())
}

fn security<'a>(line: &'a str, out: &mut SecurityBuilder<'a>) -> Result<(), String> {
    let l: SecurityLine<'a> = match scan_security(line) {
        Some(l) => l,
        None => serde_json::from_str(line).map_err(|e| e.to_string())?,
    };
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
    if !["waf", "trafficshaping"].contains(&l.source.as_ref()) {
        return Err(format!("source {:?} is not waf or trafficshaping", l.source));
    }
    if l.source == "trafficshaping" && !["BLOCK", "RATE_LIMIT", "WARN"].contains(&l.event_action.as_ref()) {
        return Err(format!(
            "event_action {:?} of a traffic-shaping event is not BLOCK, RATE_LIMIT or WARN",
            l.event_action
        ));
    }
    if l.domain.is_empty() {
        return Err("domain must not be empty".into());
    }
    // In the order of SECURITY_DIMS.
    let dims = [
        l.source,
        l.event_type,
        l.event_action,
        l.event_severity,
        l.waf_action,
        l.rule_id,
        l.domain,
        l.property,
        l.client_ip,
        l.client_connection_remote_ip,
        l.client_browser,
        l.client_country_code,
        l.client_asn.map(|a| int_text(u64::from(a))).unwrap_or_default(),
        l.request_path,
    ];
    out.push(ts_ms, dims.into_iter());
    Ok(())
}

/// The rejected lines of a body: the first few with their numbers and why, and how many more there were.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rejected {
    pub lines: Vec<RejectedLine>,
    pub more: u64,
}

impl Rejected {
    pub fn count(&self) -> u64 {
        self.lines.len() as u64 + self.more
    }
}

/// Parses NDJSON with `one` per non-blank line; keeps the first `keep` rejected lines (1-based, with why) and
/// counts the rest, so that a body of bad lines costs no more memory than its good ones.
fn parse<'a, B>(body: &'a str, keep: usize, out: &mut B, one: fn(&'a str, &mut B) -> Result<(), String>) -> Rejected {
    let mut bad = Rejected::default();
    for (i, line) in body.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        if let Err(message) = one(line, out) {
            if bad.lines.len() < keep {
                bad.lines.push(RejectedLine { line: i as u64 + 1, message: clipped(message) });
            } else {
                bad.more += 1;
            }
        }
    }
    bad
}

/// Parses access-log NDJSON; keeps the first [`MAX_REJECTED`] rejected lines and counts the rest.
pub fn parse_access(body: &str) -> (AccessBatch, Rejected) {
    parse_access_keeping(body, MAX_REJECTED)
}

/// Bodies at least this large are parsed in two halves at once, on two threads.
const HALVES_FROM_BYTES: usize = 1 << 20;

/// Parses `body` with `one`, in two halves at once when it is large; `join` appends the second half's batch
/// to the first's, and rejected lines keep their numbers in the whole body.
fn parse_halves<B: Send>(
    body: &str,
    keep: usize,
    one: impl Fn(&str, usize) -> (B, Rejected) + Sync,
    join: fn(&mut B, B),
) -> (B, Rejected) {
    let middle = match body.as_bytes()[body.len() / 2..].iter().position(|c| *c == b'\n') {
        Some(at) if body.len() >= HALVES_FROM_BYTES => body.len() / 2 + at + 1,
        _ => return one(body, keep),
    };
    let (first, second) = body.split_at(middle);
    let ((mut batch, mut bad), (rest, rest_bad)) = std::thread::scope(|s| {
        let rest = s.spawn(|| one(second, keep));
        let first = one(first, keep);
        (first, rest.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    join(&mut batch, rest);
    let lines_before = first.bytes().filter(|c| *c == b'\n').count() as u64;
    for mut line in rest_bad.lines {
        line.line += lines_before;
        if bad.lines.len() < keep {
            bad.lines.push(line);
        } else {
            bad.more += 1;
        }
    }
    bad.more += rest_bad.more;
    (batch, bad)
}

/// Parses access-log NDJSON; keeps the first `keep` rejected lines and counts the rest.
pub fn parse_access_keeping(body: &str, keep: usize) -> (AccessBatch, Rejected) {
    let one = |body: &str, keep: usize| {
        let mut b = AccessBuilder::default();
        let bad = parse(body, keep, &mut b, access);
        (b.finish(), bad)
    };
    parse_halves(body, keep, one, AccessBatch::append)
}

/// Parses security-event NDJSON; keeps the first [`MAX_REJECTED`] rejected lines and counts the rest.
pub fn parse_security(body: &str) -> (SecurityBatch, Rejected) {
    parse_security_keeping(body, MAX_REJECTED)
}

/// Parses security-event NDJSON; keeps the first `keep` rejected lines and counts the rest.
pub fn parse_security_keeping(body: &str, keep: usize) -> (SecurityBatch, Rejected) {
    let one = |body: &str, keep: usize| {
        let mut b = SecurityBuilder::default();
        let bad = parse(body, keep, &mut b, security);
        (b.finish(), bad)
    };
    parse_halves(body, keep, one, SecurityBatch::append)
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
        let (good, bad) = parse_access_keeping(body, usize::MAX);
        let bad = bad.lines;
        assert_eq!(good.len(), 1);
        assert_eq!(good.metrics[1][0], 3);
        assert_eq!(bad.iter().map(|b| b.line).collect::<Vec<_>>(), [3, 4, 5, 6]);
        assert!(bad[1].message.contains("time-zone designator"));
        assert!(bad[2].message.contains("scheme 3"));
        assert!(bad[3].message.contains("unknown field `colour`"));
    }

    #[test]
    fn a_large_body_parsed_in_halves_is_the_body_parsed_in_one_pass() {
        let good = |i: usize| {
            format!(
                r#"{{"timestamp":"2026-01-01T00:{:02}:00","domain":"d{}.com","property":"p","http_status_code":200,"scheme":2,"request_url":"/u{}","hits":{}}}"#,
                i % 60,
                i % 7,
                i % 1000,
                i
            )
        };
        let mut lines: Vec<String> = (0..12_000).map(good).collect();
        // Bad lines in both halves, more of them than are listed.
        for at in (5..12_000).step_by(97) {
            lines[at] = format!("bad {at}");
        }
        lines.insert(3000, String::new());
        let body = lines.join("\n");
        assert!(body.len() > HALVES_FROM_BYTES);
        let (halves, bad) = parse_access_keeping(&body, 100);
        let mut one = AccessBuilder::default();
        let one_bad = parse(&body, 100, &mut one, access);
        let one = one.finish();
        assert_eq!(halves.len(), one.len());
        assert!((0..one.len()).all(|i| halves.record(i) == one.record(i)));
        assert_eq!(bad, one_bad);
        assert_eq!((bad.lines.len(), bad.count()), (100, 124));
        assert_eq!(bad.lines[99].message, one_bad.lines[99].message);
    }

    #[test]
    fn hits_default_to_one_and_security_events_are_checked() {
        let (good, _) = parse_access(
            r#"{"timestamp":"2026-01-01T00:00:00","domain":"a.com","property":"p","http_status_code":404,"scheme":1,"request_url":"/"}"#,
        );
        assert_eq!(good.metrics[1][0], 1);
        let (good, bad) = parse_security_keeping(
            concat!(
                r#"{"timestamp":"2026-01-01T00:00:00","source":"waf","event_action":"BLOCK","domain":"a.com","rule_id":"942100"}"#,
                "\n",
                r#"{"timestamp":"2026-01-01T00:00:00","source":"trafficshaping","event_action":"DENY","domain":"a.com"}"#,
                "\n",
                r#"{"timestamp":"2026-01-01T00:00:00","source":"cdn","domain":"a.com"}"#
            ),
            1,
        );
        assert_eq!(good.len(), 1);
        assert_eq!((bad.lines.len(), bad.more, bad.count()), (1, 1, 2));
    }
}
