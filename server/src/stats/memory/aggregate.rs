//! Summing an ingested batch into the rollups. A [`Plan`] orders the rollups of a family as a lattice: only the
//! grouping sets that no other set contains are summed record by record; every other one is summed from an
//! already summed parent (a superset of its dimensions, of the same or a finer granularity — hours and days
//! from five minutes), the one with the fewest rows. Then each batch aggregate is merged into its open stored
//! blocks: every row's place first (index probes, each asked for a few rows ahead, as a large block's index is
//! out of cache), then the sums, row by row.

use std::sync::{RwLock, atomic::AtomicU64};

use edge_api::stats::Granularity;
use rustc_hash::FxHashMap;

use super::{
    super::{Limits, rollups::Spec},
    ID_BITS,
    block::{Block, Rollup},
};

/// Which records of a batch a rollup sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::stats) enum Records {
    All,
    /// Security events of one source (`waf` or not), only the rate-limited ones if `rate_limited`.
    Security {
        waf: bool,
        rate_limited: bool,
    },
}

/// Where a node's rows go.
struct Target {
    spec: usize,
    /// For each key column, the batch map (batch id → dictionary id) of the rollup's dimension.
    maps: Vec<usize>,
    /// For each of the rollup's metrics, the batch sum it takes.
    metrics: Vec<usize>,
}

/// One distinct (records, granularity, key) of the family's rollups; several rollups may share it.
struct Node {
    records: Records,
    step: i64,
    /// Batch columns of its key, in the order of its rollups' dimensions.
    cols: Vec<usize>,
    targets: Vec<Target>,
    /// Earlier nodes it may be summed from: same records, each of `cols` (but the constant column), the
    /// coarsest granularity available that divides its own. Empty: summed from the records.
    parents: Vec<usize>,
    /// The last node that may be summed from this one.
    last_use: usize,
}

/// How a family's rollups are summed from a batch.
pub(in crate::stats) struct Plan {
    nodes: Vec<Node>,
    /// Sums a row (8 for access logs, 1 for security events).
    metrics: usize,
    /// When a batch is summed in `p + 1` parts at once, `owners[p][node]` is the part that sums the node and
    /// merges its rows (see [`Plan::apply`]).
    owners: Vec<Vec<usize>>,
}

/// The most parts a batch is summed in at once.
pub(super) const MAX_PARTS: usize = 4;

/// What a rollup takes from a batch of its family, or None if it takes nothing.
pub(in crate::stats) struct Mapping {
    pub records: Records,
    /// For each dimension of the rollup: the batch column and the batch map of its dictionary.
    pub dims: Vec<(usize, usize)>,
    /// For each metric of the rollup: the batch sum it takes.
    pub metrics: Vec<usize>,
}

