//! The embedded statistics engine: per customer, dictionary-encoded columnar rollups in memory — one per
//! listed grouping set and granularity, so that a query reads exactly the rollup of its grouping set — and the
//! raw security events of the last days. Every ingested batch is appended to a write-ahead log and fsynced
//! before the call returns; snapshots let the log be emptied.

use std::{
    collections::{BTreeMap, BinaryHeap, HashMap},
    fs::{self, File, OpenOptions},
    io::{BufReader, BufWriter, Read, Write},
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
};

use anyhow::Context;
use edge_api::stats::{Condition, Family, Filter, Granularity, INTEGER_DIMENSIONS, Query, TOPK_URL_GROUPINGS};
use rustc_hash::FxHashMap;

use super::{
    AccessRecord, Answer, Cell, DIMS, Footprint, IngestError, QueryError, SecurityRecord, StatsEngine, dim_id,
};
use crate::{clock::Clock, store::CustomerId};

const METRICS: usize = 8;
const HITS: usize = 1;
/// Dictionary ids are packed 25 bits each into a 128-bit key (at most 5 dimensions a rollup).
const ID_BITS: u32 = 25;
/// Distinct values one dimension of one customer can hold.
pub const MAX_IDS: usize = 1 << ID_BITS;
/// Raw security events are kept for the previous three days plus today.
const EVENT_DAYS: i64 = 3;
/// Security event dimensions stored with each raw event (ids into [`DIMS`]).
const EVENT_DIMS: [&str; 14] = [
    "source",
    "event_type",
    "event_action",
    "event_severity",
    "waf_action",
    "rule_id",
    "domain",
    "property",
    "client_ip",
    "client_connection_remote_ip",
    "client_browser",
    "client_country_code",
    "client_asn",
    "request_path",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Delivery,
    TopKUrl,
    WafTrend,
    ShapingTrend,
    RequestTrend,
    /// Security top-K of events of this source ("waf" / "trafficshaping"), rate-limited only if `rate_limited`.
    TopK {
        waf: bool,
        rate_limited: bool,
    },
}

/// What one rollup aggregates: which records, at which granularity, by which dimensions.
#[derive(Debug, Clone)]
struct Spec {
    kind: Kind,
    granularity: Granularity,
    /// Dimension ids, ascending.
    dims: Vec<usize>,
    metrics: usize,
}

