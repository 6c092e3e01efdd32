//! Storing a batch: its dictionary rows and its records (RowBinary) inserted into the source's Null table,
//! whose views write the raw table and every rollup; with an `Idempotency-Key`, an earlier attempt's parts
//! looked for first and only what they lack written.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{
    super::{
        AccessBatch, IngestError, Keyed, SecurityBatch, Stored, dim_id,
        ingest::{Column, SECURITY_DIMS},
    },
    ClickHouseEngine, Failure,
    schema::Source,
    shard_of,
    sql::{insert_dict, one_block},
};
use crate::store::CustomerId;

/// Records of one batch share a millisecond of the sequence; a larger batch takes several.
const SEQ_BITS: u32 = 20;
/// 2020-01-01T00:00:00Z: sequence numbers count milliseconds from here.
const SEQ_EPOCH_MS: u64 = 1_577_836_800_000;

// RowBinary encoding of inserted rows.
fn put_str(out: &mut Vec<u8>, s: &str) {
    let mut n = s.len();
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(s.as_bytes());
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

    /// Stores a batch's dictionary rows and its `records` raw rows (RowBinary, in [`Source::columns`] order)
    /// with those of concurrent requests to the same shard ([`super::group`]).
    fn insert(
        &self,
        customer: CustomerId,
        (dict, source, rows): (Vec<u8>, Source, Vec<u8>),
        records: usize,
    ) -> Result<(), Failure> {
        let shard = shard_of(customer, self.clients.len());
        let client = &self.clients[shard];
        self.lanes[shard][source as usize].insert(dict, rows, records, |group| {
            let client = client.clone();
            self.block(async move {
                insert_dict(&client, group.dict).await?;
                let sql = format!("INSERT INTO {}_in ({}) FORMAT RowBinary", source.raw(), source.columns().join(", "));
                let mut insert = one_block(client.insert_formatted_with(sql));
                insert.send(group.rows.into()).await?;
                insert.end().await
            })
        })
    }

    /// Stores a batch sent with a key. A batch no attempt has begun (no row in `ingest_batches`, which is
    /// written before anything else of it) is inserted as any batch. One begun before — an attempt cut off
    /// half-way, or one that was stored but not answered — is looked for: only the parts its traces (raw rows
    /// with its batch id, marker rows in the rollup tables) do not show are written, each (table, day) from
    /// the batch's own rows. Then the key is kept. Every step leaves whole parts, so a repair cut off is
    /// repaired by the next retry the same way.
    fn store_keyed(
        &self,
        customer: CustomerId,
        source: Source,
        key: &Keyed,
        batch: u64,
        ts_range: (i64, i64),
        (dict, rows, records): (Vec<u8>, Vec<u8>, usize),
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
            self.insert(customer, (dict, source, rows), records)?;
        } else {
            tracing::warn!(
                customer,
                key = %key.key,
                parts = landed.len(),
                "statistics: a batch's earlier attempt left parts in ClickHouse; writing the rest"
            );
            self.repair(customer, source, batch, dict, rows, &landed)?;
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
        let mut rows = Vec::with_capacity(n * 168);
        for i in 0..n {
            rows.extend_from_slice(&customer.to_le_bytes());
            rows.extend_from_slice(&batch.ts_ms[i].to_le_bytes());
            rows.extend_from_slice(&(seq + i as u64).to_le_bytes());
            for c in &batch.dims {
                put_str(&mut rows, c.value(i));
            }
            for m in &batch.metrics {
                rows.extend_from_slice(&m[i].to_le_bytes());
            }
            rows.extend_from_slice(&id.to_le_bytes());
        }
        let range = (batch.ts_ms[0], batch.ts_ms[n - 1]);
        match key {
            None => self.insert(customer, (dict, Source::Access, rows), n)?,
            Some(key) => self.store_keyed(customer, Source::Access, key, id, range, (dict, rows, n))?,
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
        let sorted = batch.by_time();
        let batch = sorted.as_ref().unwrap_or(batch);
        let seq = self.sequence(n);
        let id = key.map_or(0, |k| batch_id(customer, k));
        let columns: Vec<(usize, &Column)> =
            batch.dims.iter().enumerate().map(|(i, c)| (dim_id(SECURITY_DIMS[i]).unwrap_or(0), c)).collect();
        let dict = Self::dict_rows(customer, seq, &columns);
        let mut rows = Vec::with_capacity(n * 128);
        for i in 0..n {
            rows.extend_from_slice(&customer.to_le_bytes());
            rows.extend_from_slice(&batch.ts_ms[i].to_le_bytes());
            rows.extend_from_slice(&(seq + i as u64).to_le_bytes());
            for c in &batch.dims {
                put_str(&mut rows, c.value(i));
            }
            rows.extend_from_slice(&id.to_le_bytes());
        }
        let range = (batch.ts_ms[0], batch.ts_ms[n - 1]);
        match key {
            None => self.insert(customer, (dict, Source::Security, rows), n)?,
            Some(key) => self.store_keyed(customer, Source::Security, key, id, range, (dict, rows, n))?,
        }
        Ok(Stored::default())
    }
}
