//! Who is calling, and whether they may: credentials (HTTP Basic, an API token as `Authorization: Bearer`, or the
//! `authtoken` session cookie) resolved to a user of the customer named in the path, a token's scope for the
//! route, the same-origin check of cookie requests, and the access rules as extractors. A handler names its rule in its signature (`Allowed<perm::ManageUsers>`, `SelfOr<perm::ReadUsers>`,
//! `OwnWithPassword`, `OwnLocal`, `Authed`, …) and receives the [`Caller`] only when the rule holds (decided by
//! `domain::access::authorize`).

use std::{
    marker::PhantomData,
    net::{IpAddr, Ipv6Addr, SocketAddr},
};

use axum::{
    extract::{ConnectInfo, FromRequestParts, MatchedPath, RawPathParams},
    http::{HeaderMap, header, request::Parts},
};
use base64::Engine;
use edge_api::{
    limits::{MAX_PASSWORD_BYTES, MAX_USERNAME_BYTES},
    perm,
};

use crate::{
    domain::{
        access::{Rule, authorize},
        auth::{Caller, PasswordLogin, live_session, role_of, touch_session},
        tokens,
    },
    http::error::{AppError, AppResult},
    state::AppState,
    store::Customer,
};

/// The `Authorization` header's scheme and credentials (`Basic` or `Bearer`, in any case); `Ok(None)` without
/// the header, 401 for any other scheme or a header that is not text.
fn authorization(headers: &HeaderMap) -> AppResult<Option<(bool, &str)>> {
    let Some(value) = headers.get(header::AUTHORIZATION) else { return Ok(None) };
    let malformed =
        || AppError::unauthorized("The Authorization header is neither HTTP Basic credentials nor a Bearer API token.");
    let value = value.to_str().map_err(|_| malformed())?;
    let Some((scheme, credentials)) = value.split_once(' ') else { return Err(malformed()) };
    match scheme {
        s if s.eq_ignore_ascii_case("basic") => Ok(Some((true, credentials.trim()))),
        s if s.eq_ignore_ascii_case("bearer") => Ok(Some((false, credentials.trim()))),
        _ => Err(malformed()),
    }
}

/// The API token of an `Authorization: Bearer` header, if the request carries one.
pub fn bearer_token(headers: &HeaderMap) -> AppResult<Option<&str>> {
    Ok(authorization(headers)?.and_then(|(basic, credentials)| (!basic).then_some(credentials)))
}

/// Username and password from an `Authorization: Basic` header. `Ok(None)` when there is no such header (or a
/// Bearer token instead); 400 `credentials_too_long` beyond the limits.
pub fn basic_credentials(headers: &HeaderMap) -> AppResult<Option<(String, String)>> {
    let Some((true, encoded)) = authorization(headers)? else { return Ok(None) };
    let malformed = || AppError::unauthorized("The Authorization header is not valid HTTP Basic credentials.");
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|_| malformed())?;
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
            Caller { customer, user, role, session: None, addr, password_only: !complete, token: None }
        } else if let Some(secret) = bearer_token(&parts.headers)?.map(str::to_string) {
            let customer_name = path_customer_name(parts, state).await?;
            let (token, customer, user) = tokens::authenticate(state, &customer_name, &secret, addr).await?;
            // The route as declared (`/{customer}/v1/…`): which scope it needs is looked up by it.
            let route = parts.extensions.get::<MatchedPath>().map(|p| p.as_str()).unwrap_or_default();
            let prefix = format!("/{{customer}}/{}", edge_api::paths::VERSION);
            tokens::permits(&token, parts.method.as_str(), route.strip_prefix(&prefix).unwrap_or(route))?;
            let role = role_of(&user)?;
            Caller { customer, user, role, session: None, addr, password_only: false, token: Some(token) }
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
            Caller { customer, user, role, session: Some(session), addr, password_only: false, token: None }
        } else {
            return Err(AppError::Unauthorized {
                kind: "unauthorized",
                message: "Authentication is required: HTTP Basic credentials, an API token (Authorization: Bearer) \
                          or a session cookie."
                    .into(),
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

/// The `{user_id}` of the request's path, if the route has one.
async fn target_user_id(parts: &mut Parts, state: &AppState) -> Option<String> {
    let params = RawPathParams::from_request_parts(parts, state).await.ok()?;
    params.iter().find(|(k, _)| *k == "user_id").map(|(_, v)| v.to_string())
}

async fn check(parts: &mut Parts, state: &AppState, rule: Rule) -> AppResult<Caller> {
    let caller = Caller::from_request_parts(parts, state).await?;
    let target_id = target_user_id(parts, state).await;
    // The rules about a user's own resources depend on that user, which must exist. The other rules need only
    // the id (is it the caller?), and handlers answer 404 after the rule has passed.
    let target = match (&target_id, rule) {
        (Some(id), Rule::Own { .. }) => {
            Some(state.store.user_by_id(caller.customer.id, id).await?.ok_or(AppError::NotFound("user"))?)
        }
        _ => None,
    };
    let changes = !matches!(parts.method, axum::http::Method::GET | axum::http::Method::HEAD);
    authorize(&caller, rule, changes, target_id.as_deref(), target.as_ref())?;
    Ok(caller)
}

macro_rules! rule_extractor {
    ($(#[$doc:meta])* $name:ident $(<$p:ident>)?, $rule:expr) => {
        $(#[$doc])*
        pub struct $name$(<$p>)?(pub Caller $(, pub PhantomData<$p>)?);

        impl$(<$p: perm::Perm>)? FromRequestParts<AppState> for $name$(<$p>)? {
            type Rejection = AppError;

            async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
                let caller = check(parts, state, $rule).await?;
                Ok($name(caller $(, PhantomData::<$p>)?))
            }
        }
    };
}

rule_extractor!(
    /// Any authenticated caller.
    Authed,
    Rule::Authenticated
);
rule_extractor!(
    /// A caller whose role has permission `P`.
    Allowed<P>,
    Rule::Role(P::PERMISSION)
);
rule_extractor!(
    /// A caller whose role has permission `P`; 404 for anyone else.
    AllowedElseNotFound<P>,
    Rule::RoleElseNotFound(P::PERMISSION)
);
rule_extractor!(
    /// The caller is the path's `{user_id}`, or has permission `P`.
    SelfOr<P>,
    Rule::SelfOr(P::PERMISSION)
);
rule_extractor!(
    /// The path's `{user_id}` is the caller, who sent their password with this request.
    OwnWithPassword,
    Rule::Own { password: true, local_only: false }
);
rule_extractor!(
    /// The path's `{user_id}` is the caller, a local user.
    OwnLocal,
    Rule::Own { password: false, local_only: true }
);
rule_extractor!(
    /// The path's `{user_id}` is the caller, a local user who sent their password with this request.
    OwnLocalWithPassword,
    Rule::Own { password: true, local_only: true }
);
