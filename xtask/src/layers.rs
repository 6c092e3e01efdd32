//! `cargo xtask layers`: no module of the workspace's crates imports one that imports it back, directly or
//! through others. A module is a file (`a/b.rs` or `a/b/mod.rs` is `a::b`); a path such as `crate::a::b::C`,
//! `super::C` or `self::c::D` is an arrow to the deepest module it names. The crate root (`lib.rs`, `main.rs`)
//! only declares and re-exports, so arrows to and from it are not counted; a path that starts with a child
//! module's name (`use sql::SqlStore;` in `store/mod.rs`) is an arrow to that child; a `mod.rs` is a module like
//! any other, so a child that imports what its parent re-exports from a sibling draws an arrow to the parent (name
//! the sibling instead). Cycles are printed module by module.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use anyhow::{Context, Result};

/// The source folders of the crates checked, each with its root file: every crate of the workspace.
pub const CRATES: [(&str, &str); 8] = [
    ("server/src", "lib.rs"),
    ("src", "lib.rs"),
    ("api/src", "lib.rs"),
    ("cli/src", "main.rs"),
    ("bench/src", "main.rs"),
    ("cluster/src", "lib.rs"),
    ("xtask/src", "main.rs"),
    ("tests/e2e/src", "lib.rs"),
];

/// Every cycle of the crates whose source folders are named in `dirs` (all of them when empty), one line each
/// (`src: a → b → a`).
pub fn report(root: &Path, dirs: &[&str]) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for (dir, root_file) in CRATES.iter().filter(|(d, _)| dirs.is_empty() || dirs.contains(d)) {
        for cycle in cycles(&root.join(dir), root_file)? {
            lines.push(format!("{dir}: {} → {}", cycle.join(" → "), cycle[0]));
        }
    }
    Ok(lines)
}

/// The cycles of the crate whose sources are in `dir` (root file `root`), each as its modules in order.
pub fn cycles(dir: &Path, root: &str) -> Result<Vec<Vec<String>>> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    let mut modules: BTreeMap<String, PathBuf> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(dir)?.to_string_lossy().replace('\\', "/");
        if rel == root || (rel == "main.rs" && root == "lib.rs") || rel.starts_with("bin/") {
            continue;
        }
        modules.insert(module_of(&rel), file.clone());
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let is_mod_rs = file.ends_with("mod.rs");
        for path in paths(&strip_comments(&text)) {
            let Some(absolute) = absolute(module, is_mod_rs, &path).or_else(|| child_relative(&modules, module, &path))
            else {
                continue;
            };
            if let Some(target) = deepest_module(&modules, &absolute)
                && target != *module
                && !is_ancestor(module, &target)
            {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    Ok(strongly_connected(&modules.keys().cloned().collect::<Vec<_>>(), &edges))
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// `a/b.rs` and `a/b/mod.rs` → `a::b`.
fn module_of(rel: &str) -> String {
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let rel = rel.strip_suffix("/mod").unwrap_or(rel);
    rel.replace('/', "::")
}

/// Whether `ancestor` is a parent (or further up) of `module`: a module declares its children, and a child's
/// `super::` naming an item its parent defines is the usual shape of a module tree, but a parent's use of its
/// child is an arrow down; only arrows up *between* subtrees close cycles worth reporting.
fn is_ancestor(module: &str, ancestor: &str) -> bool {
    module.starts_with(&format!("{ancestor}::"))
}

/// The text without comments (so that paths in doc comments are not counted).
fn strip_comments(text: &str) -> String {
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Every `crate::…`, `super::…` and `self::…` path in `text`, `use` groups expanded.
fn paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // `use` declarations, their brace groups expanded.
    let mut rest = text;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 4..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = rest.find(';') else { break };
        expand("", rest[..end].trim(), &mut out);
        rest = &rest[end..];
    }
    // Paths written in code.
    for start in ["crate::", "super::", "self::"] {
        let mut rest = text;
        while let Some(at) = rest.find(start) {
            let before = rest[..at].chars().last();
            let tail = &rest[at..];
            let len = tail.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(tail.len());
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                out.push(tail[..len].trim_end_matches(':').to_string());
            }
            rest = &tail[start.len()..];
        }
    }
    out
}

/// Expands a use tree (`a::{b, c::{d, e}}`) under `prefix`.
fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    let join = |p: &str| if prefix.is_empty() { p.to_string() } else { format!("{prefix}::{p}") };
    match tree.find('{') {
        Some(open) if tree.ends_with('}') => {
            let head = tree[..open].trim().trim_end_matches("::");
            let inner = &tree[open + 1..tree.len() - 1];
            let prefix = if head.is_empty() { prefix.to_string() } else { join(head) };
            let mut depth = 0;
            let mut part = String::new();
            for c in inner.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&prefix, &part, out);
                        part.clear();
                        continue;
                    }
                    _ => {}
                }
                part.push(c);
            }
            expand(&prefix, &part, out);
        }
        _ => {
            let path = tree.split(" as ").next().unwrap_or(tree).trim();
            if !path.is_empty() {
                out.push(join(path));
            }
        }
    }
}

