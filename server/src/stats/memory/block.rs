//! The stored rows of a rollup: one block per bucket. A sealed block (a bucket past which time has moved) is
//! columnar, which is what queries scan; an open block, which ingestion merges into, keeps each row's metrics
//! together and an index from key to row, so that adding to a row touches a cache line or two instead of one
//! per metric.

use std::collections::BTreeMap;

use super::ID_BITS;

/// An open block's index from key to row: open addressing with linear probing, each slot holding the whole
/// key, so a lookup usually reads one cache line, which [`Index::prefetch`] can ask for ahead of time. Keys of
/// at most three dimensions (75 bits) take 16-byte slots, four to a cache line; wider keys take 24 bytes: the
/// index of a large block is out of cache, and its size is what merging waits for.
pub(super) enum Index {
    Narrow(Table<Narrow>),
    Wide(Table<Wide>),
}

/// A slot of an index: a key and its row (u32::MAX: empty).
pub(super) trait Slot: Copy {
    const EMPTY: Self;
    fn new(key: u128, row: u32) -> Self;
    fn key(&self) -> u128;
    fn row(&self) -> u32;
}

/// The slot of a key below 2^96.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(super) struct Narrow {
    key: [u32; 3],
    row: u32,
}

impl Slot for Narrow {
    const EMPTY: Self = Narrow { key: [0; 3], row: u32::MAX };
    #[inline]
    fn new(key: u128, row: u32) -> Self {
        debug_assert!(key >> 96 == 0, "a narrow key");
        Narrow { key: [key as u32, (key >> 32) as u32, (key >> 64) as u32], row }
    }
    #[inline]
    fn key(&self) -> u128 {
        u128::from(self.key[0]) | u128::from(self.key[1]) << 32 | u128::from(self.key[2]) << 64
    }
    #[inline]
    fn row(&self) -> u32 {
        self.row
    }
}

#[derive(Clone, Copy)]
#[repr(C)]
pub(super) struct Wide {
    key: [u64; 2],
    row: u32,
}

impl Slot for Wide {
    const EMPTY: Self = Wide { key: [0; 2], row: u32::MAX };
    #[inline]
    fn new(key: u128, row: u32) -> Self {
        Wide { key: [key as u64, (key >> 64) as u64], row }
    }
    #[inline]
    fn key(&self) -> u128 {
        u128::from(self.key[0]) | u128::from(self.key[1]) << 64
    }
    #[inline]
    fn row(&self) -> u32 {
        self.row
    }
}

pub(super) struct Table<S> {
    slots: Vec<S>,
    len: usize,
}

/// Dimensions a key may have to fit a [`Narrow`] slot.
const NARROW_DIMS: usize = (96 / ID_BITS) as usize;

impl Index {
    fn with_rows(rows: usize, n_dims: usize) -> Index {
        if n_dims <= NARROW_DIMS { Index::Narrow(Table::with_rows(rows)) } else { Index::Wide(Table::with_rows(rows)) }
    }

    /// Asks the processor to fetch the slot where `key` would be.
    #[inline]
    pub(super) fn prefetch(&self, key: u128) {
        match self {
            Index::Narrow(t) => t.prefetch(key),
            Index::Wide(t) => t.prefetch(key),
        }
    }

    /// The row of `key`, or `row` inserted as its row if it has none (then Err).
    #[inline]
    fn find_or_insert(&mut self, key: u128, row: u32) -> Result<u32, u32> {
        match self {
            Index::Narrow(t) => t.find_or_insert(key, row),
            Index::Wide(t) => t.find_or_insert(key, row),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Index::Narrow(t) => t.bytes(),
            Index::Wide(t) => t.bytes(),
        }
    }
}

impl<S: Slot> Table<S> {
    fn with_rows(rows: usize) -> Self {
        let capacity = (rows * 4 / 3 + 1).next_power_of_two().max(16);
        Table { slots: vec![S::EMPTY; capacity], len: 0 }
    }

