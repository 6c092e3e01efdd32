//! Storing a batch: its dictionary rows, its records (RowBinary) into the raw table, and its rows of every
//! rollup, summed here as the embedded engine sums them (the same plan: each grouping set from the records
//! or from a summed parent) and inserted into each rollup table as aggregate states. Summing the batch here
//! costs the server a few microseconds a record; ClickHouse then writes a few rollup rows a record instead
//! of expanding every record into one row a grouping set (~145) and grouping those by their text. With an
//! `Idempotency-Key`, an earlier attempt's parts are looked for first and only what they lack written.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{
    super::{
        AccessBatch, IngestError, Keyed, SecurityBatch, Stored, dim_id,
        ingest::{Column, SECURITY_DIMS},
        memory::{
            self,
            aggregate::{Input, Plan},
        },
    },
    ClickHouseEngine, Failure,
    group::{Coming, Lane, Rows},
    order,
    schema::{MARKER, Source, grouping, put_str},
    shard_of,
    sql::{insert_dict, one_block},
};
use crate::store::CustomerId;

/// Summing tables kept for the next batches (each as large as the largest batch it summed).
const KEPT_WORK: usize = 2;

/// Records of one batch share a millisecond of the sequence; a larger batch takes several.
const SEQ_BITS: u32 = 20;
/// 2020-01-01T00:00:00Z: sequence numbers count milliseconds from here.
const SEQ_EPOCH_MS: u64 = 1_577_836_800_000;

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

