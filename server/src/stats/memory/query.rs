//! Answering a query from what a customer holds: the filter compiled against the rollup's columns (ids, tested
//! a column at a time), the rows of the chosen rollup or grouped from a finer one, sorted through a bounded
//! heap; raw security events by time.

use std::{collections::BinaryHeap, ops::Range, sync::Arc};

use edge_api::stats::{Family, Filter, Query};
use rustc_hash::FxHashMap;

use super::{
    super::{
        Answer, Cell, DIMS, QueryError,
        rollups::{Conditions, METRICS, Target, answer_columns, dim_id, is_int, metric_index},
    },
    Core, EVENT_DIMS,
    block::Block,
    tenant::{Dict, Events, Tenant, read, write},
};

/// A condition on stored ids: which column, and the id it compares with (None: a value never stored).
struct Test {
    column: usize,
    equal: bool,
    id: Option<u32>,
}

impl Test {
    fn pass(&self, v: u32) -> bool {
        (self.id == Some(v)) == self.equal
    }
}

/// A filter compiled against one rollup's (or the events') columns.
type Compiled = Conditions<Test>;

impl Compiled {
    fn new(
        filter: &Filter,
        customer: &str,
        column_of: impl Fn(usize) -> Option<usize>,
        dicts: &[Dict],
    ) -> Result<Compiled, QueryError> {
        Conditions::of(filter, customer, |d, equal, value| {
            column_of(d).map(|column| Test { column, equal, id: dicts[d].get(&value) })
        })
    }

    fn pass(&self, value: impl Fn(usize) -> u32) -> bool {
        match self {
            Compiled::Nothing => false,
            Compiled::Everything => true,
            Compiled::All(t) => t.iter().all(|t| t.pass(value(t.column))),
            Compiled::Any(t) => t.iter().any(|t| t.pass(value(t.column))),
        }
    }
}

/// One result row before it is written out: its bucket, dimension ids (query order) and metrics.
struct Row {
    bucket: i64,
    dims: Vec<u32>,
    metrics: Vec<u64>,
}

/// How rows are ordered: per sort key, a value that sorts ascending.
struct Order {
    keys: Vec<SortSource>,
}

enum SortSource {
    Bucket { descending: bool },
    Dim { index: usize, rank: Vec<u32>, descending: bool },
    Metric { index: usize, descending: bool },
}

impl Order {
    fn key(&self, bucket: i64, dim: impl Fn(usize) -> u32, metric: impl Fn(usize) -> u64) -> [u64; 6] {
        let mut k = [0u64; 6];
        for (slot, s) in k.iter_mut().zip(&self.keys) {
            let (v, desc) = match s {
                SortSource::Bucket { descending } => ((bucket as u64) ^ (1 << 63), *descending),
                SortSource::Dim { index, rank, descending } => {
                    (u64::from(rank.get(dim(*index) as usize).copied().unwrap_or(0)), *descending)
                }
                SortSource::Metric { index, descending } => (metric(*index), *descending),
            };
            *slot = if desc { u64::MAX - v } else { v };
        }
        k
    }
}

/// Ranks of a dictionary's ids in value order (numeric for integer dimensions).
fn ranks(dict: &Dict, numeric: bool) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..dict.values.len() as u32).collect();
    if numeric {
        ids.sort_by_key(|&i| dict.values[i as usize].parse::<i64>().unwrap_or(i64::MIN));
    } else {
        ids.sort_by(|a, b| dict.values[*a as usize].cmp(&dict.values[*b as usize]));
    }
    let mut rank = vec![0u32; ids.len()];
    for (r, id) in ids.into_iter().enumerate() {
        rank[id as usize] = r as u32;
    }
    rank
}

/// Which rows of a block a filter keeps.
#[derive(Clone, Copy)]
enum Selection {
    All,
    Nothing,
    /// Those marked in the mask.
    Mask,
}

impl Selection {
    fn has(self, mask: &[bool], r: usize) -> bool {
        match self {
            Selection::All => true,
            Selection::Nothing => false,
            Selection::Mask => mask[r],
        }
    }

