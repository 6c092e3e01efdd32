//! Charts: series over time as hand-written SVG (lines or stacked areas) as wide as their card, with axis
//! titles and units, a hover (or arrow-key) tooltip of every series' exact value, a legend that shows and
//! hides series, and the numbers as a table on demand; ranked values as bars that can be picked.

use std::fmt::Write;

use leptos::{ev, html, prelude::*};

use crate::components::{
    labels::value_label,
    time::{axis_label, datetime_ms, offset_ms, utc_ms, zone_name},
};

/// Colours of series, in order; the last one, grey, is for "other".
pub const PALETTE: [&str; 8] = ["#1f6feb", "#e67e22", "#2e9d57", "#c62828", "#8e44ad", "#0096aa", "#b7950b", "#7f8c8d"];

pub fn colour(i: usize, name: &str) -> &'static str {
    if name == "other" { PALETTE[PALETTE.len() - 1] } else { PALETTE[i % (PALETTE.len() - 1)] }
}

/// A named series of (time in ms, value) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(i64, f64)>,
}

/// What a metric counts, for its axis and its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    /// Bytes, shown in decimal multiples (kB = 1,000 B), as traffic is billed.
    Bytes,
    /// Milliseconds, an average per request.
    Ms,
}

impl Unit {
    pub fn of_metric(metric: &str) -> Unit {
        if metric.ends_with("_bytes") {
            Unit::Bytes
        } else if metric.ends_with("_ms") {
            Unit::Ms
        } else {
            Unit::Count
        }
    }

    /// Short, for axes and tiles: `1.2k`, `3.4 MB`, `120 ms`, `1.5 s`.
    pub fn short(self, v: f64) -> String {
        match self {
            Unit::Count => short_number(v),
            Unit::Bytes => crate::components::labels::bytes(v),
            Unit::Ms if v.abs() >= 1000.0 => format!("{} s", one_decimal(v / 1000.0)),
            Unit::Ms => format!("{} ms", one_decimal(v)),
        }
    }

    /// Exact, for hover texts: `12,345`, `1,234,567 bytes`, `153.2 ms`.
    pub fn exact(self, v: f64) -> String {
        match self {
            Unit::Count => grouped(v.round() as i64),
            Unit::Bytes => format!("{} bytes", grouped(v.round() as i64)),
            Unit::Ms => format!("{} ms", one_decimal(v)),
        }
    }

    /// The axis title's unit.
    pub fn title(self) -> &'static str {
        match self {
            Unit::Count => "",
            Unit::Bytes => "",
            Unit::Ms => " (ms, average)",
        }
    }
}

/// `1234567` as `1,234,567`.
pub fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One decimal without the float formatter: tenths as an integer; `12.0` is written `12`.
fn one_decimal(v: f64) -> String {
    let tenths = (v * 10.0).round() as i64;
    let sign = if tenths < 0 { "-" } else { "" };
    match tenths.abs() % 10 {
        0 => format!("{sign}{}", tenths.abs() / 10),
        d => format!("{sign}{}.{d}", tenths.abs() / 10),
    }
}

/// A point's value as read (bytes in KB/MB/GB), or that there is none (an average of no requests).
fn exact_or_none(unit: Unit, v: f64) -> String {
    match unit {
        _ if v.is_nan() => "no requests".to_string(),
        Unit::Bytes => unit.short(v),
        _ => unit.exact(v),
    }
}

/// A number as the API wrote it, for machines: an integer as such, else with one decimal.
fn plain(v: f64) -> String {
    if v.fract() == 0.0 { (v as i64).to_string() } else { one_decimal(v) }
}

/// Short number: 1.2k, 3.4M, 5.6G.
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    let (d, s) = match a {
        a if a >= 1e12 => (1e12, "T"),
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    if d == 1.0 { format!("{}", v.round() as i64) } else { format!("{}{s}", one_decimal(v / d)) }
}

/// A round step near `max / n`: 1, 2 or 5 times a power of ten.
fn nice_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powi(raw.log10().floor() as i32);
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
}

const LEFT: f64 = 72.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 44.0;
const LABEL: &str = "class=\"axis\" font-size=\"12\" font-family=\"sans-serif\"";

/// Where a chart of `width` puts time `t` of [start, end).
fn x_of(t: i64, start: i64, end: i64, width: f64) -> f64 {
    LEFT + (t - start) as f64 / (end - start).max(1) as f64 * (width - LEFT - RIGHT)
}

