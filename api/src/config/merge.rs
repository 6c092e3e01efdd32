//! The structural diff and three-way merge of two versions of a configuration (as JSON): nodes in arrays are
//! matched by their `id`, so a change is named by where it is, not by a position that moves.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One difference between two JSON documents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Change {
    /// Where: `$.cache_rules[id=abc].ttl_seconds`; nodes in arrays are named by their id.
    pub path: String,
    /// `added`, `removed` or `changed`.
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub before: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub after: Option<Value>,
}

/// Arrays whose items are all objects with a non-empty string `id` are compared item by item by id.
fn keyed(items: &[Value]) -> Option<Vec<(&str, &Value)>> {
    items.iter().map(|v| v.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()).map(|id| (id, v))).collect()
}

/// The items of a keyed array by id (the first, should an id repeat), so that matching is linear, not quadratic.
fn by_id<'a>(items: &[(&'a str, &'a Value)]) -> HashMap<&'a str, &'a Value> {
    let mut index = HashMap::with_capacity(items.len());
    for (id, v) in items {
        index.entry(*id).or_insert(*v);
    }
    index
}

/// The differences from `a` to `b`.
pub fn diff(a: &Value, b: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    diff_at("$", a, b, &mut out);
    out
}

fn diff_at(path: &str, a: &Value, b: &Value, out: &mut Vec<Change>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    Some(vb) => diff_at(&format!("{path}.{k}"), va, vb, out),
                    None => out.push(Change {
                        path: format!("{path}.{k}"),
                        op: "removed".into(),
                        before: Some(va.clone()),
                        after: None,
                    }),
                }
            }
            for (k, vb) in y {
                if !x.contains_key(k) {
                    out.push(Change {
                        path: format!("{path}.{k}"),
                        op: "added".into(),
                        before: None,
                        after: Some(vb.clone()),
                    });
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => match (keyed(x), keyed(y)) {
            (Some(kx), Some(ky)) => {
                let (ix, iy) = (by_id(&kx), by_id(&ky));
                for (id, va) in &kx {
                    let p = format!("{path}[id={id}]");
                    match iy.get(id) {
                        Some(vb) => diff_at(&p, va, vb, out),
                        None => {
                            out.push(Change { path: p, op: "removed".into(), before: Some((*va).clone()), after: None })
                        }
                    }
                }
                for (id, vb) in &ky {
                    if !ix.contains_key(id) {
                        out.push(Change {
                            path: format!("{path}[id={id}]"),
                            op: "added".into(),
                            before: None,
                            after: Some((*vb).clone()),
                        });
                    }
                }
                fn common<'a>(k: &[(&'a str, &Value)], other: &HashMap<&str, &Value>) -> Vec<&'a str> {
                    k.iter().map(|(i, _)| *i).filter(|i| other.contains_key(i)).collect()
                }
                if common(&kx, &iy) != common(&ky, &ix) {
                    let order =
                        |k: &[(&str, &Value)]| Value::from(k.iter().map(|(i, _)| i.to_string()).collect::<Vec<_>>());
                    out.push(Change {
                        path: format!("{path}[order]"),
                        op: "changed".into(),
                        before: Some(order(&kx)),
                        after: Some(order(&ky)),
                    });
                }
            }
            _ => out.push(Change {
                path: path.to_string(),
                op: "changed".into(),
                before: Some(a.clone()),
                after: Some(b.clone()),
            }),
        },
        _ => out.push(Change {
            path: path.to_string(),
            op: "changed".into(),
            before: Some(a.clone()),
            after: Some(b.clone()),
        }),
    }
}

/// A place where both sides changed the same thing differently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conflict {
    pub path: String,
    /// `None` where the value is absent (removed, or not there).
    pub base: Option<Value>,
    pub theirs: Option<Value>,
    pub mine: Option<Value>,
}

/// Three-way merge of `mine` and `theirs`, both derived from `base`: changes made on one side only are taken;
/// where both sides changed the same value differently there is a conflict, and the merge holds `theirs`
/// there until the conflict is resolved. Nodes in arrays are matched by id.
pub fn merge3(base: &Value, theirs: &Value, mine: &Value) -> (Value, Vec<Conflict>) {
    let mut conflicts = Vec::new();
    let merged = merge_at("$", Some(base), Some(theirs), Some(mine), &mut conflicts).unwrap_or(Value::Null);
    (merged, conflicts)
}

