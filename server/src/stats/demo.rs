//! Demo traffic: weeks of realistic delivery statistics and security events for the demo properties —
//! diurnal and weekly patterns, country, browser and device mixes, cache hit ratios, status codes, bandwidth
//! and timings, and WAF and traffic-shaping events that follow the properties' security rules and network
//! lists. Deterministic for a given seed and end time.

use edge_api::{config::PropertyConfig, stats::format_time};

use super::{AccessBatch, AccessRecord, SecurityBatch, SecurityRecord, StatsEngine};
use crate::store::CustomerId;

/// How much traffic to make.
#[derive(Debug, Clone, Copy)]
pub struct Volume {
    /// Days of history, ending at the end time.
    pub days: i64,
    /// Records per 5-minute slot in the last week (older days get hourly records).
    pub records_per_slot: usize,
    pub seed: u64,
}

impl Volume {
    /// What `serve --demo` makes: 35 days.
    pub const FULL: Volume = Volume { days: 35, records_per_slot: 40, seed: 7 };
    /// A little, for tests.
    pub const SMALL: Volume = Volume { days: 2, records_per_slot: 8, seed: 7 };
}

/// SplitMix64: small, fast, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Picks from weighted choices.
    fn pick<'a, T>(&mut self, items: &'a [(T, f64)]) -> &'a T {
        let total: f64 = items.iter().map(|(_, w)| w).sum();
        let mut x = self.unit() * total;
        for (item, w) in items {
            if x < *w {
                return item;
            }
            x -= w;
        }
        &items[items.len() - 1].0
    }

    /// A Zipf-like rank in 0..n (rank 0 most frequent).
    fn zipf(&mut self, n: usize) -> usize {
        ((self.unit().powf(2.2)) * n as f64) as usize % n.max(1)
    }
}

const COUNTRIES: [((&str, &str), f64); 14] = [
    (("United States", "US"), 30.0),
    (("Germany", "DE"), 12.0),
    (("United Kingdom", "GB"), 10.0),
    (("France", "FR"), 8.0),
    (("India", "IN"), 8.0),
    (("Brazil", "BR"), 6.0),
    (("Japan", "JP"), 6.0),
    (("Canada", "CA"), 5.0),
    (("Netherlands", "NL"), 4.0),
    (("Australia", "AU"), 3.0),
    (("Spain", "ES"), 3.0),
    (("Nigeria", "NG"), 2.0),
    (("Russia", "RU"), 2.0),
    (("Vietnam", "VN"), 1.0),
];
const BROWSERS: [(&str, f64); 6] =
    [("Chrome", 55.0), ("Safari", 22.0), ("Firefox", 8.0), ("Edge", 7.0), ("Samsung Internet", 4.0), ("Other", 4.0)];

/// Device type, operating system.
fn device(rng: &mut Rng) -> (&'static str, &'static str) {
    match *rng.pick(&[("Desktop", 45.0), ("Mobile", 48.0), ("Tablet", 7.0)]) {
        "Desktop" => ("Desktop", *rng.pick(&[("Windows", 70.0), ("macOS", 24.0), ("Linux", 6.0)])),
        kind => (kind, *rng.pick(&[("Android", 62.0), ("iOS", 38.0)])),
    }
}

/// Content type, typical object size in bytes, and whether it is cacheable.
fn content(rng: &mut Rng, property: &str) -> (&'static str, u64, bool) {
    match property {
        "media-cdn" => *rng.pick(&[
            (("video/mp4", 2_400_000, true), 60.0),
            (("image/jpeg", 90_000, true), 35.0),
            (("application/json", 2_000, false), 5.0),
        ]),
        "api-gateway" => *rng.pick(&[(("application/json", 3_500, false), 90.0), (("text/plain", 300, false), 10.0)]),
        _ => *rng.pick(&[
            (("text/html", 45_000, false), 22.0),
            (("image/webp", 60_000, true), 30.0),
            (("image/jpeg", 110_000, true), 12.0),
            (("text/css", 30_000, true), 10.0),
            (("application/javascript", 120_000, true), 16.0),
            (("application/json", 4_000, false), 10.0),
        ]),
    }
}

