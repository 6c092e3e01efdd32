//! What both statistics comparisons share — `edge-bench stats` (the embedded engine against DuckDB) and its
//! `--engine clickhouse` run: the benchmark customers' password, the representative queries in the API and in
//! DuckDB's SQL, the Python that times DuckDB, the access-log columns and rollups as DuckDB SQL, percentiles.

use edge_api::stats::{Family, Granularity, format_time};

pub(crate) const PASSWORD: &str = "benchmark-password";
pub(crate) const DAY: i64 = 86_400_000;
pub(crate) const WARMUP: usize = 3;

pub(crate) fn csv_time(ms: i64) -> String {
    format_time(ms).replace('T', " ")
}

pub(crate) const EVENT_COLUMNS: [&str; 7] =
    ["client_ip", "client_country_code", "event_action", "rule_id", "event_severity", "domain", "request_path"];

pub(crate) struct Query {
    pub name: &'static str,
    pub ours: String,
    pub duck: Vec<String>,
}

pub(crate) fn queries(end: i64) -> Vec<Query> {
    let t = |ms: i64| format_time(ms);
    let d = |ms: i64| csv_time(ms);
    // "A week" of 5-minute data starts half an hour later than the dataset: the server refuses a span
    // reaching before what it keeps (a week and one bucket before its clock), and the run takes minutes.
    let week = end - 7 * DAY + 1_800_000;
    let month = end - 30 * DAY;
    let day = end - end.rem_euclid(DAY);
    let events_from = day - 3 * DAY;
    vec![
        Query {
            name: "5-minute, a week, by country/property",
            ours: format!(
                "/stats/data?starttime={}&endtime={}&dimensions=country,property&metrics=hits,last_mile_bandwidth_bytes&granularity=5minute",
                t(week),
                t(end)
            ),
            duck: vec![
                format!(
                    "SELECT ts, ts + INTERVAL 5 MINUTE, country, property, hits, last_mile_bandwidth_bytes FROM r5_cp WHERE ts >= '{}' AND ts < '{}' ORDER BY ts LIMIT 2500",
                    d(week),
                    d(end)
                ),
                format!("SELECT count(*) FROM r5_cp WHERE ts >= '{}' AND ts < '{}'", d(week), d(end)),
            ],
        },
        Query {
            name: "5-minute, a week, by country/property, sorted -hits",
            ours: format!(
                "/stats/data?starttime={}&endtime={}&dimensions=country,property&metrics=hits,last_mile_bandwidth_bytes&granularity=5minute&sortby=-hits",
                t(week),
                t(end)
            ),
            duck: vec![
                format!(
                    "SELECT ts, ts + INTERVAL 5 MINUTE, country, property, hits, last_mile_bandwidth_bytes FROM r5_cp WHERE ts >= '{}' AND ts < '{}' ORDER BY hits DESC LIMIT 2500",
                    d(week),
                    d(end)
                ),
                format!("SELECT count(*) FROM r5_cp WHERE ts >= '{}' AND ts < '{}'", d(week), d(end)),
            ],
        },
        Query {
            name: "hourly, a month, by domain/http_status_code, filtered",
            ours: format!(
                "/stats/data?starttime={}&endtime={}&dimensions=domain,http_status_code&metrics=hits,request_time_ms&granularity=hour&filters=http_status_code!%3D200;domain!%3Dd001.example",
                t(month),
                t(end)
            ),
            duck: vec![
                format!(
                    "SELECT ts, ts + INTERVAL 1 HOUR, domain, http_status_code, hits, request_time_ms FROM rh_ds WHERE ts >= '{}' AND ts < '{}' AND http_status_code <> 200 AND domain <> 'd001.example' ORDER BY ts LIMIT 2500",
                    d(month),
                    d(end)
                ),
                format!(
                    "SELECT count(*) FROM rh_ds WHERE ts >= '{}' AND ts < '{}' AND http_status_code <> 200 AND domain <> 'd001.example'",
                    d(month),
                    d(end)
                ),
            ],
        },
        Query {
            name: "daily top-20 URLs, 30 days",
            ours: format!(
                "/stats/topk/url/data?starttime={}&endtime={}&dimensions=customer,property,request_url&metrics=hits",
                t(day - 30 * DAY),
                t(day)
            ),
            duck: vec![format!(
                "SELECT ts, property, request_url, hits FROM (SELECT *, row_number() OVER (PARTITION BY ts ORDER BY hits DESC) AS rn FROM urls WHERE ts >= '{}' AND ts < '{}') WHERE rn <= 20 ORDER BY ts, hits DESC",
                d(day - 30 * DAY),
                d(day)
            )],
        },
        Query {
            name: "security events, newest first, limit 10000",
            ours: format!(
                "/stats/security/events/data?starttime={}&endtime={}&dimensions={}&sortby=-event_timestamp_ms&limit=10000",
                t(events_from),
                t(end),
                EVENT_COLUMNS.join(",")
            ),
            duck: vec![
                format!(
                    "SELECT ts, {} FROM events WHERE ts >= '{}' AND ts < '{}' ORDER BY ts DESC LIMIT 10000",
                    EVENT_COLUMNS.join(", "),
                    d(events_from),
                    d(end)
                ),
                format!("SELECT count(*) FROM events WHERE ts >= '{}' AND ts < '{}'", d(events_from), d(end)),
            ],
        },
    ]
}