/// A path as absolute module segments from the crate root, or None when it does not start at this crate.
fn absolute(module: &str, is_mod_rs: bool, path: &str) -> Option<Vec<String>> {
    let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = if module.is_empty() { vec![] } else { module.split("::").map(String::from).collect() };
    // In `a/b.rs` (module a::b), `self` is a::b and `super` is a; in `a/b/mod.rs` the same.
    let _ = is_mod_rs;
    match segments.first().copied() {
        Some("crate") => {
            base.clear();
            segments.remove(0);
        }
        Some("self") => {
            segments.remove(0);
        }
        Some("super") => {
            while segments.first() == Some(&"super") {
                base.pop()?;
                segments.remove(0);
            }
        }
        _ => return None,
    }
    base.extend(segments.into_iter().map(String::from));
    Some(base)
}

/// A path that starts with the name of a child module (`use sql::SqlStore;` in `store/mod.rs`: since the 2018
/// edition a `use` may name a child without `self::`) as absolute module segments; None for anything else
/// (another crate, a name in scope).
fn child_relative(modules: &BTreeMap<String, PathBuf>, module: &str, path: &str) -> Option<Vec<String>> {
    let first = path.split("::").next()?;
    let child = if module.is_empty() { first.to_string() } else { format!("{module}::{first}") };
    if !modules.contains_key(&child) {
        return None;
    }
    let mut segments: Vec<String> =
        if module.is_empty() { vec![] } else { module.split("::").map(String::from).collect() };
    segments.extend(path.split("::").filter(|s| !s.is_empty()).map(String::from));
    Some(segments)
}

/// The deepest module named by the start of `path`.
fn deepest_module(modules: &BTreeMap<String, PathBuf>, path: &[String]) -> Option<String> {
    (1..=path.len()).rev().map(|n| path[..n].join("::")).find(|m| modules.contains_key(m))
}

/// Tarjan's strongly connected components with more than one module, each in a cycle's order.
fn strongly_connected(nodes: &[String], edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit(s: &mut State, v: &str) {
        s.index.insert(v.to_string(), s.next);
        s.low.insert(v.to_string(), s.next);
        s.next += 1;
        s.stack.push(v.to_string());
        s.on_stack.insert(v.to_string());
        for w in s.edges.get(v).cloned().unwrap_or_default() {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.to_string(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.to_string(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.reverse();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for n in nodes {
        if !state.index.contains_key(n) {
            visit(&mut state, n);
        }
    }
    state.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crate_of_the_workspace_is_checked() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let members = manifest.split_once("members = [").unwrap().1.split_once(']').unwrap().0;
        // The root package (the console) and each member, by their source folders.
        let mut crates: Vec<String> = std::iter::once("src".to_string())
            .chain(
                members
                    .split(',')
                    .map(|m| m.trim().trim_matches('"'))
                    .filter(|m| !m.is_empty())
                    .map(|m| format!("{m}/src")),
            )
            .collect();
        let mut checked: Vec<String> = CRATES.iter().map(|(dir, _)| dir.to_string()).collect();
        crates.sort();
        checked.sort();
        assert_eq!(checked, crates);
        for (dir, file) in CRATES {
            assert!(root.join(dir).join(file).is_file(), "{dir}/{file}");
        }
    }

    #[test]
    fn use_groups_and_relative_paths_are_expanded() {
        let mut out = Vec::new();
        expand("", "crate::{a::{B, c}, d::E as F}", &mut out);
        assert_eq!(out, ["crate::a::B", "crate::a::c", "crate::d::E"]);
        assert_eq!(absolute("x::y", false, "super::z::W"), Some(vec!["x".into(), "z".into(), "W".into()]));
        assert_eq!(absolute("x::y", false, "crate::q"), Some(vec!["q".into()]));
        assert_eq!(absolute("x", false, "std::io"), None);
    }

    #[test]
    fn a_cycle_through_three_modules_is_found_and_a_child_using_its_parent_is_not_one() {
        let dir = std::env::temp_dir().join(format!("edge-layers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("p")).unwrap();
        std::fs::write(dir.join("lib.rs"), "mod a; mod b; mod c; mod p;").unwrap();
        std::fs::write(dir.join("a.rs"), "use crate::b::X;").unwrap();
        std::fs::write(dir.join("b.rs"), "pub struct X; fn f() { crate::c::g() }").unwrap();
        std::fs::write(dir.join("c.rs"), "use crate::{a, p};").unwrap();
        std::fs::write(dir.join("p/mod.rs"), "mod q; pub use q::Q; pub struct P;").unwrap();
        std::fs::write(dir.join("p/q.rs"), "use super::P; pub struct Q;").unwrap();
        let found = cycles(&dir, "lib.rs").unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(found, vec![vec!["a".to_string(), "b".into(), "c".into()]]);
    }

    #[test]
    fn a_parent_using_its_child_by_a_relative_path_closes_a_cycle() {
        let dir = std::env::temp_dir().join(format!("edge-layers-relative-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("r")).unwrap();
        std::fs::write(dir.join("lib.rs"), "mod r; mod t;").unwrap();
        // r uses its child s without `self::`; s uses t, and t what r defines.
        std::fs::write(dir.join("r/mod.rs"), "mod s; pub use s::S; pub struct X;").unwrap();
        std::fs::write(dir.join("r/s.rs"), "use crate::t::T; pub struct S;").unwrap();
        std::fs::write(dir.join("t.rs"), "use crate::r::X; pub struct T;").unwrap();
        let found = cycles(&dir, "lib.rs").unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(found, vec![vec!["r".to_string(), "r::s".into(), "t".into()]]);
    }
}
