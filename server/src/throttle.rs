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
//! An attempt is reserved *before* the credentials are checked ([`reserve`] decides and counts it
//! as pending in one step), so parallel attempts cannot get past a limit: while the failures and the pending
//! attempts of a key reach its lock, further attempts wait for the pending ones to be settled (rather than
//! being refused: a script's parallel requests with the right password go through), and are refused once the
//! failures alone reach it. A settled attempt is a failure, released when it was not a guess, or — only for a
//! complete login — clears the username's failures.
//!
//! This module is the policy; the counts are kept by the [`Store`] (in the database, so that every replica of
//! the server counts against the same limits and a restart forgets nothing), which decides and counts in one
//! transaction with [`decide`]. A reservation that is never settled (its request was cancelled, or its replica
//! died) stops counting after [`PENDING_TTL_MS`].

use std::{net::IpAddr, time::Duration};

use crate::store::{Store, StoreResult};

/// Failures older than this are forgotten; a lock lasts until this long after the last failure.
pub const WINDOW_MS: i64 = 15 * 60 * 1000;
/// Failures of one username from one address before that pair is locked.
pub const PAIR_LOCK_AFTER: u32 = 10;
/// Failures from one address (any usernames) before it is locked.
pub const ADDR_LOCK_AFTER: u32 = 100;
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

/// The limits of the keys in their order: the username from the address, the address, the username.
pub const LIMITS: [Limits; 3] = [
    Limits { slow_after: 3, lock_after: Some(PAIR_LOCK_AFTER), lockout: Some(Lockout::UsernameFromAddress) },
    Limits { slow_after: 20, lock_after: Some(ADDR_LOCK_AFTER), lockout: Some(Lockout::Address) },
    Limits { slow_after: 5, lock_after: None, lockout: None },
];

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
/// seen) at `now_ms`.
pub fn decide(now_ms: i64, counts: &[Option<Count>; 3]) -> Decision {
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
/// How often a waiting attempt asks again.
const POLL: Duration = Duration::from_millis(20);

/// Decides on an attempt before its credentials are checked and, unless refused, counts it in the same step
/// (waiting while pending attempts may still reach a lock). `base_delay` is the first slow-down; each further
/// failure doubles it, up to 32 times. Settle it with [`Store::settle_login`].
pub async fn reserve(store: &dyn Store, now_ms: i64, key: &LoginKey, base_delay: Duration) -> StoreResult<Verdict> {
    let deadline = tokio::time::Instant::now() + MAX_WAIT;
    loop {
        match store.reserve_login(now_ms, key).await? {
            Decision::Refuse { retry_after_secs } => return Ok(Verdict::Refuse { retry_after_secs }),
            Decision::Proceed { doublings } => {
                return Ok(Verdict::Proceed(doublings.map_or(Duration::ZERO, |d| base_delay * 2u32.pow(d))));
            }
            Decision::Wait if tokio::time::Instant::now() >= deadline => {
                return Ok(Verdict::Refuse { retry_after_secs: MAX_WAIT.as_secs() });
            }
            Decision::Wait => tokio::time::sleep(POLL).await,
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
        assert_eq!(decide(0, &[None, None, None]), Decision::Proceed { doublings: None });
        assert_eq!(decide(0, &[count(2, 0, 0), None, None]), Decision::Proceed { doublings: None });
        assert_eq!(decide(0, &[count(3, 0, 0), None, None]), Decision::Proceed { doublings: Some(0) });
        assert_eq!(decide(0, &[count(4, 0, 0), None, count(9, 0, 0)]), Decision::Proceed { doublings: Some(4) });
        assert_eq!(decide(0, &[None, None, count(500, 0, 0)]), Decision::Proceed { doublings: Some(5) }, "capped");
    }

    #[test]
    fn a_lock_refuses_until_a_window_after_the_last_failure_and_pending_attempts_wait() {
        let locked = [count(PAIR_LOCK_AFTER, 0, 1000), None, None];
        assert_eq!(decide(1000, &locked), Decision::Refuse { retry_after_secs: 900 });
        assert_eq!(decide(999 + WINDOW_MS, &locked), Decision::Refuse { retry_after_secs: 1 });
        assert_eq!(decide(1000 + WINDOW_MS, &locked), Decision::Proceed { doublings: None });
        assert_eq!(decide(0, &[count(7, 3, 0), None, None]), Decision::Wait);
        assert_eq!(decide(0, &[count(7, 2, 0), None, None]), Decision::Proceed { doublings: Some(4) });
        assert_eq!(decide(0, &[None, count(99, 1, 0), None]), Decision::Wait);
        assert_eq!(decide(0, &[None, None, count(0, 1000, 0)]), Decision::Proceed { doublings: None }, "never locks");
    }
}
