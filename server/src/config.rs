//! Property configuration updates: reading an incoming tree (every problem by node path), matching its nodes
//! to the stored ones (by id, then by read-only part among siblings), keeping read-only parts as they are and
//! stamping new nodes.

use edge_api::config::{
    CacheRule, HostPattern, Origin, PropertyConfig, ReadOnly, Security, ShapingRule, WafRule, validate,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::admin::new_id;

/// What the server sets in the read-only part of a new node.
pub struct Stamp<'a> {
    pub author: &'a str,
    pub now: &'a str,
}

trait Node {
    const KIND: &'static str;
    fn id_mut(&mut self) -> &mut String;
    fn readonly_mut(&mut self) -> &mut ReadOnly;
}

macro_rules! node {
    ($t:ty, $kind:literal) => {
        impl Node for $t {
            const KIND: &'static str = $kind;
            fn id_mut(&mut self) -> &mut String {
                &mut self.id
            }
            fn readonly_mut(&mut self) -> &mut ReadOnly {
                &mut self.readonly
            }
        }
    };
}
node!(PropertyConfig, "property");
node!(HostPattern, "host_pattern");
node!(Origin, "origin");
node!(CacheRule, "cache_rule");
node!(WafRule, "waf_rule");
node!(ShapingRule, "traffic_shaping_rule");

fn stamp_node<N: Node>(node: &mut N, stamp: &Stamp) {
    if node.id_mut().is_empty() {
        *node.id_mut() = format!("{}_{}", N::KIND, new_id());
    }
    *node.readonly_mut() =
        ReadOnly { kind: N::KIND.into(), key: new_id(), created: stamp.now.into(), author: stamp.author.into() };
}

/// Gives every node without a read-only part its id (if missing) and read-only part: for a new property.
pub fn stamp_new(config: &mut PropertyConfig, stamp: &Stamp) {
    fn all<N: Node>(nodes: &mut [N], stamp: &Stamp) {
        for n in nodes {
            if n.readonly_mut().is_empty() {
                stamp_node(n, stamp);
            }
        }
    }
    if config.readonly.is_empty() {
        stamp_node(config, stamp);
    }
    all(&mut config.host_patterns, stamp);
    all(&mut config.origins, stamp);
    all(&mut config.cache_rules, stamp);
    all(&mut config.security.waf_rules, stamp);
    all(&mut config.security.traffic_shaping_rules, stamp);
}

/// Reads a list of nodes at `path`, each on its own so that every broken node is reported.
fn nodes<T: DeserializeOwned>(v: Option<&Value>, path: &str, problems: &mut Vec<String>) -> Vec<T> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match serde_json::from_value::<T>(item.clone()) {
                Ok(n) => Some(n),
                Err(e) => {
                    problems.push(format!("{path}[{i}]: {e}"));
                    None
                }
            })
            .collect(),
        Some(_) => {
            problems.push(format!("{path}: must be an array"));
            Vec::new()
        }
    }
}

fn unknown_keys(obj: &serde_json::Map<String, Value>, known: &[&str], path: &str, problems: &mut Vec<String>) {
    for k in obj.keys().filter(|k| !known.contains(&k.as_str())) {
        problems.push(format!("{path}.{k}: unknown field"));
    }
}

/// Reads an incoming configuration, reporting every malformed node by path.
pub fn parse(v: &Value) -> Result<PropertyConfig, Vec<String>> {
    let mut problems = Vec::new();
    let Some(root) = v.as_object() else { return Err(vec!["$: the configuration must be a JSON object".into()]) };
    unknown_keys(
        root,
        &["id", "name", "readonly", "host_patterns", "origins", "cache_rules", "security"],
        "$",
        &mut problems,
    );
    let string = |k: &str, problems: &mut Vec<String>| match root.get(k) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            problems.push(format!("$.{k}: must be a string"));
            String::new()
        }
    };
    let id = string("id", &mut problems);
    let name = string("name", &mut problems);
    let readonly = match root.get("readonly") {
        None | Some(Value::Null) => ReadOnly::default(),
        Some(r) => serde_json::from_value(r.clone()).unwrap_or_else(|e| {
            problems.push(format!("$.readonly: {e}"));
            ReadOnly::default()
        }),
    };
    let host_patterns = nodes(root.get("host_patterns"), "$.host_patterns", &mut problems);
    let origins = nodes(root.get("origins"), "$.origins", &mut problems);
    let cache_rules = nodes(root.get("cache_rules"), "$.cache_rules", &mut problems);
    let security = match root.get("security") {
        None | Some(Value::Null) => Security::default(),
        Some(Value::Object(s)) => {
            unknown_keys(s, &["waf_rules", "traffic_shaping_rules"], "$.security", &mut problems);
            Security {
                waf_rules: nodes(s.get("waf_rules"), "$.security.waf_rules", &mut problems),
                traffic_shaping_rules: nodes(
                    s.get("traffic_shaping_rules"),
                    "$.security.traffic_shaping_rules",
                    &mut problems,
                ),
            }
        }
        Some(_) => {
            problems.push("$.security: must be an object".into());
            Security::default()
        }
    };
    if problems.is_empty() {
        Ok(PropertyConfig { id, name, readonly, host_patterns, origins, cache_rules, security })
    } else {
        Err(problems)
    }
}

