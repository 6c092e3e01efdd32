//! Rows put in the order of their table's sorting key before they are sent. ClickHouse sorts the rows of each
//! part it writes by the table's ORDER BY unless they come sorted: for rollup rows keyed by text that sort was
//! about half of an insert's work (measured on 18.16: 4,000,000 rows of two text dimensions inserted in 9.0 s
//! as they came, in 4.6–5.1 s sorted). A batch's rollup rows are encoded in order ([`super::insert`]); a
//! group's rows of several batches are merged here (on numbers: the rollup tables' key is customer, grouping
//! set, bucket and a hash of the values before the values, compared only where the hashes tie), and there rows
//! of the same key come side by side and are summed in one pass.

use std::cmp::Ordering;

use super::schema::Layout;

fn u64_at(rows: &[u8], at: usize) -> u64 {
    rows.get(at..at + 8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_le_bytes)
}

fn i64_at(rows: &[u8], at: usize) -> i64 {
    u64_at(rows, at) as i64
}

/// The length of the string at `at` (unsigned LEB128, as RowBinary writes it) and the bytes that length takes.
fn text_len(rows: &[u8], at: usize) -> Option<(usize, usize)> {
    let (mut len, mut shift, mut n) = (0usize, 0, 0);
    loop {
        let b = *rows.get(at + n)?;
        n += 1;
        len |= usize::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some((len, n));
        }
        shift += 7;
        if shift > 56 {
            return None;
        }
    }
}

/// Where a row starts, where its key (head and texts) ends, and where it ends.
#[derive(Clone, Copy)]
struct Place {
    start: usize,
    key_end: usize,
    end: usize,
}

/// The places of the rows of `rows` (None: they are not rows of `layout`).
fn places(rows: &[u8], layout: Layout) -> Option<Vec<Place>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < rows.len() {
        let start = at;
        at += layout.head;
        for _ in 0..layout.texts {
            let (len, n) = text_len(rows, at)?;
            at = at.checked_add(n)?.checked_add(len)?;
        }
        let key_end = at;
        at = at.checked_add(layout.tail)?;
        if at > rows.len() {
            return None;
        }
        out.push(Place { start, key_end, end: at });
    }
    Some(out)
}

/// `texts` strings from `a` and from `b` compared one after the other, as ClickHouse compares strings (their
/// bytes, then their lengths).
fn texts_cmp(rows: &[u8], mut a: usize, mut b: usize, texts: usize) -> Ordering {
    for _ in 0..texts {
        let (Some((la, na)), Some((lb, nb))) = (text_len(rows, a), text_len(rows, b)) else {
            return Ordering::Equal;
        };
        let text = |at: usize, n: usize, len: usize| rows.get(at + n..at + n + len).unwrap_or_default();
        match text(a, na, la).cmp(text(b, nb, lb)) {
            Ordering::Equal => (a, b) = (a + na + la, b + nb + lb),
            unequal => return unequal,
        }
    }
    Ordering::Equal
}

/// A rollup table's rows (laid out as `layout`: customer, day, grouping, bucket, the hash of the values, texts,
/// then the sums and the first record as a flag and a sequence number) in the order of the table's ORDER BY
/// (customer, grouping, bucket, the hash, the dimensions' values), then by day (not in it: a batch's marker
/// rows of several days differ only there), the rows of the same key summed into one with the smallest first
/// record: what ClickHouse's merges would make of them. Rows of another layout are returned as they are.
pub(super) fn rollup_rows(rows: Vec<u8>, layout: Layout) -> Vec<u8> {
    let Some(places) = places(&rows, layout) else {
        debug_assert!(false, "rollup rows of another layout");
        return rows;
    };
    let metrics = layout.tail.saturating_sub(9) / 8;
    let lead = |at: usize| {
        let hash = rows.get(at + 26..at + 30).map_or(0, |h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]));
        (i64_at(&rows, at), u64_at(&rows, at + 10), i64_at(&rows, at + 18), hash)
    };
    let mut keyed: Vec<(_, Place)> = places.into_iter().map(|p| (lead(p.start), p)).collect();
    let day = |at: usize| rows.get(at + 8..at + 10);
    // Stable: each batch's rows are one run in order ([`super::insert`]), which this sort merges.
    keyed.sort_by(|(a_lead, a), (b_lead, b)| {
        a_lead
            .cmp(b_lead)
            .then_with(|| texts_cmp(&rows, a.start + layout.head, b.start + layout.head, layout.texts))
            .then_with(|| day(a.start).cmp(&day(b.start)))
    });
    let mut out = Vec::with_capacity(rows.len());
    // Where the last row written starts in `out`.
    let mut last = 0;
    for (_, p) in keyed {
        let key = &rows[p.start..p.key_end];
        if out.is_empty() || out.get(last..last + key.len()) != Some(key) {
            last = out.len();
            out.extend_from_slice(&rows[p.start..p.end]);
            continue;
        }
        let (to, from) = (last + key.len(), p.key_end);
        for m in 0..metrics {
            let sum = u64_at(&out, to + 8 * m).wrapping_add(u64_at(&rows, from + 8 * m));
            out[to + 8 * m..to + 8 * m + 8].copy_from_slice(&sum.to_le_bytes());
        }
        let first = to + 8 * metrics + 1;
        let smallest = u64_at(&out, first).min(u64_at(&rows, from + 8 * metrics + 1));
        out[first..first + 8].copy_from_slice(&smallest.to_le_bytes());
    }
    out
}

