//! Repairing a batch whose earlier attempt was cut off: which (table, day) parts it left, and the others
//! written from the batch's own rows.

use std::fmt::Write as _;

use serde::Deserialize;

use super::{
    ClickHouseEngine, Failure,
    schema::{MARKER, Source},
    sql::{Sql, bind, insert_dict, one_block_query},
};
use crate::store::CustomerId;

#[derive(Deserialize, clickhouse::Row)]
struct LandedRow {
    t: String,
    d: String,
}

impl ClickHouseEngine {
    /// The (table, day) parts a batch left: raw rows with its id, and the days of each rollup table with its
    /// marker.
    pub(super) fn landed(
        &self,
        customer: CustomerId,
        source: Source,
        batch: u64,
        (from, to): (i64, i64),
    ) -> Result<Vec<(String, String)>, Failure> {
        let mut sql = Sql::default();
        sql.push("SELECT '").push(source.raw()).push("' AS t, toString(day) AS d FROM ").push(source.raw());
        sql.push(" WHERE customer = ").int(customer).push(" AND ts >= ").int(from).push(" AND ts <= ").int(to);
        sql.push(" AND batch = ").unsigned(batch).push(" GROUP BY day");
        for feed in self.feeds.iter().filter(|f| f.source == source) {
            sql.push(" UNION ALL SELECT '")
                .push(&feed.table)
                .push("' AS t, toString(day) AS d FROM ")
                .push(&feed.table);
            let _ = write!(sql.text, " WHERE customer = ");
            sql.int(customer).push(" AND grouping = ").unsigned(MARKER).push(" AND bucket = ").int(batch as i64);
            sql.push(" GROUP BY day");
        }
        let query = bind(self.client(customer).query(&sql.text), sql.args);
        let rows = self.block(async move { query.fetch_all::<LandedRow>().await })?;
        Ok(rows.into_iter().map(|r| (r.t, r.d)).collect())
    }

    /// Writes what an earlier attempt of a batch did not leave: its rows go to a scratch table, from which
    /// each target (the raw table, every rollup table the source feeds) gets the days it lacks.
    pub(super) fn repair(
        &self,
        customer: CustomerId,
        source: Source,
        batch: u64,
        dict: Vec<u8>,
        rows: Vec<u8>,
        landed: &[(String, String)],
    ) -> Result<(), Failure> {
        let scratch = format!("repair_{customer}_{batch}").replace('-', "n");
        let columns = source.columns().join(", ");
        let lacking = |table: &str| -> Sql {
            let days: Vec<&String> = landed.iter().filter(|(t, _)| t == table).map(|(_, d)| d).collect();
            let mut sql = Sql::default();
            if !days.is_empty() {
                sql.push(" AND toString(toDate(intDiv(ts, 1000))) NOT IN (");
                for (i, d) in days.into_iter().enumerate() {
                    sql.push(if i > 0 { ", " } else { "" }).text(d);
                }
                sql.push(")");
            }
            sql
        };
        let mut statements: Vec<Sql> = Vec::new();
        let mut raw = Sql::default();
        raw.push(&format!("INSERT INTO {} ({columns}) SELECT {columns} FROM {scratch} WHERE 1", source.raw()));
        raw.append(lacking(source.raw()));
        statements.push(raw);
        for feed in self.feeds.iter().filter(|f| f.source == source) {
            let extra = lacking(&feed.table);
            let mut sql = Sql::default();
            let text = feed.select(&scratch, &extra.text);
            sql.push(&format!("INSERT INTO {} ", feed.table)).push(&text);
            sql.args = extra.args;
            statements.push(sql);
        }
        let client = self.client(customer);
        let definitions = source.definitions();
        self.block(async move {
            client.query(&format!("DROP TABLE IF EXISTS {scratch}")).execute().await?;
            client.query(&format!("CREATE TABLE {scratch} ({definitions}) ENGINE = Memory")).execute().await?;
            let mut insert =
                client.insert_formatted_with(format!("INSERT INTO {scratch} ({columns}) FORMAT RowBinary"));
            insert.send(rows.into()).await?;
            insert.end().await?;
            insert_dict(&client, dict).await?;
            for sql in statements {
                one_block_query(bind(client.query(&sql.text), sql.args)).execute().await?;
            }
            client.query(&format!("DROP TABLE IF EXISTS {scratch}")).execute().await
        })
    }
}
