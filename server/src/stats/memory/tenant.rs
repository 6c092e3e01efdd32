//! One customer's statistics in memory: the dictionaries that give each value an id, the rollups, the raw
//! security events and the kept idempotency keys, each behind a lock of its own; and the lock helpers, which
//! take the data of a lock poisoned by a panic as it is.

use std::sync::{Arc, Condvar, Mutex, RwLock, atomic::AtomicU64};

use rustc_hash::FxHashMap;

use super::{
    super::{AccessBatch, DIMS, Footprint},
    EVENT_DIMS,
    block::Rollup,
    keys,
};

/// A dimension's values of one customer, each with its id (its place in `values`).
#[derive(Default)]
pub(super) struct Dict {
    pub(super) ids: FxHashMap<Arc<str>, u32>,
    pub(super) values: Vec<Arc<str>>,
}

impl Dict {
    /// The id of `v`, added if new; None when the dictionary already holds `max` values.
    pub(super) fn id(&mut self, v: &str, max: usize) -> Option<u32> {
        if let Some(id) = self.ids.get(v) {
            return Some(*id);
        }
        if self.values.len() >= max {
            return None;
        }
        let id = self.values.len() as u32;
        let v: Arc<str> = Arc::from(v);
        self.values.push(v.clone());
        self.ids.insert(v, id);
        Some(id)
    }

    /// Keeps the values marked in `used` (one mark a value), in their order.
    pub(super) fn keep(&mut self, used: &[bool]) {
        let values = std::mem::take(&mut self.values);
        self.ids.clear();
        for (v, _) in values.into_iter().zip(used).filter(|(_, u)| **u) {
            self.ids.insert(v.clone(), self.values.len() as u32);
            self.values.push(v);
        }
    }

    /// Forgets the values added after the first `len`.
    pub(super) fn truncate(&mut self, len: usize) {
        for v in self.values.drain(len.min(self.values.len())..) {
            self.ids.remove(&v);
        }
    }

    pub(super) fn get(&self, v: &str) -> Option<u32> {
        self.ids.get(v).copied()
    }

    pub(super) fn value(&self, id: u32) -> Arc<str> {
        self.values.get(id as usize).cloned().unwrap_or_else(|| Arc::from(""))
    }
}

/// Raw security events, in arrival order (sorted by time when queried).
#[derive(Default)]
pub(super) struct Events {
    pub(super) ts: Vec<i64>,
    pub(super) cols: Vec<Vec<u32>>,
    pub(super) sorted: bool,
}

impl Events {
    pub(super) fn sort(&mut self) {
        if self.sorted {
            return;
        }
        let mut order: Vec<usize> = (0..self.ts.len()).collect();
        order.sort_by_key(|&i| self.ts[i]);
        self.ts = order.iter().map(|&i| self.ts[i]).collect();
        for col in &mut self.cols {
            *col = order.iter().map(|&i| col[i]).collect();
        }
        self.sorted = true;
    }
}

/// A logged access batch waiting to be applied: its records and its columns' dictionary ids.
pub(super) struct Queued {
    pub(super) batch: AccessBatch,
    pub(super) maps: Vec<Vec<u32>>,
}

/// A customer's queue.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) batches: Vec<Queued>,
    /// Records queued or being applied.
    pub(super) records: usize,
    /// Batches queued since start, and applied.
    pub(super) logged: u64,
    pub(super) applied: u64,
}

/// One customer's statistics. Each part has a lock of its own, so that a query waits only while the rollup
/// it reads is being merged into, not for a whole batch.
pub(super) struct Tenant {
    pub(super) dicts: RwLock<Vec<Dict>>,
    pub(super) rollups: Vec<RwLock<Rollup>>,
    pub(super) events: RwLock<Events>,
    /// Rollup rows and raw events held (what [`Limits::max_rows`] limits).
    pub(super) rows: std::sync::atomic::AtomicU64,
    /// Records whose value was folded since start, per dimension.
    pub(super) folded: Vec<std::sync::atomic::AtomicU64>,
    /// Held (shared) by a batch from its encoding to its application, and (alone) by the compaction of the
    /// dictionaries, which renumbers the ids a batch in between was encoded with.
    pub(super) ids: RwLock<()>,
    /// Keys of the batches stored with an `Idempotency-Key` (each kept as its batch is logged).
    pub(super) keys: Mutex<keys::Keys>,
    /// Access batches logged and not yet applied; `settled` is signalled as they are.
    pub(super) pending: Mutex<Pending>,
    pub(super) settled: Condvar,
}

impl Tenant {
    pub(super) fn new(n_specs: usize) -> Self {
        Tenant {
            dicts: RwLock::new(DIMS.iter().map(|_| Dict::default()).collect()),
            rollups: (0..n_specs).map(|_| RwLock::new(Rollup::default())).collect(),
            events: RwLock::new(Events { ts: Vec::new(), cols: vec![Vec::new(); EVENT_DIMS.len()], sorted: true }),
            rows: Default::default(),
            folded: new_folded_counters(),
            ids: RwLock::new(()),
            keys: Mutex::new(keys::Keys::default()),
            pending: Mutex::new(Pending::default()),
            settled: Condvar::new(),
        }
    }

    /// Returns once every access batch logged before the call is applied: what a reader calls first, so that
    /// it sees every batch acknowledged before it asked.
    pub(super) fn settle(&self) {
        let mut pending = lock(&self.pending);
        let target = pending.logged;
        while pending.applied < target {
            pending = self.settled.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Rows held and memory taken.
    pub(super) fn footprint(&self) -> Footprint {
        let mut f = Footprint::default();
        for rollup in &self.rollups {
            for block in read(rollup).blocks.values() {
                f.rollup_rows += block.len() as u64;
                f.bytes += block.bytes() + 48;
            }
        }
        let ev = read(&self.events);
        f.event_rows += ev.ts.len() as u64;
        f.bytes += (ev.ts.capacity() * 8 + ev.cols.iter().map(|c| c.capacity() * 4).sum::<usize>()) as u64;
        // A value: its text, and its place in the list and in the index (two pointers and a hash slot each).
        f.bytes +=
            read(&self.dicts).iter().map(|d| d.values.iter().map(|v| v.len() as u64 + 56).sum::<u64>()).sum::<u64>();
        f
    }

    pub(super) fn add_rows(&self, n: u64) {
        self.rows.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    pub(super) fn drop_rows(&self, n: u64) {
        let _ =
            self.rows.fetch_update(std::sync::atomic::Ordering::Relaxed, std::sync::atomic::Ordering::Relaxed, |r| {
                Some(r.saturating_sub(n))
            });
    }
}

pub(super) fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn get_mut<T>(lock: &mut RwLock<T>) -> &mut T {
    lock.get_mut().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn get_mut_mutex<T>(mutex: &mut Mutex<T>) -> &mut T {
    mutex.get_mut().unwrap_or_else(|e| e.into_inner())
}

/// Folded records counted so far, per dimension.
pub(super) fn new_folded_counters() -> Vec<AtomicU64> {
    DIMS.iter().map(|_| AtomicU64::new(0)).collect()
}
