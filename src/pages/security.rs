//! Security: request, WAF and traffic-shaping trends, the top values of each WAF and traffic-shaping
//! category, and the security events, newest first, with the filter builder and paging. From analytics to
//! action: a legend entry, a top value or an event's value narrows the events to it; a client IP or country
//! (of a top list or an event) goes into a network list.

use edge_api::stats::{Granularity, SHAPING_CATEGORIES, StatsResponse, WAF_CATEGORIES, format_time};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::{
    api::{self, Column},
    components::{
        add_to_list::AddToListDialog,
        answers::{bars, series_over},
        async_view::{AsyncView, Later, Load, load},
        chart::{BarList, Marker, TimeChart, grouped},
        curl::CopyCurl,
        filters::{FilterBuilder, with_condition},
        labels::{category_name, dimension_name, is_identifier},
        pager::Pager,
        range::{Range, RangePicker, allowed_granularities, now_ms, resolve},
        time::datetime,
        timeline,
    },
    nav::{use_customer, use_query_state},
    session::Auth,
};

const EVENTS_PER_PAGE: u64 = 25;
const EVENT_COLUMNS: [&str; 8] = [
    "event_timestamp_ms",
    "client_ip",
    "client_country_code",
    "event_action",
    "rule_id",
    "event_severity",
    "domain",
    "request_path",
];
/// What events may be filtered on (the customer is implied, the time is the range).
const EVENT_FILTERS: [&str; 14] = [
    "client_ip",
    "client_country_code",
    "event_action",
    "waf_action",
    "rule_id",
    "event_severity",
    "event_type",
    "domain",
    "property",
    "request_path",
    "client_browser",
    "client_asn",
    "client_connection_remote_ip",
    "source",
];

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

/// The list type an event dimension's values go into, if any.
fn list_type(dim: &str) -> Option<&'static str> {
    match dim {
        "client_ip" => Some("IP"),
        "client_country_code" => Some("GEO"),
        _ => None,
    }
}

/// A read's address as a memo, and the read.
fn read(url: Memo<Option<String>>) -> Load<Option<StatsResponse>> {
    load(move || {
        let u = url.get();
        async move {
            match u {
                Some(u) => api::get_stats(&u, None).await.map(Some),
                None => Ok(None),
            }
        }
    })
}

