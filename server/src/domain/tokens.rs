//! API tokens as credentials: making a secret, checking what a token sent with a request may do — its customer,
//! expiry, client ranges and scopes — throttling wrong ones like wrong passwords, recording uses cheaply; and the
//! rules a token's fields follow.

use std::net::IpAddr;

use edge_api::{
    Role, Scope, TokenAccess,
    limits::{MAX_NAME_CHARS, over_chars},
    tokens::{BASE62, MAX_ALLOWED_CIDRS, MAX_TOKEN_DAYS, TOKEN_HINT_LEN, TOKEN_RANDOM_CHARS},
};
use ipnet::IpNet;
use rand::RngCore;

use crate::{
    domain::{
        auth::{Failure, reserve, token_hash},
        throttle::{LoginKey, Outcome},
    },
    http::error::{AppError, AppResult},
    state::AppState,
    store::{Actor, Customer, Target, TokenRecord, UserRecord},
};

/// A token's use is written to the store at most this often (`last_used_at` is exact to the minute): a script
/// calling the API all day costs a write a minute, not one a request.
pub const TOUCH_EVERY_MS: i64 = 60 * 1000;

/// What wrong tokens are counted under in login throttling, as the username of a login: a colon, which no
/// username has, so it never shares a real user's counts. With the client's address, ten wrong tokens from one
/// address lock it out of tokens for a window, a hundred failures of any kind lock the address.
pub const THROTTLE_NAME: &str = ":api-token";

/// A new secret: the prefix, 40 base62 characters from the operating system's generator, and the checksum.
pub fn new_secret() -> String {
    let mut random = String::with_capacity(TOKEN_RANDOM_CHARS);
    let mut bytes = [0u8; 64];
    while random.len() < TOKEN_RANDOM_CHARS {
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        // 248 = 4 × 62: bytes beyond it are dropped, so every character is equally likely.
        for b in bytes.iter().filter(|b| **b < 248) {
            if random.len() < TOKEN_RANDOM_CHARS {
                random.push(BASE62[usize::from(*b % 62)] as char);
            }
        }
    }
    edge_api::tokens::token_from_random(&random)
}

/// The start of a secret that listings show (`edge_AbCd`).
pub fn hint(secret: &str) -> String {
    secret.chars().take(TOKEN_HINT_LEN).collect()
}

/// The token sent with a request, checked: it exists (else a failed login, throttled and recorded), belongs to
/// the customer of the path (else 404, as a session of another customer), has not expired (401
/// `token_expired`) and is used from an allowed range (403 `address_not_allowed`). A use is recorded at most
/// every [`TOUCH_EVERY_MS`].
pub async fn authenticate(
    state: &AppState,
    customer_name: &str,
    secret: &str,
    addr: IpAddr,
) -> AppResult<(TokenRecord, Customer, UserRecord)> {
    let found = if edge_api::tokens::is_well_formed(secret) {
        state.store.token_by_secret(&token_hash(secret)).await?
    } else {
        None
    };
    let Some((mut token, customer, user)) = found else {
        return Err(wrong_token(state, customer_name, secret, addr).await);
    };
    if customer.name != customer_name {
        return Err(AppError::NotFound("resource"));
    }
    let now = state.clock.now_ms();
    if !user.enabled {
        return Err(AppError::Unauthorized { kind: "token_invalid", message: "This API token was revoked.".into() });
    }
    if token.expires_ms.is_some_and(|e| now >= e) {
        return Err(AppError::Unauthorized {
            kind: "token_expired",
            message: format!("This API token ({}) has expired: make a new one, or roll it.", token.name),
        });
    }
    if !address_allowed(&token.allowed_cidrs, addr) {
        return Err(AppError::ForbiddenAs {
            kind: "address_not_allowed",
            message: format!("This API token may not be used from {addr}: it is limited to some address ranges."),
            details: vec![],
        });
    }
    if token.last_used_ms.is_none_or(|last| now - last >= TOUCH_EVERY_MS) {
        // Bookkeeping: a storage that refuses writes (a full disk) must not refuse the reads a token makes.
        match state.store.touch_token(&token.id, now, &addr.to_string(), now - TOUCH_EVERY_MS + 1).await {
            Ok(()) => {
                token.last_used_ms = Some(now);
                token.last_used_from = Some(addr.to_string());
            }
            Err(e) => tracing::warn!(error = %e, token = %token.id, "recording a token's use failed"),
        }
    }
    Ok((token, customer, user))
}

