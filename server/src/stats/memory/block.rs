//! The stored rows of a rollup: one block per bucket. A sealed block is columnar, which is what queries scan.
//! An open block, which ingestion merges into, keeps each row whole — its key (the dictionary ids packed) and
//! its sums side by side, rows in the order they were first seen — behind an index of 8-byte slots, so that
//! adding to a row touches the row and one slot: a batch spread over days adds to rows all over memory, and
//! each place it reads costs a trip to memory. A block is opened when records come for it, whatever their
//! age, and sealed by the engine's upkeep once none came for a round; reopening blocks for every batch (a
//! copy of each) cost far more than the batch.

use std::{
    collections::BTreeMap,
    ops::Range,
    sync::atomic::{AtomicU64, Ordering},
};

use super::ID_BITS;

const ID_MASK: u128 = (1 << ID_BITS) - 1;
/// Words of an open row before its sums: the key, in two.
const KEY_WORDS: usize = 2;
/// A free index slot.
const EMPTY: u64 = u64::MAX;

#[inline]
fn hash(key: u128) -> u64 {
    ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((key >> 64) as u64)).wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

/// An open block's index from key to row: open addressing with linear probing, each slot a row number and 32
/// bits of its key's hash; the key itself is compared in the row, which a merge reads anyway.
struct Index {
    /// `(hash bits << 32) | row`, or [`EMPTY`].
    slots: Vec<u64>,
    len: usize,
}

impl Index {
    fn with_rows(rows: usize) -> Index {
        Index { slots: vec![EMPTY; (rows * 4 / 3 + 1).next_power_of_two().max(8)], len: 0 }
    }

    #[inline]
    fn home(&self, h: u64) -> usize {
        (h >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// Puts `row` (of hash `h`, not in the index) in its place.
    fn place(&mut self, h: u64, row: u32) {
        let mask = self.slots.len() - 1;
        let mut at = self.home(h);
        while self.slots[at] != EMPTY {
            at = (at + 1) & mask;
        }
        self.slots[at] = (h << 32) | u64::from(row);
        self.len += 1;
    }
}

/// What a block holds, by its state.
enum Data {
    /// Column by column: each dimension's ids, each metric's sums.
    Sealed { dims: Vec<Vec<u32>>, metrics: Vec<Vec<u64>> },
    /// Row by row, `KEY_WORDS + width` words each: the key, then the sums.
    Open { rows: Vec<u64>, index: Index },
}

/// A number no earlier change of a block had (see [`Block::changed`]).
fn stamp() -> u64 {
    static CHANGES: AtomicU64 = AtomicU64::new(1);
    CHANGES.fetch_add(1, Ordering::Relaxed)
}

/// The rows of one bucket of a rollup, in the order they were first seen.
pub(super) struct Block {
    n_dims: usize,
    width: usize,
    data: Data,
    /// Merged into since the last upkeep round.
    touched: bool,
    /// Stamped anew each time the block is opened to be merged into (or loaded), so that a rollup summed from
    /// it can tell whether it changed since.
    changed: u64,
    /// For a block summed from another rollup's block when read ([`Rollup::derive_from`]): that block's
    /// `changed` then; 0 for a block whose rows were stored as batches came (or loaded).
    derived_from: u64,
}

/// One dimension of a block's rows, whatever its layout.
#[derive(Clone, Copy)]
pub(super) enum DimColumn<'a> {
    Ids(&'a [u32]),
    /// In the keys of open rows: `words[r * stride]` and the next word hold row `r`'s key.
    Packed {
        words: &'a [u64],
        stride: usize,
        shift: u32,
    },
}

impl DimColumn<'_> {
    #[inline]
    pub(super) fn get(&self, row: usize) -> u32 {
        match self {
            DimColumn::Ids(ids) => ids[row],
            DimColumn::Packed { words, stride, shift } => {
                let at = row * stride;
                let key = u128::from(words[at]) | u128::from(words[at + 1]) << 64;
                ((key >> shift) & ID_MASK) as u32
            }
        }
    }

    /// Calls `f` with each element of `out` and the id of the same row (a loop over a sealed block's slice
    /// of ids, which the compiler vectorises).
    #[inline]
    pub(super) fn for_each<T>(&self, out: &mut [T], f: impl Fn(&mut T, u32)) {
        match self {
            DimColumn::Ids(ids) => out.iter_mut().zip(*ids).for_each(|(o, v)| f(o, *v)),
            DimColumn::Packed { .. } => out.iter_mut().enumerate().for_each(|(r, o)| f(o, self.get(r))),
        }
    }
}

/// One metric of a block's rows, whatever its layout.
#[derive(Clone, Copy)]
pub(super) struct MetricColumn<'a> {
    data: &'a [u64],
    stride: usize,
}