fn merge_at(
    path: &str,
    base: Option<&Value>,
    theirs: Option<&Value>,
    mine: Option<&Value>,
    conflicts: &mut Vec<Conflict>,
) -> Option<Value> {
    if theirs == mine {
        return theirs.cloned();
    }
    if mine == base {
        return theirs.cloned();
    }
    if theirs == base {
        return mine.cloned();
    }
    match (base, theirs, mine) {
        (b, Some(Value::Object(t)), Some(Value::Object(m))) => {
            let empty = serde_json::Map::new();
            let b = b.and_then(Value::as_object).unwrap_or(&empty);
            let mut keys: Vec<&String> = t.keys().collect();
            keys.extend(m.keys().filter(|k| !t.contains_key(*k)));
            let mut out = serde_json::Map::new();
            for k in keys {
                if let Some(v) = merge_at(&format!("{path}.{k}"), b.get(k), t.get(k), m.get(k), conflicts) {
                    out.insert(k.clone(), v);
                }
            }
            Some(Value::Object(out))
        }
        (b, Some(Value::Array(t)), Some(Value::Array(m))) => {
            let empty = Vec::new();
            let b = b.and_then(Value::as_array).unwrap_or(&empty);
            match (keyed(b).or_else(|| b.is_empty().then(Vec::new)), keyed(t), keyed(m)) {
                (Some(kb), Some(kt), Some(km)) => {
                    let (ib, it, im) = (by_id(&kb), by_id(&kt), by_id(&km));
                    // Order: theirs, with each item only mine added right after its nearest predecessor in mine
                    // that is placed (at the front without one). Chains of added items hang on the item of
                    // theirs they follow, so this is linear.
                    let mut chains: HashMap<Option<&str>, Vec<&str>> = HashMap::new();
                    let mut placed: HashSet<&str> = it.keys().copied().collect();
                    let mut anchor: Option<&str> = None;
                    for (id, _) in &km {
                        if it.contains_key(id) {
                            anchor = Some(id);
                        } else if !ib.contains_key(id) && placed.insert(id) {
                            chains.entry(anchor).or_default().push(id);
                        }
                    }
                    let mut ids: Vec<&str> = chains.remove(&None).unwrap_or_default();
                    for (id, _) in &kt {
                        ids.push(id);
                        ids.extend(chains.remove(&Some(*id)).unwrap_or_default());
                    }
                    // Removed by them, kept (maybe changed) by me: decided below.
                    for (id, _) in &km {
                        if ib.contains_key(id) && !it.contains_key(id) && placed.insert(id) {
                            ids.push(id);
                        }
                    }
                    let items = ids
                        .into_iter()
                        .filter_map(|id| {
                            let (vb, vt, vm) = (ib.get(id).copied(), it.get(id).copied(), im.get(id).copied());
                            merge_at(&format!("{path}[id={id}]"), vb, vt, vm, conflicts)
                        })
                        .collect();
                    Some(Value::Array(items))
                }
                _ => {
                    conflicts.push(Conflict {
                        path: path.to_string(),
                        base: base.cloned(),
                        theirs: theirs.cloned(),
                        mine: mine.cloned(),
                    });
                    theirs.cloned()
                }
            }
        }
        _ => {
            conflicts.push(Conflict {
                path: path.to_string(),
                base: base.cloned(),
                theirs: theirs.cloned(),
                mine: mine.cloned(),
            });
            theirs.cloned()
        }
    }
}

