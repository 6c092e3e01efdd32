//! Charts as small hand-written SVG (series over time as lines or stacked areas, ranked bars), each with an
//! accessible name and its numbers as a table on demand.

use std::fmt::Write;

use leptos::{ev, prelude::*};

use crate::components::time::{axis_label, datetime_ms};

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
    if d == 1.0 {
        format!("{}", v.round() as i64)
    } else {
        // One decimal without the float formatter: tenths as an integer.
        let tenths = (v / d * 10.0).round() as i64;
        format!("{}{}.{}{s}", if tenths < 0 { "-" } else { "" }, tenths.abs() / 10, tenths.abs() % 10)
    }
}

/// A round step near `max / n`: 1, 2 or 5 times a power of ten.
fn nice_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powi(raw.log10().floor() as i32);
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
}

const LEFT: f64 = 56.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 26.0;
const LABEL: &str = "font-size=\"12\" fill=\"#5d6b7e\" font-family=\"sans-serif\"";

fn open_svg(out: &mut String, width: u32, height: u32) {
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" width=\"100%\" \
         preserveAspectRatio=\"xMidYMid meet\" aria-hidden=\"true\">"
    );
}

/// Lines (or stacked areas) of `series` over [start, end) in an SVG of `width` × `height`.
pub fn time_chart_svg(series: &[Series], start: i64, end: i64, stacked: bool, width: u32, height: u32) -> String {
    let (w, h) = (f64::from(width), f64::from(height));
    let (pw, ph) = (w - LEFT - RIGHT, h - TOP - BOTTOM);
    let span = (end - start).max(1);
    // Each series on top of those before it when stacked.
    let mut layers: Vec<Vec<(i64, f64, f64)>> = Vec::new();
    let mut base: std::collections::BTreeMap<i64, f64> = Default::default();
    for s in series {
        let layer: Vec<(i64, f64, f64)> = s
            .points
            .iter()
            .map(|(t, v)| {
                let below = if stacked { base.get(t).copied().unwrap_or(0.0) } else { 0.0 };
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
    let max = layers.iter().flatten().map(|(_, _, v)| *v).fold(0.0, f64::max);
    let step = nice_step(if max > 0.0 { max } else { 1.0 }, 5.0);
    let ymax = ((if max > 0.0 { max } else { 1.0 }) / step).ceil() * step;
    let x = |t: i64| LEFT + (t - start) as f64 / span as f64 * pw;
    let y = |v: f64| TOP + ph - v / ymax * ph;

    let mut out = String::with_capacity(4096);
    open_svg(&mut out, width, height);
    let mut v = 0.0;
    while v <= ymax + step / 2.0 {
        let py = y(v) as i64;
        let _ = write!(
            out,
            "<line x1=\"{}\" x2=\"{}\" y1=\"{py}\" y2=\"{py}\" stroke=\"#e4e8ee\"/><text x=\"{}\" y=\"{}\" \
             text-anchor=\"end\" {LABEL}>{}</text>",
            LEFT as i64,
            (w - RIGHT) as i64,
            (LEFT - 6.0) as i64,
            py + 4,
            short_number(v)
        );
        v += step;
    }
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
    let tick = STEPS.iter().copied().find(|s| span / s <= 8).unwrap_or(span / 8 + 1);
    let mut t = start + (tick - start.rem_euclid(tick)) % tick;
    while t <= end {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" {LABEL}>{}</text>",
            x(t) as i64,
            (h - 8.0) as i64,
            axis_label(t, span)
        );
        t += tick;
    }
    for (i, (layer, s)) in layers.iter().zip(series).enumerate().rev() {
        let c = colour(i, &s.name);
        let mut points = String::new();
        for (t, _, top) in layer {
            let _ = write!(points, "{},{} ", x(*t) as i64, y(*top) as i64);
        }
        if stacked {
            for (t, below, _) in layer.iter().rev() {
                let _ = write!(points, "{},{} ", x(*t) as i64, y(*below) as i64);
            }
            let _ = write!(out, "<polygon points=\"{points}\" fill=\"{c}\" fill-opacity=\"0.75\"/>");
        } else {
            let _ = write!(out, "<polyline points=\"{points}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>");
        }
    }
    out.push_str("</svg>");
    out
}

/// Horizontal bars of `(label, value)`, largest first, `row` pixels each.
pub fn bar_chart_svg(bars: &[(String, f64)], width: u32, row: u32) -> String {
    let w = f64::from(width);
    let height = bars.len().max(1) as u32 * row + 8;
    let label_w = (w / 3.0).min(240.0);
    let max = bars.iter().map(|(_, v)| *v).fold(0.0, f64::max).max(1.0);
    let bar_w = w - label_w - 70.0;
    let mut out = String::with_capacity(2048);
    open_svg(&mut out, width, height);
    for (i, (label, v)) in bars.iter().enumerate() {
        let top = i as u32 * row + 4;
        let len = (v / max * bar_w).max(1.0) as i64;
        let mut shown: String = label.chars().take(36).collect();
        if shown.is_empty() {
            shown = "(none)".into();
        }
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" {LABEL}>{}</text><rect x=\"{}\" y=\"{}\" width=\"{len}\" \
             height=\"{}\" fill=\"{}\" rx=\"2\"/><text x=\"{}\" y=\"{}\" {LABEL}>{}</text>",
            (label_w - 8.0) as i64,
            top + row / 2 + 4,
            escape(&shown),
            label_w as i64,
            top + 3,
            row - 6,
            PALETTE[0],
            label_w as i64 + len + 6,
            top + row / 2 + 4,
            short_number(*v)
        );
    }
    out.push_str("</svg>");
    out
}

/// Text safe inside SVG markup.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A chart over time with its legend and, on demand, its numbers as a table (for screen readers and for
/// reading exact values).
#[component]
pub fn TimeChart(
    /// What the chart shows, its accessible name.
    label: String,
    series: Vec<Series>,
    start: i64,
    end: i64,
    stacked: bool,
    #[prop(optional)] id: Option<&'static str>,
    #[prop(default = 1100)] width: u32,
    #[prop(default = 300)] height: u32,
) -> impl IntoView {
    let svg = time_chart_svg(&series, start, end, stacked, width, height);
    Effect::new(|_| crate::mark("edge:first-chart"));
    let legend = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let name = if s.name.is_empty() { "(none)".to_string() } else { s.name.clone() };
            view! {
                <li>
                    <span class="swatch" style:background=colour(i, &s.name)></span>
                    {name}
                </li>
            }
        })
        .collect_view();
    let table = move || {
        let mut times: Vec<i64> = series.iter().flat_map(|s| s.points.iter().map(|(t, _)| *t)).collect();
        times.sort_unstable();
        times.dedup();
        let head = series.iter().map(|s| view! { <th class="num">{s.name.clone()}</th> }).collect_view();
        let rows = times
            .iter()
            .map(|t| {
                let cells = series
                    .iter()
                    .map(|s| {
                        let v = s.points.iter().find(|(x, _)| x == t).map(|(_, v)| *v).unwrap_or(0.0);
                        view! { <td class="num">{(v.round() as i64).to_string()}</td> }
                    })
                    .collect_view();
                view! {
                    <tr>
                        <td>{datetime_ms(*t)}</td>
                        {cells}
                    </tr>
                }
            })
            .collect_view();
        view! {
            <table class="data">
                <thead>
                    <tr>
                        <th>"Time (UTC)"</th>
                        {head}
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        }
    };
    view! {
        <figure class="chart-figure">
            <div class="chart" id=id role="img" aria-label=label.clone() inner_html=svg></div>
            <ul class="legend">{legend}</ul>
            <DataTable label table />
        </figure>
    }
}

/// Ranked bars with their numbers as a table on demand.
#[component]
pub fn BarChart(
    label: String,
    bars: Vec<(String, f64)>,
    #[prop(optional)] id: Option<&'static str>,
    #[prop(default = 560)] width: u32,
    #[prop(default = 24)] row: u32,
) -> impl IntoView {
    let svg = bar_chart_svg(&bars, width, row);
    let table = move || {
        let rows = bars
            .iter()
            .map(|(l, v)| {
                view! {
                    <tr>
                        <td>{l.clone()}</td>
                        <td class="num">{(v.round() as i64).to_string()}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <table class="data">
                <thead>
                    <tr>
                        <th>"Value"</th>
                        <th class="num">"Count"</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        }
    };
    view! {
        <figure class="chart-figure">
            <div class="chart" id=id role="img" aria-label=label.clone() inner_html=svg></div>
            <DataTable label table />
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
