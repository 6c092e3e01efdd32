//! Storing a request's batch: in time order, each record numbered in the sequence (when its batch arrived,
//! then its place in the batch). A batch sent without a key goes to the spool ([`super::spool`]) and is
//! answered once there; one sent with a key (or any batch of a server without a spool) is summed into its rows
//! ([`super::rows`]) and answered once they are stored in ClickHouse, with the batches of concurrent requests
//! ([`super::group`]). With an `Idempotency-Key`, an earlier attempt's parts are looked for first and only what
//! they lack written.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{
    super::{AccessBatch, IngestError, Keyed, SecurityBatch, Stored},
    ClickHouseEngine, Failure,
    group::{Coming, Lane, Rows},
    rows::{Marker, Origin},
    schema::Source,
    shard_of,
    spool::{Body, Spooled},
};
use crate::store::CustomerId;

/// Records of one batch share a millisecond of the sequence; a larger batch takes several.
const SEQ_BITS: u32 = 20;
/// 2020-01-01T00:00:00Z: sequence numbers count milliseconds from here.
const SEQ_EPOCH_MS: u64 = 1_577_836_800_000;

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

    /// The lane of a customer's batches of `source` ([`super::group`]).
    fn lane(&self, customer: CustomerId, source: Source) -> &Lane {
        &self.lanes[shard_of(customer, self.writer.clients.len())][source as usize]
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
        let shard = shard_of(customer, self.writer.clients.len());
        self.lane(customer, source).insert(coming, rows, records, |group| {
            self.writer.write_group(shard, source, group.rows, group.batches > 1)
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
        let landed = if begun { self.writer.landed(customer, source, batch, ts_range)? } else { Vec::new() };
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
            self.writer.repair(customer, source, batch, rows, &landed)?;
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
        if batch.is_empty() {
            return Ok(Stored::default());
        }
        let coming = self.lane(customer, Source::Access).coming();
        // In time order, as the embedded engine takes it: the records' places are when values were first seen.
        let sorted = batch.by_time();
        let batch = sorted.as_ref().unwrap_or(batch);
        self.store(coming, customer, key, Body::Access(batch), &batch.ts_ms, |origin| {
            self.writer.access_rows(customer, batch, origin)
        })
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
        let coming = self.lane(customer, Source::Security).coming();
        let sorted = batch.by_time();
        let batch = sorted.as_ref().unwrap_or(batch);
        self.store(coming, customer, key, Body::Security(batch), &batch.ts_ms, |origin| {
            self.writer.security_rows(customer, batch, origin)
        })
    }

    /// Stores a batch (in time order, its records at `ts`): into the spool, or its rows (`rows`) into ClickHouse.
    fn store(
        &self,
        coming: Coming<'_>,
        customer: CustomerId,
        key: Option<&Keyed>,
        body: Body<'_>,
        ts: &[i64],
        rows: impl FnOnce(&Origin) -> Rows,
    ) -> Result<Stored, IngestError> {
        let (n, source) = (ts.len(), body.source());
        let (seq, range) = (self.sequence(n), (ts[0], ts[n - 1]));
        let id = match key {
            Some(key) => batch_id(customer, key),
            // Through the spool, whose retries look for what an attempt left as for a batch with a key.
            None if self.spool.is_some() => (rand::random::<u64>() >> 1) | 1,
            None => 0,
        };
        if let (None, Some(spool)) = (key, &self.spool) {
            drop(coming);
            let shard = shard_of(customer, self.writer.clients.len());
            spool.lane(shard, source).append(&Spooled { customer, id, seq, range, body })?;
            return Ok(Stored::default());
        }
        let seqs: Vec<u64> = (seq..seq + n as u64).collect();
        let ids = vec![id; n];
        let markers = if id == 0 { Vec::new() } else { vec![Marker::of(id, seq, ts)] };
        let rows = rows(&Origin { seqs: &seqs, ids: &ids, markers: &markers });
        match key {
            None => self.insert(coming, customer, source, rows, n)?,
            Some(key) => self.store_keyed(coming, customer, source, key, id, range, (rows, n))?,
        }
        Ok(Stored::default())
    }
}