/// Traffic level of a moment, relative: a daily wave peaking in the evening (UTC) and quieter weekends
/// (except for media, which is busier then).
fn level(ms: i64, property: &str) -> f64 {
    let hour = (ms.rem_euclid(86_400_000)) as f64 / 3_600_000.0;
    let daily = 0.55 + 0.45 * ((hour - 20.0) / 24.0 * std::f64::consts::TAU).cos();
    let weekday = (ms.div_euclid(86_400_000) + 4).rem_euclid(7); // 0 = Sunday
    let weekend = weekday == 0 || weekday == 6;
    let weekly = match (property, weekend) {
        ("media-cdn", true) => 1.3,
        ("api-gateway", true) => 0.6,
        (_, true) => 0.85,
        _ => 1.0,
    };
    daily * weekly
}

fn access_record(rng: &mut Rng, ts_ms: i64, property: &PropertyConfig, scale: f64) -> AccessRecord {
    let name = property.name.as_str();
    let domains: Vec<String> = property
        .host_patterns
        .iter()
        .map(|h| h.pattern.strip_prefix("*.").map(|d| format!("img.{d}")).unwrap_or_else(|| h.pattern.clone()))
        .collect();
    let domain = domains[rng.zipf(domains.len())].clone();
    let (country, code) = *rng.pick(&COUNTRIES);
    let browser = *rng.pick(&BROWSERS);
    let (device_type, device_os) = device(rng);
    let (content_type, size, cacheable) = content(rng, name);
    let cache_status: u8 = if cacheable {
        *rng.pick(&[(1, 86.0), (2, 9.0), (3, 4.0), (5, 1.0)])
    } else {
        *rng.pick(&[(4, 80.0), (2, 19.0), (5, 1.0)])
    };
    let status: u16 = *rng.pick(&[(200, 86.0), (304, 6.0), (301, 2.0), (404, 4.0), (403, 0.8), (500, 0.7), (503, 0.5)]);
    let method = if name == "api-gateway" {
        *rng.pick(&[("GET", 70.0), ("POST", 25.0), ("PUT", 5.0)])
    } else {
        *rng.pick(&[("GET", 96.0), ("HEAD", 3.0), ("POST", 1.0)])
    };
    let url = match content_type {
        "video/mp4" => format!("/video/{}/master.mp4", 1000 + rng.zipf(400)),
        "image/jpeg" | "image/webp" => {
            format!("/images/p{}.{}", rng.zipf(600), if content_type == "image/webp" { "webp" } else { "jpg" })
        }
        "text/css" => format!("/static/css/site.{}.css", rng.zipf(4)),
        "application/javascript" => format!("/static/js/app.{}.js", rng.zipf(6)),
        "application/json" if name == "api-gateway" => {
            format!("/v1/{}", ["catalog", "orders", "users", "search", "cart", "prices"][rng.zipf(6)])
        }
        "application/json" => format!("/api/{}", ["cart", "recommendations", "stock"][rng.zipf(3)]),
        _ => format!("/{}", ["", "products", "checkout", "account", "search", "help"][rng.zipf(6)]),
    };
    let hits = (1.0 + scale * (0.5 + rng.unit()) * 2_000.0).round() as u64;
    let hit = cache_status == 1;
    let bytes = hits * size * (80 + rng.next() % 40) / 100;
    let origin = if hit { 0 } else { bytes };
    let latency = if hit { 8 + rng.next() % 20 } else { 80 + rng.next() % 220 };
    let ttfb = if hit { latency / 2 + 2 } else { latency * 3 / 4 };
    AccessRecord {
        ts_ms,
        dims: [
            browser.to_string(),
            cache_status.to_string(),
            content_type.to_string(),
            country.to_string(),
            code.to_string(),
            device_os.to_string(),
            device_type.to_string(),
            domain,
            if hit { "1".into() } else { rng.pick(&[("2", 70.0), ("3", 20.0), ("4", 10.0)]).to_string() },
            status.to_string(),
            name.to_string(),
            method.to_string(),
            if rng.unit() < 0.95 { "2".into() } else { "1".into() },
            url,
        ],
        metrics: [
            origin / 2 + origin / 10,
            hits,
            bytes,
            origin / 3,
            origin,
            hits * latency,
            hits * ttfb,
            hits * (latency + size / 50_000),
        ],
    }
}

