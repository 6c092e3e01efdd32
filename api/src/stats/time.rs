//! Statistics times: `YYYY-MM-DDTHH:MM:SS`, UTC, without a time-zone designator, read and written.

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
