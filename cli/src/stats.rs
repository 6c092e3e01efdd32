//! `edge stats` (statistics queries as CSV, JSON or a table) and `edge events` (security events, and with
//! `--follow` new ones as they arrive).

use std::{collections::HashMap, time::Duration};

use chrono::{DateTime, Utc};
use edge_api::stats::StatsResponse;
use serde_json::{Map, Value, json};

use crate::{
    client::{Client, Exit, Failure, Result},
    output::{Out, cell, csv_line, table},
};

/// The families by the names the command takes, with their data paths.
pub const FAMILIES: &[(&str, &str)] = &[
    ("delivery", "/stats/data"),
    ("topk-url", "/stats/topk/url/data"),
    ("events", "/stats/security/events/data"),
    ("waf-trends", "/stats/security/waf/trends/data"),
    ("request-trends", "/stats/security/request/trends/data"),
    ("shaping-trends", "/stats/security/trafficshaping/trends/data"),
    ("waf-topk", "/stats/security/waf/topk/{category}/data"),
    ("shaping-topk", "/stats/security/trafficshaping/topk/{category}/data"),
];

/// The data path of a query's family: `delivery`, `waf-topk:country`, …
fn data_path(family: &str) -> Result<String> {
    let (name, category) = family.split_once(':').map_or((family, None), |(n, c)| (n, Some(c)));
    let (_, path) = FAMILIES.iter().find(|(n, _)| *n == name).ok_or_else(|| {
        let names: Vec<&str> = FAMILIES.iter().map(|(n, _)| *n).collect();
        Failure::new(Exit::Usage, format!("{name:?} is not a statistics family: {}", names.join(", ")))
    })?;
    match (path.contains("{category}"), category) {
        (true, Some(c)) if !c.is_empty() && c.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            Ok(path.replace("{category}", c))
        }
        (true, _) => {
            Err(Failure::new(Exit::Usage, format!("{name} needs a category: {name}:country, {name}:ruleid, …")))
        }
        (false, None) => Ok(path.to_string()),
        (false, Some(_)) => Err(Failure::new(Exit::Usage, format!("{name} has no categories"))),
    }
}

/// The API's time format: UTC, no designator.
pub fn api_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S").to_string()
}

/// `90s`, `15m`, `24h`, `7d` as a duration.
pub fn parse_duration(text: &str) -> Result<chrono::Duration> {
    let bad = || Failure::new(Exit::Usage, format!("{text:?} is not a duration like 90s, 15m, 24h or 7d"));
    let (n, unit) = text.trim().split_at(text.trim().len().saturating_sub(1));
    let n: i64 = n.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return Err(bad()),
    };
    chrono::Duration::try_seconds(seconds).filter(|_| (0..=10 * 365 * 86_400).contains(&seconds)).ok_or_else(bad)
}

/// A time as given: `2026-01-31T00:00:00` (UTC), a date, or `now-24h`-style `-24h` back from now.
fn parse_time(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    if let Some(back) = text.strip_prefix('-') {
        return Ok(now - parse_duration(back)?);
    }
    let text = text.trim().trim_end_matches('Z');
    let full = if text.len() == 10 { format!("{text}T00:00:00") } else { text.to_string() };
    chrono::NaiveDateTime::parse_from_str(&full, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc()).map_err(|_| {
        Failure::new(Exit::Usage, format!("{text:?} is not a time: 2026-01-31T00:00:00 (UTC), 2026-01-31 or -24h"))
    })
}

pub struct Query {
    /// `delivery`, `waf-topk:country`, … or that with `?param=value&…` of the API's own.
    pub queries: Vec<String>,
    pub dimensions: Option<String>,
    pub metrics: Option<String>,
    pub granularity: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub last: String,
    pub filters: Option<String>,
    pub sortby: Option<String>,
    pub limit: Option<u64>,
    pub all: bool,
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Csv,
    Json,
}