fn ids(names: &[&str]) -> Vec<usize> {
    let mut v: Vec<usize> = names.iter().filter(|n| **n != "customer").filter_map(|n| dim_id(n)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Every rollup the engine keeps.
fn all_specs() -> Vec<Spec> {
    let mut specs = Vec::new();
    for g in Granularity::ALL {
        specs.push(Spec { kind: Kind::Delivery, granularity: g, dims: Vec::new(), metrics: METRICS });
        for set in g.delivery_groupings() {
            specs.push(Spec {
                kind: Kind::Delivery,
                granularity: g,
                dims: ids(&set.split('/').collect::<Vec<_>>()),
                metrics: METRICS,
            });
        }
        for (kind, family) in [
            (Kind::WafTrend, Family::WafTrends),
            (Kind::ShapingTrend, Family::ShapingTrends),
            (Kind::RequestTrend, Family::RequestTrends),
        ] {
            for set in family.groupings() {
                let mut parts: Vec<&str> = set.split('/').collect();
                if parts.remove(0) == g.as_str() {
                    specs.push(Spec { kind, granularity: g, dims: ids(&parts), metrics: 1 });
                }
            }
        }
    }
    for set in TOPK_URL_GROUPINGS {
        specs.push(Spec {
            kind: Kind::TopKUrl,
            granularity: Granularity::Day,
            dims: ids(&set.split('/').collect::<Vec<_>>()),
            metrics: 1,
        });
    }
    for (waf, rate_limited, dim) in [
        (true, false, "client_browser"),
        (true, false, "client_ip"),
        (true, false, "client_country_code"),
        (true, false, "request_path"),
        (true, false, "rule_id"),
        (true, false, "event_severity"),
        (false, false, "client_browser"),
        (false, false, "client_ip"),
        (false, false, "client_country_code"),
        (false, false, "request_path"),
        (false, true, "client_ip"),
        (false, true, "client_country_code"),
    ] {
        for g in [Granularity::Hour, Granularity::Day] {
            for extra in [&[][..], &["domain"], &["property"], &["domain", "property"]] {
                let mut names = vec![dim];
                names.extend_from_slice(extra);
                specs.push(Spec {
                    kind: Kind::TopK { waf, rate_limited },
                    granularity: g,
                    dims: ids(&names),
                    metrics: 1,
                });
            }
        }
    }
    specs
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

/// The rows of one bucket of a rollup, column by column.
#[derive(Default)]
struct Block {
    dims: Vec<Vec<u32>>,
    metrics: Vec<Vec<u64>>,
    /// Where each key's row is; rebuilt when needed, dropped once the bucket is old (a cache).
    index: Option<FxHashMap<u128, u32>>,
}

impl Block {
    fn new(n_dims: usize, n_metrics: usize) -> Self {
        Block { dims: vec![Vec::new(); n_dims], metrics: vec![Vec::new(); n_metrics], index: None }
    }

    fn len(&self) -> usize {
        self.metrics.first().map_or(0, Vec::len)
    }

    fn key(&self, row: usize) -> u128 {
        self.dims.iter().fold(0u128, |k, col| (k << ID_BITS) | u128::from(col[row]))
    }

    fn add(&mut self, key: u128, dims: impl Fn(usize) -> u32, metrics: &[u64]) {
        if self.index.is_none() {
            let index = (0..self.len()).map(|r| (self.key(r), r as u32)).collect();
            self.index = Some(index);
        }
        let n = self.len() as u32;
        let index = self.index.get_or_insert_with(Default::default);
        match index.get(&key) {
            Some(&row) => {
                for (col, v) in self.metrics.iter_mut().zip(metrics) {
                    col[row as usize] += v;
                }
            }
            None => {
                index.insert(key, n);
                for (i, col) in self.dims.iter_mut().enumerate() {
                    col.push(dims(i));
                }
                for (col, v) in self.metrics.iter_mut().zip(metrics) {
                    col.push(*v);
                }
            }
        }
    }

    fn bytes(&self) -> u64 {
        let d: usize = self.dims.iter().map(|c| c.capacity() * 4).sum();
        let m: usize = self.metrics.iter().map(|c| c.capacity() * 8).sum();
        (d + m + self.index.as_ref().map_or(0, |i| i.capacity() * 24)) as u64
    }
}

#[derive(Default)]
struct Rollup {
    blocks: BTreeMap<i64, Block>,
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

struct Tenant {
    dicts: Vec<Dict>,
    rollups: Vec<Rollup>,
    events: Events,
}

impl Tenant {
    fn new(n_specs: usize) -> Self {
        Tenant {
            dicts: DIMS.iter().map(|_| Dict::default()).collect(),
            rollups: (0..n_specs).map(|_| Rollup::default()).collect(),
            events: Events { ts: Vec::new(), cols: vec![Vec::new(); EVENT_DIMS.len()], sorted: true },
        }
    }
}

pub struct MemoryEngine {
    dir: PathBuf,
    clock: Arc<dyn Clock>,
    specs: Vec<Spec>,
    /// Distinct values a dimension of one customer may hold ([`MAX_IDS`] unless opened for a test).
    max_ids: usize,
    tenants: RwLock<HashMap<CustomerId, Arc<RwLock<Tenant>>>>,
    /// The write-ahead log; holding it also orders appends with checkpoints.
    wal: Mutex<Wal>,
}

struct Wal {
    file: File,
    path: PathBuf,
    /// Sequence number of the last batch written.
    seq: u64,
    /// Length of the log: everything before is whole batches.
    bytes: u64,
    /// A failed write could not be cut off: nothing more may be appended behind it until a restart.
    broken: bool,
}

const WAL_MAGIC: u32 = 0x4544_4757;
const SNAPSHOT_MAGIC: u32 = 0x4544_4753;
/// A checkpoint is taken by the housekeeping when the log grows past this.
pub const CHECKPOINT_WAL_BYTES: u64 = 256 * 1024 * 1024;

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

fn wire_access(records: &[AccessRecord]) -> Vec<u8> {
    let mut e = Enc(Vec::with_capacity(records.len() * 200));
    for r in records {
        e.i64(r.ts_ms);
        for d in &r.dims {
            e.str(d);
        }
        for m in r.metrics {
            e.u64(m);
        }
    }
    e.0
}

fn decode_access(mut d: Dec, count: u32) -> anyhow::Result<Vec<AccessRecord>> {
    (0..count)
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
        .collect()
}

fn wire_security(records: &[SecurityRecord]) -> Vec<u8> {
    let mut e = Enc(Vec::with_capacity(records.len() * 150));
    for r in records {
        e.i64(r.ts_ms);
        e.u32(r.dims.len() as u32);
        for (id, v) in &r.dims {
            e.u32(*id as u32);
            e.str(v);
        }
    }
    e.0
}

fn decode_security(mut d: Dec, count: u32) -> anyhow::Result<Vec<SecurityRecord>> {
    (0..count)
        .map(|_| {
            let ts_ms = d.i64()?;
            let n = d.u32()?;
            let dims = (0..n)
                .map(|_| {
                    let id = d.u32()? as usize;
                    anyhow::ensure!(id < DIMS.len(), "bad dimension id");
                    Ok((id, d.str()?.to_string()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            Ok(SecurityRecord { ts_ms, dims })
        })
        .collect()
}

impl MemoryEngine {
    /// Opens the engine in `<data_dir>/stats`: loads the snapshot and replays the log after it.
    pub fn open(data_dir: &Path, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        Self::open_with_limit(data_dir, clock, MAX_IDS)
    }

    /// [`MemoryEngine::open`] with at most `max_ids` distinct values per dimension and customer (at most
    /// [`MAX_IDS`]): tests reach the limit with a few records.
    pub fn open_with_limit(data_dir: &Path, clock: Arc<dyn Clock>, max_ids: usize) -> anyhow::Result<Self> {
        let max_ids = max_ids.min(MAX_IDS);
        let dir = data_dir.join("stats");
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let specs = all_specs();
        let mut tenants = HashMap::new();
        let mut applied = 0;
        let snapshot = dir.join("snapshot.bin");
        if snapshot.exists() {
            applied = load_snapshot(&snapshot, specs.len(), &mut tenants)
                .with_context(|| format!("loading {}", snapshot.display()))?;
        }
        let wal_path = dir.join("wal.bin");
        let engine = MemoryEngine {
            dir,
            clock,
            tenants: RwLock::new(HashMap::new()),
            wal: Mutex::new(Wal {
                file: OpenOptions::new().create(true).append(true).open(&wal_path)?,
                path: wal_path.clone(),
                seq: applied,
                bytes: 0,
                broken: false,
            }),
            specs,
            max_ids,
        };
        {
            let mut map = engine.tenants.write().unwrap_or_else(|e| e.into_inner());
            for (id, t) in tenants {
                map.insert(id, Arc::new(RwLock::new(t)));
            }
        }
        let (seq, valid_len) = engine.replay(&wal_path, applied)?;
        // A torn batch at the end (a crash while writing) was never acknowledged: cut it off.
        let file = OpenOptions::new().write(true).open(&wal_path)?;
        file.set_len(valid_len)?;
        file.sync_all()?;
        let mut wal = engine.wal.lock().unwrap_or_else(|e| e.into_inner());
        wal.seq = seq.max(applied);
        wal.bytes = valid_len;
        drop(wal);
        Ok(engine)
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
            let result = match kind {
                0 => decode_access(Dec(payload), count).map_err(IngestError::from).and_then(|records| {
                    let encoded = self.encode_access(customer, &records)?;
                    self.apply_access(customer, &records, &encoded);
                    Ok(())
                }),
                _ => decode_security(Dec(payload), count).map_err(IngestError::from).and_then(|records| {
                    let encoded = self.encode_security(customer, &records)?;
                    self.apply_security(customer, &records, &encoded);
                    Ok(())
                }),
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

    fn tenant(&self, customer: CustomerId) -> Arc<RwLock<Tenant>> {
        if let Some(t) = self.tenants.read().unwrap_or_else(|e| e.into_inner()).get(&customer) {
            return t.clone();
        }
        let mut map = self.tenants.write().unwrap_or_else(|e| e.into_inner());
        map.entry(customer).or_insert_with(|| Arc::new(RwLock::new(Tenant::new(self.specs.len())))).clone()
    }

    fn existing_tenant(&self, customer: CustomerId) -> Option<Arc<RwLock<Tenant>>> {
        self.tenants.read().unwrap_or_else(|e| e.into_inner()).get(&customer).cloned()
    }

    /// Appends a batch to the log and syncs it; then `apply` runs while the log is still held, so that a
    /// checkpoint never falls between a logged batch and its application. `apply` cannot fail: whatever could
    /// refuse the batch happened before it was logged. A failed write is cut off the log, so that nothing
    /// appended later sits behind a torn batch (replay stops at one).
    fn logged(
        &self,
        kind: u8,
        customer: CustomerId,
        count: usize,
        payload: Vec<u8>,
        apply: impl FnOnce(),
    ) -> anyhow::Result<()> {
        let mut wal = self.wal.lock().unwrap_or_else(|e| e.into_inner());
        anyhow::ensure!(!wal.broken, "the statistics log could not be repaired after a failed write; restart");
        let seq = wal.seq + 1;
        let mut e = Enc(Vec::with_capacity(payload.len() + 45));
        e.u32(WAL_MAGIC);
        e.u64(seq);
        e.u8(kind);
        e.i64(customer);
        e.u32(count as u32);
        e.u64(payload.len() as u64);
        e.u64(hash64(&payload));
        e.0.extend_from_slice(&payload);
        let written = wal.file.write_all(&e.0).context("writing the statistics log");
        let written = written.and_then(|()| wal.file.sync_data().context("syncing the statistics log"));
        if let Err(e) = written {
            let len = wal.bytes;
            if wal.file.set_len(len).and_then(|()| wal.file.sync_all()).is_err() {
                wal.broken = true;
            }
            return Err(e);
        }
        wal.seq = seq;
        wal.bytes += e.0.len() as u64;
        apply();
        Ok(())
    }

    fn retention_start(&self, g: Granularity) -> Option<i64> {
        g.kept_from(self.clock.now_ms())
    }

    /// Runs `encode` on a customer's dictionaries with `intern(dim, value)` giving ids; when a dictionary is
    /// full, the values added so far are forgotten and nothing of the batch is stored.
    fn encoded<T>(
        &self,
        customer: CustomerId,
        encode: impl FnOnce(&mut dyn FnMut(usize, &str) -> Option<u32>) -> Option<T>,
    ) -> Result<T, IngestError> {
        let tenant = self.tenant(customer);
        let mut t = tenant.write().unwrap_or_else(|e| e.into_inner());
        let lens: Vec<usize> = t.dicts.iter().map(|d| d.values.len()).collect();
        let mut full = None;
        let result = encode(&mut |dim, v| {
            let id = t.dicts[dim].id(v, self.max_ids);
            if id.is_none() {
                full = Some(dim);
            }
            id
        });
        match (result, full) {
            (Some(encoded), None) => Ok(encoded),
            (_, dim) => {
                for (d, len) in t.dicts.iter_mut().zip(lens) {
                    d.truncate(len);
                }
                Err(IngestError::Full(format!(
                    "{} already holds {} distinct values for this customer",
                    DIMS[dim.unwrap_or(0)],
                    self.max_ids
                )))
            }
        }
    }

    /// Dictionary ids of each record's delivery dimensions, and of its country as a `client_country_code`
    /// (request trends).
    fn encode_access(&self, customer: CustomerId, records: &[AccessRecord]) -> Result<Vec<[u32; 15]>, IngestError> {
        let client_country = dim_id("client_country_code").unwrap_or(0);
        let waf_action = dim_id("waf_action").unwrap_or(0);
        self.encoded(customer, |id| {
            id(waf_action, "ALLOW")?;
            let mut encoded = Vec::with_capacity(records.len());
            for r in records {
                let mut e = [0u32; 15];
                for (i, v) in r.dims.iter().enumerate() {
                    e[i] = id(i, v)?;
                }
                e[14] = id(client_country, &r.dims[4])?;
                encoded.push(e);
            }
            Some(encoded)
        })
    }

    /// Dictionary ids of each event's dimensions, by [`DIMS`] id (absent ones: the empty value).
    fn encode_security(&self, customer: CustomerId, records: &[SecurityRecord]) -> Result<Vec<Vec<u32>>, IngestError> {
        let source = dim_id("source").unwrap_or(0);
        let action = dim_id("event_action").unwrap_or(0);
        self.encoded(customer, |id| {
            id(source, "waf")?;
            id(action, "RATE_LIMIT")?;
            let mut encoded = Vec::with_capacity(records.len());
            for r in records {
                let mut e = vec![u32::MAX; DIMS.len()];
                for (d, v) in &r.dims {
                    e[*d] = id(*d, v)?;
                }
                for (d, slot) in e.iter_mut().enumerate() {
                    if *slot == u32::MAX {
                        *slot = id(d, "")?;
                    }
                }
                encoded.push(e);
            }
            Some(encoded)
        })
    }

    /// Adds encoded records (see [`MemoryEngine::encode_access`]) to every delivery rollup.
    fn apply_access(&self, customer: CustomerId, records: &[AccessRecord], encoded: &[[u32; 15]]) {
        let tenant = self.tenant(customer);
        let mut t = tenant.write().unwrap_or_else(|e| e.into_inner());
        let t = &mut *t;
        let waf_action = dim_id("waf_action").unwrap_or(0);
        let client_country = dim_id("client_country_code").unwrap_or(0);
        let allow = t.dicts[waf_action].get("ALLOW").unwrap_or(0);
        for (spec, rollup) in self.specs.iter().zip(t.rollups.iter_mut()) {
            let keep_from = self.retention_start(spec.granularity).unwrap_or(i64::MIN);
            let step = spec.granularity.millis();
            match spec.kind {
                Kind::Delivery | Kind::TopKUrl => {
                    for (r, e) in records.iter().zip(encoded) {
                        if r.ts_ms < keep_from {
                            continue;
                        }
                        let bucket = r.ts_ms - r.ts_ms.rem_euclid(step);
                        let key = spec.dims.iter().fold(0u128, |k, d| (k << ID_BITS) | u128::from(e[*d]));
                        let block =
                            rollup.blocks.entry(bucket).or_insert_with(|| Block::new(spec.dims.len(), spec.metrics));
                        let metrics: &[u64] =
                            if spec.metrics == METRICS { &r.metrics } else { &r.metrics[HITS..HITS + 1] };
                        block.add(key, |i| e[spec.dims[i]], metrics);
                    }
                }
                Kind::RequestTrend => {
                    // Every logged request counts, as ALLOW: requests no security rule acted on.
                    for (r, e) in records.iter().zip(encoded) {
                        if r.ts_ms < keep_from {
                            continue;
                        }
                        let value = |d: usize| match d {
                            d if d == waf_action => allow,
                            d if d == client_country => e[14],
                            d if d < 14 => e[d],
                            _ => 0,
                        };
                        let bucket = r.ts_ms - r.ts_ms.rem_euclid(step);
                        let key = spec.dims.iter().fold(0u128, |k, d| (k << ID_BITS) | u128::from(value(*d)));
                        let block = rollup.blocks.entry(bucket).or_insert_with(|| Block::new(spec.dims.len(), 1));
                        block.add(key, |i| value(spec.dims[i]), &r.metrics[HITS..HITS + 1]);
                    }
                }
                _ => {}
            }
        }
        self.seal(t);
    }

    /// Adds encoded events (see [`MemoryEngine::encode_security`]) to the raw events and every security
    /// rollup.
    fn apply_security(&self, customer: CustomerId, records: &[SecurityRecord], encoded: &[Vec<u32>]) {
        let tenant = self.tenant(customer);
        let mut t = tenant.write().unwrap_or_else(|e| e.into_inner());
        let t = &mut *t;
        let source = dim_id("source").unwrap_or(0);
        let action = dim_id("event_action").unwrap_or(0);
        let waf = t.dicts[source].get("waf").unwrap_or(u32::MAX);
        let rate_limit = t.dicts[action].get("RATE_LIMIT").unwrap_or(u32::MAX);
        let now = self.clock.now_ms();
        let events_from = day_start(now) - EVENT_DAYS * 86_400_000;
        for (r, e) in records.iter().zip(encoded) {
            if r.ts_ms < events_from {
                continue;
            }
            if t.events.ts.last().is_some_and(|last| *last > r.ts_ms) {
                t.events.sorted = false;
            }
            t.events.ts.push(r.ts_ms);
            for (col, name) in t.events.cols.iter_mut().zip(EVENT_DIMS) {
                col.push(e[dim_id(name).unwrap_or(0)]);
            }
        }
        let one = [1u64];
        for (spec, rollup) in self.specs.iter().zip(t.rollups.iter_mut()) {
            let wanted: fn(u32, u32, u32, u32) -> bool = match spec.kind {
                Kind::WafTrend | Kind::RequestTrend | Kind::TopK { waf: true, .. } => |s, waf, _, _| s == waf,
                Kind::ShapingTrend | Kind::TopK { waf: false, rate_limited: false } => |s, waf, _, _| s != waf,
                Kind::TopK { waf: false, rate_limited: true } => |s, waf, a, rl| s != waf && a == rl,
                _ => continue,
            };
            let keep_from = self.retention_start(spec.granularity).unwrap_or(i64::MIN);
            let step = spec.granularity.millis();
            for (r, e) in records.iter().zip(encoded) {
                if r.ts_ms < keep_from || !wanted(e[source], waf, e[action], rate_limit) {
                    continue;
                }
                let bucket = r.ts_ms - r.ts_ms.rem_euclid(step);
                let key = spec.dims.iter().fold(0u128, |k, d| (k << ID_BITS) | u128::from(e[*d]));
                let block = rollup.blocks.entry(bucket).or_insert_with(|| Block::new(spec.dims.len(), 1));
                block.add(key, |i| e[spec.dims[i]], &one);
            }
        }
        self.seal(t);
    }

    /// Drops the upsert indexes of buckets more than two of their own lengths behind the newest: they are a
    /// cache, rebuilt if late data arrives.
    fn seal(&self, t: &mut Tenant) {
        for (spec, rollup) in self.specs.iter().zip(t.rollups.iter_mut()) {
            let Some((&newest, _)) = rollup.blocks.last_key_value() else { continue };
            let keep = newest - 2 * spec.granularity.millis();
            for (_, block) in rollup.blocks.range_mut(..keep).rev() {
                if block.index.is_none() {
                    break;
                }
                block.index = None;
            }
        }
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
        let mut t = tenant.write().unwrap_or_else(|e| e.into_inner());
        let t = &mut *t;
        let mut n = 0;
        for (bucket, values, metrics) in rows {
            let mut e = Vec::with_capacity(want.len());
            for (k, id) in want.iter().enumerate() {
                e.push(t.dicts[*id].id(&values[order[k]], self.max_ids).context("dictionary full")?);
            }
            let key = e.iter().fold(0u128, |k, v| (k << ID_BITS) | u128::from(*v));
            anyhow::ensure!(metrics.len() == n_metrics, "{n_metrics} metrics a row");
            let block = t.rollups[index].blocks.entry(bucket).or_insert_with(|| Block::new(want.len(), n_metrics));
            block.add(key, |i| e[i], &metrics);
            n += 1;
        }
        for block in t.rollups[index].blocks.values_mut() {
            block.index = None;
        }
        Ok(n)
    }

    /// Adds raw security events only (no rollups, no log; the next checkpoint writes them): the benchmark's
    /// bulk load of events.
    pub fn bulk_load_events(&self, customer: CustomerId, records: &[SecurityRecord]) -> anyhow::Result<()> {
        let tenant = self.tenant(customer);
        let mut t = tenant.write().unwrap_or_else(|e| e.into_inner());
        let t = &mut *t;
        for r in records {
            let mut row = vec![0u32; EVENT_DIMS.len()];
            for (c, name) in EVENT_DIMS.iter().enumerate() {
                let id = dim_id(name).unwrap_or(0);
                let v = r.dims.iter().find(|(d, _)| *d == id).map(|(_, v)| v.as_str()).unwrap_or("");
                row[c] = t.dicts[id].id(v, self.max_ids).context("dictionary full")?;
            }
            if t.events.ts.last().is_some_and(|last| *last > r.ts_ms) {
                t.events.sorted = false;
            }
            t.events.ts.push(r.ts_ms);
            for (col, v) in t.events.cols.iter_mut().zip(row) {
                col.push(v);
            }
        }
        Ok(())
    }

    /// Which rollup serves `dims` plus the dimensions filtered on: the exact grouping set when it holds the
    /// filtered dimensions, else the smallest one that holds them all (aggregated at query time).
    fn choose(
        &self,
        kind: Kind,
        granularity: Granularity,
        dims: &[usize],
        filtered: &[usize],
    ) -> Option<(usize, bool)> {
        let mut need: Vec<usize> = dims.iter().chain(filtered).copied().collect();
        need.sort_unstable();
        need.dedup();
        let mut exact: Vec<usize> = dims.to_vec();
        exact.sort_unstable();
        let candidates = self.specs.iter().enumerate().filter(|(_, s)| s.kind == kind && s.granularity == granularity);
        if let Some((i, _)) = candidates.clone().find(|(_, s)| s.dims == exact && need == exact) {
            return Some((i, false));
        }
        candidates
            .filter(|(_, s)| need.iter().all(|d| s.dims.contains(d)))
            .min_by_key(|(_, s)| s.dims.len())
            .map(|(i, _)| (i, true))
    }
}

fn day_start(ms: i64) -> i64 {
    ms - ms.rem_euclid(86_400_000)
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

/// A filter compiled against one rollup's (or the events') columns. The `customer` dimension is a constant:
/// its conditions are decided here.
enum Compiled {
    Nothing,
    Everything,
    All(Vec<Test>),
    Any(Vec<Test>),
}

impl Compiled {
    fn new(
        filter: &Filter,
        customer: &str,
        column_of: impl Fn(usize) -> Option<usize>,
        dicts: &[Dict],
    ) -> Result<Compiled, QueryError> {
        let constant = |c: &Condition| (c.value == customer) == c.equal;
        let tests = |conds: &[Condition]| -> Result<Vec<Test>, QueryError> {
            conds
                .iter()
                .filter(|c| c.dimension != "customer")
                .map(|c| {
                    let d = dim_id(&c.dimension)
                        .ok_or_else(|| QueryError::Unsupported(format!("cannot filter on {}", c.dimension)))?;
                    let column = column_of(d).ok_or_else(|| {
                        QueryError::Unsupported(format!("no rollup holds {} for this query", c.dimension))
                    })?;
                    let value = if INTEGER_DIMENSIONS.contains(&c.dimension.as_str()) {
                        c.value.trim().parse::<i64>().map(|v| v.to_string()).unwrap_or_default()
                    } else {
                        c.value.clone()
                    };
                    Ok(Test { column, equal: c.equal, id: dicts[d].get(&value) })
                })
                .collect()
        };
        Ok(match filter {
            Filter::None => Compiled::Everything,
            Filter::All(conds) => {
                if conds.iter().any(|c| c.dimension == "customer" && !constant(c)) {
                    Compiled::Nothing
                } else {
                    let t = tests(conds)?;
                    if t.is_empty() { Compiled::Everything } else { Compiled::All(t) }
                }
            }
            Filter::Any(conds) => {
                if conds.iter().any(|c| c.dimension == "customer" && constant(c)) {
                    Compiled::Everything
                } else {
                    let t = tests(conds)?;
                    if t.is_empty() { Compiled::Nothing } else { Compiled::Any(t) }
                }
            }
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
                let col = &block.dims[t.column];
                match (t.id, t.equal) {
                    (None, true) => return Selection::Nothing,
                    (None, false) => {}
                    (Some(id), eq) => {
                        for (m, v) in mask.iter_mut().zip(col) {
                            *m &= (*v == id) == eq;
                        }
                    }
                }
            }
            Selection::Mask
        }
        Compiled::Any(tests) => {
            mask.clear();
            mask.resize(n, false);
            for t in tests {
                let col = &block.dims[t.column];
                match (t.id, t.equal) {
                    (None, true) => {}
                    (None, false) => return Selection::All,
                    (Some(id), eq) => {
                        for (m, v) in mask.iter_mut().zip(col) {
                            *m |= (*v == id) == eq;
                        }
                    }
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

fn kind_of(family: Family) -> Kind {
    match family {
        Family::Delivery => Kind::Delivery,
        Family::TopKUrl => Kind::TopKUrl,
        Family::WafTrends => Kind::WafTrend,
        Family::ShapingTrends => Kind::ShapingTrend,
        Family::RequestTrends => Kind::RequestTrend,
        Family::WafTopK(_) => Kind::TopK { waf: true, rate_limited: false },
        Family::ShapingTopK(c) => Kind::TopK { waf: false, rate_limited: c.starts_with("ratelimit") },
        Family::Events => Kind::Delivery,
    }
}

fn metric_index(family: Family, name: &str) -> usize {
    match family {
        Family::Delivery => edge_api::stats::DELIVERY_METRICS.iter().position(|m| *m == name).unwrap_or(HITS),
        _ => 0,
    }
}

fn is_int(dim: &str) -> bool {
    INTEGER_DIMENSIONS.contains(&dim)
}

impl MemoryEngine {
    fn query_rollups(&self, t: &Tenant, customer: &str, q: &Query) -> Result<Answer, QueryError> {
        let kind = kind_of(q.family);
        let granularity = match q.family {
            Family::WafTopK(_) | Family::ShapingTopK(_) => {
                // Hourly rollups while they are kept, daily (whole days) before.
                let hourly_from =
                    self.retention_start(Granularity::Hour).unwrap_or(i64::MIN) + Granularity::Hour.millis();
                if q.start_ms >= hourly_from { Granularity::Hour } else { Granularity::Day }
            }
            _ => q.granularity.unwrap_or(Granularity::Day),
        };
        let stored: Vec<(usize, usize)> = q
            .dimensions
            .iter()
            .enumerate()
            .filter(|(_, d)| *d != "customer")
            .filter_map(|(pos, d)| dim_id(d).map(|id| (pos, id)))
            .collect();
        let dim_ids: Vec<usize> = stored.iter().map(|(_, id)| *id).collect();
        let filtered: Vec<usize> = q.filter.conditions().iter().filter_map(|c| dim_id(&c.dimension)).collect();
        let (spec_index, aggregate) = self.choose(kind, granularity, &dim_ids, &filtered).ok_or_else(|| {
            QueryError::Unsupported("no rollup holds the dimensions filtered on together with the query's; filter on the query's dimensions".into())
        })?;
        let spec = &self.specs[spec_index];
        let column_of = |d: usize| spec.dims.iter().position(|x| *x == d);
        let filter = Compiled::new(&q.filter, customer, column_of, &t.dicts)?;
        let metric_cols: Vec<usize> =
            q.metrics.iter().map(|m| if spec.metrics == METRICS { metric_index(q.family, m) } else { 0 }).collect();
        let dim_cols: Vec<usize> = dim_ids.iter().filter_map(|d| column_of(*d)).collect();
        let rollup = &t.rollups[spec_index];
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
                            rank: ranks(&t.dicts[id], is_int(DIMS[id])),
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
        let whole_range = matches!(q.family, Family::WafTopK(_) | Family::ShapingTopK(_));
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
                    let key: Vec<u32> = dim_cols.iter().map(|c| block.dims[*c][r]).collect();
                    let m = groups.entry((b, key)).or_insert_with(|| vec![0; metric_cols.len()]);
                    for (slot, c) in m.iter_mut().zip(&metric_cols) {
                        *slot += block.metrics[*c][r];
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
                    (0..block.len()).filter(|r| sel.has(&mask, *r)).map(|r| (block.metrics[hits][r], r)).collect();
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
                        for (r, &v) in block.metrics[col].iter().enumerate() {
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
                                    |d| block.dims[dim_cols[d]][r],
                                    |m| block.metrics[metric_cols[m]][r],
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
        let with_time = !matches!(q.family, Family::WafTopK(_) | Family::ShapingTopK(_));
        let step = granularity.millis();
        let mut columns = Vec::new();
        if with_time {
            columns.push(("starttime".to_string(), false));
            columns.push(("endtime".to_string(), false));
        }
        columns.extend(q.dimensions.iter().map(|d| (d.clone(), is_int(d))));
        columns.extend(q.metrics.iter().map(|m| (m.clone(), true)));
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
                    let value = t.dicts[id].value(row.dims[stored_i]);
                    stored_i += 1;
                    cells.push(if is_int(d) { Cell::Int(value.parse().unwrap_or(0)) } else { Cell::Text(value) });
                }
                cells.extend(row.metrics.iter().map(|m| Cell::Int(*m as i64)));
                cells
            })
            .collect();
        Ok(Answer { columns, rows, total })
    }

    fn query_events(&self, t: &Tenant, customer: &str, q: &Query) -> Result<Answer, QueryError> {
        let ev = &t.events;
        let col_of = |d: usize| EVENT_DIMS.iter().position(|n| dim_id(n) == Some(d));
        let filter = Compiled::new(&q.filter, customer, col_of, &t.dicts)?;
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
                            rank: ranks(&t.dicts[id], is_int(DIMS[id])),
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
                            let v = t.dicts[id].value(ev.cols[c][r]);
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
        dims: dim_cols.iter().map(|c| block.dims[*c][r]).collect(),
        metrics: metric_cols.iter().map(|c| block.metrics[*c][r]).collect(),
    }
}

impl StatsEngine for MemoryEngine {
    fn ingest_access(&self, customer: CustomerId, records: &[AccessRecord]) -> Result<(), IngestError> {
        if records.is_empty() {
            return Ok(());
        }
        let encoded = self.encode_access(customer, records)?;
        let apply = || self.apply_access(customer, records, &encoded);
        Ok(self.logged(0, customer, records.len(), wire_access(records), apply)?)
    }

    fn ingest_security(&self, customer: CustomerId, records: &[SecurityRecord]) -> Result<(), IngestError> {
        if records.is_empty() {
            return Ok(());
        }
        let encoded = self.encode_security(customer, records)?;
        let apply = || self.apply_security(customer, records, &encoded);
        Ok(self.logged(1, customer, records.len(), wire_security(records), apply)?)
    }

    fn query(&self, customer: CustomerId, customer_name: &str, query: &Query) -> Result<Answer, QueryError> {
        let Some(tenant) = self.existing_tenant(customer) else {
            let empty = Tenant::new(self.specs.len());
            return match query.family {
                Family::Events => self.query_events(&empty, customer_name, query),
                _ => self.query_rollups(&empty, customer_name, query),
            };
        };
        let t = tenant.read().unwrap_or_else(|e| e.into_inner());
        match query.family {
            Family::Events if !t.events.sorted => {
                // Sorted and read under one lock: an ingestion in between could append out of order again.
                drop(t);
                let mut t = tenant.write().unwrap_or_else(|e| e.into_inner());
                t.events.sort();
                self.query_events(&t, customer_name, query)
            }
            Family::Events => self.query_events(&t, customer_name, query),
            _ => self.query_rollups(&t, customer_name, query),
        }
    }

    fn enforce_retention(&self, now_ms: i64) -> anyhow::Result<()> {
        let tenants: Vec<_> = self.tenants.read().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        for tenant in tenants {
            let mut t = tenant.write().unwrap_or_else(|e| e.into_inner());
            for (spec, rollup) in self.specs.iter().zip(t.rollups.iter_mut()) {
                if let Some(from) = spec.granularity.kept_from(now_ms) {
                    let keep = rollup.blocks.split_off(&from);
                    rollup.blocks = keep;
                }
            }
            t.events.sort();
            let from = day_start(now_ms) - EVENT_DAYS * 86_400_000;
            let cut = t.events.ts.partition_point(|x| *x < from);
            if cut > 0 {
                t.events.ts.drain(..cut);
                for col in &mut t.events.cols {
                    col.drain(..cut);
                }
            }
        }
        Ok(())
    }

    fn checkpoint(&self) -> anyhow::Result<()> {
        let mut wal = self.wal.lock().unwrap_or_else(|e| e.into_inner());
        let tmp = self.dir.join("snapshot.tmp");
        {
            let file = File::create(&tmp)?;
            let mut w = BufWriter::with_capacity(1 << 20, file);
            let tenants = self.tenants.read().unwrap_or_else(|e| e.into_inner());
            let mut head = Enc(Vec::new());
            head.u32(SNAPSHOT_MAGIC);
            head.u64(wal.seq);
            head.u32(self.specs.len() as u32);
            head.u32(tenants.len() as u32);
            w.write_all(&head.0)?;
            for (id, tenant) in tenants.iter() {
                let t = tenant.read().unwrap_or_else(|e| e.into_inner());
                write_tenant(&mut w, *id, &t)?;
            }
            w.flush()?;
            w.get_ref().sync_all()?;
        }
        fs::rename(&tmp, self.dir.join("snapshot.bin"))?;
        File::open(&self.dir)?.sync_all()?;
        wal.file.set_len(0)?;
        wal.file.sync_all()?;
        wal.file = OpenOptions::new().append(true).open(&wal.path)?;
        wal.bytes = 0;
        Ok(())
    }

    fn log_bytes(&self) -> u64 {
        self.wal.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }

    fn footprint(&self) -> Footprint {
        let mut f = Footprint::default();
        for tenant in self.tenants.read().unwrap_or_else(|e| e.into_inner()).values() {
            let t = tenant.read().unwrap_or_else(|e| e.into_inner());
            for rollup in &t.rollups {
                for block in rollup.blocks.values() {
                    f.rollup_rows += block.len() as u64;
                    f.bytes += block.bytes() + 48;
                }
            }
            f.event_rows += t.events.ts.len() as u64;
            f.bytes +=
                (t.events.ts.capacity() * 8 + t.events.cols.iter().map(|c| c.capacity() * 4).sum::<usize>()) as u64;
            f.bytes += t.dicts.iter().map(|d| d.values.iter().map(|v| v.len() as u64 + 40).sum::<u64>()).sum::<u64>();
        }
        f
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
    for d in &t.dicts {
        w.write_all(&(d.values.len() as u32).to_le_bytes())?;
        for v in &d.values {
            w.write_all(&(v.len() as u32).to_le_bytes())?;
            w.write_all(v.as_bytes())?;
        }
    }
    for r in &t.rollups {
        w.write_all(&(r.blocks.len() as u64).to_le_bytes())?;
        for (bucket, b) in &r.blocks {
            w.write_all(&bucket.to_le_bytes())?;
            w.write_all(&(b.dims.len() as u32).to_le_bytes())?;
            w.write_all(&(b.metrics.len() as u32).to_le_bytes())?;
            for c in &b.dims {
                write_u32s(w, c)?;
            }
            for c in &b.metrics {
                write_u64s(w, c)?;
            }
        }
    }
    let ts: Vec<u64> = t.events.ts.iter().map(|x| *x as u64).collect();
    write_u64s(w, &ts)?;
    w.write_all(&[u8::from(t.events.sorted)])?;
    for c in &t.events.cols {
        write_u32s(w, c)?;
    }
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
fn load_snapshot(path: &Path, n_specs: usize, tenants: &mut HashMap<CustomerId, Tenant>) -> anyhow::Result<u64> {
    let mut r = Reader(BufReader::with_capacity(1 << 20, File::open(path)?));
    anyhow::ensure!(r.u32()? == SNAPSHOT_MAGIC, "not a statistics snapshot");
    let seq = r.u64()?;
    anyhow::ensure!(r.u32()? as usize == n_specs, "the snapshot was written by another version of the rollup set");
    let n = r.u32()?;
    for _ in 0..n {
        let id = r.u64()? as CustomerId;
        let mut t = Tenant::new(n_specs);
        for d in &mut t.dicts {
            let count = r.u32()?;
            for _ in 0..count {
                let len = r.u32()? as usize;
                let mut b = vec![0u8; len];
                r.0.read_exact(&mut b)?;
                d.id(&String::from_utf8(b)?, MAX_IDS).context("dictionary full")?;
            }
        }
        for rollup in &mut t.rollups {
            let blocks = r.u64()?;
            for _ in 0..blocks {
                let bucket = r.u64()? as i64;
                let (nd, nm) = (r.u32()? as usize, r.u32()? as usize);
                let dims = (0..nd).map(|_| r.u32s()).collect::<anyhow::Result<Vec<_>>>()?;
                let metrics = (0..nm).map(|_| r.u64s()).collect::<anyhow::Result<Vec<_>>>()?;
                rollup.blocks.insert(bucket, Block { dims, metrics, index: None });
            }
        }
        t.events.ts = r.u64s()?.into_iter().map(|x| x as i64).collect();
        t.events.sorted = r.bytes::<1>()?[0] == 1;
        for c in &mut t.events.cols {
            *c = r.u32s()?;
        }
        tenants.insert(id, t);
    }
    Ok(seq)
}