    fn count(self, mask: &[bool], n: usize) -> usize {
        match self {
            Selection::All => n,
            Selection::Nothing => 0,
            Selection::Mask => mask[..n].iter().filter(|m| **m).count(),
        }
    }
}

/// Evaluates a filter over a block column by column (loops the compiler vectorises), into `mask`.
fn select(filter: &Compiled, block: &Block, mask: &mut Vec<bool>) -> Selection {
    let n = block.len();
    match filter {
        Compiled::Everything => Selection::All,
        Compiled::Nothing => Selection::Nothing,
        Compiled::All(tests) => {
            mask.clear();
            mask.resize(n, true);
            for t in tests {
                match (t.id, t.equal) {
                    (None, true) => return Selection::Nothing,
                    (None, false) => {}
                    (Some(id), eq) => block.dim(t.column).for_each(mask, |m, v| *m &= (v == id) == eq),
                }
            }
            Selection::Mask
        }
        Compiled::Any(tests) => {
            mask.clear();
            mask.resize(n, false);
            for t in tests {
                match (t.id, t.equal) {
                    (None, true) => {}
                    (None, false) => return Selection::All,
                    (Some(id), eq) => block.dim(t.column).for_each(mask, |m, v| *m |= (v == id) == eq),
                }
            }
            Selection::Mask
        }
    }
}

/// Keeps the `k` smallest (key, position) pairs seen.
struct TopK {
    k: usize,
    heap: BinaryHeap<([u64; 6], u64)>,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK { k, heap: BinaryHeap::with_capacity(k.min(1 << 20) + 1) }
    }

    fn offer(&mut self, key: [u64; 6], pos: u64) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push((key, pos));
        } else if let Some(top) = self.heap.peek()
            && (key, pos) < *top
        {
            self.heap.pop();
            self.heap.push((key, pos));
        }
    }

    /// Whether a row whose first key is `first` could enter (cheap to ask before building the whole key).
    fn would_take(&self, first: u64) -> bool {
        self.k > 0 && (self.heap.len() < self.k || self.heap.peek().is_some_and(|(top, _)| first <= top[0]))
    }

    fn sorted(self) -> Vec<([u64; 6], u64)> {
        self.heap.into_sorted_vec()
    }
}

/// `a()` and `b()`, called in that order if `a_first`, else the other way round.
fn in_order<A, B>(a_first: bool, a: impl FnOnce() -> A, b: impl FnOnce() -> B) -> (A, B) {
    if a_first {
        let a = a();
        (a, b())
    } else {
        let b = b();
        (a(), b)
    }
}

impl Core {
    /// Brings rollup `spec` of `t` up to date over `range` with its stand-in (`rollups::stand_ins`), if it is not
    /// summed as batches come: the blocks of the stand-in that changed since are summed again. Their rows count
    /// as the customer's, as they did when every rollup was summed as batches came (a snapshot leaves them out,
    /// and they are summed again when read after a restart).
    pub(super) fn derive(&self, t: &Tenant, spec: usize, range: Range<i64>) {
        let from = self.stand_in[spec];
        if from == spec {
            return;
        }
        let project: Vec<usize> = self.specs[spec]
            .dims
            .iter()
            .map(|d| self.specs[from].dims.iter().position(|x| x == d).unwrap_or(0))
            .collect();
        // Locks by rollup index, the order dictionary compaction takes them all in.
        let derived_first = spec < from;
        let fresh = {
            let (derived, source) = in_order(derived_first, || read(&t.rollups[spec]), || read(&t.rollups[from]));
            derived.is_derived_from(&source, range.clone())
        };
        if fresh {
            return;
        }
        let (mut derived, source) = in_order(derived_first, || write(&t.rollups[spec]), || read(&t.rollups[from]));
        let (added, dropped) = derived.derive_from(&source, range, &project);
        drop((derived, source));
        t.add_rows(added);
        t.drop_rows(dropped);
    }

