//! Answering a query: the rollup both engines choose, read with SQL that gives the embedded engine's rows in
//! its order (ties by when values were first seen, from the `dict` table); raw security events by time.

use std::{cmp::Ordering, fmt::Write as _, sync::Arc};

use edge_api::stats::{DELIVERY_METRICS, Family, Filter, Granularity, Query, TOPK_URL_PER_DAY};
use serde::{Deserialize, de::DeserializeOwned};

use super::{
    super::{
        Answer, Cell, QueryError,
        ingest::SECURITY_DIMS,
        rollups::{self, Conditions, DIMS, METRICS, Target, dim_id, is_int},
    },
    ClickHouseEngine, Failure,
    days::{DailyQuery, DailyRow, day_of},
    schema::{col, grouping},
    sql::{Sql, bind},
};
use crate::store::CustomerId;

#[derive(Clone, Deserialize, clickhouse::Row)]
pub(super) struct OutRow {
    b: i64,
    dims: Vec<String>,
    metrics: Vec<u64>,
}

impl DailyRow for OutRow {
    fn day(&self) -> i64 {
        day_of(self.b)
    }

    fn bytes(&self) -> usize {
        48 + self.dims.iter().map(|d| d.len() + 24).sum::<usize>() + 8 * self.metrics.len()
    }
}

/// A row of a time series before it is sorted: with the order its values were first seen in (`f`).
#[derive(Deserialize, clickhouse::Row)]
pub(super) struct SeriesRow {
    b: i64,
    dims: Vec<String>,
    metrics: Vec<u64>,
    f: u64,
}

impl DailyRow for SeriesRow {
    fn day(&self) -> i64 {
        day_of(self.b)
    }

    fn bytes(&self) -> usize {
        56 + self.dims.iter().map(|d| d.len() + 24).sum::<usize>() + 8 * self.metrics.len()
    }
}

/// The most rows of a time series one query computes to keep (about 13 MB): a larger one is sorted and paged
/// by ClickHouse instead.
const SERIES_CAP: usize = 100_000;

/// What rows of a rollup are ordered by.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    /// The bucket (`b`).
    Bucket,
    /// The query's `i`th metric (`x{i}`).
    Metric(usize),
    /// The `i`th stored dimension's value (numeric for integer dimensions).
    Dim(usize),
    /// Hits (`h`).
    Hits,
    /// When the group's first row was first seen (`f`).
    First,
    /// When the `i`th dimension's value was first seen (`o{i}`, from the `dict` table).
    Dict(usize),
}

/// A key of an order: what, and whether descending.
#[derive(Clone, Copy)]
struct Key {
    by: By,
    descending: bool,
}

impl Key {
    fn asc(by: By) -> Key {
        Key { by, descending: false }
    }

    /// The key in SQL, over a query's columns.
    fn sql(self, stored: &[&str], columns: &[String]) -> String {
        let column = match self.by {
            By::Bucket => "b".to_string(),
            By::Metric(i) => format!("x{i}"),
            By::Dim(i) => value_order(stored[i], &columns[i]),
            By::Hits => "h".to_string(),
            By::First => "f".to_string(),
            By::Dict(i) => format!("o{i}"),
        };
        if self.descending { format!("{column} DESC") } else { column }
    }
}

