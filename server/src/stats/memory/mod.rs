//! The embedded statistics engine: per customer, dictionary-encoded columnar rollups in memory — one per
//! listed grouping set and granularity, so that a query reads exactly the rollup of its grouping set — and the
//! raw security events of the last days. Every ingested batch is appended to a write-ahead log and fsynced
//! before the call returns; snapshots let the log be emptied.
//!
//! Here: opening (the snapshot, then the log replayed) and the [`StatsEngine`] calls. The parts: `tenant` (one
//! customer's dictionaries, rollups, raw events and kept keys), `write` (a batch encoded, logged and summed),
//! `applier` (access batches summed after the answer, several at once),
//! `aggregate` (the sums, rollup from rollup), `block` (one bucket's rows), `query`, `limits` (what bounds a
//! customer's memory), `keys` (idempotency keys), `wal` (the log), `snapshot`, and `codec` (the binary
//! encoding both write).

use std::{
    collections::HashMap,
    fs::{self, File, OpenOptions},
    io::Read,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
};

use anyhow::Context;
use edge_api::stats::{Family, Query};

use super::{
    AccessBatch, Answer, Endpoint, Footprint, IngestError, Kept, Keyed, Limits, QueryError, SecurityBatch, StatsEngine,
    Stored, Usage,
    ingest::SECURITY_DIMS,
    rollups::{DIMS, EVENT_DAYS, HITS, Kind, METRICS, Spec, all_specs, day_start, stand_ins},
};
use crate::{clock::Clock, store::CustomerId};

pub(super) mod aggregate;
mod applier;
mod block;
pub(in crate::stats) mod codec;
mod keys;
mod limits;
mod query;
mod snapshot;
mod tenant;
#[cfg(test)]
mod tests;
mod wal;
mod write;

use aggregate::{Mapping, Plan, Records, Work};
use codec::{
    Dec, Decode, KIND_ACCESS, KIND_ACCESS_KEYED, KIND_ACCESS_ROWS, KIND_SECURITY, KIND_SECURITY_KEYED,
    KIND_SECURITY_ROWS, decode_access, decode_access_rows, decode_security, decode_security_rows,
};
use snapshot::load_snapshot;
use tenant::{Tenant, lock, read, write};
use wal::{Log, WAL_MAGIC, hash64};

/// Dictionary ids are packed 25 bits each into a 128-bit key (at most 5 dimensions a rollup).
const ID_BITS: u32 = 25;
/// Distinct values one dimension of one customer can hold.
pub const MAX_IDS: usize = 1 << ID_BITS;
/// Security event dimensions stored with each raw event (ids into [`DIMS`]): those of a security batch.
pub(super) const EVENT_DIMS: [&str; 14] = SECURITY_DIMS;

/// The access columns a plan reads: the 14 of a batch, then its country code as `client_country_code`, then
/// `waf_action` (always ALLOW).
pub(super) const ACCESS_WAF_ACTION: usize = 15;

/// What a rollup takes from an access batch.
pub(super) fn access_mapping(spec: &Spec) -> Option<Mapping> {
    let metrics = match spec.kind {
        Kind::Delivery => (0..METRICS).collect(),
        Kind::TopKUrl | Kind::RequestTrend => vec![HITS],
        _ => return None,
    };
    let dims = spec
        .dims
        .iter()
        .map(|d| match DIMS[*d] {
            "client_country_code" => (4, 14),
            "waf_action" => (ACCESS_WAF_ACTION, ACCESS_WAF_ACTION),
            _ => (*d, *d),
        })
        .collect();
    Some(Mapping { records: Records::All, dims, metrics })
}

/// The rollup whose rows stand for each of `specs`' in this engine ([`stand_ins`]): one of the same kind and
/// granularity. Only those are summed as batches come; the others when read ([`Core::derive`]).
pub(super) fn summed_stand_ins(specs: &[Spec]) -> Vec<usize> {
    stand_ins(specs, |a, b| (specs[a].kind, specs[a].granularity) == (specs[b].kind, specs[b].granularity))
}

/// How an access batch is summed into the rollups of `specs` that are `summed`.
pub(super) fn access_plan(specs: &[Spec], summed: impl Fn(usize) -> bool) -> Plan {
    Plan::new(specs, METRICS, Some(ACCESS_WAF_ACTION), |i, s| if summed(i) { access_mapping(s) } else { None })
}

/// How a security batch is summed into the rollups of `specs` that are `summed`.
pub(super) fn security_plan(specs: &[Spec], summed: impl Fn(usize) -> bool) -> Plan {
    Plan::new(specs, 1, None, |i, s| if summed(i) { security_mapping(s) } else { None })
}

