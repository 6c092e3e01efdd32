//! A draft rule's preview: its value over the last days as a line, the threshold dashed, the spans it would
//! have fired in shaded, and the same as a list (the chart's numbers for those who do not see it).

use edge_api::alerts::RulePreview;
use leptos::prelude::*;

use crate::components::time::Time;

const W: f64 = 640.0;
const H: f64 = 160.0;
const PAD: f64 = 4.0;

fn ms(iso: &str) -> Option<f64> {
    crate::components::time::parse_iso(iso).map(|m| m as f64)
}

#[component]
pub(super) fn PreviewChart(preview: RulePreview) -> impl IntoView {
    let times: Vec<f64> = preview.points.iter().filter_map(|p| ms(&p.time)).collect();
    let (t0, t1) = (times.first().copied().unwrap_or(0.0), times.last().copied().unwrap_or(1.0));
    let values: Vec<f64> = preview.points.iter().filter_map(|p| p.value).chain(preview.threshold).collect();
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let (lo, hi) = if lo.is_finite() { (lo.min(0.0), if hi > lo { hi } else { lo + 1.0 }) } else { (0.0, 1.0) };
    let x = move |t: f64| PAD + (t - t0) / (t1 - t0).max(1.0) * (W - 2.0 * PAD);
    let y = move |v: f64| H - PAD - (v - lo) / (hi - lo) * (H - 2.0 * PAD);
    let mut line = String::new();
    for (p, t) in preview.points.iter().zip(&times) {
        match p.value {
            Some(v) => line.push_str(&format!(
                "{}{:.1},{:.1} ",
                if line.is_empty() || line.ends_with('|') { "M" } else { "L" },
                x(*t),
                y(v)
            )),
            None => line.push('|'),
        }
    }
    let line = line.replace('|', "");
    // A point with no neighbour draws no line: it is drawn as a dot (red where the condition held).
    let has = |i: usize| preview.points.get(i).is_some_and(|p| p.value.is_some());
    let dots: Vec<(f64, f64, bool)> = preview
        .points
        .iter()
        .zip(&times)
        .enumerate()
        .filter(|(i, (p, _))| p.value.is_some() && (p.holds || (!has(i.wrapping_sub(1)) && !has(i + 1))))
        .filter_map(|(_, (p, t))| Some((x(*t), y(p.value?), p.holds)))
        .collect();
    let spans: Vec<(f64, f64)> = preview
        .firings
        .iter()
        .filter_map(|f| Some((x(ms(&f.from)?), x(f.until.as_deref().and_then(ms).unwrap_or(t1)))))
        // At least a few pixels, inside the chart, so that a firing at the last point shows.
        .map(|(a, b)| (a.min(W - PAD - 4.0), b.max(a + 4.0).min(W)))
        .collect();
    let threshold = preview.threshold.map(y);
    let count = preview.firings.len();
    let summary = match count {
        0 => "It would not have fired in this time.".to_string(),
        1 => "It would have fired once:".to_string(),
        n => format!("It would have fired {n} times:"),
    };
    view! {
        <figure class="preview-chart">
            <svg viewBox=format!("0 0 {W} {H}") role="img" aria-label=format!("The rule's value every {} minutes; {summary}", preview.step_minutes) preserveAspectRatio="none">
                {spans.into_iter().map(|(a, b)| view! { <rect class="firing" x=format!("{a:.1}") y="0" width=format!("{:.1}", b - a) height=H.to_string()></rect> }).collect_view()}
                {threshold.map(|ty| view! { <line class="threshold" x1="0" x2=W.to_string() y1=format!("{ty:.1}") y2=format!("{ty:.1}")></line> })}
                <path class="value" d=line></path>
                {dots.into_iter().map(|(cx, cy, held)| view! { <circle class=if held { "dot held" } else { "dot" } cx=format!("{cx:.1}") cy=format!("{cy:.1}") r="3"></circle> }).collect_view()}
            </svg>
            <figcaption>
                <span class="small muted">
                    <Time iso=preview.from.clone() /> " – " <Time iso=preview.to.clone() />
                    {preview.threshold.map(|t| format!(" · threshold {t}"))}
                </span>
                <p>{summary}</p>
                {(count > 0).then(|| view! {
                    <ul class="small">
                        {preview.firings.iter().take(20).map(|f| view! {
                            <li>
                                <Time iso=f.from.clone() /> " – "
                                {match f.until.clone() { Some(u) => view! { <Time iso=u /> }.into_any(), None => "still firing".into_any() }}
                            </li>
                        }).collect_view()}
                    </ul>
                })}
            </figcaption>
        </figure>
    }
}