/// Sets the value at a path produced by [`merge3`] or [`diff`] (`$.a.b[id=x].c`); `None` removes it. Used to
/// apply the resolution of a conflict.
pub fn set_at(doc: &mut Value, path: &str, value: Option<Value>) -> bool {
    let Some(rest) = path.strip_prefix('$') else { return false };
    let mut steps = Vec::new();
    let mut s = rest;
    while !s.is_empty() {
        if let Some(r) = s.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            steps.push((false, &r[..end]));
            s = &r[end..];
        } else if let Some(r) = s.strip_prefix("[id=") {
            let Some(end) = r.find(']') else { return false };
            steps.push((true, &r[..end]));
            s = &r[end + 1..];
        } else {
            return false;
        }
    }
    let Some((last, parents)) = steps.split_last() else {
        if let Some(v) = value {
            *doc = v;
        }
        return true;
    };
    let mut cur = doc;
    for (by_id, key) in parents {
        let next = if *by_id {
            cur.as_array_mut().and_then(|a| a.iter_mut().find(|v| v.get("id").and_then(Value::as_str) == Some(key)))
        } else {
            cur.get_mut(*key)
        };
        match next {
            Some(n) => cur = n,
            None => return false,
        }
    }
    let (by_id, key) = last;
    if *by_id {
        let Some(arr) = cur.as_array_mut() else { return false };
        let pos = arr.iter().position(|v| v.get("id").and_then(Value::as_str) == Some(key));
        match (pos, value) {
            (Some(p), Some(v)) => arr[p] = v,
            (Some(p), None) => {
                arr.remove(p);
            }
            (None, Some(v)) => arr.push(v),
            (None, None) => {}
        }
        true
    } else {
        let Some(obj) = cur.as_object_mut() else { return false };
        match value {
            Some(v) => {
                obj.insert(key.to_string(), v);
            }
            None => {
                obj.remove(*key);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn diff_names_nodes_by_id() {
        let a = json!({"name": "p", "cache_rules": [{"id": "r1", "ttl_seconds": 60}, {"id": "r2", "ttl_seconds": 5}]});
        let b = json!({"name": "p", "cache_rules": [{"id": "r1", "ttl_seconds": 120}, {"id": "r3", "ttl_seconds": 9}]});
        let d = diff(&a, &b);
        let summary: Vec<_> = d.iter().map(|c| (c.path.as_str(), c.op.as_str())).collect();
        assert_eq!(
            summary,
            [
                ("$.cache_rules[id=r1].ttl_seconds", "changed"),
                ("$.cache_rules[id=r2]", "removed"),
                ("$.cache_rules[id=r3]", "added")
            ]
        );
        assert!(diff(&a, &a).is_empty());
    }

    #[test]
    fn merge_takes_changes_of_both_sides_and_reports_real_conflicts() {
        let base = json!({"name": "p", "origins": [{"id": "o1", "port": 80, "host": "a"}], "cache_rules": [{"id": "r1", "ttl_seconds": 60}]});
        let theirs = json!({"name": "p", "origins": [{"id": "o1", "port": 443, "host": "a"}], "cache_rules": [{"id": "r1", "ttl_seconds": 300}]});
        let mine = json!({"name": "p", "origins": [{"id": "o1", "port": 80, "host": "b"}], "cache_rules": [{"id": "r1", "ttl_seconds": 600}, {"id": "r2", "ttl_seconds": 1}]});
        let (merged, conflicts) = merge3(&base, &theirs, &mine);
        assert_eq!(
            merged["origins"][0],
            json!({"id": "o1", "port": 443, "host": "b"}),
            "both non-conflicting edits kept"
        );
        assert_eq!(merged["cache_rules"][1], json!({"id": "r2", "ttl_seconds": 1}), "my new node kept");
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].path, "$.cache_rules[id=r1].ttl_seconds");
        assert_eq!((conflicts[0].theirs.clone(), conflicts[0].mine.clone()), (Some(json!(300)), Some(json!(600))));
        let mut resolved = merged.clone();
        assert!(set_at(&mut resolved, &conflicts[0].path, conflicts[0].mine.clone()));
        assert_eq!(resolved["cache_rules"][0]["ttl_seconds"], 600);
    }

    #[test]
    fn merge_of_a_node_removed_by_them_and_changed_by_me_is_a_conflict() {
        let base = json!({"rules": [{"id": "a", "v": 1}, {"id": "b", "v": 1}]});
        let theirs = json!({"rules": [{"id": "a", "v": 1}]});
        let mine = json!({"rules": [{"id": "a", "v": 1}, {"id": "b", "v": 2}]});
        let (merged, conflicts) = merge3(&base, &theirs, &mine);
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].path, "$.rules[id=b]");
        assert_eq!(merged, json!({"rules": [{"id": "a", "v": 1}]}));
        // Removed by them, untouched by me: removed.
        let mine = json!({"rules": [{"id": "a", "v": 2}, {"id": "b", "v": 1}]});
        let (merged, conflicts) = merge3(&base, &theirs, &mine);
        assert!(conflicts.is_empty());
        assert_eq!(merged, json!({"rules": [{"id": "a", "v": 2}]}));
    }
}
