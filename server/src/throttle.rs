//! Brute-force protection for password and one-time-code checks: failures are counted per username and per
//! client address; past a first threshold each attempt is slowed down, past a second it is refused (429 with
//! Retry-After) until the window has passed. A cache in memory: a restart forgets it.

use std::{collections::HashMap, net::IpAddr, sync::Mutex, time::Duration};

/// Failures older than this are forgotten.
pub const WINDOW_MS: i64 = 15 * 60 * 1000;

#[derive(Debug, Clone, Copy)]
struct Limits {
    slow_after: u32,
    refuse_after: u32,
}

const PER_USER: Limits = Limits { slow_after: 3, refuse_after: 10 };
const PER_ADDR: Limits = Limits { slow_after: 10, refuse_after: 50 };
/// Entries kept at most; beyond, the oldest are dropped first.
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    User { customer: String, username: String },
    Addr(IpAddr),
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    last_ms: i64,
}

/// What to do with a login attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead, after waiting this long.
    Proceed(Duration),
    /// Refuse; the client may try again after this many seconds.
    Refuse { retry_after_secs: u64 },
}

pub struct LoginThrottle {
    entries: Mutex<HashMap<Key, Entry>>,
    /// The first slow-down; each further failure doubles it, up to 32 times.
    base_delay: Duration,
}

impl LoginThrottle {
    pub fn new(base_delay: Duration) -> Self {
        LoginThrottle { entries: Mutex::new(HashMap::new()), base_delay }
    }

    fn keys(customer: &str, username: &str, addr: IpAddr) -> [(Key, Limits); 2] {
        [
            (Key::User { customer: customer.to_string(), username: username.to_lowercase() }, PER_USER),
            (Key::Addr(addr), PER_ADDR),
        ]
    }

    /// Decides on an attempt before the credentials are checked.
    pub fn check(&self, now_ms: i64, customer: &str, username: &str, addr: IpAddr) -> Verdict {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let mut delay = Duration::ZERO;
        for (key, limits) in Self::keys(customer, username, addr) {
            let Some(e) = entries.get(&key).filter(|e| now_ms - e.last_ms < WINDOW_MS) else { continue };
            if e.failures >= limits.refuse_after {
                let retry_ms = e.last_ms + WINDOW_MS - now_ms;
                return Verdict::Refuse { retry_after_secs: (retry_ms.max(1000) as u64).div_ceil(1000) };
            }
            if e.failures >= limits.slow_after {
                let doublings = (e.failures - limits.slow_after).min(5);
                delay = delay.max(self.base_delay * 2u32.pow(doublings));
            }
        }
        Verdict::Proceed(delay)
    }

    /// Counts a failed attempt against the username and the address.
    pub fn failed(&self, now_ms: i64, customer: &str, username: &str, addr: IpAddr) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, e| now_ms - e.last_ms < WINDOW_MS);
            if entries.len() >= MAX_ENTRIES {
                // Still full of live entries (an attack from many addresses): forget the oldest half.
                let mut ages: Vec<i64> = entries.values().map(|e| e.last_ms).collect();
                ages.sort_unstable();
                let cutoff = ages[ages.len() / 2];
                entries.retain(|_, e| e.last_ms > cutoff);
            }
        }
        for (key, _) in Self::keys(customer, username, addr) {
            let e = entries.entry(key).or_insert(Entry { failures: 0, last_ms: now_ms });
            if now_ms - e.last_ms >= WINDOW_MS {
                e.failures = 0;
            }
            e.failures += 1;
            e.last_ms = now_ms;
        }
    }

    /// A successful login clears the username's failures (not the address's).
    pub fn succeeded(&self, customer: &str, username: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.remove(&Key::User { customer: customer.to_string(), username: username.to_lowercase() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADDR: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn failures_slow_down_then_refuse_then_expire() {
        let t = LoginThrottle::new(Duration::from_millis(100));
        for _ in 0..3 {
            assert_eq!(t.check(0, "acme", "bob", ADDR), Verdict::Proceed(Duration::ZERO));
            t.failed(0, "acme", "bob", ADDR);
        }
        assert_eq!(t.check(0, "acme", "bob", ADDR), Verdict::Proceed(Duration::from_millis(100)));
        t.failed(0, "acme", "bob", ADDR);
        assert_eq!(t.check(0, "acme", "BOB", ADDR), Verdict::Proceed(Duration::from_millis(200)));
        for _ in 0..6 {
            t.failed(1000, "acme", "bob", ADDR);
        }
        assert_eq!(t.check(1000, "acme", "bob", ADDR), Verdict::Refuse { retry_after_secs: 900 });
        // Another username from the same address is not refused yet.
        assert!(matches!(t.check(1000, "acme", "carol", ADDR), Verdict::Proceed(_)));
        assert_eq!(t.check(999 + WINDOW_MS, "acme", "bob", ADDR), Verdict::Refuse { retry_after_secs: 1 });
        assert_eq!(t.check(1000 + WINDOW_MS, "acme", "bob", ADDR), Verdict::Proceed(Duration::ZERO));
    }

    #[test]
    fn success_clears_the_username_but_not_the_address() {
        let t = LoginThrottle::new(Duration::from_millis(100));
        for i in 0..12 {
            t.failed(0, "acme", &format!("user{i}"), ADDR);
        }
        t.failed(0, "acme", "bob", ADDR);
        t.succeeded("acme", "bob");
        // 13 failures from the address: slowed, not refused.
        assert_eq!(t.check(0, "acme", "bob", ADDR), Verdict::Proceed(Duration::from_millis(800)));
        for _ in 0..40 {
            t.failed(0, "acme", "x", ADDR);
        }
        assert!(matches!(t.check(0, "acme", "anyone", ADDR), Verdict::Refuse { .. }));
    }
}
