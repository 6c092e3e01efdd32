//! How times read in the console, in one place: the API writes ISO 8601 UTC (`2026-11-22T10:00:01Z`) or
//! milliseconds; the console shows them as `2026-11-22 11:00:01` in the display time zone — the account's
//! (an IANA zone), or the one chosen on this browser — with the UTC time on hover. Offsets come from the
//! browser's own time zone database (`Intl.DateTimeFormat` with `timeZone`): the console carries none; the
//! arithmetic of wall times (round hours and days of the zone, across changes of its offset) is chrono's.

use std::cell::RefCell;

use chrono::{DateTime, Datelike, NaiveDateTime, Timelike};
use edge_api::stats::{format_time, parse_time};
use leptos::prelude::*;

const PREFERENCE_KEY: &str = "edge-console.timezone";
const ACCOUNT_KEY: &str = "edge-console.account-timezone";

/// The display time zone, provided near the root: the account's zone, overridden by this browser's choice.
#[derive(Clone, Copy)]
pub struct Zone {
    account: RwSignal<String>,
    preference: RwSignal<Option<String>>,
}

thread_local! {
    /// The zone in effect and its formatter, for code that formats outside a reactive view (charts).
    static CURRENT: RefCell<(String, Option<js_sys::Intl::DateTimeFormat>)> = const { RefCell::new((String::new(), None)) };
}

impl Zone {
    pub fn provide() -> Zone {
        let stored = |k| storage().and_then(|s| s.get_item(k).ok().flatten()).filter(|z| !z.is_empty());
        let zone = Zone {
            account: RwSignal::new(stored(ACCOUNT_KEY).unwrap_or_else(|| "UTC".into())),
            preference: RwSignal::new(stored(PREFERENCE_KEY)),
        };
        set_current(&zone.name_untracked());
        provide_context(zone);
        zone
    }

    pub fn get() -> Zone {
        use_context::<Zone>()
            .unwrap_or_else(|| Zone { account: RwSignal::new("UTC".into()), preference: RwSignal::new(None) })
    }

    /// The zone times are shown in, tracked.
    pub fn name(&self) -> String {
        self.preference.get().unwrap_or_else(|| self.account.get())
    }

    pub fn name_untracked(&self) -> String {
        self.preference.get_untracked().unwrap_or_else(|| self.account.get_untracked())
    }

    /// The account's zone, tracked.
    pub fn account(&self) -> String {
        self.account.get()
    }

    /// This browser's own choice, if any, tracked.
    pub fn preference(&self) -> Option<String> {
        self.preference.get()
    }

    /// The account's zone, as read from the API (remembered for the next visit, so times show in it at once).
    pub fn set_account(&self, zone: &str) {
        let zone = if zone.is_empty() { "UTC" } else { zone };
        if let Some(s) = storage() {
            let _ = s.set_item(ACCOUNT_KEY, zone);
        }
        // Read after an answer: the frame that provided the zone may be gone by then.
        let (Some(account), Some(preference)) = (self.account.try_get_untracked(), self.preference.try_get_untracked())
        else {
            return;
        };
        if account != zone {
            // The formatter first, so that views re-rendered by the change format in the new zone.
            set_current(&preference.unwrap_or_else(|| zone.to_string()));
            self.account.set(zone.to_string());
        }
    }

    /// This browser's choice; `None` follows the account again.
    pub fn set_preference(&self, zone: Option<String>) {
        if let Some(s) = storage() {
            let _ = match &zone {
                Some(z) => s.set_item(PREFERENCE_KEY, z),
                None => s.remove_item(PREFERENCE_KEY),
            };
        }
        set_current(&zone.clone().unwrap_or_else(|| self.account.get_untracked()));
        self.preference.set(zone);
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

fn set_current(zone: &str) {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != zone {
            *c = (zone.to_string(), formatter(zone));
        }
    });
}

/// A formatter writing `2026-11-22 11:00:01` in `zone` (the Swedish locale writes ISO order); `None` for UTC
/// or a zone the browser does not know.
fn formatter(zone: &str) -> Option<js_sys::Intl::DateTimeFormat> {
    if zone == "UTC" || zone.is_empty() {
        return None;
    }
    let options = js_sys::Object::new();
    let set = |k: &str, v: &str| js_sys::Reflect::set(&options, &k.into(), &v.into()).is_ok();
    let ok = set("timeZone", zone)
        && ["year", "month", "day", "hour", "minute", "second"]
            .iter()
            .all(|k| set(k, if *k == "year" { "numeric" } else { "2-digit" }))
        && set("hourCycle", "h23");
    if !ok {
        return None;
    }
    // An unknown zone throws: caught, it shows UTC. (No `new Function`: the page's CSP allows no eval.)
    let intl = js_sys::Reflect::get(&js_sys::global(), &"Intl".into()).ok()?;
    let ctor: js_sys::Function =
        wasm_bindgen::JsCast::dyn_into(js_sys::Reflect::get(&intl, &"DateTimeFormat".into()).ok()?).ok()?;
    let args = js_sys::Array::of2(&"sv-SE".into(), &options);
    let f = js_sys::Reflect::construct(&ctor, &args).ok()?;
    Some(wasm_bindgen::JsCast::unchecked_into(f))
}

/// The name of the zone in effect (`UTC` until set).
pub fn zone_name() -> String {
    CURRENT.with(|c| if c.borrow().0.is_empty() { "UTC".to_string() } else { c.borrow().0.clone() })
}

