//! Ingestion: one JSON object per line (NDJSON), checked field by field, parsed into columnar batches — each
//! text column as the batch's distinct values and one index per record — which is what the engines take.
//! Bad lines are reported with their numbers and never block the good ones.

use std::borrow::Cow;

use edge_api::stats::{MAX_REJECTED, RejectedLine, parse_time};

mod scan;
use rustc_hash::FxHashMap;
use serde::Deserialize;

/// An access-log record: when, every delivery dimension (except `customer`, which is the tenant), the URL and
/// the metrics. It may stand for many requests (`hits`). Batches are columnar ([`AccessBatch`]); this is one
/// row of one, for building and reading batches record by record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRecord {
    pub ts_ms: i64,
    /// Values of the delivery dimensions and `request_url`, by [`super::DIMS`] id (ids 0–13).
    pub dims: [String; 14],
    /// first_mile_bandwidth_bytes, hits, last_mile_bandwidth_bytes, middle_mile_bandwidth_bytes,
    /// original_bandwidth_bytes, request_time_ms, time_to_first_byte_ms, time_to_last_byte_ms.
    pub metrics: [u64; 8],
}

/// The dimensions of a security event, in the order of [`SecurityBatch::dims`].
pub const SECURITY_DIMS: [&str; 14] = [
    "source",
    "event_type",
    "event_action",
    "event_severity",
    "waf_action",
    "rule_id",
    "domain",
    "property",
    "client_ip",
    "client_connection_remote_ip",
    "client_browser",
    "client_country_code",
    "client_asn",
    "request_path",
];

/// A security event, WAF or traffic shaping: one row of a [`SecurityBatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityRecord {
    pub ts_ms: i64,
    /// Values in the order of [`SECURITY_DIMS`] (empty when the event has none).
    pub dims: [String; 14],
}

/// A text column of a batch: its distinct values, and for each record the index of its value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Column {
    pub values: Vec<String>,
    pub ids: Vec<u32>,
}

impl Column {
    pub fn value(&self, record: usize) -> &str {
        &self.values[self.ids[record] as usize]
    }

    /// The records in `order`, the values renumbered in the order they first appear in it (engines take a
    /// value's place in a batch for when it was first seen).
    fn reordered(&self, order: &[u32]) -> Column {
        let mut renumbered = vec![u32::MAX; self.values.len()];
        let mut values = Vec::with_capacity(self.values.len());
        let ids = order
            .iter()
            .map(|i| {
                let old = self.ids[*i as usize] as usize;
                if renumbered[old] == u32::MAX {
                    renumbered[old] = values.len() as u32;
                    values.push(self.values[old].clone());
                }
                renumbered[old]
            })
            .collect();
        Column { values, ids }
    }

    /// Appends the records of `other`, its values mapped to this column's (new ones added).
    fn append(&mut self, other: Column) {
        let known: FxHashMap<&str, u32> = self.values.iter().enumerate().map(|(i, v)| (v.as_str(), i as u32)).collect();
        let mut added = Vec::new();
        let map: Vec<u32> = other
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                known.get(v.as_str()).copied().unwrap_or_else(|| {
                    added.push(i);
                    (self.values.len() + added.len() - 1) as u32
                })
            })
            .collect();
        drop(known);
        let mut values = other.values;
        self.values.extend(added.into_iter().map(|i| std::mem::take(&mut values[i])));
        self.ids.extend(other.ids.iter().map(|i| map[*i as usize]));
    }
}

/// The positions of `ts` in time order (stable), or None when they are in order already.
fn time_order(ts: &[i64]) -> Option<Vec<u32>> {
    if ts.is_sorted() {
        return None;
    }
    let mut pairs: Vec<(i64, u32)> = ts.iter().enumerate().map(|(i, t)| (*t, i as u32)).collect();
    pairs.sort_unstable();
    Some(pairs.into_iter().map(|(_, i)| i).collect())
}

fn reordered<T: Copy>(values: &[T], order: &[u32]) -> Vec<T> {
    order.iter().map(|i| values[*i as usize]).collect()
}

/// Builds a [`Column`], looking each value up once per batch.
#[derive(Default)]
struct ColumnBuilder<'a> {
    index: FxHashMap<Cow<'a, str>, u32>,
    column: Column,
}

impl<'a> ColumnBuilder<'a> {
    fn push(&mut self, v: Cow<'a, str>) {
        let id = match self.index.get(v.as_ref()) {
            Some(id) => *id,
            None => {
                let id = self.column.values.len() as u32;
                self.column.values.push(v.to_string());
                self.index.insert(v, id);
                id
            }
        };
        self.column.ids.push(id);
    }
}

