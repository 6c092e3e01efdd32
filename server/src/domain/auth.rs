//! Who is calling, once known: the caller of a request, password logins under brute-force protection and the
//! second factor, and the session rules (30 minutes idle, one day at most). Reading the credentials off a request
//! is the HTTP layer's (`http::caller`).

use std::net::IpAddr;

use base64::Engine;
use edge_api::{Role, audit::op};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::{
    clock::iso_ms,
    domain::{
        otp,
        throttle::{self, Lockout, LoginKey, Outcome, Verdict},
    },
    http::error::{AppError, AppResult},
    state::AppState,
    store::{Actor, AuditEvent, Customer, SessionRecord, Target, TokenRecord, UserRecord},
};

pub use crate::domain::hashing::hash_password;

/// A session dies after this long without a request.
pub const SESSION_IDLE_MS: i64 = 30 * 60 * 1000;

/// A session dies this long after its creation, used or not.
pub const SESSION_MAX_AGE_MS: i64 = 24 * 60 * 60 * 1000;

/// Requests refresh a session's last-access time in storage at most this often; PUT keep-alives always do.
const TOUCH_EVERY_MS: i64 = 15 * 1000;

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub customer: Customer,
    pub user: UserRecord,
    pub role: Role,
    /// The session that authenticated the request, when it came by cookie.
    pub session: Option<SessionRecord>,
    /// The client's address (behind trusted proxies, the one they forward).
    pub addr: IpAddr,
    /// Authenticated by the password alone although the user has two-factor on: an incomplete login, which may
    /// only read the user's own password and two-factor resources (see [`crate::domain::access::authorize`]).
    pub password_only: bool,
    /// The API token that authenticated the request, when it came with `Authorization: Bearer`.
    pub token: Option<TokenRecord>,
}

impl Caller {
    /// Whether HTTP Basic credentials authenticated the request (neither a session nor a token).
    pub fn by_password(&self) -> bool {
        self.session.is_none() && self.token.is_none()
    }
}

/// The record of a change the caller of a request makes (built here, beside [`Caller`]: the record itself, in
/// the store, knows nothing of requests).
impl AuditEvent {
    /// A change made by the caller of a request, now; made with an API token, the record names it (`token`).
    pub fn by(caller: &Caller, now_ms: i64, operation: &str, target: Target) -> AuditEvent {
        let actor = Actor::User { id: caller.user.id.clone(), name: caller.user.username.clone() };
        let event = AuditEvent::new(caller.customer.id, now_ms, actor, caller.addr.to_string(), operation, target);
        match &caller.token {
            Some(t) => event.detail("token", serde_json::json!({"id": t.id, "name": t.name})),
            None => event,
        }
    }
}

/// A new session id: 192 bits from the operating system's random generator, URL-safe.
pub fn new_session_id() -> String {
    let mut bytes = [0u8; 24];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// How a session id is stored: its SHA-256, so the database alone lets no one in.
pub fn token_hash(session_id: &str) -> String {
    hex::encode(Sha256::digest(session_id.as_bytes()))
}

/// When a session stops being valid unless used again.
pub fn session_expiry_ms(s: &SessionRecord) -> i64 {
    (s.last_seen_ms + SESSION_IDLE_MS).min(s.created_ms + SESSION_MAX_AGE_MS)
}

fn invalid_credentials() -> AppError {
    AppError::Unauthorized { kind: "invalid_credentials", message: "The username or password is wrong.".into() }
}

/// A login attempt with a username and password, from `addr`, under the customer named `customer_name`.
pub struct PasswordLogin<'a> {
    pub customer_name: &'a str,
    pub customer: Option<&'a Customer>,
    pub username: &'a str,
    pub password: &'a str,
    pub addr: IpAddr,
    /// The one-time code sent with it (`X-OTP-Token`), if any.
    pub token: Option<&'a str>,
}

