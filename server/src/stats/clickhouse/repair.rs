//! Repairing a batch whose earlier attempt was cut off: which (table, day) parts it left, and the others
//! written from the batch's own rows.

use std::fmt::Write as _;

use serde::Deserialize;

use super::{
    Failure,
    group::Rows,
    schema::{MARKER, Source},
    sql::{Sql, bind, insert_dict, one_block_query},
    write::Writer,
};
use crate::store::CustomerId;

#[derive(Deserialize, clickhouse::Row)]
struct LandedRow {
    t: String,
    d: String,
}

impl Writer {
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

    /// Writes what an earlier attempt of a batch did not leave: its raw rows and each rollup table's rows go
    /// to scratch tables, from which each target gets the days it lacks.
    pub(super) fn repair(
        &self,
        customer: CustomerId,
        source: Source,
        batch: u64,
        rows: Rows,
        landed: &[(String, String)],
    ) -> Result<(), Failure> {
        let scratch = format!("repair_{customer}_{batch}").replace('-', "n");
        let lacking = |table: &str, day: &str| -> Sql {
            let days: Vec<&String> = landed.iter().filter(|(t, _)| t == table).map(|(_, d)| d).collect();
            let mut sql = Sql::default();
            if !days.is_empty() {
                let _ = write!(sql.text, " AND toString({day}) NOT IN (");
                for (i, d) in days.into_iter().enumerate() {
                    sql.push(if i > 0 { ", " } else { "" }).text(d);
                }
                sql.push(")");
            }
            sql
        };
        // (scratch table, its definition, its columns, its rows, the statement that fills the target from it)
        let mut steps: Vec<(String, String, String, Vec<u8>, Sql)> = Vec::new();
        let columns = source.columns().join(", ");
        let mut raw = Sql::default();
        raw.push(&format!("INSERT INTO {} ({columns}) SELECT {columns} FROM {scratch} WHERE 1", source.raw()));
        raw.append(lacking(source.raw(), "toDate(intDiv(ts, 1000))"));
        steps.push((scratch.clone(), format!("({}) ENGINE = Memory", source.definitions()), columns, rows.raw, raw));
        for (t, (table, table_rows)) in self.rollup_tables.iter().zip(rows.rollups).enumerate() {
            if table_rows.is_empty() {
                continue;
            }
            let (name, columns) = (format!("{scratch}_{t}"), table.columns());
            let mut fill = Sql::default();
            fill.push(&format!("INSERT INTO {} ({columns}) SELECT {columns} FROM {name} WHERE 1", table.name));
            fill.append(lacking(&table.name, "day"));
            steps.push((name, format!("AS {} ENGINE = Memory", table.name), columns, table_rows, fill));
        }
        let client = self.client(customer);
        let dict = rows.dict;
        self.block(async move {
            for (name, definition, columns, rows, _) in &steps {
                client.query(&format!("DROP TABLE IF EXISTS {name}")).execute().await?;
                client.query(&format!("CREATE TABLE {name} {definition}")).execute().await?;
                let mut insert =
                    client.insert_formatted_with(format!("INSERT INTO {name} ({columns}) FORMAT RowBinary"));
                insert.send(rows.clone().into()).await?;
                insert.end().await?;
            }
            insert_dict(&client, dict).await?;
            for (_, _, _, _, fill) in &steps {
                one_block_query(bind(client.query(&fill.text), fill.args.clone())).execute().await?;
            }
            for (name, ..) in &steps {
                client.query(&format!("DROP TABLE IF EXISTS {name}")).execute().await?;
            }
            Ok(())
        })
    }
}
