//! The NDJSON the ingestion measurements post: access logs and security events shaped like a CDN's (time
//! ordered, skewed popularity, fields that go together), and the old uniform worst case, where every field is
//! drawn independently and nearly every record makes new rows in every rollup.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::Path,
};

use anyhow::Result;
use edge_api::stats::format_time;

const DAY: i64 = 86_400_000;
const HOUR: i64 = 3_600_000;

/// A small reproducible generator (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An index into `weights`, drawn in proportion to them.
    fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut x = self.below(u64::from(total)) as u32;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }
}

/// Ranks 0..n drawn with probability proportional to 1 / (rank + 1)^s: popularity on the web (a few URLs,
/// domains and countries take most requests, and a long tail the rest).
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Zipf {
        let mut cdf = Vec::with_capacity(n);
        let mut sum = 0.0;
        for k in 0..n {
            sum += 1.0 / ((k + 1) as f64).powf(s);
            cdf.push(sum);
        }
        cdf.iter_mut().for_each(|c| *c /= sum);
        Zipf { cdf }
    }

    fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|c| *c <= u).min(self.cdf.len() - 1)
    }
}

/// Which data an ingestion measurement posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Like a CDN's logs, in time order over the last hour: see [`write_access`] and [`write_security`].
    Realistic,
    /// The same records, their times spread over the last `span` and posted in random order (a shipper's
    /// backlog, several sources interleaved, a backfill).
    Shuffled(Span),
    /// The same records, 90% live (in time order over the last hour) and 10% one to six hours late (edge
    /// servers flushing late), interleaved.
    Late,
    /// Every field drawn independently and uniformly: the worst case for rollups.
    Uniform,
}

/// How far back shuffled records reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Hour,
    Day,
    FiveDays,
}

impl Span {
    fn millis(self) -> i64 {
        match self {
            Span::Hour => HOUR,
            Span::Day => DAY,
            Span::FiveDays => 5 * DAY,
        }
    }
}

impl Shape {
    /// Every shape, by name.
    pub const ALL: [Shape; 6] = [
        Shape::Realistic,
        Shape::Shuffled(Span::Hour),
        Shape::Shuffled(Span::Day),
        Shape::Shuffled(Span::FiveDays),
        Shape::Late,
        Shape::Uniform,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Shape::Realistic => "hour-in-order",
            Shape::Shuffled(Span::Hour) => "hour-shuffled",
            Shape::Shuffled(Span::Day) => "day-shuffled",
            Shape::Shuffled(Span::FiveDays) => "5-days-shuffled",
            Shape::Late => "late-arrivals",
            Shape::Uniform => "uniform",
        }
    }

    /// What the benchmark's tables say of the records' times.
    pub fn description(self) -> &'static str {
        match self {
            Shape::Realistic => "last hour, in order",
            Shape::Shuffled(Span::Hour) => "last hour, shuffled",
            Shape::Shuffled(Span::Day) => "last 24 hours, shuffled",
            Shape::Shuffled(Span::FiveDays) => "5 days, shuffled",
            Shape::Late => "90% live, 10% 1–6 hours late",
            Shape::Uniform => "uniform, last day in order",
        }
    }

    pub fn parse(s: &str) -> Option<Shape> {
        match s {
            "realistic" => Some(Shape::Realistic),
            _ => Shape::ALL.into_iter().find(|shape| shape.name() == s),
        }
    }
}

pub fn domain(i: u64) -> String {
    format!("d{i:03}.example")
}

pub fn property(i: u64) -> String {
    format!("prop-{i:02}")
}

