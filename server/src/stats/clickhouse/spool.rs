//! The spool: batches sent without a key are acknowledged once they are on this server's disk, and written to
//! ClickHouse in large groups by a thread of each lane (shard and source), so that ClickHouse gets one insert
//! of many requests' records instead of one per request or few.
//!
//! A lane appends each batch (its records, column by column: [`Body`]) to its open segment file, with group
//! commit: whichever request finds no write under way writes and syncs everything queued, and every request is
//! answered once its batch is synced. The lane's thread seals the open segment once it holds [`FULL`] records,
//! is [`AFTER`] old, or a query of a customer with batches in it waits for it ([`Lane::sync`]), and writes the sealed segments in order: a
//! segment's batches summed as one batch per customer ([`super::rows`]; in sequence order, so its rows are
//! those of the batches summed one by one and added), in one insert a table; a segment written is deleted. A
//! segment whose insert failed is tried again (after [`RETRY`]) batch by batch: each batch has an id, carried
//! by its raw rows and by a marker row in each rollup table and day, so the parts an attempt cut off left are
//! found and only the rest written ([`super::repair`]), as for a batch sent with a key. At start, the segments
//! left on disk (by a crash, or ClickHouse gone at shutdown) are read back and written the same way, before any
//! query of the lane is answered. A lane holds at most [`CAP`] bytes of batches not yet in ClickHouse: beyond,
//! requests are held back until there is room again, or answered 503 while ClickHouse fails.

use std::{
    collections::VecDeque,
    fs::{File, OpenOptions},
    io::Write as _,
    path::{Path, PathBuf},
    sync::{
        Arc, Condvar, Mutex, MutexGuard,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;

use rustc_hash::FxHashMap;

use super::{
    super::{
        AccessBatch, SecurityBatch,
        ingest::Column,
        memory::codec::{self, Dec, Enc},
    },
    Failure, QUERY_TIMEOUT,
    group::Rows,
    rows::{Marker, Origin},
    schema::Source,
    write::Writer,
};
use crate::store::CustomerId;

/// A segment of this many records is sealed and written at once.
pub(super) const FULL: usize = 250_000;
/// A segment is sealed and written at the latest this long after its first batch was synced.
pub(super) const AFTER: Duration = Duration::from_secs(1);
/// A segment whose insert failed is tried again after this long.
const RETRY: Duration = Duration::from_secs(1);
/// Bytes of rows a lane holds at most: beyond, a request waits for room while ClickHouse takes the segments,
/// and is answered 503 while it fails.
pub(super) const CAP: usize = 1 << 30;

/// The start of every batch in a segment.
const MAGIC: u32 = 0x4544_5350;
/// Magic, payload length, payload hash.
const FRAME_HEAD: usize = 4 + 8 + 8;

/// A request's records, as the spool keeps them: column by column, each text column's distinct values once.
#[derive(Clone, Copy)]
pub(super) enum Body<'a> {
    Access(&'a AccessBatch),
    Security(&'a SecurityBatch),
}

impl Body<'_> {
    pub(super) fn source(&self) -> Source {
        match self {
            Body::Access(_) => Source::Access,
            Body::Security(_) => Source::Security,
        }
    }

    fn records(&self) -> usize {
        match self {
            Body::Access(b) => b.len(),
            Body::Security(b) => b.len(),
        }
    }

    /// The records: their count, then the batch as the embedded engine's log keeps it (its columnar encoding,
    /// [`codec`]).
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.records() as u64).to_le_bytes());
        let mut e = Enc(std::mem::take(out));
        match self {
            Body::Access(b) => codec::wire_access_into(&mut e, b),
            Body::Security(b) => codec::wire_security_into(&mut e, b),
        }
        *out = e.0;
    }
}

/// A request's batch in the spool: its customer, id (never 0), first sequence number, first and last record
/// time, and records.
pub(super) struct Spooled<'a> {
    pub(super) customer: CustomerId,
    pub(super) id: u64,
    pub(super) seq: u64,
    pub(super) range: (i64, i64),
    pub(super) body: Body<'a>,
}

