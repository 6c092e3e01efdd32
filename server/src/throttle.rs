//! Brute-force protection for password and one-time-code checks, as the mature identity services do it (Auth0's
//! brute-force protection and suspicious-IP throttling): failures are counted over a window against three keys.
//!
//! - a username from one address: locked after [`PAIR_LOCK_AFTER`] failures, so guessing one account from one
//!   place stops, while the same user logging in from anywhere else is not blocked;
//! - an address, whatever the usernames: a generous lock ([`ADDR_LOCK_AFTER`]) against one source trying many
//!   accounts (an office behind one NAT stays well below it), slowed down well before;
//! - a username, whatever the addresses: slowed down, never locked, so that an attack spread over many addresses
//!   gains little and cannot lock the real user out.
//!
//! An attempt is reserved *before* the credentials are checked ([`LoginThrottle::reserve`] decides and counts it
//! as pending in one step), so parallel attempts cannot get past a limit: while the failures and the pending
//! attempts of a key reach its lock, further attempts wait for the pending ones to be settled (rather than
//! being refused: a script's parallel requests with the right password go through), and are refused once the
//! failures alone reach it. A settled attempt is a failure, released when it was not a guess, or — only for a
//! complete login — clears the username's failures. The counts sit behind a trait so that replicas can share
//! them (issue 10); [`MemoryThrottle`] keeps them in this process.

use std::{collections::HashMap, net::IpAddr, sync::Mutex, time::Duration};

use async_trait::async_trait;
use tokio::sync::Notify;

/// Failures older than this are forgotten; a lock lasts until this long after the last failure.
pub const WINDOW_MS: i64 = 15 * 60 * 1000;
/// Failures of one username from one address before that pair is locked.
pub const PAIR_LOCK_AFTER: u32 = 10;
/// Failures from one address (any usernames) before it is locked.
pub const ADDR_LOCK_AFTER: u32 = 100;

#[derive(Debug, Clone, Copy)]
struct Limits {
    /// From this many failures on, each attempt waits first.
    slow_after: u32,
    /// From this many failures on, attempts are refused.
    lock_after: Option<u32>,
}

const PAIR: Limits = Limits { slow_after: 3, lock_after: Some(PAIR_LOCK_AFTER) };
const ADDR: Limits = Limits { slow_after: 20, lock_after: Some(ADDR_LOCK_AFTER) };
const USER: Limits = Limits { slow_after: 5, lock_after: None };
/// Entries kept at most; beyond, the oldest are dropped first.
const MAX_ENTRIES: usize = 100_000;

/// What a login attempt is counted under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginKey {
    pub customer: String,
    /// Lower-cased.
    pub username: String,
    /// The client's address key (see [`crate::net::throttle_key`]).
    pub addr: IpAddr,
}

impl LoginKey {
    pub fn new(customer: &str, username: &str, addr: IpAddr) -> Self {
        LoginKey {
            customer: customer.to_string(),
            username: username.to_lowercase(),
            addr: crate::net::throttle_key(addr),
        }
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
    /// A wrong password or code: it stays counted.
    Failed,
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
}

#[async_trait]
pub trait LoginThrottle: Send + Sync + 'static {
    /// Decides on an attempt before its credentials are checked and, unless refused, counts it as a failure in
    /// the same step.
    async fn reserve(&self, now_ms: i64, key: &LoginKey) -> Verdict;
    /// Settles an attempt counted by [`LoginThrottle::reserve`]; returns the locks this failure brought about.
    async fn settle(&self, now_ms: i64, key: &LoginKey, outcome: Outcome) -> Vec<Lockout>;
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Pair(String, String, IpAddr),
    User(String, String),
    Addr(IpAddr),
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    /// Failures in the window.
    failures: u32,
    /// Attempts reserved and not settled yet.
    pending: u32,
    last_ms: i64,
    /// The lock of this window was reported already.
    lock_reported: bool,
}

