//! The incident timeline of a view's range, as markers for its charts: configuration versions, purges,
//! network-list changes, lockouts and alert transitions, each opening its record in the console — a
//! configuration version's diff (with "Roll back"), the purge's transaction, the list, the alert history.

use edge_api::{
    alerts::{Marker as ApiMarker, MarkerKind},
    stats::format_time,
};
use leptos::prelude::*;

use crate::{
    api::{self, encode},
    components::{async_view::load, chart::Marker, range::Range, time::parse_iso},
};

/// The console's address of a marker's record.
pub fn href(customer: &str, m: &ApiMarker) -> String {
    let detail = |k: &str| m.details.get(k).and_then(|v| v.as_u64());
    // The record's id: the last segment of its API address.
    let id = m.uri.as_deref().and_then(|u| u.rsplit('/').next()).filter(|s| !s.is_empty());
    match m.kind {
        MarkerKind::Config => {
            let property = m.details.get("property").and_then(|v| v.as_str()).unwrap_or_default();
            let versions = match (detail("from_version"), detail("to_version")) {
                (Some(from), Some(to)) => format!("&from={from}&to={to}"),
                _ => String::new(),
            };
            format!("/{customer}/properties?name={}{versions}", encode(property))
        }
        MarkerKind::Purge => match id {
            Some(id) => format!("/{customer}/purge?transaction={}", encode(id)),
            None => format!("/{customer}/purge"),
        },
        // A deleted list has no page: its records in the audit log.
        MarkerKind::List => match id.filter(|_| m.operation != "networklist.delete") {
            Some(id) => format!("/{customer}/lists?list={}", encode(id)),
            None => format!("/{customer}/audit?operation={}", encode(&m.operation)),
        },
        MarkerKind::Lockout => format!("/{customer}/audit?operation={}", encode(&m.operation)),
        MarkerKind::Alert => {
            let rule = m.details.get("rule_id").and_then(|v| v.as_str()).unwrap_or_default();
            format!("/{customer}/alerts?tab=history&rule={}", encode(rule))
        }
    }
}

/// The markers of the range (none until they arrive, or when they cannot be read: the charts do without).
pub fn markers(customer: Memo<String>, range: Signal<Option<Range>>) -> Memo<Vec<Marker>> {
    let read = load(move || {
        let (c, r) = (customer.get(), range.get());
        async move {
            match r {
                Some(r) => {
                    let iso = |ms: i64| format!("{}Z", format_time(ms));
                    api::timeline(&c, &iso(r.start), &iso(r.end)).await.map(|t| Some((c, t)))
                }
                None => Ok(None),
            }
        }
    });
    Memo::new(move |_| match read.get() {
        Some(Ok(Some((c, timeline)))) => timeline
            .markers
            .iter()
            .filter_map(|m| {
                Some(Marker {
                    time: parse_iso(&m.time)?,
                    kind: m.kind,
                    title: m.title.clone(),
                    actor: m.actor.clone(),
                    href: href(&c, m),
                })
            })
            .collect(),
        _ => Vec::new(),
    })
}
