//! What bounds a customer's memory in the embedded engine: values past a dimension's limit folded into
//! `(other)` as batches are encoded, a batch refused once the customer holds as many rows as allowed, and
//! dictionaries emptied of the values no stored row or event uses any more, so that retention frees values
//! as it frees rows.

use std::sync::atomic::Ordering;

use edge_api::stats::{INTEGER_DIMENSIONS, OTHER_VALUE};

use super::{
    super::{DIMS, IngestError, Limits, Usage, dim_id, ingest::Column, rollups::Spec},
    EVENT_DIMS, MAX_IDS,
    tenant::{Dict, Tenant, read, write},
};

/// What a value past its dimension's limit is stored as.
pub(super) fn other_value(dim: usize) -> &'static str {
    if INTEGER_DIMENSIONS.contains(&DIMS[dim]) { "0" } else { OTHER_VALUE }
}

/// A batch's values as dictionary ids.
pub(super) struct Encoded {
    /// For each column, each batch value's dictionary id.
    pub(super) maps: Vec<Vec<u32>>,
    /// For each column with folded values: its index and, per batch value, whether it was folded.
    pub(super) folded: Vec<(usize, Vec<bool>)>,
}

impl Encoded {
    /// Per dimension, how many of `columns`' records had their value folded.
    pub(super) fn folded_records(&self, columns: &[(usize, &Column)]) -> Vec<(usize, u64)> {
        let mut out: Vec<(usize, u64)> = Vec::new();
        for (c, folded) in &self.folded {
            let (dim, column) = columns[*c];
            let n = column.ids.iter().filter(|i| folded[**i as usize]).count() as u64;
            match out.iter_mut().find(|(d, _)| *d == dim) {
                Some((_, count)) => *count += n,
                None => out.push((dim, n)),
            }
        }
        out
    }

    /// `column` (the `c`-th) with its folded values written as what they are stored as, if any was: what
    /// the log keeps, so that a batch replays as it was stored whatever the dictionaries hold by then.
    pub(super) fn as_stored(&self, c: usize, dim: usize, column: &Column) -> Option<Column> {
        let (_, folded) = self.folded.iter().find(|(at, _)| *at == c)?;
        let values = column
            .values
            .iter()
            .zip(folded)
            .map(|(v, f)| if *f { other_value(dim).to_string() } else { v.clone() })
            .collect();
        Some(Column { values, ids: column.ids.clone() })
    }
}

/// Maps each column's batch values (`columns`: the dictionary of each, by [`DIMS`] id) to the customer's
/// dictionary ids. A dictionary holding `max_values` values takes no new one: the value is folded into
/// [`other_value`], which always has room. Nothing fails but the engine's own limit, [`MAX_IDS`] values a
/// dictionary; then the values added so far are forgotten and nothing of the batch is stored.
pub(super) fn encode(
    dicts: &mut [Dict],
    columns: &[(usize, &Column)],
    max_values: usize,
) -> Result<Encoded, IngestError> {
    let max_values = max_values.min(MAX_IDS - 1);
    let lens: Vec<usize> = dicts.iter().map(|d| d.values.len()).collect();
    let mut encoded = Encoded { maps: Vec::with_capacity(columns.len()), folded: Vec::new() };
    for (c, (dim, column)) in columns.iter().enumerate() {
        let dict = &mut dicts[*dim];
        let mut folded: Option<Vec<bool>> = None;
        let mut map = Vec::with_capacity(column.values.len());
        for (i, v) in column.values.iter().enumerate() {
            let id = match dict.id(v, max_values) {
                Some(id) => Some(id),
                None => {
                    folded.get_or_insert_with(|| vec![false; column.values.len()])[i] = true;
                    dict.id(other_value(*dim), MAX_IDS)
                }
            };
            match id {
                Some(id) => map.push(id),
                None => {
                    for (d, len) in dicts.iter_mut().zip(&lens) {
                        d.truncate(*len);
                    }
                    return Err(IngestError::Full(format!(
                        "{} already holds {MAX_IDS} distinct values for this customer",
                        DIMS[*dim]
                    )));
                }
            }
        }
        encoded.maps.push(map);
        if let Some(folded) = folded {
            encoded.folded.push((c, folded));
        }
    }
    Ok(encoded)
}