impl Entry {
    fn live(&self, now_ms: i64) -> bool {
        now_ms - self.last_ms < WINDOW_MS
    }
}

/// What [`MemoryThrottle::try_reserve`] decided.
enum Reservation {
    Decided(Verdict),
    /// Pending attempts may still reach a lock: wait for one to be settled, then decide again.
    Wait,
}

/// The counts in this process's memory: a restart forgets them.
pub struct MemoryThrottle {
    entries: Mutex<HashMap<Key, Entry>>,
    /// Told of every settled attempt, for the attempts waiting on pending ones.
    settled: Notify,
    /// The first slow-down; each further failure doubles it, up to 32 times.
    base_delay: Duration,
}

/// An attempt waits this long at most for pending ones to be settled; then it is refused as if locked.
const MAX_WAIT: Duration = Duration::from_secs(30);

impl MemoryThrottle {
    pub fn new(base_delay: Duration) -> Self {
        MemoryThrottle { entries: Mutex::new(HashMap::new()), settled: Notify::new(), base_delay }
    }

    fn keys(key: &LoginKey) -> [(Key, Limits); 3] {
        let (c, u) = (key.customer.clone(), key.username.clone());
        [(Key::Pair(c.clone(), u.clone(), key.addr), PAIR), (Key::Addr(key.addr), ADDR), (Key::User(c, u), USER)]
    }

    fn try_reserve(&self, now_ms: i64, key: &LoginKey) -> Reservation {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let keys = Self::keys(key);
        let mut delay = Duration::ZERO;
        let mut wait = false;
        for (k, limits) in &keys {
            let Some(e) = entries.get(k) else { continue };
            let failures = if e.live(now_ms) { e.failures } else { 0 };
            if let Some(lock) = limits.lock_after {
                if failures >= lock {
                    let retry_ms = e.last_ms + WINDOW_MS - now_ms;
                    return Reservation::Decided(Verdict::Refuse {
                        retry_after_secs: (retry_ms.max(1000) as u64).div_ceil(1000),
                    });
                }
                wait |= failures + e.pending >= lock;
            }
            if failures >= limits.slow_after {
                let doublings = (failures - limits.slow_after).min(5);
                delay = delay.max(self.base_delay * 2u32.pow(doublings));
            }
        }
        if wait {
            return Reservation::Wait;
        }
        make_room(&mut entries, now_ms);
        for (k, _) in keys {
            let e = entries.entry(k).or_default();
            if !e.live(now_ms) {
                *e = Entry { pending: e.pending, ..Entry::default() };
            }
            e.pending += 1;
            e.last_ms = now_ms;
        }
        Reservation::Decided(Verdict::Proceed(delay))
    }

    fn settle_now(&self, now_ms: i64, key: &LoginKey, outcome: Outcome) -> Vec<Lockout> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let [(pair, _), (addr, _), (user, _)] = Self::keys(key);
        for k in [&pair, &addr, &user] {
            if let Some(e) = entries.get_mut(k) {
                e.pending = e.pending.saturating_sub(1);
            }
        }
        let lockouts = match outcome {
            Outcome::Released => Vec::new(),
            Outcome::Succeeded => {
                for k in [&pair, &user] {
                    if let Some(e) = entries.get_mut(k) {
                        e.failures = 0;
                        e.lock_reported = false;
                    }
                }
                Vec::new()
            }
            Outcome::Failed => {
                let mut lockouts = Vec::new();
                for (k, limits, lockout) in [
                    (pair, PAIR, Some(Lockout::UsernameFromAddress)),
                    (addr, ADDR, Some(Lockout::Address)),
                    (user, USER, None),
                ] {
                    let e = entries.entry(k).or_default();
                    if !e.live(now_ms) {
                        *e = Entry { pending: e.pending, ..Entry::default() };
                    }
                    e.failures += 1;
                    e.last_ms = now_ms;
                    if limits.lock_after.is_some_and(|lock| e.failures >= lock) && !e.lock_reported {
                        e.lock_reported = true;
                        lockouts.extend(lockout);
                    }
                }
                lockouts
            }
        };
        drop(entries);
        self.settled.notify_waiters();
        lockouts
    }
}

