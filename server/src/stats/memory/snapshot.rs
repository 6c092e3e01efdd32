//! Snapshots: every customer's statistics written whole beside the log, as of a log sequence number, so that
//! the log can be emptied; loaded at start, before the log after it is replayed.

use std::{
    collections::HashMap,
    fs::File,
    io::{BufReader, BufWriter, Write},
    path::Path,
};

use anyhow::Context;

use super::{
    Core, MAX_IDS,
    block::Block,
    codec::{Dec, Decode, Enc, Stream},
    keys,
    tenant::{Tenant, get_mut, get_mut_mutex, lock, read},
};
use crate::store::CustomerId;

/// Snapshots before kept keys (read, never written).
pub(super) const SNAPSHOT_MAGIC_V1: u32 = 0x4544_4753;
/// Snapshots whose tenants end with their kept keys.
pub(super) const SNAPSHOT_MAGIC: u32 = 0x4544_4754;

impl Core {
    /// Writes every tenant, as of log sequence `seq`, to `path` and syncs it.
    pub(super) fn write_snapshot(&self, path: &Path, seq: u64) -> anyhow::Result<()> {
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
        // Blocks summed from another rollup when read are summed again after a restart.
        let r = read(r);
        let kept = || r.blocks.iter().filter(|(_, b)| !b.is_derived());
        w.write_all(&(kept().count() as u64).to_le_bytes())?;
        for (bucket, b) in kept() {
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

/// Loads a snapshot (of this version, or of the one before kept keys); returns the log sequence number it
/// includes. Kept keys older than a day at `now_ms` are not loaded.
pub(super) fn load_snapshot(
    path: &Path,
    n_specs: usize,
    now_ms: i64,
    tenants: &mut HashMap<CustomerId, Tenant>,
) -> anyhow::Result<u64> {
    let mut r = Stream(BufReader::with_capacity(1 << 20, File::open(path)?));
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
                d.id(&r.text()?, MAX_IDS).context("dictionary full")?;
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
        ev.sorted = r.u8()? == 1;
        for c in &mut ev.cols {
            *c = r.u32s()?;
        }
        if with_keys {
            let len = r.u64()? as usize;
            let raw = r.bytes(len)?;
            *get_mut_mutex(&mut t.keys) = keys::Keys::decode(&mut Dec(&raw), now_ms)?;
        }
        let held = t.footprint();
        t.add_rows(held.rollup_rows + held.event_rows);
        tenants.insert(id, t);
    }
    Ok(seq)
}