    #[inline]
    fn home(&self, key: u128) -> usize {
        let h = ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((key >> 64) as u64))
            .wrapping_mul(0xD6E8_FEB8_6659_FD93);
        (h >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    #[inline]
    fn prefetch(&self, key: u128) {
        #[cfg(target_arch = "x86_64")]
        {
            // The home slot and the next ones, which a probe often reaches (a probe may cross a cache line).
            let home = self.home(key);
            let next = (home + 64 / std::mem::size_of::<S>()) & (self.slots.len() - 1);
            for at in [home, next] {
                let slot: *const S = &self.slots[at];
                // SAFETY: a prefetch is a hint; it reads nothing and cannot fault.
                unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(slot.cast()) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    #[inline]
    fn find_or_insert(&mut self, key: u128, row: u32) -> Result<u32, u32> {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            let slot = &mut self.slots[at];
            if slot.row() == u32::MAX {
                *slot = S::new(key, row);
                self.len += 1;
                return Err(row);
            }
            if slot.key() == key {
                return Ok(slot.row());
            }
            at = (at + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(16);
        let old = std::mem::replace(&mut self.slots, vec![S::EMPTY; capacity]);
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|s| s.row() != u32::MAX) {
            let mut at = self.home(slot.key());
            while self.slots[at].row() != u32::MAX {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
        }
    }

    fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<S>()
    }
}

/// The metric sums of a block.
enum Sums {
    /// One column per metric (sealed).
    Columns(Vec<Vec<u64>>),
    /// Row by row, `width` a row (open).
    Rows(Vec<u64>),
}

/// The rows of one bucket of a rollup: dimension ids column by column, and the metric sums.
pub(super) struct Block {
    pub(super) dims: Vec<Vec<u32>>,
    width: usize,
    sums: Sums,
    /// Where each key's row is, while the block is open.
    index: Option<Index>,
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
            dims: vec![Vec::new(); n_dims],
            width: n_metrics,
            sums: Sums::Rows(Vec::new()),
            index: Some(Index::with_rows(0, n_dims)),
        }
    }

    /// A sealed block of the given columns (all of one length).
    pub(super) fn from_columns(dims: Vec<Vec<u32>>, metrics: Vec<Vec<u64>>) -> Self {
        Block { dims, width: metrics.len(), sums: Sums::Columns(metrics), index: None }
    }

    pub(super) fn len(&self) -> usize {
        match &self.sums {
            Sums::Columns(c) => c.first().map_or(0, Vec::len),
            Sums::Rows(r) => r.len() / self.width.max(1),
        }
    }

    pub(super) fn n_metrics(&self) -> usize {
        self.width
    }

    pub(super) fn metric(&self, metric: usize) -> MetricColumn<'_> {
        match &self.sums {
            Sums::Columns(c) => MetricColumn { data: &c[metric], stride: 1 },
            Sums::Rows(r) => MetricColumn { data: r.get(metric..).unwrap_or_default(), stride: self.width },
        }
    }

    /// Each metric column as a vector (for the snapshot).
    pub(super) fn metric_columns(&self) -> Vec<Vec<u64>> {
        (0..self.width).map(|m| self.metric(m).iter().collect()).collect()
    }

    fn key(&self, row: usize) -> u128 {
        self.dims.iter().fold(0u128, |k, col| (k << ID_BITS) | u128::from(col[row]))
    }

    /// Makes the block ready to be merged into: its metrics row by row, its index built.
    pub(super) fn open(&mut self) {
        if let Sums::Columns(cols) = &self.sums {
            let n = cols.first().map_or(0, Vec::len);
            let mut rows = Vec::with_capacity(n * self.width);
            for r in 0..n {
                rows.extend(cols.iter().map(|c| c[r]));
            }
            self.sums = Sums::Rows(rows);
        }
        if self.index.is_none() {
            let n = self.len();
            let mut index = Index::with_rows(n, self.dims.len());
            for r in 0..n {
                let _ = index.find_or_insert(self.key(r), r as u32);
            }
            self.index = Some(index);
        }
    }

    /// Drops the index and lays the metrics out column by column, for queries.
    pub(super) fn seal(&mut self) {
        self.index = None;
        if let Sums::Rows(rows) = &self.sums {
            let w = self.width.max(1);
            let cols = (0..self.width).map(|m| rows.iter().skip(m).step_by(w).copied().collect()).collect();
            self.sums = Sums::Columns(cols);
        }
    }

    /// The index of an open block.
    pub(super) fn index(&self) -> Option<&Index> {
        self.index.as_ref()
    }

    /// The row of `key` in an open block, added with zero metrics if new.
    #[inline]
    pub(super) fn find_or_add(&mut self, key: u128, dims: impl Fn(usize) -> u32) -> u32 {
        let n = self.len() as u32;
        let n_dims = self.dims.len();
        let index = self.index.get_or_insert_with(|| Index::with_rows(0, n_dims));
        match index.find_or_insert(key, n) {
            Ok(row) => row,
            Err(row) => {
                for (i, col) in self.dims.iter_mut().enumerate() {
                    col.push(dims(i));
                }
                if let Sums::Rows(rows) = &mut self.sums {
                    rows.resize(rows.len() + self.width, 0);
                }
                row
            }
        }
    }

    /// Asks the processor to fetch the sums of `row` of an open block.
    #[inline]
    pub(super) fn prefetch_row(&self, row: u32) {
        #[cfg(target_arch = "x86_64")]
        if let Sums::Rows(rows) = &self.sums
            && let Some(at) = rows.get(row as usize * self.width)
        {
            let at: *const u64 = at;
            // SAFETY: a prefetch is a hint; it reads nothing and cannot fault.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = row;
    }

    /// The sums of `row` of an open block.
    #[inline]
    pub(super) fn row_mut(&mut self, row: u32) -> &mut [u64] {
        let w = self.width;
        match &mut self.sums {
            Sums::Rows(rows) => &mut rows[row as usize * w..(row as usize + 1) * w],
            Sums::Columns(_) => &mut [],
        }
    }

    /// Adds `metrics` to the row of `key` (one row at a time: bulk loads).
    pub(super) fn add(&mut self, key: u128, dims: impl Fn(usize) -> u32, metrics: &[u64]) {
        self.open();
        let row = self.find_or_add(key, dims);
        for (s, v) in self.row_mut(row).iter_mut().zip(metrics) {
            *s += v;
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        let d: usize = self.dims.iter().map(|c| c.capacity() * 4).sum();
        let m: usize = match &self.sums {
            Sums::Columns(c) => c.iter().map(|c| c.capacity() * 8).sum(),
            Sums::Rows(r) => r.capacity() * 8,
        };
        (d + m + self.index.as_ref().map_or(0, Index::bytes)) as u64
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
        let block = self.blocks.entry(bucket).or_insert_with(|| Block::new(n_dims, n_metrics));
        if !self.open.contains(&bucket) {
            self.open.push(bucket);
        }
        block.open();
        block
    }

    /// Seals the blocks more than two of their own lengths behind the newest: late data rarely comes, and
    /// reopens them if it does.
    pub(super) fn seal(&mut self, step: i64) {
        let Some((&newest, _)) = self.blocks.last_key_value() else { return };
        let blocks = &mut self.blocks;
        self.open.retain(|bucket| {
            if *bucket >= newest - 2 * step {
                return true;
            }
            if let Some(block) = blocks.get_mut(bucket) {
                block.seal();
            }
            false
        });
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
    fn both_index_layouts_find_every_key_they_were_given_across_growth() {
        for n_dims in 1..=5 {
            let mut index = Index::with_rows(0, n_dims);
            assert_eq!(matches!(index, Index::Narrow(_)), n_dims <= 3);
            let top = (1u128 << (n_dims as u32 * ID_BITS)) - 1;
            // Keys spread over the whole width, the largest included.
            let keys: Vec<u128> = (0..5000u128)
                .map(|i| top - i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835) % (top + 1))
                .collect();
            for (row, key) in keys.iter().enumerate() {
                let found = index.find_or_insert(*key, row as u32);
                assert!(found.is_err() || keys[..row].contains(key), "{n_dims} dims: {key:#x} new");
            }
            for key in &keys {
                let first = keys.iter().position(|k| k == key).unwrap() as u32;
                assert_eq!(index.find_or_insert(*key, u32::MAX - 1), Ok(first), "{n_dims} dims: {key:#x}");
            }
        }
    }

    #[test]
    fn narrow_slots_are_two_thirds_of_wide_ones() {
        assert_eq!((std::mem::size_of::<Narrow>(), std::mem::size_of::<Wide>()), (16, 24));
    }
}
