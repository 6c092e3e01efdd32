//! Security: request, WAF and traffic-shaping trends, the top values of each WAF and traffic-shaping
//! category, and the security events, newest first, with filters and paging.

use edge_api::stats::{EVENT_DIMENSIONS, Granularity, SHAPING_CATEGORIES, StatsResponse, WAF_CATEGORIES, format_time};
use leptos::{ev, prelude::*};

use leptos_router::{
    NavigateOptions,
    hooks::{use_navigate, use_query_map},
};

use crate::{
    api::{self, Column},
    components::{
        async_view::{AsyncView, load},
        chart::{BarChart, TimeChart, short_number},
        pager::Pager,
        range::{Range, RangePicker, allowed_granularities, now_ms, resolve},
    },
    pages::{
        stats::{bars, series_of},
        use_customer,
    },
};

const EVENTS_PER_PAGE: u64 = 25;
const EVENT_COLUMNS: [&str; 7] =
    ["client_ip", "client_country_code", "event_action", "rule_id", "event_severity", "domain", "request_path"];

/// The span's natural granularity, or the finest one still kept for the whole span.
fn granularity_for(r: Range) -> Granularity {
    let natural = if r.span() <= 86_400_000 {
        Granularity::FiveMinute
    } else if r.span() <= 8 * 86_400_000 {
        Granularity::Hour
    } else {
        Granularity::Day
    };
    let allowed = allowed_granularities(r, now_ms());
    if allowed.contains(&natural) { natural } else { allowed.first().copied().unwrap_or(Granularity::Day) }
}

fn trend_params(r: Range, dim: &str) -> Vec<(&'static str, String)> {
    vec![
        ("starttime", format_time(r.start)),
        ("endtime", format_time(r.end)),
        ("granularity", granularity_for(r).as_str().into()),
        ("dimensions", dim.into()),
        ("metrics", "hits".into()),
        ("limit", "100000".into()),
    ]
}

