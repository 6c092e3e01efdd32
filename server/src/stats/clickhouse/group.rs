//! Batches written together: the batches of concurrent requests to one shard and source go to ClickHouse in one
//! insert (one part a day in the raw table and in each rollup table, instead of one per request; their rollup
//! rows summed together, [`super::order`]), and each request is answered once that insert is stored. The first
//! request of a group writes it: while other requests are on their way to the lane ([`Lane::coming`]: their
//! batches being prepared), it waits for them, up to [`WINDOW`] and unless the group already holds [`FULL`]
//! records; requests arriving while a group is written form the next one. A request alone is written at once.

use std::{
    sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock},
    time::{Duration, Instant},
};

use super::Failure;

/// How long the writer of a group of fewer than [`FULL`] records waits for requests on their way.
pub(super) const WINDOW: Duration = Duration::from_millis(100);
/// A group of this many records is written without waiting.
pub(super) const FULL: usize = 65_536;

/// How an insert ended, for every request of its group.
#[derive(Clone)]
enum Outcome {
    Stored,
    Unavailable(String),
    Internal(String),
}

/// One request's place in a group: set once its group is written.
type Ticket = Arc<OnceLock<Outcome>>;

/// What a batch writes (RowBinary rows): its dictionary rows, its raw rows and its rows of each rollup table
/// (by table index; absent or empty: none).
#[derive(Default)]
pub(super) struct Rows {
    pub(super) dict: Vec<u8>,
    pub(super) raw: Vec<u8>,
    pub(super) rollups: Vec<Vec<u8>>,
}

impl Rows {
    /// Appends another batch's rows.
    fn append(&mut self, more: Rows) {
        append(&mut self.dict, more.dict);
        append(&mut self.raw, more.raw);
        if self.rollups.len() < more.rollups.len() {
            self.rollups.resize_with(more.rollups.len(), Vec::new);
        }
        for (to, more) in self.rollups.iter_mut().zip(more.rollups) {
            append(to, more);
        }
    }
}

/// The batches waiting to be written together.
#[derive(Default)]
pub(super) struct Group {
    pub(super) rows: Rows,
    /// How many batches the rows are of.
    pub(super) batches: usize,
    records: usize,
    tickets: Vec<Ticket>,
}

#[derive(Default)]
struct State {
    group: Group,
    /// A group is being gathered or written.
    writing: bool,
    /// Requests on their way ([`Coming`]).
    coming: usize,
}

/// A request on its way to a lane (its batch being prepared): the writer of a group waits for it. Given to
/// [`Lane::insert`]; dropped without, it no longer counts.
pub(super) struct Coming<'a>(Option<&'a Lane>);

impl Drop for Coming<'_> {
    fn drop(&mut self) {
        if let Some(lane) = self.0.take() {
            lane.lock().coming -= 1;
            lane.changed.notify_all();
        }
    }
}

/// The inserts of one shard and source.
#[derive(Default)]
pub(super) struct Lane {
    state: Mutex<State>,
    changed: Condvar,
}