impl<'a> MetricColumn<'a> {
    #[inline]
    pub(super) fn get(&self, row: usize) -> u64 {
        self.data[row * self.stride]
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        self.data.iter().step_by(self.stride).copied()
    }
}

impl Block {
    /// An empty open block.
    pub(super) fn new(n_dims: usize, n_metrics: usize) -> Self {
        Block {
            n_dims,
            width: n_metrics,
            data: Data::Open { rows: Vec::new(), index: Index::with_rows(0) },
            touched: true,
            changed: stamp(),
            derived_from: 0,
        }
    }

    /// A sealed block of the given columns (all of one length).
    pub(super) fn from_columns(dims: Vec<Vec<u32>>, metrics: Vec<Vec<u64>>) -> Self {
        Block {
            n_dims: dims.len(),
            width: metrics.len(),
            data: Data::Sealed { dims, metrics },
            touched: false,
            changed: stamp(),
            derived_from: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        match &self.data {
            Data::Sealed { metrics, .. } => metrics.first().map_or(0, Vec::len),
            Data::Open { rows, .. } => rows.len() / (KEY_WORDS + self.width),
        }
    }

    pub(super) fn n_metrics(&self) -> usize {
        self.width
    }

    pub(super) fn is_open(&self) -> bool {
        matches!(self.data, Data::Open { .. })
    }

    /// Whether the block was summed from another rollup's when read (a snapshot leaves it out).
    pub(super) fn is_derived(&self) -> bool {
        self.derived_from != 0
    }

    /// Dimension `d` (of the rollup's, in order) of every row.
    pub(super) fn dim(&self, d: usize) -> DimColumn<'_> {
        match &self.data {
            Data::Sealed { dims, .. } => DimColumn::Ids(&dims[d]),
            Data::Open { rows, .. } => DimColumn::Packed {
                words: rows,
                stride: KEY_WORDS + self.width,
                shift: ID_BITS * (self.n_dims - 1 - d) as u32,
            },
        }
    }