impl Plan {
    /// `constant`: a batch column whose value is the same for every record (`waf_action` of access logs);
    /// `mapping`: what spec `i` takes from a batch, None if it takes nothing.
    pub(in crate::stats) fn new(
        specs: &[Spec],
        metrics: usize,
        constant: Option<usize>,
        mapping: impl Fn(usize, &Spec) -> Option<Mapping>,
    ) -> Plan {
        let mut nodes: Vec<Node> = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            let Some(m) = mapping(i, spec) else { continue };
            let cols: Vec<usize> = m.dims.iter().map(|(c, _)| *c).collect();
            let target = Target { spec: i, maps: m.dims.iter().map(|(_, map)| *map).collect(), metrics: m.metrics };
            let step = spec.granularity.millis();
            match nodes.iter_mut().find(|n| n.records == m.records && n.step == step && n.cols == cols) {
                Some(n) => n.targets.push(target),
                None => nodes.push(Node {
                    records: m.records,
                    step,
                    cols,
                    targets: vec![target],
                    parents: Vec::new(),
                    last_use: 0,
                }),
            }
        }
        // Finer granularities first, then larger keys: a node's parents come before it.
        let key_len = |n: &Node| n.cols.iter().filter(|c| Some(**c) != constant).count();
        nodes.sort_by_key(|n| (n.step, std::cmp::Reverse(key_len(n))));
        for i in 0..nodes.len() {
            let (before, rest) = nodes.split_at_mut(i);
            let node = &mut rest[0];
            let holds = |p: &Node| {
                p.records == node.records
                    && node.step % p.step == 0
                    && node.cols.iter().all(|c| Some(*c) == constant || p.cols.contains(c))
            };
            let coarsest = before.iter().filter(|p| holds(p)).map(|p| p.step).max();
            node.parents = (0..i).filter(|p| holds(&before[*p]) && Some(before[*p].step) == coarsest).collect();
            for p in &node.parents {
                before[*p].last_use = i;
            }
        }
        for (i, n) in nodes.iter_mut().enumerate() {
            n.last_use = n.last_use.max(i);
        }
        let owners = (1..=MAX_PARTS).map(|parts| owners(&nodes, parts)).collect();
        Plan { nodes, metrics, owners }
    }

    /// Sums node `i` from the records or from the smallest summed parent `mine` allows.
    fn sum_node(
        &self,
        work: &mut Work,
        aggs: &[Agg],
        i: usize,
        input: &Input,
        zeros: &[u32],
        mine: impl Fn(usize) -> bool,
    ) -> Agg {
        let (node, n, m) = (&self.nodes[i], input.ts.len(), self.metrics);
        let mut out = work.spare.pop().unwrap_or_default();
        out.clear(node.cols.len());
        let parent = node.parents.iter().copied().filter(|p| mine(*p)).min_by_key(|p| aggs[*p].len());
        match parent {
            None => {
                let cols: Vec<&[u32]> = node.cols.iter().map(|c| &input.cols[*c][..n]).collect();
                let card: Vec<usize> = node.cols.iter().map(|c| input.card[*c]).collect();
                let wanted = input.wanted.iter().find(|(r, _)| *r == node.records).map(|(_, w)| *w);
                match input.metrics {
                    Metrics::Columns(c) => {
                        work.sum(&mut out, node.step, input.ts, &cols, &card, Columns(c), wanted, Some(node.records))
                    }
                    Metrics::Count => {
                        work.sum(&mut out, node.step, input.ts, &cols, &card, Count, wanted, Some(node.records))
                    }
                }
            }
            Some(p) => {
                let (pnode, pagg) = (&self.nodes[p], &aggs[p]);
                let len = pagg.len();
                let cols: Vec<&[u32]> = node
                    .cols
                    .iter()
                    .map(|c| match pnode.cols.iter().position(|x| x == c) {
                        Some(at) => &pagg.cols[at][..],
                        None => &zeros[..len],
                    })
                    .collect();
                let card: Vec<usize> = node.cols.iter().map(|c| input.card[*c]).collect();
                let rows = Rows { sums: &pagg.sums, m, firsts: &pagg.firsts };
                work.sum(&mut out, node.step, &pagg.buckets, &cols, &card, rows, None, None);
            }
        }
        out
    }

    /// Sums `input` into every rollup of the plan and hands each rollup's rows to `emit`, rollup by rollup
    /// (what ClickHouse stores; each row with its first record).
    pub(in crate::stats) fn sum_each(&self, work: &mut Work, input: &Input, mut emit: impl FnMut(Summed<'_>)) {
        let n = input.ts.len();
        work.firsts = true;
        let (mut aggs, zeros) = work.start(self.nodes.len(), n);
        for (i, node) in self.nodes.iter().enumerate() {
            aggs[i] = self.sum_node(work, &aggs, i, input, &zeros[..], |_| true);
            let agg = &aggs[i];
            for target in &node.targets {
                emit(Summed {
                    spec: target.spec,
                    buckets: &agg.buckets,
                    cols: node.cols.iter().zip(&agg.cols).map(|(c, ids)| (*c, &ids[..])).collect(),
                    sums: &agg.sums,
                    width: self.metrics,
                    metrics: &target.metrics,
                    firsts: &agg.firsts,
                });
            }
            work.recycle(&mut aggs, |j| j <= i && self.nodes[j].last_use <= i);
        }
        work.finish(aggs, zeros);
        work.firsts = false;
    }

    /// Nodes summed record by record.
    #[cfg(test)]
    fn roots(&self) -> usize {
        self.nodes.iter().filter(|n| n.parents.is_empty()).count()
    }
}

