//! The `--stats-url` of a ClickHouse database, parsed.

use anyhow::Context;

/// Where the statistics live: `clickhouse://[USER[:PASS]@]HOST:PORT[,HOST:PORT…]/DATABASE`, PORT being
/// ClickHouse's HTTP interface; several servers are shards, each customer's statistics on one of them
/// ([`super::shard_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsUrl {
    /// Each shard's HTTP address (`http://HOST:PORT`), in the order given.
    pub shards: Vec<String>,
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
        let hosts: Vec<&str> = host.split(',').collect();
        anyhow::ensure!(hosts.len() <= MAX_SHARDS, "the statistics URL names at most {MAX_SHARDS} servers");
        for h in &hosts {
            let (name, port) = h.rsplit_once(':').unwrap_or((h, ""));
            anyhow::ensure!(
                !name.is_empty() && port.parse::<u16>().is_ok(),
                "the statistics URL needs HOST:PORT (the HTTP port) for each server, separated by commas"
            );
        }
        let mut distinct = hosts.clone();
        distinct.sort_unstable();
        distinct.dedup();
        anyhow::ensure!(distinct.len() == hosts.len(), "the statistics URL names a server twice");
        let (user, password) = match auth {
            None => (None, None),
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (Some(decode(u)?), Some(decode(p)?)),
                None => (Some(decode(a)?), None),
            },
        };
        let shards = hosts.iter().map(|h| format!("http://{h}")).collect();
        Ok(StatsUrl { shards, user, password, database: database.to_string() })
    }
}

/// The most shards a statistics URL may name.
pub const MAX_SHARDS: usize = 64;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_server_or_several_shards() {
        let one = StatsUrl::parse("clickhouse://default@127.0.0.1:8123/edge").unwrap();
        assert_eq!(one.shards, ["http://127.0.0.1:8123"]);
        assert_eq!((one.user.as_deref(), one.database.as_str()), (Some("default"), "edge"));
        let two = StatsUrl::parse("clickhouse://u:p%40ss@ch1:8123,ch2:8124/edge").unwrap();
        assert_eq!(two.shards, ["http://ch1:8123", "http://ch2:8124"]);
        assert_eq!(two.password.as_deref(), Some("p@ss"));
        for bad in [
            "clickhouse://ch1:8123,/edge",
            "clickhouse://ch1:8123,ch2/edge",
            "clickhouse://ch1:8123,ch1:8123/edge",
            "clickhouse://:8123/edge",
            "clickhouse://ch1:8123/",
            "http://ch1:8123/edge",
        ] {
            assert!(StatsUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