#[component]
pub fn Security() -> impl IntoView {
    let query = use_query_map();
    let navigate = use_navigate();
    let customer = use_customer();
    let get = move |k: &str| query.read().get(k);
    let preset = Memo::new(move |_| get("range").unwrap_or_else(|| "24h".into()));
    let range = Memo::new(move |_| {
        resolve(&preset.get(), &get("start").unwrap_or_default(), &get("end").unwrap_or_default(), now_ms())
    });
    let set_param = Callback::new(move |pairs: Vec<(&'static str, String)>| {
        let q = query.get_untracked();
        let mut params: Vec<(String, String)> = ["range", "start", "end", "waf", "ts", "filters", "page"]
            .iter()
            .filter_map(|k| q.get(k).map(|v| (k.to_string(), v)))
            .collect();
        for (k, v) in pairs {
            params.retain(|(x, _)| x != k);
            if !v.is_empty() {
                params.push((k.to_string(), v));
            }
        }
        let qs: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", api::encode(v))).collect();
        navigate(&format!("?{}", qs.join("&")), NavigateOptions { replace: true, scroll: false, ..Default::default() });
    });
    let set_range = Callback::new(move |(p, s, e): (String, String, String)| {
        set_param.run(vec![("range", p), ("start", s), ("end", e), ("page", String::new())])
    });
    let waf_category = Memo::new(move |_| get("waf").unwrap_or_else(|| "ruleid".into()));
    let ts_category = Memo::new(move |_| get("ts").unwrap_or_else(|| "country".into()));
    let filters = Memo::new(move |_| get("filters").unwrap_or_default());
    let page = Memo::new(move |_| get("page").and_then(|p| p.parse::<u64>().ok()).unwrap_or(0));

    let trend = move |path: &'static str, dim: &'static str| {
        load(move || {
            let (c, r) = (customer.get(), range.get());
            async move {
                match r {
                    Some(r) => api::stats(&c, path, &trend_params(r, dim)).await.map(Some),
                    None => Ok(None),
                }
            }
        })
    };
    let requests = trend("/stats/security/request/trends/data", "waf_action");
    let waf = trend("/stats/security/waf/trends/data", "waf_action");
    let shaping = trend("/stats/security/trafficshaping/trends/data", "event_action");
    let topk = move |family: &'static str, category: Memo<String>| {
        load(move || {
            let (c, r, cat) = (customer.get(), range.get(), category.get());
            async move {
                let Some(r) = r else { return Ok(None) };
                let params =
                    [("starttime", format_time(r.start)), ("endtime", format_time(r.end)), ("limit", "10".into())];
                api::stats(&c, &format!("/stats/security/{family}/topk/{cat}/data"), &params).await.map(Some)
            }
        })
    };
    let waf_top = topk("waf", waf_category);
    let ts_top = topk("trafficshaping", ts_category);
    let events = load(move || {
        let (c, r, f, p) = (customer.get(), range.get(), filters.get(), page.get());
        async move {
            let Some(r) = r else { return Ok(None) };
            let params = [
                ("starttime", format_time(r.start)),
                ("endtime", format_time(r.end)),
                ("dimensions", EVENT_COLUMNS.join(",")),
                ("filters", f),
                ("sortby", "-event_timestamp_ms".into()),
                ("start", (p * EVENTS_PER_PAGE).to_string()),
                ("limit", EVENTS_PER_PAGE.to_string()),
            ];
            api::stats(&c, "/stats/security/events/data", &params).await.map(Some)
        }
    });

    let filter_text = RwSignal::new(String::new());
    Effect::new(move |_| filter_text.set(filters.get()));
    let apply_filter = move |e: ev::SubmitEvent| {
        e.prevent_default();
        set_param.run(vec![("filters", filter_text.get_untracked()), ("page", String::new())]);
    };

    view! {
        <section class="page security">
            <h1>"Security"</h1>
            <div class="card panel wide controls">
                <RangePicker preset=Signal::derive(move || preset.get()) range=Signal::derive(move || range.get()) on_change=set_range />
                <p class="hint">"Raw events are kept for the previous three days and today; trends and top lists for longer."</p>
            </div>
            <div class="grid-2">
                <TrendCard title="Requests by WAF action" id="request-trends" data=requests range />
                <TrendCard title="WAF events" id="waf-trends" data=waf range />
                <TrendCard title="Traffic-shaping events" id="shaping-trends" data=shaping range />
                <div class="card panel">
                    <div class="toolbar">
                        <h2>"Top WAF"</h2>
                        <span class="spacer"></span>
                        <select aria-label="WAF category" prop:value=move || waf_category.get() on:change=move |e| set_param.run(vec![("waf", event_target_value(&e))])>
                            {WAF_CATEGORIES.iter().map(|(c, _)| view! { <option value=*c>{*c}</option> }).collect_view()}
                        </select>
                    </div>
                    <TopBars data=waf_top id="waf-top" label=Signal::derive(move || format!("Top WAF by {}", waf_category.get())) />
                </div>
                <div class="card panel">
                    <div class="toolbar">
                        <h2>"Top traffic shaping"</h2>
                        <span class="spacer"></span>
                        <select aria-label="Traffic-shaping category" prop:value=move || ts_category.get() on:change=move |e| set_param.run(vec![("ts", event_target_value(&e))])>
                            {SHAPING_CATEGORIES.iter().map(|(c, _)| view! { <option value=*c>{*c}</option> }).collect_view()}
                        </select>
                    </div>
                    <TopBars data=ts_top id="ts-top" label=Signal::derive(move || format!("Top traffic shaping by {}", ts_category.get())) />
                </div>
            </div>
            <div class="card panel wide" id="events">
                <h2>"Events"</h2>
                <form class="search" on:submit=apply_filter>
                    <input
                        name="event-filters"
                        placeholder="e.g. client_country_code==CN;event_action==BLOCK"
                        aria-label="Event filters"
                        bind:value=filter_text
                    />
                    <button type="submit">"Filter"</button>
                </form>
                <p class="hint">{format!("Filter on: {}. Join with ; (all) or , (any).", EVENT_DIMENSIONS[1..].join(", "))}</p>
                <AsyncView resource=events loading="Loading events…" let:answer>
                    {match answer {
                        None => ().into_any(),
                        Some(r) if r.rows.is_empty() => view! { <div class="empty">"No events match."</div> }.into_any(),
                        Some(r) => {
                            let columns: Vec<(String, Column)> =
                                EVENT_COLUMNS.iter().map(|c| (c.replace('_', " "), Column::of(&r, c))).collect();
                            let head = columns.iter().map(|(name, _)| view! { <th scope="col">{name.clone()}</th> }).collect_view();
                            let rows = r
                                .rows
                                .iter()
                                .map(|row| {
                                    let cells = columns.iter().map(|(_, c)| view! { <td>{c.text(row)}</td> }).collect_view();
                                    view! { <tr>{cells}</tr> }
                                })
                                .collect_view();
                            let p = page.get_untracked();
                            view! {
                                <div class="table-scroll">
                                    <table class="data events">
                                        <thead>
                                            <tr>{head}</tr>
                                        </thead>
                                        <tbody>{rows}</tbody>
                                    </table>
                                </div>
                                <Pager
                                    page=p + 1
                                    per_page=EVENTS_PER_PAGE
                                    shown=r.rows.len() as u64
                                    total=r.total_results
                                    on_page=Callback::new(move |n: u64| set_param.run(vec![("page", n.saturating_sub(1).to_string())]))
                                />
                            }
                                .into_any()
                        }
                    }}
                </AsyncView>
            </div>
        </section>
    }
}

#[component]
fn TrendCard(
    title: &'static str,
    id: &'static str,
    data: LocalResource<api::ApiResult<Option<StatsResponse>>>,
    range: Memo<Option<Range>>,
) -> impl IntoView {
    view! {
        <div class="card panel" id=id>
            <h2>{title}</h2>
            <AsyncView resource=data let:answer>
                {match (answer, range.get_untracked()) {
                    (Some(r), Some(range)) => {
                        let series = series_of(&r, "hits");
                        let total: f64 = series.iter().flat_map(|s| s.points.iter().map(|(_, v)| v)).sum();
                        view! {
                            <TimeChart label=title.to_string() series start=range.start end=range.end stacked=true width=560 height=220 />
                            <p class="muted small">{format!("Total {}", short_number(total))}</p>
                        }
                            .into_any()
                    }
                    _ => ().into_any(),
                }}
            </AsyncView>
        </div>
    }
}

#[component]
fn TopBars(
    data: LocalResource<api::ApiResult<Option<StatsResponse>>>,
    id: &'static str,
    #[prop(into)] label: Signal<String>,
) -> impl IntoView {
    view! {
        <AsyncView resource=data let:answer>
            {match answer {
                Some(r) if r.rows.is_empty() => view! { <div class="empty">"Nothing in this range."</div> }.into_any(),
                Some(r) => view! { <BarChart label=label.get_untracked() bars=bars(&r, 10) id /> }.into_any(),
                None => ().into_any(),
            }}
        </AsyncView>
    }
}
