//! Property configuration: the node tree, its validation, and the structural diff and three-way merge of two
//! versions ([`merge`]: used by the server's version history and by the console's conflict resolution).
//!
//! Every node has an `id` and a `readonly` part set by the server: `kind`, `key` (unique, never reused),
//! `created` and `author`. Nodes: the root, host patterns, origins, cache rules, WAF rules and traffic-shaping
//! rules.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::{MAX_ID_CHARS, MAX_NAME_CHARS, MAX_URI_CHARS, MAX_VALUES_PER_RULE, over_chars};

mod merge;

pub use merge::{Change, Conflict, diff, merge3, set_at};

/// The read-only part of a node. Empty fields mean "not set" (a new node sends none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReadOnly {
    /// `property`, `host_pattern`, `origin`, `cache_rule`, `waf_rule` or `traffic_shaping_rule`.
    #[serde(default)]
    pub kind: String,
    /// Unique among all nodes ever created; lets a node whose id changed be matched.
    #[serde(default)]
    pub key: String,
    /// ISO 8601 with milliseconds, UTC.
    #[serde(default)]
    pub created: String,
    /// Username of the creator.
    #[serde(default)]
    pub author: String,
}

impl ReadOnly {
    pub fn is_empty(&self) -> bool {
        self.kind.is_empty() && self.key.is_empty() && self.created.is_empty() && self.author.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PropertyConfig {
    #[serde(default)]
    pub id: String,
    /// The property's name; it cannot change.
    pub name: String,
    #[serde(default)]
    pub readonly: ReadOnly,
    /// Domains served by the property: `www.example.com` or a wildcard `*.example.com`.
    #[serde(default)]
    pub host_patterns: Vec<HostPattern>,
    #[serde(default)]
    pub origins: Vec<Origin>,
    #[serde(default)]
    pub cache_rules: Vec<CacheRule>,
    #[serde(default)]
    pub security: Security,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct HostPattern {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub readonly: ReadOnly,
    pub pattern: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Origin {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub readonly: ReadOnly,
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub name: String,
    /// Host name or IP address of the origin server.
    pub host: String,
    pub port: u16,
    /// `http` or `https`.
    pub protocol: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CacheRule {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub readonly: ReadOnly,
    /// Path pattern starting with `/`; `*` matches any characters, e.g. `/images/*` or `*.css`.
    #[cfg_attr(feature = "openapi", schema(max_length = 2048))]
    pub path_pattern: String,
    /// How long matching objects are cached; 0 means not cached.
    pub ttl_seconds: u32,
    #[serde(default)]
    pub cache_key: CacheKey,
}

/// How the cache key of matching requests is formed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CacheKey {
    /// `all` (the whole query string), `none`, `include` (only `query_params`) or `exclude` (all but them).
    #[serde(default = "all")]
    pub query: String,
    #[serde(default)]
    pub query_params: Vec<String>,
    /// Whether the path is compared case-insensitively.
    #[serde(default)]
    pub ignore_case: bool,
}

fn all() -> String {
    "all".into()
}

impl Default for CacheKey {
    fn default() -> Self {
        CacheKey { query: all(), query_params: Vec::new(), ignore_case: false }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Security {
    #[serde(default)]
    pub waf_rules: Vec<WafRule>,
    #[serde(default)]
    pub traffic_shaping_rules: Vec<ShapingRule>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WafRule {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub readonly: ReadOnly,
    /// The WAF signature, digits (e.g. `942100`, SQL injection).
    pub rule_id: String,
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub name: String,
    /// `LOW`, `MEDIUM`, `HIGH` or `CRITICAL`.
    pub severity: String,
    /// `BLOCK` or `WARN` (log only).
    pub action: String,
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ShapingRule {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub readonly: ReadOnly,
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub name: String,
    /// `BLOCK`, `RATE_LIMIT` or `WARN` (log as a security event, take no action).
    pub action: String,
    /// `IP` (addresses and CIDR ranges), `GEO` (country codes) or `NETWORK_LIST` (network list ids).
    pub match_type: String,
    pub values: Vec<String>,
    /// Requests per minute and client allowed; required with RATE_LIMIT only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_per_minute: Option<u32>,
    #[serde(default = "yes")]
    pub enabled: bool,
}

impl PropertyConfig {
    /// The traffic-shaping rules that match the network list `list_id`, in order.
    pub fn rules_using_list<'a>(&'a self, list_id: &'a str) -> impl Iterator<Item = &'a ShapingRule> + 'a {
        self.security
            .traffic_shaping_rules
            .iter()
            .filter(move |r| r.match_type == "NETWORK_LIST" && r.values.iter().any(|v| v == list_id))
    }
}

pub const SEVERITIES: [&str; 4] = ["LOW", "MEDIUM", "HIGH", "CRITICAL"];
pub const WAF_ACTIONS: [&str; 2] = ["BLOCK", "WARN"];
pub const SHAPING_ACTIONS: [&str; 3] = ["BLOCK", "RATE_LIMIT", "WARN"];
pub const MATCH_TYPES: [&str; 3] = ["IP", "GEO", "NETWORK_LIST"];

/// GET and PUT answer of a property's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConfigDocument {
    pub config: PropertyConfig,
    /// Also in the ETag header; send it back in If-Match.
    pub etag: String,
    pub version: u64,
    pub author: String,
    /// ISO 8601 with milliseconds, UTC.
    pub modified: String,
    pub comment: String,
}

/// Body of PUT: `updatePropertyModel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UpdatePropertyModel {
    #[cfg_attr(feature = "openapi", schema(value_type = PropertyConfig))]
    pub config: Value,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 1000))]
    pub comment: String,
}

/// One entry of a property's version history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConfigVersion {
    pub version: u64,
    pub etag: String,
    pub author: String,
    pub created: String,
    pub comment: String,
}

/// A property in the list of the customer's properties.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PropertySummary {
    pub name: String,
    pub uri: String,
    pub version: u64,
    pub etag: String,
    pub modified: String,
    pub host_patterns: Vec<String>,
}