/// Which of `parts` parts sums each node: every node with a parent of its own part (so a part never waits for
/// another), the parts' rollups about as many. Nodes come parents first; each goes to the least loaded part
/// among those of its possible parents (any part for a node summed from the records).
fn owners(nodes: &[Node], parts: usize) -> Vec<usize> {
    let mut load = vec![0usize; parts];
    let mut owner = Vec::with_capacity(nodes.len());
    for node in nodes {
        let part = if node.parents.is_empty() {
            (0..parts).min_by_key(|p| load[*p]).unwrap_or(0)
        } else {
            node.parents.iter().map(|p| owner[*p]).min_by_key(|p: &usize| load[*p]).unwrap_or(0)
        };
        load[part] += node.targets.len();
        owner.push(part);
    }
    owner
}

/// A batch's metrics, record by record.
pub(in crate::stats) enum Metrics<'a> {
    /// One column per sum.
    Columns(&'a [&'a [u64]]),
    /// Every record counts 1 (security events).
    Count,
}

/// A batch as the plan reads it.
pub(in crate::stats) struct Input<'a> {
    pub ts: &'a [i64],
    /// Per batch column: each record's batch id.
    pub cols: Vec<&'a [u32]>,
    /// Per batch column: how many distinct values it has.
    pub card: Vec<usize>,
    pub metrics: Metrics<'a>,
    /// Per kind of records other than all: whether each record is one.
    pub wanted: Vec<(Records, &'a [bool])>,
    /// The batch's maps from batch ids to dictionary ids.
    pub maps: &'a [Vec<u32>],
}

/// The rows of a node summed from one batch: bucket, key (batch ids) and sums.
#[derive(Default)]
struct Agg {
    buckets: Vec<i64>,
    /// The distinct values of `buckets`, in order.
    bucket_list: Vec<i64>,
    cols: Vec<Vec<u32>>,
    /// `metrics` sums a row.
    sums: Vec<u64>,
    /// Each row's first record (its smallest index in the batch), when the [`Work`] keeps them.
    firsts: Vec<u32>,
}

impl Agg {
    fn clear(&mut self, key_len: usize) {
        self.buckets.clear();
        self.bucket_list.clear();
        self.sums.clear();
        self.firsts.clear();
        self.cols.resize_with(key_len, Vec::new);
        self.cols.iter_mut().for_each(Vec::clear);
    }

    fn len(&self) -> usize {
        self.buckets.len()
    }
}

/// Where a row's sums come from.
trait Source {
    /// Sums a row.
    fn width(&self) -> usize;
    fn first(&self, i: usize, out: &mut Vec<u64>);
    fn add(&self, i: usize, to: &mut [u64]);
    /// The first record of input row `i`.
    fn first_record(&self, i: usize) -> u32;
}

struct Columns<'a>(&'a [&'a [u64]]);

impl Source for Columns<'_> {
    #[inline]
    fn first_record(&self, i: usize) -> u32 {
        i as u32
    }
    fn width(&self) -> usize {
        self.0.len()
    }
    #[inline]
    fn first(&self, i: usize, out: &mut Vec<u64>) {
        out.extend(self.0.iter().map(|c| c[i]));
    }
    #[inline]
    fn add(&self, i: usize, to: &mut [u64]) {
        for (t, c) in to.iter_mut().zip(self.0) {
            *t += c[i];
        }
    }
}

struct Count;

impl Source for Count {
    #[inline]
    fn first_record(&self, i: usize) -> u32 {
        i as u32
    }
    fn width(&self) -> usize {
        1
    }
    #[inline]
    fn first(&self, _: usize, out: &mut Vec<u64>) {
        out.push(1);
    }
    #[inline]
    fn add(&self, _: usize, to: &mut [u64]) {
        to[0] += 1;
    }
}

struct Rows<'a> {
    sums: &'a [u64],
    m: usize,
    firsts: &'a [u32],
}

impl Source for Rows<'_> {
    #[inline]
    fn first_record(&self, i: usize) -> u32 {
        self.firsts.get(i).copied().unwrap_or(u32::MAX)
    }
    fn width(&self) -> usize {
        self.m
    }
    #[inline]
    fn first(&self, i: usize, out: &mut Vec<u64>) {
        out.extend_from_slice(&self.sums[i * self.m..(i + 1) * self.m]);
    }
    #[inline]
    fn add(&self, i: usize, to: &mut [u64]) {
        for (t, v) in to.iter_mut().zip(&self.sums[i * self.m..(i + 1) * self.m]) {
            *t += v;
        }
    }
}