/// Access-log records, column by column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessBatch {
    pub ts_ms: Vec<i64>,
    /// The delivery dimensions and `request_url`, by [`super::DIMS`] id (0–13).
    pub dims: [Column; 14],
    /// The eight metrics, in the order of [`AccessRecord::metrics`].
    pub metrics: [Vec<u64>; 8],
}

impl AccessBatch {
    pub fn len(&self) -> usize {
        self.ts_ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts_ms.is_empty()
    }

    pub fn from_records(records: &[AccessRecord]) -> AccessBatch {
        let mut b = AccessBuilder::default();
        for r in records {
            b.push(r.ts_ms, r.dims.iter().map(|d| Cow::Borrowed(d.as_str())), r.metrics);
        }
        b.finish()
    }

    /// Appends the records of `other`.
    pub fn append(&mut self, other: AccessBatch) {
        self.ts_ms.extend(other.ts_ms);
        for (c, o) in self.dims.iter_mut().zip(other.dims) {
            c.append(o);
        }
        for (c, o) in self.metrics.iter_mut().zip(other.metrics) {
            c.extend(o);
        }
    }

    /// The batch in time order, or None when it is in order already. Engines sum records in time order, so
    /// that a batch spread over days meets each stored bucket once.
    pub fn by_time(&self) -> Option<AccessBatch> {
        let order = time_order(&self.ts_ms)?;
        Some(AccessBatch {
            ts_ms: reordered(&self.ts_ms, &order),
            dims: std::array::from_fn(|d| self.dims[d].reordered(&order)),
            metrics: std::array::from_fn(|m| reordered(&self.metrics[m], &order)),
        })
    }

    pub fn record(&self, i: usize) -> AccessRecord {
        AccessRecord {
            ts_ms: self.ts_ms[i],
            dims: std::array::from_fn(|d| self.dims[d].value(i).to_string()),
            metrics: std::array::from_fn(|m| self.metrics[m][i]),
        }
    }
}

#[derive(Default)]
struct AccessBuilder<'a> {
    ts_ms: Vec<i64>,
    dims: [ColumnBuilder<'a>; 14],
    metrics: [Vec<u64>; 8],
}

impl<'a> AccessBuilder<'a> {
    fn push(&mut self, ts_ms: i64, dims: impl Iterator<Item = Cow<'a, str>>, metrics: [u64; 8]) {
        self.ts_ms.push(ts_ms);
        for (b, v) in self.dims.iter_mut().zip(dims) {
            b.push(v);
        }
        for (col, v) in self.metrics.iter_mut().zip(metrics) {
            col.push(v);
        }
    }

    fn finish(self) -> AccessBatch {
        AccessBatch { ts_ms: self.ts_ms, dims: self.dims.map(|b| b.column), metrics: self.metrics }
    }
}

/// Security events, column by column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecurityBatch {
    pub ts_ms: Vec<i64>,
    /// In the order of [`SECURITY_DIMS`].
    pub dims: [Column; 14],
}

impl SecurityBatch {
    pub fn len(&self) -> usize {
        self.ts_ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts_ms.is_empty()
    }

    pub fn from_records(records: &[SecurityRecord]) -> SecurityBatch {
        let mut b = SecurityBuilder::default();
        for r in records {
            b.push(r.ts_ms, r.dims.iter().map(|d| Cow::Borrowed(d.as_str())));
        }
        b.finish()
    }

    /// Appends the records of `other`.
    pub fn append(&mut self, other: SecurityBatch) {
        self.ts_ms.extend(other.ts_ms);
        for (c, o) in self.dims.iter_mut().zip(other.dims) {
            c.append(o);
        }
    }

    /// The batch in time order, or None when it is in order already (see [`AccessBatch::by_time`]).
    pub fn by_time(&self) -> Option<SecurityBatch> {
        let order = time_order(&self.ts_ms)?;
        Some(SecurityBatch {
            ts_ms: reordered(&self.ts_ms, &order),
            dims: std::array::from_fn(|d| self.dims[d].reordered(&order)),
        })
    }

    pub fn record(&self, i: usize) -> SecurityRecord {
        SecurityRecord { ts_ms: self.ts_ms[i], dims: std::array::from_fn(|d| self.dims[d].value(i).to_string()) }
    }
}

#[derive(Default)]
struct SecurityBuilder<'a> {
    ts_ms: Vec<i64>,
    dims: [ColumnBuilder<'a>; 14],
}

impl<'a> SecurityBuilder<'a> {
    fn push(&mut self, ts_ms: i64, dims: impl Iterator<Item = Cow<'a, str>>) {
        self.ts_ms.push(ts_ms);
        for (b, v) in self.dims.iter_mut().zip(dims) {
            b.push(v);
        }
    }

