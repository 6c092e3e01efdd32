//! Markers of the incident timeline over a chart: each change (configuration, purge, network list, lockout)
//! or alert at its time, a link to its record; markers closer than a glyph's width share one button that
//! lists them. Every marker is reached with the keyboard and named for screen readers.

use edge_api::alerts::MarkerKind;
use leptos::prelude::*;

use super::draw::x_of;
use crate::components::time::datetime_ms;

/// A marker at `time` (ms) that opens `href`.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub time: i64,
    pub kind: MarkerKind,
    /// In words: `www: configuration version 7`, `5xx ratio: firing`.
    pub title: String,
    /// Who: a username, `system`, or the rule's name.
    pub actor: String,
    pub href: String,
}

/// The marker's glyph (shapes every font has) and its kind in words.
pub fn glyph(kind: MarkerKind) -> (&'static str, &'static str) {
    match kind {
        MarkerKind::Config => ("◆", "configuration change"),
        MarkerKind::Purge => ("●", "purge"),
        MarkerKind::List => ("■", "network list change"),
        MarkerKind::Lockout => ("✕", "lockout"),
        MarkerKind::Alert => ("▲", "alert"),
    }
}

fn kind_class(kind: MarkerKind) -> &'static str {
    match kind {
        MarkerKind::Config => "config",
        MarkerKind::Purge => "purge",
        MarkerKind::List => "list",
        MarkerKind::Lockout => "lockout",
        MarkerKind::Alert => "alert",
    }
}

/// The accessible name of a marker: `Alert at 2026-11-22 10:05:00: 5xx ratio: firing (by 5xx ratio)`.
fn name(m: &Marker) -> String {
    let (_, kind) = glyph(m.kind);
    let kind = kind[..1].to_uppercase() + &kind[1..];
    format!("{kind} at {}: {} (by {})", datetime_ms(m.time), m.title, m.actor)
}

/// Markers within this many pixels of the first of a group share its button.
const GROUP_PX: f64 = 14.0;

/// Groups of markers (oldest first) that fall within [`GROUP_PX`] of each other on a chart of `width`.
pub fn groups(markers: &[Marker], start: i64, end: i64, width: f64) -> Vec<(f64, Vec<Marker>)> {
    let mut out: Vec<(f64, Vec<Marker>)> = Vec::new();
    for m in markers.iter().filter(|m| m.time >= start && m.time <= end) {
        let x = x_of(m.time, start, end, width);
        match out.last_mut() {
            Some((gx, group)) if x - *gx < GROUP_PX => group.push(m.clone()),
            _ => out.push((x, vec![m.clone()])),
        }
    }
    out
}

/// The markers over a chart of `width` (known once measured).
#[component]
pub fn MarkerLayer(markers: Signal<Vec<Marker>>, start: i64, end: i64, width: RwSignal<Option<u32>>) -> impl IntoView {
    move || {
        let w = f64::from(width.get()?.max(240));
        let all = markers.get();
        (!all.is_empty()).then(|| {
            groups(&all, start, end, w)
                .into_iter()
                .map(|(x, group)| {
                    let left = format!("{}px", x as i64);
                    if let [m] = group.as_slice() {
                        let (g, _) = glyph(m.kind);
                        return view! {
                            <a
                                class=format!("marker {}", kind_class(m.kind))
                                style:left=left
                                href=m.href.clone()
                                aria-label=name(m)
                                title=name(m)
                                data-kind=kind_class(m.kind)
                            >
                                <span aria-hidden="true">{g}</span>
                            </a>
                        }
                        .into_any();
                    }
                    let first = group.first().map(|m| m.time).unwrap_or(start);
                    let last = group.last().map(|m| m.time).unwrap_or(start);
                    let label = format!(
                        "{} changes and alerts from {} to {}",
                        group.len(),
                        datetime_ms(first),
                        datetime_ms(last)
                    );
                    let items = group
                        .iter()
                        .map(|m| {
                            let (g, _) = glyph(m.kind);
                            view! {
                                <li>
                                    <a class=format!("marker-link {}", kind_class(m.kind)) href=m.href.clone() data-kind=kind_class(m.kind)>
                                        <span class="glyph" aria-hidden="true">{g}</span>
                                        {name(m)}
                                    </a>
                                </li>
                            }
                        })
                        .collect_view();
                    let side = if x > w / 2.0 { "right" } else { "left" };
                    view! {
                        <details class=format!("marker-group {side}") style:left=left>
                            <summary class="marker" aria-label=label.clone() title=label>
                                <span aria-hidden="true">{group.len()}</span>
                            </summary>
                            <ul class="marker-list">{items}</ul>
                        </details>
                    }
                    .into_any()
                })
                .collect_view()
        })
    }
}

/// The kinds of markers shown, in words beside their glyphs, under the chart.
#[component]
pub fn MarkerKey(markers: Signal<Vec<Marker>>) -> impl IntoView {
    move || {
        let all = markers.get();
        let mut kinds: Vec<MarkerKind> = Vec::new();
        for m in &all {
            if !kinds.contains(&m.kind) {
                kinds.push(m.kind);
            }
        }
        (!kinds.is_empty()).then(|| {
            let items = kinds
                .into_iter()
                .map(|k| {
                    let (g, words) = glyph(k);
                    view! {
                        <li>
                            <span class=format!("glyph {}", kind_class(k)) aria-hidden="true">{g}</span>
                            {words}
                        </li>
                    }
                })
                .collect_view();
            view! { <ul class="marker-key" aria-label="Markers">{items}</ul> }
        })
    }
}
