//! Login attempts counted against the throttle's limits (see [`crate::throttle`]), in the database so that every
//! replica counts against the same limits and a restart forgets nothing.

use async_trait::async_trait;

use super::{
    StoreResult,
    db::{Query, Row, query},
    sql::{SqlStore, prune_in_batches},
};
use crate::domain::throttle::policy::{self as throttle, Count, Decision, Lockout, LoginKey, Outcome};

/// Login throttling: the counts of each key, decided on and settled in one transaction each.
#[async_trait]
pub trait Logins: Send + Sync {
    /// Login throttling (see [`crate::throttle`]): decides on an attempt from the counts of its keys and, when
    /// it may go on, counts it as pending and makes it the keys' latest activity, in one step.
    async fn reserve_login(&self, now_ms: i64, key: &LoginKey) -> StoreResult<Decision>;
    /// Settles an attempt counted by [`Logins::reserve_login`]: a failure is counted on each key (a wrong
    /// password not under the account's codes; returning the locks it brings about, each reported once per
    /// window), a success clears the username's failures (from this address, from anywhere, and of its codes), a
    /// released attempt is only taken back.
    async fn settle_login(&self, now_ms: i64, key: &LoginKey, outcome: Outcome) -> StoreResult<Vec<Lockout>>;
    /// What [`Logins::reserve_login`] would decide now, read without reserving anything or taking the write
    /// lock (a waiting attempt asks this first).
    async fn login_decision(&self, now_ms: i64, key: &LoginKey) -> StoreResult<Decision>;
    /// Forgets the failures of a username from every address and of its one-time codes (an administrator reset
    /// its password: whoever guessed with the old one is shut out anyway). Locks of the username from single
    /// addresses stay.
    async fn forgive_logins(&self, customer: &str, username: &str) -> StoreResult<()>;
    /// Forgets counts whose window has passed and pending attempts that expired; returns how many.
    async fn prune_logins(&self, now_ms: i64) -> StoreResult<u64>;
}

