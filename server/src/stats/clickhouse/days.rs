//! Answers kept from query to query, a day at a time. Grouping a rollup's rows at query time — ranking a day's
//! URLs (hundreds of thousands of rows, a few hundred milliseconds in ClickHouse 18.16), or summing a week of a
//! stand-in's 5-minute rows into the query's dimensions (tens of thousands of groups, tens of milliseconds) —
//! gives the same rows for a day until records of that day arrive. So each day's rows are kept with what they
//! were computed from: the block numbers of the day partition's active parts (and of the `dict` table's when
//! ties are ordered by it). Every insert into a partition gives its part a block number above all before; a
//! merge replaces parts by one spanning their numbers, and dropping a partition removes them: so the lowest and
//! highest block numbers of a day's parts change with every insert into that day and with its retention, never
//! with a merge. A query asks `system.parts` for them first (a few milliseconds), takes the days whose numbers
//! are unchanged from what it kept, and computes the others in one query. Reading the numbers before the rows
//! means a day changed in between is recomputed by the next query, never kept as current. A range starting or
//! ending within a day keeps that day's part of it under its own bounds.
//!
//! What is kept is bounded (a budget in bytes, the least recently used days going first), and a query of more
//! than [`MAX_DAYS`] days is not kept at all.

use std::{collections::HashMap, sync::Arc};

use serde::Deserialize;

use super::{ClickHouseEngine, Failure};
use crate::store::CustomerId;

/// Bytes of daily top URLs kept, over every customer.
pub(super) const TOP_BUDGET: usize = 8 << 20;
/// Bytes of time series kept, over every customer: a day of a 5-minute series by two dimensions may hold tens
/// of thousands of rows (a few megabytes).
pub(super) const SERIES_BUDGET: usize = 64 << 20;
/// A query of more days is answered without keeping them (it would push out everything else).
pub(super) const MAX_DAYS: usize = 400;
const DAY_MS: i64 = 86_400_000;

/// What a day's answer was computed from: the lowest and highest block numbers of the day partition's active
/// parts in the rollup table and, when the answer's ties read it, of the `dict` table's (zeros: no parts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Version {
    day: (i64, i64),
    dict: (i64, i64),
}

/// A day's answer: the customer, the query (its SQL with the range left out) and the part of the range within
/// the day (`[start, end)`).
type Key = (CustomerId, Arc<str>, i64, i64);

/// A day's rows, or `None`: more than a computation may hold (see [`DailyQuery::cap`]).
type Kept<R> = Option<Arc<Vec<R>>>;

struct Entry<R> {
    version: Version,
    rows: Kept<R>,
    bytes: usize,
    used: u64,
}

/// The kept answers, each a day's rows.
pub(super) struct Days<R> {
    entries: HashMap<Key, Entry<R>>,
    bytes: usize,
    budget: usize,
    tick: u64,
}

impl<R> Days<R> {
    /// Nothing kept yet, at most `budget` bytes.
    pub(super) fn with_budget(budget: usize) -> Self {
        Days { entries: HashMap::new(), bytes: 0, budget, tick: 0 }
    }

    /// The rows kept for `key` if they were computed from `version`; or that they are too many, whatever the
    /// version: inserts only add rows to a day, and the mark only sends queries to ClickHouse's own sort (it
    /// marks every day of a computation that was too large, a day of few rows among them too).
    pub(super) fn get(&mut self, key: &Key, version: Version) -> Option<Kept<R>> {
        self.tick += 1;
        let entry = self.entries.get_mut(key).filter(|e| e.version == version || e.rows.is_none())?;
        entry.used = self.tick;
        Some(entry.rows.clone())
    }

    /// Keeps `rows` (of `bytes`) for `key`, computed from `version`, pushing out the least recently used answers
    /// beyond the budget. Rows larger than a quarter of it are not kept.
    pub(super) fn put(&mut self, key: Key, version: Version, rows: Kept<R>, bytes: usize) {
        self.tick += 1;
        let bytes = bytes + key.1.len() + 64;
        if let Some(old) = self.entries.remove(&key) {
            self.bytes -= old.bytes;
        }
        if bytes > self.budget / 4 {
            return;
        }
        self.entries.insert(key, Entry { version, rows, bytes, used: self.tick });
        self.bytes += bytes;
        while self.bytes > self.budget {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| k.clone()) else { break };
            if let Some(e) = self.entries.remove(&oldest) {
                self.bytes -= e.bytes;
            }
        }
    }
}

/// The first millisecond of the day of `ms`.
pub(super) fn day_of(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS) * DAY_MS
}

/// `[start, end)` cut at midnights: each day it touches, with the part of the range within it.
fn pieces(start: i64, end: i64) -> Vec<(i64, i64, i64)> {
    let first = day_of(start);
    (0..)
        .map(|i| first.saturating_add(i * DAY_MS))
        .take_while(|d| *d < end)
        .map(|d| (d, start.max(d), end.min(d.saturating_add(DAY_MS))))
        .filter(|(_, s, e)| s < e)
        .collect()
}

