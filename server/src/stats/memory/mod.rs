//! The embedded statistics engine: per customer, dictionary-encoded columnar rollups in memory — one per
//! listed grouping set and granularity, so that a query reads exactly the rollup of its grouping set — and the
//! raw security events of the last days. Every ingested batch is appended to a write-ahead log and fsynced
//! before the call returns; snapshots let the log be emptied.

use std::{
    collections::{BinaryHeap, HashMap},
    fs::{self, File, OpenOptions},
    io::{BufReader, BufWriter, Read, Write},
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
};

use anyhow::Context;
use edge_api::stats::{Family, Filter, Granularity, Query};
use rustc_hash::FxHashMap;

use super::{
    AccessBatch, AccessRecord, Answer, Cell, Endpoint, Footprint, IngestError, Kept, Keyed, Limits, QueryError,
    SecurityBatch, SecurityRecord, StatsEngine, Stored, Usage,
    ingest::{Column, SECURITY_DIMS},
    rollups::{
        Conditions, DIMS, EVENT_DAYS, HITS, Kind, METRICS, Spec, Target, all_specs, answer_columns, day_start, dim_id,
        ids, is_int, kind_of, metric_index,
    },
};
use crate::{clock::Clock, store::CustomerId};

mod aggregate;
mod block;
mod keys;
mod limits;
mod wal;

use aggregate::{Horizon, Input, Mapping, Metrics, Plan, Records, Work};
use block::{Block, Rollup};
use wal::Log;

/// Dictionary ids are packed 25 bits each into a 128-bit key (at most 5 dimensions a rollup).
const ID_BITS: u32 = 25;
/// Distinct values one dimension of one customer can hold.
pub const MAX_IDS: usize = 1 << ID_BITS;
/// Security event dimensions stored with each raw event (ids into [`DIMS`]): those of a security batch.
const EVENT_DIMS: [&str; 14] = SECURITY_DIMS;

/// The access columns a plan reads: the 14 of a batch, then its country code as `client_country_code`, then
/// `waf_action` (always ALLOW).
const ACCESS_WAF_ACTION: usize = 15;