/// Body of POST /properties: a new property with its host patterns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewProperty {
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::property_name))]
    pub name: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::host_patterns))]
    pub host_patterns: Vec<String>,
}

/// What the fields of a new property accept, as JSON Schema for the OpenAPI document (server only): beside the
/// checks they state, so that the two are read together.
#[cfg(feature = "openapi")]
pub mod schemas {
    use utoipa::openapi::{ArrayBuilder, ObjectBuilder, OneOfBuilder, RefOr, Schema, schema::Type};

    /// One DNS label: letters, digits and `-`, not at either end, at most 63.
    pub const LABEL: &str = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";

    fn text() -> ObjectBuilder {
        ObjectBuilder::new().schema_type(Type::String)
    }

    /// A host name as `config::is_hostname` accepts it, lower case.
    pub fn hostname_pattern() -> String {
        format!("{LABEL}(?:\\.{LABEL})*")
    }

    /// A host pattern (`config::is_host_pattern`): a lower-case host name, or `*.` and one of at least two labels.
    pub fn host_pattern() -> Schema {
        OneOfBuilder::new()
            .item(text().pattern(Some(format!("^{}$", hostname_pattern()))).max_length(Some(253)))
            .item(text().pattern(Some(format!("^\\*\\.{LABEL}(?:\\.{LABEL})+$"))).max_length(Some(255)))
            .description(Some(
                "A lower-case host name (at most 253 characters), or `*.` and one of at least two labels (covering \
             every host below it). A pattern belongs to one customer.",
            ))
            .into()
    }

    /// The host patterns of a new property: each once, at most 5,000.
    pub fn host_patterns() -> Schema {
        ArrayBuilder::new().items(RefOr::T(host_pattern())).unique_items(true).max_items(Some(super::MAX_NODES)).into()
    }

    /// A property name (`config::is_valid_property_name`).
    pub fn property_name() -> Schema {
        text().pattern(Some("^[a-z0-9][a-z0-9._-]{0,62}$")).into()
    }
}

/// True for a property name: 1–63 of `a-z`, `0-9`, `-`, `_`, `.`, starting with a letter or digit.
pub fn is_valid_property_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'_' | b'.'))
}

/// A host name: labels of letters, digits and `-`, separated by dots, at most 253 characters.
pub fn is_hostname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// A host pattern: a lower-case host name, or `*.` followed by one with at least two labels.
pub fn is_host_pattern(s: &str) -> bool {
    let lower = s.bytes().all(|b| !b.is_ascii_uppercase());
    match s.strip_prefix("*.") {
        Some(rest) => lower && is_hostname(rest) && rest.contains('.'),
        None => lower && is_hostname(s),
    }
}

/// Whether host pattern `pattern` covers `host` (`*.example.com` covers `a.example.com` and `a.b.example.com`,
/// not `example.com`).
pub fn host_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(suffix) => {
            host.len() > suffix.len() + 1 && host.ends_with(suffix) && host[..host.len() - suffix.len()].ends_with('.')
        }
        None => pattern == host,
    }
}