impl ClickHouseEngine {
    /// Each rollup table's rows (RowBinary, by table index) of a batch summed by `plan`: bucket, the key's
    /// hash, the dimensions' values (`value(batch column, batch id)`; empty for the table's other dimensions),
    /// the sums and the first record's sequence number, as aggregate states; in the table's order (grouping
    /// set, bucket, hash, values: see [`order`]). The hash is 32 bits of the values of the table's dimension
    /// columns in turn (each value's SipHash-1-3, chained by a bijective mixer), computed once a value. A batch
    /// with an id (sent with a key) adds a marker row to each table for each day it has rows of there (see
    /// [`MARKER`]).
    #[allow(clippy::too_many_arguments)]
    fn rollup_rows<'v>(
        &self,
        customer: CustomerId,
        seq: u64,
        batch: u64,
        plan: &Plan,
        input: &Input,
        value: impl Fn(usize, u32) -> &'v str,
    ) -> Vec<Vec<u8>> {
        // Each table's rows of each grouping set it holds.
        let mut sets: Vec<Vec<(u64, Vec<u8>)>> = vec![Vec::new(); self.rollup_tables.len()];
        let mut days: Vec<Vec<u16>> = vec![Vec::new(); self.rollup_tables.len()];
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
            let (days, mut buf) = (&mut days[t], Vec::new());
            for r in rows {
                let (r, bucket) = (r as usize, summed.buckets[r as usize]);
                let day = bucket.div_euclid(86_400_000).clamp(0, i64::from(u16::MAX)) as u16;
                if batch != 0 && days.last() != Some(&day) {
                    days.push(day);
                }
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
                buf.extend_from_slice(&(seq + u64::from(summed.firsts[r])).to_le_bytes());
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
        for ((buf, days), table) in out.iter_mut().zip(&mut days).zip(&self.rollup_tables) {
            days.sort_unstable();
            days.dedup();
            for day in days.iter() {
                buf.extend_from_slice(&customer.to_le_bytes());
                buf.extend_from_slice(&day.to_le_bytes());
                buf.extend_from_slice(&MARKER.to_le_bytes());
                buf.extend_from_slice(&(batch as i64).to_le_bytes());
                buf.extend_from_slice(&[0; 4]);
                buf.extend(std::iter::repeat_n(0, table.dims.len()));
                for _ in table.metrics {
                    buf.extend_from_slice(&0u64.to_le_bytes());
                }
                buf.push(1);
                buf.extend_from_slice(&seq.to_le_bytes());
            }
        }
        out
    }

    /// The first sequence number of a batch of `n` records.
    fn sequence(&self, n: usize) -> u64 {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        let slots = (n as u64).div_ceil(1 << SEQ_BITS).max(1);
        let mut last = self.last_slot.lock().unwrap_or_else(|e| e.into_inner());
        let slot = now.saturating_sub(SEQ_EPOCH_MS).max(*last + 1);
        *last = slot + slots - 1;
        slot << SEQ_BITS
    }

    /// Dictionary rows of a batch: for each (dimension id, column), each value with the sequence number of the
    /// first record that carries it.
    fn dict_rows(customer: CustomerId, seq: u64, columns: &[(usize, &Column)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (dim, column) in columns {
            for (v, first) in column.values.iter().zip(firsts(column)) {
                out.extend_from_slice(&customer.to_le_bytes());
                out.push(*dim as u8);
                put_str(&mut out, v);
                out.extend_from_slice(&(seq + u64::from(first)).to_le_bytes());
            }
        }
        out
    }

    /// The lane of a customer's batches of `source` ([`super::group`]).
    fn lane(&self, customer: CustomerId, source: Source) -> &Lane {
        &self.lanes[shard_of(customer, self.clients.len())][source as usize]
    }

    /// Stores a batch's rows (of `records` records) with those of concurrent requests to the same shard
    /// ([`super::group`]; `coming`: this request's place on its way there): the dictionary rows, then the raw
    /// rows and each rollup table's rows at once, each in its table's order ([`order`]; the group's rollup rows
    /// of the same key summed), each insert one part a day.
    fn insert(
        &self,
        coming: Coming<'_>,
        customer: CustomerId,
        source: Source,
        rows: Rows,
        records: usize,
    ) -> Result<(), Failure> {
        let client = &self.clients[shard_of(customer, self.clients.len())];
        self.lane(customer, source).insert(coming, rows, records, |group| {
            let client = client.clone();
            // A batch's rows come in order (rollup rows each key once); several batches' are put in order together.
            let several = group.batches > 1;
            let raw = if several { order::raw_rows(group.rows.raw, source.layout()) } else { group.rows.raw };
            let mut inserts =
                vec![(format!("INSERT INTO {} ({}) FORMAT RowBinary", source.raw(), source.columns().join(", ")), raw)];
            for (table, rows) in self.rollup_tables.iter().zip(group.rows.rollups) {
                if !rows.is_empty() {
                    let rows = if several { order::rollup_rows(rows, table.layout()) } else { rows };
                    inserts.push((format!("INSERT INTO {} ({}) FORMAT RowBinary", table.name, table.columns()), rows));
                }
            }
            let dict = group.rows.dict;
            self.block_failure(async move {
                insert_dict(&client, dict).await?;
                write_all(&client, inserts).await
            })
        })
    }

    /// Stores a batch sent with a key. A batch no attempt has begun (no row in `ingest_batches`, which is
    /// written before anything else of it) is inserted as any batch. One begun before — an attempt cut off
    /// half-way, or one that was stored but not answered — is looked for: only the parts its traces (raw rows
    /// with its batch id, marker rows in the rollup tables) do not show are written, each (table, day) from
    /// the batch's own rows. Then the key is kept. Every step leaves whole parts, so a repair cut off is
    /// repaired by the next retry the same way.
    #[allow(clippy::too_many_arguments)]
    fn store_keyed(
        &self,
        coming: Coming<'_>,
        customer: CustomerId,
        source: Source,
        key: &Keyed,
        batch: u64,
        ts_range: (i64, i64),
        (rows, records): (Rows, usize),
    ) -> Result<(), Failure> {
        let client = self.client(customer);
        let (endpoint, key_text, now) = (key.endpoint.code(), key.key.clone(), self.clock.now_ms());
        let begun = self.block(async move {
            let begun = client
                .query(
                    "SELECT count() FROM ingest_batches WHERE customer = ? AND endpoint = ? AND key = ? AND batch = ?",
                )
                .bind(customer)
                .bind(endpoint)
                .bind(&key_text)
                .bind(batch)
                .fetch_one::<u64>()
                .await?;
            if begun == 0 {
                // Acknowledged before the batch's insert starts: without this row, nothing of the batch exists.
                client
                    .query("INSERT INTO ingest_batches (customer, endpoint, key, batch, at_ms) VALUES (?, ?, ?, ?, ?)")
                    .bind(customer)
                    .bind(endpoint)
                    .bind(&key_text)
                    .bind(batch)
                    .bind(now)
                    .execute()
                    .await?;
            }
            Ok(begun > 0)
        })?;
        let landed = if begun { self.landed(customer, source, batch, ts_range)? } else { Vec::new() };
        if landed.is_empty() {
            self.insert(coming, customer, source, rows, records)?;
        } else {
            drop(coming);
            tracing::warn!(
                customer,
                key = %key.key,
                parts = landed.len(),
                "statistics: a batch's earlier attempt left parts in ClickHouse; writing the rest"
            );
            self.repair(customer, source, batch, rows, &landed)?;
        }
        let client = self.client(customer);
        let (endpoint, key_text, hash) = (key.endpoint.code(), key.key.clone(), hex::encode(key.body_hash));
        let now = self.clock.now_ms();
        self.block(async move {
            client
                .query(
                    "INSERT INTO ingest_keys (customer, endpoint, key, body_hash, accepted, at_ms) \
                     VALUES (?, ?, ?, ?, ?, ?)",
                )
                .bind(customer)
                .bind(endpoint)
                .bind(key_text)
                .bind(hash)
                .bind(records as u64)
                .bind(now)
                .execute()
                .await
        })
    }
}

/// Runs inserts (statement, RowBinary rows) at once; the first failure is the answer, once all have ended.
pub(super) async fn write_all(client: &clickhouse::Client, inserts: Vec<(String, Vec<u8>)>) -> Result<(), Failure> {
    let mut running = tokio::task::JoinSet::new();
    for (sql, rows) in inserts {
        let client = client.clone();
        running.spawn(async move {
            let mut insert = one_block(client.insert_formatted_with(sql));
            insert.send(rows.into()).await?;
            insert.end().await
        });
    }
    let mut outcome = Ok(());
    while let Some(done) = running.join_next().await {
        let done = done.map_err(|e| Failure::Internal(anyhow::anyhow!("a statistics insert stopped: {e}")));
        if let (Err(e), true) = (done.and_then(|r| r.map_err(Failure::from)), outcome.is_ok()) {
            outcome = Err(e);
        }
    }
    outcome
}

/// The id of a batch sent with a key, the same for every attempt of it: from the customer, the endpoint, the
/// key and the body, below 2^63 (a marker row's bucket) and never 0 (a batch without a key).
fn batch_id(customer: CustomerId, key: &Keyed) -> u64 {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    h.update(customer.to_le_bytes());
    h.update([key.endpoint.code()]);
    h.update((key.key.len() as u64).to_le_bytes());
    h.update(key.key.as_bytes());
    h.update(key.body_hash);
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_le_bytes(first) >> 1) | 1
}