/// An access batch as a plan reads it ([`ACCESS_WAF_ACTION`]): its 14 columns, its country code again as
/// `client_country_code`, and `zeros` (one a record: ALLOW, the one value) as `waf_action`; `metrics` are the
/// batch's metric columns.
pub(super) fn access_input<'a>(
    b: &'a AccessBatch,
    zeros: &'a [u32],
    metrics: &'a [&'a [u64]],
    maps: &'a [Vec<u32>],
) -> aggregate::Input<'a> {
    let mut cols: Vec<&[u32]> = b.dims.iter().map(|c| c.ids.as_slice()).collect();
    cols.push(&b.dims[4].ids);
    cols.push(zeros);
    let mut card: Vec<usize> = b.dims.iter().map(|c| c.values.len()).collect();
    card.push(b.dims[4].values.len());
    card.push(1);
    aggregate::Input {
        ts: &b.ts_ms,
        cols,
        card,
        metrics: aggregate::Metrics::Columns(metrics),
        wanted: Vec::new(),
        maps,
    }
}

/// The value of batch id `id` of column `column` of [`access_input`].
pub(super) fn access_value(b: &AccessBatch, column: usize, id: u32) -> &str {
    match column {
        ACCESS_WAF_ACTION => "ALLOW",
        14 => b.dims[4].values[id as usize].as_str(),
        c => b.dims[c].values[id as usize].as_str(),
    }
}

/// Which events of a security batch each kind of security rollup sums: WAF events, the others, the
/// rate-limited others.
pub(super) fn security_kinds(b: &SecurityBatch) -> Vec<(aggregate::Records, Vec<bool>)> {
    let col = |name: &str| EVENT_DIMS.iter().position(|d| *d == name).unwrap_or(0);
    let (source, action) = (col("source"), col("event_action"));
    let local_of = |c: usize, v: &str| b.dims[c].values.iter().position(|x| x == v).map(|i| i as u32);
    let (waf, rate_limit) = (local_of(source, "waf"), local_of(action, "RATE_LIMIT"));
    let is_waf: Vec<bool> = b.dims[source].ids.iter().map(|s| Some(*s) == waf).collect();
    let limited: Vec<bool> = b.dims[action].ids.iter().map(|a| Some(*a) == rate_limit).collect();
    [(true, false), (false, false), (false, true)]
        .into_iter()
        .map(|(waf, rate_limited)| {
            let w = (0..b.len()).map(|i| is_waf[i] == waf && (!rate_limited || limited[i])).collect();
            (aggregate::Records::Security { waf, rate_limited }, w)
        })
        .collect()
}

/// A security batch as a plan reads it: its columns, each event counted once, `kinds` from [`security_kinds`].
pub(super) fn security_input<'a>(
    b: &'a SecurityBatch,
    kinds: &'a [(aggregate::Records, Vec<bool>)],
    maps: &'a [Vec<u32>],
) -> aggregate::Input<'a> {
    aggregate::Input {
        ts: &b.ts_ms,
        cols: b.dims.iter().map(|c| c.ids.as_slice()).collect(),
        card: b.dims.iter().map(|c| c.values.len()).collect(),
        metrics: aggregate::Metrics::Count,
        wanted: kinds.iter().map(|(records, w)| (*records, w.as_slice())).collect(),
        maps,
    }
}

/// What a rollup takes from a security batch.
pub(super) fn security_mapping(spec: &Spec) -> Option<Mapping> {
    let records = match spec.kind {
        Kind::WafTrend | Kind::RequestTrend => Records::Security { waf: true, rate_limited: false },
        Kind::ShapingTrend => Records::Security { waf: false, rate_limited: false },
        Kind::TopK { waf, rate_limited } => Records::Security { waf, rate_limited },
        Kind::Delivery | Kind::TopKUrl => return None,
    };
    let col = |d: usize| EVENT_DIMS.iter().position(|n| *n == DIMS[d]).unwrap_or(0);
    Some(Mapping { records, dims: spec.dims.iter().map(|d| (col(*d), col(*d))).collect(), metrics: vec![0] })
}

/// The engine: its state, shared with the thread that applies logged access batches ([`applier`]).
pub struct MemoryEngine {
    core: Arc<Core>,
    applier: Option<std::thread::JoinHandle<()>>,
}