/// One rollup's rows summed from a batch ([`Plan::sum_each`]).
pub(in crate::stats) struct Summed<'a> {
    /// The rollup (an index into the plan's specs).
    pub spec: usize,
    /// Each row's bucket.
    pub buckets: &'a [i64],
    /// For each dimension of the rollup, in its order: the batch column, and each row's batch id in it.
    pub cols: Vec<(usize, &'a [u32])>,
    /// `width` sums a row, of which the rollup's metrics are `metrics` (indices into a row's sums).
    pub sums: &'a [u64],
    pub width: usize,
    pub metrics: &'a [usize],
    /// Each row's first record.
    pub firsts: &'a [u32],
}

/// Tables for summing, kept with their capacity from batch to batch.
#[derive(Default)]
pub(in crate::stats) struct Work {
    /// Keep each summed row's first record (what ClickHouse's rollups keep for their order of ties).
    firsts: bool,
    aggs: Vec<Agg>,
    spare: Vec<Agg>,
    /// Per input row: the index of its bucket in `buckets` (u32::MAX: not summed).
    slots: Vec<u32>,
    buckets: Vec<i64>,
    /// The granularity and records `slots` and `buckets` were computed for from the batch's records, if they
    /// were (root nodes of one granularity share them).
    slots_of: Option<(i64, Records)>,
    bucket_slots: FxHashMap<i64, u32>,
    /// Row of each key, by position (keys of few possible values).
    table: Vec<u32>,
    /// Open addressing: keys (u64::MAX empty) and rows.
    keys: Vec<u64>,
    rows: Vec<u32>,
    wide: FxHashMap<(u32, u128), u32>,
    zeros: Vec<u32>,
    /// Merge: per row of a bucket, (aggregate row, stored row).
    targets: Vec<(u32, u32)>,
    keys128: Vec<u128>,
    /// Merge: the block of each of `targets` (an index into the merge's blocks).
    block_of: Vec<u32>,
    /// Merge: aggregate rows in bucket order, where each bucket's start, and each row's bucket.
    order: Vec<u32>,
    starts: Vec<u32>,
    pos: Vec<u32>,
}

/// Rows between the stages of a merge's fetching ahead.
const AHEAD: usize = 8;

/// Keys with at most this many possible values (or twice the input's rows, if more) are summed in a table.
const DENSE_KEYS: usize = 4096;

impl Work {
    /// The aggregates of a batch's `nodes` nodes (none summed yet) and `n` zeros, taken out of the tables.
    fn start(&mut self, nodes: usize, n: usize) -> (Vec<Agg>, Vec<u32>) {
        // Buckets found for the previous batch are not this one's.
        self.slots_of = None;
        let mut aggs = std::mem::take(&mut self.aggs);
        aggs.resize_with(nodes, Default::default);
        if self.zeros.len() < n {
            self.zeros.resize(n, 0);
        }
        (aggs, std::mem::take(&mut self.zeros))
    }

    /// Keeps the aggregates `done` with (by node) for the next nodes to sum into.
    fn recycle(&mut self, aggs: &mut [Agg], done: impl Fn(usize) -> bool) {
        for (j, a) in aggs.iter_mut().enumerate() {
            if a.cols.capacity() > 0 && done(j) {
                self.spare.push(std::mem::take(a));
            }
        }
    }

    /// Puts back what [`Work::start`] took, every aggregate done with.
    fn finish(&mut self, mut aggs: Vec<Agg>, zeros: Vec<u32>) {
        self.recycle(&mut aggs, |_| true);
        self.aggs = aggs;
        self.zeros = zeros;
    }