/// A configuration holds at most this many nodes (host patterns, origins, cache rules, WAF and traffic-shaping
/// rules together), so that reading, matching and comparing one stays cheap.
pub const MAX_NODES: usize = 5000;

/// A query parameter name of a cache key, in bytes.
const MAX_QUERY_PARAM_BYTES: usize = 256;

/// A node's name: 1 to [`MAX_NAME_CHARS`] characters.
fn name(path: &str, name: &str, problems: &mut Vec<String>) {
    if name.trim().is_empty() {
        problems.push(format!("{path}.name: must not be empty"));
    } else if over_chars(name, MAX_NAME_CHARS) {
        problems.push(format!("{path}.name: at most {MAX_NAME_CHARS} characters"));
    }
}

/// Checks a configuration's content (not its read-only parts): every problem, by node path. `list_exists`
/// tells whether a network list id exists for the customer.
pub fn validate(config: &PropertyConfig, list_exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut problems = Vec::new();
    let mut ids = std::collections::HashSet::new();
    let mut id = |path: &str, id: &str, problems: &mut Vec<String>| {
        if over_chars(id, MAX_ID_CHARS) {
            problems.push(format!("{path}.id: at most {MAX_ID_CHARS} characters"));
        } else if !id.is_empty() && !ids.insert(id.to_string()) {
            problems.push(format!("{path}.id: {id:?} is used by another node"));
        }
    };
    id("$", &config.id, &mut problems);
    let mut patterns = std::collections::HashSet::new();
    for (i, h) in config.host_patterns.iter().enumerate() {
        let path = format!("$.host_patterns[{i}]");
        id(&path, &h.id, &mut problems);
        if !is_host_pattern(&h.pattern) {
            problems
                .push(format!("{path}.pattern: {:?} is not a host name or *.domain wildcard in lower case", h.pattern));
        } else if !patterns.insert(h.pattern.clone()) {
            problems.push(format!("{path}.pattern: {:?} is listed twice", h.pattern));
        }
    }
    for (i, o) in config.origins.iter().enumerate() {
        let path = format!("$.origins[{i}]");
        id(&path, &o.id, &mut problems);
        name(&path, &o.name, &mut problems);
        if !is_hostname(&o.host) && o.host.parse::<std::net::IpAddr>().is_err() {
            problems.push(format!("{path}.host: {:?} is not a host name or IP address", o.host));
        }
        if o.port == 0 {
            problems.push(format!("{path}.port: must be 1 to 65535"));
        }
        if !["http", "https"].contains(&o.protocol.as_str()) {
            problems.push(format!("{path}.protocol: {:?} is not http or https", o.protocol));
        }
    }
    for (i, c) in config.cache_rules.iter().enumerate() {
        let path = format!("$.cache_rules[{i}]");
        id(&path, &c.id, &mut problems);
        let p = &c.path_pattern;
        if over_chars(p, MAX_URI_CHARS) {
            problems.push(format!("{path}.path_pattern: at most {MAX_URI_CHARS} characters"));
        } else if !(p.starts_with('/') || p.starts_with('*'))
            || p.chars().any(|ch| ch.is_whitespace() || ch.is_control())
        {
            problems.push(format!("{path}.path_pattern: {p:?} must start with / (or *) and contain no spaces"));
        }
        if c.ttl_seconds > 31_536_000 {
            problems.push(format!("{path}.ttl_seconds: at most 31536000 (one year)"));
        }
        if !["all", "none", "include", "exclude"].contains(&c.cache_key.query.as_str()) {
            problems
                .push(format!("{path}.cache_key.query: {:?} is not all, none, include or exclude", c.cache_key.query));
        }
        if c.cache_key.query_params.len() > MAX_VALUES_PER_RULE {
            problems.push(format!("{path}.cache_key.query_params: at most {MAX_VALUES_PER_RULE}"));
        }
        for (j, q) in c.cache_key.query_params.iter().enumerate().take(MAX_VALUES_PER_RULE) {
            if q.is_empty()
                || q.len() > MAX_QUERY_PARAM_BYTES
                || !q.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'[' | b']'))
            {
                problems.push(format!("{path}.cache_key.query_params[{j}]: {q:?} is not a query parameter name"));
            }
        }
    }
    for (i, w) in config.security.waf_rules.iter().enumerate() {
        let path = format!("$.security.waf_rules[{i}]");
        id(&path, &w.id, &mut problems);
        if w.rule_id.is_empty() || w.rule_id.len() > 20 || !w.rule_id.bytes().all(|b| b.is_ascii_digit()) {
            problems.push(format!("{path}.rule_id: {:?} is not a rule number", w.rule_id));
        }
        name(&path, &w.name, &mut problems);
        if !SEVERITIES.contains(&w.severity.as_str()) {
            problems.push(format!("{path}.severity: {:?} is not one of {}", w.severity, SEVERITIES.join(", ")));
        }
        if !WAF_ACTIONS.contains(&w.action.as_str()) {
            problems.push(format!("{path}.action: {:?} is not one of {}", w.action, WAF_ACTIONS.join(", ")));
        }
    }
    for (i, r) in config.security.traffic_shaping_rules.iter().enumerate() {
        let path = format!("$.security.traffic_shaping_rules[{i}]");
        id(&path, &r.id, &mut problems);
        name(&path, &r.name, &mut problems);
        if !SHAPING_ACTIONS.contains(&r.action.as_str()) {
            problems.push(format!("{path}.action: {:?} is not one of {}", r.action, SHAPING_ACTIONS.join(", ")));
        }
        match (r.action.as_str(), r.rate_limit_per_minute) {
            ("RATE_LIMIT", None | Some(0)) => {
                problems.push(format!("{path}.rate_limit_per_minute: required (1 or more) with RATE_LIMIT"))
            }
            (a, Some(_)) if a != "RATE_LIMIT" => {
                problems.push(format!("{path}.rate_limit_per_minute: only with RATE_LIMIT"))
            }
            _ => {}
        }
        if r.values.is_empty() {
            problems.push(format!("{path}.values: at least one value"));
        }
        if r.values.len() > MAX_VALUES_PER_RULE {
            problems.push(format!("{path}.values: at most {MAX_VALUES_PER_RULE}"));
        }
        for (j, v) in r.values.iter().enumerate().take(MAX_VALUES_PER_RULE) {
            let problem = match r.match_type.as_str() {
                _ if over_chars(v, MAX_ID_CHARS) => Some(format!("at most {MAX_ID_CHARS} characters")),
                "IP" | "GEO" => crate::normalize_entry(&r.match_type, v).err(),
                "NETWORK_LIST" => (!list_exists(v)).then(|| format!("there is no network list {v:?}")),
                _ => None,
            };
            if let Some(p) = problem {
                problems.push(format!("{path}.values[{j}]: {p}"));
            }
        }
        if !MATCH_TYPES.contains(&r.match_type.as_str()) {
            problems.push(format!("{path}.match_type: {:?} is not one of {}", r.match_type, MATCH_TYPES.join(", ")));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn host_patterns_and_matching() {
        assert!(is_host_pattern("www.example.com"));
        assert!(is_host_pattern("*.example.com"));
        assert!(!is_host_pattern("*.com"));
        assert!(!is_host_pattern("WWW.example.com"));
        assert!(!is_host_pattern("a..b"));
        assert!(!is_host_pattern("*example.com"));
        assert!(host_matches("*.example.com", "img.example.com"));
        assert!(host_matches("*.example.com", "a.b.example.com"));
        assert!(!host_matches("*.example.com", "example.com"));
        assert!(!host_matches("*.example.com", "badexample.com"));
        assert!(host_matches("www.example.com", "www.example.com"));
    }

    #[test]
    fn validation_lists_every_problem_by_path() {
        let config: PropertyConfig = serde_json::from_value(json!({
            "name": "p",
            "host_patterns": [{"pattern": "*.com"}, {"pattern": "ok.example.com"}],
            "origins": [{"name": "", "host": "bad host", "port": 0, "protocol": "ftp"}],
            "security": {"traffic_shaping_rules": [
                {"name": "r", "action": "RATE_LIMIT", "match_type": "NETWORK_LIST", "values": ["nl-1", "nl-x"]}
            ]}
        }))
        .unwrap();
        let problems = validate(&config, &|id| id == "nl-1");
        let paths: Vec<_> = problems.iter().map(|p| p.split(':').next().unwrap().to_string()).collect();
        assert_eq!(
            paths,
            [
                "$.host_patterns[0].pattern",
                "$.origins[0].name",
                "$.origins[0].host",
                "$.origins[0].port",
                "$.origins[0].protocol",
                "$.security.traffic_shaping_rules[0].rate_limit_per_minute",
                "$.security.traffic_shaping_rules[0].values[1]"
            ]
        );
    }
}