/// `a` against `b` in `order`, as ClickHouse sorts them: integers by value, text byte by byte, integer
/// dimensions (held as text) by their number. Orders by hits or `dict` are not held by a series row: equal.
fn series_order(a: &SeriesRow, b: &SeriesRow, order: &[Key], int_dims: &[bool]) -> Ordering {
    let number = |v: Option<&String>| v.and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    for key in order {
        let o = match key.by {
            By::Bucket => a.b.cmp(&b.b),
            By::Metric(i) => a.metrics.get(i).cmp(&b.metrics.get(i)),
            By::Dim(i) if int_dims.get(i) == Some(&true) => number(a.dims.get(i)).cmp(&number(b.dims.get(i))),
            By::Dim(i) => a.dims.get(i).cmp(&b.dims.get(i)),
            By::First => a.f.cmp(&b.f),
            By::Hits | By::Dict(_) => Ordering::Equal,
        };
        let o = if key.descending { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// How many security events a minute of a range holds (`m`: minutes from the range's start).
#[derive(Deserialize, clickhouse::Row)]
struct Minute {
    m: i64,
    n: u64,
}

/// Where the first `wanted` events in time order (newest first if `descending`) lie, from how many each minute of
/// the range starting at `start` holds: a bound on their times (` AND ts >= …` or ` AND ts < …`), `None` when
/// all of them are wanted; and how many there are in all.
fn time_bound(
    mut minutes: Vec<Minute>,
    start: i64,
    wanted: u64,
    descending: bool,
) -> (Option<(&'static str, i64)>, u64) {
    minutes.sort_unstable_by_key(|x| x.m);
    if descending {
        minutes.reverse();
    }
    let total = minutes.iter().map(|x| x.n).fold(0u64, u64::saturating_add);
    let mut seen = 0u64;
    let edge = minutes.iter().find(|x| {
        seen = seen.saturating_add(x.n);
        seen >= wanted
    });
    let bound = edge.map(|x| {
        let from = start.saturating_add(x.m.saturating_mul(MINUTE_MS));
        if descending { (" AND ts >= ", from) } else { (" AND ts < ", from.saturating_add(MINUTE_MS)) }
    });
    (bound, total)
}

const MINUTE_MS: i64 = 60_000;

/// Whether an order of security events (`ts`, `seq`, each maybe `DESC`) is by time alone, and if so whether
/// time and sequence number descend: the first of each decides.
fn time_order(order: &[String]) -> Option<(bool, bool)> {
    let (mut ts, mut seq) = (None, None);
    for key in order {
        let (column, descending) = match key.strip_suffix(" DESC") {
            Some(c) => (c, true),
            None => (key.as_str(), false),
        };
        match column {
            "ts" => ts = ts.or(Some(descending)),
            "seq" => seq = seq.or(Some(descending)),
            _ => return None,
        }
    }
    Some((ts?, seq?))
}

/// A filter as SQL over columns named after the dimensions, the embedded engine's rules ([`Conditions`]): a
/// value never stored matches nothing (`==`) or everything (`!=`).
fn filter_sql(
    filter: &Filter,
    customer: &str,
    has: impl Fn(&str) -> bool,
    column: impl Fn(&str) -> String,
) -> Result<Sql, QueryError> {
    let conditions = Conditions::of(filter, customer, |d, equal, value| {
        has(DIMS[d]).then(|| {
            let mut sql = Sql::default();
            sql.push(&column(DIMS[d])).push(if equal { " = " } else { " != " }).text(&value);
            sql
        })
    })?;
    let joined = |tests: Vec<Sql>, join: &str| {
        let mut sql = Sql::default();
        sql.push("(");
        for (i, test) in tests.into_iter().enumerate() {
            sql.push(if i > 0 { join } else { "" }).append(test);
        }
        sql.push(")");
        sql
    };
    let mut out = Sql::default();
    match conditions {
        Conditions::Nothing => out.push("0"),
        Conditions::Everything => out.push("1"),
        Conditions::All(tests) => out.append(joined(tests, " AND ")),
        Conditions::Any(tests) => out.append(joined(tests, " OR ")),
    };
    Ok(out)
}

/// The rows of `source` (a subquery with a bucket `b`, its hits `h` and the `columns`) that can be among a
/// bucket's [`TOPK_URL_PER_DAY`] with the most hits: those with at least as many hits as its 20th most. Each
/// bucket's rows are gathered into arrays once, the threshold read from its sorted hits, and the rows unfolded
/// again, so that only the few at the top are then sorted by their whole order.
fn top_rows(source: Sql, columns: &[String]) -> Sql {
    let columns: Vec<&str> = columns.iter().map(String::as_str).chain(["h"]).collect();
    let mut sql = Sql::default();
    sql.push("(SELECT b");
    for c in &columns {
        let _ = write!(sql.text, ", groupArray({c}) AS a_{c}");
    }
    let _ = write!(sql.text, ", arrayReverseSort(a_h)[{TOPK_URL_PER_DAY}] AS t FROM ");
    sql.append(source).push(" GROUP BY b) ARRAY JOIN ");
    let unfolded: Vec<String> = columns.iter().map(|c| format!("a_{c} AS {c}")).collect();
    sql.push(&unfolded.join(", ")).push(" WHERE h >= t");
    sql
}

/// Whether ClickHouse refused an array as too large (`TOO_LARGE_ARRAY_SIZE`, code 128: over 16,777,215
/// elements), which [`top_rows`] meets on a bucket of more rows than that.
fn too_large_array(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.to_string().contains("Code: 128,"))
}

/// The ascending value order of a dimension: numeric for integer dimensions.
fn value_order(dim: &str, column: &str) -> String {
    if is_int(dim) { format!("toInt64OrZero({column})") } else { column.to_string() }
}

fn cell(dim: &str, v: &str) -> Cell {
    if is_int(dim) { Cell::Int(v.parse().unwrap_or(0)) } else { Cell::Text(Arc::from(v)) }
}

impl ClickHouseEngine {
    fn fetch_rows<R: clickhouse::RowOwned + clickhouse::RowRead + Send + 'static>(
        &self,
        customer: CustomerId,
        sql: Sql,
    ) -> Result<Vec<R>, Failure> {
        let query = bind(self.client(customer).query(&sql.text), sql.args);
        self.block(async move { query.fetch_all::<R>().await })
    }

    /// The rows of `sql` (ordered and limited) and how many there are without its `LIMIT`, in one query: a
    /// query that sorts reads every row before its limit, and ClickHouse tells their number with the rows
    /// (`rows_before_limit_at_least` of the JSON formats), so nothing is grouped twice. Should it not tell,
    /// `count` is asked; and for a page of no rows (`limit` 0), which ClickHouse 18.16 answers without reading
    /// (and counts 0), only `count` is.
    fn fetch_counted<T: DeserializeOwned + Send>(
        &self,
        customer: CustomerId,
        (sql, limit): (Sql, u64),
        count: Sql,
    ) -> Result<(Vec<T>, u64), Failure> {
        let count_of = |count: Sql| {
            let count = bind(self.client(customer).query(&count.text), count.args);
            self.block(count.fetch_one::<u64>())
        };
        if limit == 0 {
            return Ok((Vec::new(), count_of(count)?));
        }
        #[derive(Deserialize)]
        struct Counted<T> {
            data: Vec<T>,
            rows_before_limit_at_least: Option<u64>,
        }
        let query = bind(self.client(customer).query(&sql.text), sql.args)
            .with_setting("output_format_json_quote_64bit_integers", "0");
        let body = self.block(async move { query.fetch_bytes("JSONCompact")?.collect().await })?;
        let counted: Counted<T> = serde_json::from_slice(&body)
            .map_err(|e| Failure::Internal(anyhow::Error::new(e).context("statistics database: a JSON answer")))?;
        let total = match counted.rows_before_limit_at_least {
            Some(total) => total,
            None => count_of(count)?,
        };
        Ok((counted.data, total))
    }
}

impl ClickHouseEngine {
    /// A time series whose ties are by when its rows were first seen, from each day's rows kept from query to
    /// query (see `days`), sorted and paged here, with how many there are; `None` when they are not kept (an
    /// order by hits or by the `dict` table, too many days or rows).
    fn series_kept(
        &self,
        customer: CustomerId,
        (head, order, stored): (&Sql, &[Key], &[&str]),
        table: &str,
        q: &Query,
        inner_of: &dyn Fn(i64, i64) -> Sql,
    ) -> Result<Option<(Vec<OutRow>, u64)>, Failure> {
        if order.iter().any(|k| matches!(k.by, By::Hits | By::Dict(_))) {
            return Ok(None);
        }
        let series_of = |start: i64, end: i64| {
            let mut sql = head.clone();
            sql.push(", f FROM (").append(inner_of(start, end)).push(") LIMIT ").unsigned(SERIES_CAP as u64 + 1);
            sql
        };
        let query =
            DailyQuery { customer, table, reads_dict: false, key: Arc::from(series_of(0, 0).key()), cap: SERIES_CAP };
        let compute = |start: i64, end: i64| self.fetch_rows::<SeriesRow>(customer, series_of(start, end));
        let Some(days) = self.daily(&self.series_days, query, (q.start_ms, q.end_ms), compute)? else {
            return Ok(None);
        };
        let int_dims: Vec<bool> = stored.iter().map(|d| is_int(d)).collect();
        let by = |a: &&SeriesRow, b: &&SeriesRow| series_order(a, b, order, &int_dims);
        let mut rows: Vec<&SeriesRow> = days.iter().flat_map(|d| d.iter()).collect();
        let total = rows.len() as u64;
        let start = usize::try_from(q.start).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(q.limit).unwrap_or(usize::MAX));
        if end < rows.len() {
            rows.select_nth_unstable_by(end, by);
            rows.truncate(end);
        }
        rows.sort_unstable_by(by);
        let page = rows
            .into_iter()
            .skip(start)
            .map(|r| OutRow { b: r.b, dims: r.dims.clone(), metrics: r.metrics.clone() })
            .collect();
        Ok(Some((page, total)))
    }
}

impl ClickHouseEngine {
    pub(super) fn query_rollups(&self, customer: CustomerId, name: &str, q: &Query) -> Result<Answer, QueryError> {
        let target = Target::of(&self.specs, q, self.clock.now_ms())?;
        let (granularity, whole_range, index, aggregate) =
            (target.granularity, target.whole_range, target.spec, target.aggregate);
        // The dimensions held in rollups, in the query's order (`customer` is the tenant), and their columns.
        let stored: Vec<&str> = target.stored.iter().map(|(_, id)| DIMS[*id]).collect();
        let dim_ids = target.dim_ids();
        let columns_of: Vec<String> = stored.iter().map(|d| col(d)).collect();
        // Read from the rows of the rollup that stands for the query's (the same table).
        let spec = &self.specs[self.stand_in[index]];
        let table = &self.tables[index];
        let filter = filter_sql(&q.filter, name, |d| dim_id(d).is_some_and(|id| spec.dims.contains(&id)), col)?;
        let metric_cols: Vec<&str> = q
            .metrics
            .iter()
            .map(
                |m| if spec.metrics == METRICS { DELIVERY_METRICS[rollups::metric_index(q.family, m)] } else { "hits" },
            )
            .collect();

        // One row a bucket (or one for the whole range) and combination of the query's dimensions, in `[start,
        // end)`.
        let inner_of = |start: i64, end: i64| {
            let mut inner = Sql::default();
            inner.push(if whole_range { "SELECT toInt64(0) AS b" } else { "SELECT bucket AS b" });
            for c in &columns_of {
                inner.push(", ").push(c);
            }
            for (i, m) in metric_cols.iter().enumerate() {
                let _ = write!(inner.text, ", sumMerge({m}) AS x{i}");
            }
            let _ = write!(inner.text, ", sumMerge(hits) AS h, minMerge(first) AS f FROM {table} WHERE customer = ");
            inner
                .int(customer)
                .push(" AND grouping = ")
                .unsigned(grouping(spec))
                .push(" AND bucket >= ")
                .int(start)
                .push(" AND bucket < ")
                .int(end);
            inner.push(" AND ").append(filter.clone());
            inner.push(" GROUP BY b");
            for c in &columns_of {
                inner.push(", ").push(c);
            }
            inner
        };

        // Ties: in the embedded engine's row order (the order rows were first seen) when the answer is the
        // rollup's own rows, else by bucket and the order each value was first seen.
        let by_values = aggregate || whole_range;
        let source_of = |inner: Sql| {
            let mut current = Sql::default();
            current.push("(").append(inner).push(")");
            if by_values {
                for (i, (id, c)) in dim_ids.iter().zip(&columns_of).enumerate() {
                    let mut next = Sql::default();
                    next.push("(SELECT * FROM ").append(current);
                    let _ = write!(
                        next.text,
                        " ANY LEFT JOIN (SELECT value AS {c}, minMerge(first) AS o{i} FROM dict WHERE customer = "
                    );
                    next.int(customer).push(" AND dim = ").unsigned(*id as u64);
                    let _ = write!(next.text, " GROUP BY value) USING {c})");
                    current = next;
                }
            }
            current
        };
        let mut tie = vec![Key::asc(By::Bucket)];
        if by_values {
            tie.extend((0..dim_ids.len()).map(|i| Key::asc(By::Dict(i))));
        } else {
            tie.push(Key::asc(By::First));
        }

        let mut order: Vec<Key> = Vec::new();
        let per_day = q.family == Family::TopKUrl;
        if per_day {
            order.push(Key::asc(By::Bucket));
            order.push(Key { by: By::Hits, descending: true });
        } else {
            for s in q.sortby.iter().take(6) {
                let by = if s.field == "starttime" || s.field == "endtime" {
                    Some(By::Bucket)
                } else if let Some(i) = q.metrics.iter().position(|m| *m == s.field) {
                    Some(By::Metric(i))
                } else {
                    // A dimension: the query's, else (as the embedded engine does) its first stored one.
                    (!stored.is_empty()).then(|| By::Dim(stored.iter().position(|d| *d == s.field).unwrap_or(0)))
                };
                if let Some(by) = by {
                    order.push(Key { by, descending: s.descending });
                }
            }
        }
        order.extend(tie.iter().copied());
        let order_sql: Vec<String> = order.iter().map(|k| k.sql(&stored, &columns_of)).collect();

        let mut sql = Sql::default();
        sql.push("SELECT b, ");
        if stored.is_empty() {
            sql.push("emptyArrayString()");
        } else {
            sql.push("[").push(&columns_of.join(", ")).push("]");
        }
        sql.push(" AS dims, ");
        if metric_cols.is_empty() {
            sql.push("emptyArrayUInt64()");
        } else {
            let xs: Vec<String> = (0..metric_cols.len()).map(|i| format!("x{i}")).collect();
            sql.push("[").push(&xs.join(", ")).push("]");
        }
        sql.push(" AS metrics");
        let head = sql.clone();
        sql.push(" FROM ");
        let total;
        let rows = if per_day {
            // Sorting every row of a day by (hits, tie) is most of the time of the daily top URLs, so only the
            // rows that can be in a day's top are sorted: those with at least the day's 20th most hits. A day
            // too large for arrays (`TOO_LARGE_ARRAY_SIZE`) sorts them all.
            let mut carried: Vec<String> = columns_of.clone();
            carried.extend((0..metric_cols.len()).map(|i| format!("x{i}")));
            carried.extend(tie.iter().filter(|k| k.by != By::Bucket).map(|k| k.sql(&stored, &columns_of)));
            let top_of = |from: Sql| {
                let mut sql = sql.clone();
                sql.append(from).push(" ORDER BY ").push(&order_sql.join(", "));
                let _ = write!(sql.text, " LIMIT {TOPK_URL_PER_DAY} BY b");
                sql
            };
            let compute = |start: i64, end: i64| {
                let source = source_of(inner_of(start, end));
                match self.fetch_rows(customer, top_of(top_rows(source.clone(), &carried))) {
                    Err(Failure::Internal(e)) if too_large_array(&e) => self.fetch_rows(customer, top_of(source)),
                    r => r,
                }
            };
            // A day's top changes only with records of that day: each day's is kept (see `days`).
            let rows = if granularity == Granularity::Day && !whole_range {
                let query = DailyQuery {
                    customer,
                    table,
                    reads_dict: by_values,
                    key: Arc::from(top_of(top_rows(source_of(inner_of(0, 0)), &carried)).key()),
                    cap: usize::MAX,
                };
                match self.daily(&self.top_days, query, (q.start_ms, q.end_ms), compute)? {
                    Some(days) => days.iter().flat_map(|d| d.iter().cloned()).collect(),
                    None => compute(q.start_ms, q.end_ms)?,
                }
            } else {
                compute(q.start_ms, q.end_ms)?
            };
            total = rows.len() as u64;
            rows
        } else if let Some((rows, count)) = self.series_kept(customer, (&head, &order, &stored), table, q, &inner_of)? {
            total = count;
            rows
        } else {
            let inner = inner_of(q.start_ms, q.end_ms);
            sql.append(source_of(inner.clone())).push(" ORDER BY ").push(&order_sql.join(", "));
            sql.push(" LIMIT ").unsigned(q.start).push(", ").unsigned(q.limit);
            let mut count = Sql::default();
            count.push("SELECT count() FROM (").append(inner).push(")");
            let (rows, count) = self.fetch_counted::<OutRow>(customer, (sql, q.limit), count)?;
            total = count;
            rows
        };

        let with_time = !whole_range;
        let step = granularity.millis();
        let columns = rollups::answer_columns(q, with_time);
        let customer_cell: Arc<str> = Arc::from(name);
        let rows = rows
            .into_iter()
            .map(|row| {
                let mut cells = Vec::with_capacity(columns.len());
                if with_time {
                    cells.push(Cell::Time(row.b));
                    cells.push(Cell::Time(row.b + step));
                }
                let mut values = row.dims.iter();
                for d in &q.dimensions {
                    if d == "customer" {
                        cells.push(Cell::Text(customer_cell.clone()));
                    } else {
                        cells.push(cell(d, values.next().map_or("", String::as_str)));
                    }
                }
                cells.extend(row.metrics.iter().map(|m| Cell::Int(*m as i64)));
                cells
            })
            .collect();
        Ok(Answer { columns, rows, total })
    }

    pub(super) fn query_events(&self, customer: CustomerId, name: &str, q: &Query) -> Result<Answer, QueryError> {
        let held = |d: &str| SECURITY_DIMS.contains(&d);
        let filter = filter_sql(&q.filter, name, held, str::to_string)?;
        let stored: Vec<&str> = q.dimensions.iter().map(String::as_str).filter(|d| held(d)).collect();
        let mut base = Sql::default();
        base.push(" FROM security WHERE customer = ").int(customer);
        base.push(" AND ts >= ").int(q.start_ms).push(" AND ts < ").int(q.end_ms).push(" AND ").append(filter);
        let mut order: Vec<String> = q
            .sortby
            .iter()
            .take(6)
            .map(|s| {
                let dir = if s.descending { " DESC" } else { "" };
                if held(&s.field) && q.dimensions.contains(&s.field) {
                    format!("{}{dir}", value_order(&s.field, &s.field))
                } else {
                    format!("ts{dir}")
                }
            })
            .collect();
        // Unsorted or newest first alone: by time, arrival breaking ties the same way; else ties by time then
        // arrival.
        if order.len() == 1 && order[0] == "ts DESC" && q.sortby.len() == 1 {
            order.push("seq DESC".into());
        } else {
            order.push("ts".into());
            order.push("seq".into());
        }
        let mut count = Sql::default();
        count.push("SELECT count()").append(base.clone());
        // In time order alone (newest or oldest first): how many events each minute holds is counted first (a
        // grouping on one number, and the total), and the page read only from the minutes that hold it — so
        // only those rows are read whole and sorted (ClickHouse 18.16 sorts every row of the range otherwise).
        let total = match time_order(&order) {
            Some((ts_descending, _)) if q.limit > 0 => {
                let mut minutes = Sql::default();
                minutes.push("SELECT toInt64(intDiv(ts - ").int(q.start_ms);
                let _ = write!(minutes.text, ", {MINUTE_MS})) AS m, count() AS n");
                minutes.append(base.clone()).push(" GROUP BY m");
                let minutes = self.fetch_rows::<Minute>(customer, minutes)?;
                let (bound, total) = time_bound(minutes, q.start_ms, q.start.saturating_add(q.limit), ts_descending);
                if let Some((test, ms)) = bound {
                    base.push(test).int(ms);
                }
                Some(total)
            }
            _ => None,
        };
        let mut sql = Sql::default();
        sql.push("SELECT ts AS b, ");
        if stored.is_empty() {
            sql.push("emptyArrayString()");
        } else {
            sql.push("[").push(&stored.join(", ")).push("]");
        }
        sql.push(" AS dims, emptyArrayUInt64() AS metrics").append(base);
        sql.push(" ORDER BY ").push(&order.join(", "));
        sql.push(" LIMIT ").unsigned(q.start).push(", ").unsigned(q.limit);
        let (rows, total) = match total {
            Some(total) if q.start >= total => (Vec::new(), total),
            Some(total) => (self.fetch_rows(customer, sql)?, total),
            None => self.fetch_counted::<OutRow>(customer, (sql, q.limit), count)?,
        };
        let customer_cell: Arc<str> = Arc::from(name);
        let columns = q.dimensions.iter().map(|d| (d.clone(), is_int(d))).collect();
        let rows = rows
            .into_iter()
            .map(|row| {
                let mut values = row.dims.iter();
                q.dimensions
                    .iter()
                    .map(|d| match d.as_str() {
                        "event_timestamp_ms" => Cell::Time(row.b),
                        "customer" => Cell::Text(customer_cell.clone()),
                        d if held(d) => cell(d, values.next().map_or("", String::as_str)),
                        _ => Cell::Text(Arc::from("")),
                    })
                    .collect()
            })
            .collect();
        Ok(Answer { columns, rows, total })
    }
}

#[cfg(test)]
mod tests {
    use super::{super::Failure, Minute, time_bound, time_order, too_large_array};

    #[test]
    fn the_minutes_holding_a_page_of_events_bound_their_times() {
        let start = 1_000_000;
        let minutes = |counts: &[(i64, u64)]| counts.iter().map(|&(m, n)| Minute { m, n }).collect::<Vec<_>>();
        let held = minutes(&[(2, 5), (0, 5), (1, 5)]);
        // Newest first: minutes 2 and 1 hold the first 7.
        assert_eq!(
            time_bound(minutes(&[(2, 5), (0, 5), (1, 5)]), start, 7, true),
            (Some((" AND ts >= ", start + 60_000)), 15)
        );
        // Oldest first: minutes 0 and 1.
        assert_eq!(time_bound(held, start, 7, false), (Some((" AND ts < ", start + 120_000)), 15));
        // Exactly all of them, from the last minute; more than there are: no bound.
        assert_eq!(time_bound(minutes(&[(0, 5), (1, 5), (2, 5)]), start, 15, true), (Some((" AND ts >= ", start)), 15));
        assert_eq!(time_bound(minutes(&[(0, 5), (1, 5), (2, 5)]), start, 16, true), (None, 15));
        assert_eq!(time_bound(minutes(&[(0, 5)]), start, u64::MAX, false), (None, 5));
        assert_eq!(time_bound(Vec::new(), start, 10, true), (None, 0));
        // One minute of many events: the page lies in it.
        assert_eq!(
            time_bound(minutes(&[(0, 1), (7, 1_000_000)]), start, 10, true),
            (Some((" AND ts >= ", start + 420_000)), 1_000_001)
        );
    }

    #[test]
    fn an_array_too_large_is_told_from_other_failures() {
        let failure = |reason: &str| match Failure::from(clickhouse::error::Error::BadResponse(reason.into())) {
            Failure::Internal(e) => e,
            Failure::Unavailable(m) => panic!("{m}"),
        };
        let e = failure("Code: 128, e.displayText() = DB::Exception: Too large array size, e.what() = DB::Exception");
        assert!(too_large_array(&e));
        let e = failure("Code: 241, e.displayText() = DB::Exception: Memory limit (for query) exceeded");
        assert!(!too_large_array(&e));
        let e = failure("Code: 1280, e.displayText() = DB::Exception: something else");
        assert!(!too_large_array(&e));
    }

    #[test]
    fn an_order_by_time_alone_is_told_apart_with_its_directions() {
        let order = |keys: &[&str]| time_order(&keys.iter().map(|k| k.to_string()).collect::<Vec<_>>());
        assert_eq!(order(&["ts DESC", "seq DESC"]), Some((true, true)));
        assert_eq!(order(&["ts", "seq"]), Some((false, false)));
        // Sorted by a field that is not kept (by time), then ties by time and arrival: the first of each decides.
        assert_eq!(order(&["ts DESC", "ts", "seq"]), Some((true, false)));
        assert_eq!(order(&["rule_id DESC", "ts", "seq"]), None);
        assert_eq!(order(&["toInt64OrZero(client_asn)", "ts", "seq"]), None);
        assert_eq!(order(&["ts"]), None);
    }
}
