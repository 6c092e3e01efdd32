//! The binary encoding of the log and of snapshots (little-endian integers, length-prefixed text), and the
//! log's batches in it, column by column.

use super::{
    super::{AccessBatch, AccessRecord, DIMS, SecurityBatch, SecurityRecord, ingest::Column, rollups::METRICS},
    EVENT_DIMS,
};

/// Little-endian binary encoding of the log and snapshots.
pub(in crate::stats) struct Enc(pub(in crate::stats) Vec<u8>);

impl Enc {
    pub(super) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
    }
}

/// Reads what [`Enc`] (and the snapshot's writer) wrote, from either source of bytes: [`Dec`], a slice (the
/// log, read whole), or [`Stream`], a reader (a snapshot, decoded as it is read: it can be as large as the
/// engine's memory).
pub(super) trait Decode {
    /// Fills `buf` with the next bytes; fails when fewer are left.
    fn fill(&mut self, buf: &mut [u8]) -> anyhow::Result<()>;

    fn array<const N: usize>(&mut self) -> anyhow::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.fill(&mut b)?;
        Ok(b)
    }
    fn u8(&mut self) -> anyhow::Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    fn u32(&mut self) -> anyhow::Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> anyhow::Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> anyhow::Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    /// The next `n` bytes.
    fn bytes(&mut self, n: usize) -> anyhow::Result<Vec<u8>> {
        let mut b = vec![0u8; n];
        self.fill(&mut b)?;
        Ok(b)
    }
    /// Text as [`Enc::str`] writes it.
    fn text(&mut self) -> anyhow::Result<String> {
        let n = self.u32()? as usize;
        Ok(String::from_utf8(self.bytes(n)?)?)
    }
    /// A count (u64), then as many u32s.
    fn u32s(&mut self) -> anyhow::Result<Vec<u32>> {
        let n = self.u64()? as usize;
        let raw = self.bytes(n * 4)?;
        Ok(raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }
    /// A count (u64), then as many u64s.
    fn u64s(&mut self) -> anyhow::Result<Vec<u64>> {
        let n = self.u64()? as usize;
        let raw = self.bytes(n * 8)?;
        Ok(raw.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect())
    }
}

/// Decoding from a slice, whose text and bytes it can lend rather than copy.
pub(in crate::stats) struct Dec<'a>(pub(in crate::stats) &'a [u8]);

impl<'a> Dec<'a> {
    pub(super) fn take(&mut self, n: usize) -> anyhow::Result<&'a [u8]> {
        anyhow::ensure!(self.0.len() >= n, "truncated");
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    /// [`Decode::text`], lent.
    pub(super) fn str(&mut self) -> anyhow::Result<&'a str> {
        let n = self.u32()? as usize;
        Ok(std::str::from_utf8(self.take(n)?)?)
    }
}

impl Decode for Dec<'_> {
    fn fill(&mut self, buf: &mut [u8]) -> anyhow::Result<()> {
        buf.copy_from_slice(self.take(buf.len())?);
        Ok(())
    }
}

/// Decoding from a reader.
pub(super) struct Stream<R>(pub(super) R);

impl<R: std::io::Read> Decode for Stream<R> {
    fn fill(&mut self, buf: &mut [u8]) -> anyhow::Result<()> {
        Ok(self.0.read_exact(buf)?)
    }
}

// Batches in the log, column by column: each text column as its distinct values and one index a record (1, 2
// or 4 bytes, by how many values there are), times and metrics as LEB128 varints (times as zigzag deltas).
pub(super) const KIND_ACCESS_ROWS: u8 = 0;
pub(super) const KIND_SECURITY_ROWS: u8 = 1;
pub(super) const KIND_ACCESS: u8 = 2;
pub(super) const KIND_SECURITY: u8 = 3;
/// A batch sent with an `Idempotency-Key`: the kept key ([`keys::Entry`]), then the batch as above.
pub(super) const KIND_ACCESS_KEYED: u8 = 4;
pub(super) const KIND_SECURITY_KEYED: u8 = 5;

impl Enc {
    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    pub(super) fn times(&mut self, ts: &[i64]) {
        let mut last = 0i64;
        for t in ts {
            let d = t.wrapping_sub(last);
            self.varint(((d << 1) ^ (d >> 63)) as u64);
            last = *t;
        }
    }

    pub(super) fn column(&mut self, c: &Column) {
        self.u32(c.values.len() as u32);
        for v in &c.values {
            self.str(v);
        }
        match c.values.len() {
            0..=256 => self.0.extend(c.ids.iter().map(|i| *i as u8)),
            257..=65536 => c.ids.iter().for_each(|i| self.0.extend_from_slice(&(*i as u16).to_le_bytes())),
            _ => c.ids.iter().for_each(|i| self.u32(*i)),
        }
    }
}