    pub(super) fn metric(&self, metric: usize) -> MetricColumn<'_> {
        match &self.data {
            Data::Sealed { metrics, .. } => MetricColumn { data: &metrics[metric], stride: 1 },
            Data::Open { rows, .. } => MetricColumn {
                data: rows.get(KEY_WORDS + metric..).unwrap_or_default(),
                stride: KEY_WORDS + self.width,
            },
        }
    }

    /// Each dimension as a vector (for the snapshot).
    pub(super) fn dim_columns(&self) -> Vec<Vec<u32>> {
        (0..self.n_dims).map(|d| (0..self.len()).map(|r| self.dim(d).get(r)).collect()).collect()
    }

    /// Each metric column as a vector (for the snapshot).
    pub(super) fn metric_columns(&self) -> Vec<Vec<u64>> {
        (0..self.width).map(|m| self.metric(m).iter().collect()).collect()
    }

    /// Makes the block ready to be merged into: its rows whole, its index built.
    pub(super) fn open(&mut self) {
        self.touched = true;
        self.changed = stamp();
        let Data::Sealed { dims, metrics } = &self.data else { return };
        let n = self.len();
        let mut rows = Vec::with_capacity(n * (KEY_WORDS + self.width));
        let mut index = Index::with_rows(n);
        for r in 0..n {
            let key = dims.iter().fold(0u128, |k, col| (k << ID_BITS) | u128::from(col[r]));
            rows.extend([key as u64, (key >> 64) as u64]);
            rows.extend(metrics.iter().map(|c| c[r]));
            index.place(hash(key), r as u32);
        }
        self.data = Data::Open { rows, index };
    }

    /// Drops the index and lays the rows out column by column, for queries.
    pub(super) fn seal(&mut self) {
        if self.is_open() {
            let (dims, metrics) = (self.dim_columns(), self.metric_columns());
            self.data = Data::Sealed { dims, metrics };
        }
    }

    /// Asks the processor to fetch the index slot of `key` (open blocks).
    #[inline]
    pub(super) fn prefetch(&self, key: u128) {
        #[cfg(target_arch = "x86_64")]
        if let Data::Open { index, .. } = &self.data {
            let slot: *const u64 = &index.slots[index.home(hash(key))];
            // SAFETY: a prefetch is a hint; it reads nothing and cannot fault.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(slot.cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// Asks the processor to fetch the row the index slot of `key` points to, if its hash bits match (the slot
    /// should have been fetched by [`Block::prefetch`] a little earlier).
    #[inline]
    pub(super) fn prefetch_match(&self, key: u128) {
        #[cfg(target_arch = "x86_64")]
        if let Data::Open { rows, index } = &self.data {
            let h = hash(key);
            let slot = index.slots[index.home(h)];
            let stride = KEY_WORDS + self.width;
            // The row if the slot's hash bits match, else where a new row will go; each may span two lines.
            let at = if slot != EMPTY && slot >> 32 == h & 0xffff_ffff {
                (slot & 0xffff_ffff) as usize * stride
            } else {
                rows.len()
            };
            let first: *const u64 = rows.as_ptr().wrapping_add(at);
            for line in [first, first.wrapping_add(stride - 1)] {
                // SAFETY: a prefetch is a hint; it reads nothing and cannot fault, whatever the address.
                unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line.cast()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// The row of `key` in an open block, added with zero sums if new (then true).
    #[inline]
    pub(super) fn find_or_add(&mut self, key: u128) -> (u32, bool) {
        let stride = KEY_WORDS + self.width;
        let Data::Open { rows, index } = &mut self.data else { return (u32::MAX, false) };
        if (index.len + 1) * 4 > index.slots.len() * 3 {
            let mut grown = Index::with_rows(index.slots.len());
            for r in 0..index.len {
                let at = r * stride;
                grown.place(hash(u128::from(rows[at]) | u128::from(rows[at + 1]) << 64), r as u32);
            }
            *index = grown;
        }
        let h = hash(key);
        let tag = h & 0xffff_ffff;
        let (lo, hi) = (key as u64, (key >> 64) as u64);
        let mask = index.slots.len() - 1;
        let mut at = index.home(h);
        loop {
            let slot = index.slots[at];
            if slot == EMPTY {
                let row = index.len as u32;
                index.slots[at] = (h << 32) | u64::from(row);
                index.len += 1;
                rows.extend([lo, hi]);
                rows.resize(rows.len() + stride - KEY_WORDS, 0);
                return (row, true);
            }
            if slot >> 32 == tag {
                let r = (slot & 0xffff_ffff) as usize * stride;
                if rows[r] == lo && rows[r + 1] == hi {
                    return (slot as u32, false);
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The sums of `row` of an open block.
    #[inline]
    pub(super) fn row_mut(&mut self, row: u32) -> &mut [u64] {
        let stride = KEY_WORDS + self.width;
        match &mut self.data {
            Data::Open { rows, .. } => {
                let at = row as usize * stride;
                &mut rows[at + KEY_WORDS..at + stride]
            }
            Data::Sealed { .. } => &mut [],
        }
    }

    /// Adds `metrics` to the row of `key` (one row at a time: bulk loads); true if the row is new.
    pub(super) fn add(&mut self, key: u128, metrics: &[u64]) -> bool {
        self.open();
        let (row, new) = self.find_or_add(key);
        for (s, v) in self.row_mut(row).iter_mut().zip(metrics) {
            *s += v;
        }
        new
    }

    /// Rewrites the ids of dimension `d` through `renumbered` (old id → new id), sealing the block first.
    pub(super) fn renumber(&mut self, d: usize, renumbered: &[u32]) {
        self.seal();
        if let Data::Sealed { dims, .. } = &mut self.data {
            for id in dims[d].iter_mut() {
                *id = renumbered[*id as usize];
            }
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        (match &self.data {
            Data::Sealed { dims, metrics } => {
                dims.iter().map(|c| c.capacity() * 4).sum::<usize>()
                    + metrics.iter().map(|c| c.capacity() * 8).sum::<usize>()
            }
            Data::Open { rows, index } => rows.capacity() * 8 + index.slots.capacity() * 8,
        }) as u64
    }
}

#[derive(Default)]
pub(super) struct Rollup {
    pub(super) blocks: BTreeMap<i64, Block>,
    /// Buckets whose blocks are open.
    open: Vec<i64>,
}

impl Rollup {
    /// The block of `bucket`, open (created if there is none).
    pub(super) fn open(&mut self, bucket: i64, n_dims: usize, n_metrics: usize) -> &mut Block {
        let block = match self.blocks.entry(bucket) {
            std::collections::btree_map::Entry::Vacant(e) => {
                self.open.push(bucket);
                e.insert(Block::new(n_dims, n_metrics))
            }
            std::collections::btree_map::Entry::Occupied(e) => {
                let block = e.into_mut();
                if !block.is_open() {
                    self.open.push(bucket);
                }
                block
            }
        };
        block.open();
        block
    }

    /// The blocks of `buckets` (ascending, distinct), in their order, open (created if there are none). One
    /// walk through the range finds them all: a batch spread over days has thousands, few rows each.
    pub(super) fn blocks_for(&mut self, buckets: &[i64], n_dims: usize, n_metrics: usize) -> Vec<&mut Block> {
        let (Some(&first), Some(&last)) = (buckets.first(), buckets.last()) else { return Vec::new() };
        let mut missing = Vec::new();
        {
            let mut want = buckets.iter().peekable();
            for bucket in self.blocks.range(first..=last).map(|(b, _)| *b) {
                while let Some(w) = want.next_if(|w| **w < bucket) {
                    missing.push(*w);
                }
                want.next_if_eq(&&bucket);
            }
            missing.extend(want);
        }
        for bucket in missing {
            self.blocks.insert(bucket, Block::new(n_dims, n_metrics));
            self.open.push(bucket);
        }
        let Rollup { blocks, open } = self;
        let mut want = buckets.iter().peekable();
        let mut out = Vec::with_capacity(buckets.len());
        for (bucket, block) in blocks.range_mut(first..=last) {
            if want.next_if_eq(&bucket).is_some() {
                if !block.is_open() {
                    open.push(*bucket);
                }
                block.open();
                out.push(block);
            }
        }
        out
    }

    /// Whether every block of `source` in `range` was summed into this rollup since it last changed.
    pub(super) fn is_derived_from(&self, source: &Rollup, range: Range<i64>) -> bool {
        source.blocks.range(range).all(|(b, s)| self.blocks.get(b).is_some_and(|d| d.derived_from == s.changed))
    }

    /// Sums again each block of `source` in `range` that changed since it was last summed into this rollup:
    /// each of this rollup's dimensions is column `project[d]` of the source's; rows come in the order of the
    /// first source row holding them, which is the order they were first seen in (a source row is added when
    /// its first record comes). Returns the rows added and the rows of the blocks they replace.
    pub(super) fn derive_from(&mut self, source: &Rollup, range: Range<i64>, project: &[usize]) -> (u64, u64) {
        let (mut added, mut dropped) = (0, 0);
        for (bucket, s) in source.blocks.range(range) {
            if self.blocks.get(bucket).is_some_and(|d| d.derived_from == s.changed) {
                continue;
            }
            let mut block = Block::new(project.len(), s.n_metrics());
            let cols: Vec<DimColumn<'_>> = project.iter().map(|c| s.dim(*c)).collect();
            let metrics: Vec<MetricColumn<'_>> = (0..s.n_metrics()).map(|m| s.metric(m)).collect();
            for r in 0..s.len() {
                let key = cols.iter().fold(0u128, |k, c| (k << ID_BITS) | u128::from(c.get(r)));
                let (row, _) = block.find_or_add(key);
                for (sum, m) in block.row_mut(row).iter_mut().zip(&metrics) {
                    *sum += m.get(r);
                }
            }
            block.seal();
            block.touched = false;
            block.derived_from = s.changed;
            added += block.len() as u64;
            if let Some(old) = self.blocks.insert(*bucket, block) {
                dropped += old.len() as u64;
            }
        }
        (added, dropped)
    }

    /// Seals the open blocks no batch was merged into since the last call.
    pub(super) fn seal_untouched(&mut self) {
        let blocks = &mut self.blocks;
        self.open.retain(|bucket| {
            let Some(block) = blocks.get_mut(bucket) else { return false };
            if std::mem::take(&mut block.touched) {
                return true;
            }
            block.seal();
            false
        });
    }

    /// Forgets which blocks are open, once something else sealed them all.
    pub(super) fn forget_open(&mut self) {
        self.open.clear();
    }

    /// Seals every block.
    pub(super) fn seal_all(&mut self) {
        for bucket in self.open.drain(..) {
            if let Some(block) = self.blocks.get_mut(&bucket) {
                block.seal();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_blocks_find_every_key_across_growth_and_keep_it_through_sealing() {
        for n_dims in 1..=5 {
            let top = (1u128 << (n_dims as u32 * ID_BITS)) - 1;
            // Keys spread over the whole width, the largest included, some repeated.
            let keys: Vec<u128> = (0..5000u128)
                .map(|i| top - (i % 4000).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835) % (top + 1))
                .collect();
            let mut block = Block::new(n_dims, 2);
            for (i, key) in keys.iter().enumerate() {
                block.add(*key, &[1, i as u64]);
            }
            assert_eq!(block.len(), 4000, "{n_dims} dims");
            let check = |block: &Block| {
                for r in 0..block.len() {
                    let key = (0..n_dims).fold(0u128, |k, d| (k << ID_BITS) | u128::from(block.dim(d).get(r)));
                    let first = keys.iter().position(|k| *k == key).unwrap();
                    let hits = if first < 1000 { 2 } else { 1 };
                    assert_eq!(block.metric(0).get(r), hits, "{n_dims} dims, row {r}");
                    let sum = if first < 1000 { first as u64 * 2 + 4000 } else { first as u64 };
                    assert_eq!(block.metric(1).get(r), sum, "{n_dims} dims, row {r}");
                }
            };
            check(&block);
            block.seal();
            assert!(!block.is_open());
            check(&block);
            // Rows keep the order they were first seen in, through sealing and reopening.
            assert_eq!(block.dim_columns(), {
                let mut seen = keys[..4000].to_vec();
                seen.dedup();
                (0..n_dims)
                    .map(|d| {
                        seen.iter().map(|k| ((k >> (ID_BITS * (n_dims - 1 - d) as u32)) & ID_MASK) as u32).collect()
                    })
                    .collect::<Vec<Vec<u32>>>()
            });
            block.open();
            block.add(keys[0], &[1, 0]);
            assert_eq!((block.len(), block.metric(0).get(0)), (4000, 3));
        }
    }
}