impl ClickHouseEngine {
    /// Stores an access batch (with its key, if it has one).
    pub(super) fn store_access(
        &self,
        customer: CustomerId,
        batch: &AccessBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        let n = batch.len();
        if n == 0 {
            return Ok(Stored::default());
        }
        let coming = self.lane(customer, Source::Access).coming();
        // In time order, as the embedded engine takes it: the records' places are when values were first seen.
        let sorted = batch.by_time();
        let batch = sorted.as_ref().unwrap_or(batch);
        let seq = self.sequence(n);
        let id = key.map_or(0, |k| batch_id(customer, k));
        let allow = Column { values: vec!["ALLOW".into()], ids: vec![0] };
        let mut columns: Vec<(usize, &Column)> = batch.dims.iter().enumerate().collect();
        columns.push((dim_id("client_country_code").unwrap_or(0), &batch.dims[4]));
        columns.push((dim_id("waf_action").unwrap_or(0), &allow));
        let dict = Self::dict_rows(customer, seq, &columns);
        let mut raw = Vec::with_capacity(n * 168);
        for i in 0..n {
            raw.extend_from_slice(&customer.to_le_bytes());
            raw.extend_from_slice(&batch.ts_ms[i].to_le_bytes());
            raw.extend_from_slice(&(seq + i as u64).to_le_bytes());
            for c in &batch.dims {
                put_str(&mut raw, c.value(i));
            }
            for m in &batch.metrics {
                raw.extend_from_slice(&m[i].to_le_bytes());
            }
            raw.extend_from_slice(&id.to_le_bytes());
        }
        let zeros = vec![0u32; n];
        let metrics: Vec<&[u64]> = batch.metrics.iter().map(Vec::as_slice).collect();
        let input = memory::access_input(batch, &zeros, &metrics, &[]);
        let value = |c: usize, id: u32| memory::access_value(batch, c, id);
        let rollups = self.rollup_rows(customer, seq, id, &self.access_plan, &input, value);
        let rows = Rows { dict, raw, rollups };
        let range = (batch.ts_ms[0], batch.ts_ms[n - 1]);
        match key {
            None => self.insert(coming, customer, Source::Access, rows, n)?,
            Some(key) => self.store_keyed(coming, customer, Source::Access, key, id, range, (rows, n))?,
        }
        Ok(Stored::default())
    }

    pub(super) fn store_security(
        &self,
        customer: CustomerId,
        batch: &SecurityBatch,
        key: Option<&Keyed>,
    ) -> Result<Stored, IngestError> {
        let n = batch.len();
        if n == 0 {
            return Ok(Stored::default());
        }
        let coming = self.lane(customer, Source::Security).coming();
        let sorted = batch.by_time();
        let batch = sorted.as_ref().unwrap_or(batch);
        let seq = self.sequence(n);
        let id = key.map_or(0, |k| batch_id(customer, k));
        let columns: Vec<(usize, &Column)> =
            batch.dims.iter().enumerate().map(|(i, c)| (dim_id(SECURITY_DIMS[i]).unwrap_or(0), c)).collect();
        let dict = Self::dict_rows(customer, seq, &columns);
        let mut raw = Vec::with_capacity(n * 128);
        for i in 0..n {
            raw.extend_from_slice(&customer.to_le_bytes());
            raw.extend_from_slice(&batch.ts_ms[i].to_le_bytes());
            raw.extend_from_slice(&(seq + i as u64).to_le_bytes());
            for c in &batch.dims {
                put_str(&mut raw, c.value(i));
            }
            raw.extend_from_slice(&id.to_le_bytes());
        }
        let kinds = memory::security_kinds(batch);
        let input = memory::security_input(batch, &kinds, &[]);
        let value = |c: usize, id: u32| batch.dims[c].values[id as usize].as_str();
        let rollups = self.rollup_rows(customer, seq, id, &self.security_plan, &input, value);
        let rows = Rows { dict, raw, rollups };
        let range = (batch.ts_ms[0], batch.ts_ms[n - 1]);
        match key {
            None => self.insert(coming, customer, Source::Security, rows, n)?,
            Some(key) => self.store_keyed(coming, customer, Source::Security, key, id, range, (rows, n))?,
        }
        Ok(Stored::default())
    }
}