    /// Sums `len` input rows of time or bucket `ts`, key columns `cols` (batch ids below `card`) and sums
    /// `source` into `out`, by bucket of `step`; only rows that are `wanted`. `records`: the kind of the
    /// batch's records summed (None when `ts` are not the batch's), so that nodes of the same granularity
    /// and records find each record's bucket once.
    #[allow(clippy::too_many_arguments)]
    fn sum<S: Source>(
        &mut self,
        out: &mut Agg,
        step: i64,
        ts: &[i64],
        cols: &[&[u32]],
        card: &[usize],
        source: S,
        wanted: Option<&[bool]>,
        records: Option<Records>,
    ) {
        let n = ts.len();
        // Buckets: a batch of logs covers few, in order.
        let tag = records.map(|r| (step, r));
        if tag.is_none() || tag != self.slots_of {
            self.slots.clear();
            self.buckets.clear();
            self.bucket_slots.clear();
            let mut last = (i64::MIN, u32::MAX);
            for (i, t) in ts.iter().enumerate() {
                if wanted.is_some_and(|w| !w[i]) {
                    self.slots.push(u32::MAX);
                    continue;
                }
                let bucket = t - t.rem_euclid(step);
                if bucket != last.0 {
                    let next = self.buckets.len() as u32;
                    let slot = *self.bucket_slots.entry(bucket).or_insert(next);
                    if slot == next {
                        self.buckets.push(bucket);
                    }
                    last = (bucket, slot);
                }
                self.slots.push(last.1);
            }
            self.slots_of = tag;
        }
        out.bucket_list.extend_from_slice(&self.buckets);
        out.bucket_list.sort_unstable();
        let product = card.iter().try_fold(1u64, |p, c| p.checked_mul(*c.max(&1) as u64));
        let space = product.and_then(|p| p.checked_mul(self.buckets.len().max(1) as u64)).filter(|s| *s < u64::MAX);
        let w = source.width();
        let position =
            |i: usize| cols.iter().zip(card).fold(0u64, |k, (c, n)| k * (*n).max(1) as u64 + u64::from(c[i]));
        let firsts = self.firsts;
        let new_row = |out: &mut Agg, i: usize, bucket: i64| {
            out.buckets.push(bucket);
            for (o, c) in out.cols.iter_mut().zip(cols) {
                o.push(c[i]);
            }
            source.first(i, &mut out.sums);
            if firsts {
                out.firsts.push(source.first_record(i));
            }
        };
        let add = |out: &mut Agg, i: usize, row: usize| {
            source.add(i, &mut out.sums[row * w..(row + 1) * w]);
            if firsts {
                out.firsts[row] = out.firsts[row].min(source.first_record(i));
            }
        };
        match (product, space) {
            (Some(product), Some(space)) if space as usize <= DENSE_KEYS.max(2 * n) => {
                self.table.clear();
                self.table.resize(space as usize, u32::MAX);
                for i in 0..n {
                    let slot = self.slots[i];
                    if slot == u32::MAX {
                        continue;
                    }
                    let at = (u64::from(slot) * product + position(i)) as usize;
                    match self.table[at] {
                        u32::MAX => {
                            self.table[at] = out.len() as u32;
                            new_row(out, i, self.buckets[slot as usize]);
                        }
                        row => add(out, i, row as usize),
                    }
                }
            }
            (Some(product), Some(_)) => {
                let capacity = (2 * n).next_power_of_two().max(16);
                let shift = 64 - capacity.trailing_zeros();
                self.keys.clear();
                self.keys.resize(capacity, u64::MAX);
                self.rows.resize(capacity, 0);
                for i in 0..n {
                    let slot = self.slots[i];
                    if slot == u32::MAX {
                        continue;
                    }
                    let key = u64::from(slot) * product + position(i);
                    let mut at = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
                    loop {
                        let k = self.keys[at];
                        if k == key {
                            add(out, i, self.rows[at] as usize);
                            break;
                        }
                        if k == u64::MAX {
                            self.keys[at] = key;
                            self.rows[at] = out.len() as u32;
                            new_row(out, i, self.buckets[slot as usize]);
                            break;
                        }
                        at = (at + 1) & (capacity - 1);
                    }
                }
            }
            _ => {
                self.wide.clear();
                for i in 0..n {
                    let slot = self.slots[i];
                    if slot == u32::MAX {
                        continue;
                    }
                    let key = cols.iter().fold(0u128, |k, c| (k << ID_BITS) | u128::from(c[i]));
                    match self.wide.entry((slot, key)) {
                        std::collections::hash_map::Entry::Occupied(e) => add(out, i, *e.get() as usize),
                        std::collections::hash_map::Entry::Vacant(e) => {
                            e.insert(out.len() as u32);
                            new_row(out, i, self.buckets[slot as usize]);
                        }
                    }
                }
            }
        }
    }
}

fn lock<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

fn try_lock<T>(lock: &RwLock<T>) -> Option<std::sync::RwLockWriteGuard<'_, T>> {
    match lock.try_write() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