/// What a rollup takes from an access batch.
fn access_mapping(spec: &Spec) -> Option<Mapping> {
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

/// What a rollup takes from a security batch.
fn security_mapping(spec: &Spec) -> Option<Mapping> {
    let records = match spec.kind {
        Kind::WafTrend | Kind::RequestTrend => Records::Security { waf: true, rate_limited: false },
        Kind::ShapingTrend => Records::Security { waf: false, rate_limited: false },
        Kind::TopK { waf, rate_limited } => Records::Security { waf, rate_limited },
        Kind::Delivery | Kind::TopKUrl => return None,
    };
    let col = |d: usize| EVENT_DIMS.iter().position(|n| *n == DIMS[d]).unwrap_or(0);
    Some(Mapping { records, dims: spec.dims.iter().map(|d| (col(*d), col(*d))).collect(), metrics: vec![0] })
}

#[derive(Default)]
struct Dict {
    ids: FxHashMap<Arc<str>, u32>,
    values: Vec<Arc<str>>,
}

impl Dict {
    /// The id of `v`, added if new; None when the dictionary already holds `max` values.
    fn id(&mut self, v: &str, max: usize) -> Option<u32> {
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
    fn keep(&mut self, used: &[bool]) {
        let values = std::mem::take(&mut self.values);
        self.ids.clear();
        for (v, _) in values.into_iter().zip(used).filter(|(_, u)| **u) {
            self.ids.insert(v.clone(), self.values.len() as u32);
            self.values.push(v);
        }
    }

    /// Forgets the values added after the first `len`.
    fn truncate(&mut self, len: usize) {
        for v in self.values.drain(len.min(self.values.len())..) {
            self.ids.remove(&v);
        }
    }

    fn get(&self, v: &str) -> Option<u32> {
        self.ids.get(v).copied()
    }

    fn value(&self, id: u32) -> Arc<str> {
        self.values.get(id as usize).cloned().unwrap_or_else(|| Arc::from(""))
    }
}

/// Raw security events, in arrival order (sorted by time when queried).
#[derive(Default)]
struct Events {
    ts: Vec<i64>,
    cols: Vec<Vec<u32>>,
    sorted: bool,
}

impl Events {
    fn sort(&mut self) {
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

/// One customer's statistics. Each part has a lock of its own, so that a query waits only while the rollup
/// it reads is being merged into, not for a whole batch.
struct Tenant {
    dicts: RwLock<Vec<Dict>>,
    rollups: Vec<RwLock<Rollup>>,
    events: RwLock<Events>,
    /// Rollup rows and raw events held (what [`Limits::max_rows`] limits).
    rows: std::sync::atomic::AtomicU64,
    /// Records whose value was folded since start, per dimension.
    folded: Vec<std::sync::atomic::AtomicU64>,
    /// Held (shared) by a batch from its encoding to its application, and (alone) by the compaction of the
    /// dictionaries, which renumbers the ids a batch in between was encoded with.
    ids: RwLock<()>,
    /// Keys of the batches stored with an `Idempotency-Key` (each changed with its batch applied).
    keys: Mutex<keys::Keys>,
}

impl Tenant {
    fn new(n_specs: usize) -> Self {
        Tenant {
            dicts: RwLock::new(DIMS.iter().map(|_| Dict::default()).collect()),
            rollups: (0..n_specs).map(|_| RwLock::new(Rollup::default())).collect(),
            events: RwLock::new(Events { ts: Vec::new(), cols: vec![Vec::new(); EVENT_DIMS.len()], sorted: true }),
            rows: Default::default(),
            folded: limits::new_folded_counters(),
            ids: RwLock::new(()),
            keys: Mutex::new(keys::Keys::default()),
        }
    }

    /// Rows held and memory taken.
    fn footprint(&self) -> Footprint {
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

    fn add_rows(&self, n: u64) {
        self.rows.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    fn drop_rows(&self, n: u64) {
        let _ =
            self.rows.fetch_update(std::sync::atomic::Ordering::Relaxed, std::sync::atomic::Ordering::Relaxed, |r| {
                Some(r.saturating_sub(n))
            });
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

fn get_mut<T>(lock: &mut RwLock<T>) -> &mut T {
    lock.get_mut().unwrap_or_else(|e| e.into_inner())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn get_mut_mutex<T>(mutex: &mut Mutex<T>) -> &mut T {
    mutex.get_mut().unwrap_or_else(|e| e.into_inner())
}

pub struct MemoryEngine {
    dir: PathBuf,
    clock: Arc<dyn Clock>,
    specs: Vec<Spec>,
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
}

const WAL_MAGIC: u32 = 0x4544_4757;
/// Snapshots before kept keys (read, never written).
const SNAPSHOT_MAGIC_V1: u32 = 0x4544_4753;
/// Snapshots whose tenants end with their kept keys.
const SNAPSHOT_MAGIC: u32 = 0x4544_4754;
/// A checkpoint is taken by the upkeep when the log grows past this.
const CHECKPOINT_WAL_BYTES: u64 = 256 * 1024 * 1024;

fn hash64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

// Little-endian binary encoding of the log and snapshots.
struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
}

struct Dec<'a>(&'a [u8]);

impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> anyhow::Result<&'a [u8]> {
        anyhow::ensure!(self.0.len() >= n, "truncated");
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> anyhow::Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> anyhow::Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into()?))
    }
    fn u64(&mut self) -> anyhow::Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into()?))
    }
    fn i64(&mut self) -> anyhow::Result<i64> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into()?))
    }
    fn str(&mut self) -> anyhow::Result<&'a str> {
        let n = self.u32()? as usize;
        Ok(std::str::from_utf8(self.take(n)?)?)
    }
}

// Batches in the log, column by column: each text column as its distinct values and one index a record (1, 2
// or 4 bytes, by how many values there are), times and metrics as LEB128 varints (times as zigzag deltas).
const KIND_ACCESS_ROWS: u8 = 0;
const KIND_SECURITY_ROWS: u8 = 1;
const KIND_ACCESS: u8 = 2;
const KIND_SECURITY: u8 = 3;
/// A batch sent with an `Idempotency-Key`: the kept key ([`keys::Entry`]), then the batch as above.
const KIND_ACCESS_KEYED: u8 = 4;
const KIND_SECURITY_KEYED: u8 = 5;

impl Enc {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn times(&mut self, ts: &[i64]) {
        let mut last = 0i64;
        for t in ts {
            let d = t.wrapping_sub(last);
            self.varint(((d << 1) ^ (d >> 63)) as u64);
            last = *t;
        }
    }

    fn column(&mut self, c: &Column) {
        self.u32(c.values.len() as u32);
        for v in &c.values {
            self.str(v);
        }
        match c.values.len() {
            0..=256 => self.0.extend(c.ids.iter().map(|i| *i as u8)),
            257..=65536 => c.ids.iter().for_each(|i| self.0.extend_from_slice(&(*i as u16).to_le_bytes())),
            _ => c.ids.iter().for_each(|i| self.u32(*i)),
        }
    }
}

