//! Login attempts reserved through the store before their credentials are checked, and those of this process
//! that wait for pending attempts of their keys to be settled.

use std::{
    collections::HashMap,
    pin::Pin,
    sync::{Arc, Mutex},
    task::Poll,
    time::Duration,
};

use rand::Rng;
use tokio::sync::Notify;

use super::policy::{Decision, LoginKey, PENDING_TTL_MS};
use crate::store::{Store, StoreResult};

/// What to do with a login attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Counted; go ahead after waiting this long.
    Proceed(Duration),
    /// Refused (and not counted); the client may try again after this many seconds.
    Refuse { retry_after_secs: u64 },
}

/// An attempt waits this long at most for pending ones to be settled; then it is refused as if locked.
const MAX_WAIT: Duration = Duration::from_secs(30);
/// A waiting attempt whose keys have no attempt pending in this process asks the store again after this long at
/// first, then after twice as long each time, up to [`MAX_BACKOFF`] (jittered down to half): how soon it sees
/// what other replicas settled.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// While an attempt of this process is pending on its keys, a waiting attempt is woken by its settlement, and
/// asks the store on its own only this often (the pending attempt's request may have been cancelled).
const LOCAL_RECHECK: Duration = Duration::from_secs(5);

/// What this process knows of one key: who waits on it, and its attempts reserved and not settled yet.
#[derive(Default)]
struct KeyState {
    notify: Arc<Notify>,
    /// When each pending attempt of this process stops counting (a cancelled request never settles).
    pending: Vec<tokio::time::Instant>,
}

/// The login attempts of this process that wait for pending attempts of their keys to be settled, and those
/// pending, by stored key: a settlement wakes one waiter per key ([`Waits::settled`]), so waiters do not poll the
/// database while the attempt they wait for is this process's.
#[derive(Default)]
pub struct Waits {
    keys: Mutex<HashMap<String, KeyState>>,
    /// Reservations so far: every [`SWEEP_EVERY`] the keys of cancelled requests, which never settle, are
    /// forgotten.
    reservations: std::sync::atomic::AtomicUsize,
}

/// How often [`Waits`] forgets what cancelled requests left behind.
const SWEEP_EVERY: usize = 1024;

/// The keys one waiting attempt listens on; leaving forgets keys no one else needs.
struct Listening<'a> {
    waits: &'a Waits,
    keys: Vec<(String, Arc<Notify>)>,
}

impl Waits {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, KeyState>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn listen(&self, key: &LoginKey) -> Listening<'_> {
        let mut map = self.map();
        let keys = key
            .stored()
            .into_iter()
            .flatten()
            .map(|k| {
                let notify = map.entry(k.clone()).or_default().notify.clone();
                (k, notify)
            })
            .collect();
        Listening { waits: self, keys }
    }

    /// An attempt under `key` was reserved (it goes on to be checked).
    fn reserved(&self, key: &LoginKey) {
        self.reserved_at(key, tokio::time::Instant::now())
    }

    fn reserved_at(&self, key: &LoginKey, now: tokio::time::Instant) {
        let expires = now + Duration::from_millis(PENDING_TTL_MS as u64);
        let mut map = self.map();
        if self.reservations.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            map.retain(|_, state| {
                state.pending.retain(|e| *e > now);
                !state.pending.is_empty() || Arc::strong_count(&state.notify) > 1
            });
        }
        for k in key.stored().into_iter().flatten() {
            map.entry(k).or_default().pending.push(expires);
        }
    }

    /// Wakes every attempt waiting on one of `key`'s keys (a refusal found a key locked: they are refused too).
    fn wake_all(&self, key: &LoginKey) {
        let map = self.map();
        for k in key.stored().into_iter().flatten() {
            if let Some(state) = map.get(&k) {
                state.notify.notify_waiters();
            }
        }
    }

    /// Whether an attempt of this process is pending under one of `key`'s keys.
    fn pending_here(&self, key: &LoginKey) -> bool {
        let now = tokio::time::Instant::now();
        let map = self.map();
        key.stored().into_iter().flatten().any(|k| map.get(&k).is_some_and(|s| s.pending.iter().any(|e| *e > now)))
    }

    /// After an attempt under `key` was settled (or given up): wakes one waiting attempt of each of its keys —
    /// or, with `all`, every one (a key has just been locked: they are all refused now).
    pub fn settled(&self, key: &LoginKey, all: bool) {
        let now = tokio::time::Instant::now();
        let mut map = self.map();
        for k in key.stored().into_iter().flatten() {
            let Some(state) = map.get_mut(&k) else { continue };
            state.pending.retain(|e| *e > now);
            state.pending.pop();
            if all {
                state.notify.notify_waiters()
            } else {
                state.notify.notify_one()
            }
            if state.pending.is_empty() && Arc::strong_count(&state.notify) == 1 {
                map.remove(&k);
            }
        }
    }

    /// How many keys this process keeps anything of (for tests: nothing once no attempt waits or is pending).
    pub fn keys_kept(&self) -> usize {
        self.map().len()
    }

    /// The most attempts of this process waiting on one key (for tests: every held attempt is waiting).
    pub fn most_waiting(&self) -> usize {
        self.map().values().map(|s| Arc::strong_count(&s.notify) - 1).max().unwrap_or(0)
    }
}