/// Raw rows (laid out as `layout`: customer, ts and seq first) in the order of the raw tables' ORDER BY
/// (customer, ts, seq); rows in that order already (a batch alone: it comes in time order) are returned as they
/// are, and so are rows of another layout.
pub(super) fn raw_rows(rows: Vec<u8>, layout: Layout) -> Vec<u8> {
    let Some(mut places) = places(&rows, layout) else {
        debug_assert!(false, "raw rows of another layout");
        return rows;
    };
    let lead = |p: &Place| (i64_at(&rows, p.start), i64_at(&rows, p.start + 8), u64_at(&rows, p.start + 16));
    if places.is_sorted_by_key(lead) {
        return rows;
    }
    // Stable: each batch's rows are one run in order.
    places.sort_by_key(lead);
    let mut out = Vec::with_capacity(rows.len());
    for p in places {
        out.extend_from_slice(&rows[p.start..p.end]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{super::schema::put_str, *};

    /// Rollup rows of one text dimension and two sums.
    const ROLLUP: Layout = Layout { head: 30, texts: 1, tail: 2 * 8 + 9 };

    /// A rollup row as the server writes it.
    fn row(customer: i64, day: u16, grouping: u64, bucket: i64, value: &str, sums: [u64; 2], first: u64) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&customer.to_le_bytes());
        out.extend_from_slice(&day.to_le_bytes());
        out.extend_from_slice(&grouping.to_le_bytes());
        out.extend_from_slice(&bucket.to_le_bytes());
        // A hash standing in for the value's: its length (so "a" and "b" share theirs, and their values decide).
        out.extend_from_slice(&(value.len() as u32).to_le_bytes());
        put_str(&mut out, value);
        for s in sums {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.push(1);
        out.extend_from_slice(&first.to_le_bytes());
        out
    }

    /// Customer 7's row of day 20,000 and grouping 4.
    fn of(bucket: i64, value: &str, sums: [u64; 2], first: u64) -> Vec<u8> {
        row(7, 20_000, 4, bucket, value, sums, first)
    }

    #[test]
    fn rollup_rows_come_in_the_tables_order_with_those_of_the_same_key_summed_into_one() {
        let long = "u".repeat(300); // a length of two bytes
        let rows: Vec<u8> = [
            of(300, "a", [3, 30], 7),
            of(0, &long, [2, 20], 6),
            of(0, "a", [1, 10], 5),
            of(0, "b", [6, 60], 8),
            of(0, "a", [4, 40], 3),
            of(0, &long, [5, 50], 9),
            of(0, "", [1, 1], 10),
        ]
        .concat();
        let expected: Vec<u8> = [
            of(0, "", [1, 1], 10),
            of(0, "a", [5, 50], 3),
            of(0, "b", [6, 60], 8),
            of(0, &long, [7, 70], 6),
            of(300, "a", [3, 30], 7),
        ]
        .concat();
        assert_eq!(rollup_rows(rows, ROLLUP), expected);
        assert!(rollup_rows(Vec::new(), ROLLUP).is_empty());

        // Customer, grouping, bucket, value, and last the day, which is not in the table's key: another customer's
        // row of the same bucket and value (a group holds any customers of a shard) stays its own, and so do a
        // batch's marker rows of two days.
        let rows = [
            row(8, 20_000, 4, 0, "a", [2, 20], 4),
            row(7, 20_001, 1 << 63, 99, "", [0, 0], 1),
            of(0, "a", [1, 10], 5),
            row(7, 20_000, 1 << 63, 99, "", [0, 0], 1),
            row(7, 20_000, 2, 300, "a", [1, 1], 2),
            of(0, "a", [3, 30], 6),
            row(-1, 20_000, 4, 0, "a", [1, 1], 1),
        ]
        .concat();
        let expected = [
            row(-1, 20_000, 4, 0, "a", [1, 1], 1),
            row(7, 20_000, 2, 300, "a", [1, 1], 2),
            of(0, "a", [4, 40], 5),
            row(7, 20_000, 1 << 63, 99, "", [0, 0], 1),
            row(7, 20_001, 1 << 63, 99, "", [0, 0], 1),
            row(8, 20_000, 4, 0, "a", [2, 20], 4),
        ]
        .concat();
        assert_eq!(rollup_rows(rows, ROLLUP), expected);
    }

    /// Raw rows of two texts and a batch id.
    const RAW: Layout = Layout { head: 24, texts: 2, tail: 8 };

    fn raw(customer: i64, ts: i64, seq: u64, texts: [&str; 2]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&customer.to_le_bytes());
        out.extend_from_slice(&ts.to_le_bytes());
        out.extend_from_slice(&seq.to_le_bytes());
        for t in texts {
            put_str(&mut out, t);
        }
        out.extend_from_slice(&0u64.to_le_bytes());
        out
    }

    #[test]
    fn raw_rows_of_several_batches_come_in_customer_time_and_sequence_order() {
        let batch = |customer, seq: u64, times: &[i64]| -> Vec<u8> {
            times.iter().enumerate().flat_map(|(i, ts)| raw(customer, *ts, seq + i as u64, ["x", "yy"])).collect()
        };
        let alone = batch(7, 100, &[1, 5, 5, 9]);
        assert_eq!(raw_rows(alone.clone(), RAW), alone, "a batch alone is in order");
        let two = [batch(7, 100, &[1, 5, 9]), batch(3, 200, &[4]), batch(7, 300, &[2, 5])].concat();
        let expected = [
            raw(3, 4, 200, ["x", "yy"]),
            raw(7, 1, 100, ["x", "yy"]),
            raw(7, 2, 300, ["x", "yy"]),
            raw(7, 5, 101, ["x", "yy"]),
            raw(7, 5, 301, ["x", "yy"]),
            raw(7, 9, 102, ["x", "yy"]),
        ]
        .concat();
        assert_eq!(raw_rows(two, RAW), expected);
    }
}