/// Keeps the map bounded: expired entries go first, then, if it is still full of live ones (an attack from
/// many addresses), the oldest half.
fn make_room(entries: &mut HashMap<Key, Entry>, now_ms: i64) {
    if entries.len() + 3 <= MAX_ENTRIES {
        return;
    }
    entries.retain(|_, e| e.live(now_ms));
    if entries.len() + 3 > MAX_ENTRIES {
        let mut ages: Vec<i64> = entries.values().map(|e| e.last_ms).collect();
        ages.sort_unstable();
        let cutoff = ages[ages.len() / 2];
        entries.retain(|_, e| e.last_ms > cutoff);
    }
}

#[async_trait]
impl LoginThrottle for MemoryThrottle {
    async fn reserve(&self, now_ms: i64, key: &LoginKey) -> Verdict {
        let deadline = tokio::time::Instant::now() + MAX_WAIT;
        loop {
            // Registered before deciding, so a settlement between the decision and the wait is not missed.
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            match self.try_reserve(now_ms, key) {
                Reservation::Decided(verdict) => return verdict,
                Reservation::Wait => {
                    if tokio::time::timeout_at(deadline, settled).await.is_err() {
                        return Verdict::Refuse { retry_after_secs: MAX_WAIT.as_secs() };
                    }
                }
            }
        }
    }