impl Dec<'_> {
    fn varint(&mut self) -> anyhow::Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        anyhow::bail!("bad varint")
    }

    fn times(&mut self, n: usize) -> anyhow::Result<Vec<i64>> {
        let mut last = 0i64;
        (0..n)
            .map(|_| {
                let z = self.varint()?;
                last = last.wrapping_add(((z >> 1) as i64) ^ -((z & 1) as i64));
                Ok(last)
            })
            .collect()
    }

    fn column(&mut self, n: usize) -> anyhow::Result<Column> {
        let count = self.u32()? as usize;
        let values = (0..count).map(|_| Ok(self.str()?.to_string())).collect::<anyhow::Result<Vec<_>>>()?;
        let ids: Vec<u32> = match count {
            0..=256 => self.take(n)?.iter().map(|b| u32::from(*b)).collect(),
            257..=65536 => {
                self.take(n * 2)?.chunks_exact(2).map(|c| u32::from(u16::from_le_bytes([c[0], c[1]]))).collect()
            }
            _ => (0..n).map(|_| self.u32()).collect::<anyhow::Result<_>>()?,
        };
        anyhow::ensure!(ids.iter().all(|i| (*i as usize) < count), "a value index out of range");
        Ok(Column { values, ids })
    }
}

/// Appends an access batch as the log keeps it.
fn wire_access_into(e: &mut Enc, b: &AccessBatch) {
    e.0.reserve(b.len() * 48);
    e.times(&b.ts_ms);
    for c in &b.dims {
        e.column(c);
    }
    for col in &b.metrics {
        col.iter().for_each(|v| e.varint(*v));
    }
}

/// Appends a security batch as the log keeps it.
fn wire_security_into(e: &mut Enc, b: &SecurityBatch) {
    e.0.reserve(b.len() * 32);
    e.times(&b.ts_ms);
    for c in &b.dims {
        e.column(c);
    }
}

fn decode_access(mut d: Dec, n: usize) -> anyhow::Result<AccessBatch> {
    let ts_ms = d.times(n)?;
    let mut dims: [Column; 14] = Default::default();
    for c in &mut dims {
        *c = d.column(n)?;
    }
    let mut metrics: [Vec<u64>; METRICS] = Default::default();
    for col in &mut metrics {
        *col = (0..n).map(|_| d.varint()).collect::<anyhow::Result<_>>()?;
    }
    anyhow::ensure!(d.0.is_empty(), "bytes after the batch");
    Ok(AccessBatch { ts_ms, dims, metrics })
}

fn decode_security(mut d: Dec, n: usize) -> anyhow::Result<SecurityBatch> {
    let ts_ms = d.times(n)?;
    let mut dims: [Column; 14] = Default::default();
    for c in &mut dims {
        *c = d.column(n)?;
    }
    anyhow::ensure!(d.0.is_empty(), "bytes after the batch");
    Ok(SecurityBatch { ts_ms, dims })
}

