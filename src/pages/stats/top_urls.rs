//! The top 20 URLs of each day of the range.

use edge_api::stats::format_time;
use leptos::prelude::*;

use crate::{
    api::{self, Column},
    components::{
        async_view::{AsyncView, load},
        chart::short_number,
        range::Range,
        time::date,
    },
    pages::use_customer,
};

const DAY: i64 = 86_400_000;

#[component]
pub fn TopUrls(#[prop(into)] range: Signal<Option<Range>>) -> impl IntoView {
    let customer = use_customer();
    let property = RwSignal::new(String::new());
    let urls = load(move || {
        let (c, r, p) = (customer.get(), range.get(), property.get());
        async move {
            let Some(r) = r else { return Ok(None) };
            // Whole days: the report is daily.
            let (start, end) = (r.start - r.start.rem_euclid(DAY), r.end + (DAY - r.end.rem_euclid(DAY)) % DAY);
            let filters = if p.is_empty() { String::new() } else { format!("property=={p}") };
            let params = [
                ("starttime", format_time(start)),
                ("endtime", format_time(end)),
                ("dimensions", "customer,property,request_url".into()),
                ("metrics", "hits".into()),
                ("granularity", "day".into()),
                ("filters", filters),
            ];
            api::stats(&c, "/stats/topk/url/data", &params).await.map(Some)
        }
    });
    view! {
        <div class="card panel wide" id="top-urls">
            <div class="toolbar">
                <h2>"Top 20 URLs per day"</h2>
                <span class="spacer"></span>
                <input
                    placeholder="Property (all)"
                    aria-label="Property"
                    on:change=move |e| property.set(event_target_value(&e).trim().to_string())
                />
            </div>
            <AsyncView resource=urls let:answer>
                {match answer {
                    None => ().into_any(),
                    Some(r) if r.rows.is_empty() => view! { <div class="empty">"No requests in this range."</div> }.into_any(),
                    Some(r) => {
                        let (day, property, url, hits) = (
                            Column::of(&r, "starttime"),
                            Column::of(&r, "property"),
                            Column::of(&r, "request_url"),
                            Column::of(&r, "hits"),
                        );
                        let rows = r
                            .rows
                            .iter()
                            .map(|row| {
                                view! {
                                    <tr>
                                        <td>{date(&day.text(row))}</td>
                                        <td>{property.text(row)}</td>
                                        <td><code>{url.text(row)}</code></td>
                                        <td class="num">{short_number(hits.number(row))}</td>
                                    </tr>
                                }
                            })
                            .collect_view();
                        view! {
                            <table class="data">
                                <thead>
                                    <tr>
                                        <th scope="col">"Day"</th>
                                        <th scope="col">"Property"</th>
                                        <th scope="col">"URL"</th>
                                        <th scope="col" class="num">"Hits"</th>
                                    </tr>
                                </thead>
                                <tbody>{rows}</tbody>
                            </table>
                        }
                            .into_any()
                    }
                }}
            </AsyncView>
        </div>
    }
}