/// Lines (or stacked areas) of `series` (with their palette index) over [start, end) in an SVG of `width` ×
/// `height`, with the y axis titled `y_title`. A point without a value (NaN: an average of nothing) breaks its
/// line. From `partial` on (the bucket still filling) the area is hatched and labelled "partial", and the
/// lines reach it dashed: its numbers are not a drop in traffic.
#[allow(clippy::too_many_arguments)]
pub fn time_chart_svg(
    series: &[(usize, &Series)],
    start: i64,
    end: i64,
    stacked: bool,
    unit: Unit,
    y_title: &str,
    width: u32,
    height: u32,
    partial: Option<i64>,
) -> String {
    let (w, h) = (f64::from(width), f64::from(height));
    let ph = h - TOP - BOTTOM;
    let span = (end - start).max(1);
    // Each series on top of those before it when stacked.
    let mut layers: Vec<Vec<(i64, f64, f64)>> = Vec::new();
    let mut base: std::collections::BTreeMap<i64, f64> = Default::default();
    for (_, s) in series {
        let layer: Vec<(i64, f64, f64)> = s
            .points
            .iter()
            .map(|(t, v)| {
                let below = if stacked { base.get(t).copied().unwrap_or(0.0) } else { 0.0 };
                // Stacked, a missing value adds nothing; as a line, it is a gap.
                let v = if stacked && v.is_nan() { 0.0 } else { *v };
                (*t, below, below + v)
            })
            .collect();
        if stacked {
            for (t, _, top) in &layer {
                base.insert(*t, *top);
            }
        }
        layers.push(layer);
    }
    let max = layers.iter().flatten().map(|(_, _, v)| *v).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let step = nice_step(if max > 0.0 { max } else { 1.0 }, 5.0);
    let ymax = ((if max > 0.0 { max } else { 1.0 }) / step).ceil() * step;
    let x = |t: i64| x_of(t, start, end, w);
    let y = |v: f64| TOP + ph - v / ymax * ph;

    let mut out = String::with_capacity(4096);
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" \
         height=\"{height}\" aria-hidden=\"true\">"
    );
    let mut v = 0.0;
    while v <= ymax + step / 2.0 {
        let py = y(v) as i64;
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{py}\" y2=\"{py}\"/><text x=\"{}\" y=\"{}\" \
             text-anchor=\"end\" {LABEL}>{}</text>",
            LEFT as i64,
            (w - RIGHT) as i64,
            (LEFT - 6.0) as i64,
            py + 4,
            unit.short(v)
        );
        v += step;
    }
    let _ = write!(
        out,
        "<text {LABEL} transform=\"translate(12 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\
         <text {LABEL} x=\"{}\" y=\"{}\" text-anchor=\"middle\">Time ({})</text>",
        (TOP + ph / 2.0) as i64,
        escape(y_title),
        ((LEFT + w - RIGHT) / 2.0) as i64,
        (h - 4.0) as i64,
        escape(&zone_name())
    );
    const STEPS: [i64; 10] = [
        300_000,
        900_000,
        1_800_000,
        3_600_000,
        10_800_000,
        21_600_000,
        43_200_000,
        86_400_000,
        172_800_000,
        604_800_000,
    ];
    // About one label per 90 pixels, on round times of the display zone.
    let most = ((w - LEFT - RIGHT) / 90.0).max(2.0) as i64;
    let tick = STEPS.iter().copied().find(|s| span / s <= most).unwrap_or(span / most + 1);
    let off = offset_ms(start);
    let mut t = start + (tick - (start + off).rem_euclid(tick)) % tick;
    while t <= end {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" {LABEL}>{}</text>",
            x(t) as i64,
            (h - 24.0) as i64,
            axis_label(t, span)
        );
        t += tick;
    }
    if let Some(p) = partial.filter(|p| *p < end) {
        let from = x(p.max(start));
        let _ = write!(
            out,
            "<defs><pattern id=\"partial-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
             patternTransform=\"rotate(45)\"><line class=\"hatch\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\"/></pattern></defs>\
             <rect class=\"partial\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#partial-hatch)\"/>\
             <text {LABEL} x=\"{}\" y=\"{}\" text-anchor=\"end\">partial</text>",
            from as i64,
            TOP as i64,
            ((w - RIGHT) - from).max(1.0) as i64,
            ph as i64,
            (w - RIGHT - 2.0) as i64,
            (TOP + 12.0) as i64,
        );
    }
    let is_partial = |t: i64| partial.is_some_and(|p| t >= p);
    for (layer, (i, s)) in layers.iter().zip(series).rev() {
        let c = colour(*i, &s.name);
        if stacked {
            let mut points = String::new();
            for (t, _, top) in layer {
                let _ = write!(points, "{},{} ", x(*t) as i64, y(*top) as i64);
            }
            for (t, below, _) in layer.iter().rev() {
                let _ = write!(points, "{},{} ", x(*t) as i64, y(*below) as i64);
            }
            let _ = write!(out, "<polygon points=\"{points}\" fill=\"{c}\" fill-opacity=\"0.75\"/>");
            continue;
        }
        // Runs of points with values, each a line; the step into a partial bucket dashed.
        let mut run = String::new();
        let mut last: Option<(i64, i64)> = None;
        let flush = |run: &mut String, out: &mut String| {
            match run.trim_end().split_once(' ') {
                Some(_) => {
                    let _ = write!(out, "<polyline points=\"{run}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>");
                }
                // A value between two gaps: a dot, as a line of one point shows nothing.
                None if !run.is_empty() => {
                    let (px, py) = run.trim_end().split_once(',').unwrap_or(("0", "0"));
                    let _ = write!(out, "<circle cx=\"{px}\" cy=\"{py}\" r=\"2.5\" fill=\"{c}\"/>");
                }
                None => {}
            }
            run.clear();
        };
        for (t, _, top) in layer {
            if !top.is_finite() {
                flush(&mut run, &mut out);
                last = None;
                continue;
            }
            let (px, py) = (x(*t) as i64, y(*top) as i64);
            if is_partial(*t) {
                if let Some((lx, ly)) = last {
                    let _ = write!(
                        out,
                        "<polyline points=\"{lx},{ly} {px},{py}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" \
                         stroke-dasharray=\"4 3\"/>"
                    );
                }
                let _ = write!(out, "<circle cx=\"{px}\" cy=\"{py}\" r=\"2.5\" fill=\"{c}\"/>");
                last = Some((px, py));
                continue;
            }
            let _ = write!(run, "{px},{py} ");
            last = Some((px, py));
        }
        flush(&mut run, &mut out);
    }
    out.push_str("</svg>");
    out
}

