//! How places in a configuration read to a person: `$.origins[id=o-1].port` → "Origins › api-cluster-x › Port"
//! (a node by its name, pattern or path, as the editor's tables show it), for the review of changes, the merge
//! screen and the problems the API or the raw editor's check names.

use serde_json::Value;

/// The title of a section (an array of nodes) or a field, as the editor's tables name it.
pub fn key_label(key: &str) -> String {
    let known = match key {
        "host_patterns" => "Host patterns",
        "origins" => "Origins",
        "cache_rules" => "Cache rules",
        "waf_rules" => "WAF rules",
        "traffic_shaping_rules" => "Traffic shaping",
        "port" => "Port",
        "ttl_seconds" => "TTL (s)",
        "path_pattern" => "Path",
        "cache_key" => "Cache key",
        "query" => "Query in key",
        "query_params" => "Parameters",
        "rule_id" => "Rule",
        "enabled" => "On",
        "match_type" => "Match",
        "rate_limit_per_minute" => "Per minute",
        other => {
            let mut words = other.replace('_', " ");
            if let Some(first) = words.get(0..1) {
                let upper = first.to_uppercase();
                words.replace_range(0..1, &upper);
            }
            return words;
        }
    };
    known.to_string()
}

/// What a node is called in the editor: its name, else its pattern or path, else its id.
pub fn node_title(node: &Value, id: &str) -> String {
    ["name", "pattern", "path_pattern", "rule_id"]
        .iter()
        .find_map(|k| node.get(*k).and_then(Value::as_str).filter(|s| !s.trim().is_empty()))
        .unwrap_or(id)
        .to_string()
}

/// One step of a path: a key, a node of an array by its id, or an item by its index.
enum Step<'a> {
    Key(&'a str),
    Id(&'a str),
    Index(usize),
}

/// The steps of `$.a.b[id=x].c[2]`; `None` for anything else.
fn steps(path: &str) -> Option<Vec<Step<'_>>> {
    let mut rest = path.strip_prefix('$')?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out.push(Step::Key(&r[..end]));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("[id=") {
            // An id may hold anything but `]`: the API's ids do not.
            let end = r.find(']')?;
            out.push(Step::Id(&r[..end]));
            rest = &r[end + 1..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            out.push(Step::Index(r[..end].parse().ok()?));
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// `path` (as the API's diff and merge write it) for a person, the nodes named as in `docs` (the first that
/// has them: the configuration after a change, then before it). The `security` level is left out, as in the
/// editor; a path that cannot be read is shown as it is.
pub fn human_path(path: &str, docs: &[&Value]) -> String {
    let Some(steps) = steps(path) else { return path.to_string() };
    if steps.is_empty() {
        return "The whole configuration".to_string();
    }
    let mut at: Vec<Option<&Value>> = docs.iter().map(|d| Some(*d)).collect();
    let mut parts = Vec::new();
    for step in &steps {
        match step {
            Step::Key(k) => {
                at = at.into_iter().map(|v| v.and_then(|v| v.get(*k))).collect();
                if *k != "security" {
                    parts.push(key_label(k));
                }
            }
            Step::Id(id) => {
                at = at
                    .into_iter()
                    .map(|v| {
                        v.and_then(Value::as_array)
                            .and_then(|a| a.iter().find(|n| n.get("id").and_then(Value::as_str) == Some(*id)))
                    })
                    .collect();
                parts.push(at.iter().flatten().next().map(|n| node_title(n, id)).unwrap_or_else(|| id.to_string()));
            }
            Step::Index(i) => {
                at = at.into_iter().map(|v| v.and_then(|v| v.get(*i))).collect();
                // A node (an object) by its name as its row shows it; a value of a list by its place.
                let place = format!("item {}", i + 1);
                let node = at.iter().flatten().next().filter(|n| n.is_object());
                parts.push(node.map(|n| node_title(n, &place)).unwrap_or(place));
            }
        }
    }
    parts.join(" › ")
}

/// A problem as the API writes it (`$.origins[0].port: 70,000 is over 65,535; …`) with its place as the editor
/// names it ("Origins › shop-primary › Port: …"), the nodes named as in `docs`; other messages as they are.
pub fn human_problem(message: &str, docs: &[&Value]) -> String {
    match message.split_once(": ") {
        Some((path, what)) if path.starts_with('$') => format!("{}: {what}", human_path(path, docs)),
        _ => message.to_string(),
    }
}

/// A value as a person reads it in a change: text without quotes, numbers and booleans as they are, a node
/// or a list as compact JSON; nothing as "—".
pub fn value_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "—".to_string(),
        Some(Value::String(s)) if s.is_empty() => "(empty)".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}