/// Matches incoming nodes of one level to the existing ones: by id, else by read-only part among the
/// siblings not matched yet. A matched node keeps the existing read-only part (which it must not change); an
/// unmatched node is new, may not set read-only fields, and is stamped.
fn match_level<N: Node + HasReadOnly>(
    incoming: &mut [N],
    existing: &[N],
    path: &str,
    stamp: &Stamp,
    problems: &mut Vec<String>,
) {
    let mut used = vec![false; existing.len()];
    for (i, node) in incoming.iter_mut().enumerate() {
        let id = node.id_mut().clone();
        let sent = node.readonly_mut().clone();
        let by_id = existing.iter().enumerate().position(|(j, e)| !used[j] && !id.is_empty() && e.id() == id);
        let by_readonly = || {
            (!sent.is_empty())
                .then(|| existing.iter().enumerate().position(|(j, e)| !used[j] && *e.readonly() == sent))
                .flatten()
        };
        match by_id.or_else(by_readonly) {
            Some(j) => {
                used[j] = true;
                if !sent.is_empty() && sent != *existing[j].readonly() {
                    problems
                        .push(format!("{path}[{i}].readonly: read-only fields of an existing node must not change"));
                }
                *node.readonly_mut() = existing[j].readonly().clone();
                if id.is_empty() {
                    *node.id_mut() = existing[j].id().to_string();
                }
            }
            None if !sent.is_empty() => {
                problems.push(format!("{path}[{i}].readonly: a new node may not set read-only fields"));
            }
            None => stamp_node(node, stamp),
        }
    }
}

trait HasReadOnly {
    fn id(&self) -> &str;
    fn readonly(&self) -> &ReadOnly;
}

macro_rules! has_readonly {
    ($($t:ty),*) => {$(
        impl HasReadOnly for $t {
            fn id(&self) -> &str {
                &self.id
            }
            fn readonly(&self) -> &ReadOnly {
                &self.readonly
            }
        }
    )*};
}
has_readonly!(PropertyConfig, HostPattern, Origin, CacheRule, WafRule, ShapingRule);

/// Turns an incoming configuration into the next stored one, or lists every problem by node path: malformed
/// nodes, invalid content, unknown network lists, and violations of the read-only rules.
pub fn apply_update(
    existing: &PropertyConfig,
    incoming: &Value,
    stamp: &Stamp,
    list_exists: &dyn Fn(&str) -> bool,
) -> Result<PropertyConfig, Vec<String>> {
    let mut next = parse(incoming)?;
    let mut problems = Vec::new();
    if next.name != existing.name {
        problems.push(format!("$.name: the property's name is {:?} and cannot change", existing.name));
    }
    let root_matches = next.id == existing.id
        || (!next.readonly.is_empty() && next.readonly == existing.readonly)
        || next.id.is_empty();
    if !root_matches {
        problems.push("$.id: the root node must keep its id (or its read-only part)".into());
    } else if !next.readonly.is_empty() && next.readonly != existing.readonly {
        problems.push("$.readonly: read-only fields of an existing node must not change".into());
    }
    if next.id.is_empty() {
        next.id = existing.id.clone();
    }
    next.readonly = existing.readonly.clone();
    match_level(&mut next.host_patterns, &existing.host_patterns, "$.host_patterns", stamp, &mut problems);
    match_level(&mut next.origins, &existing.origins, "$.origins", stamp, &mut problems);
    match_level(&mut next.cache_rules, &existing.cache_rules, "$.cache_rules", stamp, &mut problems);
    match_level(
        &mut next.security.waf_rules,
        &existing.security.waf_rules,
        "$.security.waf_rules",
        stamp,
        &mut problems,
    );
    match_level(
        &mut next.security.traffic_shaping_rules,
        &existing.security.traffic_shaping_rules,
        "$.security.traffic_shaping_rules",
        stamp,
        &mut problems,
    );
    problems.extend(validate(&next, list_exists));
    if problems.is_empty() { Ok(next) } else { Err(problems) }
}