/// Security events of one slot, following the property's rules: WAF signatures hit by scanners (blocked or
/// logged per the rule), blocked addresses of the scanner list and embargoed countries, rate-limited
/// clients, warned regions.
fn security_events(rng: &mut Rng, ts_ms: i64, property: &PropertyConfig, scale: f64, out: &mut Vec<SecurityRecord>) {
    let domain = property
        .host_patterns
        .iter()
        .find(|h| !h.pattern.starts_with('*'))
        .map(|h| h.pattern.clone())
        .unwrap_or_default();
    let mut push = |rng: &mut Rng,
                    source: &str,
                    action: &str,
                    waf_action: &str,
                    rule: &str,
                    severity: &str,
                    ip: String,
                    country: &str,
                    path: &str| {
        let t = ts_ms + (rng.next() % 300_000) as i64;
        out.push(SecurityRecord {
            ts_ms: t,
            dims: [
                source.into(),
                if source == "waf" { "WAF".into() } else { "CUSTOM".into() },
                action.into(),
                severity.into(),
                waf_action.into(),
                rule.into(),
                domain.clone(),
                property.name.clone(),
                ip.clone(),
                ip,
                rng.pick(&[("curl", 30.0), ("python-requests", 25.0), ("Go-http-client", 15.0), ("Chrome", 30.0)])
                    .to_string(),
                country.into(),
                rng.pick(&[("4134", 20.0), ("16509", 30.0), ("14061", 20.0), ("24940", 15.0), ("9009", 15.0)])
                    .to_string(),
                path.into(),
            ],
        });
    };
    let n = |rng: &mut Rng, mean: f64| -> usize { (mean * scale * (0.5 + rng.unit())).round() as usize };
    let paths = ["/login", "/wp-admin/", "/.env", "/search?q=", "/api/users", "/checkout", "/../../etc/passwd"];
    for rule in &property.security.waf_rules {
        if !rule.enabled {
            continue;
        }
        let mean = match rule.severity.as_str() {
            "CRITICAL" => 1.2,
            "HIGH" => 0.9,
            "MEDIUM" => 1.5,
            _ => 0.6,
        };
        for _ in 0..n(rng, mean) {
            let (country, ip) = if rng.unit() < 0.6 {
                ("NL", format!("198.51.100.{}", rng.next() % 254 + 1))
            } else {
                (
                    rng.pick(&[("CN", 30.0), ("RU", 25.0), ("US", 25.0), ("BR", 20.0)]).to_owned(),
                    format!("203.0.113.{}", rng.next() % 126 + 1),
                )
            };
            let path = paths[rng.zipf(paths.len())];
            push(rng, "waf", &rule.action, &rule.action, &rule.rule_id, &rule.severity, ip, country, path);
        }
    }
    for rule in &property.security.traffic_shaping_rules {
        if !rule.enabled {
            continue;
        }
        let key = format!("ts-{}", rule.name.to_lowercase().replace(' ', "-"));
        match (rule.action.as_str(), rule.match_type.as_str()) {
            (action, "NETWORK_LIST") if rule.values.iter().any(|v| v.contains("scanners")) => {
                for _ in 0..n(rng, 1.0) {
                    let ip = format!("198.51.100.{}", rng.next() % 254 + 1);
                    push(rng, "trafficshaping", action, "", &key, "HIGH", ip, "NL", "/");
                }
            }
            (action, "NETWORK_LIST") if rule.values.iter().any(|v| v.contains("embargo")) => {
                for _ in 0..n(rng, 0.5) {
                    let country = *rng.pick(&[("IR", 40.0), ("KP", 5.0), ("SY", 25.0), ("CU", 30.0)]);
                    let ip = format!("100.{}.{}.{}", rng.next() % 200, rng.next() % 255, rng.next() % 255);
                    push(rng, "trafficshaping", action, "", &key, "MEDIUM", ip, country, "/");
                }
            }
            (action, "NETWORK_LIST") => {
                for _ in 0..n(rng, 0.3) {
                    let ip = format!("100.64.10.{}", rng.next() % 254 + 1);
                    push(rng, "trafficshaping", action, "", &key, "LOW", ip, "DE", "/v1/catalog");
                }
            }
            ("RATE_LIMIT", _) => {
                for _ in 0..n(rng, 1.4) {
                    let country = *rng.pick(&[("US", 30.0), ("CN", 25.0), ("BR", 25.0), ("RU", 20.0)]);
                    let ip = format!("45.155.205.{}", rng.next() % 40 + 1);
                    push(rng, "trafficshaping", "RATE_LIMIT", "", &key, "MEDIUM", ip, country, "/checkout");
                }
            }
            (action, "GEO") => {
                for _ in 0..n(rng, 0.6) {
                    let country = rule.values[rng.zipf(rule.values.len())].clone();
                    let ip = format!("102.{}.{}.{}", rng.next() % 255, rng.next() % 255, rng.next() % 255);
                    push(rng, "trafficshaping", action, "", &key, "LOW", ip, &country, "/");
                }
            }
            _ => {}
        }
    }
}