impl PasswordLogin<'_> {
    fn key(&self) -> LoginKey {
        LoginKey::new(self.customer_name, self.username, self.addr).with_code(self.code().is_some())
    }

    fn code(&self) -> Option<&str> {
        self.token.filter(|t| !t.trim().is_empty())
    }

    /// Checks the password against the users of the customer, under brute-force protection: the attempt is
    /// counted before the check (see [`crate::throttle`]) and stays counted as a failure unless
    /// [`PasswordLogin::finish`] settles it otherwise. Unknown customers, unknown users, wrong passwords,
    /// disabled users and users whose password was reset all get the same answer after the same work.
    pub async fn check(&self, state: &AppState) -> AppResult<(Customer, UserRecord)> {
        let key = self.key();
        reserve(state, &key).await?;
        let verified = self.verify(state).await;
        match verified {
            Ok(Verified::Yes(customer, user)) => Ok((customer, user)),
            Ok(Verified::No { user, reason }) => {
                Err(self.failed(state, user.as_ref(), reason, Outcome::Failed, invalid_credentials()).await)
            }
            // No guess was judged (the store failed, or the server is too busy to check passwords).
            Err(e) => {
                settle(state, &key, Outcome::Released).await;
                Err(e)
            }
        }
    }

    async fn verify(&self, state: &AppState) -> AppResult<Verified> {
        let user = match self.customer {
            Some(c) => state.store.user_by_username(c.id, self.username).await?,
            None => None,
        };
        let hash = user.as_ref().filter(|u| u.source == "local").and_then(|u| u.password_hash.as_deref());
        let ok = state.passwords.verify(self.password, hash).await?;
        let has_password = hash.is_some();
        Ok(match (self.customer, user) {
            (Some(c), Some(u)) if ok && u.enabled => Verified::Yes(c.clone(), u),
            (_, None) => Verified::No { user: None, reason: "unknown username" },
            (_, Some(u)) => {
                let reason = if !u.enabled {
                    "user disabled"
                } else if !has_password {
                    "no password (reset, or a user of a remote identity source)"
                } else {
                    "wrong password"
                };
                Verified::No { user: Some(u), reason }
            }
        })
    }

    /// Keeps the attempt counted as a failure (`outcome`: of the password or of the code), records it (and any
    /// lock it brings about) in the customer's audit log, and returns `error`.
    async fn failed(
        &self,
        state: &AppState,
        user: Option<&UserRecord>,
        reason: &str,
        outcome: Outcome,
        error: AppError,
    ) -> AppError {
        let (actor, target) = match user {
            Some(u) => (Actor::User { id: u.id.clone(), name: u.username.clone() }, Target::user(u)),
            None => (
                Actor::Unknown(self.username.to_string()),
                Target { kind: "user", id: String::new(), name: self.username.to_string() },
            ),
        };
        let failure = Failure { key: self.key(), addr: self.addr, actor, target, reason, outcome };
        failure.record(state, self.customer_name, self.customer, error).await
    }

    /// For a caller already logged in (by session) whose user has two-factor on: the one-time code of this
    /// request, checked and counted as a login's code is (its step used once, wrong codes throttled). A code is
    /// asked again for what makes credentials (an API token), whatever the session was made with.
    pub async fn confirm_code(&self, state: &AppState, user: &UserRecord) -> AppResult<()> {
        reserve(state, &self.key()).await?;
        self.finish(state, user, true).await.map(|_| ())
    }

    /// After a successful [`PasswordLogin::check`]: the second factor. For a user with two-factor on, a code in
    /// `token` must be right and not used before; without one, the login is incomplete: with `code_required`
    /// that is 401 `otp_required`, otherwise the password alone is accepted for what it may do. Only a
    /// complete login clears the failures counted against the username; a missing code is not a failure, a
    /// wrong one is. Returns whether the login is complete.
    pub async fn finish(&self, state: &AppState, user: &UserRecord, code_required: bool) -> AppResult<bool> {
        let key = self.key();
        let now = state.clock.now_ms();
        let token = self.code();
        if !user.otp_enabled {
            settle(state, &key, Outcome::Succeeded).await;
            return Ok(true);
        }
        let Some(token) = token else {
            settle(state, &key, Outcome::Released).await;
            if code_required {
                return Err(otp_required("Enter the one-time code of your authenticator app (header X-OTP-Token)."));
            }
            return Ok(false);
        };
        let secret = user.otp_secret.as_deref().unwrap_or_default();
        let step = otp::verify(secret, token, now, user.otp_last_step);
        let consumed = match step {
            Some(step) => state.store.consume_otp_step(&user.id, step).await,
            None => Ok(false),
        };
        match consumed {
            Ok(true) => {
                settle(state, &key, Outcome::Succeeded).await;
                Ok(true)
            }
            Ok(false) => Err(self
                .failed(
                    state,
                    Some(user),
                    "wrong one-time code",
                    Outcome::FailedCode,
                    AppError::Unauthorized {
                        kind: "otp_invalid",
                        message: "The one-time code is wrong, expired or already used.".into(),
                    },
                )
                .await),
            Err(e) => {
                settle(state, &key, Outcome::Released).await;
                Err(e.into())
            }
        }
    }
}

/// A guess that failed — a wrong password or code, an unknown API token — and what its record names.
pub struct Failure<'a> {
    /// What it is counted under.
    pub key: LoginKey,
    /// The client's address as it is (the key holds an IPv6 address by its /64).
    pub addr: IpAddr,
    pub actor: Actor,
    pub target: Target,
    /// Why it failed, for the audit log only.
    pub reason: &'a str,
    pub outcome: Outcome,
}

