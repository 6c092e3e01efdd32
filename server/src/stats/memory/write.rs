//! Storing a batch: its values encoded as the customer's dictionary ids (folded past the limit), the batch
//! logged durably, then summed into every rollup (in parts, one a core) and the raw events; and the
//! benchmark's bulk loads.

use anyhow::Context;
use edge_api::stats::{Family, Granularity};

use super::{
    super::{
        AccessBatch, DIMS, IngestError, Keyed, SecurityBatch, SecurityRecord, Stored, dim_id,
        ingest::Column,
        rollups::{EVENT_DAYS, day_start, ids, kind_of},
    },
    Core, EVENT_DIMS, ID_BITS, MAX_IDS,
    aggregate::{self, Horizon, Work},
    codec::{
        Enc, KIND_ACCESS, KIND_ACCESS_KEYED, KIND_SECURITY, KIND_SECURITY_KEYED, wire_access_into, wire_security_into,
    },
    keys, limits,
    tenant::{Queued, Tenant, lock, read, write},
};
use crate::store::CustomerId;

impl Core {
    /// Logs a batch durably (group commit with concurrent requests), then runs `apply`, registered as
    /// applying, so that a checkpoint never falls between a logged batch and its application (batches of
    /// concurrent requests are applied at the same time, rollup by rollup). `apply` cannot fail: whatever
    /// could refuse the batch happened before it was logged.
    fn logged(
        &self,
        kind: u8,
        customer: CustomerId,
        count: usize,
        payload: Vec<u8>,
        apply: impl FnOnce(),
    ) -> anyhow::Result<()> {
        let applying = self.log.commit(kind, customer, count, &payload)?;
        drop(payload);
        apply();
        drop(applying);
        Ok(())
    }

    /// The columns of an access batch as the dictionaries take them: the 14 of the batch (by [`DIMS`] id),
    /// its country code again as `client_country_code`, and `waf_action` (ALLOW).
    fn access_columns(b: &AccessBatch) -> Vec<(usize, &Column)> {
        /// The `waf_action` of every access-log record.
        static ALLOW: std::sync::LazyLock<Column> =
            std::sync::LazyLock::new(|| Column { values: vec!["ALLOW".into()], ids: Vec::new() });
        let mut columns: Vec<(usize, &Column)> = b.dims.iter().enumerate().collect();
        columns.push((dim_id("client_country_code").unwrap_or(0), &b.dims[4]));
        columns.push((dim_id("waf_action").unwrap_or(0), &*ALLOW));
        columns
    }

    fn security_columns(b: &SecurityBatch) -> Vec<(usize, &Column)> {
        b.dims.iter().enumerate().map(|(i, c)| (dim_id(EVENT_DIMS[i]).unwrap_or(0), c)).collect()
    }

    /// Dictionary ids of an access batch's values, by column of [`Core::access_columns`].
    pub(super) fn encode_access(&self, tenant: &Tenant, b: &AccessBatch) -> Result<limits::Encoded, IngestError> {
        limits::encode(&mut write(&tenant.dicts), &Self::access_columns(b), self.limits.max_values)
    }

    /// Dictionary ids of a security batch's values, by column (in [`SECURITY_DIMS`] order).
    pub(super) fn encode_security(&self, tenant: &Tenant, b: &SecurityBatch) -> Result<limits::Encoded, IngestError> {
        limits::encode(&mut write(&tenant.dicts), &Self::security_columns(b), self.limits.max_values)
    }

    /// Adds an encoded access batch to every delivery, top-K URL and request-trend rollup.
    pub(super) fn apply_access(&self, tenant: &Tenant, b: &AccessBatch, maps: &[Vec<u32>]) {
        let zeros = vec![0u32; b.len()];
        let horizon = Horizon { now_ms: self.clock.now_ms(), limits: self.limits };
        let metrics: Vec<&[u64]> = b.metrics.iter().map(Vec::as_slice).collect();
        let input = super::access_input(b, &zeros, &metrics, maps);
        in_parts(b.len(), |part| {
            self.with_work(|work| self.access_plan.apply(work, &input, &tenant.rollups, &horizon, &tenant.rows, part));
        });
    }

    fn with_work(&self, f: impl FnOnce(&mut Work)) {
        let mut work = self.work.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
        f(&mut work);
        self.work.lock().unwrap_or_else(|e| e.into_inner()).push(work);
    }

