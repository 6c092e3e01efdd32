//! The time range of a statistics view: presets (last hour, 24 hours, 7 days, 30 days) or custom times, kept
//! in the page's address.

use edge_api::stats::{Granularity, format_time, parse_time};
use leptos::prelude::*;

use crate::components::time::{Zone, from_wall_input, wall_input};

pub const PRESETS: [(&str, &str, i64); 4] = [
    ("1h", "Last hour", 3_600_000),
    ("24h", "Last 24 hours", 86_400_000),
    ("7d", "Last 7 days", 7 * 86_400_000),
    ("30d", "Last 30 days", 30 * 86_400_000),
];

/// A resolved range: [start, end) in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub start: i64,
    pub end: i64,
}

impl Range {
    pub fn span(&self) -> i64 {
        self.end - self.start
    }

    /// The same length just before.
    pub fn previous(&self) -> Range {
        Range { start: self.start - self.span(), end: self.start }
    }
}

pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// Resolves a preset (or custom start/end as written) at `now`: presets end at the next 5 minutes (hours for
/// spans of days).
pub fn resolve(preset: &str, start: &str, end: &str, now: i64) -> Option<Range> {
    match PRESETS.iter().find(|(id, _, _)| *id == preset) {
        Some((_, _, span)) => {
            let step = if *span >= 86_400_000 * 7 { 3_600_000 } else { 300_000 };
            let end = now - now.rem_euclid(step) + step;
            Some(Range { start: end - span, end })
        }
        None => {
            let (s, e) = (parse_time(start).ok()?, parse_time(end).ok()?);
            (s < e).then_some(Range { start: s, end: e })
        }
    }
}

/// The granularities whose rollups are still kept for the whole range (the server refuses the others), finest
/// first; 5-minute only for spans of at most 8 days.
pub fn allowed_granularities(range: Range, now: i64) -> Vec<Granularity> {
    Granularity::ALL
        .into_iter()
        .filter(|g| g.kept_from(now).is_none_or(|from| range.start >= from))
        .filter(|g| *g != Granularity::FiveMinute || range.span() <= 8 * 86_400_000)
        .collect()
}

/// The granularity that suits a span best (about 50 to 300 points).
pub fn natural_granularity(range: Range) -> Granularity {
    match range.span() {
        s if s <= 86_400_000 => Granularity::FiveMinute,
        s if s <= 14 * 86_400_000 => Granularity::Hour,
        _ => Granularity::Day,
    }
}

/// Range controls: preset buttons and, for a custom range, start and end inputs in the display time zone.
/// `on_change` gets the preset and, for custom, start and end as API times (UTC).
#[component]
pub fn RangePicker(
    #[prop(into)] preset: Signal<String>,
    #[prop(into)] range: Signal<Option<Range>>,
    on_change: Callback<(String, String, String)>,
) -> impl IntoView {
    let zone = Zone::get();
    let custom_start = RwSignal::new(String::new());
    let custom_end = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<&'static str>);
    Effect::new(move |_| {
        zone.name();
        if let Some(r) = range.get() {
            custom_start.set(wall_input(r.start));
            custom_end.set(wall_input(r.end));
        }
    });
    let apply_custom =
        move |_| match (from_wall_input(&custom_start.get_untracked()), from_wall_input(&custom_end.get_untracked())) {
            (Some(s), Some(e)) if s < e => {
                problem.set(None);
                on_change.run(("custom".into(), format_time(s), format_time(e)));
            }
            (Some(_), Some(_)) => problem.set(Some("The end must be after the start.")),
            _ => problem.set(Some("Enter a start and an end.")),
        };
    view! {
        <div class="range-picker" role="group" aria-label="Time range">
            {PRESETS
                .iter()
                .map(|(id, label, _)| {
                    let id = id.to_string();
                    let active = {
                        let id = id.clone();
                        move || preset.get() == id
                    };
                    view! {
                        <button
                            class="chip"
                            class:active=active.clone()
                            aria-pressed=move || active().to_string()
                            data-preset=id.clone()
                            on:click=move |_| on_change.run((id.clone(), String::new(), String::new()))
                        >
                            {*label}
                        </button>
                    }
                })
                .collect_view()}
            <span class="custom">
                <input type="datetime-local" name="range-start" aria-label=move || format!("From ({})", zone.name()) bind:value=custom_start />
                <span aria-hidden="true">" – "</span>
                <input type="datetime-local" name="range-end" aria-label=move || format!("To ({})", zone.name()) bind:value=custom_end />
                <button class="chip" class:active=move || preset.get() == "custom" on:click=apply_custom>
                    "Apply"
                </button>
                <span class="muted small zone-name">{move || zone.name()}</span>
                {move || problem.get().map(|p| view! { <span class="field-error" role="alert">{p}</span> })}
            </span>
        </div>
    }
}