    pub(super) fn query_rollups(&self, t: &Tenant, customer: &str, q: &Query) -> Result<Answer, QueryError> {
        let target = Target::of(&self.specs, q, self.clock.now_ms())?;
        let (granularity, whole_range, spec_index, aggregate) =
            (target.granularity, target.whole_range, target.spec, target.aggregate);
        self.derive(t, spec_index, q.start_ms..q.end_ms);
        let stored = &target.stored;
        let dim_ids = target.dim_ids();
        let spec = &self.specs[spec_index];
        let dicts = read(&t.dicts);
        let rollup = read(&t.rollups[spec_index]);
        let column_of = |d: usize| spec.dims.iter().position(|x| *x == d);
        let filter = Compiled::new(&q.filter, customer, column_of, &dicts)?;
        let metric_cols: Vec<usize> =
            q.metrics.iter().map(|m| if spec.metrics == METRICS { metric_index(q.family, m) } else { 0 }).collect();
        let dim_cols: Vec<usize> = dim_ids.iter().filter_map(|d| column_of(*d)).collect();
        let blocks: Vec<(i64, &Block)> = rollup.blocks.range(q.start_ms..q.end_ms).map(|(b, blk)| (*b, blk)).collect();

        let order = Order {
            keys: q
                .sortby
                .iter()
                .map(|s| {
                    if s.field == "starttime" || s.field == "endtime" {
                        SortSource::Bucket { descending: s.descending }
                    } else if let Some(i) = q.metrics.iter().position(|m| *m == s.field) {
                        SortSource::Metric { index: i, descending: s.descending }
                    } else {
                        let i = stored.iter().position(|(pos, _)| q.dimensions[*pos] == s.field).unwrap_or(0);
                        let id = dim_ids.get(i).copied().unwrap_or(0);
                        SortSource::Dim {
                            index: i,
                            rank: ranks(&dicts[id], is_int(DIMS[id])),
                            descending: s.descending,
                        }
                    }
                })
                .collect(),
        };
        let per_day = q.family == Family::TopKUrl;
        let want = usize::try_from(q.start.saturating_add(q.limit)).unwrap_or(usize::MAX);

        // Rows, either straight from the rollup (its rows are the answer's) or grouped from a finer one.
        let mut out: Vec<Row> = Vec::new();
        let mut total = 0u64;
        let mut mask = Vec::new();
        if aggregate || whole_range {
            let mut groups: FxHashMap<(i64, Vec<u32>), Vec<u64>> = FxHashMap::default();
            for (bucket, block) in &blocks {
                let b = if whole_range { 0 } else { *bucket };
                let sel = select(&filter, block, &mut mask);
                for r in 0..block.len() {
                    if !sel.has(&mask, r) {
                        continue;
                    }
                    let key: Vec<u32> = dim_cols.iter().map(|c| block.dim(*c).get(r)).collect();
                    let m = groups.entry((b, key)).or_insert_with(|| vec![0; metric_cols.len()]);
                    for (slot, c) in m.iter_mut().zip(&metric_cols) {
                        *slot += block.metric(*c).get(r);
                    }
                }
            }
            let mut rows: Vec<Row> =
                groups.into_iter().map(|((bucket, dims), metrics)| Row { bucket, dims, metrics }).collect();
            // Ties keep a fixed order: by bucket, then by the order values were first seen.
            rows.sort_by(|a, b| (a.bucket, &a.dims).cmp(&(b.bucket, &b.dims)));
            if per_day {
                rows.sort_by(|a, b| a.bucket.cmp(&b.bucket).then(b.metrics[0].cmp(&a.metrics[0])));
                let mut count = 0;
                let mut day = i64::MIN;
                rows.retain(|r| {
                    if r.bucket != day {
                        day = r.bucket;
                        count = 0;
                    }
                    count += 1;
                    count <= edge_api::stats::TOPK_URL_PER_DAY as usize
                });
                total = rows.len() as u64;
                out = rows;
            } else {
                total = rows.len() as u64;
                let mut keyed: Vec<([u64; 6], usize)> = rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (order.key(r.bucket, |d| r.dims[d], |m| r.metrics[m]), i))
                    .collect();
                keyed.sort_unstable();
                let mut rows: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
                out = keyed
                    .into_iter()
                    .skip(q.start as usize)
                    .take(q.limit as usize)
                    .filter_map(|(_, i)| rows[i].take())
                    .collect();
            }
        } else if per_day {
            // Each block is a day: its top 20 by hits.
            let hits = metric_cols.first().copied().unwrap_or(0);
            for (bucket, block) in &blocks {
                let sel = select(&filter, block, &mut mask);
                let mut day: Vec<(u64, usize)> =
                    (0..block.len()).filter(|r| sel.has(&mask, *r)).map(|r| (block.metric(hits).get(r), r)).collect();
                let k = (edge_api::stats::TOPK_URL_PER_DAY as usize).min(day.len());
                if k < day.len() {
                    day.select_nth_unstable_by(k, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                    day.truncate(k);
                }
                day.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                out.extend(day.into_iter().map(|(_, r)| row_of(*bucket, block, r, &dim_cols, &metric_cols)));
            }
            total = out.len() as u64;
        } else if order.keys.is_empty() {
            // Unsorted: the rows in bucket order; count them all, keep the slice.
            for (bucket, block) in &blocks {
                let sel = select(&filter, block, &mut mask);
                let n = sel.count(&mask, block.len()) as u64;
                let (from, to) = (total, total + n);
                total = to;
                if to <= q.start || out.len() >= q.limit as usize {
                    continue;
                }
                let mut seen = from;
                for r in 0..block.len() {
                    if !sel.has(&mask, r) {
                        continue;
                    }
                    if seen >= q.start && out.len() < q.limit as usize {
                        out.push(row_of(*bucket, block, r, &dim_cols, &metric_cols));
                    }
                    seen += 1;
                }
            }
        } else {
            let mut top = TopK::new(want);
            let single_metric = match order.keys.as_slice() {
                [SortSource::Metric { index, descending }] => Some((metric_cols[*index], *descending)),
                _ => None,
            };
            for (bi, (bucket, block)) in blocks.iter().enumerate() {
                let sel = select(&filter, block, &mut mask);
                total += sel.count(&mask, block.len()) as u64;
                let pos = |r: usize| ((bi as u64) << 32) | r as u64;
                match single_metric {
                    Some((col, desc)) => {
                        // A tight loop over one column; most rows fall short of the current k-th best.
                        for (r, v) in block.metric(col).iter().enumerate() {
                            let key = if desc { u64::MAX - v } else { v };
                            if top.would_take(key) && sel.has(&mask, r) {
                                top.offer([key, 0, 0, 0, 0, 0], pos(r));
                            }
                        }
                    }
                    None => {
                        for r in 0..block.len() {
                            if sel.has(&mask, r) {
                                let key = order.key(
                                    *bucket,
                                    |d| block.dim(dim_cols[d]).get(r),
                                    |m| block.metric(metric_cols[m]).get(r),
                                );
                                top.offer(key, pos(r));
                            }
                        }
                    }
                }
            }
            out = top
                .sorted()
                .into_iter()
                .skip(q.start as usize)
                .map(|(_, pos)| {
                    let (bucket, block) = blocks[(pos >> 32) as usize];
                    row_of(bucket, block, (pos & 0xffff_ffff) as usize, &dim_cols, &metric_cols)
                })
                .collect();
        }

        // Columns and cells in the query's order.
        let with_time = !whole_range;
        let step = granularity.millis();
        let columns = answer_columns(q, with_time);
        let customer: Arc<str> = Arc::from(customer);
        let rows = out
            .into_iter()
            .map(|row| {
                let mut cells = Vec::with_capacity(columns.len());
                if with_time {
                    cells.push(Cell::Time(row.bucket));
                    cells.push(Cell::Time(row.bucket + step));
                }
                let mut stored_i = 0;
                for d in &q.dimensions {
                    if d == "customer" {
                        cells.push(Cell::Text(customer.clone()));
                        continue;
                    }
                    let id = dim_ids[stored_i];
                    let value = dicts[id].value(row.dims[stored_i]);
                    stored_i += 1;
                    cells.push(if is_int(d) { Cell::Int(value.parse().unwrap_or(0)) } else { Cell::Text(value) });
                }
                cells.extend(row.metrics.iter().map(|m| Cell::Int(*m as i64)));
                cells
            })
            .collect();
        Ok(Answer { columns, rows, total })
    }

