//! The throttle's policy, pure: the limits of each key an attempt is counted under, what is stored of a key,
//! and the decision from the stored counts. Nothing here reads or writes anything: the store decides and counts
//! in one transaction with [`decide`], and the purge bucket's size is the store's to apply too.

use std::net::IpAddr;

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
    /// The client's address key (see [`crate::domain::net::throttle_key`]).
    pub addr: IpAddr,
    /// The attempt carries a one-time code: it is counted under the account's codes too.
    pub code: bool,
}

impl LoginKey {
    pub fn new(customer: &str, username: &str, addr: IpAddr) -> Self {
        LoginKey {
            customer: customer.to_string(),
            username: username.to_lowercase(),
            addr: crate::domain::net::throttle_key(addr),
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

/// The purge rate limit, a token bucket per customer kept by the store (see `Tasks::take_purge_token`):
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
