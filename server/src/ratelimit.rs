//! Token buckets per key (a customer), refilled continuously; used for the purge rate limit.

use std::{collections::HashMap, sync::Mutex};

pub struct RateLimiter {
    /// Tokens added per second.
    rate: f64,
    /// Bucket size: the burst allowed after a quiet time.
    burst: f64,
    buckets: Mutex<HashMap<i64, (f64, i64)>>,
}

impl RateLimiter {
    pub fn new(rate: f64, burst: f64) -> Self {
        RateLimiter { rate, burst, buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes a token for `key` at `now_ms`; when there is none, the milliseconds until there will be.
    pub fn take(&self, key: i64, now_ms: i64) -> Result<(), i64> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, at) = buckets.entry(key).or_insert((self.burst, now_ms));
        let elapsed = (now_ms - *at).max(0) as f64 / 1000.0;
        *tokens = (*tokens + elapsed * self.rate).min(self.burst);
        *at = now_ms.max(*at);
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err((((1.0 - *tokens) / self.rate) * 1000.0).ceil() as i64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_per_second_with_a_burst_of_two() {
        let l = RateLimiter::new(2.0, 2.0);
        assert_eq!(l.take(1, 0), Ok(()));
        assert_eq!(l.take(1, 0), Ok(()));
        assert_eq!(l.take(1, 0), Err(500));
        assert_eq!(l.take(2, 0), Ok(()), "another customer has its own bucket");
        assert_eq!(l.take(1, 250), Err(250));
        assert_eq!(l.take(1, 500), Ok(()));
        assert_eq!(l.take(1, 10_000), Ok(()));
        assert_eq!(l.take(1, 10_000), Ok(()));
        assert_eq!(l.take(1, 10_000), Err(500));
    }
}