impl Spooled<'_> {
    /// Appends the batch's frame to `out`: magic, payload length and hash, payload.
    fn encode(&self, out: &mut Vec<u8>) {
        let head = out.len();
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&[0; 16]);
        out.extend_from_slice(&self.customer.to_le_bytes());
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.range.0.to_le_bytes());
        out.extend_from_slice(&self.range.1.to_le_bytes());
        self.body.encode(out);
        let payload = head + FRAME_HEAD;
        let (len, sum) = ((out.len() - payload) as u64, hash(&out[payload..]));
        out[head + 4..head + 12].copy_from_slice(&len.to_le_bytes());
        out[head + 12..payload].copy_from_slice(&sum.to_le_bytes());
    }
}

/// A batch as a segment holds it.
struct Frame<'a> {
    customer: CustomerId,
    id: u64,
    seq: u64,
    range: (i64, i64),
    records: usize,
    /// The record count and records ([`Body::encode`]).
    body: &'a [u8],
}

impl<'a> Frame<'a> {
    fn parse(payload: &'a [u8]) -> Option<Frame<'a>> {
        let mut r = Reader(payload);
        let (customer, id, seq, from, to) = (r.u64()? as i64, r.u64()?, r.u64()?, r.u64()? as i64, r.u64()? as i64);
        let body = r.0;
        let records = usize::try_from(Reader(body).u64()?).ok()?;
        (id != 0 && records > 0).then_some(Frame { customer, id, seq, range: (from, to), records, body })
    }
}

/// The records of several batches of a customer as one batch: each text column's values numbered across them
/// (each value looked up once a batch, where [`AccessBatch::append`] indexes every value so far at each call).
#[derive(Default)]
struct Merged {
    ts: Vec<i64>,
    dims: [MergedColumn; 14],
    metrics: [Vec<u64>; 8],
}

#[derive(Default)]
struct MergedColumn {
    index: FxHashMap<String, u32>,
    column: Column,
}

impl Merged {
    /// Appends a frame's records ([`Body::encode`]; an error: the body is not whole, or not of `source`).
    fn add(&mut self, body: &[u8], source: Source) -> anyhow::Result<()> {
        let mut r = Reader(body);
        let n = r.u64().and_then(|n| usize::try_from(n).ok()).context("no record count")?;
        let (ts, dims, metrics) = match source {
            Source::Access => {
                let b = codec::decode_access(Dec(r.0), n)?;
                (b.ts_ms, b.dims, Some(b.metrics))
            }
            Source::Security => {
                let b = codec::decode_security(Dec(r.0), n)?;
                (b.ts_ms, b.dims, None)
            }
        };
        self.ts.extend(ts);
        for (merged, column) in self.dims.iter_mut().zip(dims) {
            let ids: Vec<u32> = column
                .values
                .into_iter()
                .map(|v| {
                    let next = merged.column.values.len() as u32;
                    *merged.index.entry(v).or_insert_with_key(|v| {
                        merged.column.values.push(v.clone());
                        next
                    })
                })
                .collect();
            merged.column.ids.extend(column.ids.iter().map(|i| ids[*i as usize]));
        }
        for (to, from) in self.metrics.iter_mut().zip(metrics.into_iter().flatten()) {
            to.extend(from);
        }
        Ok(())
    }

    fn access(self) -> AccessBatch {
        AccessBatch { ts_ms: self.ts, dims: self.dims.map(|d| d.column), metrics: self.metrics }
    }

