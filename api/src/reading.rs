//! Reading a configuration as sent (JSON): every malformed node and field by path, each problem in words —
//! `"3600" is text; a TTL is a whole number of seconds from 0 to 31,536,000` — never a parser's `invalid type:
//! string, expected u32`. The server answers with it and the console's raw editor checks with it, so both say
//! the same.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::config::{MAX_NODES, PropertyConfig, ReadOnly, Security};

/// What a field takes, and how a sentence names it ("a port").
#[derive(Clone, Copy)]
enum Takes {
    Text(&'static str),
    Whole { min: u64, max: u64, what: &'static str },
    Flag(&'static str),
    Texts(&'static str),
    Object(&'static str, &'static [Field]),
}

#[derive(Clone, Copy)]
struct Field {
    name: &'static str,
    takes: Takes,
    /// Must be present (others have a default).
    required: bool,
    /// May be `null` (an optional number).
    nullable: bool,
}

const fn opt(name: &'static str, takes: Takes) -> Field {
    Field { name, takes, required: false, nullable: false }
}

const fn req(name: &'static str, takes: Takes) -> Field {
    Field { name, takes, required: true, nullable: false }
}

const ID: Field = opt("id", Takes::Text("an id"));
const READONLY_FIELDS: &[Field] = &[
    opt("kind", Takes::Text("a kind")),
    opt("key", Takes::Text("a key")),
    opt("created", Takes::Text("a time")),
    opt("author", Takes::Text("a username")),
];
const READONLY: Field = opt("readonly", Takes::Object("the read-only part", READONLY_FIELDS));

const HOST_PATTERN: &[Field] = &[ID, READONLY, req("pattern", Takes::Text("a host pattern"))];
const ORIGIN: &[Field] = &[
    ID,
    READONLY,
    req("name", Takes::Text("a name")),
    req("host", Takes::Text("a host name or IP address")),
    req("port", Takes::Whole { min: 1, max: 65_535, what: "a port" }),
    req("protocol", Takes::Text("a protocol (http or https)")),
];
const CACHE_KEY: &[Field] = &[
    opt("query", Takes::Text("the query in the key (all, none, include or exclude)")),
    opt("query_params", Takes::Texts("query parameters")),
    opt("ignore_case", Takes::Flag("ignoring case")),
];
const CACHE_RULE: &[Field] = &[
    ID,
    READONLY,
    req("path_pattern", Takes::Text("a path pattern")),
    req("ttl_seconds", Takes::Whole { min: 0, max: 31_536_000, what: "a TTL (seconds, up to a year)" }),
    opt("cache_key", Takes::Object("a cache key", CACHE_KEY)),
];
const WAF_RULE: &[Field] = &[
    ID,
    READONLY,
    req("rule_id", Takes::Text("a rule number")),
    req("name", Takes::Text("a name")),
    req("severity", Takes::Text("a severity (LOW, MEDIUM, HIGH or CRITICAL)")),
    req("action", Takes::Text("an action (BLOCK or WARN)")),
    opt("enabled", Takes::Flag("whether it is on")),
];
const SHAPING_RULE: &[Field] = &[
    ID,
    READONLY,
    req("name", Takes::Text("a name")),
    req("action", Takes::Text("an action (BLOCK, RATE_LIMIT or WARN)")),
    req("match_type", Takes::Text("a match type (IP, GEO or NETWORK_LIST)")),
    req("values", Takes::Texts("values")),
    Field {
        name: "rate_limit_per_minute",
        takes: Takes::Whole { min: 0, max: u32::MAX as u64, what: "a rate (requests per minute and client)" },
        required: false,
        nullable: true,
    },
    opt("enabled", Takes::Flag("whether it is on")),
];

/// `12345678` → `12,345,678`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What a value is, as a message says it: `"abc" is text`, `5 is a number`, `it is a list`.
fn described(v: &Value) -> String {
    match v {
        Value::String(s) if s.chars().count() > 40 => {
            format!("{:?} is text", format!("{}…", s.chars().take(40).collect::<String>()))
        }
        Value::String(s) => format!("{s:?} is text"),
        Value::Number(n) => format!("{n} is a number"),
        Value::Bool(b) => format!("{b} is a yes-or-no value"),
        Value::Null => "it is empty (null)".into(),
        Value::Array(_) => "it is a list, […]".into(),
        Value::Object(_) => "it is an object, {…}".into(),
    }
}

/// What `takes` asks for, as a sentence ("a port is a whole number from 1 to 65,535").
fn wanted(takes: Takes) -> String {
    match takes {
        Takes::Text(what) => format!("{what} is text in quotes"),
        Takes::Whole { min, max, what } => {
            format!("{what} is a whole number from {} to {}", grouped(min), grouped(max))
        }
        Takes::Flag(what) => format!("{what} is true or false"),
        Takes::Texts(what) => format!("{what} are a list of texts in quotes, [\"…\", \"…\"]"),
        Takes::Object(what, _) => format!("{what} is an object of fields in braces, {{…}}"),
    }
}

/// The problem with `v` as a value of `takes` at `path`, if any (an object's fields are checked too).
fn check(v: &Value, takes: Takes, path: &str, problems: &mut Vec<String>) {
    let wrong = |problems: &mut Vec<String>, what: String| problems.push(format!("{path}: {what}; {}", wanted(takes)));
    match (takes, v) {
        (Takes::Text(_), Value::String(_)) | (Takes::Flag(_), Value::Bool(_)) => {}
        (Takes::Whole { min, max, .. }, Value::Number(n)) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(x), _, _) if x < min => wrong(problems, format!("{x} is below {}", grouped(min))),
            (Some(x), _, _) if x > max => wrong(problems, format!("{} is over {}", grouped(x), grouped(max))),
            (Some(_), _, _) => {}
            (None, Some(x), _) => wrong(problems, format!("{x} is below {}", grouped(min))),
            (None, None, Some(x)) if x.fract() == 0.0 && x > 0.0 => {
                wrong(problems, format!("{n} is over {}", grouped(max)))
            }
            _ => wrong(problems, format!("{n} is not a whole number")),
        },
        (Takes::Texts(_), Value::Array(items)) => {
            for (j, item) in items.iter().enumerate() {
                if !item.is_string() {
                    problems.push(format!("{path}[{j}]: {}; each value is text in quotes", described(item)));
                }
            }
        }
        (Takes::Object(what, fields), Value::Object(obj)) => check_fields(obj, fields, what, path, problems),
        (_, other) => wrong(problems, described(other)),
    }
}

/// Every problem of the fields of `obj` (a node or a part of one, `what`) at `path`.
fn check_fields(obj: &Map<String, Value>, fields: &[Field], what: &str, path: &str, problems: &mut Vec<String>) {
    for k in obj.keys().filter(|k| !fields.iter().any(|f| f.name == k.as_str())) {
        problems.push(format!("{path}.{k}: {what} has no such field"));
    }
    for f in fields {
        let at = format!("{path}.{}", f.name);
        match obj.get(f.name) {
            None if f.required => problems.push(format!("{at}: missing; {}", wanted(f.takes))),
            None => {}
            Some(Value::Null) if f.nullable => {}
            Some(v) => check(v, f.takes, &at, problems),
        }
    }
}

/// Reads the nodes of one level at `path`, each on its own, so that every broken node is reported.
fn nodes<T: DeserializeOwned>(
    v: Option<&Value>,
    path: &str,
    what: &'static str,
    fields: &'static [Field],
    problems: &mut Vec<String>,
) -> Vec<T> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let at = format!("{path}[{i}]");
                let before = problems.len();
                check(item, Takes::Object(what, fields), &at, problems);
                if problems.len() > before {
                    return None;
                }
                // Checked field by field above; a value serde still refuses is named without its jargon.
                serde_json::from_value::<T>(item.clone())
                    .map_err(|_| problems.push(format!("{at}: cannot be read as {what}")))
                    .ok()
            })
            .collect(),
        Some(other) => {
            problems
                .push(format!("{path}: {}; these are a list of nodes in brackets, [{{…}}, {{…}}]", described(other)));
            Vec::new()
        }
    }
}