    /// Adds an encoded security batch to the raw events and every security rollup.
    pub(super) fn apply_security(&self, tenant: &Tenant, b: &SecurityBatch, maps: &[Vec<u32>]) {
        let n = b.len();
        {
            let events_from = day_start(self.clock.now_ms()) - EVENT_DAYS * 86_400_000;
            let mut ev = write(&tenant.events);
            let before = ev.ts.len();
            for i in (0..n).filter(|i| b.ts_ms[*i] >= events_from) {
                if ev.ts.last().is_some_and(|last| *last > b.ts_ms[i]) {
                    ev.sorted = false;
                }
                ev.ts.push(b.ts_ms[i]);
                for (c, column) in ev.cols.iter_mut().enumerate() {
                    column.push(maps[c][b.dims[c].ids[i] as usize]);
                }
            }
            tenant.add_rows((ev.ts.len() - before) as u64);
        }
        let kinds = super::security_kinds(b);
        let horizon = Horizon { now_ms: self.clock.now_ms(), limits: self.limits };
        let input = super::security_input(b, &kinds, maps);
        in_parts(n, |part| {
            self.with_work(|work| {
                self.security_plan.apply(work, &input, &tenant.rollups, &horizon, &tenant.rows, part)
            });
        });
    }

    /// Loads pre-aggregated rows into the rollup of a delivery or top-K URL grouping set (the benchmark's bulk
    /// load, written to disk by the next checkpoint). Each row: bucket start, the grouping set's dimension
    /// values in `dims` order, the metrics (all 8 for delivery, hits for top-K URL).
    pub fn bulk_load(
        &self,
        customer: CustomerId,
        family: Family,
        granularity: Granularity,
        dims: &[&str],
        rows: impl Iterator<Item = (i64, Vec<String>, Vec<u64>)>,
    ) -> anyhow::Result<u64> {
        let want = ids(dims);
        let kind = kind_of(family);
        let index = self
            .specs
            .iter()
            .position(|s| s.kind == kind && s.granularity == granularity && s.dims == want)
            .ok_or_else(|| anyhow::anyhow!("no rollup for {}/{}", granularity.as_str(), dims.join("/")))?;
        let n_metrics = self.specs[index].metrics;
        let order: Vec<usize> =
            want.iter().map(|id| dims.iter().position(|d| dim_id(d) == Some(*id)).unwrap_or(0)).collect();
        let tenant = self.tenant(customer);
        let mut dicts = write(&tenant.dicts);
        let mut rollup = write(&tenant.rollups[index]);
        let mut n = 0;
        for (bucket, values, metrics) in rows {
            let mut e = Vec::with_capacity(want.len());
            for (k, id) in want.iter().enumerate() {
                e.push(dicts[*id].id(&values[order[k]], MAX_IDS).context("dictionary full")?);
            }
            let key = e.iter().fold(0u128, |k, v| (k << ID_BITS) | u128::from(*v));
            anyhow::ensure!(metrics.len() == n_metrics, "{n_metrics} metrics a row");
            if rollup.open(bucket, want.len(), n_metrics).add(key, &metrics) {
                tenant.add_rows(1);
            }
            n += 1;
        }
        rollup.seal_all();
        Ok(n)
    }

    /// Adds raw security events only (no rollups, no log; the next checkpoint writes them): the benchmark's
    /// bulk load of events.
    pub fn bulk_load_events(&self, customer: CustomerId, records: &[SecurityRecord]) -> anyhow::Result<()> {
        let tenant = self.tenant(customer);
        let mut dicts = write(&tenant.dicts);
        let mut ev = write(&tenant.events);
        for r in records {
            let mut row = [0u32; EVENT_DIMS.len()];
            for (c, name) in EVENT_DIMS.iter().enumerate() {
                let id = dim_id(name).unwrap_or(0);
                row[c] = dicts[id].id(&r.dims[c], MAX_IDS).context("dictionary full")?;
            }
            if ev.ts.last().is_some_and(|last| *last > r.ts_ms) {
                ev.sorted = false;
            }
            ev.ts.push(r.ts_ms);
            for (col, v) in ev.cols.iter_mut().zip(row) {
                col.push(v);
            }
        }
        tenant.add_rows(records.len() as u64);
        Ok(())
    }
}

/// Batches of at least this many records are summed in parts on threads of their own.
const PART_RECORDS: usize = 2048;

