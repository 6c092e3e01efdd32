//! The keys of a customer's batches stored with an `Idempotency-Key`, and what each was answered: logged with
//! their batch (so a replay of the log rebuilds them), kept in snapshots, and bounded by age and count.

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
};

use super::{
    super::{DIMS, Endpoint, KEYS_KEPT_MS, KEYS_KEPT_PER_CUSTOMER, Kept, Keyed, Stored, dim_id},
    codec::{Dec, Decode, Enc},
};

/// One kept key, as logged and snapshotted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) endpoint: Endpoint,
    pub(super) key: Arc<str>,
    pub(super) at_ms: i64,
    pub(super) body_hash: [u8; 32],
    pub(super) accepted: u64,
    /// Per dimension id, records folded.
    pub(super) folded: Vec<(u8, u64)>,
}

impl Entry {
    pub(super) fn new(key: &Keyed, at_ms: i64, accepted: u64, stored: &Stored) -> Entry {
        Entry {
            endpoint: key.endpoint,
            key: Arc::from(key.key.as_str()),
            at_ms,
            body_hash: key.body_hash,
            accepted,
            folded: stored.folded.iter().filter_map(|(d, n)| Some((dim_id(d)? as u8, *n))).collect(),
        }
    }

    pub(super) fn encode(&self, e: &mut Enc) {
        e.u8(self.endpoint.code());
        e.str(&self.key);
        e.i64(self.at_ms);
        e.0.extend_from_slice(&self.body_hash);
        e.u64(self.accepted);
        e.u32(self.folded.len() as u32);
        for (dim, n) in &self.folded {
            e.u8(*dim);
            e.u64(*n);
        }
    }

    pub(super) fn decode(d: &mut Dec) -> anyhow::Result<Entry> {
        let endpoint = Endpoint::from_code(d.u8()?).ok_or_else(|| anyhow::anyhow!("unknown endpoint"))?;
        let key = Arc::from(d.str()?);
        let at_ms = d.i64()?;
        let body_hash = d.take(32)?.try_into()?;
        let accepted = d.u64()?;
        let n = d.u32()? as usize;
        anyhow::ensure!(n <= DIMS.len(), "too many folded dimensions");
        let mut folded = Vec::with_capacity(n);
        for _ in 0..n {
            let dim = d.u8()?;
            anyhow::ensure!((dim as usize) < DIMS.len(), "bad dimension id");
            folded.push((dim, d.u64()?));
        }
        Ok(Entry { endpoint, key, at_ms, body_hash, accepted, folded })
    }

    fn kept(&self) -> Kept {
        Kept {
            body_hash: self.body_hash,
            accepted: self.accepted,
            folded: self.folded.iter().map(|(d, n)| (DIMS[*d as usize], *n)).collect(),
        }
    }
}

/// A customer's kept keys, oldest first.
#[derive(Debug, Default)]
pub(super) struct Keys {
    by_key: HashMap<(Endpoint, Arc<str>), Entry>,
    order: VecDeque<(Endpoint, Arc<str>, i64)>,
}

impl Keys {
    /// Keeps `entry`, forgetting keys older than [`KEYS_KEPT_MS`] at `now_ms` and the oldest past
    /// [`KEYS_KEPT_PER_CUSTOMER`].
    pub(super) fn insert(&mut self, entry: Entry, now_ms: i64) {
        self.order.push_back((entry.endpoint, entry.key.clone(), entry.at_ms));
        self.by_key.insert((entry.endpoint, entry.key.clone()), entry);
        self.prune(now_ms);
    }

    pub(super) fn prune(&mut self, now_ms: i64) {
        let from = now_ms.saturating_sub(KEYS_KEPT_MS);
        while let Some((endpoint, key, at_ms)) = self.order.front() {
            if *at_ms >= from && self.order.len() <= KEYS_KEPT_PER_CUSTOMER {
                break;
            }
            let id = (*endpoint, key.clone());
            // Only the entry this place stands for (a key kept again later has a place of its own).
            if self.by_key.get(&id).is_some_and(|e| e.at_ms == *at_ms) {
                self.by_key.remove(&id);
            }
            self.order.pop_front();
        }
    }

    /// The key's entry, unless it is older than [`KEYS_KEPT_MS`] at `now_ms`.
    pub(super) fn get(&self, endpoint: Endpoint, key: &str, now_ms: i64) -> Option<Kept> {
        let entry = self.by_key.get(&(endpoint, Arc::from(key)))?;
        (entry.at_ms >= now_ms.saturating_sub(KEYS_KEPT_MS)).then(|| entry.kept())
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Every kept entry, oldest first (for a snapshot).
    pub(super) fn encode(&self, e: &mut Enc) {
        let live: Vec<&Entry> = self
            .order
            .iter()
            .filter_map(|(endpoint, key, at_ms)| {
                self.by_key.get(&(*endpoint, key.clone())).filter(|entry| entry.at_ms == *at_ms)
            })
            .collect();
        e.u32(live.len() as u32);
        for entry in live {
            entry.encode(e);
        }
    }

    pub(super) fn decode(d: &mut Dec, now_ms: i64) -> anyhow::Result<Keys> {
        let mut keys = Keys::default();
        for _ in 0..d.u32()? {
            keys.insert(Entry::decode(d)?, now_ms);
        }
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, at_ms: i64) -> Entry {
        Entry {
            endpoint: Endpoint::AccessLogs,
            key: Arc::from(key),
            at_ms,
            body_hash: [7; 32],
            accepted: 3,
            folded: vec![(3, 2)],
        }
    }

    #[test]
    fn keys_are_forgotten_after_a_day_and_past_the_count_oldest_first() {
        let day = KEYS_KEPT_MS;
        let mut keys = Keys::default();
        keys.insert(entry("old", 0), 0);
        keys.insert(entry("new", day / 2), day / 2);
        assert!(keys.get(Endpoint::AccessLogs, "old", day).is_some());
        assert!(keys.get(Endpoint::AccessLogs, "old", day + 1).is_none(), "older than a day is not answered");
        assert!(keys.get(Endpoint::SecurityEvents, "new", day).is_none(), "scoped to the endpoint");
        keys.insert(entry("later", day + 1), day + 1);
        assert_eq!(keys.len(), 2, "the old key is dropped as soon as another comes");
        for i in 0..KEYS_KEPT_PER_CUSTOMER {
            keys.insert(entry(&format!("k{i}"), day + 2), day + 2);
        }
        assert_eq!(keys.len(), KEYS_KEPT_PER_CUSTOMER);
        assert!(keys.get(Endpoint::AccessLogs, "new", day + 2).is_none());
        assert!(keys.get(Endpoint::AccessLogs, "k0", day + 2).is_some());
    }

    #[test]
    fn entries_encode_and_decode_alike() {
        let mut keys = Keys::default();
        keys.insert(entry("a", 5), 5);
        keys.insert(Entry { endpoint: Endpoint::SecurityEvents, folded: vec![], ..entry("é/b", 6) }, 6);
        let mut e = Enc(Vec::new());
        keys.encode(&mut e);
        let back = Keys::decode(&mut Dec(&e.0), 6).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back.by_key, keys.by_key);
        assert_eq!(
            back.get(Endpoint::AccessLogs, "a", 6),
            Some(Kept { body_hash: [7; 32], accepted: 3, folded: vec![(DIMS[3], 2)] })
        );
    }
}
