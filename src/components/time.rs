//! How times read in the console, in one place: the API writes ISO 8601 UTC (`2026-11-22T10:00:01Z`) or
//! milliseconds; tables show `2026-11-22 10:00:01`, charts `10:00` or `11-22`. Every time on screen comes
//! through here, so that a display time zone can be added in one place.

use leptos::prelude::*;

/// `2026-11-22 10:00:01` from an API time; text that is not one is shown as it is.
pub fn datetime(iso: &str) -> String {
    match iso.get(..19) {
        Some(s) if s.as_bytes().get(10) == Some(&b'T') => s.replace('T', " "),
        _ => iso.to_string(),
    }
}

/// [`datetime`] of milliseconds since the epoch.
pub fn datetime_ms(ms: i64) -> String {
    datetime(&edge_api::stats::format_time(ms))
}

/// `2026-11-22` of an API time.
pub fn date(iso: &str) -> String {
    iso.get(..10).unwrap_or(iso).to_string()
}

/// An axis label: `HH:MM` for spans up to two days, else `MM-DD`.
pub fn axis_label(ms: i64, span: i64) -> String {
    let t = edge_api::stats::format_time(ms);
    let part = if span <= 2 * 86_400_000 { t.get(11..16) } else { t.get(5..10) };
    part.unwrap_or_default().to_string()
}

/// A time in a `<time>` element (machine-readable, with the zone on hover).
#[component]
pub fn Time(#[prop(into)] iso: String) -> impl IntoView {
    let text = datetime(&iso);
    let title = format!("{text} UTC");
    view! { <time datetime=iso title=title>{text}</time> }
}
