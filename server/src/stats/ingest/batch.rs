//! Batches as the engines take them, column by column — each text column as the batch's distinct values and
//! one index a record — the records they hold, and the builders that make them line by line.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

/// An access-log record: when, every delivery dimension (except `customer`, which is the tenant), the URL and
/// the metrics. It may stand for many requests (`hits`). Batches are columnar ([`AccessBatch`]); this is one
/// row of one, for building and reading batches record by record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRecord {
    pub ts_ms: i64,
    /// Values of the delivery dimensions and `request_url`, by [`super::DIMS`] id (ids 0–13).
    pub dims: [String; 14],
    /// first_mile_bandwidth_bytes, hits, last_mile_bandwidth_bytes, middle_mile_bandwidth_bytes,
    /// original_bandwidth_bytes, request_time_ms, time_to_first_byte_ms, time_to_last_byte_ms.
    pub metrics: [u64; 8],
}

/// The dimensions of a security event, in the order of [`SecurityBatch::dims`].
pub const SECURITY_DIMS: [&str; 14] = [
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

/// A security event, WAF or traffic shaping: one row of a [`SecurityBatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityRecord {
    pub ts_ms: i64,
    /// Values in the order of [`SECURITY_DIMS`] (empty when the event has none).
    pub dims: [String; 14],
}

/// A text column of a batch: its distinct values, and for each record the index of its value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Column {
    pub values: Vec<String>,
    pub ids: Vec<u32>,
}

impl Column {
    pub fn value(&self, record: usize) -> &str {
        &self.values[self.ids[record] as usize]
    }

    /// The records in `order`, the values renumbered in the order they first appear in it (engines take a
    /// value's place in a batch for when it was first seen).
    fn reordered(&self, order: &[u32]) -> Column {
        let mut renumbered = vec![u32::MAX; self.values.len()];
        let mut values = Vec::with_capacity(self.values.len());
        let ids = order
            .iter()
            .map(|i| {
                let old = self.ids[*i as usize] as usize;
                if renumbered[old] == u32::MAX {
                    renumbered[old] = values.len() as u32;
                    values.push(self.values[old].clone());
                }
                renumbered[old]
            })
            .collect();
        Column { values, ids }
    }

    /// Appends the records of `other`, its values mapped to this column's (new ones added).
    fn append(&mut self, other: Column) {
        let known: FxHashMap<&str, u32> = self.values.iter().enumerate().map(|(i, v)| (v.as_str(), i as u32)).collect();
        let mut added = Vec::new();
        let map: Vec<u32> = other
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                known.get(v.as_str()).copied().unwrap_or_else(|| {
                    added.push(i);
                    (self.values.len() + added.len() - 1) as u32
                })
            })
            .collect();
        drop(known);
        let mut values = other.values;
        self.values.extend(added.into_iter().map(|i| std::mem::take(&mut values[i])));
        self.ids.extend(other.ids.iter().map(|i| map[*i as usize]));
    }
}

/// The positions of `ts` in time order (stable), or None when they are in order already.
fn time_order(ts: &[i64]) -> Option<Vec<u32>> {
    if ts.is_sorted() {
        return None;
    }
    let mut pairs: Vec<(i64, u32)> = ts.iter().enumerate().map(|(i, t)| (*t, i as u32)).collect();
    pairs.sort_unstable();
    Some(pairs.into_iter().map(|(_, i)| i).collect())
}

fn reordered<T: Copy>(values: &[T], order: &[u32]) -> Vec<T> {
    order.iter().map(|i| values[*i as usize]).collect()
}

/// Builds a [`Column`], looking each value up once per batch.
#[derive(Default)]
pub(super) struct ColumnBuilder<'a> {
    index: FxHashMap<Cow<'a, str>, u32>,
    column: Column,
}

impl<'a> ColumnBuilder<'a> {
    fn push(&mut self, v: Cow<'a, str>) {
        let id = match self.index.get(v.as_ref()) {
            Some(id) => *id,
            None => {
                let id = self.column.values.len() as u32;
                self.column.values.push(v.to_string());
                self.index.insert(v, id);
                id
            }
        };
        self.column.ids.push(id);
    }
}

/// Access-log records, column by column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessBatch {
    pub ts_ms: Vec<i64>,
    /// The delivery dimensions and `request_url`, by [`super::DIMS`] id (0–13).
    pub dims: [Column; 14],
    /// The eight metrics, in the order of [`AccessRecord::metrics`].
    pub metrics: [Vec<u64>; 8],
}

impl AccessBatch {
    pub fn len(&self) -> usize {
        self.ts_ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts_ms.is_empty()
    }

    pub fn from_records(records: &[AccessRecord]) -> AccessBatch {
        let mut b = AccessBuilder::default();
        for r in records {
            b.push(r.ts_ms, r.dims.iter().map(|d| Cow::Borrowed(d.as_str())), r.metrics);
        }
        b.finish()
    }