/// "$: N nodes; …"
fn too_many_nodes(n: usize) -> String {
    format!(
        "$: {n} nodes; a configuration holds at most {MAX_NODES} (host patterns, origins, cache rules, WAF and \
         traffic-shaping rules together)"
    )
}

/// Reads a configuration as sent, reporting every malformed node and field by path in words. A configuration
/// of more than [`MAX_NODES`] nodes is refused before any node is read. Its content (host names, references,
/// …) is checked afterwards by [`crate::config::validate`].
pub fn read_config(v: &Value) -> Result<PropertyConfig, Vec<String>> {
    let mut problems = Vec::new();
    let Some(root) = v.as_object() else {
        return Err(vec![format!("$: {}; a configuration is an object of fields in braces, {{…}}", described(v))]);
    };
    let count = |v: Option<&Value>| v.and_then(Value::as_array).map_or(0, Vec::len);
    let security = root.get("security");
    let node_count = ["host_patterns", "origins", "cache_rules"].iter().map(|k| count(root.get(*k))).sum::<usize>()
        + count(security.and_then(|s| s.get("waf_rules")))
        + count(security.and_then(|s| s.get("traffic_shaping_rules")));
    if node_count > MAX_NODES {
        return Err(vec![too_many_nodes(node_count)]);
    }
    const LEVELS: [&str; 4] = ["host_patterns", "origins", "cache_rules", "security"];
    let fields = [ID, opt("name", Takes::Text("the property's name")), READONLY];
    // The root's own fields; null ones count as absent, as they always have.
    let own: Map<String, Value> = root
        .iter()
        .filter(|(k, v)| !LEVELS.contains(&k.as_str()) && !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    check_fields(&own, &fields, "a configuration", "$", &mut problems);
    let text = |k: &str| root.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let readonly: ReadOnly = root
        .get("readonly")
        .filter(|r| !r.is_null())
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    let host_patterns =
        nodes(root.get("host_patterns"), "$.host_patterns", "a host pattern", HOST_PATTERN, &mut problems);
    let origins = nodes(root.get("origins"), "$.origins", "an origin", ORIGIN, &mut problems);
    let cache_rules = nodes(root.get("cache_rules"), "$.cache_rules", "a cache rule", CACHE_RULE, &mut problems);
    let security = match security {
        None | Some(Value::Null) => Security::default(),
        Some(Value::Object(s)) => {
            for k in s.keys().filter(|k| !["waf_rules", "traffic_shaping_rules"].contains(&k.as_str())) {
                problems.push(format!("$.security.{k}: the security part has no such field"));
            }
            Security {
                waf_rules: nodes(s.get("waf_rules"), "$.security.waf_rules", "a WAF rule", WAF_RULE, &mut problems),
                traffic_shaping_rules: nodes(
                    s.get("traffic_shaping_rules"),
                    "$.security.traffic_shaping_rules",
                    "a traffic-shaping rule",
                    SHAPING_RULE,
                    &mut problems,
                ),
            }
        }
        Some(other) => {
            problems.push(format!(
                "$.security: {}; the security part is an object of fields in braces, {{…}}",
                described(other)
            ));
            Security::default()
        }
    };
    if problems.is_empty() {
        Ok(PropertyConfig {
            id: text("id"),
            name: text("name"),
            readonly,
            host_patterns,
            origins,
            cache_rules,
            security,
        })
    } else {
        Err(problems)
    }
}

/// A JSON syntax error in words: where the text breaks, and what usually causes it.
pub fn json_syntax_problem(e: &serde_json::Error) -> String {
    let (line, column) = (e.line(), e.column());
    if e.is_eof() {
        format!("The JSON ends too early (line {line}): a closing bracket, brace or quote is missing.")
    } else {
        format!(
            "The JSON is not valid at line {line}, column {column}: a comma, colon, quote or bracket is missing \
             or out of place there."
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn problems(v: Value) -> Vec<String> {
        read_config(&v).unwrap_err()
    }

    #[test]
    fn a_wrong_value_is_named_by_its_field_with_the_range_and_type_in_words() {
        let got = problems(json!({"name": "p",
            "origins": [{"name": "o", "host": "h", "port": 70000, "protocol": "https"},
                        {"name": "o", "host": "h", "port": "443", "protocol": "https"}],
            "cache_rules": [{"path_pattern": "/a", "ttl_seconds": "3600"}, {"path_pattern": "/b", "ttl_seconds": -1},
                            {"path_pattern": "/c", "ttl_seconds": 1.5}, {"path_pattern": "/d"}],
            "security": {"traffic_shaping_rules": [{"name": "r", "action": "BLOCK", "match_type": "IP",
                "values": ["10.0.0.1", 7], "enabled": "yes", "rate_limit_per_minute": null, "extra": 1}]}}));
        assert_eq!(
            got,
            [
                "$.origins[0].port: 70,000 is over 65,535; a port is a whole number from 1 to 65,535",
                "$.origins[1].port: \"443\" is text; a port is a whole number from 1 to 65,535",
                "$.cache_rules[0].ttl_seconds: \"3600\" is text; a TTL (seconds, up to a year) is a whole number from 0 to 31,536,000",
                "$.cache_rules[1].ttl_seconds: -1 is below 0; a TTL (seconds, up to a year) is a whole number from 0 to 31,536,000",
                "$.cache_rules[2].ttl_seconds: 1.5 is not a whole number; a TTL (seconds, up to a year) is a whole number from 0 to 31,536,000",
                "$.cache_rules[3].ttl_seconds: missing; a TTL (seconds, up to a year) is a whole number from 0 to 31,536,000",
                "$.security.traffic_shaping_rules[0].extra: a traffic-shaping rule has no such field",
                "$.security.traffic_shaping_rules[0].values[1]: 7 is a number; each value is text in quotes",
                "$.security.traffic_shaping_rules[0].enabled: \"yes\" is text; whether it is on is true or false",
            ]
        );
        for p in &got {
            for jargon in ["expected", "invalid type", "u32", "u16", "serde", "unknown field"] {
                assert!(!p.contains(jargon), "{p}");
            }
        }
    }

    #[test]
    fn a_well_formed_configuration_reads_as_serde_reads_it() {
        let v = json!({"id": "root", "name": "p", "host_patterns": [{"pattern": "a.example"}],
            "cache_rules": [{"id": "c", "path_pattern": "/x", "ttl_seconds": 60, "cache_key": {"query": "none"}}],
            "security": {"waf_rules": [{"rule_id": "1", "name": "w", "severity": "LOW", "action": "WARN"}]}});
        assert_eq!(read_config(&v).unwrap(), serde_json::from_value::<PropertyConfig>(v).unwrap());
        assert_eq!(
            problems(json!([1])),
            ["$: it is a list, […]; a configuration is an object of fields in braces, {…}"]
        );
        assert_eq!(
            problems(json!({"name": 5, "origins": {}})),
            [
                "$.name: 5 is a number; the property's name is text in quotes",
                "$.origins: it is an object, {…}; these are a list of nodes in brackets, [{…}, {…}]"
            ]
        );
    }

    #[test]
    fn json_syntax_errors_say_where_in_words() {
        let e = serde_json::from_str::<Value>("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert_eq!(
            json_syntax_problem(&e),
            "The JSON is not valid at line 3, column 3: a comma, colon, quote or bracket is missing or out of place there."
        );
        let e = serde_json::from_str::<Value>("{\"a\": [1, 2").unwrap_err();
        assert!(json_syntax_problem(&e).starts_with("The JSON ends too early (line 1)"));
    }
}