/// Runs `apply(part, parts)` for every part of a batch of `n` records at once: one part a core (at most
/// [`aggregate::MAX_PARTS`]), each part summing and merging its own rollups (see [`Plan::apply`]), so that a
/// request of one connection uses every core.
fn in_parts(n: usize, apply: impl Fn((usize, usize)) + Sync) {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores =
        *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |c| c.get().min(aggregate::MAX_PARTS)));
    let parts = if n >= PART_RECORDS { cores } else { 1 };
    if parts == 1 {
        return apply((0, 1));
    }
    std::thread::scope(|s| {
        let apply = &apply;
        let others: Vec<_> = (1..parts).map(|p| s.spawn(move || apply((p, parts)))).collect();
        apply((0, parts));
        for other in others {
            if let Err(panic) = other.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

impl Core {
    /// Stores an access batch, and with it `key` if there is one (in the same log record, kept once the batch
    /// is logged); the batch is summed by the applier (see `applier`).
    pub(super) fn store_access(
        &self,
        customer: CustomerId,
        batch: &AccessBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        if batch.is_empty() {
            return Ok(Stored::default());
        }
        let sorted = batch.by_time();
        let in_order = sorted.as_ref().unwrap_or(batch);
        let tenant = self.tenant(customer);
        limits::room(&tenant, &self.limits)?;
        if limits::may_fill(&tenant, &self.limits) {
            tenant.settle();
            limits::room(&tenant, &self.limits)?;
        }
        tenant.wait_for_room();
        let _ids = read(&tenant.ids);
        let encoded = self.encode_access(&tenant, in_order)?;
        let folded = encoded.folded_records(&Self::access_columns(in_order));
        // The log keeps folded values as stored. (A country code folded only as client_country_code, whose
        // dictionary security events fill too, is folded again when the log replays.)
        let mut as_stored = None;
        for (c, column) in in_order.dims.iter().enumerate() {
            if let Some(stored) = encoded.as_stored(c, c, column) {
                as_stored.get_or_insert_with(|| in_order.clone()).dims[c] = stored;
            }
        }
        let stored = Stored { folded: folded.iter().map(|(d, n)| (DIMS[*d], *n)).collect() };
        let (kind, mut wire, entry) = self.keyed(KIND_ACCESS, KIND_ACCESS_KEYED, key, in_order.len(), &stored);
        wire_access_into(&mut wire, as_stored.as_ref().unwrap_or(in_order));
        drop(as_stored);
        // Logged, then queued for the applier (see `applier`): the key is kept now, so that a retry finds it.
        self.log.commit(kind, customer, in_order.len(), &wire.0)?.detach();
        drop(wire);
        self.keep(&tenant, entry);
        let batch = sorted.unwrap_or_else(|| batch.clone());
        self.enqueue(&tenant, Queued { batch, maps: encoded.maps });
        limits::count_folded(&tenant, &folded);
        Ok(stored)
    }

    /// The log kind of a batch, the start of its record (its key's entry, if it has a key), and that entry.
    fn keyed(
        &self,
        plain: u8,
        keyed: u8,
        key: Option<&Keyed>,
        records: usize,
        stored: &Stored,
    ) -> (u8, Enc, Option<keys::Entry>) {
        let mut wire = Enc(Vec::new());
        match key {
            None => (plain, wire, None),
            Some(key) => {
                let entry = keys::Entry::new(key, self.clock.now_ms(), records as u64, stored);
                entry.encode(&mut wire);
                (keyed, wire, Some(entry))
            }
        }
    }

    fn keep(&self, tenant: &Tenant, entry: Option<keys::Entry>) {
        if let Some(entry) = entry {
            lock(&tenant.keys).insert(entry, self.clock.now_ms());
        }
    }

    pub(super) fn store_security(
        &self,
        customer: CustomerId,
        batch: &SecurityBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        if batch.is_empty() {
            return Ok(Stored::default());
        }
        let sorted = batch.by_time();
        let batch = sorted.as_ref().unwrap_or(batch);
        let tenant = self.tenant(customer);
        limits::room(&tenant, &self.limits)?;
        // Applied after the access batches acknowledged before it, as it would be were they applied at once.
        tenant.settle();
        let _ids = read(&tenant.ids);
        let encoded = self.encode_security(&tenant, batch)?;
        let folded = encoded.folded_records(&Self::security_columns(batch));
        let mut as_stored = None;
        for (c, column) in batch.dims.iter().enumerate() {
            let dim = dim_id(EVENT_DIMS[c]).unwrap_or(0);
            if let Some(stored) = encoded.as_stored(c, dim, column) {
                as_stored.get_or_insert_with(|| batch.clone()).dims[c] = stored;
            }
        }
        let stored = Stored { folded: folded.iter().map(|(d, n)| (DIMS[*d], *n)).collect() };
        let (kind, mut wire, entry) = self.keyed(KIND_SECURITY, KIND_SECURITY_KEYED, key, batch.len(), &stored);
        wire_security_into(&mut wire, as_stored.as_ref().unwrap_or(batch));
        drop(as_stored);
        let apply = || {
            self.apply_security(&tenant, batch, &encoded.maps);
            self.keep(&tenant, entry);
        };
        self.logged(kind, customer, batch.len(), wire.0, apply)?;
        limits::count_folded(&tenant, &folded);
        Ok(stored)
    }
}
