//! Who is calling: credentials (HTTP Basic or the `authtoken` session cookie) resolved to a user of the
//! customer named in the path, roles, and the session rules (30 minutes idle, one day at most).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::{
    extract::{ConnectInfo, FromRequestParts, RawPathParams},
    http::{HeaderMap, header, request::Parts},
};
use base64::Engine;
use edge_api::{
    Role,
    audit::op,
    limits::{MAX_PASSWORD_BYTES, MAX_USERNAME_BYTES},
};
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
    store::{Actor, AuditEvent, Customer, SessionRecord, Target, UserRecord},
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
}

/// The record of a change the caller of a request makes (built here, beside [`Caller`]: the record itself, in
/// the store, knows nothing of requests).
impl AuditEvent {
    /// A change made by the caller of a request, now.
    pub fn by(caller: &Caller, now_ms: i64, operation: &str, target: Target) -> AuditEvent {
        let actor = Actor::User { id: caller.user.id.clone(), name: caller.user.username.clone() };
        AuditEvent::new(caller.customer.id, now_ms, actor, caller.addr.to_string(), operation, target)
    }
}

/// Username and password from an `Authorization: Basic` header. `Ok(None)` when there is no such header; 400
/// `credentials_too_long` beyond the limits.
pub fn basic_credentials(headers: &HeaderMap) -> AppResult<Option<(String, String)>> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let malformed = || AppError::unauthorized("The Authorization header is not valid HTTP Basic credentials.");
    let value = value.to_str().map_err(|_| malformed())?;
    let Some((scheme, encoded)) = value.split_once(' ') else { return Err(malformed()) };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(malformed());
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (user, password) = decoded.split_once(':').ok_or_else(malformed)?;
    // Before anything counts, checks or records the attempt: an oversized name would be a throttle key and an
    // audit record, an oversized password work for the hash.
    if user.len() > MAX_USERNAME_BYTES || password.len() > MAX_PASSWORD_BYTES {
        return Err(AppError::bad_request(
            "credentials_too_long",
            format!("A username has at most {MAX_USERNAME_BYTES} bytes and a password at most {MAX_PASSWORD_BYTES}."),
        ));
    }
    Ok(Some((user.to_string(), password.to_string())))
}

/// The value of the `authtoken` cookie, if the request carries one.
pub fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == edge_api::paths::SESSION_COOKIE)
        .map(|(_, value)| value.to_string())
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

/// The client's address: the TCP peer, or behind a trusted proxy the address it forwards (see
/// [`crate::domain::net::TrustedProxies`]); the unspecified address when unknown (tests through the router).
pub fn client_addr(parts: &Parts, state: &AppState) -> IpAddr {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    state.settings.trusted_proxies.client_addr(peer, &parts.headers)
}

/// The customer named by the path: its name as written, and the customer when it exists.
async fn path_customer(parts: &mut Parts, state: &AppState) -> AppResult<(String, Option<Customer>)> {
    let name = path_customer_name(parts, state).await?;
    let customer = state.store.customer_by_name(&name).await?;
    Ok((name, customer))
}

