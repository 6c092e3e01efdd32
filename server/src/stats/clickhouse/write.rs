//! Writing rows to ClickHouse, shared by the requests that wait for their batches to be stored and by the
//! threads that write the spool ([`super::spool`]): a group of batches in one insert per table, and the
//! per-batch repair of a group whose earlier attempt was cut off ([`super::repair`]).

use std::{future::Future, sync::Mutex, time::Duration};

use super::{
    super::{
        memory::aggregate::{Plan, Work},
        rollups::Spec,
    },
    Failure, QUERY_TIMEOUT,
    group::Rows,
    order,
    schema::{Feed, Source, Table},
    shard_of,
    sql::{insert_dict, one_block},
};
use crate::store::CustomerId;

/// What writing needs, apart from the engine: each shard's client, the rollup tables and how each is fed, and
/// the engine's runtime.
pub(super) struct Writer {
    pub(super) clients: Vec<clickhouse::Client>,
    /// The distinct rollup tables.
    pub(super) rollup_tables: Vec<Table>,
    /// How each rollup table is fed by schema version 2's views (also: which rollup tables a source writes).
    pub(super) feeds: Vec<Feed>,
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) specs: Vec<Spec>,
    /// The index of each spec's rollup table.
    pub(super) table_of: Vec<usize>,
    /// How records of each source are summed into the rollups (the embedded engine's plans), and tables for
    /// summing, kept from batch to batch.
    pub(super) access_plan: Plan,
    pub(super) security_plan: Plan,
    pub(super) work: Mutex<Vec<Work>>,
}

impl Writer {
    /// The client of the shard holding `customer`'s statistics.
    pub(super) fn client(&self, customer: CustomerId) -> clickhouse::Client {
        self.clients[shard_of(customer, self.clients.len())].clone()
    }

    /// Runs `fut` on the engine's runtime, from any thread (also one of another runtime), within the timeout.
    pub(super) fn block<T: Send>(
        &self,
        fut: impl Future<Output = Result<T, clickhouse::error::Error>> + Send,
    ) -> Result<T, Failure> {
        self.block_within(QUERY_TIMEOUT, async move { fut.await.map_err(Failure::from) })
    }

    /// Runs `fut` as [`Self::block`] does, within `timeout`.
    pub(super) fn block_within<T: Send>(
        &self,
        timeout: Duration,
        fut: impl Future<Output = Result<T, Failure>> + Send,
    ) -> Result<T, Failure> {
        let handle = self.runtime.clone();
        std::thread::scope(|s| {
            s.spawn(move || {
                handle.block_on(async move {
                    match tokio::time::timeout(timeout, fut).await {
                        Ok(r) => r,
                        Err(_) => Err(Failure::Unavailable(
                            "The statistics database did not answer in time; try again shortly.".into(),
                        )),
                    }
                })
            })
            .join()
            .unwrap_or_else(|_| Err(Failure::Internal(anyhow::anyhow!("a statistics request panicked"))))
        })
    }

    /// Writes rows of `source` to `shard`: the dictionary rows, then the raw rows and each rollup table's rows
    /// at once, each in its table's order ([`order`]), each insert one part a day. Rows summed together come in
    /// order (rollup rows each key once); `several`: the rows of several summings one after the other, put in
    /// order together (rows of the same key summed).
    pub(super) fn write_group(&self, shard: usize, source: Source, rows: Rows, several: bool) -> Result<(), Failure> {
        let client = self.clients[shard].clone();
        // The raw rows of several batches of a customer summed together are in order within each batch.
        let raw = order::raw_rows(rows.raw, source.layout());
        let mut inserts =
            vec![(format!("INSERT INTO {} ({}) FORMAT RowBinary", source.raw(), source.columns().join(", ")), raw)];
        for (table, rows) in self.rollup_tables.iter().zip(rows.rollups) {
            if !rows.is_empty() {
                let rows = if several { order::rollup_rows(rows, table.layout()) } else { rows };
                inserts.push((format!("INSERT INTO {} ({}) FORMAT RowBinary", table.name, table.columns()), rows));
            }
        }
        let dict = rows.dict;
        self.block_within(QUERY_TIMEOUT, async move {
            insert_dict(&client, dict).await?;
            write_all(&client, inserts).await
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
