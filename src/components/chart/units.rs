//! How a chart writes its numbers: what a metric counts (its unit), short for axes and tiles, exact on hover.

/// What a metric counts, for its axis and its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    /// Bytes, shown in decimal multiples (kB = 1,000 B), as traffic is billed.
    Bytes,
    /// Milliseconds, an average per request.
    Ms,
}

impl Unit {
    pub fn of_metric(metric: &str) -> Unit {
        if metric.ends_with("_bytes") {
            Unit::Bytes
        } else if metric.ends_with("_ms") {
            Unit::Ms
        } else {
            Unit::Count
        }
    }

    /// Short, for axes and tiles: `1.2k`, `3.4 MB`, `120 ms`, `1.5 s`.
    pub fn short(self, v: f64) -> String {
        match self {
            Unit::Count => short_number(v),
            Unit::Bytes => crate::components::labels::bytes(v),
            Unit::Ms if v.abs() >= 1000.0 => format!("{} s", one_decimal(v / 1000.0)),
            Unit::Ms => format!("{} ms", one_decimal(v)),
        }
    }

    /// Exact, for hover texts: `12,345`, `1,234,567 bytes`, `153.2 ms`.
    pub fn exact(self, v: f64) -> String {
        match self {
            Unit::Count => grouped(v.round() as i64),
            Unit::Bytes => format!("{} bytes", grouped(v.round() as i64)),
            Unit::Ms => format!("{} ms", one_decimal(v)),
        }
    }

    /// The axis title's unit.
    pub fn title(self) -> &'static str {
        match self {
            Unit::Count => "",
            Unit::Bytes => "",
            Unit::Ms => " (ms, average)",
        }
    }
}

/// `1234567` as `1,234,567`.
pub fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One decimal without the float formatter: tenths as an integer; `12.0` is written `12`.
pub(super) fn one_decimal(v: f64) -> String {
    let tenths = (v * 10.0).round() as i64;
    let sign = if tenths < 0 { "-" } else { "" };
    match tenths.abs() % 10 {
        0 => format!("{sign}{}", tenths.abs() / 10),
        d => format!("{sign}{}.{d}", tenths.abs() / 10),
    }
}

/// A point's value as read (bytes in KB/MB/GB), or that there is none (an average of no requests).
pub(super) fn exact_or_none(unit: Unit, v: f64) -> String {
    match unit {
        _ if v.is_nan() => "no requests".to_string(),
        Unit::Bytes => unit.short(v),
        _ => unit.exact(v),
    }
}

/// A number as the API wrote it, for machines: an integer as such, else with one decimal.
pub(super) fn plain(v: f64) -> String {
    if v.fract() == 0.0 { (v as i64).to_string() } else { one_decimal(v) }
}

/// The change from `before` to `now` in words: `+12%`, `−3%`, `new` (nothing before), `` (neither).
pub(super) fn change(now: f64, before: f64) -> String {
    if !now.is_finite() || !before.is_finite() {
        return String::new();
    }
    if before == 0.0 {
        return if now == 0.0 { "±0%".into() } else { "new".into() };
    }
    let percent = ((now - before) / before * 100.0).round() as i64;
    match percent {
        0 => "±0%".into(),
        p if p > 0 => format!("+{}%", grouped(p)),
        p => format!("−{}%", grouped(-p)),
    }
}

/// Short number: 1.2k, 3.4M, 5.6G.
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    let (d, s) = match a {
        a if a >= 1e12 => (1e12, "T"),
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    if d == 1.0 { format!("{}", v.round() as i64) } else { format!("{}{s}", one_decimal(v / d)) }
}

/// A round step near `max / n`: 1, 2 or 5 times a power of ten.
pub(super) fn nice_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powi(raw.log10().floor() as i32);
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
}
