//! Brute-force protection for password and one-time-code checks, as the mature identity services do it (Auth0's
//! brute-force protection and suspicious-IP throttling): failures are counted over a window against four keys.
//!
//! - a username from one address: locked after [`PAIR_LOCK_AFTER`] failures, so guessing one account from one
//!   place stops, while the same user logging in from anywhere else is not blocked;
//! - an address, whatever the usernames: a generous lock ([`ADDR_LOCK_AFTER`]) against one source trying many
//!   accounts (an office behind one NAT stays well below it), slowed down well before;
//! - a username, whatever the addresses: slowed down, never locked, so that an attack spread over many addresses
//!   gains little and cannot lock the real user out (anyone may type a username);
//! - the one-time codes of an account, whatever the addresses: locked after [`CODE_LOCK_AFTER`] wrong codes, so
//!   that many addresses cannot guess the second factor. Only a wrong code with the right password counts, so
//!   only someone who has the password can bring this lock about; it holds back code checks (attempts that
//!   carry a code), not the password alone.
//!
//! An attempt is reserved *before* the credentials are checked ([`reserve`] decides and counts it
//! as pending in one step), so parallel attempts cannot get past a limit: while the failures and the pending
//! attempts of a key reach its lock, further attempts wait for the pending ones to be settled (rather than
//! being refused: a script's parallel requests with the right password go through), and are refused once the
//! failures alone reach it. A settled attempt is a failure, released when it was not a guess, or — only for a
//! complete login — clears the username's failures. A waiting attempt sleeps until an attempt of one of its keys
//! is settled in this process ([`Waits`]); only when none of its keys has an attempt pending in this process
//! (they are other replicas') does it ask the store again on a back-off that doubles up to [`MAX_BACKOFF`], with a
//! read that takes no write lock.
//!
//! This module is the policy; the counts are kept by the [`Store`] (in the database, so that every replica of
//! the server counts against the same limits and a restart forgets nothing), which decides and counts in one
//! transaction with [`decide`]. A reservation that is never settled (its request was cancelled, or its replica
//! died) stops counting after [`PENDING_TTL_MS`].

use std::{
    collections::HashMap,
    net::IpAddr,
    pin::Pin,
    sync::{Arc, Mutex},
    task::Poll,
    time::Duration,
};

use rand::Rng;
use tokio::sync::Notify;

use crate::store::{Store, StoreResult};

/// Failures older than this are forgotten; a lock lasts until this long after the last failure.
pub const WINDOW_MS: i64 = 15 * 60 * 1000;
/// Failures of one username from one address before that pair is locked.
pub const PAIR_LOCK_AFTER: u32 = 10;
/// Failures from one address (any usernames) before it is locked.
pub const ADDR_LOCK_AFTER: u32 = 100;
/// Wrong one-time codes of one account (from any addresses) before its code checks are locked: with three codes
/// valid at a time, five guesses in 15 minutes give an attacker who has the password a 1 in 67,000 chance a
/// window.
pub const CODE_LOCK_AFTER: u32 = 5;
/// A reserved attempt not settled within this time is no longer counted as pending.
pub const PENDING_TTL_MS: i64 = 2 * 60 * 1000;

/// The limits of one of the three keys an attempt is counted under.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// From this many failures on, each attempt waits first.
    pub slow_after: u32,
    /// From this many failures on, attempts are refused.
    pub lock_after: Option<u32>,
    /// The lock that reaching `lock_after` brings about.
    pub lockout: Option<Lockout>,
}

/// The limits of the keys in their order: the username from the address, the address, the username, the
/// account's one-time codes.
pub const LIMITS: [Limits; 4] = [
    Limits { slow_after: 3, lock_after: Some(PAIR_LOCK_AFTER), lockout: Some(Lockout::UsernameFromAddress) },
    Limits { slow_after: 20, lock_after: Some(ADDR_LOCK_AFTER), lockout: Some(Lockout::Address) },
    Limits { slow_after: 5, lock_after: None, lockout: None },
    // Wrong codes are failures of the username too, which slows them down; this key only locks.
    Limits { slow_after: u32::MAX, lock_after: Some(CODE_LOCK_AFTER), lockout: Some(Lockout::Codes) },
];

/// What a login attempt is counted under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginKey {
    pub customer: String,
    /// Lower-cased.
    pub username: String,
    /// The client's address key (see [`crate::net::throttle_key`]).
    pub addr: IpAddr,
    /// The attempt carries a one-time code: it is counted under the account's codes too.
    pub code: bool,
}

impl LoginKey {
    pub fn new(customer: &str, username: &str, addr: IpAddr) -> Self {
        LoginKey {
            customer: customer.to_string(),
            username: username.to_lowercase(),
            addr: crate::net::throttle_key(addr),
            code: false,
        }
    }

    /// The same attempt, carrying a one-time code (or not).
    pub fn with_code(mut self, code: bool) -> Self {
        self.code = code;
        self
    }

    /// The keys it is counted under, as stored (unambiguous JSON), in the order of [`LIMITS`]; the codes' key
    /// only when the attempt carries a code.
    pub fn stored(&self) -> [Option<String>; 4] {
        let addr = self.addr.to_string();
        let json = |parts: &[&str]| serde_json::to_string(parts).unwrap_or_default();
        [
            Some(json(&["pair", &self.customer, &self.username, &addr])),
            Some(json(&["addr", &addr])),
            Some(json(&["user", &self.customer, &self.username])),
            self.code.then(|| json(&["code", &self.customer, &self.username])),
        ]
    }
}

/// What to do with a login attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Counted; go ahead after waiting this long.
    Proceed(Duration),
    /// Refused (and not counted); the client may try again after this many seconds.
    Refuse { retry_after_secs: u64 },
}