/// Percent-encodes a query parameter's value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b',' | b':' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The request of one query: its data path and parameters (the flags, then what the query itself says).
fn request_of(q: &Query, query: &str, now: DateTime<Utc>) -> Result<String> {
    let (family, own) = query.split_once('?').map_or((query, ""), |(f, p)| (f, p));
    let path = data_path(family)?;
    let end = match &q.to {
        Some(t) => parse_time(t, now)?,
        None => now,
    };
    let start = match &q.from {
        Some(t) => parse_time(t, now)?,
        None => end - parse_duration(&q.last)?,
    };
    // Each parameter as it goes on the wire: the flags' values encoded here, the query's own as written.
    let mut params: Vec<(String, String)> =
        vec![("starttime".into(), api_time(start)), ("endtime".into(), api_time(end))];
    let topk = family.contains(':') || family == "topk-url";
    let default_granularity = if (end - start) > chrono::Duration::days(7) { "day" } else { "hour" };
    if !topk && family != "events" {
        params.push(("granularity".into(), enc(q.granularity.as_deref().unwrap_or(default_granularity))));
    }
    for (name, value) in
        [("dimensions", &q.dimensions), ("metrics", &q.metrics), ("filters", &q.filters), ("sortby", &q.sortby)]
    {
        if let Some(v) = value {
            params.push((name.into(), enc(v)));
        }
    }
    if family == "events" && q.dimensions.is_none() {
        let dims: Vec<&str> =
            edge_api::stats::Family::Events.dimensions().into_iter().filter(|d| *d != "customer").collect();
        params.push(("dimensions".into(), dims.join(",")));
    }
    if let Some(l) = q.limit {
        params.push(("limit".into(), l.to_string()));
    }
    // The query's own parameters win over the flags'.
    for pair in own.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        params.retain(|(name, _)| name != k);
        params.push((k.to_string(), v.to_string()));
    }
    let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Ok(format!("{path}?{}", query.join("&")))
}

/// Runs each query (every slice of it with `--all`, at most 400 requests) and prints the rows.
pub fn run(client: &mut Client, q: Query) -> Result<()> {
    let now = Utc::now();
    let mut answers = Vec::new();
    for query in &q.queries {
        let first = request_of(&q, query, now)?;
        let mut answer: StatsResponse = client.get(&first)?;
        let mut fetched = 1;
        while q.all && (answer.rows.len() as u64) < answer.total_results && fetched < 400 {
            let start = answer.query.start + answer.rows.len() as u64;
            let next = format!("{first}&start={start}");
            let more: StatsResponse = client.get(&next)?;
            if more.rows.is_empty() {
                break;
            }
            answer.rows.extend(more.rows);
            fetched += 1;
        }
        answers.push((query.clone(), answer));
    }
    let names = |a: &StatsResponse| a.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    match q.format {
        Format::Json => {
            let docs: Vec<Value> = answers
                .iter()
                .map(|(query, a)| {
                    let header = names(a);
                    let rows: Vec<Value> = a
                        .rows
                        .iter()
                        .map(|r| Value::Object(header.iter().cloned().zip(r.iter().cloned()).collect::<Map<_, _>>()))
                        .collect();
                    json!({"query": query, "echo": a.query, "total_results": a.total_results, "rows": rows})
                })
                .collect();
            let doc = if docs.len() == 1 { docs.into_iter().next().unwrap_or_default() } else { Value::Array(docs) };
            Out { json: true, tty: false }.json(&doc)
        }
        Format::Csv => {
            for (i, (_, a)) in answers.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                println!("{}", csv_line(&names(a)));
                for row in &a.rows {
                    println!("{}", csv_line(&row.iter().map(cell).collect::<Vec<_>>()));
                }
            }
            Ok(())
        }
        Format::Table => {
            for (i, (query, a)) in answers.iter().enumerate() {
                if i > 0 {
                    println!();
                }
                println!(
                    "{query}: {} of {} rows, {} to {}",
                    a.rows.len(),
                    a.total_results,
                    a.query.starttime,
                    a.query.endtime
                );
                let rows: Vec<Vec<String>> = a.rows.iter().map(|r| r.iter().map(cell).collect()).collect();
                for line in table(&names(a), &rows) {
                    println!("{line}");
                }
            }
            Ok(())
        }
    }
}