    /// Appends the records of `other`.
    pub fn append(&mut self, other: AccessBatch) {
        self.ts_ms.extend(other.ts_ms);
        for (c, o) in self.dims.iter_mut().zip(other.dims) {
            c.append(o);
        }
        for (c, o) in self.metrics.iter_mut().zip(other.metrics) {
            c.extend(o);
        }
    }

    /// The batch in time order, or None when it is in order already. Engines sum records in time order, so
    /// that a batch spread over days meets each stored bucket once.
    pub fn by_time(&self) -> Option<AccessBatch> {
        let order = time_order(&self.ts_ms)?;
        Some(AccessBatch {
            ts_ms: reordered(&self.ts_ms, &order),
            dims: std::array::from_fn(|d| self.dims[d].reordered(&order)),
            metrics: std::array::from_fn(|m| reordered(&self.metrics[m], &order)),
        })
    }

    pub fn record(&self, i: usize) -> AccessRecord {
        AccessRecord {
            ts_ms: self.ts_ms[i],
            dims: std::array::from_fn(|d| self.dims[d].value(i).to_string()),
            metrics: std::array::from_fn(|m| self.metrics[m][i]),
        }
    }
}

#[derive(Default)]
pub(super) struct AccessBuilder<'a> {
    ts_ms: Vec<i64>,
    dims: [ColumnBuilder<'a>; 14],
    metrics: [Vec<u64>; 8],
}

impl<'a> AccessBuilder<'a> {
    pub(super) fn push(&mut self, ts_ms: i64, dims: impl Iterator<Item = Cow<'a, str>>, metrics: [u64; 8]) {
        self.ts_ms.push(ts_ms);
        for (b, v) in self.dims.iter_mut().zip(dims) {
            b.push(v);
        }
        for (col, v) in self.metrics.iter_mut().zip(metrics) {
            col.push(v);
        }
    }

    pub(super) fn finish(self) -> AccessBatch {
        AccessBatch { ts_ms: self.ts_ms, dims: self.dims.map(|b| b.column), metrics: self.metrics }
    }
}

/// Security events, column by column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecurityBatch {
    pub ts_ms: Vec<i64>,
    /// In the order of [`SECURITY_DIMS`].
    pub dims: [Column; 14],
}

impl SecurityBatch {
    pub fn len(&self) -> usize {
        self.ts_ms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts_ms.is_empty()
    }

    pub fn from_records(records: &[SecurityRecord]) -> SecurityBatch {
        let mut b = SecurityBuilder::default();
        for r in records {
            b.push(r.ts_ms, r.dims.iter().map(|d| Cow::Borrowed(d.as_str())));
        }
        b.finish()
    }

    /// Appends the records of `other`.
    pub fn append(&mut self, other: SecurityBatch) {
        self.ts_ms.extend(other.ts_ms);
        for (c, o) in self.dims.iter_mut().zip(other.dims) {
            c.append(o);
        }
    }

    /// The batch in time order, or None when it is in order already (see [`AccessBatch::by_time`]).
    pub fn by_time(&self) -> Option<SecurityBatch> {
        let order = time_order(&self.ts_ms)?;
        Some(SecurityBatch {
            ts_ms: reordered(&self.ts_ms, &order),
            dims: std::array::from_fn(|d| self.dims[d].reordered(&order)),
        })
    }

    pub fn record(&self, i: usize) -> SecurityRecord {
        SecurityRecord { ts_ms: self.ts_ms[i], dims: std::array::from_fn(|d| self.dims[d].value(i).to_string()) }
    }
}

#[derive(Default)]
pub(super) struct SecurityBuilder<'a> {
    ts_ms: Vec<i64>,
    dims: [ColumnBuilder<'a>; 14],
}

impl<'a> SecurityBuilder<'a> {
    pub(super) fn push(&mut self, ts_ms: i64, dims: impl Iterator<Item = Cow<'a, str>>) {
        self.ts_ms.push(ts_ms);
        for (b, v) in self.dims.iter_mut().zip(dims) {
            b.push(v);
        }
    }

    pub(super) fn finish(self) -> SecurityBatch {
        SecurityBatch { ts_ms: self.ts_ms, dims: self.dims.map(|b| b.column) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_in_time_order_numbers_its_values_as_they_first_appear() {
        let record = |ts: i64, domain: &str| {
            let mut dims: [String; 14] = Default::default();
            dims[7] = domain.to_string();
            AccessRecord { ts_ms: ts, dims, metrics: [ts as u64; 8] }
        };
        let records = [record(3, "c"), record(1, "a"), record(2, "b"), record(1, "c"), record(2, "a")];
        let batch = AccessBatch::from_records(&records);
        assert_eq!(batch.dims[7].values, ["c", "a", "b"]);
        let sorted = batch.by_time().unwrap();
        assert_eq!(sorted.ts_ms, [1, 1, 2, 2, 3]);
        // Stable: records of one time keep their order.
        assert_eq!(sorted.dims[7].values, ["a", "c", "b"]);
        assert_eq!(sorted.dims[7].ids, [0, 1, 2, 0, 1]);
        assert_eq!(sorted.metrics[0], [1, 1, 2, 2, 3]);
        assert_eq!(sorted.by_time(), None);
    }
}
