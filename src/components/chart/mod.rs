//! Charts: series over time drawn with plotters (lines or stacked areas, see [`draw`]) as wide as their card,
//! with axis titles and units, the previous period dashed, the incident timeline's markers, a hover (or
//! arrow-key) tooltip of every series' exact value, a legend that shows and hides series, and the numbers as
//! a table on demand; ranked values as bars that can be picked.

mod draw;
mod markers;
mod units;

use leptos::{ev, html, prelude::*};

use self::units::{change, exact_or_none, one_decimal, plain};
pub use self::{
    draw::{Plot, ticks, time_chart_svg, x_of},
    markers::{Marker, MarkerKey, MarkerLayer, glyph, groups},
    units::{Unit, grouped, short_number},
};
use crate::components::{
    labels::value_label,
    time::{datetime_ms, utc_ms, zone_name},
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

impl Series {
    /// The value at `t`: 0 where the series has no point.
    fn at(&self, t: i64) -> f64 {
        self.points.iter().find(|(x, _)| *x == t).map(|(_, v)| *v).unwrap_or(0.0)
    }
}

/// The width of the element `node` refers to, once laid out (`None` before), followed as the window changes
/// size. Measured in a task after the next animation frame, when the view's other changes are laid out (reading
/// a width right after a change forces a layout of its own, once per chart of the view), and apart from that
/// frame's layout and paint: the chart, drawn as soon as its width is known, is then a task of its own rather
/// than one long task with the frame. The chart is drawn once, at its width (not at a guess and then again).
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
    node.on_load(move |_| request_animation_frame(move || set_timeout(measure, std::time::Duration::ZERO)));
    let resize = window_event_listener(ev::resize, move |_| measure());
    on_cleanup(move || resize.remove());
    width
}