    fn security(self) -> SecurityBatch {
        SecurityBatch { ts_ms: self.ts, dims: self.dims.map(|d| d.column) }
    }
}

/// The rows of `frames` of `source`: each customer's batches summed together (in sequence order), the
/// customers one after the other (in order: so are their rows).
fn rows_of(writer: &Writer, source: Source, frames: &mut [Frame]) -> Result<Rows, Failure> {
    frames.sort_unstable_by_key(|f| (f.customer, f.seq));
    let mut out = Rows::default();
    for customer in frames.chunk_by(|a, b| a.customer == b.customer) {
        let (mut merged, mut seqs, mut ids, mut markers) = (Merged::default(), Vec::new(), Vec::new(), Vec::new());
        for frame in customer {
            let before = merged.ts.len();
            merged.add(frame.body, source).map_err(|e| {
                Failure::Internal(e.context("a batch in the statistics spool cannot be read (segment damaged)"))
            })?;
            let n = merged.ts.len() - before;
            seqs.extend(frame.seq..frame.seq + n as u64);
            ids.extend(std::iter::repeat_n(frame.id, n));
            markers.push(Marker::of(frame.id, frame.seq, &merged.ts[before..]));
        }
        let origin = Origin { seqs: &seqs, ids: &ids, markers: &markers };
        let c = customer[0].customer;
        let rows = match source {
            Source::Access => writer.access_rows(c, &merged.access(), &origin),
            Source::Security => writer.security_rows(c, &merged.security(), &origin),
        };
        out.dict.extend_from_slice(&rows.dict);
        out.raw.extend_from_slice(&rows.raw);
        if out.rollups.len() < rows.rollups.len() {
            out.rollups.resize_with(rows.rollups.len(), Vec::new);
        }
        for (to, from) in out.rollups.iter_mut().zip(&rows.rollups) {
            to.extend_from_slice(from);
        }
    }
    Ok(out)
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_le_bytes(*head))
    }
}

/// A frame's checksum: SipHash-1-3 of its payload.
fn hash(bytes: &[u8]) -> u64 {
    use std::hash::Hasher as _;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0x7370_6f6f_6c2d_6564, 0x6765_2d63_6f6e_736f);
    h.write(bytes);
    h.finish()
}

/// The batches of a segment's bytes, up to the first frame that is not whole (a write cut off by a crash:
/// never acknowledged).
fn frames(bytes: &[u8]) -> Vec<Frame<'_>> {
    let mut rest = bytes;
    let mut out = Vec::new();
    while let Some((head, body)) = rest.split_first_chunk::<FRAME_HEAD>() {
        let magic = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let mut n = [0u8; 8];
        n.copy_from_slice(&head[4..12]);
        let mut h = [0u8; 8];
        h.copy_from_slice(&head[12..20]);
        let Some(len) = usize::try_from(u64::from_le_bytes(n)).ok() else { break };
        let Some((payload, after)) = body.split_at_checked(len) else { break };
        if magic != MAGIC || hash(payload) != u64::from_le_bytes(h) {
            break;
        }
        let Some(frame) = Frame::parse(payload) else { break };
        out.push(frame);
        rest = after;
    }
    out
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// A sealed segment, written to ClickHouse in one insert a table.
struct Sealed {
    number: u64,
    path: PathBuf,
    /// Its batches' records and bytes (frames).
    records: usize,
    bytes: usize,
    /// Attempts that failed (or a segment found at start): the next looks for what they left.
    attempts: u32,
}

#[derive(Default)]
struct State {
    /// The open segment's number, and its file once it has one.
    number: u64,
    file: Option<Arc<File>>,
    /// Bytes of whole, synced batches in the open segment.
    len: u64,
    /// Frames queued and not yet written, and their requests (ticket, customer, records, bytes).
    queue: Vec<u8>,
    queued: Vec<(u64, CustomerId, usize, usize)>,
    next_ticket: u64,
    /// The segment a write under way goes to.
    writing: Option<u64>,
    /// Outcomes of written batches whose requests have not looked yet.
    done: Vec<(u64, Result<(), String>)>,
    /// A failed write could not be cut off the segment: nothing more may be appended until a restart.
    broken: bool,
    /// The open segment's synced records, and when its first batch was synced.
    open_records: usize,
    open_since: Option<Instant>,
    /// Segments sealed and not yet written, in order.
    sealed: VecDeque<Sealed>,
    /// The segment being written (taken from `sealed`).
    in_flight: Option<u64>,
    /// Every segment up to this number is in ClickHouse.
    written: u64,
    /// Bytes of batches not yet in ClickHouse (queued, open, sealed, in flight).
    bytes: usize,
    /// The last segment holding a batch of each customer, until it is written.
    pending: FxHashMap<CustomerId, u64>,
    /// Queries wait for the open segment.
    sync: bool,
    /// Inserts failed so far, and the last one's message (empty once one succeeds).
    failures: u64,
    failure: String,
    /// No new attempt before this.
    retry_at: Option<Instant>,
    stop: bool,
}

