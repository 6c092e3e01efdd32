//! A chart over time drawn with plotters' SVG backend: lines or stacked areas, the previous period dashed,
//! gaps where an average has nothing to average, the bucket still filling shaded and reached by a dashed step,
//! axis labels on round wall times of the display zone. Text is SVG text that the browser draws; plotters
//! measures none (labels are placed by their anchors), so drawing forces no layout.

use chrono::{Datelike, NaiveDateTime, TimeDelta, Timelike};
use plotters::{
    coord::{
        Shift,
        ranged1d::{DefaultFormatting, KeyPointHint},
    },
    element::DashedPathElement,
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};

use super::{
    Series, colour,
    units::{Unit, nice_step},
};
use crate::components::time::{axis_label, from_wall, wall, zone_name};

/// The plot's margins inside the SVG: the y labels and title on the left, the time labels and title below.
const LEFT: u32 = 72;
const RIGHT: u32 = 12;
const TOP: u32 = 10;
const BOTTOM: u32 = 44;

/// Colours the style sheet replaces (see [`themed`]): grid lines and text, lines in the ink's colour, the
/// shade of the partial bucket.
const GRID: RGBColor = RGBColor(0xdf, 0xe4, 0xeb);
const INK: RGBColor = RGBColor(0x5d, 0x6b, 0x7e);
const PARTIAL: RGBAColor = RGBAColor(0x7f, 0x8c, 0x8e, 0.14);

/// What one chart over time shows.
pub struct Plot<'a> {
    /// The series shown, with their palette index.
    pub series: &'a [(usize, &'a Series)],
    /// The previous period's series, moved onto this range (a series of the same name and index each): drawn
    /// dashed in the same colour; stacked, their total as one dashed line.
    pub previous: &'a [(usize, &'a Series)],
    pub start: i64,
    pub end: i64,
    pub stacked: bool,
    pub unit: Unit,
    /// The y axis' title, e.g. "Requests per hour".
    pub y_title: &'a str,
    /// The start of the bucket still filling, if the range reaches it.
    pub partial: Option<i64>,
}

/// Where a chart of `width` puts time `t` of [start, end) (as plotters maps it).
pub fn x_of(t: i64, start: i64, end: i64, width: f64) -> f64 {
    let (left, right) = (f64::from(LEFT), f64::from(RIGHT));
    left + (t - start) as f64 / (end - start).max(1) as f64 * (width - left - right)
}

/// Steps between time labels, in wall-clock time: minutes within a day, else whole days.
#[derive(Clone, Copy)]
enum Step {
    Minutes(u32),
    Days(u32),
}

impl Step {
    fn millis(self) -> i64 {
        match self {
            Step::Minutes(m) => i64::from(m) * 60_000,
            Step::Days(d) => i64::from(d) * 86_400_000,
        }
    }

    fn delta(self) -> TimeDelta {
        TimeDelta::milliseconds(self.millis())
    }

    /// The first round wall time of this step at or before `w`: a multiple of the minutes since midnight; a
    /// midnight (of a Monday for weeks, of every other day since the epoch for two days).
    fn floor(self, w: NaiveDateTime) -> NaiveDateTime {
        let midnight = w.date().and_time(chrono::NaiveTime::MIN);
        match self {
            Step::Minutes(m) => {
                let since = w.hour() * 60 + w.minute();
                midnight + TimeDelta::minutes(i64::from(since - since % m.max(1)))
            }
            Step::Days(7) => midnight - TimeDelta::days(i64::from(w.weekday().num_days_from_monday())),
            Step::Days(d) => {
                let day = midnight.and_utc().timestamp().div_euclid(86_400);
                midnight - TimeDelta::days(day.rem_euclid(i64::from(d.max(1))))
            }
        }
    }
}

const STEPS: [Step; 10] = [
    Step::Minutes(5),
    Step::Minutes(15),
    Step::Minutes(30),
    Step::Minutes(60),
    Step::Minutes(180),
    Step::Minutes(360),
    Step::Minutes(720),
    Step::Days(1),
    Step::Days(2),
    Step::Days(7),
];