    pub(super) fn query_events(
        &self,
        dicts: &[Dict],
        ev: &Events,
        customer: &str,
        q: &Query,
    ) -> Result<Answer, QueryError> {
        let col_of = |d: usize| EVENT_DIMS.iter().position(|n| dim_id(n) == Some(d));
        let filter = Compiled::new(&q.filter, customer, col_of, dicts)?;
        let lo = ev.ts.partition_point(|x| *x < q.start_ms);
        let hi = ev.ts.partition_point(|x| *x < q.end_ms);
        let dims: Vec<Option<(usize, usize)>> = q
            .dimensions
            .iter()
            .map(|d| {
                if d == "event_timestamp_ms" || d == "customer" {
                    None
                } else {
                    dim_id(d).and_then(|id| col_of(id).map(|c| (id, c)))
                }
            })
            .collect();
        let order = Order {
            keys: q
                .sortby
                .iter()
                .map(|s| match q.dimensions.iter().position(|d| *d == s.field) {
                    Some(i) => match dims[i] {
                        Some((id, _)) => SortSource::Dim {
                            index: i,
                            rank: ranks(&dicts[id], is_int(DIMS[id])),
                            descending: s.descending,
                        },
                        None => SortSource::Bucket { descending: s.descending },
                    },
                    None => SortSource::Bucket { descending: s.descending },
                })
                .collect(),
        };
        let value = |i: usize, r: usize| dims[i].map_or(0, |(_, c)| ev.cols[c][r]);
        let mut total = 0u64;
        let mut picked: Vec<usize> = Vec::new();
        let by_time_desc = matches!(order.keys.as_slice(), [SortSource::Bucket { descending: true }]);
        if order.keys.is_empty() || by_time_desc {
            let range: Box<dyn Iterator<Item = usize>> =
                if by_time_desc { Box::new((lo..hi).rev()) } else { Box::new(lo..hi) };
            for r in range {
                if filter.pass(|c| ev.cols[c][r]) {
                    if total >= q.start && (picked.len() as u64) < q.limit {
                        picked.push(r);
                    }
                    total += 1;
                }
            }
        } else {
            let mut top = TopK::new(usize::try_from(q.start.saturating_add(q.limit)).unwrap_or(usize::MAX));
            for r in lo..hi {
                if filter.pass(|c| ev.cols[c][r]) {
                    total += 1;
                    top.offer(order.key(ev.ts[r], |i| value(i, r), |_| 0), r as u64);
                }
            }
            picked = top.sorted().into_iter().skip(q.start as usize).map(|(_, r)| r as usize).collect();
        }
        let customer: Arc<str> = Arc::from(customer);
        let columns = q.dimensions.iter().map(|d| (d.clone(), is_int(d))).collect();
        let rows = picked
            .into_iter()
            .map(|r| {
                q.dimensions
                    .iter()
                    .enumerate()
                    .map(|(i, d)| match dims[i] {
                        _ if d == "event_timestamp_ms" => Cell::Time(ev.ts[r]),
                        _ if d == "customer" => Cell::Text(customer.clone()),
                        Some((id, c)) => {
                            let v = dicts[id].value(ev.cols[c][r]);
                            if is_int(d) { Cell::Int(v.parse().unwrap_or(0)) } else { Cell::Text(v) }
                        }
                        None => Cell::Text(Arc::from("")),
                    })
                    .collect()
            })
            .collect();
        Ok(Answer { columns, rows, total })
    }
}

fn row_of(bucket: i64, block: &Block, r: usize, dim_cols: &[usize], metric_cols: &[usize]) -> Row {
    Row {
        bucket,
        dims: dim_cols.iter().map(|c| block.dim(*c).get(r)).collect(),
        metrics: metric_cols.iter().map(|c| block.metric(*c).get(r)).collect(),
    }
}