/// Text safe inside SVG markup.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The width of the element `node` refers to, once laid out (`None` before), followed as the window changes
/// size. Measured in the next animation frame, when the view's other changes are laid out too: reading a width
/// right after a change forces a layout of its own, once per chart of the view. The chart is drawn once, at
/// its width (not at a guess and then again).
fn follow_width(node: NodeRef<html::Div>) -> RwSignal<Option<u32>> {
    let width = RwSignal::new(None);
    // Also called from a frame callback that may come after the view is gone: nothing of it is touched then.
    let measure = move || {
        if let Some(el) = node.try_get_untracked().flatten() {
            let w = el.client_width();
            if w > 0 && width.try_get_untracked().is_some_and(|now| now != Some(w as u32)) {
                width.set(Some(w as u32));
            }
        }
    };
    node.on_load(move |_| request_animation_frame(measure));
    let resize = window_event_listener(ev::resize, move |_| measure());
    on_cleanup(move || resize.remove());
    width
}

/// A chart over time with its legend (click to hide or show a series), a tooltip of the exact values at the
/// time under the pointer (or chosen with the arrow keys), and its numbers as a table on demand.
#[component]
pub fn TimeChart(
    /// What the chart shows, its accessible name.
    label: String,
    series: Vec<Series>,
    start: i64,
    end: i64,
    stacked: bool,
    #[prop(default = Unit::Count)] unit: Unit,
    /// The title of the y axis, e.g. "Hits per hour".
    #[prop(into, optional)]
    y_title: String,
    #[prop(optional)] id: Option<&'static str>,
    #[prop(default = 300)] height: u32,
    /// Offered beside each legend entry: add the series' value as a filter.
    #[prop(optional)]
    on_filter: Option<Callback<String>>,
    /// The start of the bucket still filling, if the range reaches it (see `time_chart_svg`).
    #[prop(default = None)]
    partial: Option<i64>,
    /// The dimension the series are values of: their names are shown in words ("hit (1)", "HTTPS").
    #[prop(optional, into)]
    dim: Option<String>,
) -> impl IntoView {
    let dim = StoredValue::new(dim.unwrap_or_default());
    let name_of = move |s: &Series| match s.name.as_str() {
        "other" | "total" => s.name.clone(),
        n => dim.with_value(|d| value_label(d, n)),
    };
    Effect::new(|_| crate::mark("edge:first-chart"));
    let node = NodeRef::<html::Div>::new();
    let width = follow_width(node);
    let hidden = RwSignal::new(vec![false; series.len()]);
    let hover = RwSignal::new(None::<usize>);
    let mut times: Vec<i64> = series.iter().flat_map(|s| s.points.iter().map(|(t, _)| *t)).collect();
    times.sort_unstable();
    times.dedup();
    let series = StoredValue::new(series);
    let times = StoredValue::new(times);
    let svg = move || {
        let h = hidden.get();
        series.with_value(|all| {
            let shown: Vec<(usize, &Series)> =
                all.iter().enumerate().filter(|(i, _)| !h.get(*i).copied().unwrap_or(false)).collect();
            width
                .get()
                .map(|w| time_chart_svg(&shown, start, end, stacked, unit, &y_title, w.max(240), height, partial))
        })
    };
    let pick = move |e: ev::PointerEvent| {
        let w = f64::from(width.get_untracked().unwrap_or(800).max(240));
        let x = f64::from(e.offset_x());
        times.with_value(|ts| {
            let nearest = ts
                .iter()
                .enumerate()
                .min_by(|a, b| (x_of(*a.1, start, end, w) - x).abs().total_cmp(&(x_of(*b.1, start, end, w) - x).abs()))
                .map(|(i, _)| i);
            hover.set(nearest);
        });
    };
    let keys = move |e: ev::KeyboardEvent| {
        let n = times.with_value(Vec::len);
        if n == 0 {
            return;
        }
        let next = match (e.key().as_str(), hover.get_untracked()) {
            ("ArrowRight", Some(i)) => Some((i + 1).min(n - 1)),
            ("ArrowLeft", Some(i)) => Some(i.saturating_sub(1)),
            ("ArrowRight" | "ArrowLeft" | "End", None) | ("End", _) => Some(n - 1),
            ("Home", _) => Some(0),
            ("Escape", _) => None,
            _ => return,
        };
        e.prevent_default();
        hover.set(next);
    };
    let tooltip = move || {
        let i = hover.get()?;
        let t = times.with_value(|ts| ts.get(i).copied())?;
        let w = f64::from(width.get().unwrap_or(800).max(240));
        let left = x_of(t, start, end, w);
        let h = hidden.get();
        let rows = series.with_value(|all| {
            all.iter()
                .enumerate()
                .filter(|(i, _)| !h.get(*i).copied().unwrap_or(false))
                .map(|(i, s)| {
                    let v = s.points.iter().find(|(x, _)| *x == t).map(|(_, v)| *v).unwrap_or(0.0);
                    let name = name_of(s);
                    view! {
                        <li data-series=s.name.clone() data-value=if v.is_nan() { String::new() } else { plain(v) }>
                            <span class="swatch" style:background=colour(i, &s.name)></span>
                            <span class="name">{name}</span>
                            <span class="value" title=if v.is_nan() { String::new() } else { unit.exact(v) }>{exact_or_none(unit, v)}</span>
                        </li>
                    }
                })
                .collect_view()
        });
        // The tooltip keeps to the side of the crosshair with more room.
        let side = if left > w / 2.0 {
            format!("right:{}px", (w - left + 8.0) as i64)
        } else {
            format!("left:{}px", (left + 8.0) as i64)
        };
        Some(view! {
            <div class="crosshair" style:left=format!("{}px", left as i64)></div>
            <div class="tooltip" role="status" style=side data-time=edge_api::stats::format_time(t)>
                <div class="tooltip-time" title=utc_ms(t)>
                    {datetime_ms(t)}
                    {partial.filter(|p| t >= *p).map(|_| view! { <span class="partial-note">" · partial: still filling"</span> })}
                </div>
                <ul>{rows}</ul>
            </div>
        })
    };
    let legend = series.with_value(|all| {
        all.iter()
            .enumerate()
            .map(|(i, s)| {
                let name = name_of(s);
                let toggle = move |_| {
                    hidden.update(|h| {
                        if let Some(x) = h.get_mut(i) {
                            *x = !*x;
                        }
                    })
                };
                let value = s.name.clone();
                let filter = on_filter.filter(|_| s.name != "other" && s.name != "total").map(|f| {
                    view! {
                        <button
                            type="button"
                            class="icon filter"
                            title="Filter to this"
                            aria-label=format!("Filter to {name}")
                            on:click=move |_| f.run(value.clone())
                        >
                            "⊕"
                        </button>
                    }
                });
                view! {
                    <li>
                        <button
                            type="button"
                            class="legend-item"
                            aria-pressed=move || (!hidden.get().get(i).copied().unwrap_or(false)).to_string()
                            title="Show or hide"
                            on:click=toggle
                        >
                            <span class="swatch" style:background=colour(i, &s.name)></span>
                            {name.clone()}
                        </button>
                        {filter}
                    </li>
                }
            })
            .collect_view()
    });
    let table = move || {
        let head = series.with_value(|all| {
            all.iter().map(|s| view! { <th class="num" scope="col">{name_of(s)}</th> }).collect_view()
        });
        let rows = times.with_value(|ts| {
            ts.iter()
                .map(|t| {
                    let cells = series.with_value(|all| {
                        all.iter()
                            .map(|s| {
                                let v = s.points.iter().find(|(x, _)| x == t).map(|(_, v)| *v).unwrap_or(0.0);
                                view! { <td class="num">{exact_or_none(unit, v)}</td> }
                            })
                            .collect_view()
                    });
                    view! {
                        <tr>
                            <td>
                                {datetime_ms(*t)}
                                {partial.filter(|p| t >= p).map(|_| " (partial)")}
                            </td>
                            {cells}
                        </tr>
                    }
                })
                .collect_view()
        });
        view! {
            <div class="table-scroll">
                <table class="data">
                    <thead>
                        <tr>
                            <th scope="col">{format!("Time ({})", zone_name())}</th>
                            {head}
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        }
    };
    view! {
        <figure class="chart-figure">
            <div
                class="chart"
                node_ref=node
                id=id
                role="group"
                tabindex="0"
                aria-label=format!("{label}. Use the arrow keys to read the values at each time.")
                on:pointermove=pick
                on:pointerleave=move |_| hover.set(None)
                on:keydown=keys
                on:blur=move |_| hover.set(None)
            >
                <div class="chart-svg" style:min-height=format!("{height}px") inner_html=move || svg().unwrap_or_default()></div>
                {tooltip}
            </div>
            <ul class="legend">{legend}</ul>
            <DataTable label table />
        </figure>
    }
}