#[async_trait]
impl Logins for SqlStore {
    async fn reserve_login(&self, now_ms: i64, key: &LoginKey) -> StoreResult<Decision> {
        let keys = key.stored();
        let mut tx = self.db.begin().await?;
        tx.lock_keys(&present(&keys)).await?;
        let (failures, pending) = throttle_queries(&keys, now_ms);
        let (rows, pending) = (failures.fetch_all(&mut tx).await?, pending.fetch_one(&mut tx).await?);
        let decision = throttle::decide(now_ms, &throttle_counts(&keys, &rows, &pending, now_ms)?);
        if !matches!(decision, Decision::Proceed { .. }) {
            return Ok(decision);
        }
        for k in present(&keys) {
            // A count past its window starts again; the attempt is the key's latest activity.
            query(format!(
                "INSERT INTO login_failures AS f (key, failures, last_ms, lock_reported) VALUES ($1, 0, $2, FALSE)
                 ON CONFLICT (key) DO UPDATE SET
                     failures = CASE WHEN $2 - f.last_ms < {window} THEN f.failures ELSE 0 END,
                     lock_reported = CASE WHEN $2 - f.last_ms < {window} THEN f.lock_reported ELSE FALSE END,
                     last_ms = $2",
                window = throttle::WINDOW_MS
            ))
            .bind(k)
            .bind(now_ms)
            .execute(&mut tx)
            .await?;
        }
        query(
            "INSERT INTO login_pending (pair_key, addr_key, user_key, code_key, expires_ms) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(keys[0].as_deref())
        .bind(keys[1].as_deref())
        .bind(keys[2].as_deref())
        .bind(keys[3].as_deref())
        .bind(now_ms + throttle::PENDING_TTL_MS)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(decision)
    }

    async fn settle_login(&self, now_ms: i64, key: &LoginKey, outcome: Outcome) -> StoreResult<Vec<Lockout>> {
        let keys = key.stored();
        let mut tx = self.db.begin().await?;
        tx.lock_keys(&present(&keys)).await?;
        query(
            "DELETE FROM login_pending WHERE id IN
                 (SELECT id FROM login_pending
                  WHERE pair_key = $1 AND (code_key = $2 OR (code_key IS NULL AND $2 IS NULL))
                  ORDER BY expires_ms LIMIT 1)",
        )
        .bind(keys[0].as_deref())
        .bind(keys[3].as_deref())
        .execute(&mut tx)
        .await?;
        let mut lockouts = Vec::new();
        match outcome {
            Outcome::Released => {}
            Outcome::Succeeded => {
                query("UPDATE login_failures SET failures = 0, lock_reported = FALSE WHERE key IN ($1, $2, $3)")
                    .bind(keys[0].as_deref())
                    .bind(keys[2].as_deref())
                    .bind(keys[3].as_deref())
                    .execute(&mut tx)
                    .await?;
            }
            Outcome::Failed | Outcome::FailedCode => {
                // A wrong password is no guess of a code.
                let counted = if outcome == Outcome::Failed { 3 } else { 4 };
                for (k, limits) in keys.iter().zip(throttle::LIMITS).take(counted) {
                    let Some(k) = k else { continue };
                    let row = query(format!(
                        "INSERT INTO login_failures AS f (key, failures, last_ms, lock_reported)
                         VALUES ($1, 1, $2, FALSE)
                         ON CONFLICT (key) DO UPDATE SET
                             failures = CASE WHEN $2 - f.last_ms < {window} THEN f.failures + 1 ELSE 1 END,
                             lock_reported = CASE WHEN $2 - f.last_ms < {window} THEN f.lock_reported ELSE FALSE END,
                             last_ms = $2
                         RETURNING failures, lock_reported",
                        window = throttle::WINDOW_MS
                    ))
                    .bind(k)
                    .bind(now_ms)
                    .fetch_one(&mut tx)
                    .await?;
                    let (failures, reported): (i64, bool) = (row.get("failures")?, row.get("lock_reported")?);
                    let locks = limits.lock_after.is_some_and(|lock| failures >= i64::from(lock));
                    if let (true, false, Some(lockout)) = (locks, reported, limits.lockout) {
                        query("UPDATE login_failures SET lock_reported = TRUE WHERE key = $1")
                            .bind(k)
                            .execute(&mut tx)
                            .await?;
                        lockouts.push(lockout);
                    }
                }
            }
        }
        tx.commit().await?;
        Ok(lockouts)
    }

    async fn login_decision(&self, now_ms: i64, key: &LoginKey) -> StoreResult<Decision> {
        let keys = key.stored();
        let (failures, pending) = throttle_queries(&keys, now_ms);
        let (rows, pending) = (failures.fetch_all(&self.db).await?, pending.fetch_one(&self.db).await?);
        Ok(throttle::decide(now_ms, &throttle_counts(&keys, &rows, &pending, now_ms)?))
    }

    async fn forgive_logins(&self, customer: &str, username: &str) -> StoreResult<()> {
        let keys = LoginKey::new(customer, username, std::net::IpAddr::from([0, 0, 0, 0])).with_code(true).stored();
        query("DELETE FROM login_failures WHERE key IN ($1, $2)")
            .bind(keys[2].as_deref())
            .bind(keys[3].as_deref())
            .execute(&self.db)
            .await?;
        Ok(())
    }

    async fn prune_logins(&self, now_ms: i64) -> StoreResult<u64> {
        let failures = prune_in_batches(&self.db, "login_failures", "key", "last_ms", now_ms - throttle::WINDOW_MS);
        let pending = prune_in_batches(&self.db, "login_pending", "id", "expires_ms", now_ms + 1);
        Ok(failures.await? + pending.await?)
    }
}

/// The queries of what is stored of `keys` (see [`LoginKey::stored`]) at `now_ms`: their failures, and their
/// pending reservations; read by [`throttle_counts`].
fn throttle_queries(keys: &[Option<String>; 4], now_ms: i64) -> (Query, Query) {
    let failures = query("SELECT key, failures, last_ms FROM login_failures WHERE key IN ($1, $2, $3, $4)");
    let failures = keys.iter().fold(failures, |q, k| q.bind(k.as_deref()));
    let pending = query(
        "SELECT (SELECT COUNT(*) FROM login_pending WHERE pair_key = $1 AND expires_ms > $5),
                (SELECT COUNT(*) FROM login_pending WHERE addr_key = $2 AND expires_ms > $5),
                (SELECT COUNT(*) FROM login_pending WHERE user_key = $3 AND expires_ms > $5),
                (SELECT COUNT(*) FROM login_pending WHERE code_key = $4 AND expires_ms > $5)",
    );
    let pending = keys.iter().fold(pending, |q, k| q.bind(k.as_deref())).bind(now_ms);
    (failures, pending)
}

/// What the stored counts of `keys` say at `now_ms`: failures still in the window, pending reservations.
fn throttle_counts(
    keys: &[Option<String>; 4],
    rows: &[Row],
    pending: &Row,
    now_ms: i64,
) -> StoreResult<[Option<Count>; 4]> {
    let mut counts: [Option<Count>; 4] = [None; 4];
    for (i, key) in keys.iter().enumerate() {
        let Some(key) = key else { continue };
        let pending: i64 = pending.at(i)?;
        let stored = rows.iter().find(|r| r.get::<String>("key").is_ok_and(|k| k == *key));
        let (failures, last_ms) = match stored {
            Some(r) => (r.get::<i64>("failures")?, r.get::<i64>("last_ms")?),
            None if pending == 0 => continue,
            None => (0, now_ms),
        };
        counts[i] =
            Some(Count { failures: failures.clamp(0, u32::MAX.into()) as u32, pending: pending as u32, last_ms });
    }
    Ok(counts)
}

/// The present keys of an attempt, as strings.
fn present(keys: &[Option<String>; 4]) -> Vec<&str> {
    keys.iter().flatten().map(String::as_str).collect()
}