/// A wrong token (unknown, revoked, rolled, or not a token at all): counted as a failed login of
/// [`THROTTLE_NAME`] from the client's address and recorded in the customer's audit log with the start of what
/// was sent (never the rest of it); 401 `token_invalid`, or 429 once the address is locked.
async fn wrong_token(state: &AppState, customer_name: &str, secret: &str, addr: IpAddr) -> AppError {
    let key = LoginKey::new(customer_name, THROTTLE_NAME, addr);
    if let Err(e) = reserve(state, &key).await {
        return e;
    }
    let customer = match state.store.customer_by_name(customer_name).await {
        Ok(c) => c,
        Err(e) => return e.into(),
    };
    let shown = if edge_api::tokens::is_well_formed(secret) {
        format!("API token {}…", hint(secret))
    } else {
        "API token (not one of this server's)".to_string()
    };
    let failure = Failure {
        key,
        addr,
        actor: Actor::Unknown(shown.clone()),
        target: Target { kind: "token", id: String::new(), name: shown },
        reason: "unknown or revoked API token",
        outcome: Outcome::Failed,
    };
    let error = AppError::Unauthorized {
        kind: "token_invalid",
        message: "The API token is not valid: it was revoked, rolled, mistyped, or never existed.".into(),
    };
    failure.record(state, customer_name, customer.as_ref(), error).await
}

/// Whether `addr` is inside one of `cidrs` (any address when there are none).
pub fn address_allowed(cidrs: &[String], addr: IpAddr) -> bool {
    let addr = addr.to_canonical();
    cidrs.is_empty() || cidrs.iter().filter_map(|c| as_net(c)).any(|n| n.contains(&addr))
}

fn as_net(text: &str) -> Option<IpNet> {
    text.parse::<IpNet>().ok().or_else(|| text.parse::<IpAddr>().ok().map(IpNet::from))
}

/// Whether `token` may call `method` on `route` (the route as declared, under `/{customer}/v1`): 403
/// `insufficient_scope` naming the scope it lacks, or that tokens cannot call it at all.
pub fn permits(token: &TokenRecord, method: &str, route: &str) -> AppResult<()> {
    match edge_api::token_access(method, route) {
        TokenAccess::Scope(scope) if token.scopes.iter().any(|s| s == scope.as_str()) => Ok(()),
        TokenAccess::Scope(scope) => Err(AppError::ForbiddenAs {
            kind: "insufficient_scope",
            message: format!("This API token lacks the scope {} that {method} {route} needs.", scope.as_str()),
            details: vec![format!("missing scope: {}", scope.as_str())],
        }),
        TokenAccess::Person | TokenAccess::Public => Err(AppError::ForbiddenAs {
            kind: "insufficient_scope",
            message: format!(
                "API tokens cannot be used for {method} {route}: sessions, passwords, two-factor and tokens \
                 themselves need a person's own login."
            ),
            details: vec!["no scope allows this operation".into()],
        }),
    }
}

/// A token's scopes as sent, checked: known names, each allowed by the role of the token's user, at least one;
/// returned once each in the order of [`Scope::ALL`]. Problems are `field: problem` sentences.
pub fn check_scopes(names: &[String], role: Role, problems: &mut Vec<String>) -> Vec<String> {
    if names.is_empty() {
        problems.push("scopes: at least one scope is needed.".into());
    }
    if names.len() > Scope::ALL.len() * 2 {
        problems.push(format!("scopes: at most {} names.", Scope::ALL.len()));
        return Vec::new();
    }
    let mut scopes = Vec::new();
    for name in names {
        match Scope::parse(name) {
            None => problems.push(format!(
                "scopes: {:?} is not a scope ({}).",
                edge_api::limits::cut(name, 64),
                Scope::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            )),
            Some(scope) if !role.allows(scope.permission()) => {
                problems.push(format!("scopes: {} is beyond what the role {} allows.", scope.as_str(), role.as_str()))
            }
            Some(scope) => scopes.push(scope),
        }
    }
    scopes.sort();
    scopes.dedup();
    scopes.into_iter().map(|s| s.as_str().to_string()).collect()
}

/// A token's name: 1 to 200 characters, not only spaces, without control characters.
pub fn check_name(name: &str, problems: &mut Vec<String>) {
    if name.trim().is_empty() || over_chars(name, MAX_NAME_CHARS) || name.chars().any(char::is_control) {
        problems.push(format!("name: 1 to {MAX_NAME_CHARS} characters, without control characters."));
    }
}