/// Ranked values as bars, largest first; picking one (a button) calls `on_pick` with its value.
#[component]
pub fn BarList(
    label: String,
    bars: Vec<(String, f64)>,
    #[prop(default = Unit::Count)] unit: Unit,
    #[prop(optional)] id: Option<&'static str>,
    #[prop(optional)] on_pick: Option<Callback<String>>,
    /// What picking does, for the buttons' names, e.g. "Filter to".
    #[prop(default = "Choose")]
    pick_label: &'static str,
    /// The dimension the bars are values of (see [`TimeChart`]'s).
    #[prop(optional, into)]
    dim: Option<String>,
) -> impl IntoView {
    let dim = dim.unwrap_or_default();
    let max = bars.iter().map(|(_, v)| *v).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let rows = bars
        .into_iter()
        .map(|(name, v)| {
            let shown = value_label(&dim, &name);
            let percent = (v / max * 100.0).clamp(0.5, 100.0);
            let text = match on_pick {
                Some(pick) => {
                    let value = name.clone();
                    view! {
                        <button
                            type="button"
                            class="link bar-name"
                            aria-label=format!("{pick_label} {shown}")
                            on:click=move |_| pick.run(value.clone())
                        >
                            {shown.clone()}
                        </button>
                    }
                    .into_any()
                }
                None => view! { <span class="bar-name">{shown.clone()}</span> }.into_any(),
            };
            view! {
                <li data-value=name.clone()>
                    {text}
                    <span class="bar-track">
                        <span class="bar" style:width=format!("{}%", one_decimal(percent))></span>
                    </span>
                    <span class="bar-value" title=unit.exact(v)>{unit.short(v)}</span>
                </li>
            }
        })
        .collect_view();
    view! {
        <figure class="chart-figure">
            <figcaption class="sr-only">{label}</figcaption>
            <ol class="bars" id=id>{rows}</ol>
        </figure>
    }
}

/// A chart's numbers, built only when opened.
#[component]
fn DataTable<F, V>(label: String, table: F) -> impl IntoView
where
    F: Fn() -> V + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let open = RwSignal::new(false);
    let toggle = move |e: ev::Event| {
        use wasm_bindgen::JsCast;
        if let Some(d) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlDetailsElement>().ok()) {
            open.set(d.open());
        }
    };
    view! {
        <details class="chart-data" on:toggle=toggle>
            <summary>{format!("{label}: data table")}</summary>
            {move || open.get().then(&table)}
        </details>
    }
}