impl Lane {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells the lane a request is on its way, until the returned guard is given to [`Lane::insert`] or
    /// dropped.
    pub(super) fn coming(&self) -> Coming<'_> {
        self.lock().coming += 1;
        Coming(Some(self))
    }

    /// Adds a batch's rows (of `records` records) to the next group and returns once that group is stored, or
    /// its insert failed; `write` writes a group (called on this thread if this request is the one to write
    /// it).
    pub(super) fn insert(
        &self,
        mut coming: Coming<'_>,
        rows: Rows,
        records: usize,
        write: impl Fn(Group) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let ticket: Ticket = Arc::default();
        let mut state = self.lock();
        if coming.0.take().is_some() {
            state.coming -= 1;
        }
        state.group.rows.append(rows);
        state.group.batches += 1;
        state.group.records += records;
        state.group.tickets.push(ticket.clone());
        self.changed.notify_all();
        loop {
            if let Some(outcome) = ticket.get() {
                return match outcome.clone() {
                    Outcome::Stored => Ok(()),
                    Outcome::Unavailable(m) => Err(Failure::Unavailable(m)),
                    Outcome::Internal(m) => Err(Failure::Internal(anyhow::anyhow!(m))),
                };
            }
            if !state.writing {
                // This request's batch is in the group waiting (the one written last had an outcome for it).
                state.writing = true;
                let deadline = Instant::now() + WINDOW;
                while state.group.records < FULL && state.coming > 0 {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    state = self.changed.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0;
                }
                let mut group = std::mem::take(&mut state.group);
                let tickets = std::mem::take(&mut group.tickets);
                drop(state);
                let outcome = match write(group) {
                    Ok(()) => Outcome::Stored,
                    Err(Failure::Unavailable(m)) => Outcome::Unavailable(m),
                    Err(Failure::Internal(e)) => Outcome::Internal(format!("{e:#}")),
                };
                for t in tickets {
                    let _ = t.set(outcome.clone());
                }
                state = self.lock();
                state.writing = false;
                self.changed.notify_all();
                continue;
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Appends `more` to `to`, taking it whole when `to` is empty (a request alone in its group: no copy).
fn append(to: &mut Vec<u8>, more: Vec<u8>) {
    if to.is_empty() {
        *to = more;
    } else {
        to.extend_from_slice(&more);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn concurrent_batches_are_written_together_and_each_caller_gets_its_groups_outcome() {
        let lane = Lane::default();
        let writes = AtomicUsize::new(0);
        let written = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            // 20 requests on their way at once (their batches being prepared).
            let coming: Vec<Coming> = (0..20).map(|_| lane.coming()).collect();
            for (i, coming) in (0..20u8).zip(coming) {
                let (lane, writes, written) = (&lane, &writes, &written);
                s.spawn(move || {
                    std::thread::sleep(Duration::from_millis(u64::from(i)));
                    let rows = Rows { dict: vec![i], raw: vec![i; 3], rollups: vec![vec![], vec![i]] };
                    let r = lane.insert(coming, rows, 10, |g| {
                        writes.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        assert_eq!(g.rows.dict.len() * 3, g.rows.raw.len());
                        assert_eq!(g.rows.dict.len(), g.batches);
                        assert_eq!((g.rows.rollups[0].len(), g.rows.rollups[1].len()), (0, g.rows.dict.len()));
                        written.lock().unwrap().extend(g.rows.raw);
                        Ok(())
                    });
                    assert!(r.is_ok());
                });
            }
        });
        let mut rows = written.into_inner().unwrap();
        rows.sort_unstable();
        assert_eq!(rows, (0..20u8).flat_map(|i| [i; 3]).collect::<Vec<_>>(), "every batch once");
        assert!(writes.load(Ordering::SeqCst) <= 2, "{} inserts for 20 batches", writes.load(Ordering::SeqCst));

        // A failed insert fails every request of its group, and the next group is written again.
        let failing = Lane::default();
        let raw = |r: Vec<u8>| Rows { raw: r, ..Rows::default() };
        let err = failing.insert(failing.coming(), raw(vec![1]), 1, |_| Err(Failure::Unavailable("gone".into())));
        assert!(matches!(err, Err(Failure::Unavailable(m)) if m == "gone"));
        let ok =
            failing.insert(failing.coming(), raw(vec![2]), FULL, |g| if g.rows.raw == [2] { Ok(()) } else { panic!() });
        assert!(ok.is_ok());
    }

    #[test]
    fn a_request_alone_is_written_at_once_and_one_on_its_way_is_waited_for() {
        let lane = Lane::default();
        let raw = |r: Vec<u8>| Rows { raw: r, ..Rows::default() };
        // Alone (another request announced itself and went elsewhere: its guard dropped).
        drop(lane.coming());
        let start = Instant::now();
        assert!(
            lane.insert(lane.coming(), raw(vec![1]), 1, |g| if g.batches == 1 { Ok(()) } else { panic!() }).is_ok()
        );
        assert!(start.elapsed() < WINDOW, "waited {:?}", start.elapsed());

        // Another on its way 30 ms behind: one insert of both.
        let writes = AtomicUsize::new(0);
        let write = |g: Group| {
            writes.fetch_add(1, Ordering::SeqCst);
            assert_eq!((g.batches, g.rows.raw.len()), (2, 2));
            Ok(())
        };
        std::thread::scope(|s| {
            let (first, second) = (lane.coming(), lane.coming());
            let (lane, write) = (&lane, &write);
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                assert!(lane.insert(second, raw(vec![3]), 1, write).is_ok());
            });
            assert!(lane.insert(first, raw(vec![2]), 1, write).is_ok());
        });
        assert_eq!(writes.load(Ordering::SeqCst), 1);
    }
}