/// Milliseconds to add to a UTC time to get the wall time of the zone in effect at that moment.
pub fn offset_ms(ms: i64) -> i64 {
    CURRENT.with(|c| match &c.borrow().1 {
        None => 0,
        Some(f) => {
            let whole = ms - ms.rem_euclid(1000);
            let date = js_sys::Date::new(&(whole as f64).into());
            let text = f.format().call1(f, &date).ok().and_then(|v| v.as_string()).unwrap_or_default();
            // `2026-11-22 11:00:01`; some engines write the hour of midnight as 24.
            let iso = text.replace(' ', "T").replace("T24:", "T00:");
            match parse_time(&iso) {
                Ok(wall) => wall - whole,
                Err(_) => 0,
            }
        }
    })
}

/// The UTC time of a wall time (written as milliseconds as if it were UTC) in the zone in effect. In a gap
/// (clocks going forward) it lands after the gap; in an overlap, on the first of the two.
pub fn from_wall_ms(wall: i64) -> i64 {
    let guess = wall - offset_ms(wall);
    wall - offset_ms(guess)
}

/// The wall time, in the zone in effect, of milliseconds since the epoch.
pub fn wall(ms: i64) -> NaiveDateTime {
    DateTime::from_timestamp_millis(ms + offset_ms(ms)).unwrap_or(DateTime::UNIX_EPOCH).naive_utc()
}

/// The UTC time (milliseconds) of a wall time of the zone in effect (see [`from_wall_ms`]).
pub fn from_wall(w: NaiveDateTime) -> i64 {
    from_wall_ms(w.and_utc().timestamp_millis())
}

/// `2026-11-22 11:00:01` in the zone in effect, of milliseconds since the epoch.
pub fn datetime_ms(ms: i64) -> String {
    wall(ms - ms.rem_euclid(1000)).to_string()
}

/// [`datetime_ms`] of an API time; text that is not one is shown as it is.
pub fn datetime(iso: &str) -> String {
    match parse_iso(iso) {
        Some(ms) => datetime_ms(ms),
        None => iso.to_string(),
    }
}

/// Milliseconds of an API time (`2026-11-22T10:00:01Z`, `.123Z`, or without the `Z`).
pub fn parse_iso(iso: &str) -> Option<i64> {
    parse_time(iso.trim_end_matches('Z')).ok()
}

/// `2026-11-22 10:00:01 UTC`: the hover text of a time.
pub fn utc_ms(ms: i64) -> String {
    format!("{} UTC", format_time(ms).replace('T', " "))
}

/// `2026-11-22` of an API time, as the UTC day it names (daily reports count UTC days).
pub fn date(iso: &str) -> String {
    iso.get(..10).unwrap_or(iso).to_string()
}

/// An axis label in the zone in effect: `HH:MM` for spans up to two days (over more than six hours, a
/// midnight as its date, `11-22`, so that the day is named where it starts), else `MM-DD`.
pub fn axis_label(ms: i64, span: i64) -> String {
    let w = wall(ms);
    let midnight = (w.hour(), w.minute()) == (0, 0);
    if span <= 2 * 86_400_000 && !(midnight && span > 6 * 3_600_000) {
        format!("{:02}:{:02}", w.hour(), w.minute())
    } else {
        format!("{:02}-{:02}", w.month(), w.day())
    }
}

/// A `datetime-local` input value (minutes) of a UTC time, in the zone in effect.
pub fn wall_input(ms: i64) -> String {
    let w = wall(ms);
    format!("{:04}-{:02}-{:02}T{:02}:{:02}", w.year(), w.month(), w.day(), w.hour(), w.minute())
}

/// The UTC time of a `datetime-local` input value in the zone in effect.
pub fn from_wall_input(value: &str) -> Option<i64> {
    let v = if value.len() == 16 { format!("{value}:00") } else { value.to_string() };
    v.parse::<NaiveDateTime>().ok().map(from_wall)
}

/// Every IANA zone the browser knows (`Intl.supportedValuesOf`), UTC first.
pub fn zone_names() -> Vec<String> {
    let known = js_sys::Reflect::get(&js_sys::global(), &"Intl".into())
        .ok()
        .is_some_and(|intl| js_sys::Reflect::has(&intl, &"supportedValuesOf".into()).unwrap_or(false));
    let list: Vec<String> = if known {
        js_sys::Intl::supported_values_of(js_sys::Intl::SupportedValuesKey::TimeZone)
            .iter()
            .filter_map(|v| v.as_string())
            .collect()
    } else {
        Vec::new()
    };
    std::iter::once("UTC".to_string()).chain(list.into_iter().filter(|z| z != "UTC")).collect()
}

/// A time in a `<time>` element in the display zone, with the UTC time on hover; follows a change of zone.
#[component]
pub fn Time(#[prop(into)] iso: String) -> impl IntoView {
    let zone = Zone::get();
    let ms = parse_iso(&iso);
    let text = move || {
        zone.name();
        ms.map(datetime_ms).unwrap_or_else(|| iso.clone())
    };
    view! { <time datetime=ms.map(format_time) title=ms.map(utc_ms)>{text}</time> }
}

/// [`Time`] of milliseconds.
#[component]
pub fn TimeMs(ms: i64) -> impl IntoView {
    let zone = Zone::get();
    view! {
        <time datetime=format_time(ms) title=utc_ms(ms)>
            {move || {
                zone.name();
                datetime_ms(ms)
            }}
        </time>
    }
}