impl std::ops::Deref for MemoryEngine {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

impl Drop for MemoryEngine {
    /// Applies what is queued, then stops the applier.
    fn drop(&mut self) {
        self.core.ready.stop();
        if let Some(applier) = self.applier.take() {
            let _ = applier.join();
        }
    }
}

/// What the engine holds: the customers' statistics, the log, the plans and the applier's queue.
pub struct Core {
    dir: PathBuf,
    clock: Arc<dyn Clock>,
    specs: Vec<Spec>,
    /// The rollup each spec's rows are summed from (itself for the rollups summed as batches come; see
    /// [`stand_ins`] and [`Core::derive`]).
    stand_in: Vec<usize>,
    /// What a customer may hold.
    limits: Limits,
    tenants: RwLock<HashMap<CustomerId, Arc<Tenant>>>,
    /// The write-ahead log (group commit).
    log: Log,
    /// How access logs and security events are summed into the rollups.
    access_plan: Plan,
    security_plan: Plan,
    /// Tables of past batches, kept with their capacity for the next ones.
    work: Mutex<Vec<Work>>,
    /// Customers with logged access batches waiting to be applied.
    ready: applier::Ready,
}

/// A checkpoint is taken by the upkeep when the log grows past this.
const CHECKPOINT_WAL_BYTES: u64 = 256 * 1024 * 1024;

/// Free space a snapshot needs beyond the engine's size in memory (which it does not exceed).
const SNAPSHOT_SPARE_BYTES: u64 = 16 << 20;

impl MemoryEngine {
    /// Opens the engine in `<data_dir>/stats` with no limit but its own (benchmarks, tests): loads the
    /// snapshot and replays the log after it.
    pub fn open(data_dir: &Path, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        Self::open_with(data_dir, clock, Limits::NONE)
    }

