//! The edge fleet, as far as the control plane sees it: a change (a purge, a configuration or network-list
//! deployment) is sent to every edge node, and each acknowledges after a while — or never. [`Fleet`] gives that
//! schedule; the progress of a task is derived from it and the clock, so nothing sleeps and a restart loses
//! nothing.

use sha2::{Digest, Sha256};

/// A change is given up when some node has not acknowledged it this long after submission.
pub const GIVE_UP_MS: i64 = 60_000;

pub trait Fleet: Send + Sync + 'static {
    /// Number of edge nodes.
    fn nodes(&self) -> usize;
    /// Milliseconds after submission at which each node acknowledges change `change_id`; `None` for a node that
    /// never does. Deterministic: the same change always has the same schedule.
    fn schedule(&self, change_id: &str) -> Vec<Option<i64>>;
}

/// A simulated fleet: acknowledgement latencies spread uniformly (by a hash of the change and node) between
/// `min_ms` and `max_ms`; a `slow_node` that misses the first attempt and acknowledges after a retry; a
/// `dead_node` that never answers.
#[derive(Debug, Clone)]
pub struct SimulatedFleet {
    pub nodes: usize,
    pub min_ms: i64,
    pub max_ms: i64,
    pub slow_node: Option<usize>,
    pub retry_ms: i64,
    pub dead_node: Option<usize>,
}

impl SimulatedFleet {
    /// What the server runs with: 24 nodes answering in 0.3–2.5 s, one of them only after a 4 s retry, so that
    /// a purge takes a few seconds and its progress can be watched.
    pub fn standard() -> Self {
        SimulatedFleet { nodes: 24, min_ms: 300, max_ms: 2500, slow_node: Some(7), retry_ms: 4000, dead_node: None }
    }
}

fn unit(change_id: &str, node: usize) -> f64 {
    let digest = Sha256::digest(format!("{change_id}/{node}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

impl Fleet for SimulatedFleet {
    fn nodes(&self) -> usize {
        self.nodes
    }

    fn schedule(&self, change_id: &str) -> Vec<Option<i64>> {
        (0..self.nodes)
            .map(|node| {
                if self.dead_node == Some(node) {
                    return None;
                }
                let latency = self.min_ms + ((self.max_ms - self.min_ms) as f64 * unit(change_id, node)) as i64;
                Some(if self.slow_node == Some(node) { latency + self.retry_ms } else { latency })
            })
            .collect()
    }
}

/// Where a change stands at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Share of nodes that acknowledged, 0–100.
    pub percent: u8,
    /// Time of the latest acknowledgement so far (or the beginning).
    pub last_ms: i64,
}

/// Progress of a change that began at `begin_ms`, at `now_ms`.
pub fn progress(schedule: &[Option<i64>], begin_ms: i64, now_ms: i64) -> Progress {
    let elapsed = now_ms - begin_ms;
    let acked: Vec<i64> = schedule.iter().flatten().copied().filter(|t| *t <= elapsed).collect();
    let percent = if schedule.is_empty() { 100 } else { (acked.len() * 100 / schedule.len()) as u8 };
    Progress { percent, last_ms: begin_ms + acked.into_iter().max().unwrap_or(0) }
}

/// When a change that began at `begin_ms` ends, and whether it fails (some node never acknowledges).
pub fn outcome(schedule: &[Option<i64>], begin_ms: i64) -> (i64, bool) {
    if schedule.iter().any(Option::is_none) {
        (begin_ms + GIVE_UP_MS, true)
    } else {
        (begin_ms + schedule.iter().flatten().copied().max().unwrap_or(0), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_deterministic_and_within_bounds() {
        let fleet = SimulatedFleet::standard();
        let a = fleet.schedule("purge-1");
        assert_eq!(a, fleet.schedule("purge-1"));
        assert_ne!(a, fleet.schedule("purge-2"));
        assert_eq!(a.len(), 24);
        for (node, t) in a.iter().enumerate() {
            let t = t.unwrap();
            let (lo, hi) = if node == 7 { (4300, 6500) } else { (300, 2500) };
            assert!((lo..=hi).contains(&t), "node {node}: {t}");
        }
    }

    #[test]
    fn progress_rises_to_100_at_the_end() {
        let fleet = SimulatedFleet::standard();
        let s = fleet.schedule("x");
        let (end, failed) = outcome(&s, 1000);
        assert!(!failed);
        assert_eq!(progress(&s, 1000, 1000).percent, 0);
        let mid = progress(&s, 1000, 3000).percent;
        assert!(mid > 0 && mid < 100, "{mid}");
        assert_eq!(progress(&s, 1000, end - 1).percent, 95, "23 of 24 before the slow node");
        assert_eq!(progress(&s, 1000, end), Progress { percent: 100, last_ms: end });
    }

    #[test]
    fn a_dead_node_makes_the_change_fail_after_the_give_up_time() {
        let fleet = SimulatedFleet { dead_node: Some(0), ..SimulatedFleet::standard() };
        let s = fleet.schedule("x");
        assert_eq!(outcome(&s, 0), (GIVE_UP_MS, true));
        assert_eq!(progress(&s, 0, GIVE_UP_MS).percent, 95);
    }
}
