//! The kinds of node the structured editor shows (host patterns, origins, cache rules, WAF rules, traffic
//! shaping), each reached the same way in a draft.

use edge_api::config::{CacheKey, CacheRule, HostPattern, Origin, PropertyConfig, ReadOnly, ShapingRule, WafRule};
use leptos::prelude::*;

/// Access to one kind of node in a configuration, for the generic editor rows.
pub(super) trait Nodes: Clone + Send + Sync + 'static {
    fn all(c: &PropertyConfig) -> &Vec<Self>;
    fn all_mut(c: &mut PropertyConfig) -> &mut Vec<Self>;
    fn id(&self) -> &str;
    fn readonly(&self) -> &ReadOnly;
    fn blank(id: String) -> Self;
    /// What the node is called in messages (as in the review of changes: see `labels::node_title`).
    fn title(&self) -> String;
}

macro_rules! nodes {
    ($t:ty, $($path:ident).+, $title:expr, $blank:expr) => {
        impl Nodes for $t {
            fn title(&self) -> String {
                let f: fn(&Self) -> &str = $title;
                let t = f(self);
                if t.trim().is_empty() { self.id.clone() } else { t.to_string() }
            }
            fn all(c: &PropertyConfig) -> &Vec<Self> {
                &c.$($path).+
            }
            fn all_mut(c: &mut PropertyConfig) -> &mut Vec<Self> {
                &mut c.$($path).+
            }
            fn id(&self) -> &str {
                &self.id
            }
            fn readonly(&self) -> &ReadOnly {
                &self.readonly
            }
            fn blank(id: String) -> Self {
                let f: fn(String) -> Self = $blank;
                f(id)
            }
        }
    };
}

nodes!(HostPattern, host_patterns, |n| &n.pattern, |id| HostPattern {
    id,
    readonly: ReadOnly::default(),
    pattern: String::new()
});
nodes!(Origin, origins, |n| &n.name, |id| Origin {
    id,
    readonly: ReadOnly::default(),
    name: String::new(),
    host: String::new(),
    port: 443,
    protocol: "https".into()
});
nodes!(CacheRule, cache_rules, |n| &n.path_pattern, |id| CacheRule {
    id,
    readonly: ReadOnly::default(),
    path_pattern: "/".into(),
    ttl_seconds: 3600,
    cache_key: CacheKey::default()
});
nodes!(WafRule, security.waf_rules, |n| &n.name, |id| WafRule {
    id,
    readonly: ReadOnly::default(),
    rule_id: String::new(),
    name: String::new(),
    severity: "HIGH".into(),
    action: "BLOCK".into(),
    enabled: true
});
nodes!(ShapingRule, security.traffic_shaping_rules, |n| &n.name, |id| ShapingRule {
    id,
    readonly: ReadOnly::default(),
    name: String::new(),
    action: "BLOCK".into(),
    match_type: "IP".into(),
    values: Vec::new(),
    rate_limit_per_minute: None,
    enabled: true
});

pub(super) type Draft = RwSignal<Option<PropertyConfig>>;

pub(super) fn with_node<N: Nodes, R>(draft: Draft, id: &str, f: impl FnOnce(&N) -> R) -> Option<R> {
    draft.with(|d| d.as_ref().and_then(|c| N::all(c).iter().find(|n| n.id() == id)).map(f))
}

pub(super) fn update_node<N: Nodes>(draft: Draft, id: &str, f: impl FnOnce(&mut N)) {
    draft.update(|d| {
        if let Some(n) = d.as_mut().and_then(|c| N::all_mut(c).iter_mut().find(|n| n.id() == id)) {
            f(n)
        }
    });
}