/// Python for both DuckDB scripts: the milliseconds of each of `runs` runs of the statements `q` (a query and
/// what it reads), after `warmup` runs.
pub(crate) const DUCKDB_TIMED: &str = r#"
import time

def timed(con, q, warmup, runs):
    times = []
    for i in range(warmup + runs):
        t = time.perf_counter()
        for sql in q:
            con.execute(sql).fetchall()
        if i >= warmup:
            times.append((time.perf_counter() - t) * 1000)
    return times
"#;

/// DuckDB's column types for the access-log NDJSON (every field the engine reads, absent ones NULL).
pub(crate) fn duckdb_columns() -> String {
    let mut cols = vec!["'timestamp': 'TIMESTAMP'".to_string()];
    for d in edge_api::stats::DELIVERY_DIMENSIONS.iter().chain(["request_url"].iter()) {
        let t = if edge_api::stats::INTEGER_DIMENSIONS.contains(d) { "INTEGER" } else { "VARCHAR" };
        cols.push(format!("'{d}': '{t}'"));
    }
    cols.extend(edge_api::stats::DELIVERY_METRICS.iter().map(|m| format!("'{m}': 'UBIGINT'")));
    format!("{{{}}}", cols.join(", "))
}

/// One `CREATE TABLE … AS SELECT … GROUP BY` per rollup the engine builds from access logs: every delivery
/// grouping set at each granularity (and each granularity alone), the top-K URL sets by day, and the request
/// trends (every request as ALLOW, the country code as the client's).
pub(crate) fn duckdb_rollups() -> Vec<String> {
    let mut out = Vec::new();
    let bucket = |g: Granularity| match g {
        Granularity::FiveMinute => "time_bucket(INTERVAL 5 MINUTE, timestamp)",
        Granularity::Hour => "date_trunc('hour', timestamp)",
        Granularity::Day => "date_trunc('day', timestamp)",
    };
    let all_metrics: Vec<String> =
        edge_api::stats::DELIVERY_METRICS.iter().map(|m| format!("sum({m}) AS {m}")).collect();
    let mut add = |g: Granularity, dims: Vec<String>, metrics: &str| {
        let n = out.len();
        let select = std::iter::once(format!("{} AS bucket", bucket(g))).chain(dims).collect::<Vec<_>>().join(", ");
        out.push(format!("CREATE TABLE rollup{n} AS SELECT {select}, {metrics} FROM logs GROUP BY ALL"));
    };
    for g in Granularity::ALL {
        add(g, Vec::new(), &all_metrics.join(", "));
        for set in g.delivery_groupings() {
            add(g, set.split('/').map(String::from).collect(), &all_metrics.join(", "));
        }
    }
    for set in edge_api::stats::TOPK_URL_GROUPINGS {
        add(
            Granularity::Day,
            set.split('/').filter(|d| *d != "customer").map(String::from).collect(),
            "sum(hits) AS hits",
        );
    }
    for set in Family::RequestTrends.groupings() {
        let mut parts = set.split('/');
        let g = Granularity::parse(parts.next().unwrap_or("day")).unwrap_or(Granularity::Day);
        let dims = parts
            .map(|d| match d {
                "waf_action" => "'ALLOW' AS waf_action".to_string(),
                "client_country_code" => "country_code AS client_country_code".to_string(),
                d => d.to_string(),
            })
            .collect();
        add(g, dims, "sum(hits) AS hits");
    }
    out
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}