#[component]
pub fn Security() -> impl IntoView {
    let q = use_query_state();
    let customer = use_customer();
    let auth = Auth::get();
    let preset = Memo::new(move |_| Some(q.get("range")).filter(|p| !p.is_empty()).unwrap_or_else(|| "24h".into()));
    let range = Memo::new(move |_| resolve(&preset.get(), &q.get("start"), &q.get("end"), now_ms()));
    let set_range = Callback::new(move |(p, s, e): (String, String, String)| {
        q.set(&[("range", p), ("start", s), ("end", e), ("page", String::new())])
    });
    let waf_category =
        Memo::new(move |_| Some(q.get("waf")).filter(|c| !c.is_empty()).unwrap_or_else(|| "ruleid".into()));
    let ts_category =
        Memo::new(move |_| Some(q.get("ts")).filter(|c| !c.is_empty()).unwrap_or_else(|| "country".into()));
    let filters = Memo::new(move |_| q.get("filters"));
    let page = Memo::new(move |_| q.get("page").parse::<u64>().unwrap_or(0));
    let add_filter = Callback::new(move |(dim, value): (String, String)| {
        let f = with_condition(&filters.get_untracked(), &EVENT_FILTERS, &dim, &value);
        q.set(&[("filters", f), ("page", String::new())]);
    });
    // A value to put into a network list: (list type, value).
    let adding = RwSignal::new(None::<Vec<(&'static str, String)>>);

    let url = move |path: String, params: Vec<(&'static str, String)>| api::stats_url(&customer.get(), &path, &params);
    let trend = move |path: &'static str, dim: &'static str| {
        Memo::new(move |_| range.get().map(|r| url(path.into(), trend_params(r, dim))))
    };
    let requests_url = trend("/stats/security/request/trends/data", "waf_action");
    let waf_url = trend("/stats/security/waf/trends/data", "waf_action");
    let shaping_url = trend("/stats/security/trafficshaping/trends/data", "event_action");
    let topk = move |family: &'static str, category: Memo<String>| {
        Memo::new(move |_| {
            let r = range.get()?;
            let params =
                vec![("starttime", format_time(r.start)), ("endtime", format_time(r.end)), ("limit", "10".into())];
            Some(url(format!("/stats/security/{family}/topk/{}/data", category.get()), params))
        })
    };
    let waf_top_url = topk("waf", waf_category);
    let ts_top_url = topk("trafficshaping", ts_category);
    let events_url = Memo::new(move |_| {
        let r = range.get()?;
        let params = vec![
            ("starttime", format_time(r.start)),
            ("endtime", format_time(r.end)),
            ("dimensions", EVENT_COLUMNS[1..].join(",")),
            ("filters", filters.get()),
            ("sortby", "-event_timestamp_ms".into()),
            ("start", (page.get() * EVENTS_PER_PAGE).to_string()),
            ("limit", EVENTS_PER_PAGE.to_string()),
        ];
        Some(url("/stats/security/events/data".into(), params))
    });
    let events = read(events_url);
    let show_events = Callback::new(move |(dim, value): (String, String)| {
        add_filter.run((dim, value));
        if let Some(e) = document().get_element_by_id("events") {
            e.scroll_into_view();
        }
    });
    let writable = move || auth.can_write();
    let markers = timeline::markers(customer, range.into());

    view! {
        <section class="page security">
            <h1>"Security"</h1>
            <div class="card panel wide controls">
                <RangePicker preset=Signal::derive(move || preset.get()) range=Signal::derive(move || range.get()) on_change=set_range />
                <p class="hint">"Raw events are kept for the previous three days and today; trends and top lists for longer."</p>
            </div>
            <div class="grid-2">
                <Later><TrendCard title="Requests by WAF action" id="request-trends" url=requests_url range dim="waf_action" on_filter=show_events markers /></Later>
                <Later><TrendCard title="WAF events" id="waf-trends" url=waf_url range dim="waf_action" on_filter=show_events markers /></Later>
                <Later><TrendCard title="Traffic-shaping events" id="shaping-trends" url=shaping_url range dim="event_action" on_filter=show_events markers /></Later>
                <Later>
                <div class="card panel">
                    <div class="toolbar">
                        <h2>"Top WAF"</h2>
                        <span class="spacer"></span>
                        <select aria-label="WAF category" prop:value=move || waf_category.get() on:change=move |e| q.set(&[("waf", event_target_value(&e))])>
                            {WAF_CATEGORIES.iter().map(|(c, _)| view! { <option value=*c>{category_name(c)}</option> }).collect_view()}
                        </select>
                        <CopyCurl path=move || waf_top_url.get() />
                    </div>
                    <TopBars url=waf_top_url id="waf-top" category=waf_category categories=&WAF_CATEGORIES show_events adding writable=Signal::derive(writable) />
                </div>
                </Later>
                <Later>
                <div class="card panel">
                    <div class="toolbar">
                        <h2>"Top traffic shaping"</h2>
                        <span class="spacer"></span>
                        <select aria-label="Traffic-shaping category" prop:value=move || ts_category.get() on:change=move |e| q.set(&[("ts", event_target_value(&e))])>
                            {SHAPING_CATEGORIES.iter().map(|(c, _)| view! { <option value=*c>{category_name(c)}</option> }).collect_view()}
                        </select>
                        <CopyCurl path=move || ts_top_url.get() />
                    </div>
                    <TopBars url=ts_top_url id="ts-top" category=ts_category categories=&SHAPING_CATEGORIES show_events adding writable=Signal::derive(writable) />
                </div>
                </Later>
            </div>
            <Later>
                <div class="card panel wide" id="events">
                <div class="toolbar">
                    <h2>"Events"</h2>
                    <span class="spacer"></span>
                    <CopyCurl path=move || events_url.get() />
                </div>
                <FilterBuilder
                    filters=Signal::derive(move || filters.get())
                    dims=&EVENT_FILTERS
                    on_change=Callback::new(move |f: String| q.set(&[("filters", f), ("page", String::new())]))
                />
                <AsyncView resource=events loading="Loading events…" let:answer>
                    {match answer {
                        None => ().into_any(),
                        Some(r) if r.rows.is_empty() => view! { <div class="empty">"No events match."</div> }.into_any(),
                        Some(r) => view! { <EventTable r page=page.get_untracked() add_filter adding writable=Signal::derive(writable) on_page=Callback::new(move |n: u64| q.set(&[("page", n.saturating_sub(1).to_string())])) /> }.into_any(),
                    }}
                </AsyncView>
            </div>
                </Later>
            {move || {
                adding
                    .get()
                    .map(|choices| view! { <AddToListDialog choices on_close=Callback::new(move |_| adding.set(None)) /> })
            }}
        </section>
    }
}

#[component]
fn EventTable(
    r: StatsResponse,
    page: u64,
    add_filter: Callback<(String, String)>,
    adding: RwSignal<Option<Vec<(&'static str, String)>>>,
    /// Whether the user may add to lists: followed per row, so the table is not drawn again when the user's
    /// record arrives after the events.
    writable: Signal<bool>,
    on_page: Callback<u64>,
) -> impl IntoView {
    let columns: Vec<(&'static str, Column)> = EVENT_COLUMNS.iter().map(|c| (*c, Column::of(&r, c))).collect();
    let head = columns
        .iter()
        .map(|(name, _)| {
            let title = dimension_name(name);
            view! { <th scope="col">{title}</th> }
        })
        .collect_view();
    let (ip, country) = (Column::of(&r, "client_ip"), Column::of(&r, "client_country_code"));
    let rows = r
        .rows
        .iter()
        .map(|row| {
            let cells = columns
                .iter()
                .map(|(name, c)| {
                    let value = c.text(row);
                    if *name == "event_timestamp_ms" {
                        return view! { <td class="nowrap" title=format!("{value} UTC")>{datetime(&value)}</td> }.into_any();
                    }
                    let (dim, v) = (name.to_string(), value.clone());
                    let id = is_identifier(name);
                    let title = format!("{value} — show only events with this value");
                    view! {
                        <td class:ident=id class:wrap=!id>
                            <button type="button" class="link cell-filter" title=title on:click=move |_| add_filter.run((dim.clone(), v.clone()))>
                                {value}
                            </button>
                        </td>
                    }
                    .into_any()
                })
                .collect_view();
            let choices: Vec<(&'static str, String)> = [("IP", ip.text(row)), ("GEO", country.text(row))]
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .collect();
            let action = move || {
                let choices = choices.clone();
                (writable.get() && !choices.is_empty()).then(|| {
                    view! {
                        <td class="actions">
                            <button type="button" class="link add-to-list" on:click=move |_| adding.set(Some(choices.clone()))>
                                "Add to list…"
                            </button>
                        </td>
                    }
                })
            };
            view! { <tr data-ip=ip.text(row)>{cells}{action}</tr> }
        })
        .collect_view();
    view! {
        <div class="table-scroll">
            <table class="data events">
                <thead>
                    <tr>
                        {head}
                        {move || writable.get().then(|| view! { <th scope="col" class="actions">"Actions"</th> })}
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <Pager page=page + 1 per_page=EVENTS_PER_PAGE shown=r.rows.len() as u64 total=r.total_results on_page />
    }
}

#[component]
fn TrendCard(
    title: &'static str,
    id: &'static str,
    url: Memo<Option<String>>,
    range: Memo<Option<Range>>,
    dim: &'static str,
    on_filter: Callback<(String, String)>,
    markers: Memo<Vec<Marker>>,
) -> impl IntoView {
    let data = read(url);
    let customer = crate::nav::use_customer();
    // "Alert on this": a new rule on this chart's query, in the alert rule editor.
    let alert = move || {
        url.get()
            .and_then(|u| api::watch_path(&u))
            .filter(|p| api::watchable(p))
            .map(|p| api::alert_on_this_url(&customer.get(), &p, "hits", "", ""))
    };
    view! {
        <div class="card panel" id=id>
            <div class="toolbar">
                <h2>{title}</h2>
                <span class="spacer"></span>
                {move || alert().map(|href| view! { <a class="button secondary small" href=href>"Alert on this"</a> })}
                <CopyCurl path=move || url.get() />
            </div>
            <AsyncView resource=data let:answer>
                {match (answer, range.get_untracked()) {
                    (Some(r), Some(range)) => {
                        let step = granularity_for(range).millis();
                        let (series, partial) = series_over(&r, "hits", range.start, range.end, step, now_ms());
                        let total: f64 = series.iter().flat_map(|s| s.points.iter().map(|(_, v)| v)).sum();
                        let y_title = format!("Requests {}", match granularity_for(range) {
                            Granularity::FiveMinute => "per 5 minutes",
                            Granularity::Hour => "per hour",
                            Granularity::Day => "per day",
                        });
                        view! {
                            <TimeChart
                                label=title.to_string()
                                series
                                start=range.start
                                end=range.end
                                stacked=true
                                y_title
                                height=240
                                partial=partial
                                on_filter=Callback::new(move |v: String| on_filter.run((dim.to_string(), v)))
                                markers
                            />
                            <p class="muted small">{format!("Total {}", grouped(total as i64))}</p>
                        }
                            .into_any()
                    }
                    _ => ().into_any(),
                }}
            </AsyncView>
        </div>
    }
}

/// A top-K list: picking a value offers its events and, for a client IP or country, a network list.
#[component]
fn TopBars(
    url: Memo<Option<String>>,
    id: &'static str,
    category: Memo<String>,
    categories: &'static [(&'static str, &'static str)],
    show_events: Callback<(String, String)>,
    adding: RwSignal<Option<Vec<(&'static str, String)>>>,
    writable: Signal<bool>,
) -> impl IntoView {
    let data = read(url);
    let picked = RwSignal::new(None::<String>);
    let dim = Memo::new(move |_| {
        let c = category.get();
        categories.iter().find(|(x, _)| *x == c).map(|(_, d)| *d).unwrap_or("client_ip")
    });
    Effect::new(move |_| {
        category.track();
        picked.set(None);
    });
    // The panel opens where the user is looking: below the bars it may be out of view (a click that seemed to
    // do nothing), so it takes the focus, which scrolls it into view when it is not; closing it gives the focus
    // back to the bar.
    let panel = NodeRef::<leptos::html::Div>::new();
    Effect::new(move |_| {
        if let Some(el) = panel.get() {
            let _ = el.focus();
        }
    });
    let close = move || {
        let value = picked.get_untracked();
        picked.set(None);
        let bar = value.and_then(|v| {
            let items = document().query_selector_all(&format!("#{id} li[data-value] button")).ok()?;
            (0..items.length())
                .filter_map(|i| items.item(i)?.dyn_into::<web_sys::HtmlElement>().ok())
                .find(|b| b.parent_element().and_then(|li| li.get_attribute("data-value")).as_deref() == Some(&v))
        });
        if let Some(b) = bar {
            let _ = b.focus();
        }
    };
    view! {
        <AsyncView resource=data let:answer>
            {match answer {
                Some(r) if r.rows.is_empty() => view! { <div class="empty">"Nothing in this range."</div> }.into_any(),
                Some(r) => {
                    view! {
                        <BarList
                            label=format!("Top {} by requests", category_name(&category.get_untracked()).to_lowercase())
                            dim=dim.get_untracked()
                            bars=bars(&r, 10)
                            id
                            on_pick=Callback::new(move |v: String| picked.set(Some(v)))
                            pick_label="Act on"
                        />
                    }
                        .into_any()
                }
                None => ().into_any(),
            }}
        </AsyncView>
        {move || {
            picked
                .get()
                .map(|value| {
                    let d = dim.get();
                    let kind = list_type(d);
                    let (a, b) = (value.clone(), value.clone());
                    view! {
                        <div
                            class="picked"
                            role="group"
                            aria-label=format!("{} {value}", dimension_name(d))
                            node_ref=panel
                            tabindex="-1"
                            on:keydown=move |e: leptos::ev::KeyboardEvent| {
                                if e.key() == "Escape" {
                                    close();
                                }
                            }
                        >
                            <span>
                                <code>{value.clone()}</code>
                                {format!(" ({})", dimension_name(d))}
                            </span>
                            <button type="button" class="show-events" on:click=move |_| show_events.run((d.to_string(), a.clone()))>
                                "Show events"
                            </button>
                            {kind
                                .filter(|_| writable.get())
                                .map(|k| {
                                    view! {
                                        <button type="button" class="add-to-list" on:click=move |_| adding.set(Some(vec![(k, b.clone())]))>
                                            "Add to network list…"
                                        </button>
                                    }
                                })}
                            <button type="button" class="icon" aria-label="Close" on:click=move |_| close()>"×"</button>
                        </div>
                    }
                })
        }}
    }
}