    /// [`MemoryEngine::open`] with what each customer may hold. The log's batches replay under these limits
    /// too, except that none is refused for the rows it holds: each was acknowledged.
    pub fn open_with(data_dir: &Path, clock: Arc<dyn Clock>, limits: Limits) -> anyhow::Result<Self> {
        let dir = data_dir.join("stats");
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        // A snapshot cut off while being written (the disk filled, the process died) is of no use: the log
        // still holds what it would have held.
        let _ = fs::remove_file(dir.join("snapshot.tmp"));
        let specs = all_specs();
        let stand_in = summed_stand_ins(&specs);
        let mut tenants = HashMap::new();
        let mut applied = 0;
        let snapshot = dir.join("snapshot.bin");
        if snapshot.exists() {
            applied = load_snapshot(&snapshot, specs.len(), clock.now_ms(), &mut tenants)
                .with_context(|| format!("loading {}", snapshot.display()))?;
        }
        let wal_path = dir.join("wal.bin");
        let mut engine = Core {
            dir,
            clock,
            tenants: RwLock::new(HashMap::new()),
            log: Log::open(wal_path.clone(), applied, 0)?,
            limits,
            access_plan: access_plan(&specs, |i| stand_in[i] == i),
            security_plan: security_plan(&specs, |i| stand_in[i] == i),
            work: Mutex::new(Vec::new()),
            ready: applier::Ready::default(),
            specs,
            stand_in,
        };
        {
            let mut map = engine.tenants.write().unwrap_or_else(|e| e.into_inner());
            for (id, t) in tenants {
                map.insert(id, Arc::new(t));
            }
        }
        let (seq, valid_len) = engine.replay(&wal_path, applied)?;
        // A torn batch at the end (a crash while writing) was never acknowledged: cut it off.
        let file = OpenOptions::new().write(true).open(&wal_path)?;
        file.set_len(valid_len)?;
        file.sync_all()?;
        engine.log = Log::open(wal_path, seq.max(applied), valid_len)?;
        let core = Arc::new(engine);
        let applier = applier::start(core.clone())?;
        Ok(MemoryEngine { core, applier: Some(applier) })
    }
}

impl Core {
    /// Applies the log's batches after `applied`; returns the last sequence number and the length of the valid
    /// part of the log.
    fn replay(&self, path: &Path, applied: u64) -> anyhow::Result<(u64, u64)> {
        let mut bytes = Vec::new();
        File::open(path)?.read_to_end(&mut bytes)?;
        let mut d = Dec(&bytes);
        let (mut seq, mut valid) = (applied, 0u64);
        loop {
            let before = d.0.len();
            let Ok(batch) = (|| -> anyhow::Result<_> {
                anyhow::ensure!(d.u32()? == WAL_MAGIC, "bad magic");
                let (s, kind, customer, count) = (d.u64()?, d.u8()?, d.i64()?, d.u32()?);
                let len = d.u64()? as usize;
                let hash = d.u64()?;
                let payload = d.take(len)?;
                anyhow::ensure!(hash64(payload) == hash, "bad checksum");
                Ok((s, kind, customer, count, payload))
            })() else {
                break;
            };
            let (s, kind, customer, count, payload) = batch;
            let frame = &bytes[valid as usize..valid as usize + (before - d.0.len())];
            valid += (before - d.0.len()) as u64;
            if s <= applied {
                continue;
            }
            seq = s;
            // A keyed batch starts with its key, kept once the batch is applied.
            let mut rest = Dec(payload);
            let entry = match kind {
                KIND_ACCESS_KEYED | KIND_SECURITY_KEYED => keys::Entry::decode(&mut rest).map(Some),
                _ => Ok(None),
            };
            let keep = |tenant: &Tenant, entry: Option<keys::Entry>| {
                if let Some(entry) = entry {
                    lock(&tenant.keys).insert(entry, self.clock.now_ms());
                }
            };
            let result = match kind {
                KIND_ACCESS | KIND_ACCESS_ROWS | KIND_ACCESS_KEYED => {
                    let batch = if kind == KIND_ACCESS_ROWS {
                        decode_access_rows(rest, count)
                    } else {
                        decode_access(rest, count as usize)
                    };
                    entry.and_then(|e| batch.map(|b| (e, b))).map_err(IngestError::from).and_then(|(entry, b)| {
                        let tenant = self.tenant(customer);
                        let encoded = self.encode_access(&tenant, &b)?;
                        self.apply_access(&tenant, &b, &encoded.maps);
                        keep(&tenant, entry);
                        Ok(())
                    })
                }
                KIND_SECURITY | KIND_SECURITY_ROWS | KIND_SECURITY_KEYED => {
                    let batch = if kind == KIND_SECURITY_ROWS {
                        decode_security_rows(rest, count)
                    } else {
                        decode_security(rest, count as usize)
                    };
                    entry.and_then(|e| batch.map(|b| (e, b))).map_err(IngestError::from).and_then(|(entry, b)| {
                        let tenant = self.tenant(customer);
                        let encoded = self.encode_security(&tenant, &b)?;
                        self.apply_security(&tenant, &b, &encoded.maps);
                        keep(&tenant, entry);
                        Ok(())
                    })
                }
                other => Err(IngestError::Internal(anyhow::anyhow!("unknown kind of batch {other}"))),
            };
            // A whole, checksummed batch that cannot be applied (written by an older version, or refused by a
            // limit since lowered) is skipped and kept aside for the operator: the rest of the log still counts.
            if let Err(e) = result {
                let aside = self.dir.join(format!("skipped-batch-{s}.bin"));
                let kept = fs::write(&aside, frame).and_then(|()| File::open(&aside)?.sync_all());
                tracing::error!(
                    seq = s,
                    customer,
                    records = count,
                    error = %e,
                    kept_in = %aside.display(),
                    kept = kept.is_ok(),
                    "statistics log: skipped a batch that cannot be applied"
                );
            }
        }
        Ok((seq, valid))
    }

    fn tenant(&self, customer: CustomerId) -> Arc<Tenant> {
        if let Some(t) = read(&self.tenants).get(&customer) {
            return t.clone();
        }
        let mut map = write(&self.tenants);
        map.entry(customer).or_insert_with(|| Arc::new(Tenant::new(self.specs.len()))).clone()
    }

    fn existing_tenant(&self, customer: CustomerId) -> Option<Arc<Tenant>> {
        read(&self.tenants).get(&customer).cloned()
    }

    /// Waits until every access batch acknowledged so far is applied (see [`Tenant::settle`]).
    pub fn settle(&self) {
        let tenants: Vec<_> = read(&self.tenants).values().cloned().collect();
        tenants.iter().for_each(|t| t.settle());
    }
}

impl StatsEngine for MemoryEngine {
    fn ingest_access(
        &self,
        customer: CustomerId,
        batch: &AccessBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        self.store_access(customer, batch, key)
    }

    fn ingest_security(
        &self,
        customer: CustomerId,
        batch: &SecurityBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        self.store_security(customer, batch, key)
    }

    fn kept(&self, customer: CustomerId, endpoint: Endpoint, key: &str) -> Result<Option<Kept>, IngestError> {
        let Some(tenant) = self.existing_tenant(customer) else { return Ok(None) };
        let now = self.clock.now_ms();
        Ok(lock(&tenant.keys).get(endpoint, key, now))
    }