/// The strong entity tag of a version: its number and a hash of its content ([`content_hash`]).
pub fn etag(version: u64, config_json: &str) -> String {
    format!("\"{version}-{}\"", content_hash(config_json))
}

/// 16 hex digits of the SHA-256 of a configuration's JSON: equal for equal content.
pub fn content_hash(config_json: &str) -> String {
    let hash = hex::encode(Sha256::digest(config_json.as_bytes()));
    hash[..16].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const STAMP: Stamp = Stamp { author: "alice", now: "2026-01-01T00:00:00.000Z" };

    fn existing() -> PropertyConfig {
        let mut c: PropertyConfig = serde_json::from_value(json!({
            "name": "shop",
            "host_patterns": [{"id": "h1", "pattern": "www.shop.example"}],
            "cache_rules": [{"id": "c1", "path_pattern": "/img/*", "ttl_seconds": 60}, {"id": "c2", "path_pattern": "/js/*", "ttl_seconds": 60}]
        }))
        .unwrap();
        stamp_new(&mut c, &STAMP);
        c
    }

    fn as_value(c: &PropertyConfig) -> Value {
        serde_json::to_value(c).unwrap()
    }

    #[test]
    fn new_nodes_are_stamped_and_existing_ones_keep_their_read_only_part() {
        let old = existing();
        let mut v = as_value(&old);
        v["cache_rules"][0]["ttl_seconds"] = json!(120);
        v["cache_rules"].as_array_mut().unwrap().push(json!({"path_pattern": "/css/*", "ttl_seconds": 5}));
        let next =
            apply_update(&old, &v, &Stamp { author: "bob", now: "2026-01-02T00:00:00.000Z" }, &|_| true).unwrap();
        assert_eq!(next.cache_rules[0].readonly, old.cache_rules[0].readonly);
        assert_eq!(next.cache_rules[0].ttl_seconds, 120);
        let new = &next.cache_rules[2];
        assert!(new.id.starts_with("cache_rule_"));
        assert_eq!((new.readonly.kind.as_str(), new.readonly.author.as_str()), ("cache_rule", "bob"));
    }

    #[test]
    fn a_node_whose_id_changed_is_matched_by_its_read_only_part() {
        let old = existing();
        let mut v = as_value(&old);
        v["cache_rules"][1]["id"] = json!("renamed");
        let next = apply_update(&old, &v, &STAMP, &|_| true).unwrap();
        assert_eq!(next.cache_rules[1].id, "renamed");
        assert_eq!(next.cache_rules[1].readonly, old.cache_rules[1].readonly, "a copy of the existing node");
    }

    #[test]
    fn read_only_rules_are_enforced() {
        let old = existing();
        let mut v = as_value(&old);
        v["cache_rules"][0]["readonly"]["author"] = json!("mallory");
        v["cache_rules"]
            .as_array_mut()
            .unwrap()
            .push(json!({"path_pattern": "/x", "ttl_seconds": 1, "readonly": {"kind": "cache_rule"}}));
        v["name"] = json!("other");
        let problems = apply_update(&old, &v, &STAMP, &|_| true).unwrap_err();
        assert_eq!(
            problems,
            [
                "$.name: the property's name is \"shop\" and cannot change",
                "$.cache_rules[0].readonly: read-only fields of an existing node must not change",
                "$.cache_rules[2].readonly: a new node may not set read-only fields",
            ]
        );
    }

    #[test]
    fn every_malformed_node_is_reported_by_path() {
        let old = existing();
        let v = json!({
            "name": "shop",
            "colour": "blue",
            "cache_rules": [{"path_pattern": "/a", "ttl_seconds": "soon"}, {"path_pattern": "/b", "ttl_seconds": 1, "extra": 1}],
            "security": {"waf_rules": {}}
        });
        let problems = apply_update(&old, &v, &STAMP, &|_| true).unwrap_err();
        let paths: Vec<_> = problems.iter().map(|p| p.split(':').next().unwrap()).collect();
        assert_eq!(paths, ["$.colour", "$.cache_rules[0]", "$.cache_rules[1]", "$.security.waf_rules"]);
    }

    #[test]
    fn etags_are_strong_and_change_with_the_version() {
        assert_eq!(etag(1, "{}").len(), 2 + 1 + 1 + 16);
        assert_ne!(etag(1, "{}"), etag(2, "{}"));
        assert!(etag(1, "{}").starts_with("\"1-"));
    }
}