    async fn settle(&self, now_ms: i64, key: &LoginKey, outcome: Outcome) -> Vec<Lockout> {
        self.settle_now(now_ms, key, outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(user: &str, addr: &str) -> LoginKey {
        LoginKey::new("acme", user, addr.parse().unwrap())
    }

    impl MemoryThrottle {
        /// As [`LoginThrottle::reserve`], for a decision that does not wait.
        fn reserve_now(&self, now_ms: i64, key: &LoginKey) -> Verdict {
            match self.try_reserve(now_ms, key) {
                Reservation::Decided(v) => v,
                Reservation::Wait => panic!("would wait"),
            }
        }
    }

    fn fail(t: &MemoryThrottle, now: i64, k: &LoginKey) -> Vec<Lockout> {
        assert!(matches!(t.reserve_now(now, k), Verdict::Proceed(_)), "{k:?} refused");
        t.settle_now(now, k, Outcome::Failed)
    }

    #[test]
    fn a_username_is_locked_from_one_address_only_and_the_lock_expires() {
        let t = MemoryThrottle::new(Duration::from_millis(100));
        let bob = key("bob", "203.0.113.7");
        for i in 0..3 {
            assert_eq!(t.reserve_now(0, &bob), Verdict::Proceed(Duration::ZERO), "attempt {i}");
            t.settle_now(0, &bob, Outcome::Failed);
        }
        assert_eq!(t.reserve_now(0, &bob), Verdict::Proceed(Duration::from_millis(100)));
        assert!(t.settle_now(0, &bob, Outcome::Failed).is_empty());
        assert_eq!(t.reserve_now(0, &key("BOB", "203.0.113.7")), Verdict::Proceed(Duration::from_millis(200)));
        t.settle_now(0, &bob, Outcome::Failed);
        for _ in 0..4 {
            assert!(fail(&t, 1000, &bob).is_empty());
        }
        assert_eq!(fail(&t, 1000, &bob), [Lockout::UsernameFromAddress], "the 10th failure locks, once");
        assert_eq!(t.reserve_now(1000, &bob), Verdict::Refuse { retry_after_secs: 900 });
        // The same user from elsewhere, and another user from here, go on (slowed for the username).
        assert!(matches!(t.reserve_now(1000, &key("bob", "198.51.100.1")), Verdict::Proceed(_)));
        assert_eq!(t.reserve_now(1000, &key("carol", "203.0.113.7")), Verdict::Proceed(Duration::ZERO));
        assert_eq!(t.reserve_now(999 + WINDOW_MS, &bob), Verdict::Refuse { retry_after_secs: 1 });
        assert_eq!(t.reserve_now(1000 + WINDOW_MS, &bob), Verdict::Proceed(Duration::ZERO));
    }

    #[test]
    fn pending_attempts_hold_back_the_ones_that_could_pass_the_limit() {
        let t = MemoryThrottle::new(Duration::ZERO);
        let bob = key("bob", "203.0.113.7");
        for _ in 0..PAIR_LOCK_AFTER {
            assert!(matches!(t.try_reserve(0, &bob), Reservation::Decided(Verdict::Proceed(_))));
        }
        assert!(matches!(t.try_reserve(0, &bob), Reservation::Wait), "the 11th waits");
        // A success lets the next one go; failures up to the lock make the waiting ones refused.
        t.settle_now(0, &bob, Outcome::Succeeded);
        assert!(matches!(t.try_reserve(0, &bob), Reservation::Decided(Verdict::Proceed(_))));
        for _ in 0..PAIR_LOCK_AFTER {
            t.settle_now(0, &bob, Outcome::Failed);
        }
        assert!(matches!(t.try_reserve(0, &bob), Reservation::Decided(Verdict::Refuse { .. })));
    }

    #[tokio::test]
    async fn a_waiting_attempt_goes_on_once_a_pending_one_is_settled() {
        let t = std::sync::Arc::new(MemoryThrottle::new(Duration::ZERO));
        let bob = key("bob", "203.0.113.7");
        for _ in 0..PAIR_LOCK_AFTER {
            assert!(matches!(t.reserve(0, &bob).await, Verdict::Proceed(_)));
        }
        let waiting = tokio::spawn({
            let (t, bob) = (t.clone(), bob.clone());
            async move { t.reserve(0, &bob).await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        t.settle_now(0, &bob, Outcome::Released);
        assert!(matches!(waiting.await.unwrap(), Verdict::Proceed(_)));
    }

    #[test]
    fn only_a_complete_login_clears_and_a_released_attempt_is_taken_back() {
        let t = MemoryThrottle::new(Duration::ZERO);
        let bob = key("bob", "203.0.113.7");
        for _ in 0..9 {
            fail(&t, 0, &bob);
        }
        // The right password without the code: released, the nine failures stay.
        assert!(matches!(t.reserve_now(0, &bob), Verdict::Proceed(_)));
        t.settle_now(0, &bob, Outcome::Released);
        assert_eq!(fail(&t, 0, &bob), [Lockout::UsernameFromAddress]);
        assert!(matches!(t.reserve_now(0, &bob), Verdict::Refuse { .. }));

        let carol = key("carol", "203.0.113.8");
        for _ in 0..9 {
            fail(&t, 0, &carol);
        }
        assert!(matches!(t.reserve_now(0, &carol), Verdict::Proceed(_)));
        t.settle_now(0, &carol, Outcome::Succeeded);
        for _ in 0..9 {
            assert!(fail(&t, 0, &carol).is_empty(), "cleared by the complete login");
        }
    }

    #[test]
    fn an_address_is_locked_after_many_usernames_and_ipv6_counts_by_64() {
        let t = MemoryThrottle::new(Duration::from_millis(1));
        for i in 0..ADDR_LOCK_AFTER - 1 {
            assert!(fail(&t, 0, &key(&format!("user{i}"), &format!("2001:db8:0:1::{:x}", i + 1))).is_empty());
        }
        assert_eq!(fail(&t, 0, &key("last", "2001:db8:0:1:ffff::1")), [Lockout::Address]);
        assert!(matches!(t.reserve_now(0, &key("someone", "2001:db8:0:1::abcd")), Verdict::Refuse { .. }));
        assert!(matches!(t.reserve_now(0, &key("someone", "2001:db8:0:2::1")), Verdict::Proceed(_)));
    }
}