    fn query(&self, customer: CustomerId, customer_name: &str, query: &Query) -> Result<Answer, QueryError> {
        let tenant = self.existing_tenant(customer).unwrap_or_else(|| Arc::new(Tenant::new(self.specs.len())));
        tenant.settle();
        if query.family != Family::Events {
            return self.query_rollups(&tenant, customer_name, query);
        }
        let dicts = read(&tenant.dicts);
        let ev = read(&tenant.events);
        if ev.sorted {
            return self.query_events(&dicts, &ev, customer_name, query);
        }
        // Sorted and read under one lock: an ingestion in between could append out of order again.
        drop(ev);
        let mut ev = write(&tenant.events);
        ev.sort();
        self.query_events(&dicts, &ev, customer_name, query)
    }

    fn enforce_retention(&self, now_ms: i64) -> anyhow::Result<()> {
        let tenants: Vec<_> = self.tenants.read().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        for t in tenants {
            for (spec, rollup) in self.specs.iter().zip(&t.rollups) {
                let mut rollup = write(rollup);
                if let Some(from) = self.limits.kept_from(spec.granularity, now_ms) {
                    let keep = rollup.blocks.split_off(&from);
                    let dropped = std::mem::replace(&mut rollup.blocks, keep);
                    t.drop_rows(dropped.values().map(|b| b.len() as u64).sum());
                }
                rollup.seal_untouched();
            }
            {
                let mut ev = write(&t.events);
                ev.sort();
                let from = day_start(now_ms) - EVENT_DAYS * 86_400_000;
                let cut = ev.ts.partition_point(|x| *x < from);
                if cut > 0 {
                    ev.ts.drain(..cut);
                    for col in &mut ev.cols {
                        col.drain(..cut);
                    }
                    t.drop_rows(cut as u64);
                }
            }
            lock(&t.keys).prune(now_ms);
            let dropped = limits::compact_dictionaries(&t, &self.specs, self.limits.max_values);
            if dropped > 0 {
                tracing::info!(values = dropped, "statistics: dropped dictionary values no stored row uses any more");
            }
        }
        Ok(())
    }

    fn checkpoint(&self) -> anyhow::Result<()> {
        // A snapshot is written beside the one it replaces: without room for it, keep the log (nothing is lost,
        // the next start replays it) rather than fill the disk that the state and the log need.
        let needed = self.footprint().bytes + SNAPSHOT_SPARE_BYTES;
        if let Some(free) = crate::disk::free_bytes(&self.dir)
            && free < needed
        {
            tracing::warn!(
                free_mib = free >> 20,
                needed_mib = needed >> 20,
                dir = %self.dir.display(),
                "not enough free space for a statistics snapshot: skipped, the log is kept"
            );
            return Ok(());
        }
        // Every batch logged so far is applied once this is held, and no other is logged.
        let quiet = self.log.quiesce();
        anyhow::ensure!(!quiet.broken(), "the statistics log holds batches not applied; restart to replay them");
        let tmp = self.dir.join("snapshot.tmp");
        if let Err(e) = self.write_snapshot(&tmp, quiet.seq()) {
            let _ = fs::remove_file(&tmp);
            return Err(e.context(format!("writing {}", tmp.display())));
        }
        fs::rename(&tmp, self.dir.join("snapshot.bin"))?;
        File::open(&self.dir)?.sync_all()?;
        quiet.emptied()
    }

    fn log_bytes(&self) -> u64 {
        self.log.bytes()
    }

    /// Also writes a snapshot when the log has grown past [`CHECKPOINT_WAL_BYTES`], or with `retention` when it
    /// holds anything.
    fn maintain(&self, now_ms: i64, retention: bool) -> anyhow::Result<()> {
        if retention {
            self.enforce_retention(now_ms)?;
        }
        if self.log_bytes() > CHECKPOINT_WAL_BYTES || (retention && self.log_bytes() > 0) {
            self.checkpoint()?;
        }
        Ok(())
    }

    fn footprint(&self) -> Footprint {
        self.settle();
        let mut f = Footprint::default();
        for t in read(&self.tenants).values() {
            let one = t.footprint();
            f.rollup_rows += one.rollup_rows;
            f.event_rows += one.event_rows;
            f.bytes += one.bytes;
        }
        f
    }

    fn usage(&self) -> Vec<Usage> {
        self.settle();
        let tenants: Vec<_> = read(&self.tenants).iter().map(|(id, t)| (*id, t.clone())).collect();
        let mut usage: Vec<Usage> = tenants.iter().map(|(id, t)| limits::usage(*id, t, t.footprint().bytes)).collect();
        usage.sort_by_key(|u| u.customer);
        usage
    }

    fn limits(&self) -> Limits {
        self.limits
    }
}