/// The customer name in the path, as written.
async fn path_customer_name(parts: &mut Parts, state: &AppState) -> AppResult<String> {
    let params = RawPathParams::from_request_parts(parts, state).await.map_err(|_| AppError::NotFound("customer"))?;
    Ok(params.iter().find(|(k, _)| *k == "customer").map(|(_, v)| v.to_string()).unwrap_or_default())
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
        let (store, waits) = (state.store.as_ref(), state.login_waits.as_ref());
        match throttle::reserve(store, waits, state.clock.now_ms(), &key, state.settings.login_slowdown).await? {
            Verdict::Refuse { retry_after_secs } => {
                return Err(AppError::TooManyRequests {
                    message: "Too many failed logins: wait before trying again.".into(),
                    retry_after_secs,
                });
            }
            Verdict::Proceed(delay) if !delay.is_zero() => tokio::time::sleep(delay).await,
            Verdict::Proceed(_) => {}
        }
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
        let now = state.clock.now_ms();
        let lockouts = settle(state, &self.key(), outcome).await;
        let Some(customer) = self.customer else {
            // No audit log exists to record it in: the server's log does, so an operator sees guessing of
            // customer names too.
            tracing::warn!(
                customer = %edge_api::limits::cut(self.customer_name, 64),
                username = %edge_api::limits::cut(self.username, 64),
                addr = %self.addr,
                "failed login under a customer that does not exist"
            );
            return error;
        };
        let (actor, target) = match user {
            Some(u) => (Actor::User { id: u.id.clone(), name: u.username.clone() }, Target::user(u)),
            None => (
                Actor::Unknown(self.username.to_string()),
                Target { kind: "user", id: String::new(), name: self.username.to_string() },
            ),
        };
        let event = |operation| {
            AuditEvent::new(customer.id, now, actor.clone(), self.addr.to_string(), operation, target.clone()).failure()
        };
        let mut events = vec![event(op::LOGIN_FAILURE).detail("reason", reason)];
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

impl FromRequestParts<AppState> for Caller {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        if let Some(cached) = parts.extensions.get::<Caller>() {
            return Ok(cached.clone());
        }
        let addr = client_addr(parts, state);
        let caller = if let Some((username, password)) = basic_credentials(&parts.headers)? {
            let (customer_name, customer) = path_customer(parts, state).await?;
            let token = parts.headers.get(edge_api::paths::OTP_HEADER).and_then(|v| v.to_str().ok());
            let login = PasswordLogin {
                customer_name: &customer_name,
                customer: customer.as_ref(),
                username: &username,
                password: &password,
                addr,
                token,
            };
            let (customer, user) = login.check(state).await?;
            let complete = login.finish(state, &user, false).await?;
            let role = role_of(&user)?;
            Caller { customer, user, role, session: None, addr, password_only: !complete }
        } else if let Some(session_id) = session_cookie(&parts.headers) {
            let customer_name = path_customer_name(parts, state).await?;
            let invalid = || AppError::Unauthorized {
                kind: "session_invalid",
                message: "The session has expired or was ended; log in again.".into(),
            };
            let (mut session, customer, user) = live_session(state, &session_id).await?.ok_or_else(invalid)?;
            // A session of another customer: answer as if nothing existed at this address.
            if customer.name != customer_name {
                return Err(AppError::NotFound("resource"));
            }
            if !user.enabled {
                return Err(invalid());
            }
            check_same_origin(parts)?;
            touch_session(state, &mut session, false).await?;
            let role = role_of(&user)?;
            Caller { customer, user, role, session: Some(session), addr, password_only: false }
        } else {
            return Err(AppError::Unauthorized {
                kind: "unauthorized",
                message: "Authentication is required: HTTP Basic credentials or a session cookie.".into(),
            });
        };
        parts.extensions.insert(caller.clone());
        Ok(caller)
    }
}

/// Refuses a request that changes something with the session cookie from another site (cross-site request
/// forgery): its `Origin` must be this server's (the `Host` it was sent to), or, without an `Origin`, the
/// browser must not mark it `Sec-Fetch-Site: cross-site`. The cookie is also `SameSite=Strict`.
fn check_same_origin(parts: &Parts) -> AppResult<()> {
    if matches!(parts.method, axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS) {
        return Ok(());
    }
    let refuse =
        || AppError::Forbidden("Requests that change something must come from the console's own origin.".into());
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()));
    match parts.headers.get(header::ORIGIN).map(|v| v.to_str().unwrap_or("")) {
        Some(origin) => {
            let origin_host = origin.split_once("://").map(|(_, rest)| rest.trim_end_matches('/'));
            if origin_host.is_none() || origin_host != host {
                return Err(refuse());
            }
        }
        None => {
            if parts.headers.get("sec-fetch-site").is_some_and(|v| v.as_bytes() == b"cross-site") {
                return Err(refuse());
            }
        }
    }
    Ok(())
}

fn role_of(user: &UserRecord) -> AppResult<Role> {
    Role::parse(&user.role).ok_or_else(|| anyhow::anyhow!("user {} has unknown role {:?}", user.id, user.role).into())
}

/// The customer named by the `{customer}` path segment (its name, and the customer when it exists), and the
/// client's address. Used where the caller is not authenticated yet (creating a session).
pub struct PathCustomer {
    pub name: String,
    pub customer: Option<Customer>,
    pub addr: IpAddr,
}

impl FromRequestParts<AppState> for PathCustomer {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let (name, customer) = path_customer(parts, state).await?;
        Ok(PathCustomer { name, customer, addr: client_addr(parts, state) })
    }
}
