//! Cache purge: requests, the submission answer, transaction status. Purge keeps its own `code`/`description`
//! bodies, as the API has always done.

use serde::{Deserialize, Serialize};

use crate::{
    ErrorDetail,
    config::{host_matches, is_host_pattern},
    limits::MAX_URI_CHARS,
};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeRequest {
    pub purge_request: PurgeBody,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeBody {
    /// `PURGE` (remove from cache) or `EXPIRE` (mark expired; may be served stale if the origin fails).
    pub action: String,
    pub uris: Vec<PurgeUri>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeUri {
    /// `host/path`: with EXACT_LITERAL one object; with PREFIX_LITERAL a prefix. The host may start with `*.`
    /// only where a property's host patterns define that wildcard.
    #[cfg_attr(feature = "openapi", schema(max_length = 2048))]
    pub uri_pattern: String,
    /// `EXACT_LITERAL` or `PREFIX_LITERAL`.
    pub match_mode: String,
    /// Only with PREFIX_LITERAL; may end with `*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 2048))]
    pub cache_key_modifier_regex: Option<String>,
}

pub const PURGE_ACTIONS: [&str; 2] = ["PURGE", "EXPIRE"];
pub const MATCH_MODES: [&str; 2] = ["EXACT_LITERAL", "PREFIX_LITERAL"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeResponse {
    /// 201: submitted.
    pub code: u16,
    pub description: String,
    pub purge_response: PurgeResponseBody,
    /// The customer's own number of the purge: 1, 2, 3, … (another customer's purges do not count).
    pub transaction_id: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeResponseBody {
    pub transaction_status_uri: String,
}

/// A failed purge or transaction call: `code` is 400 (validation), 403 (authentication), 405, 406, 429 or 5xx.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeError {
    pub code: u16,
    pub description: String,
    /// Every problem, e.g. one per invalid URI (`uris[3]: ...`).
    #[serde(default)]
    pub details: Vec<ErrorDetail>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransactionStatus {
    pub code: u16,
    pub description: String,
    pub transaction_id: i64,
    pub transaction_response: TransactionResponse,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransactionResponse {
    /// Milliseconds since the Unix epoch.
    pub begin_ts: i64,
    /// Milliseconds since the Unix epoch; 0 while pending.
    pub end_ts: i64,
    pub percent_received_responses: u8,
    /// `PENDING` or `SUCCESS`.
    pub transaction_status: String,
    /// `Transaction is pending` or `Completed`.
    pub transaction_status_description: String,
}

/// A recent purge, for the console's history (GET /transactions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransactionSummary {
    pub transaction_id: i64,
    pub uri: String,
    pub action: String,
    /// Number of URI patterns in the request.
    pub uri_count: u64,
    /// The first few patterns.
    pub sample: Vec<String>,
    /// Username of who submitted it.
    pub user: String,
    pub begin_ts: i64,
    pub end_ts: i64,
    pub percent_received_responses: u8,
    pub transaction_status: String,
}

/// The problems of one URI of a purge request, given the account's host patterns.
pub fn uri_problems(u: &PurgeUri, patterns: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let exact = match u.match_mode.as_str() {
        "EXACT_LITERAL" => true,
        "PREFIX_LITERAL" => false,
        other => {
            problems.push(format!("match_mode {other:?} is not one of {}", MATCH_MODES.join(", ")));
            true
        }
    };
    if let Some(regex) = &u.cache_key_modifier_regex {
        if crate::limits::over_chars(regex, MAX_URI_CHARS) {
            problems.push(format!("cache_key_modifier_regex: at most {MAX_URI_CHARS} characters"));
            return problems;
        }
        if exact {
            problems.push("cache_key_modifier_regex is allowed only with PREFIX_LITERAL".into());
        }
        if regex.is_empty() || regex.strip_suffix('*').unwrap_or(regex).contains('*') {
            problems.push(format!("cache_key_modifier_regex {regex:?} may contain a wildcard * only at its end"));
        }
    }
    if crate::limits::over_chars(&u.uri_pattern, MAX_URI_CHARS) {
        problems.push(format!("uri_pattern: at most {MAX_URI_CHARS} characters"));
        return problems;
    }
    let pattern = u.uri_pattern.trim();
    let rest = pattern.strip_prefix("https://").or_else(|| pattern.strip_prefix("http://")).unwrap_or(pattern);
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = host.to_ascii_lowercase();
    if host.is_empty() || !is_host_pattern(&host) {
        problems.push(format!("uri_pattern {pattern:?} does not start with a domain (host/path)"));
        return problems;
    }
    if exact && (path.is_empty() || path == "/") {
        problems.push(format!("uri_pattern {pattern:?}: EXACT_LITERAL names one object; give its path"));
    }
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        problems.push(format!("uri_pattern {pattern:?} contains spaces or control characters"));
    }
    if host.starts_with("*.") {
        if !patterns.contains(&host) {
            problems.push(format!("the domain wildcard {host} is not defined in the host patterns of any property"));
        }
    } else if !patterns.iter().any(|p| host_matches(p, &host)) {
        problems.push(format!("no property serves the domain {host}: you may not purge it"));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(pattern: &str, mode: &str, regex: Option<&str>) -> PurgeUri {
        PurgeUri {
            uri_pattern: pattern.into(),
            match_mode: mode.into(),
            cache_key_modifier_regex: regex.map(Into::into),
        }
    }

    #[test]
    fn purge_uris_are_checked_against_host_patterns_and_modes() {
        let patterns = vec!["www.example.com".to_string(), "*.cdn.example.com".to_string()];
        let ok = |p, m, r| assert!(uri_problems(&uri(p, m, r), &patterns).is_empty(), "{p} {m} {r:?}");
        let bad = |p, m, r| assert!(!uri_problems(&uri(p, m, r), &patterns).is_empty(), "{p} {m} {r:?}");
        ok("www.example.com/images/logo.png", "EXACT_LITERAL", None);
        ok("https://www.example.com/images/", "PREFIX_LITERAL", None);
        ok("img.cdn.example.com/a.js", "EXACT_LITERAL", None);
        ok("*.cdn.example.com/a.js", "EXACT_LITERAL", None);
        ok("www.example.com/images/", "PREFIX_LITERAL", Some("lang=en*"));
        bad("www.example.com/images/", "PREFIX_LITERAL", Some("la*ng"));
        bad("www.example.com/a.png", "EXACT_LITERAL", Some("x"));
        bad("other.com/a.png", "EXACT_LITERAL", None);
        bad("*.example.com/a.png", "EXACT_LITERAL", None);
        bad("www.example.com", "EXACT_LITERAL", None);
        bad("/images/a.png", "EXACT_LITERAL", None);
        bad("www.example.com/a.png", "FUZZY", None);
        bad(&format!("www.example.com/{}", "a".repeat(MAX_URI_CHARS)), "EXACT_LITERAL", None);
        ok(&format!("www.example.com/{}", "a".repeat(MAX_URI_CHARS - 17)), "EXACT_LITERAL", None);
    }
}
