//! A batch's rows as ClickHouse stores them: its dictionary rows, its records (RowBinary) for the raw table,
//! and its rows of every rollup, summed here as the embedded engine sums them (the same plan: each grouping set
//! from the records or from a summed parent), as aggregate states. Summing here costs the server a few
//! microseconds a record; ClickHouse then writes a few rollup rows a record instead of expanding every record
//! into one row a grouping set (~145) and grouping those by their text. The records summed together may be one
//! request's batch, or the batches of many requests of a customer written together from the spool
//! ([`super::spool`]).

use super::{
    super::{
        AccessBatch, SecurityBatch, dim_id,
        ingest::{Column, SECURITY_DIMS},
        memory::{
            self,
            aggregate::{Input, Plan},
        },
    },
    group::Rows,
    schema::{MARKER, grouping, put_str},
    write::Writer,
};
use crate::store::CustomerId;

/// Summing tables kept for the next batches (each as large as the largest batch it summed).
const KEPT_WORK: usize = 2;

/// Where the records summed together come from: each record's sequence number, the id of its batch (0: none)
/// and the marker rows of the batches with an id.
pub(super) struct Origin<'a> {
    pub(super) seqs: &'a [u64],
    pub(super) ids: &'a [u64],
    pub(super) markers: &'a [Marker],
}

/// A batch with an id: a marker row in each rollup table for each day it has records of, with its first
/// sequence number.
pub(super) struct Marker {
    pub(super) id: u64,
    pub(super) seq: u64,
    pub(super) days: Vec<u16>,
}

impl Marker {
    /// The marker of a batch (in time order) of records at `ts`.
    pub(super) fn of(id: u64, seq: u64, ts: &[i64]) -> Marker {
        let mut days: Vec<u16> = ts.iter().map(|t| day_of(*t)).collect();
        days.dedup();
        days.sort_unstable();
        days.dedup();
        Marker { id, seq, days }
    }
}

/// The day (since 1970) of a time or bucket, as a ClickHouse `Date`.
fn day_of(ms: i64) -> u16 {
    ms.div_euclid(86_400_000).clamp(0, i64::from(u16::MAX)) as u16
}

/// A value's hash (SipHash-1-3, fixed keys).
fn value_hash(v: &str) -> u64 {
    use std::hash::Hasher as _;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0x6564_6765_2d63_6f6e, 0x736f_6c65_2d6b_6579);
    h.write(v.as_bytes());
    h.finish()
}

/// A bijective 64-bit mixer (murmur3's finalizer).
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The smallest record index of each value of a column.
fn firsts(c: &Column) -> Vec<u32> {
    let mut first = vec![u32::MAX; c.values.len()];
    for (i, id) in c.ids.iter().enumerate() {
        let slot = &mut first[*id as usize];
        if *slot == u32::MAX {
            *slot = i as u32;
        }
    }
    first
}