    fn finish(self) -> SecurityBatch {
        SecurityBatch { ts_ms: self.ts_ms, dims: self.dims.map(|b| b.column) }
    }
}

type Text<'a> = Cow<'a, str>;

#[derive(Deserialize, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
struct AccessLine<'a> {
    #[serde(borrow)]
    timestamp: Text<'a>,
    #[serde(default, borrow)]
    browser_name: Text<'a>,
    #[serde(default)]
    cache_status: u8,
    #[serde(default, borrow)]
    content_type: Text<'a>,
    #[serde(default, borrow)]
    country: Text<'a>,
    #[serde(default, borrow)]
    country_code: Text<'a>,
    #[serde(default, borrow)]
    device_os: Text<'a>,
    #[serde(default, borrow)]
    device_type: Text<'a>,
    #[serde(borrow)]
    domain: Text<'a>,
    #[serde(default)]
    gna_cache_status: Option<u8>,
    http_status_code: u16,
    #[serde(borrow)]
    property: Text<'a>,
    #[serde(default, borrow)]
    request_type: Text<'a>,
    scheme: u8,
    #[serde(borrow)]
    request_url: Text<'a>,
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

#[derive(Deserialize, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
struct SecurityLine<'a> {
    #[serde(borrow)]
    timestamp: Text<'a>,
    #[serde(borrow)]
    source: Text<'a>,
    #[serde(default, borrow)]
    event_type: Text<'a>,
    #[serde(default, borrow)]
    event_action: Text<'a>,
    #[serde(default, borrow)]
    event_severity: Text<'a>,
    #[serde(default, borrow)]
    waf_action: Text<'a>,
    #[serde(default, borrow)]
    rule_id: Text<'a>,
    #[serde(borrow)]
    domain: Text<'a>,
    #[serde(default, borrow)]
    property: Text<'a>,
    #[serde(default, borrow)]
    client_ip: Text<'a>,
    #[serde(default, borrow)]
    client_connection_remote_ip: Text<'a>,
    #[serde(default, borrow)]
    client_browser: Text<'a>,
    #[serde(default, borrow)]
    client_country_code: Text<'a>,
    #[serde(default)]
    client_asn: Option<u32>,
    #[serde(default, borrow)]
    request_path: Text<'a>,
}

/// How an ingestion body (or file) is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Gzip,
    Zstd,
}

impl Encoding {
    /// From a `Content-Encoding` value.
    pub fn parse(name: &str) -> Option<Encoding> {
        match name {
            "gzip" | "x-gzip" => Some(Encoding::Gzip),
            "zstd" => Some(Encoding::Zstd),
            _ => None,
        }
    }

    /// From a file name's extension (`.gz`, `.zst`); None for anything else.
    pub fn of_path(path: &std::path::Path) -> Option<Encoding> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Some(Encoding::Gzip),
            Some("zst" | "zstd") => Some(Encoding::Zstd),
            _ => None,
        }
    }

    /// A reader of what `input` holds, decompressed.
    pub fn reader<'a, R: std::io::BufRead + 'a>(self, input: R) -> std::io::Result<Box<dyn std::io::Read + 'a>> {
        Ok(match self {
            Encoding::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
            Encoding::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(input)?),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Encoding::Gzip => "gzip",
            Encoding::Zstd => "zstd",
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// More than the limit once decompressed.
    TooLarge,
    /// Not a valid stream of the encoding (named in the message).
    Corrupt(String),
}