/// Countries by their share of a global CDN's traffic (most first), with their ISO codes.
const COUNTRIES: [(&str, &str); 40] = [
    ("United States", "US"),
    ("Germany", "DE"),
    ("United Kingdom", "GB"),
    ("Japan", "JP"),
    ("France", "FR"),
    ("Brazil", "BR"),
    ("India", "IN"),
    ("Canada", "CA"),
    ("Netherlands", "NL"),
    ("Italy", "IT"),
    ("Spain", "ES"),
    ("Australia", "AU"),
    ("South Korea", "KR"),
    ("Mexico", "MX"),
    ("Poland", "PL"),
    ("Sweden", "SE"),
    ("Switzerland", "CH"),
    ("Turkey", "TR"),
    ("Indonesia", "ID"),
    ("Singapore", "SG"),
    ("Belgium", "BE"),
    ("Austria", "AT"),
    ("Argentina", "AR"),
    ("Taiwan", "TW"),
    ("Denmark", "DK"),
    ("Norway", "NO"),
    ("Ireland", "IE"),
    ("Finland", "FI"),
    ("Portugal", "PT"),
    ("Czechia", "CZ"),
    ("South Africa", "ZA"),
    ("Israel", "IL"),
    ("Chile", "CL"),
    ("Colombia", "CO"),
    ("Romania", "RO"),
    ("Vietnam", "VN"),
    ("Thailand", "TH"),
    ("Philippines", "PH"),
    ("New Zealand", "NZ"),
    ("Greece", "GR"),
];

/// Clients: device type, operating system, browser, and their share of requests.
const CLIENTS: [(&str, &str, &str, u32); 14] = [
    ("Mobile", "Android", "Chrome", 300),
    ("Mobile", "iOS", "Safari", 200),
    ("Desktop", "Windows", "Chrome", 180),
    ("Desktop", "Windows", "Edge", 60),
    ("Desktop", "macOS", "Safari", 50),
    ("Desktop", "macOS", "Chrome", 50),
    ("Mobile", "Android", "Samsung Internet", 40),
    ("Mobile", "iOS", "Chrome", 40),
    ("Tablet", "iOS", "Safari", 30),
    ("Desktop", "Windows", "Firefox", 20),
    ("Desktop", "Linux", "Firefox", 10),
    ("Tablet", "Android", "Chrome", 10),
    ("Desktop", "Linux", "Googlebot", 8),
    ("Desktop", "Linux", "curl", 2),
];

/// Kinds of object: content type, URL suffix, share of URLs (of 100), typical size in bytes.
const OBJECTS: [(&str, &str, u64, u64); 7] = [
    ("image/webp", "webp", 35, 60_000),
    ("image/jpeg", "jpg", 10, 120_000),
    ("application/javascript", "js", 15, 40_000),
    ("text/css", "css", 5, 20_000),
    ("application/json", "json", 20, 3_000),
    ("text/html", "html", 10, 25_000),
    ("video/mp4", "m4s", 5, 900_000),
];

/// Status codes and their shares (of 10,000) for an object of the site.
const STATUSES: [(u16, u32); 10] = [
    (200, 8_560),
    (304, 700),
    (206, 150),
    (301, 100),
    (302, 80),
    (404, 300),
    (403, 40),
    (500, 20),
    (502, 10),
    (503, 40),
];

/// cache_status 1 hit, 2 miss, 3 expired, 4 bypassed, 5 failure, 0 unknown: shares of 1,000.
const CACHE: [u32; 6] = [5, 850, 100, 25, 15, 5];

const URLS_PER_PROPERTY: usize = 20_000;
const DOMAINS: usize = 250;
const PROPERTIES: u64 = 50;