pub struct EventsArgs {
    pub since: String,
    pub follow: bool,
    pub interval: Duration,
    pub filters: Option<String>,
    pub dimensions: Option<String>,
}

/// Security events of the last `since`, oldest first; with `follow`, then every `interval` the ones that came
/// since. Events of the same second are told apart by their fields (and counted, so two alike both show).
pub fn events(client: &mut Client, out: Out, args: EventsArgs) -> Result<()> {
    let dims = args.dimensions.clone().unwrap_or_else(|| {
        edge_api::stats::Family::Events
            .dimensions()
            .into_iter()
            .filter(|d| *d != "customer")
            .collect::<Vec<_>>()
            .join(",")
    });
    let mut from = Utc::now() - parse_duration(&args.since)?;
    // The rows of the second the last look ended in, with how often each was printed.
    let mut seen_at: (String, HashMap<String, usize>) = (String::new(), HashMap::new());
    loop {
        let now = Utc::now();
        let mut path = format!(
            "/stats/security/events/data?starttime={}&endtime={}&dimensions={}&sortby=event_timestamp_ms&limit=10000",
            api_time(from),
            api_time(now + chrono::Duration::seconds(1)),
            enc(&dims)
        );
        if let Some(f) = &args.filters {
            path.push_str(&format!("&filters={}", enc(f)));
        }
        let answer: StatsResponse = client.get(&path)?;
        let header: Vec<String> = answer.columns.iter().map(|c| c.name.clone()).collect();
        let mut counts: HashMap<String, usize> = HashMap::new();
        let mut last_second = seen_at.0.clone();
        for row in &answer.rows {
            let second = cell(&row[0]);
            let key = serde_json::to_string(row)?;
            let n = counts.entry(key.clone()).or_default();
            *n += 1;
            if second == seen_at.0 && *n <= seen_at.1.get(&key).copied().unwrap_or(0) {
                continue;
            }
            print_event(out, &header, row)?;
            last_second = second;
        }
        if !args.follow {
            return Ok(());
        }
        // Look again from the start of the last second seen: events of that second may still come.
        if last_second != seen_at.0 || !answer.rows.is_empty() {
            let in_last: HashMap<String, usize> =
                answer.rows.iter().filter(|r| cell(&r[0]) == last_second).fold(HashMap::new(), |mut m, r| {
                    *m.entry(serde_json::to_string(r).unwrap_or_default()).or_default() += 1;
                    m
                });
            if let Ok(t) = parse_time(&last_second, now) {
                from = t;
            }
            seen_at = (last_second, in_last);
        }
        std::thread::sleep(args.interval);
    }
}

fn print_event(out: Out, header: &[String], row: &[Value]) -> Result<()> {
    if out.json {
        let object: Map<String, Value> = header.iter().cloned().zip(row.iter().cloned()).collect();
        println!("{}", serde_json::to_string(&object)?);
    } else {
        let cells: Vec<String> = row.iter().map(cell).filter(|c| !c.is_empty()).collect();
        println!("{}", cells.join("  "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_times_read_as_a_person_writes_them() {
        assert_eq!(parse_duration("24h").unwrap(), chrono::Duration::hours(24));
        assert_eq!(parse_duration("7d").unwrap(), chrono::Duration::days(7));
        assert!(parse_duration("7").is_err() && parse_duration("x h").is_err() && parse_duration("-1h").is_err());
        let now = parse_time("2026-01-02T00:00:00", Utc::now()).unwrap();
        assert_eq!(api_time(parse_time("-1d", now).unwrap()), "2026-01-01T00:00:00");
        assert_eq!(api_time(parse_time("2026-01-31", now).unwrap()), "2026-01-31T00:00:00");
        assert!(parse_time("yesterday", now).is_err());
    }

    #[test]
    fn a_family_names_its_path_and_its_category() {
        assert_eq!(data_path("delivery").unwrap(), "/stats/data");
        assert_eq!(data_path("waf-topk:country").unwrap(), "/stats/security/waf/topk/country/data");
        assert!(data_path("waf-topk").is_err() && data_path("nope").is_err() && data_path("waf-topk:a/b").is_err());
    }
}