/// The times of [start, end] to label: round wall times of the display zone, about one per `px` pixels of a
/// plot `plot_width` wide. Stepped in wall time, so a label stays on the hour (or on midnight) across a
/// change of the zone's offset.
pub fn ticks(start: i64, end: i64, plot_width: f64, px: f64) -> Vec<i64> {
    let span = (end - start).max(1);
    let most = (plot_width / px).max(2.0) as i64;
    let step = STEPS
        .iter()
        .copied()
        .find(|s| span / s.millis() <= most)
        .unwrap_or_else(|| Step::Days(u32::try_from(span / 86_400_000 / most + 1).unwrap_or(u32::MAX)));
    let mut w = step.floor(wall(start));
    let mut out: Vec<i64> = Vec::new();
    // Bounded: at most `most` labels fit, and the walk stops a step past the end.
    for _ in 0..=most * 2 + 2 {
        let t = from_wall(w);
        if t > end {
            break;
        }
        if t >= start && out.last().is_none_or(|last| *last < t) {
            out.push(t);
        }
        w += step.delta();
    }
    out
}

/// The value axis: from 0 to a round maximum, with a grid line at each multiple of a round step.
#[derive(Clone)]
struct ValueAxis {
    max: f64,
    step: f64,
}

impl Ranged for ValueAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let share = if self.max > 0.0 { value / self.max } else { 0.0 };
        limit.0 + (f64::from(limit.1 - limit.0) * share).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Grid lines at the labelled values only: no light lines between them.
        if hint.weight().allow_light_points() {
            return Vec::new();
        }
        let n = (self.max / self.step).round().clamp(0.0, 100.0) as i64;
        (0..=n).map(|i| i as f64 * self.step).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        0.0..self.max
    }
}

fn rgb(hex: &str) -> RGBColor {
    let byte = |i: usize| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).unwrap_or(0);
    RGBColor(byte(1), byte(3), byte(5))
}

/// The chart as an SVG of `width` × `height` (hidden from screen readers: the chart's table and tooltip
/// speak for it).
pub fn time_chart_svg(plot: &Plot, width: u32, height: u32) -> String {
    let mut svg = String::with_capacity(16 * 1024);
    let drawn = {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        draw(&root, plot, width).and_then(|()| root.present()).is_ok()
    };
    if !drawn {
        return format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" aria-hidden=\"true\"></svg>"
        );
    }
    themed(&svg)
}

/// The grid, the text, the ink lines and the partial bucket as classes the style sheet colours (for the dark
/// theme); the colours stay as attributes for an SVG seen without the style sheet.
fn themed(svg: &str) -> String {
    let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
    let partial = hex(RGBColor(PARTIAL.0, PARTIAL.1, PARTIAL.2));
    svg.replacen("<svg ", "<svg aria-hidden=\"true\" ", 1)
        .replace(&format!("fill=\"{partial}\""), &format!("class=\"partial\" fill=\"{partial}\""))
        .replace(&format!("stroke=\"{}\"", hex(GRID)), &format!("class=\"grid\" stroke=\"{}\"", hex(GRID)))
        .replace(&format!("fill=\"{}\"", hex(INK)), &format!("class=\"axis\" fill=\"{}\"", hex(INK)))
        .replace(&format!("stroke=\"{}\"", hex(INK)), &format!("class=\"ink\" stroke=\"{}\"", hex(INK)))
}

/// Each series on top of those before it when stacked: (time, below, top) per point. Stacked, a missing value
/// adds nothing; as a line it stays missing (a gap).
fn layers(series: &[(usize, &Series)], stacked: bool) -> Vec<Vec<(i64, f64, f64)>> {
    let mut base: std::collections::BTreeMap<i64, f64> = Default::default();
    series
        .iter()
        .map(|(_, s)| {
            let layer: Vec<(i64, f64, f64)> = s
                .points
                .iter()
                .map(|(t, v)| {
                    let below = if stacked { base.get(t).copied().unwrap_or(0.0) } else { 0.0 };
                    let v = if stacked && v.is_nan() { 0.0 } else { *v };
                    (*t, below, below + v)
                })
                .collect();
            if stacked {
                for (t, _, top) in &layer {
                    base.insert(*t, *top);
                }
            }
            layer
        })
        .collect()
}

/// The previous period's total at each time (for a stacked chart).
fn total(series: &[(usize, &Series)]) -> Series {
    let mut sum: std::collections::BTreeMap<i64, f64> = Default::default();
    for (_, s) in series {
        for (t, v) in &s.points {
            *sum.entry(*t).or_default() += if v.is_nan() { 0.0 } else { *v };
        }
    }
    Series { name: "previous".into(), points: sum.into_iter().collect() }
}

