//! The top 20 URLs of each day of the range, each with "Purge this URL".

use edge_api::stats::format_time;
use leptos::prelude::*;

use crate::{
    api::{self, Column},
    components::{
        async_view::{AsyncView, load},
        chart::short_number,
        curl::CopyCurl,
        purge_url::PurgeUrlDialog,
        range::Range,
        time::date,
    },
    nav::use_customer,
    session::Auth,
};

const DAY: i64 = 86_400_000;

/// Rows drawn before "Show all": a day's top 20.
const FIRST_ROWS: usize = 20;

#[component]
pub fn TopUrls(#[prop(into)] range: Signal<Option<Range>>) -> impl IntoView {
    let customer = use_customer();
    let auth = Auth::get();
    let property = RwSignal::new(String::new());
    let url = Memo::new(move |_| {
        let (c, r, p) = (customer.get(), range.get()?, property.get());
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
        Some(api::stats_url(&c, "/stats/topk/url/data", &params))
    });
    let urls = load(move || {
        let u = url.get();
        async move {
            match u {
                Some(u) => api::get_stats(&u, None).await.map(Some),
                None => Ok(None),
            }
        }
    });
    let purging = RwSignal::new(None::<(String, String)>);
    // Every row of the answer, not only the first day's (cleared when the answer changes).
    let all = RwSignal::new(false);
    Effect::new(move |_| {
        url.track();
        all.set(false);
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
                <CopyCurl path=move || url.get() />
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
                        // Followed per row (see the security events'): not a rebuild when the user's record arrives.
                        let writable = move || auth.can_write();
                        // The first day's worth is drawn at once; the rest (up to 20 a day for each day of the
                        // range) when asked for.
                        let total = r.rows.len();
                        let limit = if all.get() { total } else { FIRST_ROWS.min(total) };
                        let rows = r
                            .rows
                            .iter()
                            .take(limit)
                            .map(|row| {
                                let target = (property.text(row), url.text(row));
                                view! {
                                    <tr data-url=url.text(row)>
                                        <td>{date(&day.text(row))}</td>
                                        <td>{property.text(row)}</td>
                                        <td class="wrap"><code>{url.text(row)}</code></td>
                                        <td class="num">{short_number(hits.number(row))}</td>
                                        {move || {
                                            let target = target.clone();
                                            writable().then(|| {
                                                view! {
                                                    <td class="actions">
                                                        <button type="button" class="link purge-url" on:click=move |_| purging.set(Some(target.clone()))>
                                                            "Purge this URL"
                                                        </button>
                                                    </td>
                                                }
                                            })
                                        }}
                                    </tr>
                                }
                            })
                            .collect_view();
                        view! {
                            <div class="table-scroll">
                                <table class="data top-urls">
                                    <thead>
                                        <tr>
                                            <th scope="col">"Day (UTC)"</th>
                                            <th scope="col">"Property"</th>
                                            <th scope="col">"URL"</th>
                                            <th scope="col" class="num">"Hits"</th>
                                            {move || writable().then(|| view! { <th scope="col" class="actions">"Actions"</th> })}
                                        </tr>
                                    </thead>
                                    <tbody>{rows}</tbody>
                                </table>
                            </div>
                            {(limit < total)
                                .then(|| {
                                    view! {
                                        <button type="button" class="link show-all" on:click=move |_| all.set(true)>
                                            {format!("Show all {total} rows")}
                                        </button>
                                    }
                                })}
                        }
                            .into_any()
                    }
                }}
            </AsyncView>
        </div>
        {move || {
            purging
                .get()
                .map(|(property, path)| {
                    view! { <PurgeUrlDialog property path on_close=Callback::new(move |_| purging.set(None)) /> }
                })
        }}
    }
}