/// How a counted attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A wrong password: it stays counted (not under the account's codes).
    Failed,
    /// The right password and a wrong one-time code: it stays counted, under every key.
    FailedCode,
    /// No guess was judged (the right password alone, for a user who also needs a code; or the server was too
    /// busy to check): the count is taken back.
    Released,
    /// A complete login: the failures of the username (from anywhere) are cleared; the address's are not.
    Succeeded,
}

/// A lock that a failure has just brought about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lockout {
    /// The username from this address.
    UsernameFromAddress,
    /// The address, for every username.
    Address,
    /// The account's one-time codes, from every address.
    Codes,
}

/// What is stored of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// Failures counted since the window began (all forgotten once `last_ms` is a window old).
    pub failures: u32,
    /// Attempts reserved and not settled yet.
    pub pending: u32,
    /// The key's latest attempt.
    pub last_ms: i64,
}

/// What [`decide`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead (and count the attempt as pending), slowed down by this many doublings of the first slow-down
    /// when there are any.
    Proceed { doublings: Option<u32> },
    /// Pending attempts may still reach a lock: wait for one to be settled, then decide again.
    Wait,
    /// Refused; the client may try again after this many seconds.
    Refuse { retry_after_secs: u64 },
}

/// Decides on an attempt from the counts of its keys (in the order of [`LIMITS`]; `None` for a key never
/// seen, or not counted) at `now_ms`.
pub fn decide(now_ms: i64, counts: &[Option<Count>; 4]) -> Decision {
    let mut doublings: Option<u32> = None;
    let mut wait = false;
    for (count, limits) in counts.iter().zip(LIMITS) {
        let Some(c) = count else { continue };
        let failures = if now_ms - c.last_ms < WINDOW_MS { c.failures } else { 0 };
        if let Some(lock) = limits.lock_after {
            if failures >= lock {
                let retry_ms = c.last_ms + WINDOW_MS - now_ms;
                return Decision::Refuse { retry_after_secs: (retry_ms.max(1000) as u64).div_ceil(1000) };
            }
            wait |= failures + c.pending >= lock;
        }
        if failures >= limits.slow_after {
            let d = (failures - limits.slow_after).min(5);
            doublings = Some(doublings.map_or(d, |was| was.max(d)));
        }
    }
    if wait { Decision::Wait } else { Decision::Proceed { doublings } }
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
/// failure doubles it, up to 32 times. Settle it with [`Store::settle_login`], then [`Waits::settled`].
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

/// The purge rate limit, a token bucket per customer kept by the [`Store`] (see [`Store::take_purge_token`]):
/// 2 requests a second, a burst of 2, across every replica together. Tokens are counted in thousandths.
pub mod purge {
    /// Thousandths of a token gained per millisecond (2 tokens a second).
    pub const MILLI_PER_MS: i64 = 2;
    /// The bucket's size: the burst allowed after a quiet time.
    pub const BURST_MILLI: i64 = 2000;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(failures: u32, pending: u32, last_ms: i64) -> Option<Count> {
        Some(Count { failures, pending, last_ms })
    }

    #[test]
    fn each_key_slows_from_its_own_threshold_and_the_largest_slow_down_wins() {
        assert_eq!(decide(0, &[None, None, None, None]), Decision::Proceed { doublings: None });
        assert_eq!(decide(0, &[count(2, 0, 0), None, None, None]), Decision::Proceed { doublings: None });
        assert_eq!(decide(0, &[count(3, 0, 0), None, None, None]), Decision::Proceed { doublings: Some(0) });
        assert_eq!(decide(0, &[count(4, 0, 0), None, count(9, 0, 0), None]), Decision::Proceed { doublings: Some(4) });
        assert_eq!(
            decide(0, &[None, None, count(500, 0, 0), None]),
            Decision::Proceed { doublings: Some(5) },
            "capped"
        );
    }

    #[test]
    fn a_lock_refuses_until_a_window_after_the_last_failure_and_pending_attempts_wait() {
        let locked = [count(PAIR_LOCK_AFTER, 0, 1000), None, None, None];
        assert_eq!(decide(1000, &locked), Decision::Refuse { retry_after_secs: 900 });
        assert_eq!(decide(999 + WINDOW_MS, &locked), Decision::Refuse { retry_after_secs: 1 });
        assert_eq!(decide(1000 + WINDOW_MS, &locked), Decision::Proceed { doublings: None });
        assert_eq!(decide(0, &[count(7, 3, 0), None, None, None]), Decision::Wait);
        assert_eq!(decide(0, &[count(7, 2, 0), None, None, None]), Decision::Proceed { doublings: Some(4) });
        assert_eq!(decide(0, &[None, count(99, 1, 0), None, None]), Decision::Wait);
        assert_eq!(
            decide(0, &[None, None, count(0, 1000, 0), None]),
            Decision::Proceed { doublings: None },
            "never locks"
        );
    }

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

    #[test]
    fn the_accounts_codes_lock_whatever_the_address_and_do_not_slow_down() {
        let codes = |failures, pending| [None, None, None, count(failures, pending, 0)];
        assert_eq!(decide(0, &codes(CODE_LOCK_AFTER - 1, 0)), Decision::Proceed { doublings: None });
        assert_eq!(decide(0, &codes(CODE_LOCK_AFTER - 1, 1)), Decision::Wait);
        assert_eq!(decide(0, &codes(CODE_LOCK_AFTER, 0)), Decision::Refuse { retry_after_secs: 900 });
        let key = LoginKey::new("acme", "Alice", "203.0.113.7".parse().unwrap());
        assert_eq!(key.stored()[3], None, "without a code, not counted under the codes");
        assert_eq!(key.with_code(true).stored()[3].as_deref(), Some(r#"["code","acme","alice"]"#));
    }
}