impl Dec<'_> {
    pub(super) fn varint(&mut self) -> anyhow::Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        anyhow::bail!("bad varint")
    }

    pub(super) fn times(&mut self, n: usize) -> anyhow::Result<Vec<i64>> {
        let mut last = 0i64;
        (0..n)
            .map(|_| {
                let z = self.varint()?;
                last = last.wrapping_add(((z >> 1) as i64) ^ -((z & 1) as i64));
                Ok(last)
            })
            .collect()
    }

    pub(super) fn column(&mut self, n: usize) -> anyhow::Result<Column> {
        let count = self.u32()? as usize;
        let values = (0..count).map(|_| Ok(self.str()?.to_string())).collect::<anyhow::Result<Vec<_>>>()?;
        let ids: Vec<u32> = match count {
            0..=256 => self.take(n)?.iter().map(|b| u32::from(*b)).collect(),
            257..=65536 => {
                self.take(n * 2)?.chunks_exact(2).map(|c| u32::from(u16::from_le_bytes([c[0], c[1]]))).collect()
            }
            _ => (0..n).map(|_| self.u32()).collect::<anyhow::Result<_>>()?,
        };
        anyhow::ensure!(ids.iter().all(|i| (*i as usize) < count), "a value index out of range");
        Ok(Column { values, ids })
    }
}

/// Appends an access batch as the log keeps it.
pub(in crate::stats) fn wire_access_into(e: &mut Enc, b: &AccessBatch) {
    e.0.reserve(b.len() * 48);
    e.times(&b.ts_ms);
    for c in &b.dims {
        e.column(c);
    }
    for col in &b.metrics {
        col.iter().for_each(|v| e.varint(*v));
    }
}

/// Appends a security batch as the log keeps it.
pub(in crate::stats) fn wire_security_into(e: &mut Enc, b: &SecurityBatch) {
    e.0.reserve(b.len() * 32);
    e.times(&b.ts_ms);
    for c in &b.dims {
        e.column(c);
    }
}

pub(in crate::stats) fn decode_access(mut d: Dec, n: usize) -> anyhow::Result<AccessBatch> {
    let ts_ms = d.times(n)?;
    let mut dims: [Column; 14] = Default::default();
    for c in &mut dims {
        *c = d.column(n)?;
    }
    let mut metrics: [Vec<u64>; METRICS] = Default::default();
    for col in &mut metrics {
        *col = (0..n).map(|_| d.varint()).collect::<anyhow::Result<_>>()?;
    }
    anyhow::ensure!(d.0.is_empty(), "bytes after the batch");
    Ok(AccessBatch { ts_ms, dims, metrics })
}

pub(in crate::stats) fn decode_security(mut d: Dec, n: usize) -> anyhow::Result<SecurityBatch> {
    let ts_ms = d.times(n)?;
    let mut dims: [Column; 14] = Default::default();
    for c in &mut dims {
        *c = d.column(n)?;
    }
    anyhow::ensure!(d.0.is_empty(), "bytes after the batch");
    Ok(SecurityBatch { ts_ms, dims })
}

/// Access records as logged by versions before batches were columnar.
pub(super) fn decode_access_rows(mut d: Dec, count: u32) -> anyhow::Result<AccessBatch> {
    let records = (0..count)
        .map(|_| {
            let ts_ms = d.i64()?;
            let mut dims: [String; 14] = Default::default();
            for v in &mut dims {
                *v = d.str()?.to_string();
            }
            let mut metrics = [0u64; METRICS];
            for m in &mut metrics {
                *m = d.u64()?;
            }
            Ok(AccessRecord { ts_ms, dims, metrics })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(AccessBatch::from_records(&records))
}

/// Security events as logged by versions before batches were columnar.
pub(super) fn decode_security_rows(mut d: Dec, count: u32) -> anyhow::Result<SecurityBatch> {
    let records = (0..count)
        .map(|_| {
            let ts_ms = d.i64()?;
            let mut dims: [String; 14] = Default::default();
            for _ in 0..d.u32()? {
                let id = d.u32()? as usize;
                let v = d.str()?.to_string();
                let at = DIMS.get(id).and_then(|name| EVENT_DIMS.iter().position(|n| n == name));
                dims[at.ok_or_else(|| anyhow::anyhow!("bad dimension id"))?] = v;
            }
            Ok(SecurityRecord { ts_ms, dims })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(SecurityBatch::from_records(&records))
}