/// A day partition's name in `system.parts` (`YYYY-MM-DD`: the tables are partitioned by a `Date`).
fn partition(day_ms: i64) -> String {
    edge_api::stats::format_time(day_ms).chars().take(10).collect()
}

#[derive(Deserialize, clickhouse::Row)]
struct Blocks {
    table: String,
    partition: String,
    low: i64,
    high: i64,
}

/// A row of a daily answer: the day it is of, and its size when kept.
pub(super) trait DailyRow {
    /// The first millisecond of the day of the row's bucket.
    fn day(&self) -> i64;
    /// The row's size in bytes, roughly.
    fn bytes(&self) -> usize;
}

/// Which query a day's rows are of, and where they are read.
pub(super) struct DailyQuery<'a> {
    pub(super) customer: CustomerId,
    /// The rollup table read.
    pub(super) table: &'a str,
    /// Whether ties are ordered by the `dict` table.
    pub(super) reads_dict: bool,
    /// The query's SQL with the range left out.
    pub(super) key: Arc<str>,
    /// The most rows one computation may give for them to be kept.
    pub(super) cap: usize,
}

impl ClickHouseEngine {
    /// The block numbers each day of `days` (and `dict`, if asked) was last written with, from the shard of the
    /// customer.
    fn versions(&self, query: &DailyQuery<'_>, days: &[i64]) -> Result<Vec<Version>, Failure> {
        let (Some(first), Some(last)) = (days.first(), days.last()) else { return Ok(Vec::new()) };
        let query_sql = self
            .client(query.customer)
            .query(
                "SELECT table, partition, min(min_block_number) AS low, max(max_block_number) AS high \
                 FROM system.parts WHERE database = ? AND active \
                 AND ((table = ? AND partition >= ? AND partition <= ?) OR table = ?) GROUP BY table, partition",
            )
            .bind(self.database.clone())
            .bind(query.table)
            .bind(partition(*first))
            .bind(partition(*last))
            .bind(if query.reads_dict { "dict" } else { "" });
        let found = self.block(query_sql.fetch_all::<Blocks>())?;
        let dict = found.iter().find(|b| b.table == "dict").map(|b| (b.low, b.high)).unwrap_or_default();
        let by_day: HashMap<&str, (i64, i64)> =
            found.iter().filter(|b| b.table == query.table).map(|b| (b.partition.as_str(), (b.low, b.high))).collect();
        Ok(days
            .iter()
            .map(|d| Version { day: by_day.get(partition(*d).as_str()).copied().unwrap_or_default(), dict })
            .collect())
    }