impl Writer {
    /// Each rollup table's rows (RowBinary, by table index) of a batch summed by `plan`: bucket, the key's
    /// hash, the dimensions' values (`value(batch column, batch id)`; empty for the table's other dimensions),
    /// the sums and the first record's sequence number, as aggregate states; in the table's order (grouping
    /// set, bucket, hash, values: see [`order`]). The hash is 32 bits of the values of the table's dimension
    /// columns in turn (each value's SipHash-1-3, chained by a bijective mixer), computed once a value. A batch
    /// with an id (sent with a key) adds a marker row to each table for each day it has rows of there (see
    /// [`MARKER`]).
    fn rollup_rows<'v>(
        &self,
        customer: CustomerId,
        origin: &Origin,
        plan: &Plan,
        input: &Input,
        value: impl Fn(usize, u32) -> &'v str,
    ) -> Vec<Vec<u8>> {
        // Each table's rows of each grouping set it holds.
        let mut sets: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); self.rollup_tables.len()];
        // Each batch column's values' hashes, by batch id (computed once a column, when first summed).
        let mut hashes: Vec<Vec<u64>> = vec![Vec::new(); input.card.len()];
        let empty = value_hash("");
        let mut work = self.work.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
        plan.sum_each(&mut work, input, |summed| {
            let t = self.table_of[summed.spec];
            let (table, spec) = (&self.rollup_tables[t], &self.specs[summed.spec]);
            debug_assert_eq!(table.metrics.len(), summed.metrics.len());
            let mask = grouping(spec);
            // Each column of the table: the rollup's dimension it holds, if any.
            let place: Vec<Option<usize>> = table.dims.iter().map(|d| spec.dims.iter().position(|x| x == d)).collect();
            for (column, _) in &summed.cols {
                if hashes[*column].is_empty() {
                    hashes[*column] =
                        (0..input.card[*column] as u32).map(|id| value_hash(value(*column, id))).collect();
                }
            }
            let keys: Vec<(i64, u32)> = (0..summed.buckets.len())
                .map(|r| {
                    let mut h = 0x243f_6a88_85a3_08d3u64;
                    for p in &place {
                        let v = match p {
                            Some(k) => {
                                let (column, ids) = summed.cols[*k];
                                hashes[column][ids[r] as usize]
                            }
                            None => empty,
                        };
                        h = mix(h ^ v);
                    }
                    (summed.buckets[r], (h >> 32) as u32)
                })
                .collect();
            // The values of the table's columns this rollup holds, in turn: where two keys share a hash.
            let held: Vec<(usize, &[u32])> = place.iter().flatten().map(|k| summed.cols[*k]).collect();
            let mut rows: Vec<u32> = (0..summed.buckets.len() as u32).collect();
            rows.sort_unstable_by(|a, b| {
                let (a, b) = (*a as usize, *b as usize);
                keys[a].cmp(&keys[b]).then_with(|| {
                    held.iter()
                        .map(|(column, ids)| value(*column, ids[a]).cmp(value(*column, ids[b])))
                        .find(|o| o.is_ne())
                        .unwrap_or(std::cmp::Ordering::Equal)
                })
            });
            let mut buf = Vec::new();
            for r in rows {
                let (r, bucket) = (r as usize, summed.buckets[r as usize]);
                let day = day_of(bucket);
                buf.extend_from_slice(&customer.to_le_bytes());
                buf.extend_from_slice(&day.to_le_bytes());
                buf.extend_from_slice(&mask.to_le_bytes());
                buf.extend_from_slice(&bucket.to_le_bytes());
                buf.extend_from_slice(&keys[r].1.to_le_bytes());
                for p in &place {
                    match p {
                        Some(k) => {
                            let (column, ids) = summed.cols[*k];
                            put_str(&mut buf, value(column, ids[r]));
                        }
                        None => buf.push(0),
                    }
                }
                for m in summed.metrics {
                    buf.extend_from_slice(&summed.sums[r * summed.width + m].to_le_bytes());
                }
                buf.push(1);
                buf.extend_from_slice(&origin.seqs[summed.firsts[r] as usize].to_le_bytes());
            }
            sets[t].push((mask, buf));
        });
        let mut kept = self.work.lock().unwrap_or_else(|e| e.into_inner());
        // Tables of as many requests as ran at once are not all kept: a burst would hold on to their memory.
        if kept.len() < KEPT_WORK {
            kept.push(work);
        }
        drop(kept);
        let mut out: Vec<Vec<u8>> = sets
            .into_iter()
            .map(|mut sets| {
                sets.sort_unstable_by_key(|(mask, _)| *mask);
                sets.into_iter().map(|(_, rows)| rows).collect::<Vec<_>>().concat()
            })
            .collect();
        // Marker rows last: their grouping is the largest.
        for (buf, table) in out.iter_mut().zip(&self.rollup_tables) {
            for marker in origin.markers {
                for day in &marker.days {
                    buf.extend_from_slice(&customer.to_le_bytes());
                    buf.extend_from_slice(&day.to_le_bytes());
                    buf.extend_from_slice(&MARKER.to_le_bytes());
                    buf.extend_from_slice(&(marker.id as i64).to_le_bytes());
                    buf.extend_from_slice(&[0; 4]);
                    buf.extend(std::iter::repeat_n(0, table.dims.len()));
                    for _ in table.metrics {
                        buf.extend_from_slice(&0u64.to_le_bytes());
                    }
                    buf.push(1);
                    buf.extend_from_slice(&marker.seq.to_le_bytes());
                }
            }
        }
        out
    }

    /// Dictionary rows of records: for each (dimension id, column), each value with the sequence number of the
    /// first record that carries it.
    fn dict_rows(customer: CustomerId, seqs: &[u64], columns: &[(usize, &Column)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (dim, column) in columns {
            for (v, first) in column.values.iter().zip(firsts(column)) {
                out.extend_from_slice(&customer.to_le_bytes());
                out.push(*dim as u8);
                put_str(&mut out, v);
                out.extend_from_slice(&seqs[first as usize].to_le_bytes());
            }
        }
        out
    }

    /// The rows of a customer's access-log records (in time order within each batch, batches in sequence
    /// order).
    pub(super) fn access_rows(&self, customer: CustomerId, batch: &AccessBatch, origin: &Origin) -> Rows {
        let n = batch.len();
        let allow = Column { values: vec!["ALLOW".into()], ids: vec![0] };
        let mut columns: Vec<(usize, &Column)> = batch.dims.iter().enumerate().collect();
        columns.push((dim_id("client_country_code").unwrap_or(0), &batch.dims[4]));
        columns.push((dim_id("waf_action").unwrap_or(0), &allow));
        let dict = Self::dict_rows(customer, origin.seqs, &columns);
        let raw = raw_rows(customer, &batch.ts_ms, &batch.dims, &batch.metrics, origin);
        let zeros = vec![0u32; n];
        let metrics: Vec<&[u64]> = batch.metrics.iter().map(Vec::as_slice).collect();
        let input = memory::access_input(batch, &zeros, &metrics, &[]);
        let value = |c: usize, id: u32| memory::access_value(batch, c, id);
        let rollups = self.rollup_rows(customer, origin, &self.access_plan, &input, value);
        Rows { dict, raw, rollups }
    }

    /// The rows of a customer's security events (in time order within each batch, batches in sequence order).
    pub(super) fn security_rows(&self, customer: CustomerId, batch: &SecurityBatch, origin: &Origin) -> Rows {
        let columns: Vec<(usize, &Column)> =
            batch.dims.iter().enumerate().map(|(i, c)| (dim_id(SECURITY_DIMS[i]).unwrap_or(0), c)).collect();
        let dict = Self::dict_rows(customer, origin.seqs, &columns);
        let raw = raw_rows(customer, &batch.ts_ms, &batch.dims, &[], origin);
        let kinds = memory::security_kinds(batch);
        let input = memory::security_input(batch, &kinds, &[]);
        let value = |c: usize, id: u32| batch.dims[c].values[id as usize].as_str();
        let rollups = self.rollup_rows(customer, origin, &self.security_plan, &input, value);
        Rows { dict, raw, rollups }
    }
}

/// Raw rows (RowBinary, as [`super::schema::Source::columns`] names them): customer, time, sequence number, the
/// text columns, the metric columns (none for security events) and the batch id, a record each.
fn raw_rows(customer: CustomerId, ts: &[i64], dims: &[Column], metrics: &[Vec<u64>], origin: &Origin) -> Vec<u8> {
    let mut raw = Vec::with_capacity(ts.len() * (40 + 12 * dims.len() + 8 * metrics.len()));
    for (i, t) in ts.iter().enumerate() {
        raw.extend_from_slice(&customer.to_le_bytes());
        raw.extend_from_slice(&t.to_le_bytes());
        raw.extend_from_slice(&origin.seqs[i].to_le_bytes());
        for c in dims {
            put_str(&mut raw, c.value(i));
        }
        for m in metrics {
            raw.extend_from_slice(&m[i].to_le_bytes());
        }
        raw.extend_from_slice(&origin.ids[i].to_le_bytes());
    }
    raw
}