/// Refuses a batch when the customer already holds `limits.max_rows` rows. The batch that crosses the limit
/// is stored whole (its rows are only known once it is summed, after it is logged), so a customer holds at
/// most the limit and one batch's rows: near the limit, a batch waits for those queued before it to be summed
/// (see [`may_fill`]).
pub(super) fn room(tenant: &Tenant, limits: &Limits) -> Result<(), IngestError> {
    let rows = tenant.rows.load(Ordering::Relaxed);
    if rows < limits.max_rows {
        return Ok(());
    }
    Err(IngestError::Full(format!(
        "this customer's statistics hold {rows} rows (rollup rows and raw security events), the most the server \
         allows ({}, --stats-max-rows); rows make room as they pass their retention (5-minute rollups after a \
         week, hourly after 31 days, daily after --stats-daily-retention-days, events after three days)",
        limits.max_rows
    )))
}

/// Whether the batches queued and not yet summed could bring the customer to `limits.max_rows` (a record adds
/// at most one row to each rollup): then their rows must be counted before another batch is let in. Far from
/// the limit a batch is let in at once, and summed with those queued (see `applier`).
pub(super) fn may_fill(tenant: &Tenant, limits: &Limits) -> bool {
    let queued = super::tenant::lock(&tenant.pending).records as u64;
    queued > 0 && tenant.rows.load(Ordering::Relaxed) + queued * tenant.rollups.len() as u64 >= limits.max_rows
}

/// Counts folded records per dimension (since the server started).
pub(super) fn count_folded(tenant: &Tenant, folded: &[(usize, u64)]) {
    for (dim, n) in folded {
        tenant.folded[*dim].fetch_add(*n, Ordering::Relaxed);
    }
}

/// What a customer holds.
pub(super) fn usage(customer: i64, tenant: &Tenant, bytes: u64) -> Usage {
    let dicts = read(&tenant.dicts);
    Usage {
        customer,
        rows: tenant.rows.load(Ordering::Relaxed),
        bytes,
        values: DIMS
            .iter()
            .zip(dicts.iter())
            .filter(|(_, d)| !d.values.is_empty())
            .map(|(name, d)| (*name, d.values.len() as u64))
            .collect(),
        folded: DIMS
            .iter()
            .zip(&tenant.folded)
            .map(|(name, n)| (*name, n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect(),
    }
}

/// Drops from the customer's dictionaries the values no rollup row or raw event uses any more (retention
/// dropped the last of them), renumbering the rest in their order, so that their ids still sort in the order
/// values were first seen. A dictionary is compacted only when it holds more than half of `max_values` and a
/// tenth or more of it is unused: the rows and events using the dimension are rewritten, which blocks the
/// customer's ingestion and queries meanwhile. Returns how many values were dropped.
pub(super) fn compact_dictionaries(tenant: &Tenant, specs: &[Spec], max_values: usize) -> usize {
    let candidates: Vec<usize> = read(&tenant.dicts)
        .iter()
        .enumerate()
        .filter(|(_, d)| d.values.len() > max_values.min(MAX_IDS) / 2)
        .map(|(dim, _)| dim)
        .collect();
    if candidates.is_empty() {
        return 0;
    }
    // No batch between its encoding and its application, then every lock of the customer, in the engine's
    // order (dictionaries, rollups, events).
    let _ids = write(&tenant.ids);
    tenant.settle();
    let mut dicts = write(&tenant.dicts);
    let mut rollups: Vec<_> = tenant.rollups.iter().map(write).collect();
    let mut events = write(&tenant.events);
    let mut dropped = 0;
    for dim in candidates {
        let mut used = vec![false; dicts[dim].values.len()];
        for (spec, rollup) in specs.iter().zip(rollups.iter()) {
            let Some(c) = spec.dims.iter().position(|d| *d == dim) else { continue };
            for block in rollup.blocks.values() {
                for r in 0..block.len() {
                    used[block.dim(c).get(r) as usize] = true;
                }
            }
        }
        if let Some(c) = EVENT_DIMS.iter().position(|n| dim_id(n) == Some(dim)) {
            for id in &events.cols[c] {
                used[*id as usize] = true;
            }
        }
        let unused = used.iter().filter(|u| !**u).count();
        if unused == 0 || unused * 10 < used.len() {
            continue;
        }
        let mut renumbered = vec![u32::MAX; used.len()];
        let mut next = 0;
        for (old, u) in used.iter().enumerate() {
            if *u {
                renumbered[old] = next;
                next += 1;
            }
        }
        for (spec, rollup) in specs.iter().zip(rollups.iter_mut()) {
            let Some(c) = spec.dims.iter().position(|d| *d == dim) else { continue };
            for block in rollup.blocks.values_mut() {
                block.renumber(c, &renumbered);
            }
            rollup.forget_open();
        }
        if let Some(c) = EVENT_DIMS.iter().position(|n| dim_id(n) == Some(dim)) {
            for id in events.cols[c].iter_mut() {
                *id = renumbered[*id as usize];
            }
        }
        dicts[dim].keep(&used);
        dropped += unused;
    }
    dropped
}
