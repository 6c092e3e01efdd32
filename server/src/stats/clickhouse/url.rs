//! The `--stats-url` of a ClickHouse database, parsed.

use anyhow::Context;

/// Where the statistics live: `clickhouse://[USER[:PASS]@]HOST:PORT/DATABASE`, PORT being ClickHouse's HTTP
/// interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsUrl {
    pub http: String,
    pub user: Option<String>,
    pub password: Option<String>,
    pub database: String,
}

impl StatsUrl {
    pub fn parse(s: &str) -> anyhow::Result<StatsUrl> {
        let rest = s
            .strip_prefix("clickhouse://")
            .ok_or_else(|| anyhow::anyhow!("the statistics URL must start with clickhouse://"))?;
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, rest),
        };
        let (host, database) =
            rest.split_once('/').ok_or_else(|| anyhow::anyhow!("the statistics URL needs a /DATABASE"))?;
        anyhow::ensure!(
            !database.is_empty() && database.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "the database name may hold letters, digits and _ only"
        );
        let port = host.rsplit_once(':').map(|(_, p)| p).unwrap_or("");
        anyhow::ensure!(port.parse::<u16>().is_ok(), "the statistics URL needs HOST:PORT (the HTTP port)");
        let (user, password) = match auth {
            None => (None, None),
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (Some(decode(u)?), Some(decode(p)?)),
                None => (Some(decode(a)?), None),
            },
        };
        Ok(StatsUrl { http: format!("http://{host}"), user, password, database: database.to_string() })
    }
}

/// Percent-decoding of the user and password of a URL.
fn decode(s: &str) -> anyhow::Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or_else(|| anyhow::anyhow!("a bad %-escape in the statistics URL"))?;
            out.push(u8::from_str_radix(hex, 16).context("a bad %-escape in the statistics URL")?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8(out)?)
}
