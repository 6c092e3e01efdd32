//! Charts drawn with plotters into SVG strings: series over time (lines or stacked), and ranked bars.

use plotters::prelude::*;

/// Colours of series, in order; the last one is for "other".
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 111, 235),
    RGBColor(230, 126, 34),
    RGBColor(46, 157, 87),
    RGBColor(198, 40, 40),
    RGBColor(142, 68, 173),
    RGBColor(0, 150, 170),
    RGBColor(183, 149, 11),
    RGBColor(127, 140, 141),
];

pub fn colour_hex(i: usize) -> String {
    let c = PALETTE[i % PALETTE.len()];
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
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
    if d == 1.0 { format!("{v:.0}") } else { format!("{:.1}{s}", v / d) }
}

/// `HH:MM` for spans up to two days, else `MM-DD`.
fn time_label(ms: i64, span: i64) -> String {
    let t = edge_api::stats::format_time(ms);
    if span <= 2 * 86_400_000 { t[11..16].to_string() } else { t[5..10].to_string() }
}

/// Lines (or stacked areas) of `series` over [start, end).
pub fn time_chart(series: &[Series], start: i64, end: i64, stacked: bool, width: u32, height: u32) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let mut totals: Vec<(i64, f64)> = Vec::new();
        let ymax = if stacked {
            let mut by_t: std::collections::BTreeMap<i64, f64> = Default::default();
            for s in series {
                for (t, v) in &s.points {
                    *by_t.entry(*t).or_default() += v;
                }
            }
            totals = by_t.into_iter().collect();
            totals.iter().map(|(_, v)| *v).fold(0.0, f64::max)
        } else {
            series.iter().flat_map(|s| s.points.iter().map(|(_, v)| *v)).fold(0.0, f64::max)
        };
        let ymax = if ymax <= 0.0 { 1.0 } else { ymax * 1.1 };
        let span = (end - start).max(1);
        let Ok(mut chart) = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(56)
            .build_cartesian_2d(start..end, 0.0..ymax)
        else {
            return svg_fallback(width, height);
        };
        let _ = chart
            .configure_mesh()
            .light_line_style(RGBColor(236, 240, 245))
            .bold_line_style(RGBColor(223, 228, 235))
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&|t| time_label(*t, span))
            .y_label_formatter(&|v| short_number(*v))
            .label_style(("sans-serif", 12).into_font().color(&RGBColor(93, 107, 126)))
            .draw();
        if stacked {
            // Each series drawn on top of those before it.
            let mut base: std::collections::BTreeMap<i64, f64> = totals.iter().map(|(t, _)| (*t, 0.0)).collect();
            let mut layers = Vec::new();
            for s in series {
                let mut upper = base.clone();
                for (t, v) in &s.points {
                    *upper.entry(*t).or_default() += v;
                }
                layers.push((base.clone(), upper.clone()));
                base = upper;
            }
            for (i, (lower, upper)) in layers.iter().enumerate().rev() {
                let colour = PALETTE[i % PALETTE.len()];
                let mut poly: Vec<(i64, f64)> = upper.iter().map(|(t, v)| (*t, *v)).collect();
                poly.extend(lower.iter().rev().map(|(t, v)| (*t, *v)));
                let _ = chart.draw_series(std::iter::once(Polygon::new(poly, colour.mix(0.75).filled())));
            }
        } else {
            for (i, s) in series.iter().enumerate() {
                let colour = PALETTE[i % PALETTE.len()];
                let _ = chart.draw_series(LineSeries::new(s.points.iter().copied(), colour.stroke_width(2)));
            }
        }
        let _ = root.present();
    }
    svg
}

/// Horizontal bars of `(label, value)`, largest first.
pub fn bar_chart(bars: &[(String, f64)], width: u32, row_height: u32) -> String {
    let height = (bars.len() as u32).max(1) * row_height + 30;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let max = bars.iter().map(|(_, v)| *v).fold(0.0, f64::max).max(1.0) * 1.15;
        let n = bars.len().max(1) as i32;
        let Ok(mut chart) = ChartBuilder::on(&root)
            .margin(6)
            .x_label_area_size(22)
            .y_label_area_size((width / 3).min(260))
            .build_cartesian_2d(0.0..max, 0..n)
        else {
            return svg_fallback(width, height);
        };
        let labels: Vec<String> =
            bars.iter().map(|(l, _)| if l.is_empty() { "(none)".into() } else { l.clone() }).collect();
        let _ = chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(RGBColor(236, 240, 245))
            .y_labels(bars.len().max(1))
            .y_label_formatter(&|i| labels.get((n - 1 - *i) as usize).cloned().unwrap_or_default())
            .x_labels(5)
            .x_label_formatter(&|v| short_number(*v))
            .label_style(("sans-serif", 12).into_font().color(&RGBColor(93, 107, 126)))
            .draw();
        let _ = chart.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
            let y = n - 1 - i as i32;
            Rectangle::new([(0.0, y), (*v, y + 1)], PALETTE[0].mix(0.85).filled())
        }));
        let _ = root.present();
    }
    svg
}

fn svg_fallback(width: u32, height: u32) -> String {
    format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\"></svg>")
}
