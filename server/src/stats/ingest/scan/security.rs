//! Reading security events of the plain shape without serde (see [`scan_security`]).

use std::borrow::Cow;

use super::{
    super::{batch::SECURITY_DIMS, lines::SecurityLine},
    Lexer,
};

/// Reads a security event of the plain shape every shipper writes — each field once, strings without escapes
/// or control characters, `client_asn` an integer or null — without serde and without allocating. Anything
/// else (an escape, an unknown or repeated field, a number written otherwise, a missing required field, bad
/// JSON) is None, and serde reads the line instead: it decides, and words the reason, for every line this
/// one does not take, so the two agree on what is accepted and what it holds.
pub(in crate::stats::ingest) fn scan_security(line: &str) -> Option<SecurityLine<'_>> {
    let mut l = SecurityLine::default();
    let field = |next: usize, key: &str| {
        if is_security_field(next, key) {
            Some(next)
        } else {
            (0..=SECURITY_DIMS.len()).find(|f| is_security_field(*f, key))
        }
    };
    let seen = Lexer::new(line).object(field, |lx, field| {
        if field == CLIENT_ASN {
            l.client_asn = lx.number(u64::from(u32::MAX), true)?.map(|v| v as u32);
        } else {
            let v = Cow::Borrowed(lx.string()?);
            *match field {
                0 => &mut l.timestamp,
                1 => &mut l.source,
                2 => &mut l.event_type,
                3 => &mut l.event_action,
                4 => &mut l.event_severity,
                5 => &mut l.waf_action,
                6 => &mut l.rule_id,
                7 => &mut l.domain,
                8 => &mut l.property,
                9 => &mut l.client_ip,
                10 => &mut l.client_connection_remote_ip,
                11 => &mut l.client_browser,
                12 => &mut l.client_country_code,
                _ => &mut l.request_path,
            } = v;
        }
        Some(())
    })?;
    // A required field missing: serde's to word.
    const REQUIRED: u32 = 1 << 0 | 1 << 1 | 1 << 7; // timestamp, source, domain
    (seen & REQUIRED == REQUIRED).then_some(l)
}

const CLIENT_ASN: usize = 13;

/// Whether `key` is the name of the security field `field` (compared with constants, which the compiler
/// turns into a word or two).
#[inline]
fn is_security_field(field: usize, key: &str) -> bool {
    match field {
        0 => key == "timestamp",
        1 => key == "source",
        2 => key == "event_type",
        3 => key == "event_action",
        4 => key == "event_severity",
        5 => key == "waf_action",
        6 => key == "rule_id",
        7 => key == "domain",
        8 => key == "property",
        9 => key == "client_ip",
        10 => key == "client_connection_remote_ip",
        11 => key == "client_browser",
        12 => key == "client_country_code",
        13 => key == "client_asn",
        14 => key == "request_path",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde_security(line: &str) -> Option<SecurityLine<'_>> {
        serde_json::from_str(line).ok()
    }

    const PLAIN: &str = r#"{"timestamp":"2026-01-01T00:00:00.123","source":"waf","event_type":"CUSTOM","event_action":"BLOCK","event_severity":"HIGH","waf_action":"BLOCK","rule_id":"900012","domain":"a.com","property":"p","client_ip":"10.1.2.3","client_connection_remote_ip":"10.1.2.3","client_browser":"curl","client_country_code":"DE","client_asn":1234,"request_path":"/wp-login.php"}"#;

    #[test]
    fn the_scanner_reads_plain_security_lines_as_serde_does() {
        // The scanner's fields: the timestamp, then the dimensions.
        let fields: Vec<&str> = std::iter::once("timestamp").chain(SECURITY_DIMS).collect();
        assert_eq!((fields[CLIENT_ASN], fields[7]), ("client_asn", "domain"));
        for (i, f) in fields.iter().enumerate() {
            assert_eq!((0..20).filter(|j| is_security_field(*j, f)).collect::<Vec<_>>(), [i]);
        }
        for line in [
            PLAIN,
            r#"{"timestamp":"2026-01-01T00:00:00","source":"trafficshaping","event_action":"RATE_LIMIT","domain":"a.com"}"#,
            " {\t\"domain\" : \"a.com\" ,\r\n\"source\":\"waf\",\"timestamp\":\"2026-01-01T00:00:00\",\"client_asn\":0 } ",
            r#"{"timestamp":"x","source":"","domain":"","client_asn":null,"request_path":"/é/😀"}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","client_asn":4294967295}"#,
        ] {
            let fast = scan_security(line).unwrap_or_else(|| panic!("not scanned: {line}"));
            assert_eq!(Some(&fast), serde_security(line).as_ref(), "{line}");
        }
    }

    #[test]
    fn the_scanner_leaves_every_other_line_to_serde() {
        for line in [
            r#"{"timestamp":"t","source":"s","domain":"a\u0062c"}"#,
            r#"{"timestamp":"t","source":"s","domain":"a\"b"}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","domain":"e"}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","colour":"red"}"#,
            r#"{"timestamp":"t","source":"s"}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","client_asn":1.5}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","client_asn":1e3}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","client_asn":-1}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","client_asn":01}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","client_asn":4294967296}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","client_asn":"12"}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","client_ip":null}"#,
            r#"{"timestamp":"t","source":"s","domain":"d","client_ip":7}"#,
            r#"{"timestamp":"t","source":"s","domain":"d"} x"#,
            r#"{"timestamp":"t","source":"s","domain":"d",}"#,
            r#"{"timestamp":"t" "source":"s","domain":"d"}"#,
            r#"{"timestamp":"t","source":"s","domain":"d""#,
            "{\"timestamp\":\"t\",\"source\":\"s\",\"domain\":\"a\tb\"}",
            "{}",
            "[]",
        ] {
            assert_eq!(scan_security(line), None, "{line}");
        }
    }

    #[test]
    fn whatever_the_scanner_takes_serde_takes_alike() {
        // Lines one edit away from a plain one, in every position: the scanner either leaves them to serde or
        // reads exactly what serde reads.
        let (mut scanned, mut edits) = (0, 0);
        let bytes: Vec<u8> = PLAIN.bytes().collect();
        for at in 0..=bytes.len() {
            for c in [b'"', b'\\', b',', b':', b'{', b'}', b' ', b'\n', b'0', b'9', b'-', b'.', b'e', b'x', 0x01] {
                let mut edited = vec![bytes.clone(), bytes.clone(), bytes.clone()];
                if at < bytes.len() {
                    edited[0][at] = c;
                    edited[1].remove(at);
                }
                edited[2].insert(at, c);
                for e in edited {
                    let Ok(line) = String::from_utf8(e) else { continue };
                    edits += 1;
                    if let Some(fast) = scan_security(&line) {
                        scanned += 1;
                        assert_eq!(Some(fast), serde_security(&line), "{line}");
                    }
                }
            }
        }
        assert!(scanned > 1000 && scanned < edits, "{scanned} of {edits} scanned");
    }
}