impl Plan {
    /// Sums `input` into `rollups` (by spec index), node by node; `horizon` tells which buckets are kept and live (see [`Horizon`]). A rollup another batch is merging into is left for later, so that concurrent batches
    /// work on different rollups rather than wait for each other.
    /// `(part, parts)`: this call sums the nodes of `part` of `parts` (see [`owners`]); the calls of all
    /// parts, on threads of their own, sum the batch.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply(
        &self,
        work: &mut Work,
        input: &Input,
        rollups: &[RwLock<Rollup>],
        horizon: &Horizon,
        rows: &AtomicU64,
        (part, parts): (usize, usize),
    ) {
        let owners = &self.owners[parts.clamp(1, MAX_PARTS) - 1];
        let n = input.ts.len();
        let m = self.metrics;
        let (mut aggs, zeros) = work.start(self.nodes.len(), n);
        // (node, target) merges waiting for a lock; aggregates still needed.
        let mut waiting: Vec<(usize, usize)> = Vec::new();
        let mut pending = vec![0usize; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            if owners[i] != part {
                continue;
            }
            aggs[i] = self.sum_node(work, &aggs, i, input, &zeros[..], |p| owners[p] == part);
            for (t, target) in node.targets.iter().enumerate() {
                match try_lock(&rollups[target.spec]) {
                    Some(mut rollup) => merge(work, &aggs[i], node, target, m, input.maps, &mut rollup, horizon, rows),
                    None => {
                        waiting.push((i, t));
                        pending[i] += 1;
                    }
                }
            }
            // Merges that waited, if their rollup is free now.
            waiting.retain(|&(w, t)| {
                let target = &self.nodes[w].targets[t];
                match try_lock(&rollups[target.spec]) {
                    Some(mut rollup) => {
                        merge(work, &aggs[w], &self.nodes[w], target, m, input.maps, &mut rollup, horizon, rows);
                        pending[w] -= 1;
                        false
                    }
                    None => true,
                }
            });
            // Aggregates no later node is summed from, and merged, are done with.
            work.recycle(&mut aggs, |j| j <= i && self.nodes[j].last_use <= i && pending[j] == 0);
        }
        for (w, t) in waiting {
            let target = &self.nodes[w].targets[t];
            let mut rollup = lock(&rollups[target.spec]);
            merge(work, &aggs[w], &self.nodes[w], target, m, input.maps, &mut rollup, horizon, rows);
        }
        work.finish(aggs, zeros);
    }
}

/// When a batch is applied, and what is kept: which buckets each granularity keeps.
pub(super) struct Horizon {
    pub(super) now_ms: i64,
    pub(super) limits: Limits,
}

impl Horizon {
    /// The first bucket kept of the granularity of `step` milliseconds.
    fn kept_from(&self, step: i64) -> i64 {
        Granularity::ALL
            .into_iter()
            .find(|g| g.millis() == step)
            .and_then(|g| self.limits.kept_from(g, self.now_ms))
            .unwrap_or(i64::MIN)
    }
}