/// A chart over time with its legend (click to hide or show a series), a tooltip of the exact values at the
/// time under the pointer (or chosen with the arrow keys), the previous period (dashed) and the incident
/// timeline's markers when given, and its numbers as a table on demand.
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
    /// The start of the bucket still filling, if the range reaches it (see [`Plot`]).
    #[prop(default = None)]
    partial: Option<i64>,
    /// The dimension the series are values of: their names are shown in words ("hit (1)", "HTTPS").
    #[prop(optional, into)]
    dim: Option<String>,
    /// The previous period's series, moved onto this range (matched to `series` by name): drawn dashed, and
    /// beside each value in the tooltip and the table.
    #[prop(optional)]
    previous: Vec<Series>,
    /// The incident timeline's markers of the range.
    #[prop(optional, into)]
    markers: Option<Signal<Vec<Marker>>>,
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
    // Each series' previous period, by the series' index.
    let before: Vec<Option<Series>> =
        series.iter().map(|s| previous.iter().find(|p| p.name == s.name).cloned()).collect();
    let comparing = before.iter().any(Option::is_some);
    let series = StoredValue::new(series);
    let before = StoredValue::new(before);
    let times = StoredValue::new(times);
    let markers = markers.unwrap_or_default();
    let shown = move |h: &[bool], i: usize| !h.get(i).copied().unwrap_or(false);
    let svg = move || {
        let h = hidden.get();
        let w = width.get()?;
        series.with_value(|all| {
            before.with_value(|before| {
                let now: Vec<(usize, &Series)> = all.iter().enumerate().filter(|(i, _)| shown(&h, *i)).collect();
                let then: Vec<(usize, &Series)> = before
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| shown(&h, *i))
                    .filter_map(|(i, p)| Some((i, p.as_ref()?)))
                    .collect();
                let plot =
                    Plot { series: &now, previous: &then, start, end, stacked, unit, y_title: &y_title, partial };
                Some(time_chart_svg(&plot, w.max(240), height))
            })
        })
    };
    // The time nearest the pointer (measured from the chart's own left edge: a marker under the pointer is
    // another target).
    let pick = move |e: ev::PointerEvent| {
        let Some(el) = node.get_untracked() else { return };
        let w = f64::from(width.get_untracked().unwrap_or(800).max(240));
        let x = f64::from(e.client_x()) - el.get_bounding_client_rect().left();
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
        let filling = partial.is_some_and(|p| t >= p);
        let (mut sum, mut sum_before) = (0.0, 0.0);
        let rows = series.with_value(|all| {
            before.with_value(|before| {
                all.iter()
                    .enumerate()
                    .filter(|(i, _)| shown(&h, *i))
                    .map(|(i, s)| {
                        let v = s.at(t);
                        let was = before.get(i).and_then(Option::as_ref).map(|p| p.at(t));
                        sum += if v.is_nan() { 0.0 } else { v };
                        sum_before += was.filter(|w| !w.is_nan()).unwrap_or(0.0);
                        // Stacked, the previous period is compared as a total (its own row).
                        let was = was.filter(|_| !stacked).map(|was| {
                            view! {
                                <span class="previous" data-value=if was.is_nan() { String::new() } else { plain(was) }>
                                    {format!("before {}", exact_or_none(unit, was))}
                                    // A bucket still filling is not a drop against the previous period.
                                    <span class="change">{if filling { String::new() } else { change(v, was) }}</span>
                                </span>
                            }
                        });
                        view! {
                            <li data-series=s.name.clone() data-value=if v.is_nan() { String::new() } else { plain(v) }>
                                <span class="swatch" style:background=colour(i, &s.name)></span>
                                <span class="name">{name_of(s)}</span>
                                <span class="value" title=if v.is_nan() { String::new() } else { unit.exact(v) }>{exact_or_none(unit, v)}</span>
                                {was}
                            </li>
                        }
                    })
                    .collect_view()
            })
        });
        let total_before = (stacked && comparing).then(|| {
            view! {
                <li data-series="previous" data-value=plain(sum_before)>
                    <span class="swatch dashed"></span>
                    <span class="name">"Previous period, total"</span>
                    <span class="value" title=unit.exact(sum_before)>{exact_or_none(unit, sum_before)}</span>
                    <span class="previous"><span class="change">{if filling { String::new() } else { format!("now {}", change(sum, sum_before)) }}</span></span>
                </li>
            }
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
                <ul>{rows}{total_before}</ul>
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
                            aria-pressed=move || shown(&hidden.get(), i).to_string()
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
    let previous_key = comparing.then(|| {
        view! {
            <li class="previous-key">
                <span class="swatch dashed" aria-hidden="true"></span>
                {if stacked { "Previous period, total (dashed)" } else { "Previous period (dashed)" }}
            </li>
        }
    });
    let table = move || {
        let head = series.with_value(|all| {
            before.with_value(|before| {
                all.iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let was = before.get(i).and_then(Option::as_ref).map(|_| {
                            view! { <th class="num" scope="col">{format!("{}, previous period", name_of(s))}</th> }
                        });
                        view! {
                            <th class="num" scope="col">{name_of(s)}</th>
                            {was}
                        }
                    })
                    .collect_view()
            })
        });
        let rows = times.with_value(|ts| {
            ts.iter()
                .map(|t| {
                    let cells = series.with_value(|all| {
                        before.with_value(|before| {
                            all.iter()
                                .enumerate()
                                .map(|(i, s)| {
                                    let was = before.get(i).and_then(Option::as_ref).map(|p| {
                                        view! { <td class="num">{exact_or_none(unit, p.at(*t))}</td> }
                                    });
                                    view! {
                                        <td class="num">{exact_or_none(unit, s.at(*t))}</td>
                                        {was}
                                    }
                                })
                                .collect_view()
                        })
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
                style=format!("--plot-height:{}px", height.saturating_sub(62))
            >
                <div class="chart-svg" style:min-height=format!("{height}px") inner_html=move || svg().unwrap_or_default()></div>
                {tooltip}
                <MarkerLayer markers start end width />
            </div>
            <ul class="legend">{legend}{previous_key}</ul>
            <MarkerKey markers />
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