/// Access records as logged by versions before batches were columnar.
fn decode_access_rows(mut d: Dec, count: u32) -> anyhow::Result<AccessBatch> {
    let records = (0..count)
        .map(|_| {
            let ts_ms = d.i64()?;
            let mut dims: [String; 14] = Default::default();
            for v in &mut dims {
                *v = d.str()?.to_string();
            }
            let mut metrics = [0u64; METRICS];
            for m in &mut metrics {
                *m = d.u64()?;
            }
            Ok(AccessRecord { ts_ms, dims, metrics })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(AccessBatch::from_records(&records))
}

/// Security events as logged by versions before batches were columnar.
fn decode_security_rows(mut d: Dec, count: u32) -> anyhow::Result<SecurityBatch> {
    let records = (0..count)
        .map(|_| {
            let ts_ms = d.i64()?;
            let mut dims: [String; 14] = Default::default();
            for _ in 0..d.u32()? {
                let id = d.u32()? as usize;
                let v = d.str()?.to_string();
                let at = DIMS.get(id).and_then(|name| EVENT_DIMS.iter().position(|n| n == name));
                dims[at.ok_or_else(|| anyhow::anyhow!("bad dimension id"))?] = v;
            }
            Ok(SecurityRecord { ts_ms, dims })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(SecurityBatch::from_records(&records))
}

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
        let mut tenants = HashMap::new();
        let mut applied = 0;
        let snapshot = dir.join("snapshot.bin");
        if snapshot.exists() {
            applied = load_snapshot(&snapshot, specs.len(), clock.now_ms(), &mut tenants)
                .with_context(|| format!("loading {}", snapshot.display()))?;
        }
        let wal_path = dir.join("wal.bin");
        let mut engine = MemoryEngine {
            dir,
            clock,
            tenants: RwLock::new(HashMap::new()),
            log: Log::open(wal_path.clone(), applied, 0)?,
            limits,
            access_plan: Plan::new(&specs, METRICS, Some(ACCESS_WAF_ACTION), access_mapping),
            security_plan: Plan::new(&specs, 1, None, security_mapping),
            work: Mutex::new(Vec::new()),
            specs,
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
        Ok(engine)
    }

    /// Writes every tenant, as of log sequence `seq`, to `path` and syncs it.
    fn write_snapshot(&self, path: &Path, seq: u64) -> anyhow::Result<()> {
        let file = File::create(path)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let tenants = self.tenants.read().unwrap_or_else(|e| e.into_inner());
        let mut head = Enc(Vec::new());
        head.u32(SNAPSHOT_MAGIC);
        head.u64(seq);
        head.u32(self.specs.len() as u32);
        head.u32(tenants.len() as u32);
        w.write_all(&head.0)?;
        for (id, t) in tenants.iter() {
            write_tenant(&mut w, *id, t)?;
        }
        w.flush()?;
        w.get_ref().sync_all()?;
        Ok(())
    }

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
    fn access_columns<'a>(b: &'a AccessBatch, allow: &'a Column) -> Vec<(usize, &'a Column)> {
        let mut columns: Vec<(usize, &Column)> = b.dims.iter().enumerate().collect();
        columns.push((dim_id("client_country_code").unwrap_or(0), &b.dims[4]));
        columns.push((dim_id("waf_action").unwrap_or(0), allow));
        columns
    }

    fn security_columns(b: &SecurityBatch) -> Vec<(usize, &Column)> {
        b.dims.iter().enumerate().map(|(i, c)| (dim_id(EVENT_DIMS[i]).unwrap_or(0), c)).collect()
    }

    /// Dictionary ids of an access batch's values, by column of [`MemoryEngine::access_columns`].
    fn encode_access(&self, tenant: &Tenant, b: &AccessBatch) -> Result<limits::Encoded, IngestError> {
        let allow = Column { values: vec!["ALLOW".into()], ids: Vec::new() };
        limits::encode(&mut write(&tenant.dicts), &Self::access_columns(b, &allow), self.limits.max_values)
    }

    /// Dictionary ids of a security batch's values, by column (in [`SECURITY_DIMS`] order).
    fn encode_security(&self, tenant: &Tenant, b: &SecurityBatch) -> Result<limits::Encoded, IngestError> {
        limits::encode(&mut write(&tenant.dicts), &Self::security_columns(b), self.limits.max_values)
    }

    /// Adds an encoded access batch to every delivery, top-K URL and request-trend rollup.
    fn apply_access(&self, tenant: &Tenant, b: &AccessBatch, maps: &[Vec<u32>]) {
        let zeros = vec![0u32; b.len()];
        let mut card: Vec<usize> = b.dims.iter().map(|c| c.values.len()).collect();
        card.push(b.dims[4].values.len());
        card.push(1);
        let horizon = Horizon { now_ms: self.clock.now_ms(), limits: self.limits };
        // Access columns: the 14 of the batch, its country code as client_country_code, ALLOW as waf_action.
        let mut cols: Vec<&[u32]> = b.dims.iter().map(|c| c.ids.as_slice()).collect();
        cols.push(&b.dims[4].ids);
        cols.push(&zeros);
        let metrics: Vec<&[u64]> = b.metrics.iter().map(Vec::as_slice).collect();
        let input = Input { ts: &b.ts_ms, cols, card, metrics: Metrics::Columns(&metrics), wanted: Vec::new(), maps };
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
    fn apply_security(&self, tenant: &Tenant, b: &SecurityBatch, maps: &[Vec<u32>]) {
        let n = b.len();
        let col = |name: &str| EVENT_DIMS.iter().position(|d| *d == name).unwrap_or(0);
        let (source, action) = (col("source"), col("event_action"));
        let local_of = |c: usize, v: &str| b.dims[c].values.iter().position(|x| x == v).map(|i| i as u32);
        let (waf, rate_limit) = (local_of(source, "waf"), local_of(action, "RATE_LIMIT"));
        let is_waf: Vec<bool> = b.dims[source].ids.iter().map(|s| Some(*s) == waf).collect();
        let limited: Vec<bool> = b.dims[action].ids.iter().map(|a| Some(*a) == rate_limit).collect();
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
        let wanted: Vec<(Records, Vec<bool>)> = [(true, false), (false, false), (false, true)]
            .into_iter()
            .map(|(waf, rate_limited)| {
                let w = (0..n).map(|i| is_waf[i] == waf && (!rate_limited || limited[i])).collect();
                (Records::Security { waf, rate_limited }, w)
            })
            .collect();
        let horizon = Horizon { now_ms: self.clock.now_ms(), limits: self.limits };
        let input = Input {
            ts: &b.ts_ms,
            cols: b.dims.iter().map(|c| c.ids.as_slice()).collect(),
            card: b.dims.iter().map(|c| c.values.len()).collect(),
            metrics: Metrics::Count,
            wanted: wanted.iter().map(|(records, w)| (*records, w.as_slice())).collect(),
            maps,
        };
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

impl MemoryEngine {
    fn query_rollups(&self, t: &Tenant, customer: &str, q: &Query) -> Result<Answer, QueryError> {
        let target = Target::of(&self.specs, q, self.clock.now_ms())?;
        let (granularity, whole_range, spec_index, aggregate) =
            (target.granularity, target.whole_range, target.spec, target.aggregate);
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

    fn query_events(&self, dicts: &[Dict], ev: &Events, customer: &str, q: &Query) -> Result<Answer, QueryError> {
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

impl MemoryEngine {
    /// Stores an access batch, and with it `key` if there is one (in the same log record, kept as the batch
    /// is applied).
    fn store_access(
        &self,
        customer: CustomerId,
        batch: &AccessBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        if batch.is_empty() {
            return Ok(Stored::default());
        }
        let sorted = batch.by_time();
        let batch = sorted.as_ref().unwrap_or(batch);
        let tenant = self.tenant(customer);
        limits::room(&tenant, &self.limits)?;
        let _ids = read(&tenant.ids);
        let encoded = self.encode_access(&tenant, batch)?;
        let allow = Column { values: vec!["ALLOW".into()], ids: Vec::new() };
        let folded = encoded.folded_records(&Self::access_columns(batch, &allow));
        // The log keeps folded values as stored. (A country code folded only as client_country_code, whose
        // dictionary security events fill too, is folded again when the log replays.)
        let mut as_stored = None;
        for (c, column) in batch.dims.iter().enumerate() {
            if let Some(stored) = encoded.as_stored(c, c, column) {
                as_stored.get_or_insert_with(|| batch.clone()).dims[c] = stored;
            }
        }
        let stored = Stored { folded: folded.iter().map(|(d, n)| (DIMS[*d], *n)).collect() };
        let (kind, mut wire, entry) = self.keyed(KIND_ACCESS, KIND_ACCESS_KEYED, key, batch.len(), &stored);
        wire_access_into(&mut wire, as_stored.as_ref().unwrap_or(batch));
        drop(as_stored);
        let apply = || {
            self.apply_access(&tenant, batch, &encoded.maps);
            self.keep(&tenant, entry);
        };
        self.logged(kind, customer, batch.len(), wire.0, apply)?;
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

    fn store_security(
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

impl StatsEngine for MemoryEngine {
    fn ingest_access(&self, customer: CustomerId, batch: &AccessBatch) -> Result<Stored, IngestError> {
        self.store_access(customer, batch, None)
    }

    fn ingest_security(&self, customer: CustomerId, batch: &SecurityBatch) -> Result<Stored, IngestError> {
        self.store_security(customer, batch, None)
    }

    fn ingest_access_keyed(
        &self,
        customer: CustomerId,
        batch: &AccessBatch,
        key: &Keyed,
    ) -> Result<Stored, IngestError> {
        self.store_access(customer, batch, Some(key))
    }

    fn ingest_security_keyed(
        &self,
        customer: CustomerId,
        batch: &SecurityBatch,
        key: &Keyed,
    ) -> Result<Stored, IngestError> {
        self.store_security(customer, batch, Some(key))
    }

    fn kept(&self, customer: CustomerId, endpoint: Endpoint, key: &str) -> Result<Option<Kept>, IngestError> {
        let Some(tenant) = self.existing_tenant(customer) else { return Ok(None) };
        let now = self.clock.now_ms();
        Ok(lock(&tenant.keys).get(endpoint, key, now))
    }

    fn query(&self, customer: CustomerId, customer_name: &str, query: &Query) -> Result<Answer, QueryError> {
        let tenant = self.existing_tenant(customer).unwrap_or_else(|| Arc::new(Tenant::new(self.specs.len())));
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
        let tenants: Vec<_> = read(&self.tenants).iter().map(|(id, t)| (*id, t.clone())).collect();
        let mut usage: Vec<Usage> = tenants.iter().map(|(id, t)| limits::usage(*id, t, t.footprint().bytes)).collect();
        usage.sort_by_key(|u| u.customer);
        usage
    }

    fn limits(&self) -> Limits {
        self.limits
    }
}

fn write_u32s(w: &mut impl Write, v: &[u32]) -> std::io::Result<()> {
    w.write_all(&(v.len() as u64).to_le_bytes())?;
    for x in v {
        w.write_all(&x.to_le_bytes())?;
    }
    Ok(())
}

fn write_u64s(w: &mut impl Write, v: &[u64]) -> std::io::Result<()> {
    w.write_all(&(v.len() as u64).to_le_bytes())?;
    for x in v {
        w.write_all(&x.to_le_bytes())?;
    }
    Ok(())
}

fn write_tenant(w: &mut impl Write, id: CustomerId, t: &Tenant) -> anyhow::Result<()> {
    w.write_all(&id.to_le_bytes())?;
    for d in read(&t.dicts).iter() {
        w.write_all(&(d.values.len() as u32).to_le_bytes())?;
        for v in &d.values {
            w.write_all(&(v.len() as u32).to_le_bytes())?;
            w.write_all(v.as_bytes())?;
        }
    }
    for r in &t.rollups {
        let r = read(r);
        w.write_all(&(r.blocks.len() as u64).to_le_bytes())?;
        for (bucket, b) in &r.blocks {
            w.write_all(&bucket.to_le_bytes())?;
            let dims = b.dim_columns();
            w.write_all(&(dims.len() as u32).to_le_bytes())?;
            w.write_all(&(b.n_metrics() as u32).to_le_bytes())?;
            for c in &dims {
                write_u32s(w, c)?;
            }
            for c in &b.metric_columns() {
                write_u64s(w, c)?;
            }
        }
    }
    let ev = read(&t.events);
    let ts: Vec<u64> = ev.ts.iter().map(|x| *x as u64).collect();
    write_u64s(w, &ts)?;
    w.write_all(&[u8::from(ev.sorted)])?;
    for c in &ev.cols {
        write_u32s(w, c)?;
    }
    let mut keys = Enc(Vec::new());
    lock(&t.keys).encode(&mut keys);
    w.write_all(&(keys.0.len() as u64).to_le_bytes())?;
    w.write_all(&keys.0)?;
    Ok(())
}

struct Reader<R: Read>(R);

impl<R: Read> Reader<R> {
    fn bytes<const N: usize>(&mut self) -> anyhow::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.0.read_exact(&mut b)?;
        Ok(b)
    }
    fn u32(&mut self) -> anyhow::Result<u32> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }
    fn u64(&mut self) -> anyhow::Result<u64> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }
    fn u32s(&mut self) -> anyhow::Result<Vec<u32>> {
        let n = self.u64()? as usize;
        let mut raw = vec![0u8; n * 4];
        self.0.read_exact(&mut raw)?;
        Ok(raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }
    fn u64s(&mut self) -> anyhow::Result<Vec<u64>> {
        let n = self.u64()? as usize;
        let mut raw = vec![0u8; n * 8];
        self.0.read_exact(&mut raw)?;
        Ok(raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect())
    }
}

/// Loads a snapshot; returns the log sequence number it includes.
/// Loads a snapshot (of this version, or of the one before kept keys); returns the log sequence number it
/// includes. Kept keys older than a day at `now_ms` are not loaded.
fn load_snapshot(
    path: &Path,
    n_specs: usize,
    now_ms: i64,
    tenants: &mut HashMap<CustomerId, Tenant>,
) -> anyhow::Result<u64> {
    let mut r = Reader(BufReader::with_capacity(1 << 20, File::open(path)?));
    let with_keys = match r.u32()? {
        SNAPSHOT_MAGIC => true,
        SNAPSHOT_MAGIC_V1 => false,
        _ => anyhow::bail!("not a statistics snapshot"),
    };
    let seq = r.u64()?;
    anyhow::ensure!(r.u32()? as usize == n_specs, "the snapshot was written by another version of the rollup set");
    let n = r.u32()?;
    for _ in 0..n {
        let id = r.u64()? as CustomerId;
        let mut t = Tenant::new(n_specs);
        for d in get_mut(&mut t.dicts).iter_mut() {
            let count = r.u32()?;
            for _ in 0..count {
                let len = r.u32()? as usize;
                let mut b = vec![0u8; len];
                r.0.read_exact(&mut b)?;
                d.id(&String::from_utf8(b)?, MAX_IDS).context("dictionary full")?;
            }
        }
        for rollup in &mut t.rollups {
            let rollup = get_mut(rollup);
            let blocks = r.u64()?;
            for _ in 0..blocks {
                let bucket = r.u64()? as i64;
                let (nd, nm) = (r.u32()? as usize, r.u32()? as usize);
                let dims = (0..nd).map(|_| r.u32s()).collect::<anyhow::Result<Vec<_>>>()?;
                let metrics = (0..nm).map(|_| r.u64s()).collect::<anyhow::Result<Vec<_>>>()?;
                rollup.blocks.insert(bucket, Block::from_columns(dims, metrics));
            }
        }
        let ev = get_mut(&mut t.events);
        ev.ts = r.u64s()?.into_iter().map(|x| x as i64).collect();
        ev.sorted = r.bytes::<1>()?[0] == 1;
        for c in &mut ev.cols {
            *c = r.u32s()?;
        }
        if with_keys {
            let len = r.u64()? as usize;
            let mut raw = vec![0u8; len];
            r.0.read_exact(&mut raw)?;
            *get_mut_mutex(&mut t.keys) = keys::Keys::decode(&mut Dec(&raw), now_ms)?;
        }
        let held = t.footprint();
        t.add_rows(held.rollup_rows + held.event_rows);
        tenants.insert(id, t);
    }
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::clock::ManualClock;

    const T0: i64 = 1_790_000_000_000;
    const DAY: i64 = 86_400_000;

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n
        }
        fn pick(&mut self, values: &[&str]) -> String {
            values[self.below(values.len() as u64) as usize].to_string()
        }
    }

    /// Records over 40 days, most in the last hours, some out of order, with values that repeat.
    fn access(rng: &mut Rng, n: usize) -> Vec<AccessRecord> {
        (0..n)
            .map(|i| {
                let age = match i % 9 {
                    0 => rng.below(40 * DAY as u64) as i64,
                    1 => rng.below(8 * DAY as u64) as i64,
                    _ => rng.below(3 * 3_600_000) as i64,
                };
                let mut dims: [String; 14] = Default::default();
                for (d, v) in dims.iter_mut().enumerate() {
                    *v = match DIMS[d] {
                        "cache_status" => rng.below(6).to_string(),
                        "gna_cache_status" => rng.pick(&["", "1", "2"]),
                        "http_status_code" => rng.pick(&["200", "304", "404", "503"]),
                        "scheme" => rng.pick(&["1", "2"]),
                        "request_url" => format!("/u{}", rng.below(60)),
                        "domain" => format!("d{}.example", rng.below(7)),
                        name => format!("{name}-{}", rng.below(3)),
                    };
                }
                let metrics = std::array::from_fn(|m| 1 + rng.below(1000) * (m as u64 + 1));
                AccessRecord { ts_ms: T0 - 1 - age, dims, metrics }
            })
            .collect()
    }

    fn security(rng: &mut Rng, n: usize) -> Vec<SecurityRecord> {
        (0..n)
            .map(|i| {
                let age = if i % 5 == 0 { rng.below(40 * DAY as u64) as i64 } else { rng.below(5 * 3_600_000) as i64 };
                let mut dims: [String; 14] = Default::default();
                for (c, v) in dims.iter_mut().enumerate() {
                    *v = match SECURITY_DIMS[c] {
                        "source" => rng.pick(&["waf", "trafficshaping"]),
                        "event_action" => rng.pick(&["BLOCK", "RATE_LIMIT", "WARN"]),
                        "client_ip" => format!("192.0.2.{}", rng.below(30)),
                        name => format!("{name}-{}", rng.below(4)),
                    };
                }
                SecurityRecord { ts_ms: T0 - 1 - age, dims }
            })
            .collect()
    }

    type Rows = HashMap<(i64, Vec<String>), Vec<u64>>;

    /// A rollup's rows straight from the records, the obvious way.
    fn expected(spec: &Spec, access: &[AccessRecord], security: &[SecurityRecord]) -> Rows {
        let step = spec.granularity.millis();
        let from = spec.granularity.kept_from(T0).unwrap_or(i64::MIN);
        let mut rows = Rows::new();
        let mut add = |ts: i64, key: Vec<String>, metrics: Vec<u64>| {
            let bucket = ts - ts.rem_euclid(step);
            if bucket < from {
                return;
            }
            let sums = rows.entry((bucket, key)).or_insert_with(|| vec![0; metrics.len()]);
            for (s, m) in sums.iter_mut().zip(metrics) {
                *s += m;
            }
        };
        for r in access {
            let metrics = match spec.kind {
                Kind::Delivery => r.metrics.to_vec(),
                Kind::TopKUrl | Kind::RequestTrend => vec![r.metrics[HITS]],
                _ => break,
            };
            let key = spec
                .dims
                .iter()
                .map(|d| match DIMS[*d] {
                    "client_country_code" => r.dims[4].clone(),
                    "waf_action" => "ALLOW".to_string(),
                    _ => r.dims[*d].clone(),
                })
                .collect();
            add(r.ts_ms, key, metrics);
        }
        for r in security {
            let value = |name: &str| r.dims[SECURITY_DIMS.iter().position(|n| *n == name).unwrap()].clone();
            let waf = value("source") == "waf";
            let wanted = match spec.kind {
                Kind::WafTrend | Kind::RequestTrend => waf,
                Kind::ShapingTrend => !waf,
                Kind::TopK { waf: w, rate_limited } => {
                    waf == w && (!rate_limited || value("event_action") == "RATE_LIMIT")
                }
                _ => false,
            };
            if wanted {
                add(r.ts_ms, spec.dims.iter().map(|d| value(DIMS[*d])).collect(), vec![1]);
            }
        }
        rows
    }

    fn stored(engine: &MemoryEngine, customer: CustomerId, spec: usize) -> Rows {
        let t = engine.existing_tenant(customer).unwrap();
        let dicts = read(&t.dicts);
        let rollup = read(&t.rollups[spec]);
        let mut rows = Rows::new();
        for (bucket, block) in &rollup.blocks {
            for r in 0..block.len() {
                let key = engine.specs[spec]
                    .dims
                    .iter()
                    .enumerate()
                    .map(|(c, d)| dicts[*d].value(block.dim(c).get(r)).to_string())
                    .collect();
                let metrics = (0..block.n_metrics()).map(|c| block.metric(c).get(r)).collect();
                assert!(rows.insert((*bucket, key), metrics).is_none(), "a key stored twice");
            }
        }
        rows
    }

    #[test]
    fn every_rollup_holds_the_sums_of_its_records_computed_directly() {
        let dir = tempfile::tempdir().unwrap();
        let engine = MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap();
        let mut rng = Rng(3);
        let (access, security) = (access(&mut rng, 6000), security(&mut rng, 3000));
        // Batches of many sizes, one record up to thousands, so rows are both new and merged into.
        let mut at = 0;
        for (i, size) in [1, 7, 2500, 30, 1, 3000, 462].iter().cycle().enumerate() {
            if at >= access.len() {
                break;
            }
            let end = (at + size).min(access.len());
            engine.ingest_access(1, &AccessBatch::from_records(&access[at..end])).unwrap();
            at = end;
            // Upkeep seals what the last round did not touch: later batches reopen blocks of every age.
            if i % 3 == 2 {
                engine.enforce_retention(T0).unwrap();
            }
        }
        for chunk in security.chunks(700) {
            engine.ingest_security(1, &SecurityBatch::from_records(chunk)).unwrap();
        }
        let mut checked = 0;
        for (i, spec) in engine.specs.iter().enumerate() {
            let want = expected(spec, &access, &security);
            assert!(!want.is_empty(), "{spec:?} has rows");
            assert_eq!(stored(&engine, 1, i), want, "{spec:?}");
            checked += 1;
        }
        assert_eq!(checked, engine.specs.len());
    }

    #[test]
    fn concurrent_small_batches_and_checkpoints_lose_nothing_on_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(5);
        let records = access(&mut rng, 2000);
        {
            let engine = Arc::new(MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap());
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let checkpoints = {
                let (engine, stop) = (engine.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut n = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        engine.checkpoint().unwrap();
                        n += 1;
                    }
                    n
                })
            };
            std::thread::scope(|s| {
                for part in records.chunks(500) {
                    let engine = engine.clone();
                    s.spawn(move || {
                        for batch in part.chunks(20) {
                            engine.ingest_access(1, &AccessBatch::from_records(batch)).unwrap();
                        }
                    });
                }
            });
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            assert!(checkpoints.join().unwrap() > 0);
        }
        let engine = MemoryEngine::open(dir.path(), Arc::new(ManualClock::at(T0))).unwrap();
        for (i, spec) in engine.specs.iter().enumerate() {
            if matches!(spec.kind, Kind::Delivery | Kind::TopKUrl) {
                assert_eq!(stored(&engine, 1, i), expected(spec, &records, &[]), "{spec:?}");
            }
        }
    }
}