/// Makes and ingests `volume` of traffic for `properties`, ending at `end_ms`. Returns (access records,
/// security events) ingested.
pub fn seed(
    engine: &dyn StatsEngine,
    customer: CustomerId,
    properties: &[PropertyConfig],
    end_ms: i64,
    volume: Volume,
) -> anyhow::Result<(u64, u64)> {
    let mut rng = Rng(volume.seed);
    let end = end_ms - end_ms.rem_euclid(300_000);
    let start = end - volume.days * 86_400_000;
    let week_ago = end - 7 * 86_400_000;
    let (mut n_access, mut n_security) = (0u64, 0u64);
    let mut t = start;
    let mut batch = Vec::new();
    let mut events = Vec::new();
    while t < end {
        // Older than a week: hourly records (only hourly and daily rollups keep that far back).
        let step = if t < week_ago { 3_600_000 } else { 300_000 };
        let slots = (step / 300_000) as f64;
        for property in properties {
            let scale = level(t, &property.name) * slots.sqrt();
            let share = match property.name.as_str() {
                "www-shop" => 0.5,
                "media-cdn" => 0.3,
                _ => 0.2,
            };
            let records = ((volume.records_per_slot as f64) * share).ceil() as usize;
            for _ in 0..records {
                let ts = t + (rng.next() % step as u64) as i64;
                batch.push(access_record(&mut rng, ts, property, scale));
            }
            security_events(&mut rng, t, property, level(t, &property.name) * slots, &mut events);
        }
        t += step;
        if batch.len() >= 20_000 || t >= end {
            engine.ingest_access(customer, &AccessBatch::from_records(&batch), None)?;
            n_access += batch.len() as u64;
            batch.clear();
            engine.ingest_security(customer, &SecurityBatch::from_records(&events), None)?;
            n_security += events.len() as u64;
            events.clear();
        }
    }
    tracing::debug!(from = %format_time(start), to = %format_time(end), n_access, n_security, "demo traffic");
    Ok((n_access, n_security))
}