    /// The rows of `[start, end)`, a day at a time in day order: each day's kept rows if its parts are unchanged,
    /// the others computed by `compute` (of a range; each day's rows in the order they are to be kept) in one
    /// query. `None` when they are not kept: more than [`MAX_DAYS`] days, or a computation of more than the
    /// query's `cap` rows (remembered for every day of that computation until pushed out).
    pub(super) fn daily<R: DailyRow>(
        &self,
        cache: &std::sync::Mutex<Days<R>>,
        query: DailyQuery<'_>,
        (start, end): (i64, i64),
        compute: impl Fn(i64, i64) -> Result<Vec<R>, Failure>,
    ) -> Result<Option<Vec<Arc<Vec<R>>>>, Failure> {
        let pieces = pieces(start, end);
        if pieces.len() > MAX_DAYS {
            return Ok(None);
        }
        let days: Vec<i64> = pieces.iter().map(|p| p.0).collect();
        let versions = self.versions(&query, &days)?;
        let keys: Vec<Key> = pieces.iter().map(|(_, s, e)| (query.customer, query.key.clone(), *s, *e)).collect();
        let mut answers: Vec<Option<Kept<R>>> = {
            let mut kept = cache.lock().unwrap_or_else(|e| e.into_inner());
            keys.iter().zip(&versions).map(|(k, v)| kept.get(k, *v)).collect()
        };
        if answers.iter().any(|a| matches!(a, Some(None))) {
            return Ok(None);
        }
        let missing: Vec<usize> = (0..days.len()).filter(|i| answers[*i].is_none()).collect();
        if let (Some(&from), Some(&to)) = (missing.first(), missing.last()) {
            let rows = compute(pieces[from].1, pieces[to].2)?;
            let too_many = rows.len() > query.cap;
            let mut computed_days: Vec<Vec<R>> = (from..=to).map(|_| Vec::new()).collect();
            if !too_many {
                for row in rows {
                    if let Ok(i) = days[from..=to].binary_search(&row.day()) {
                        computed_days[i].push(row);
                    }
                }
            }
            let mut kept = cache.lock().unwrap_or_else(|e| e.into_inner());
            for (i, rows) in (from..=to).zip(computed_days) {
                let rows = (!too_many).then(|| Arc::new(rows));
                let bytes = rows.iter().flat_map(|r| r.iter()).map(DailyRow::bytes).sum();
                kept.put(keys[i].clone(), versions[i], rows.clone(), bytes);
                answers[i] = Some(rows);
            }
            if too_many {
                return Ok(None);
            }
        }
        Ok(Some(answers.into_iter().flatten().flatten().collect()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{DAY_MS, Days, Version, partition, pieces};

    fn version(high: i64) -> Version {
        Version { day: (1, high), dict: (0, 0) }
    }

    #[test]
    fn a_range_is_cut_at_midnights() {
        let d = 20_000 * DAY_MS;
        assert_eq!(pieces(d, d + DAY_MS), vec![(d, d, d + DAY_MS)]);
        assert_eq!(
            pieces(d, d + 3 * DAY_MS),
            vec![
                (d, d, d + DAY_MS),
                (d + DAY_MS, d + DAY_MS, d + 2 * DAY_MS),
                (d + 2 * DAY_MS, d + 2 * DAY_MS, d + 3 * DAY_MS)
            ]
        );
        // A range starting or ending within a day keeps that day's part of it.
        assert_eq!(
            pieces(d + 5, d + DAY_MS + 7),
            vec![(d, d + 5, d + DAY_MS), (d + DAY_MS, d + DAY_MS, d + DAY_MS + 7)]
        );
        assert_eq!(pieces(d + 5, d + 10), vec![(d, d + 5, d + 10)]);
        assert_eq!(
            pieces(-DAY_MS - 1, -DAY_MS + 1),
            vec![(-2 * DAY_MS, -DAY_MS - 1, -DAY_MS), (-DAY_MS, -DAY_MS, -DAY_MS + 1)]
        );
        assert_eq!(pieces(d, d), Vec::<(i64, i64, i64)>::new());
        assert_eq!(pieces(d + 5, d + 5), Vec::<(i64, i64, i64)>::new());
        assert_eq!(partition(d), "2024-10-04");
    }

    fn rows(values: &[u64]) -> Option<Option<Vec<u64>>> {
        Some(Some(values.to_vec()))
    }

    fn kept(days: &mut Days<u64>, key: &(i64, Arc<str>, i64, i64), v: Version) -> Option<Option<Vec<u64>>> {
        days.get(key, v).map(|k| k.map(|r| r.to_vec()))
    }

    #[test]
    fn a_day_is_answered_only_from_the_same_parts() {
        let mut days: Days<u64> = Days::with_budget(1000);
        let key = (1, Arc::from("q"), 0, DAY_MS);
        days.put(key.clone(), version(7), Some(Arc::new(vec![1, 2, 3])), 24);
        assert_eq!(kept(&mut days, &key, version(7)), rows(&[1, 2, 3]));
        // An insert into the day: a higher block number.
        assert_eq!(kept(&mut days, &key, version(8)), None);
        // Another customer, query or day, or another part of the day: nothing kept.
        assert_eq!(kept(&mut days, &(2, Arc::from("q"), 0, DAY_MS), version(7)), None);
        assert_eq!(kept(&mut days, &(1, Arc::from("r"), 0, DAY_MS), version(7)), None);
        assert_eq!(kept(&mut days, &(1, Arc::from("q"), DAY_MS, 2 * DAY_MS), version(7)), None);
        assert_eq!(kept(&mut days, &(1, Arc::from("q"), 0, DAY_MS - 1), version(7)), None);
        // Computed again: the new rows replace the old.
        days.put(key.clone(), version(8), Some(Arc::new(vec![4])), 8);
        assert_eq!(kept(&mut days, &key, version(8)), rows(&[4]));
        assert_eq!(kept(&mut days, &key, version(7)), None);
        assert_eq!(days.entries.len(), 1);
        // Too many rows to keep is kept too, so that the next queries do not try again, even after inserts.
        days.put(key.clone(), version(9), None, 0);
        assert_eq!(kept(&mut days, &key, version(9)), Some(None));
        assert_eq!(kept(&mut days, &key, version(10)), Some(None));
    }

    #[test]
    fn what_is_kept_stays_within_its_budget_the_least_recently_used_going_first() {
        let mut days: Days<u64> = Days::with_budget(1000);
        let key = |d: i64| (1, Arc::from("q"), d, d + 1);
        let one = |d: u64| Some(Arc::new(vec![d]));
        // Each entry: 100 bytes of rows, the key's 1 and 64 of overhead.
        for d in 0..9 {
            days.put(key(d), version(1), one(d as u64), 100);
        }
        assert!(days.bytes <= 1000);
        assert_eq!(days.entries.len(), 6);
        // The oldest went first; reading one keeps it.
        assert_eq!(kept(&mut days, &key(2), version(1)), None);
        assert_eq!(kept(&mut days, &key(3), version(1)), rows(&[3]));
        days.put(key(9), version(1), one(9), 100);
        assert_eq!(kept(&mut days, &key(3), version(1)), rows(&[3]));
        assert_eq!(kept(&mut days, &key(4), version(1)), None);
        // Rows too large for a quarter of the budget are not kept, nor what they replace.
        days.put(key(3), version(2), Some(Arc::new(vec![0; 10])), 300);
        assert_eq!(kept(&mut days, &key(3), version(2)), None);
        assert_eq!(kept(&mut days, &key(3), version(1)), None);
        let sum: usize = days.entries.values().map(|e| e.bytes).sum();
        assert_eq!(days.bytes, sum);
    }
}