/// Asks the processor to fetch the cache lines of `value` (a block's fields: its index and sums).
#[inline]
fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let at: *const T = value;
        for line in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: a prefetch is a hint; it reads nothing and cannot fault.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    at.cast::<i8>().wrapping_add(line),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Adds a node's batch rows to one of its rollups: every row's place in the open block of its bucket (found
/// or added), then the sums. The rows come bucket after bucket (records are summed in time order), and what
/// they need is asked for ahead: the block a few buckets on, the index slot a few rows on — a batch spread
/// over days has few rows a block, in blocks far out of cache.
#[allow(clippy::too_many_arguments)]
fn merge(
    work: &mut Work,
    agg: &Agg,
    node: &Node,
    target: &Target,
    m: usize,
    maps: &[Vec<u32>],
    rollup: &mut Rollup,
    horizon: &Horizon,
    added: &AtomicU64,
) {
    let kept = agg.bucket_list.partition_point(|b| *b < horizon.kept_from(node.step));
    if agg.len() == 0 || kept == agg.bucket_list.len() {
        return;
    }
    let k = node.cols.len();
    let maps: Vec<&[u32]> = target.maps.iter().map(|m| &maps[*m][..]).collect();
    // Rows in bucket order: as they are when the records were in time order, else by a counting sort.
    work.order.clear();
    if agg.buckets.is_sorted() {
        let first = agg.buckets.partition_point(|b| *b < agg.bucket_list[kept]);
        work.order.extend(first as u32..agg.len() as u32);
    } else {
        let n_buckets = agg.bucket_list.len();
        work.starts.clear();
        work.starts.resize(n_buckets + 1, 0);
        work.pos.clear();
        for b in &agg.buckets {
            let p = agg.bucket_list.binary_search(b).unwrap_or(0) as u32;
            work.pos.push(p);
            work.starts[p as usize + 1] += 1;
        }
        for i in 0..n_buckets {
            work.starts[i + 1] += work.starts[i];
        }
        let skip = work.starts[kept] as usize;
        work.order.resize(agg.len(), 0);
        for (j, p) in work.pos.iter().enumerate() {
            let at = &mut work.starts[*p as usize];
            work.order[*at as usize] = j as u32;
            *at += 1;
        }
        work.order.drain(..skip);
    }
    let mut blocks = rollup.blocks_for(&agg.bucket_list[kept..], k, target.metrics.len());
    work.keys128.clear();
    work.targets.clear();
    work.block_of.clear();
    let mut b = 0;
    for &j in &work.order {
        while agg.buckets[j as usize] != agg.bucket_list[kept + b] {
            b += 1;
        }
        let key = agg
            .cols
            .iter()
            .zip(&maps)
            .fold(0u128, |key, (c, map)| (key << ID_BITS) | u128::from(map[c[j as usize] as usize]));
        work.keys128.push(key);
        work.targets.push((j, 0));
        work.block_of.push(b as u32);
    }
    let rows = work.targets.len();
    let mut new_rows = 0;
    // Three stages ahead of the row at hand: its block, then its index slot, then the row that slot points to.
    for t in 0..rows {
        if let Some(ahead) = work.block_of.get(t + 3 * AHEAD) {
            prefetch::<Block>(blocks[*ahead as usize]);
        }
        if let Some(ahead) = work.block_of.get(t + 2 * AHEAD) {
            blocks[*ahead as usize].prefetch(work.keys128[t + 2 * AHEAD]);
        }
        if let Some(ahead) = work.block_of.get(t + AHEAD) {
            blocks[*ahead as usize].prefetch_match(work.keys128[t + AHEAD]);
        }
        let block = &mut blocks[work.block_of[t] as usize];
        let (row, new) = block.find_or_add(work.keys128[t]);
        new_rows += u64::from(new);
        let j = work.targets[t].0 as usize;
        let sums = &agg.sums[j * m..(j + 1) * m];
        for (s, src) in block.row_mut(row).iter_mut().zip(&target.metrics) {
            *s += sums[*src];
        }
    }
    added.fetch_add(new_rows, std::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::super::all_specs;
    use super::*;

    #[test]
    fn most_rollups_are_summed_from_a_parent() {
        let specs = all_specs();
        let plan = Plan::new(&specs, 8, Some(15), |_, s| super::super::access_mapping(s));
        assert!(plan.nodes.iter().map(|n| n.targets.len()).sum::<usize>() >= 145);
        assert!(plan.roots() <= 24, "{} roots", plan.roots());
    }

    #[test]
    fn parts_sum_nodes_from_parents_of_their_own_and_share_the_rollups_about_evenly() {
        let specs = all_specs();
        // Every rollup (the most a plan holds), and the stand-ins the embedded engine sums.
        let stand_in = super::super::summed_stand_ins(&specs);
        for (plan, total) in [
            (super::super::access_plan(&specs, |_| true), 145),
            (super::super::security_plan(&specs, |_| true), 0),
            (super::super::access_plan(&specs, |i| stand_in[i] == i), 0),
            (super::super::security_plan(&specs, |i| stand_in[i] == i), 0),
        ] {
            let all: usize = plan.nodes.iter().map(|n| n.targets.len()).sum();
            assert!(all >= total);
            for parts in 1..=MAX_PARTS {
                let owner = &plan.owners[parts - 1];
                let mut load = vec![0; parts];
                for (i, node) in plan.nodes.iter().enumerate() {
                    assert!(node.parents.is_empty() || node.parents.iter().any(|p| owner[*p] == owner[i]));
                    load[owner[i]] += node.targets.len();
                }
                let (least, most) = (load.iter().min().unwrap(), load.iter().max().unwrap());
                assert!(most - least <= all / 10, "{parts} parts: {load:?}");
            }
        }
    }
}