/// One shard's spool of one source.
pub(super) struct Lane {
    dir: PathBuf,
    name: String,
    shard: usize,
    source: Source,
    state: Mutex<State>,
    changed: Condvar,
}

impl Lane {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn segment_path(&self, number: u64) -> PathBuf {
        self.dir.join(format!("{}-{number:020}.spool", self.name))
    }

    /// The lane of `shard` and `source` spooling in `dir`, with the segments a previous run left there, to be
    /// written first.
    fn open(dir: &Path, shard: usize, source: Source) -> anyhow::Result<Lane> {
        let name = format!("{shard}-{}", source.raw());
        let mut found: Vec<(u64, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            let Some(file) = path.file_name().and_then(|f| f.to_str()) else { continue };
            let Some(number) = file
                .strip_prefix(&name)
                .and_then(|f| f.strip_prefix('-'))
                .and_then(|f| f.strip_suffix(".spool"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            found.push((number, path));
        }
        found.sort_unstable();
        let mut state = State::default();
        for (number, path) in found {
            let bytes = read(&path)?;
            let frames = frames(&bytes);
            state.number = number;
            if frames.is_empty() {
                std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
                continue;
            }
            let records = frames.iter().map(|f| f.records).sum();
            for frame in &frames {
                state.pending.insert(frame.customer, number);
            }
            state.bytes += bytes.len();
            state.sealed.push_back(Sealed { number, path, records, bytes: bytes.len(), attempts: 1 });
        }
        if let Some(first) = state.sealed.front() {
            state.written = first.number - 1;
            let records: usize = state.sealed.iter().map(|s| s.records).sum();
            tracing::warn!(
                lane = %name,
                segments = state.sealed.len(),
                records,
                "statistics: batches acknowledged before the last stop are not all in ClickHouse yet; writing them"
            );
        } else {
            state.written = state.number;
        }
        state.number += 1;
        Ok(Lane { dir: dir.to_owned(), name, shard, source, state: Mutex::new(state), changed: Condvar::new() })
    }

    /// Appends a batch to the open segment and returns once it is synced to disk.
    pub(super) fn append(&self, batch: &Spooled) -> Result<(), Failure> {
        let mut frame = Vec::new();
        batch.encode(&mut frame);
        let records = batch.body.records();
        let size = frame.len();
        let mut state = self.lock();
        if state.broken {
            return Err(Failure::Internal(anyhow::anyhow!(
                "the statistics spool could not be repaired after a failed write; restart the server"
            )));
        }
        // Full: while ClickHouse takes the segments, wait for room; while it fails, refuse.
        let deadline = Instant::now() + QUERY_TIMEOUT;
        while state.bytes > 0 && state.bytes + size > CAP {
            let left = deadline.saturating_duration_since(Instant::now());
            if !state.failure.is_empty() || left.is_zero() {
                let waiting = if state.failure.is_empty() { String::new() } else { format!(": {}", state.failure) };
                return Err(Failure::Unavailable(format!(
                    "This server holds {} MiB of statistics not yet written to the statistics database{waiting}; try \
                     again shortly.",
                    state.bytes >> 20
                )));
            }
            state = self.changed.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.bytes += size;
        state.queue.extend_from_slice(&frame);
        drop(frame);
        state.queued.push((ticket, batch.customer, records, size));
        loop {
            if let Some(at) = state.done.iter().position(|(t, _)| *t == ticket) {
                return state.done.swap_remove(at).1.map_err(|e| {
                    Failure::Unavailable(format!("The statistics spool could not be written ({e}); try again shortly."))
                });
            }
            if state.writing.is_some() {
                state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // No write under way: this request writes everything queued, its own batch included.
            let number = state.number;
            let file = match &state.file {
                Some(file) => Ok(file.clone()),
                None => self.create(number).map(Arc::new),
            };
            let file = match file {
                Ok(file) => file,
                Err(e) => {
                    let queued = std::mem::take(&mut state.queued);
                    state.queue.clear();
                    self.fail(&mut state, queued, &format!("{e:#}"));
                    continue;
                }
            };
            state.file = Some(file.clone());
            state.writing = Some(number);
            let (queue, queued) = (std::mem::take(&mut state.queue), std::mem::take(&mut state.queued));
            drop(state);
            let written = (&*file).write_all(&queue).context("writing the statistics spool");
            let written = written.and_then(|()| file.sync_data().context("syncing the statistics spool"));
            state = self.lock();
            state.writing = None;
            match written {
                Ok(()) => {
                    let records: usize = queued.iter().map(|(_, _, r, _)| r).sum();
                    state.done.extend(queued.iter().map(|(t, _, _, _)| (*t, Ok(()))));
                    for (_, customer, _, _) in &queued {
                        state.pending.insert(*customer, number);
                    }
                    if state.number == number {
                        state.len += queue.len() as u64;
                        state.open_records += records;
                        state.open_since.get_or_insert_with(Instant::now);
                        // Sealed here too while the thread writes another: a segment stays about FULL records.
                        if state.open_records >= FULL {
                            self.seal(&mut state);
                        }
                    } else if let Some(sealed) = state.sealed.iter_mut().find(|s| s.number == number) {
                        // Sealed while this write was under way: its thread waits for it.
                        sealed.records += records;
                        sealed.bytes += queue.len();
                    }
                }
                Err(e) => {
                    // Cut off what was written, so that nothing appended later sits behind a torn batch. (A segment
                    // sealed meanwhile takes no more batches: its torn end is where reading it stops.)
                    if state.number == number && file.set_len(state.len).and_then(|()| file.sync_all()).is_err() {
                        state.broken = true;
                    }
                    self.fail(&mut state, queued, &format!("{e:#}"));
                }
            }
            self.changed.notify_all();
        }
    }

    /// Answers the requests of `queued` with `message`; their batches are not kept.
    fn fail(&self, state: &mut State, queued: Vec<(u64, CustomerId, usize, usize)>, message: &str) {
        for (ticket, _, _, size) in queued {
            state.bytes -= size;
            state.done.push((ticket, Err(message.to_owned())));
        }
        self.changed.notify_all();
    }

    /// Creates segment `number`'s file, and syncs the folder so that the file survives a crash.
    fn create(&self, number: u64) -> anyhow::Result<File> {
        let path = self.segment_path(number);
        let mut options = OpenOptions::new();
        options.create_new(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).with_context(|| format!("creating {}", path.display()))?;
        File::open(&self.dir).and_then(|d| d.sync_all()).with_context(|| format!("syncing {}", self.dir.display()))?;
        Ok(file)
    }

    /// Seals the open segment: the next batches go to a new one.
    fn seal(&self, state: &mut State) {
        let number = state.number;
        let (records, bytes) = (state.open_records, state.len as usize);
        state.sealed.push_back(Sealed { number, path: self.segment_path(number), records, bytes, attempts: 0 });
        state.number += 1;
        state.file = None;
        state.len = 0;
        state.open_records = 0;
        state.open_since = None;
        state.sync = false;
    }

    /// Waits until every batch of `customer` (all: None) synced before the call is in ClickHouse; fails when
    /// an attempt to write them fails meanwhile, or after the query timeout. Other customers' batches are not
    /// waited for (only written along, when they share a segment).
    pub(super) fn sync(&self, customer: Option<CustomerId>) -> Result<(), Failure> {
        let mut state = self.lock();
        let last = match customer {
            Some(c) => state.pending.get(&c).copied(),
            None if state.open_records > 0 => Some(state.number),
            None => state.sealed.back().map(|s| s.number).or(state.in_flight),
        };
        let target = match last {
            Some(n) if n > state.written => n,
            _ => return Ok(()),
        };
        if target == state.number {
            state.sync = true;
        }
        state.retry_at = None;
        let (failures, deadline) = (state.failures, Instant::now() + QUERY_TIMEOUT);
        self.changed.notify_all();
        loop {
            if state.written >= target {
                return Ok(());
            }
            if state.failures > failures {
                return Err(Failure::Unavailable(state.failure.clone()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || state.stop {
                return Err(Failure::Unavailable(
                    "The statistics database did not take the latest records in time; try again shortly.".into(),
                ));
            }
            state = self.changed.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Bytes of batches not yet in ClickHouse.
    fn held(&self) -> usize {
        self.lock().bytes
    }

    /// The lane's thread: seals the open segment when it is due and writes the sealed ones in order, until
    /// [`Spool::stop`] (a segment being written is finished first; the rest stays on disk).
    fn run(&self, writer: &Writer) {
        let mut state = self.lock();
        loop {
            if state.stop {
                return;
            }
            let now = Instant::now();
            let due = state.open_since.is_some_and(|t| now >= t + AFTER);
            if state.open_records > 0 && (state.sync || state.open_records >= FULL || due) {
                self.seal(&mut state);
            }
            let ready = state.retry_at.is_none_or(|t| now >= t);
            let front = state.sealed.front().map(|s| s.number);
            if let (Some(number), true) = (front, ready)
                && state.writing != Some(number)
            {
                let Some(mut sealed) = state.sealed.pop_front() else { continue };
                state.in_flight = Some(number);
                drop(state);
                let outcome = self.write(writer, &sealed);
                let removed = outcome.as_ref().ok().map(|()| std::fs::remove_file(&sealed.path));
                state = self.lock();
                state.in_flight = None;
                match outcome {
                    Ok(()) => {
                        if let Some(Err(e)) = removed {
                            tracing::error!(path = %sealed.path.display(), "statistics: a written spool segment stays: {e}");
                        }
                        state.bytes -= sealed.bytes;
                        state.written = number;
                        state.pending.retain(|_, last| *last > number);
                        state.retry_at = None;
                        state.failure.clear();
                    }
                    Err(e) => {
                        let message = match e {
                            Failure::Unavailable(m) => m,
                            Failure::Internal(e) => format!("{e:#}"),
                        };
                        tracing::warn!(lane = %self.name, segment = number, "statistics: writing the spool failed: {message}");
                        sealed.attempts += 1;
                        state.sealed.push_front(sealed);
                        state.failures += 1;
                        state.failure = message;
                        state.retry_at = Some(Instant::now() + RETRY);
                    }
                }
                self.changed.notify_all();
                continue;
            }
            // Nothing to do now: wait for a batch, a query, the open segment's age or the next attempt.
            let mut wake = now + AFTER;
            if let Some(t) = state.open_since {
                wake = wake.min(t + AFTER);
            }
            if let (Some(t), Some(_)) = (state.retry_at, front) {
                wake = wake.min(t);
            }
            let wait = wake.saturating_duration_since(now).max(Duration::from_millis(1));
            state = self.changed.wait_timeout(state, wait).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Writes a sealed segment: at once, or, after an attempt that failed, each batch as its traces in
    /// ClickHouse call for (nothing of it there: with the others; some: the rest, [`Writer::repair`]).
    fn write(&self, writer: &Writer, sealed: &Sealed) -> Result<(), Failure> {
        let bytes = read(&sealed.path).map_err(Failure::Internal)?;
        let mut fresh = frames(&bytes);
        if sealed.attempts > 0 {
            let mut left = Vec::with_capacity(fresh.len());
            for frame in fresh {
                let landed = writer.landed(frame.customer, self.source, frame.id, frame.range)?;
                if landed.is_empty() {
                    left.push(frame);
                } else {
                    let (customer, id) = (frame.customer, frame.id);
                    let rows = rows_of(writer, self.source, &mut [frame])?;
                    writer.repair(customer, self.source, id, rows, &landed)?;
                }
            }
            fresh = left;
        }
        if fresh.is_empty() {
            return Ok(());
        }
        let rows = rows_of(writer, self.source, &mut fresh)?;
        drop(fresh);
        drop(bytes);
        writer.write_group(self.shard, self.source, rows, false)
    }
}

/// Every lane's spool, and their threads.
pub(super) struct Spool {
    /// By shard, then source.
    lanes: Vec<[Arc<Lane>; 2]>,
    threads: Vec<std::thread::JoinHandle<()>>,
    stopped: AtomicBool,
}

impl Spool {
    /// The spool in `dir` (created if missing) for `shards` shards, with a thread a lane writing through
    /// `writer`; segments left by a previous run are written first.
    pub(super) fn open(dir: &Path, shards: usize, writer: Arc<Writer>) -> anyhow::Result<Spool> {
        crate::private::dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut lanes = Vec::with_capacity(shards);
        for shard in 0..shards {
            lanes.push([
                Arc::new(Lane::open(dir, shard, Source::Access)?),
                Arc::new(Lane::open(dir, shard, Source::Security)?),
            ]);
        }
        let mut threads = Vec::new();
        for lane in lanes.iter().flatten() {
            let (lane, writer) = (lane.clone(), writer.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("spool-{}", lane.name))
                    .spawn(move || lane.run(&writer))
                    .context("starting a spool thread")?,
            );
        }
        Ok(Spool { lanes, threads, stopped: AtomicBool::new(false) })
    }

    pub(super) fn lane(&self, shard: usize, source: Source) -> &Lane {
        &self.lanes[shard][source as usize]
    }

    /// Waits until every batch of `customer` (on `shard`) synced before the call is in ClickHouse.
    pub(super) fn sync_customer(&self, shard: usize, customer: CustomerId) -> Result<(), Failure> {
        for lane in &self.lanes[shard] {
            lane.sync(Some(customer))?;
        }
        Ok(())
    }

    /// Waits until every batch synced before the call is in ClickHouse.
    pub(super) fn sync_all(&self) -> Result<(), Failure> {
        for lane in self.lanes.iter().flatten() {
            lane.sync(None)?;
        }
        Ok(())
    }

    /// Bytes of rows not yet in ClickHouse.
    pub(super) fn held(&self) -> usize {
        self.lanes.iter().flatten().map(|l| l.held()).sum()
    }

    /// Stops the threads (each finishes the segment it is writing); what is left stays on disk for the next
    /// start.
    pub(super) fn stop(&mut self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        for lane in self.lanes.iter().flatten() {
            lane.lock().stop = true;
            lane.changed.notify_all();
        }
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        super::super::{AccessRecord, SecurityRecord},
        *,
    };

    fn access(n: usize, domain: &str) -> AccessBatch {
        let records: Vec<AccessRecord> = (0..n)
            .map(|i| {
                let mut dims: [String; 14] = Default::default();
                dims[7] = if i % 2 == 0 { domain.to_owned() } else { "shared.example".to_owned() };
                dims[13] = format!("/{i}");
                AccessRecord { ts_ms: 1_000 + i as i64, dims, metrics: [i as u64; 8] }
            })
            .collect();
        AccessBatch::from_records(&records)
    }

    fn frame_of(id: u64, batch: &AccessBatch) -> Vec<u8> {
        let mut out = Vec::new();
        Spooled { customer: 7, id, seq: id << 20, range: (1, 2), body: Body::Access(batch) }.encode(&mut out);
        out
    }

    #[test]
    fn segments_read_back_whole_batches_and_stop_at_a_torn_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0-access-00000000000000000001.spool");
        let (a, b, c) = (access(3, "a.example"), access(5, "b.example"), access(9, "c.example"));
        let mut bytes = frame_of(1, &a);
        bytes.extend(frame_of(2, &b));
        let whole = bytes.len();
        bytes.extend(frame_of(3, &c));
        // Cut off inside the third batch, as a crash while it was written leaves it.
        std::fs::write(&path, &bytes[..bytes.len() - 4]).unwrap();
        let read = read(&path).unwrap();
        let found = frames(&read);
        assert_eq!(
            found.iter().map(|f| (f.id, f.seq, f.records)).collect::<Vec<_>>(),
            vec![(1, 1 << 20, 3), (2, 2 << 20, 5)]
        );
        // Their records merged are the two batches' records, values numbered across both.
        let mut merged = Merged::default();
        for f in &found {
            merged.add(f.body, Source::Access).unwrap();
        }
        let merged = merged.access();
        let mut expected = a.clone();
        expected.append(b.clone());
        assert_eq!(merged, expected);
        assert_eq!(merged.dims[7].values, ["a.example", "shared.example", "b.example"]);
        // A body of the other source is not read as one.
        assert!(Merged::default().add(found[0].body, Source::Security).is_err());
        // A damaged byte ends the segment there too.
        let mut damaged = bytes[..whole].to_vec();
        damaged[whole - 1] ^= 1;
        assert_eq!(frames(&damaged).len(), 1);

        // A lane finds the segment, to be written first (looking for what an attempt left), and numbers its
        // next segment after it.
        std::fs::write(&path, &bytes[..whole]).unwrap();
        std::fs::write(dir.path().join("0-access-00000000000000000002.spool"), b"").unwrap();
        let lane = Lane::open(dir.path(), 0, Source::Access).unwrap();
        let state = lane.lock();
        assert_eq!(state.sealed.len(), 1);
        let sealed = &state.sealed[0];
        assert_eq!((sealed.number, sealed.records, sealed.bytes, sealed.attempts), (1, 8, whole, 1));
        assert_eq!((state.written, state.number, state.bytes), (0, 3, whole));
        assert!(!dir.path().join("0-access-00000000000000000002.spool").exists(), "an empty segment is removed");
    }

    #[test]
    fn security_events_are_kept_without_metrics() {
        let records: Vec<SecurityRecord> = (0..4)
            .map(|i| {
                let mut dims: [String; 14] = Default::default();
                dims[0] = format!("rule {}", i % 2);
                SecurityRecord { ts_ms: i, dims }
            })
            .collect();
        let batch = SecurityBatch::from_records(&records);
        let mut out = Vec::new();
        Spooled { customer: 1, id: 9, seq: 5, range: (0, 3), body: Body::Security(&batch) }.encode(&mut out);
        let found = frames(&out);
        let mut merged = Merged::default();
        merged.add(found[0].body, Source::Security).unwrap();
        assert_eq!(merged.security(), batch);
    }

    #[test]
    fn batches_are_synced_to_the_open_segment_and_sealed_together() {
        let dir = tempfile::tempdir().unwrap();
        let lane = Lane::open(dir.path(), 1, Source::Access).unwrap();
        let batches: Vec<AccessBatch> = (1..=8).map(|n| access(n, "x.example")).collect();
        std::thread::scope(|s| {
            for (id, batch) in (1..).zip(&batches) {
                let lane = &lane;
                s.spawn(move || {
                    let spooled = Spooled { customer: 7, id, seq: id, range: (1, 2), body: Body::Access(batch) };
                    assert!(lane.append(&spooled).is_ok());
                });
            }
        });
        // Another customer's query waits for none of them (no thread writes this lane here).
        let started = Instant::now();
        assert!(lane.sync(Some(8)).is_ok());
        assert!(started.elapsed() < Duration::from_secs(1));
        let mut state = lane.lock();
        assert_eq!(state.pending.get(&7), Some(&1));
        assert_eq!(state.open_records, 36);
        let path = lane.segment_path(1);
        let bytes = read(&path).unwrap();
        let mut ids: Vec<u64> = frames(&bytes).iter().map(|f| f.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (1..=8).collect::<Vec<_>>(), "every batch acknowledged is on disk");
        assert_eq!(state.bytes, bytes.len());
        lane.seal(&mut state);
        assert_eq!((state.sealed.len(), state.sealed[0].records, state.number, state.open_records), (1, 36, 2, 0));
        drop(state);
        let spooled = Spooled { customer: 7, id: 9, seq: 9, range: (1, 2), body: Body::Access(&batches[0]) };
        assert!(lane.append(&spooled).is_ok());
        assert!(lane.segment_path(2).exists(), "the next batch opens the next segment");
    }
}