impl Failure<'_> {
    /// Keeps the attempt (reserved under `key`) counted as a failure, records it (and any lock it brings about)
    /// in the audit log of `customer` (the server's log when the customer named `customer_name` does not
    /// exist), and returns `error`.
    pub async fn record(
        self,
        state: &AppState,
        customer_name: &str,
        customer: Option<&Customer>,
        error: AppError,
    ) -> AppError {
        let now = state.clock.now_ms();
        let lockouts = settle(state, &self.key, self.outcome).await;
        let Some(customer) = customer else {
            // No audit log exists to record it in: the server's log does, so an operator sees guessing of
            // customer names too.
            tracing::warn!(
                customer = %edge_api::limits::cut(customer_name, 64),
                username = %edge_api::limits::cut(&self.key.username, 64),
                addr = %self.addr,
                "failed login under a customer that does not exist"
            );
            return error;
        };
        let (actor, target, addr) = (self.actor, self.target, self.addr);
        let event = |operation| {
            AuditEvent::new(customer.id, now, actor.clone(), addr.to_string(), operation, target.clone()).failure()
        };
        let mut events = vec![event(op::LOGIN_FAILURE).detail("reason", self.reason)];
        for lockout in lockouts {
            let scope = match lockout {
                Lockout::UsernameFromAddress => "username from this address",
                Lockout::Address => "this address, every username",
                Lockout::Codes => "one-time codes of this username, every address",
            };
            events.push(
                event(op::LOGIN_LOCKOUT)
                    .detail("scope", scope)
                    .detail("until", iso_ms(now + crate::domain::throttle::WINDOW_MS)),
            );
        }
        for e in events {
            // A failed login changes nothing that its record could roll back; a record that cannot be written
            // is logged, and the answer stays the same.
            if let Err(err) = state.store.record_audit(&e).await {
                tracing::error!(error = %err, operation = e.operation, "writing an audit record failed");
            }
        }
        error
    }
}

/// Reserves an attempt under `key` before its credentials are checked (see [`throttle::reserve`]): 429 when a
/// key is locked, after the wait a slowed key asks for.
pub async fn reserve(state: &AppState, key: &LoginKey) -> AppResult<()> {
    let (store, waits) = (state.store.as_ref(), state.login_waits.as_ref());
    match throttle::reserve(store, waits, state.clock.now_ms(), key, state.settings.login_slowdown).await? {
        Verdict::Refuse { retry_after_secs } => Err(AppError::TooManyRequests {
            message: "Too many failed logins: wait before trying again.".into(),
            retry_after_secs,
        }),
        Verdict::Proceed(delay) => {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Ok(())
        }
    }
}

/// Settles a counted attempt (see [`crate::store::Logins::settle_login`]) and wakes an attempt of this process
/// waiting on its keys (every one when a key was just locked); returns the locks a failure brought about. When
/// the store cannot record it, that is logged and the answer stays the same: the reservation expires by itself
/// (see [`throttle::PENDING_TTL_MS`]).
async fn settle(state: &AppState, key: &LoginKey, outcome: Outcome) -> Vec<Lockout> {
    match state.store.settle_login(state.clock.now_ms(), key, outcome).await {
        Ok(lockouts) => {
            state.login_waits.settled(key, !lockouts.is_empty());
            lockouts
        }
        Err(e) => {
            tracing::error!(error = %e, ?outcome, "settling a login attempt failed");
            // Waiters ask the store themselves now (they find the reservation until it expires).
            state.login_waits.settled(key, false);
            Vec::new()
        }
    }
}

/// What a password check found.
enum Verified {
    Yes(Customer, UserRecord),
    /// Wrong; the user when the username names one, and why (for the audit log only).
    No {
        user: Option<UserRecord>,
        reason: &'static str,
    },
}

/// 401 `otp_required`: the request needs a one-time code too.
pub fn otp_required(message: &str) -> AppError {
    AppError::Unauthorized { kind: "otp_required", message: message.into() }
}

/// A live session with its customer and user (one read), deleting the session when it has expired.
pub async fn live_session(
    state: &AppState,
    session_id: &str,
) -> AppResult<Option<(SessionRecord, Customer, UserRecord)>> {
    let hash = token_hash(session_id);
    let Some(found) = state.store.session_with_user(&hash).await? else { return Ok(None) };
    let now = state.clock.now_ms();
    if now >= session_expiry_ms(&found.0) {
        let (_, customer, user) = &found;
        let expired = AuditEvent::system(customer.id, now, op::SESSION_EXPIRE, Target::session(&hash, &user.username));
        state.store.delete_session(&hash, &expired).await?;
        return Ok(None);
    }
    Ok(Some(found))
}

/// Records a use of the session; with `force` always, otherwise at most every few seconds.
pub async fn touch_session(state: &AppState, session: &mut SessionRecord, force: bool) -> AppResult<()> {
    let now = state.clock.now_ms();
    if force || now - session.last_seen_ms >= TOUCH_EVERY_MS {
        state.store.touch_session(&session.token_hash, now).await?;
        session.last_seen_ms = session.last_seen_ms.max(now);
    }
    Ok(())
}

pub fn role_of(user: &UserRecord) -> AppResult<Role> {
    Role::parse(&user.role).ok_or_else(|| anyhow::anyhow!("user {} has unknown role {:?}", user.id, user.role).into())
}