impl Listening<'_> {
    /// Until a settlement of one of the keys wakes this attempt, or `timeout` (jittered down to half) passes.
    async fn wait(&self, timeout: Duration) {
        let mut notified: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>> =
            self.keys.iter().map(|(_, n)| Box::pin(n.notified())).collect();
        let woken = std::future::poll_fn(|cx| {
            if notified.iter_mut().any(|n| n.as_mut().poll(cx).is_ready()) { Poll::Ready(()) } else { Poll::Pending }
        });
        let jittered = timeout.mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
        let _ = tokio::time::timeout(jittered, woken).await;
    }
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        let mut map = self.waits.map();
        for (k, notify) in self.keys.drain(..) {
            drop(notify);
            // The map's reference alone, and nothing pending: no one needs the key.
            if map.get(&k).is_some_and(|s| s.pending.is_empty() && Arc::strong_count(&s.notify) == 1) {
                map.remove(&k);
            }
        }
    }
}

/// Decides on an attempt before its credentials are checked and, unless refused, counts it in the same step
/// (waiting while pending attempts may still reach a lock). `base_delay` is the first slow-down; each further
/// failure doubles it, up to 32 times. Settle it with [`Logins::settle_login`](crate::store::Logins::settle_login), then [`Waits::settled`].
pub async fn reserve(
    store: &dyn Store,
    waits: &Waits,
    now_ms: i64,
    key: &LoginKey,
    base_delay: Duration,
) -> StoreResult<Verdict> {
    let deadline = tokio::time::Instant::now() + MAX_WAIT;
    let mut listening: Option<Listening> = None;
    let mut backoff = FIRST_BACKOFF;
    let mut decision = store.reserve_login(now_ms, key).await?;
    loop {
        match decision {
            Decision::Refuse { retry_after_secs } => {
                if listening.is_some() {
                    // The others waiting on these keys are refused too: tell them now.
                    waits.wake_all(key);
                }
                return Ok(Verdict::Refuse { retry_after_secs });
            }
            Decision::Proceed { doublings } => {
                waits.reserved(key);
                return Ok(Verdict::Proceed(doublings.map_or(Duration::ZERO, |d| base_delay * 2u32.pow(d))));
            }
            Decision::Wait if tokio::time::Instant::now() >= deadline => {
                return Ok(Verdict::Refuse { retry_after_secs: MAX_WAIT.as_secs() });
            }
            Decision::Wait => {
                let listening = listening.get_or_insert_with(|| waits.listen(key));
                if waits.pending_here(key) {
                    listening.wait(LOCAL_RECHECK).await;
                } else {
                    listening.wait(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                // A read first: only an attempt that may go on takes the store's write lock (a refusal counts
                // nothing, so the read's is final).
                decision = match store.login_decision(now_ms, key).await? {
                    Decision::Proceed { .. } => store.reserve_login(now_ms, key).await?,
                    read => read,
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_keep_nothing_of_settled_attempts_and_forget_cancelled_ones() {
        let waits = Waits::default();
        let key = |i: usize| LoginKey::new("acme", &format!("user{i}"), "203.0.113.7".parse().unwrap());
        waits.reserved(&key(0));
        assert!(waits.pending_here(&key(0)));
        waits.settled(&key(0), false);
        assert!(!waits.pending_here(&key(0)));
        assert_eq!(waits.keys_kept(), 0);
        // Reservations never settled (their requests were cancelled) are forgotten once expired.
        for i in 0..SWEEP_EVERY - 2 {
            waits.reserved(&key(i));
        }
        assert_eq!(waits.keys_kept(), 2 * (SWEEP_EVERY - 2) + 1, "pair and user keys, one address key");
        let later = tokio::time::Instant::now() + Duration::from_millis(PENDING_TTL_MS as u64 + 1);
        waits.reserved_at(&key(SWEEP_EVERY), later);
        assert_eq!(waits.keys_kept(), 3, "only the last one's keys");
    }
}