/// Runs of consecutive points with a value: a gap (no value) ends one.
fn runs(points: impl Iterator<Item = (i64, f64)>) -> Vec<Vec<(i64, f64)>> {
    let mut out = vec![Vec::new()];
    for (t, v) in points {
        match out.last_mut() {
            Some(run) if v.is_finite() => run.push((t, v)),
            Some(run) if !run.is_empty() => out.push(Vec::new()),
            _ => {}
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw(root: &Area, plot: &Plot, width: u32) -> Drawn {
    let Plot { series, previous, start, end, stacked, unit, y_title, partial } = *plot;
    let layers = layers(series, stacked);
    let previous_total = stacked.then(|| total(previous));
    let shown_previous: Vec<(usize, &Series)> = match &previous_total {
        Some(t) if !previous.is_empty() => vec![(usize::MAX, t)],
        Some(_) => Vec::new(),
        None => previous.to_vec(),
    };
    let max = layers
        .iter()
        .flatten()
        .map(|(_, _, v)| *v)
        .chain(shown_previous.iter().flat_map(|(_, s)| s.points.iter().map(|(_, v)| *v)))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let max = if max > 0.0 { max } else { 1.0 };
    // Counts step by whole numbers: a chart of a few events (or none) is not labelled 0, 0, 1, 1.
    let step = if unit == Unit::Count { nice_step(max, 5.0).max(1.0) } else { nice_step(max, 5.0) };
    let ymax = (max / step).ceil() * step;
    let plot_width = f64::from(width.saturating_sub(LEFT + RIGHT));
    let x_ticks = ticks(start, end, plot_width, 90.0);
    let span = (end - start).max(1);

    let label = ("sans-serif", 12.0 * 1.24).into_font().color(&INK);
    let mut chart = ChartBuilder::on(root)
        .margin_top(TOP)
        .margin_right(RIGHT)
        .x_label_area_size(BOTTOM)
        .y_label_area_size(LEFT)
        .build_cartesian_2d((start..end).with_key_points(x_ticks), ValueAxis { max: ymax, step })?;
    let x_desc = format!("Time ({})", zone_name());
    let x_label = |t: &i64| axis_label(*t, span);
    let y_label = |v: &f64| unit.short(*v);
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh()
        .bold_line_style(GRID.stroke_width(1))
        .axis_style(TRANSPARENT)
        .set_all_tick_mark_size(4)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(label.clone())
        .axis_desc_style(label.clone())
        .x_desc(x_desc);
    if !y_title.is_empty() {
        mesh.y_desc(y_title);
    }
    mesh.draw()?;

    // The bucket still filling: shaded and named, so its low numbers do not read as a drop in traffic.
    if let Some(p) = partial.filter(|p| *p < end) {
        chart.draw_series(std::iter::once(Rectangle::new([(p.max(start), ymax), (end, 0.0)], PARTIAL.filled())))?;
        let named = EmptyElement::at((end, ymax))
            + Text::new("partial", (-4, 4), label.clone().pos(Pos::new(HPos::Right, VPos::Top)));
        chart.draw_series(std::iter::once(named))?;
    }
    let is_partial = |t: i64| partial.is_some_and(|p| t >= p);

    // The previous period first, under this one.
    for (i, s) in &shown_previous {
        let style = match *i {
            usize::MAX => INK.stroke_width(2),
            i => rgb(colour(i, &s.name)).stroke_width(2),
        };
        for run in runs(s.points.iter().copied()) {
            chart.draw_series(std::iter::once(DashedPathElement::new(run, 6, 4, style)))?;
        }
    }

    for (layer, (i, s)) in layers.iter().zip(series).rev() {
        let c = rgb(colour(*i, &s.name));
        if stacked {
            let mut points: Vec<(i64, f64)> = layer.iter().map(|(t, _, top)| (*t, *top)).collect();
            points.extend(layer.iter().rev().map(|(t, below, _)| (*t, *below)));
            chart.draw_series(std::iter::once(Polygon::new(points, c.mix(0.75).filled())))?;
            continue;
        }
        let complete = layer.iter().filter(|(t, _, _)| !is_partial(*t)).map(|(t, _, v)| (*t, *v));
        for run in runs(complete) {
            if run.len() == 1 {
                // A value between two gaps: a dot, as a line of one point shows nothing.
                chart.draw_series(run.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
            } else {
                chart.draw_series(std::iter::once(PathElement::new(run, c.stroke_width(2))))?;
            }
        }
        // Partial buckets: a dot each, reached by a dashed step from the point before.
        let mut last: Option<(i64, f64)> = None;
        for (t, _, v) in layer {
            let point = v.is_finite().then_some((*t, *v));
            if is_partial(*t)
                && let Some(p) = point
            {
                if let Some(l) = last {
                    chart.draw_series(std::iter::once(DashedPathElement::new([l, p], 4, 3, c.stroke_width(2))))?;
                }
                chart.draw_series(std::iter::once(Circle::new(p, 3, c.filled())))?;
            }
            last = point;
        }
    }
    Ok(())
}
