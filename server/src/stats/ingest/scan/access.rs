//! Reading access-log lines of the plain shape every shipper writes without serde: each field once, strings
//! without escapes or control characters, numbers as plain non-negative integers (or null where the field may
//! be absent). Anything else — an escape, an unknown or repeated field, a number written otherwise, a missing
//! required field, bad JSON — is None, and serde reads the line instead: it decides, and words the reason, for
//! every line this does not take, so the two agree on what is accepted and what it holds. Parsing was a third
//! of a request's work before (`perf record` under `edge-bench ingest`).

use std::borrow::Cow;

use super::{super::lines::AccessLine, Lexer};

/// The fields of an access-log line, in the order shippers write them (the bench's logs, the README's).
const FIELDS: [&str; 23] = [
    "timestamp",
    "domain",
    "property",
    "country",
    "country_code",
    "browser_name",
    "device_type",
    "device_os",
    "content_type",
    "request_type",
    "cache_status",
    "gna_cache_status",
    "scheme",
    "http_status_code",
    "request_url",
    "hits",
    "first_mile_bandwidth_bytes",
    "last_mile_bandwidth_bytes",
    "middle_mile_bandwidth_bytes",
    "original_bandwidth_bytes",
    "request_time_ms",
    "time_to_first_byte_ms",
    "time_to_last_byte_ms",
];

/// Fields serde requires (no default): timestamp, domain, property, scheme, http_status_code, request_url.
const REQUIRED: u32 = 1 << 0 | 1 << 1 | 1 << 2 | 1 << 12 | 1 << 13 | 1 << 14;
/// The first field that is a number.
const FIRST_NUMBER: usize = 10;

/// The largest value of each number field (from `cache_status` on), and whether it may be null.
fn number_kind(field: usize) -> (u64, bool) {
    match field {
        10 | 12 => (u64::from(u8::MAX), false),
        11 => (u64::from(u8::MAX), true),
        13 => (u64::from(u16::MAX), false),
        15 => (u64::MAX, true),
        _ => (u64::MAX, false),
    }
}

