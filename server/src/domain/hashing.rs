//! Password hashing and verification (argon2id), bounded: each takes 19 MiB and about 15 ms of a core, so they
//! run on blocking threads, at most [`PasswordWork::workers`] at once (sized from memory and cores), with a short
//! queue; beyond it a request is answered 503 with Retry-After at once instead of piling up memory and starving
//! every other request.

use std::sync::{
    Arc, LazyLock,
    atomic::{AtomicUsize, Ordering},
};

use argon2::{
    Argon2, PasswordHash, PasswordHasher, PasswordVerifier,
    password_hash::{SaltString, rand_core::OsRng},
};
use tokio::sync::Semaphore;

use crate::http::error::{AppError, AppResult};

/// Memory one argon2 computation takes with the default parameters (m = 19456 KiB).
const ARGON2_BYTES: u64 = 19456 * 1024;
/// The share of the available memory that password work may take.
const MEMORY_SHARE: u64 = 8;
/// Requests that may wait for a worker, per worker.
const QUEUE_PER_WORKER: usize = 16;

/// What hashing a new password costs. Verifying reads the parameters from the stored hash, so logins with a
/// password cost what its hashing did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HashCost {
    /// argon2id with its default parameters (m = 19456 KiB, t = 2, p = 1): about 15 ms of a core.
    #[default]
    Standard,
    /// argon2id with 8 KiB and one pass: microseconds, for the thousands of logins of the server's own tests.
    /// Only in builds with the `test-support` feature, which those tests enable (a dev-dependency of the crate
    /// on itself) and nothing else: no release build, flag or variable reaches it.
    #[cfg(feature = "test-support")]
    CheapForTests,
}

impl HashCost {
    fn hasher(self) -> Argon2<'static> {
        match self {
            HashCost::Standard => Argon2::default(),
            #[cfg(feature = "test-support")]
            HashCost::CheapForTests => match argon2::Params::new(8, 1, 1, None) {
                Ok(params) => Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params),
                Err(_) => Argon2::default(),
            },
        }
    }
}

/// argon2id hash of a password at `cost`, as a PHC string. Blocking: call it through [`PasswordWork::hash`]
/// from a request.
pub fn hash_password(password: &str, cost: HashCost) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    cost.hasher()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing a password: {e}"))
}

/// A hash no password matches, verified when a username is unknown so that the answer takes as long as for a
/// known one (whose password was hashed at the same cost).
fn dummy_hash(cost: HashCost) -> String {
    static STANDARD: LazyLock<String> =
        LazyLock::new(|| hash_password("not a password of anyone", HashCost::Standard).unwrap_or_default());
    match cost {
        HashCost::Standard => STANDARD.clone(),
        #[cfg(feature = "test-support")]
        HashCost::CheapForTests => {
            static CHEAP: LazyLock<String> = LazyLock::new(|| {
                hash_password("not a password of anyone", HashCost::CheapForTests).unwrap_or_default()
            });
            CHEAP.clone()
        }
    }
}

/// The bounded pool of password work.
pub struct PasswordWork {
    cost: HashCost,
    permits: Arc<Semaphore>,
    workers: usize,
    waiting: AtomicUsize,
    max_waiting: usize,
}

impl PasswordWork {
    /// `workers` at once and `queue` waiting; 0 for either means sized from this machine.
    pub fn new(workers: usize, queue: usize, cost: HashCost) -> Self {
        let workers = if workers == 0 { default_workers() } else { workers };
        let max_waiting = if queue == 0 { workers * QUEUE_PER_WORKER } else { queue };
        PasswordWork {
            cost,
            permits: Arc::new(Semaphore::new(workers)),
            workers,
            waiting: AtomicUsize::new(0),
            max_waiting,
        }
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    /// What hashing a new password costs here.
    pub fn cost(&self) -> HashCost {
        self.cost
    }

    /// Runs `work` on a blocking thread once a worker is free, or answers 503 when the queue is full.
    async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> AppResult<T> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.max_waiting {
                    self.waiting.fetch_sub(1, Ordering::SeqCst);
                    return Err(busy());
                }
                let permit = self.permits.clone().acquire_owned().await;
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                permit.map_err(|_| busy())?
            }
        };
        tokio::task::spawn_blocking(move || {
            let out = work();
            drop(permit);
            out
        })
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("password work failed: {e}")))
    }

    /// Hashes a new password.
    pub async fn hash(&self, password: &str) -> AppResult<String> {
        let password = password.to_string();
        let cost = self.cost;
        Ok(self.run(move || hash_password(&password, cost)).await??)
    }

    /// Checks a password against a stored hash, or against nothing (taking the same time) when there is none.
    pub async fn verify(&self, password: &str, hash: Option<&str>) -> AppResult<bool> {
        let password = password.to_string();
        let (hash, cost) = (hash.map(str::to_string), self.cost);
        self.run(move || {
            let real = hash.is_some();
            let hash = hash.unwrap_or_else(|| dummy_hash(cost));
            let ok = PasswordHash::new(&hash)
                .map(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
                .unwrap_or(false);
            ok && real
        })
        .await
    }
}

fn busy() -> AppError {
    AppError::Unavailable {
        kind: "overloaded",
        message: "The server is checking too many passwords at once; try again in a moment.".into(),
        retry_after_secs: 1,
    }
}

/// As many workers as an eighth of the available memory holds, but no more than the cores (more would only
/// queue on them) and at least one.
fn default_workers() -> usize {
    let by_memory = (available_memory().unwrap_or(1 << 30) / MEMORY_SHARE / ARGON2_BYTES) as usize;
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    by_memory.min(cores).max(1)
}

/// `MemAvailable` of /proc/meminfo, in bytes.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn work_beyond_the_workers_and_the_queue_is_refused_at_once() {
        let pool = Arc::new(PasswordWork::new(1, 1, HashCost::Standard));
        let hash = pool.hash("a password of twelve").await.unwrap();
        let runs: Vec<_> = (0..8)
            .map(|_| {
                let (pool, hash) = (pool.clone(), hash.clone());
                tokio::spawn(async move { pool.verify("a password of twelve", Some(&hash)).await })
            })
            .collect();
        let (mut ok, mut busy) = (0, 0);
        for r in runs {
            match r.await.unwrap() {
                Ok(true) => ok += 1,
                Err(AppError::Unavailable { .. }) => busy += 1,
                other => panic!("{other:?}"),
            }
        }
        assert!(ok >= 2 && busy >= 1, "ok {ok}, busy {busy}");
        assert!(!pool.verify("wrong password!!", Some(&hash)).await.unwrap());
        assert!(!pool.verify("anything", None).await.unwrap(), "no hash matches nothing");
        assert!(default_workers() >= 1);
    }
}
