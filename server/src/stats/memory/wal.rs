//! The write-ahead log with group commit: batches of concurrent requests are appended to one queue, and
//! whichever request finds no write under way writes and syncs the whole queue at once, so one fsync makes
//! many batches durable. A batch counts as unapplied from its sync until its owner has applied it, and a
//! checkpoint waits for none to be queued or unapplied before it snapshots and empties the log.

use std::{
    fs::{File, OpenOptions},
    io::Write,
    path::PathBuf,
    sync::{Arc, Condvar, Mutex, MutexGuard},
};

use anyhow::Context;
use rustc_hash::FxHashMap;

use super::codec::Enc;
use crate::store::CustomerId;

/// The start of every batch in the log.
pub(super) const WAL_MAGIC: u32 = 0x4544_4757;

pub(super) fn hash64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

pub(super) struct Log {
    state: Mutex<State>,
    changed: Condvar,
}

pub(super) struct State {
    file: Arc<File>,
    path: PathBuf,
    /// Sequence number of the last batch queued.
    pub(super) seq: u64,
    /// Length of the log: everything before is whole, synced batches.
    pub(super) bytes: u64,
    /// A failed write could not be cut off: nothing more may be appended behind it until a restart.
    broken: bool,
    /// Frames queued and not yet written, and their sequence numbers.
    queue: Vec<u8>,
    queued: Vec<u64>,
    /// A request is writing and syncing what was queued before.
    writing: bool,
    /// Outcomes of written batches whose owners have not looked yet.
    done: FxHashMap<u64, Result<(), String>>,
    /// Batches synced and not yet applied.
    unapplied: usize,
    /// A checkpoint waits: no batch may be queued.
    checkpointing: bool,
}

/// A synced batch being applied: a checkpoint waits until it is dropped.
pub(super) struct Applying<'a>(&'a Log);

impl Applying<'_> {
    /// Leaves the batch counted as being applied after this is dropped: whoever applies it later calls
    /// [`Log::applied`].
    pub(super) fn detach(self) {
        std::mem::forget(self);
    }
}

impl Drop for Applying<'_> {
    fn drop(&mut self) {
        self.0.applied(1);
    }
}

