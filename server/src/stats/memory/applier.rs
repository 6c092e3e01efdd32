//! Applying logged access batches on a thread of the engine's own. A batch is acknowledged once it is in the
//! log (fsynced) and queued; the applier sums a customer's queued batches together, as one batch:
//! a batch of records spread over days leaves few records in each 5-minute bucket, and the cost of a merge is
//! per row of a bucket, so several batches summed at once cost much less than each alone (and the next request
//! is read while the last one is summed). Readers first wait for what was acknowledged before they asked
//! ([`Tenant::settle`]), and a customer's queue is bounded ([`MAX_PENDING_RECORDS`]): a request waits for room.

use std::sync::{Arc, Condvar, Mutex};

use rustc_hash::FxHashMap;

use super::{
    Core,
    tenant::{Queued, Tenant, lock},
};
use crate::stats::AccessBatch;

/// Records a customer may have logged and not yet applied; a request past it waits until the applier catches
/// up. About what the applier sums at once when requests come faster than it sums them.
pub(super) const MAX_PENDING_RECORDS: usize = 100_000;

/// The customers with queued batches, and whether the engine is closing.
#[derive(Default)]
pub(super) struct Ready {
    state: Mutex<(Vec<Arc<Tenant>>, bool)>,
    wake: Condvar,
}

impl Ready {
    fn push(&self, tenant: &Arc<Tenant>) {
        let mut state = lock(&self.state);
        if !state.0.iter().any(|t| Arc::ptr_eq(t, tenant)) {
            state.0.push(tenant.clone());
        }
        self.wake.notify_one();
    }

    /// The next customer with queued batches; None once closing and none is left.
    fn next(&self) -> Option<Arc<Tenant>> {
        let mut state = lock(&self.state);
        loop {
            if !state.0.is_empty() {
                return Some(state.0.remove(0));
            }
            if state.1 {
                return None;
            }
            state = self.wake.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Lets the applier finish what is queued, then stop.
    pub(super) fn stop(&self) {
        lock(&self.state).1 = true;
        self.wake.notify_all();
    }
}

/// Starts the applier of `core`, at the lower CPU priority of ingestion (see the ingest route).
pub(super) fn start(core: Arc<Core>) -> anyhow::Result<std::thread::JoinHandle<()>> {
    Ok(std::thread::Builder::new().name("stats-applier".into()).spawn(move || {
        #[cfg(target_os = "linux")]
        // SAFETY: setpriority takes integers only; on Linux, PRIO_PROCESS with 0 is the calling thread.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
        }
        while let Some(tenant) = core.ready.next() {
            core.apply_queued(&tenant);
        }
    })?)
}

impl Tenant {
    /// Waits until the customer's queue has room for a batch.
    pub(super) fn wait_for_room(&self) {
        let mut pending = lock(&self.pending);
        while pending.records >= MAX_PENDING_RECORDS {
            pending = self.settled.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Core {
    /// Queues a logged access batch (its log entry counted as unapplied until [`Core::apply_queued`] applies it).
    pub(super) fn enqueue(&self, tenant: &Arc<Tenant>, queued: Queued) {
        {
            let mut pending = lock(&tenant.pending);
            pending.records += queued.batch.len();
            pending.logged += 1;
            pending.batches.push(queued);
        }
        self.ready.push(tenant);
    }

    /// Applies every batch queued for `tenant`, summed together.
    fn apply_queued(&self, tenant: &Tenant) {
        let batches = std::mem::take(&mut lock(&tenant.pending).batches);
        if batches.is_empty() {
            return;
        }
        let records: usize = batches.iter().map(|q| q.batch.len()).sum();
        // A panic here is a bug; the batches stay in the log, kept for the next start to replay.
        let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match if batches.len() > 1 { combine(&batches) } else { None } {
                Some((batch, maps)) => self.apply_access(tenant, &batch, &maps),
                None => batches.iter().for_each(|q| self.apply_access(tenant, &q.batch, &q.maps)),
            }
        }));
        if applied.is_err() {
            tracing::error!(records, "statistics: applying logged batches failed; a restart replays them from the log");
            self.log.set_broken();
        }
        {
            let mut pending = lock(&tenant.pending);
            pending.applied += batches.len() as u64;
            pending.records -= records;
        }
        tenant.settled.notify_all();
        self.log.applied(batches.len());
    }
}

/// Queued batches as one, or None if they cannot be (then each is applied alone). Each
/// column's values are renumbered by their dictionary ids, so that a value has one id in the combined batch
/// whichever batch it came from, with the maps from the new ids to the dictionaries'. The country code is also
/// summed as `client_country_code` through a map of its own (see [`Core::access_columns`]): it is renumbered by
/// both ids. The combined columns' `values` are placeholders: only the ids and their number are summed.
pub(super) fn combine(batches: &[Queued]) -> Option<(AccessBatch, Vec<Vec<u32>>)> {
    const DIMS: usize = 14;
    const COUNTRY: usize = 4;
    // The constant waf_action column (ALLOW) has one id in every batch.
    let allow = batches.first()?.maps.get(DIMS + 1)?;
    if batches.iter().any(|q| q.maps.len() != DIMS + 2 || q.maps[DIMS + 1] != *allow) {
        return None;
    }
    // (batch, record): batch after batch, as they were acknowledged, so that rows are first seen in the order
    // they would be if each batch were applied alone (which is what ties in answers keep).
    let order: Vec<(u32, u32)> =
        batches.iter().enumerate().flat_map(|(b, q)| (0..q.batch.len() as u32).map(move |r| (b as u32, r))).collect();
    let mut maps: Vec<Vec<u32>> = vec![Vec::new(); DIMS + 2];
    maps[DIMS + 1].clone_from(allow);
    // Per dimension: the new id of each key (its dictionary id, and for the country its client_country_code
    // id too); per batch and dimension, the new id of each batch id.
    let mut seen: Vec<FxHashMap<u64, u32>> = vec![FxHashMap::default(); DIMS];
    let mut renumber: Vec<Vec<Vec<u32>>> = Vec::with_capacity(batches.len());
    for q in batches {
        let mut per_dim = Vec::with_capacity(DIMS);
        for (d, map) in q.maps[..DIMS].iter().enumerate() {
            let ids = map
                .iter()
                .enumerate()
                .map(|(local, id)| {
                    let second = if d == COUNTRY { q.maps[DIMS][local] } else { 0 };
                    let key = u64::from(*id) << 32 | u64::from(second);
                    *seen[d].entry(key).or_insert_with(|| {
                        maps[d].push(*id);
                        if d == COUNTRY {
                            maps[DIMS].push(second);
                        }
                        maps[d].len() as u32 - 1
                    })
                })
                .collect();
            per_dim.push(ids);
        }
        renumber.push(per_dim);
    }
    let mut out = AccessBatch {
        ts_ms: batches.iter().flat_map(|q| q.batch.ts_ms.iter().copied()).collect(),
        dims: Default::default(),
        metrics: Default::default(),
    };
    for (d, column) in out.dims.iter_mut().enumerate() {
        column.values = vec![String::new(); maps[d].len()];
        column.ids = order
            .iter()
            .map(|(b, r)| {
                let (b, r) = (*b as usize, *r as usize);
                renumber[b][d][batches[b].batch.dims[d].ids[r] as usize]
            })
            .collect();
    }
    for (m, metric) in out.metrics.iter_mut().enumerate() {
        *metric = batches.iter().flat_map(|q| q.batch.metrics[m].iter().copied()).collect();
    }
    Some((out, maps))
}
