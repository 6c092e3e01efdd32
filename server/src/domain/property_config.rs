//! Property configuration updates: reading an incoming tree (every problem by node path), matching its nodes
//! to the stored ones (by id, then by read-only part among siblings), keeping read-only parts as they are and
//! stamping new nodes.

use std::collections::{HashMap, HashSet};

use edge_api::config::{CacheRule, HostPattern, Origin, PropertyConfig, ReadOnly, ShapingRule, WafRule, validate};
use sha2::{Digest, Sha256};

use crate::store::new_id;

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

/// Reads an incoming configuration, reporting every malformed node by path in words (see
/// [`edge_api::reading`], which the console's raw editor uses too).
pub use edge_api::reading::read_config as parse;

/// How an incoming node of one level was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    /// To this existing sibling.
    Existing(usize),
    /// To a node this property had in an earlier version (its read-only part is one the server issued): a
    /// rollback brings it back.
    Restored,
    New,
}

/// Matches incoming nodes of one level to the existing ones, in linear time: first by the key of the read-only
/// part they send; a node whose read-only part is not a current sibling's but one this property had before
/// (`restorable`) is restored as it was; the rest by id. A matched node keeps the existing read-only part (which
/// it must not change); an unmatched node is new, may not set read-only fields, and is stamped.
fn match_level<N: Node + HasReadOnly>(
    incoming: &mut [N],
    existing: &[N],
    path: &str,
    stamp: &Stamp,
    restorable: &dyn Fn(&ReadOnly) -> bool,
    problems: &mut Vec<String>,
) {
    let mut by_key: HashMap<&str, usize> = HashMap::with_capacity(existing.len());
    let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(existing.len());
    for (j, e) in existing.iter().enumerate() {
        by_key.entry(e.readonly().key.as_str()).or_insert(j);
        by_id.entry(e.id()).or_insert(j);
    }
    let mut used = vec![false; existing.len()];
    let mut take = |j: Option<&usize>| match j {
        Some(&j) if !used[j] => {
            used[j] = true;
            Some(Match::Existing(j))
        }
        _ => None,
    };
    let mut matches: Vec<Option<Match>> = incoming
        .iter()
        .map(|n| {
            let sent = n.readonly();
            (!sent.key.is_empty()).then(|| take(by_key.get(sent.key.as_str()))).flatten()
        })
        .collect();
    for (m, n) in matches.iter_mut().zip(incoming.iter()) {
        if m.is_none() && !n.readonly().is_empty() && n.readonly().kind == N::KIND && restorable(n.readonly()) {
            *m = Some(Match::Restored);
        }
    }
    for (m, n) in matches.iter_mut().zip(incoming.iter()) {
        if m.is_none() {
            *m = Some((!n.id().is_empty()).then(|| take(by_id.get(n.id()))).flatten().unwrap_or(Match::New));
        }
    }
    for (i, (node, m)) in incoming.iter_mut().zip(matches).enumerate() {
        let sent = node.readonly_mut().clone();
        match m.unwrap_or(Match::New) {
            Match::Existing(j) => {
                if !sent.is_empty() && sent != *existing[j].readonly() {
                    problems
                        .push(format!("{path}[{i}].readonly: read-only fields of an existing node must not change"));
                }
                *node.readonly_mut() = existing[j].readonly().clone();
                if node.id_mut().is_empty() {
                    *node.id_mut() = existing[j].id().to_string();
                }
            }
            Match::Restored => {
                if node.id_mut().is_empty() {
                    *node.id_mut() = format!("{}_{}", N::KIND, new_id());
                }
            }
            Match::New if !sent.is_empty() => {
                problems.push(format!("{path}[{i}].readonly: a new node may not set read-only fields"));
            }
            Match::New => stamp_node(node, stamp),
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

/// Turns an incoming configuration (read with [`parse`]) into the next stored one, or lists every problem by node
/// path: invalid content, unknown network lists, and violations of the read-only rules. `restorable` tells
/// whether a read-only part is one the server issued to a node of this property before (see
/// [`unknown_readonly_parts`]), so that rolling back to any earlier version brings its nodes back as they were.
pub fn apply_update(
    existing: &PropertyConfig,
    mut next: PropertyConfig,
    stamp: &Stamp,
    list_exists: &dyn Fn(&str) -> bool,
    restorable: &dyn Fn(&ReadOnly) -> bool,
) -> Result<PropertyConfig, Vec<String>> {
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
    let r = restorable;
    match_level(&mut next.host_patterns, &existing.host_patterns, "$.host_patterns", stamp, r, &mut problems);
    match_level(&mut next.origins, &existing.origins, "$.origins", stamp, r, &mut problems);
    match_level(&mut next.cache_rules, &existing.cache_rules, "$.cache_rules", stamp, r, &mut problems);
    match_level(
        &mut next.security.waf_rules,
        &existing.security.waf_rules,
        "$.security.waf_rules",
        stamp,
        r,
        &mut problems,
    );
    match_level(
        &mut next.security.traffic_shaping_rules,
        &existing.security.traffic_shaping_rules,
        "$.security.traffic_shaping_rules",
        stamp,
        r,
        &mut problems,
    );
    if problems.is_empty() {
        problems.extend(duplicate_keys(&next));
    }
    problems.extend(validate(&next, list_exists));
    if problems.is_empty() { Ok(next) } else { Err(problems) }
}

/// Every node's read-only part with its path, the root's first.
fn readonly_parts(c: &PropertyConfig) -> Vec<(String, &ReadOnly)> {
    fn level<'a, N: HasReadOnly>(path: &str, nodes: &'a [N], out: &mut Vec<(String, &'a ReadOnly)>) {
        out.extend(nodes.iter().enumerate().map(|(i, n)| (format!("{path}[{i}]"), n.readonly())));
    }
    let mut out = vec![("$".to_string(), &c.readonly)];
    level("$.host_patterns", &c.host_patterns, &mut out);
    level("$.origins", &c.origins, &mut out);
    level("$.cache_rules", &c.cache_rules, &mut out);
    level("$.security.waf_rules", &c.security.waf_rules, &mut out);
    level("$.security.traffic_shaping_rules", &c.security.traffic_shaping_rules, &mut out);
    out
}

/// Read-only parts are unique in a configuration (a restored node could otherwise come twice).
fn duplicate_keys(c: &PropertyConfig) -> Vec<String> {
    let mut seen = HashSet::new();
    readonly_parts(c)
        .into_iter()
        .filter(|(_, r)| !r.key.is_empty() && !seen.insert(r.key.as_str()))
        .map(|(path, _)| format!("{path}.readonly: another node has this read-only part"))
        .collect()
}

/// The keys of read-only parts that `incoming` sends and no node of `existing` has: the nodes a rollback may
/// bring back, to be looked up among those the property ever had.
pub fn unknown_readonly_parts(existing: &PropertyConfig, incoming: &PropertyConfig) -> Vec<String> {
    let known: HashSet<&str> = readonly_parts(existing).into_iter().map(|(_, r)| r.key.as_str()).collect();
    let mut keys: Vec<String> = readonly_parts(incoming)
        .into_iter()
        .map(|(_, r)| r.key.as_str())
        .filter(|k| !k.is_empty() && !known.contains(k))
        .map(str::to_string)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The read-only parts of the nodes of `next` that `existing` does not have (new nodes): registered with the
/// version, so that a rollback can restore them later.
pub fn new_readonly_parts(existing: Option<&PropertyConfig>, next: &PropertyConfig) -> Vec<ReadOnly> {
    let known: HashSet<&str> =
        existing.map(|e| readonly_parts(e).into_iter().map(|(_, r)| r.key.as_str()).collect()).unwrap_or_default();
    readonly_parts(next).into_iter().filter(|(_, r)| !known.contains(r.key.as_str())).map(|(_, r)| r.clone()).collect()
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

/// The host patterns of `config` that are wildcards over a public suffix (`*.co.uk`, `*.com`, `*.github.io`:
/// every name under them belongs to someone else), by node path. Mozilla's public suffix list is compiled in
/// (the `psl` crate); a name no rule lists counts as a top-level domain, so `*.example` is refused as well.
pub fn public_suffix_problems(config: &PropertyConfig) -> Vec<String> {
    config
        .host_patterns
        .iter()
        .enumerate()
        .filter_map(|(i, h)| {
            let base = h.pattern.strip_prefix("*.")?;
            (psl::suffix_str(base) == Some(base)).then(|| {
                format!(
                    "$.host_patterns[{i}].pattern: {:?} covers the public suffix {base:?}, whose names belong to \
                     different owners; list your own domain's hosts, or a wildcard under it",
                    h.pattern
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

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

    /// Reads `v` and applies it over `old`, with every network list existing and no earlier nodes.
    fn apply(old: &PropertyConfig, v: &Value, stamp: &Stamp) -> Result<PropertyConfig, Vec<String>> {
        apply_update(old, parse(v)?, stamp, &|_| true, &|_| false)
    }

    #[test]
    fn new_nodes_are_stamped_and_existing_ones_keep_their_read_only_part() {
        let old = existing();
        let mut v = as_value(&old);
        v["cache_rules"][0]["ttl_seconds"] = json!(120);
        v["cache_rules"].as_array_mut().unwrap().push(json!({"path_pattern": "/css/*", "ttl_seconds": 5}));
        let next = apply(&old, &v, &Stamp { author: "bob", now: "2026-01-02T00:00:00.000Z" }).unwrap();
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
        let next = apply(&old, &v, &STAMP).unwrap();
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
        let problems = apply(&old, &v, &STAMP).unwrap_err();
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
    fn every_malformed_field_is_reported_by_its_path_in_words() {
        let old = existing();
        let v = json!({
            "name": "shop",
            "colour": "blue",
            "cache_rules": [{"path_pattern": "/a", "ttl_seconds": "soon"}, {"path_pattern": "/b", "ttl_seconds": 1, "extra": 1}],
            "security": {"waf_rules": {}}
        });
        let problems = apply(&old, &v, &STAMP).unwrap_err();
        assert_eq!(
            problems,
            [
                "$.colour: a configuration has no such field",
                "$.cache_rules[0].ttl_seconds: \"soon\" is text; a TTL (seconds, up to a year) is a whole number from 0 \
                 to 31,536,000",
                "$.cache_rules[1].extra: a cache rule has no such field",
                "$.security.waf_rules: it is an object, {…}; these are a list of nodes in brackets, [{…}, {…}]",
            ]
        );
    }

    #[test]
    fn etags_are_strong_and_change_with_the_version() {
        assert_eq!(etag(1, "{}").len(), 2 + 1 + 1 + 16);
        assert_ne!(etag(1, "{}"), etag(2, "{}"));
        assert!(etag(1, "{}").starts_with("\"1-"));
    }
}

#[cfg(test)]
mod restore_tests {
    use edge_api::config::MAX_NODES;
    use serde_json::{Value, json};

    use super::*;

    const STAMP: Stamp = Stamp { author: "alice", now: "2026-01-01T00:00:00.000Z" };

    #[test]
    fn a_removed_node_comes_back_with_its_read_only_part_when_the_server_issued_it() {
        let mut v1: PropertyConfig = serde_json::from_value(json!({
            "name": "shop",
            "cache_rules": [{"id": "a", "path_pattern": "/a", "ttl_seconds": 1}, {"id": "b", "path_pattern": "/b", "ttl_seconds": 1}]
        }))
        .unwrap();
        stamp_new(&mut v1, &STAMP);
        // "a" removed, then a new node takes its id.
        let mut removed = v1.clone();
        removed.cache_rules.remove(0);
        let removed = apply_update(&v1, removed, &STAMP, &|_| true, &|_| false).unwrap();
        let mut v2 = removed.clone();
        v2.cache_rules
            .push(serde_json::from_value(json!({"id": "a", "path_pattern": "/new", "ttl_seconds": 2})).unwrap());
        let v2 = apply_update(&removed, v2, &STAMP, &|_| true, &|_| false).unwrap();
        assert_ne!(v2.cache_rules[1].readonly, v1.cache_rules[0].readonly, "a new node, stamped anew");
        assert_eq!(unknown_readonly_parts(&v2, &v1), [v1.cache_rules[0].readonly.key.clone()]);
        let issued = v1.cache_rules[0].readonly.clone();
        // Back to v1: the old node is restored as it was; the new "a" goes.
        let back = apply_update(&v2, v1.clone(), &STAMP, &|_| true, &|r| *r == issued).unwrap();
        assert_eq!(back, v1);
        // Unknown to the server: refused, as for any new node.
        let problems = apply_update(&v2, v1.clone(), &STAMP, &|_| true, &|_| false).unwrap_err();
        assert_eq!(problems, ["$.cache_rules[0].readonly: read-only fields of an existing node must not change"]);
        // Sent twice: refused.
        let mut twice = v1.clone();
        twice.cache_rules.push(v1.cache_rules[0].clone());
        twice.cache_rules[2].id = "c".into();
        let problems = apply_update(&v2, twice, &STAMP, &|_| true, &|r| *r == issued).unwrap_err();
        assert_eq!(problems, ["$.cache_rules[2].readonly: another node has this read-only part"]);
    }

    #[test]
    fn more_nodes_than_the_cap_are_refused_before_they_are_read() {
        let hosts: Vec<Value> = (0..=MAX_NODES).map(|i| json!({"pattern": format!("h{i}.example")})).collect();
        let problems = parse(&json!({"name": "shop", "host_patterns": hosts})).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with(&format!("$: {} nodes; a configuration holds at most", MAX_NODES + 1)));
    }

    #[test]
    fn wildcards_over_a_public_suffix_are_refused() {
        let config = |patterns: &[&str]| -> PropertyConfig {
            let hosts: Vec<_> = patterns.iter().map(|p| json!({"pattern": p})).collect();
            serde_json::from_value(json!({"name": "p", "host_patterns": hosts})).unwrap()
        };
        let refused = |p: &str| !public_suffix_problems(&config(&[p])).is_empty();
        for p in ["*.co.uk", "*.com", "*.github.io", "*.example", "*.act.edu.au"] {
            assert!(refused(p), "{p}");
        }
        for p in ["*.bbc.co.uk", "*.example.com", "*.me.github.io", "co.uk", "www.bbc.co.uk", "api.demo.example"] {
            assert!(!refused(p), "{p}");
        }
        let problems = public_suffix_problems(&config(&["www.shop.example", "*.co.uk"]));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("$.host_patterns[1].pattern: \"*.co.uk\" covers the public suffix \"co.uk\""));
    }
}