/// Client ranges as sent, checked: at most [`MAX_ALLOWED_CIDRS`], each an address or a CIDR range without host
/// bits set (refused, as in network lists, with the network meant); returned normalised, each once.
pub fn check_cidrs(cidrs: &[String], problems: &mut Vec<String>) -> Vec<String> {
    if cidrs.len() > MAX_ALLOWED_CIDRS {
        problems.push(format!("allowed_cidrs: at most {MAX_ALLOWED_CIDRS} ranges."));
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for (i, c) in cidrs.iter().enumerate() {
        match edge_api::normalize_entry("IP", c) {
            Ok(n) if !out.contains(&n) => out.push(n),
            Ok(_) => {}
            Err(e) => problems.push(format!("allowed_cidrs[{i}]: {}", edge_api::limits::cut(&e, 200))),
        }
    }
    out
}

/// An expiry as sent (ISO 8601 UTC: `2027-01-31T00:00:00Z`, milliseconds and `+00:00` allowed), checked: after
/// `now_ms` and at most [`MAX_TOKEN_DAYS`] later.
pub fn check_expiry(text: &str, now_ms: i64, problems: &mut Vec<String>) -> Option<i64> {
    let parsed = chrono::DateTime::parse_from_rfc3339(text.trim()).ok().filter(|_| text.len() <= 64);
    let Some(at) = parsed.map(|t| t.timestamp_millis()) else {
        problems.push("expires: an ISO 8601 time with its zone, e.g. 2027-01-31T00:00:00Z.".into());
        return None;
    };
    if at <= now_ms {
        problems.push("expires: the time has passed.".into());
    } else if at - now_ms > MAX_TOKEN_DAYS * 24 * 3600 * 1000 {
        problems.push(format!("expires: at most {MAX_TOKEN_DAYS} days ahead."));
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(scopes: &[&str]) -> TokenRecord {
        TokenRecord {
            id: "t1".into(),
            customer_id: 1,
            user_id: "u".into(),
            username: "alice".into(),
            hint: "edge_AAAA".into(),
            name: "deploy".into(),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            allowed_cidrs: vec![],
            expires_ms: None,
            created_ms: 0,
            last_used_ms: None,
            last_used_from: None,
        }
    }

    #[test]
    fn secrets_are_well_formed_and_differ() {
        let (a, b) = (new_secret(), new_secret());
        assert!(edge_api::tokens::is_well_formed(&a) && edge_api::tokens::is_well_formed(&b));
        assert_ne!(a, b);
        assert_eq!(hint(&a).len(), 9);
    }

    #[test]
    fn a_scope_opens_its_operations_only() {
        let purge = token(&["purge"]);
        assert!(permits(&purge, "POST", "/cache/purge").is_ok());
        assert!(permits(&purge, "GET", "/transactions/{transaction_id}").is_ok());
        let refused = permits(&purge, "POST", "/config/networklists").unwrap_err();
        assert_eq!(refused.status_and_body().1.details[0].message, "missing scope: lists:write");
        assert!(permits(&purge, "GET", "/sessions").is_err());
        assert!(permits(&token(&["stats:read"]), "HEAD", "/stats").is_ok());
    }

    #[test]
    fn addresses_within_the_ranges_only_and_anywhere_without_ranges() {
        let cidrs = vec!["10.0.0.0/8".to_string(), "2001:db8::/32".to_string(), "192.0.2.7".to_string()];
        for ok in ["10.1.2.3", "2001:db8::1", "192.0.2.7", "::ffff:10.9.9.9"] {
            assert!(address_allowed(&cidrs, ok.parse().unwrap()), "{ok}");
        }
        for no in ["11.0.0.1", "2001:db9::1", "192.0.2.8"] {
            assert!(!address_allowed(&cidrs, no.parse().unwrap()), "{no}");
        }
        assert!(address_allowed(&[], "203.0.113.1".parse().unwrap()));
    }

    #[test]
    fn fields_are_checked_with_one_problem_each() {
        let mut problems = Vec::new();
        let names = ["purge", "stats:read", "purge", "audit:read", "nope"].map(String::from);
        let scopes = check_scopes(&names, Role::Operator, &mut problems);
        assert_eq!(scopes, ["stats:read", "purge"]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        let mut problems = Vec::new();
        let cidrs =
            check_cidrs(&["10.0.0.0/8", "10.1.2.3/8", "2001:DB8::1", "10.0.0.0/8"].map(String::from), &mut problems);
        assert_eq!(cidrs, ["10.0.0.0/8", "2001:db8::1"]);
        assert!(problems[0].contains("did you mean 10.0.0.0/8"), "{problems:?}");
        let mut problems = Vec::new();
        assert_eq!(check_expiry("2026-01-02T00:00:00Z", 1_767_225_600_000, &mut problems), Some(1_767_312_000_000));
        assert!(problems.is_empty());
        check_expiry("2026-01-02", 1_767_225_600_000, &mut problems);
        check_expiry("2026-01-02T00:00:00Z", 1_767_312_000_000, &mut problems);
        check_expiry("2099-01-02T00:00:00Z", 1_767_312_000_000, &mut problems);
        check_name(" ", &mut problems);
        check_name(&"x".repeat(201), &mut problems);
        assert_eq!(problems.len(), 5, "{problems:?}");
    }
}