/// An FNV hash: what belongs to a URL (its kind, its size) stays the same on every request of it.
fn fnv(mut h: u64, x: u64) -> u64 {
    for b in x.to_le_bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// NDJSON access-log records ending at `end`.
///
/// Realistic: one record a request, in time order over the hour before `end` (a second of jitter, as logs of
/// several edge servers interleave); 250 domains of 50 properties (each domain belongs to one property) by
/// Zipf popularity (s = 1.1); 20,000 URLs a property, Zipf (s = 1.0), each URL always of the same content type
/// and size; 40 countries by traffic share (Zipf, s = 1.3) with their own country codes; 14 device/OS/browser
/// combinations by share (Android Chrome, iOS Safari, Windows Chrome … a few bots); 85% cache hits; 86% status
/// 200, 7% 304, 3% 404, a few redirects and errors; 97% GET, 96% HTTPS; the eight metrics from the object's
/// size and the cache status.
///
/// Uniform: every field drawn independently and uniformly over the last day (250 domains, 50 properties, 60
/// countries and 60 unrelated country codes, 3,000 URLs, 12 status codes …), a record standing for 1 to 20
/// requests.
pub fn write_access(path: &Path, n: u64, end: i64, shape: Shape) -> Result<()> {
    let mut out = BufWriter::with_capacity(1 << 22, File::create(path)?);
    match shape {
        Shape::Uniform => uniform_access(&mut out, n, end)?,
        _ => realistic_access(&mut out, n, end, times(n, end, shape))?,
    }
    out.flush()?;
    Ok(())
}

/// The records' times of a shape other than [`Shape::Realistic`] (None: that one's, which the generators
/// compute as they go).
fn times(n: u64, end: i64, shape: Shape) -> Option<Vec<i64>> {
    let mut rng = Rng(23);
    let spread = |span: i64, i: u64, rng: &mut Rng| {
        let start = end - span;
        (start + (i128::from(i) * i128::from(span) / i128::from(n)) as i64 - rng.below(1000) as i64).max(start)
    };
    match shape {
        Shape::Realistic | Shape::Uniform => None,
        Shape::Shuffled(span) => {
            let mut ts: Vec<i64> = (0..n).map(|i| spread(span.millis(), i, &mut rng)).collect();
            for i in (1..ts.len()).rev() {
                ts.swap(i, rng.below(i as u64 + 1) as usize);
            }
            Some(ts)
        }
        Shape::Late => Some(
            (0..n)
                .map(|i| {
                    let live = spread(HOUR, i, &mut rng);
                    if rng.below(10) == 0 { live - HOUR - rng.below(5 * HOUR as u64) as i64 } else { live }
                })
                .collect(),
        ),
    }
}

fn realistic_access(out: &mut impl Write, n: u64, end: i64, times: Option<Vec<i64>>) -> Result<()> {
    let mut rng = Rng(11);
    let domains = Zipf::new(DOMAINS, 1.1);
    let urls = Zipf::new(URLS_PER_PROPERTY, 1.0);
    let countries = Zipf::new(COUNTRIES.len(), 1.3);
    let clients: Vec<u32> = CLIENTS.iter().map(|c| c.3).collect();
    let statuses: Vec<u32> = STATUSES.iter().map(|s| s.1).collect();
    let kinds: Vec<u32> = OBJECTS.iter().map(|o| o.2 as u32).collect();
    let start = end - HOUR;
    for i in 0..n {
        let mut ts = (start + (i as i64 * HOUR) / n as i64 - rng.below(1000) as i64).max(start);
        if let Some(times) = &times {
            ts = times[i as usize];
        }
        let d = domains.sample(&mut rng) as u64;
        let p = d % PROPERTIES;
        let u = urls.sample(&mut rng) as u64;
        let url_hash = fnv(fnv(0xcbf2_9ce4_8422_2325, p), u);
        let kind = {
            let mut r = Rng(url_hash);
            r.weighted(&kinds)
        };
        let (content_type, suffix, _, typical) = OBJECTS[kind];
        let size = typical / 4 + url_hash % (typical * 2);
        let (country, code) = COUNTRIES[countries.sample(&mut rng)];
        let (device, os, browser, _) = CLIENTS[rng.weighted(&clients)];
        let mut status = STATUSES[rng.weighted(&statuses)].0;
        if status == 206 && suffix != "m4s" {
            status = 200;
        }
        let cache = rng.weighted(&CACHE) as u64;
        let request_type = match rng.below(100) {
            0..=96 => "GET",
            97 | 98 => "HEAD",
            _ => "POST",
        };
        let scheme = if rng.below(100) < 96 { 2 } else { 1 };
        let bytes = match status {
            200 | 206 if request_type != "HEAD" => size,
            _ => 300 + rng.below(200),
        };
        let miss = cache != 1;
        let origin_ms = if miss { 20 + rng.below(180) } else { 0 };
        let ttfb = 1 + rng.below(15) + origin_ms;
        let ttlb = ttfb + bytes / 50_000 + rng.below(10);
        writeln!(
            out,
            r#"{{"timestamp":"{}.{:03}","domain":"{}","property":"{}","country":"{country}","country_code":"{code}","browser_name":"{browser}","device_type":"{device}","device_os":"{os}","content_type":"{content_type}","request_type":"{request_type}","cache_status":{cache},"gna_cache_status":{},"scheme":{scheme},"http_status_code":{status},"request_url":"/{}/{u}.{suffix}","hits":1,"first_mile_bandwidth_bytes":{},"last_mile_bandwidth_bytes":{bytes},"middle_mile_bandwidth_bytes":{},"original_bandwidth_bytes":{},"request_time_ms":{},"time_to_first_byte_ms":{ttfb},"time_to_last_byte_ms":{ttlb}}}"#,
            format_time(ts),
            ts.rem_euclid(1000),
            domain(d),
            property(p),
            if miss { 2 } else { 1 },
            ["static", "img", "api", "media"][(url_hash >> 8) as usize % 4],
            if miss { bytes } else { 0 },
            if miss { bytes } else { 0 },
            if miss { bytes + bytes / 20 } else { 0 },
            ttlb + rng.below(3),
        )?;
    }
    Ok(())
}

const UNIFORM_STATUS: [u16; 12] = [200, 201, 204, 301, 302, 304, 400, 403, 404, 500, 502, 503];

fn uniform_access(out: &mut impl Write, n: u64, end: i64) -> Result<()> {
    let mut rng = Rng(5);
    let start = end - DAY;
    for i in 0..n {
        let ts = start + (i as i64 * DAY) / n as i64;
        let hits = 1 + rng.below(20);
        writeln!(
            out,
            r#"{{"timestamp":"{}","domain":"{}","property":"{}","country":"Country {:02}","country_code":"C{:02}","browser_name":"{}","device_type":"{}","device_os":"{}","content_type":"{}","request_type":"GET","cache_status":{},"gna_cache_status":1,"scheme":2,"http_status_code":{},"request_url":"/p/{}","hits":{hits},"last_mile_bandwidth_bytes":{},"request_time_ms":{}}}"#,
            format_time(ts),
            domain(rng.below(250)),
            property(rng.below(50)),
            rng.below(60),
            rng.below(60),
            ["Chrome", "Safari", "Firefox", "Edge"][rng.below(4) as usize],
            ["Desktop", "Mobile", "Tablet"][rng.below(3) as usize],
            ["Windows", "macOS", "Android", "iOS"][rng.below(4) as usize],
            ["text/html", "image/webp", "application/json"][rng.below(3) as usize],
            1 + rng.below(4),
            UNIFORM_STATUS[rng.below(12) as usize],
            rng.below(3000),
            hits * 30_000,
            hits * 40,
        )?;
    }
    Ok(())
}

/// WAF rules: id, severity, share of events (most first).
const RULES: usize = 400;
const SEVERITIES: [&str; 4] = ["CRITICAL", "HIGH", "MEDIUM", "LOW"];
const ATTACK_PATHS: [&str; 12] = [
    "/wp-login.php",
    "/xmlrpc.php",
    "/.env",
    "/admin",
    "/login",
    "/api/v1/login",
    "/search",
    "/cart/checkout",
    "/.git/config",
    "/phpmyadmin/index.php",
    "/api/v1/graphql",
    "/account/reset",
];
const ATTACK_CLIENTS: [&str; 6] = ["curl", "python-requests", "Go-http-client", "Chrome", "sqlmap", "Nikto"];

/// NDJSON security events ending at `end`.
///
/// Realistic: in time order over the hour before `end`; 60% WAF events (80% BLOCK, 20% WARN), 40% traffic
/// shaping (60% RATE_LIMIT, 25% BLOCK, 15% WARN); attackers are few and busy: 20,000 client addresses by Zipf
/// (s = 1.2), each always with the same country, ASN and client; 400 rules by Zipf (s = 1.3), each with one
/// severity; attacked domains by the same popularity as the access logs; a dozen favourite paths and a tail of
/// 2,000 others.
///
/// Uniform: every field independent and uniform over the last day (65,536 addresses, 400 rules, 5,000 paths,
/// 250 domains, 50 properties, 60 country codes).
pub fn write_security(path: &Path, n: u64, end: i64, shape: Shape) -> Result<()> {
    let mut out = BufWriter::with_capacity(1 << 22, File::create(path)?);
    match shape {
        Shape::Uniform => uniform_security(&mut out, n, end)?,
        _ => realistic_security(&mut out, n, end, times(n, end, shape))?,
    }
    out.flush()?;
    Ok(())
}

fn realistic_security(out: &mut impl Write, n: u64, end: i64, times: Option<Vec<i64>>) -> Result<()> {
    let mut rng = Rng(13);
    let domains = Zipf::new(DOMAINS, 1.1);
    let clients = Zipf::new(20_000, 1.2);
    let rules = Zipf::new(RULES, 1.3);
    let paths = Zipf::new(ATTACK_PATHS.len() + 2_000, 1.1);
    let start = end - HOUR;
    for i in 0..n {
        let mut ts = (start + (i as i64 * HOUR) / n as i64 - rng.below(1000) as i64).max(start);
        if let Some(times) = &times {
            ts = times[i as usize];
        }
        let waf = rng.below(100) < 60;
        let action = if waf {
            if rng.below(100) < 80 { "BLOCK" } else { "WARN" }
        } else {
            match rng.below(100) {
                0..=59 => "RATE_LIMIT",
                60..=84 => "BLOCK",
                _ => "WARN",
            }
        };
        let c = clients.sample(&mut rng) as u64;
        let who = fnv(0x1234_5678, c);
        let (_, country) = COUNTRIES[(who % 1000) as usize % COUNTRIES.len()];
        let rule = rules.sample(&mut rng);
        let path = paths.sample(&mut rng);
        let path =
            ATTACK_PATHS.get(path).map_or_else(|| format!("/p/{}", path - ATTACK_PATHS.len()), |p| p.to_string());
        let d = domains.sample(&mut rng) as u64;
        writeln!(
            out,
            r#"{{"timestamp":"{}.{:03}","source":"{}","event_type":"{}","event_action":"{action}","event_severity":"{}","waf_action":"{}","rule_id":"{}","domain":"{}","property":"{}","client_ip":"{}.{}.{}.{}","client_connection_remote_ip":"{}.{}.{}.{}","client_browser":"{}","client_country_code":"{country}","client_asn":{},"request_path":"{path}"}}"#,
            format_time(ts),
            ts.rem_euclid(1000),
            if waf { "waf" } else { "trafficshaping" },
            if waf { "CUSTOM" } else { "RATE_POLICY" },
            SEVERITIES[fnv(7, rule as u64) as usize % 4],
            if waf { action } else { "" },
            if waf { 900_000 + rule } else { 100 + rule % 20 },
            domain(d),
            property(d % PROPERTIES),
            who >> 56,
            (who >> 48) & 255,
            (who >> 40) & 255,
            (who >> 32) & 255,
            who >> 56,
            (who >> 48) & 255,
            (who >> 40) & 255,
            (who >> 32) & 255,
            ATTACK_CLIENTS[(who >> 8) as usize % ATTACK_CLIENTS.len()],
            1000 + (who >> 16) % 3000,
        )?;
    }
    Ok(())
}

fn uniform_security(out: &mut impl Write, n: u64, end: i64) -> Result<()> {
    let mut rng = Rng(7);
    let start = end - DAY;
    for i in 0..n {
        let ts = start + (i as i64 * DAY) / n as i64;
        let waf = rng.below(2) == 0;
        let action = if waf {
            ["BLOCK", "WARN"][rng.below(2) as usize]
        } else {
            ["BLOCK", "RATE_LIMIT", "WARN"][rng.below(3) as usize]
        };
        writeln!(
            out,
            r#"{{"timestamp":"{}.{:03}","source":"{}","event_type":"CUSTOM","event_action":"{action}","event_severity":"{}","waf_action":"{}","rule_id":"9{:05}","domain":"{}","property":"{}","client_ip":"198.51.{}.{}","client_connection_remote_ip":"198.51.{}.{}","client_browser":"{}","client_country_code":"C{:02}","client_asn":{},"request_path":"/path/{}"}}"#,
            format_time(ts),
            ts.rem_euclid(1000),
            if waf { "waf" } else { "trafficshaping" },
            ["LOW", "MEDIUM", "HIGH", "CRITICAL"][rng.below(4) as usize],
            if waf { action } else { "" },
            rng.below(400),
            domain(rng.below(250)),
            property(rng.below(50)),
            rng.below(256),
            rng.below(256),
            rng.below(256),
            rng.below(256),
            ["Chrome", "Safari", "Firefox", "curl"][rng.below(4) as usize],
            rng.below(60),
            1000 + rng.below(500),
            rng.below(5000),
        )?;
    }
    Ok(())
}