/// Decompresses `body`, stopping as soon as it exceeds `limit` bytes: a small body that would expand without
/// bound (a decompression bomb) costs no more than the limit.
pub fn decompress(encoding: Encoding, body: &[u8], limit: usize) -> Result<Vec<u8>, DecodeError> {
    use std::io::Read;
    let corrupt = |e: std::io::Error| DecodeError::Corrupt(format!("{} ({e})", encoding.name()));
    let reader = encoding.reader(body).map_err(corrupt)?;
    let mut out = Vec::with_capacity((body.len() * 4).min(limit) + 1);
    reader.take(limit as u64 + 1).read_to_end(&mut out).map_err(corrupt)?;
    if out.len() > limit {
        return Err(DecodeError::TooLarge);
    }
    Ok(out)
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

/// Reads a security event of the plain shape every shipper writes — each field once, strings without escapes
/// or control characters, `client_asn` an integer or null — without serde and without allocating. Anything
/// else (an escape, an unknown or repeated field, a number written otherwise, a missing required field, bad
/// JSON) is None, and serde reads the line instead: it decides, and words the reason, for every line this
/// one does not take, so the two agree on what is accepted and what it holds.
fn scan_security(line: &str) -> Option<SecurityLine<'_>> {
    let b = line.as_bytes();
    let mut at = 0;
    let ws = |at: &mut usize| {
        while b.get(*at).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
            *at += 1;
        }
    };
    // A string with no escape or control character; `at` at its opening quote, left after its closing one.
    let string = |at: &mut usize| -> Option<&str> {
        let start = *at + 1;
        let len = plain_len(b.get(start..)?)?;
        if b[start + len] != b'"' {
            return None;
        }
        *at = start + len + 1;
        line.get(start..start + len)
    };
    let mut l = SecurityLine::default();
    let mut seen = 0u16;
    let mut next = 0;
    ws(&mut at);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    ws(&mut at);
    if b.get(at) == Some(&b'}') {
        return None;
    }
    loop {
        ws(&mut at);
        if b.get(at) != Some(&b'"') {
            return None;
        }
        let key = string(&mut at)?;
        ws(&mut at);
        if b.get(at) != Some(&b':') {
            return None;
        }
        at += 1;
        ws(&mut at);
        // Shippers write the fields in one order: the one after the last is tried first.
        let field = if is_security_field(next, key) {
            next
        } else {
            (0..=SECURITY_DIMS.len()).find(|f| is_security_field(*f, key))?
        };
        next = field + 1;
        if seen & (1 << field) != 0 {
            return None;
        }
        seen |= 1 << field;
        if field == CLIENT_ASN {
            l.client_asn = match b.get(at)? {
                b'n' if b.get(at..at + 4) == Some(b"null") => {
                    at += 4;
                    None
                }
                b'0' => {
                    at += 1;
                    Some(0)
                }
                b'1'..=b'9' => {
                    let digits = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
                    let v: u32 = line.get(at..at + digits)?.parse().ok()?;
                    at += digits;
                    Some(v)
                }
                _ => return None,
            };
            // `1.5`, `1e3` and `12x` are serde's to judge.
            if !matches!(b.get(at), Some(b' ' | b'\t' | b'\n' | b'\r' | b',' | b'}')) {
                return None;
            }
        } else {
            if b.get(at) != Some(&b'"') {
                return None;
            }
            let v = Cow::Borrowed(string(&mut at)?);
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
        ws(&mut at);
        match b.get(at)? {
            b',' => at += 1,
            b'}' => {
                at += 1;
                break;
            }
            _ => return None,
        }
    }
    ws(&mut at);
    // Trailing characters, or a required field missing: serde's to word.
    const REQUIRED: u16 = 1 << 0 | 1 << 1 | 1 << 7; // timestamp, source, domain
    if at != b.len() || seen & REQUIRED != REQUIRED {
        return None;
    }
    Some(l)
}

/// Where the first quote, backslash or control character of `s` is: the end of a string without escapes, or
/// of its plain start. Eight bytes at a time (the lowest flagged byte of each test is exact).
fn plain_len(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let mut words = s.chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let w = u64::from_le_bytes(word.try_into().ok()?);
        let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        let found = zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\'))) | below_space;
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    words.remainder().iter().position(|c| matches!(c, b'"' | b'\\' | 0..=0x1f)).map(|p| at + p)
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
    fn plain_len_finds_the_first_quote_backslash_or_control_character() {
        let want = |s: &[u8]| s.iter().position(|c| matches!(c, b'"' | b'\\' | 0..=0x1f));
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for len in 0..40 {
            for _ in 0..500 {
                let s: Vec<u8> = (0..len)
                    .map(|_| {
                        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        [b'a', b'"', b'\\', 0x1f, 0x20, 0x21, 0x7f, 0x80, 0xff, 0x00, b'!', b'#', b']', b'[']
                            [(rng >> 59) as usize % 14]
                    })
                    .collect();
                assert_eq!(plain_len(&s), want(&s), "{s:?}");
            }
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
    fn a_batch_in_time_order_numbers_its_values_as_they_first_appear() {
        let record = |ts: i64, domain: &str| {
            let mut dims: [String; 14] = Default::default();
            dims[7] = domain.to_string();
            AccessRecord { ts_ms: ts, dims, metrics: [ts as u64; 8] }
        };
        let records = [record(3, "c"), record(1, "a"), record(2, "b"), record(1, "c"), record(2, "a")];
        let batch = AccessBatch::from_records(&records);
        assert_eq!(batch.dims[7].values, ["c", "a", "b"]);
        let sorted = batch.by_time().unwrap();
        assert_eq!(sorted.ts_ms, [1, 1, 2, 2, 3]);
        // Stable: records of one time keep their order.
        assert_eq!(sorted.dims[7].values, ["a", "c", "b"]);
        assert_eq!(sorted.dims[7].ids, [0, 1, 2, 0, 1]);
        assert_eq!(sorted.metrics[0], [1, 1, 2, 2, 3]);
        assert_eq!(sorted.by_time(), None);
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