pub(in crate::stats::ingest) fn scan_access(line: &str) -> Option<AccessLine<'_>> {
    let mut l = AccessLine::default();
    let field = |next: usize, key: &str| {
        if FIELDS.get(next) == Some(&key) { Some(next) } else { FIELDS.iter().position(|f| *f == key) }
    };
    let seen = Lexer::new(line).object(field, |lx, field| {
        if field >= FIRST_NUMBER && field != 14 {
            let (max, nullable) = number_kind(field);
            match (field, lx.number(max, nullable)?) {
                (11, v) => l.gna_cache_status = v.map(|v| v as u8),
                (15, v) => l.hits = v,
                (_, None) => return None,
                (10, Some(v)) => l.cache_status = v as u8,
                (12, Some(v)) => l.scheme = v as u8,
                (13, Some(v)) => l.http_status_code = v as u16,
                (16, Some(v)) => l.first_mile_bandwidth_bytes = v,
                (17, Some(v)) => l.last_mile_bandwidth_bytes = v,
                (18, Some(v)) => l.middle_mile_bandwidth_bytes = v,
                (19, Some(v)) => l.original_bandwidth_bytes = v,
                (20, Some(v)) => l.request_time_ms = v,
                (21, Some(v)) => l.time_to_first_byte_ms = v,
                (_, Some(v)) => l.time_to_last_byte_ms = v,
            }
        } else {
            let v = Cow::Borrowed(lx.string()?);
            *match field {
                0 => &mut l.timestamp,
                1 => &mut l.domain,
                2 => &mut l.property,
                3 => &mut l.country,
                4 => &mut l.country_code,
                5 => &mut l.browser_name,
                6 => &mut l.device_type,
                7 => &mut l.device_os,
                8 => &mut l.content_type,
                9 => &mut l.request_type,
                _ => &mut l.request_url,
            } = v;
        }
        Some(())
    })?;
    // A required field missing: serde's to word.
    (seen & REQUIRED == REQUIRED).then_some(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_access(line: &str) -> Option<AccessLine<'_>> {
        serde_json::from_str(line).ok()
    }

    const PLAIN: &str = r#"{"timestamp":"2026-11-25T10:00:00.123","domain":"d001.example","property":"prop-01","country":"Germany","country_code":"DE","browser_name":"Chrome","device_type":"Mobile","device_os":"Android","content_type":"image/webp","request_type":"GET","cache_status":1,"gna_cache_status":1,"scheme":2,"http_status_code":200,"request_url":"/1/42.webp","hits":1,"first_mile_bandwidth_bytes":0,"last_mile_bandwidth_bytes":61234,"middle_mile_bandwidth_bytes":0,"original_bandwidth_bytes":0,"request_time_ms":13,"time_to_first_byte_ms":5,"time_to_last_byte_ms":9}"#;

    #[test]
    fn the_fields_are_the_lines_fields() {
        // Every field of the line is one the scanner knows, and the other way round.
        let value: serde_json::Value = serde_json::from_str(PLAIN).unwrap();
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        let mut fields = FIELDS.to_vec();
        fields.sort_unstable();
        assert_eq!(keys, fields);
    }

    #[test]
    fn the_scanner_reads_plain_access_lines_as_serde_does() {
        for line in [
            PLAIN,
            r#"{"timestamp":"2026-01-01T00:00:00","domain":"a","property":"p","http_status_code":404,"scheme":1,"request_url":"/"}"#,
            " {\t\"request_url\" : \"/x\" ,\r\n\"scheme\":2,\"http_status_code\":599,\"property\":\"p\",\"domain\":\"d\",\"timestamp\":\"t\",\"hits\":null,\"gna_cache_status\":null } ",
            r#"{"timestamp":"x","domain":"","property":"","http_status_code":0,"scheme":255,"request_url":"/é/😀","cache_status":255,"hits":18446744073709551615,"time_to_last_byte_ms":0}"#,
            r#"{"request_url":"/","scheme":0,"http_status_code":65535,"property":"p","domain":"d","timestamp":"t","hits":0,"gna_cache_status":7}"#,
        ] {
            let fast = scan_access(line).unwrap_or_else(|| panic!("not scanned: {line}"));
            assert_eq!(Some(&fast), serde_access(line).as_ref(), "{line}");
        }
    }

    #[test]
    fn the_scanner_leaves_every_other_line_to_serde() {
        for line in [
            r#"{"timestamp":"t","domain":"a\u0062c","property":"p","http_status_code":200,"scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","domain":"e","property":"p","http_status_code":200,"scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":200,"scheme":2,"request_url":"/","colour":"red"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":200,"scheme":2}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":200.0,"scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":2e2,"scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":-200,"scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":0200,"scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":65536,"scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":200,"scheme":256,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":200,"scheme":2,"request_url":"/","hits":18446744073709551616}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":200,"scheme":2,"request_url":"/","gna_cache_status":256}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":null,"scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":"200","scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":200,"scheme":2,"request_url":"/","request_time_ms":null}"#,
            r#"{"timestamp":"t","domain":7,"property":"p","http_status_code":200,"scheme":2,"request_url":"/"}"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":200,"scheme":2,"request_url":"/"} x"#,
            r#"{"timestamp":"t","domain":"d","property":"p","http_status_code":200,"scheme":2,"request_url":"/",}"#,
            r#"{"timestamp":"t" "domain":"d","property":"p","http_status_code":200,"scheme":2,"request_url":"/"}"#,
            "{\"timestamp\":\"t\",\"domain\":\"a\tb\",\"property\":\"p\",\"http_status_code\":200,\"scheme\":2,\"request_url\":\"/\"}",
            "{}",
            "[]",
        ] {
            assert_eq!(scan_access(line), None, "{line}");
        }
    }

    #[test]
    fn whatever_the_scanner_takes_serde_takes_alike() {
        // Lines one edit away from a plain one, in every position: the scanner either leaves them to serde or
        // reads exactly what serde reads.
        let (mut scanned, mut edits) = (0, 0);
        let bytes: Vec<u8> = PLAIN.bytes().collect();
        for at in 0..=bytes.len() {
            for c in [b'"', b'\\', b',', b':', b'{', b'}', b' ', b'\n', b'0', b'9', b'-', b'.', b'e', b'n', b'x', 0x01]
            {
                let mut edited = vec![bytes.clone(), bytes.clone(), bytes.clone()];
                if at < bytes.len() {
                    edited[0][at] = c;
                    edited[1].remove(at);
                }
                edited[2].insert(at, c);
                for e in edited {
                    let Ok(line) = String::from_utf8(e) else { continue };
                    edits += 1;
                    if let Some(fast) = scan_access(&line) {
                        scanned += 1;
                        assert_eq!(Some(fast), serde_access(&line), "{line}");
                    }
                }
            }
        }
        assert!(scanned > 3000 && scanned < edits, "{scanned} of {edits} scanned");
    }
}