impl Log {
    /// The log at `path`, `bytes` long, whose last batch is `seq`.
    pub(super) fn open(path: PathBuf, seq: u64, bytes: u64) -> anyhow::Result<Log> {
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Log {
            state: Mutex::new(State {
                file: Arc::new(file),
                path,
                seq,
                bytes,
                broken: false,
                queue: Vec::new(),
                queued: Vec::new(),
                writing: false,
                done: FxHashMap::default(),
                unapplied: 0,
                checkpointing: false,
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(state).unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes logged since the last checkpoint.
    pub(super) fn bytes(&self) -> u64 {
        self.lock().bytes
    }

    /// Logs a batch and returns once it is durable, registered as being applied. A failed write is cut off
    /// the log (every batch of that write fails), so that nothing appended later sits behind a torn batch.
    pub(super) fn commit(
        &self,
        kind: u8,
        customer: CustomerId,
        count: usize,
        payload: &[u8],
    ) -> anyhow::Result<Applying<'_>> {
        let mut state = self.lock();
        while state.checkpointing {
            state = self.wait(state);
        }
        anyhow::ensure!(!state.broken, "the statistics log could not be repaired after a failed write; restart");
        state.seq += 1;
        let seq = state.seq;
        let mut e = Enc(std::mem::take(&mut state.queue));
        e.u32(WAL_MAGIC);
        e.u64(seq);
        e.u8(kind);
        e.i64(customer);
        e.u32(count as u32);
        e.u64(payload.len() as u64);
        e.u64(hash64(payload));
        e.0.extend_from_slice(payload);
        state.queue = e.0;
        state.queued.push(seq);
        loop {
            if let Some(outcome) = state.done.remove(&seq) {
                return match outcome {
                    Ok(()) => Ok(Applying(self)),
                    Err(e) => Err(anyhow::anyhow!(e)),
                };
            }
            if state.writing {
                state = self.wait(state);
                continue;
            }
            // No write under way: this request writes everything queued, its own batch included.
            state.writing = true;
            let (queue, queued, file) =
                (std::mem::take(&mut state.queue), std::mem::take(&mut state.queued), state.file.clone());
            drop(state);
            let written = (&*file).write_all(&queue).context("writing the statistics log");
            let written = written.and_then(|()| file.sync_data().context("syncing the statistics log"));
            state = self.lock();
            match written {
                Ok(()) => {
                    state.bytes += queue.len() as u64;
                    state.unapplied += queued.len();
                    state.done.extend(queued.into_iter().map(|s| (s, Ok(()))));
                }
                Err(e) => {
                    if file.set_len(state.bytes).and_then(|()| file.sync_all()).is_err() {
                        state.broken = true;
                    }
                    let message = format!("{e:#}");
                    state.done.extend(queued.into_iter().map(|s| (s, Err(message.clone()))));
                }
            }
            state.writing = false;
            // Keep the buffer's capacity for the next write.
            if state.queue.is_empty() {
                let mut queue = queue;
                queue.clear();
                state.queue = queue;
            }
            self.changed.notify_all();
        }
    }

    /// Waits until every batch queued so far is written and applied, and holds new ones back until the
    /// returned guard is given to [`Log::emptied`] or dropped.
    /// A logged batch could not be applied: no batch is let in, and no checkpoint empties the log, until a
    /// restart replays it.
    pub(super) fn set_broken(&self) {
        self.lock().broken = true;
        self.changed.notify_all();
    }

    /// `n` batches logged and [detached](Applying::detach) are applied.
    pub(super) fn applied(&self, n: usize) {
        let mut state = self.lock();
        state.unapplied -= n;
        if state.unapplied == 0 {
            self.changed.notify_all();
        }
    }

    pub(super) fn quiesce(&self) -> Quiet<'_> {
        let mut state = self.lock();
        while state.checkpointing {
            state = self.wait(state);
        }
        state.checkpointing = true;
        while state.writing || !state.queued.is_empty() || state.unapplied > 0 {
            state = self.wait(state);
        }
        Quiet { log: self, state: Some(state) }
    }
}

/// The log with nothing queued or unapplied, and no batch let in.
pub(super) struct Quiet<'a> {
    log: &'a Log,
    state: Option<MutexGuard<'a, State>>,
}

impl Quiet<'_> {
    pub(super) fn seq(&self) -> u64 {
        self.state.as_ref().map_or(0, |s| s.seq)
    }

    /// Empties the log: everything in it is in a snapshot now.
    /// Whether the log must be kept for a restart (see [`Log::set_broken`]).
    pub(super) fn broken(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.broken)
    }

    pub(super) fn emptied(mut self) -> anyhow::Result<()> {
        let Some(state) = self.state.as_mut() else { return Ok(()) };
        state.file.set_len(0)?;
        state.file.sync_all()?;
        state.file = Arc::new(OpenOptions::new().append(true).open(&state.path)?);
        state.bytes = 0;
        Ok(())
    }
}

impl Drop for Quiet<'_> {
    fn drop(&mut self) {
        if let Some(mut state) = self.state.take() {
            state.checkpointing = false;
            drop(state);
            self.log.changed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn a_checkpoint_waits_for_synced_batches_to_be_applied_and_holds_new_ones_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::open(dir.path().join("wal.bin"), 0, 0).unwrap();
        let applying = log.commit(2, 1, 1, b"one").unwrap();
        assert_eq!(log.bytes(), 41 + 3);
        let quiet = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let q = log.quiesce();
                quiet.store(true, Ordering::SeqCst);
                assert_eq!(q.seq(), 1);
                std::thread::sleep(std::time::Duration::from_millis(100));
                q.emptied().unwrap();
            });
            std::thread::sleep(std::time::Duration::from_millis(100));
            assert!(!quiet.load(Ordering::SeqCst), "the checkpoint waited for the batch being applied");
            drop(applying);
            // Held back until the checkpoint is done, then logged after it.
            let next = log.commit(2, 1, 1, b"two").unwrap();
            assert!(quiet.load(Ordering::SeqCst));
            drop(next);
        });
        assert_eq!(log.bytes(), 41 + 3, "the log holds only the batch after the checkpoint");
        assert_eq!(std::fs::metadata(dir.path().join("wal.bin")).unwrap().len(), 44);
    }
}
