//! The rule editor: what a rule watches (a statistics query — path, metric, filters, a ratio, dimensions,
//! window — or audit records), when it holds (threshold or anomaly), severity, channels, for-duration,
//! re-notification and labels; and its preview over the last 7 days, before it is saved.

use std::collections::BTreeMap;

use edge_api::{
    alerts::{AlertRule, AlertRuleInput, Comparison, Condition, Denominator, Direction, RulePreview, Severity, Watch},
    stats::{Family, SHAPING_CATEGORIES, WAF_CATEGORIES},
};
use leptos::{ev, prelude::*};

use super::preview::PreviewChart;
use crate::{
    api::{self, ApiError},
    components::{
        async_view::{act, load},
        dialog::Dialog,
        errors::{ApiErrorNotice, FieldError, FormError},
    },
    nav::{query_param, use_customer},
};

const WINDOWS: [u32; 9] = [5, 10, 15, 30, 60, 120, 360, 720, 1440];

/// The statistics paths a rule can watch, every top-K category spelt out, with what to call them.
fn paths() -> Vec<(String, String)> {
    let mut all = vec![
        ("/stats".to_string(), "Delivery statistics".to_string()),
        ("/stats/security/waf/trends".into(), "WAF trends".into()),
        ("/stats/security/request/trends".into(), "Request trends".into()),
        ("/stats/security/trafficshaping/trends".into(), "Traffic-shaping trends".into()),
        ("/stats/security/events".into(), "Security events (count)".into()),
    ];
    all.extend(WAF_CATEGORIES.iter().map(|(c, _)| (format!("/stats/security/waf/topk/{c}"), format!("WAF top {c}"))));
    all.extend(
        SHAPING_CATEGORIES
            .iter()
            .map(|(c, _)| (format!("/stats/security/trafficshaping/topk/{c}"), format!("Traffic-shaping top {c}"))),
    );
    all
}

/// The metrics of a watched path (security events are counted as `events`).
fn metrics_of(path: &str) -> Vec<&'static str> {
    let family = match path {
        "/stats" => Some(Family::Delivery),
        "/stats/security/events" => return vec!["events"],
        p if p.ends_with("/trends") => Some(Family::WafTrends),
        _ => None,
    };
    family.map(Family::metrics).unwrap_or_else(|| vec!["hits"])
}

fn labels_text(labels: &BTreeMap<String, String>) -> String {
    labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

fn labels_of(text: &str) -> BTreeMap<String, String> {
    text.split(',')
        .filter_map(|p| p.split_once('=').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

fn list_of(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

#[component]
pub(super) fn RuleEditor(rule: Option<AlertRule>, on_done: Callback<String>, on_close: Callback<()>) -> impl IntoView {
    let customer = use_customer();
    let id = rule.as_ref().map(|r| r.id.clone());
    let watch = rule.as_ref().and_then(|r| r.condition.watch().cloned());
    let text = |v: Option<String>| RwSignal::new(v.unwrap_or_default());
    let name = text(rule.as_ref().map(|r| r.name.clone()));
    let severity = RwSignal::new(rule.as_ref().map(|r| r.severity).unwrap_or(Severity::Warning));
    let kind = RwSignal::new(
        match rule.as_ref().map(|r| &r.condition) {
            Some(Condition::Anomaly { .. }) => "anomaly",
            Some(Condition::Audit { .. }) => "audit",
            _ => "threshold",
        }
        .to_string(),
    );
    // "Alert on this" brings the chart's query in the address.
    let from_address = |name: &str| query_param(name).filter(|v| !v.is_empty());
    let path = text(watch.as_ref().map(|w| w.path.clone()).or_else(|| from_address("path")).or(Some("/stats".into())));
    let metric =
        text(watch.as_ref().map(|w| w.metric.clone()).or_else(|| from_address("metric")).or(Some("hits".into())));
    let filters = text(watch.as_ref().and_then(|w| w.filters.clone()).or_else(|| from_address("filters")));
    let dimensions = text(watch.as_ref().map(|w| w.dimensions.join(",")).or_else(|| from_address("dimensions")));
    let ratio = RwSignal::new(watch.as_ref().is_some_and(|w| w.denominator.is_some()));
    let den_metric =
        text(watch.as_ref().and_then(|w| w.denominator.as_ref().map(|d| d.metric.clone())).or(Some("hits".into())));
    let den_filters = text(watch.as_ref().and_then(|w| w.denominator.as_ref().and_then(|d| d.filters.clone())));
    let window = RwSignal::new(watch.as_ref().map(|w| w.window_minutes).unwrap_or(5));
    let (op0, value0, z0, weeks0, volume0, dir0, ops0, ttype0, tid0) = match rule.as_ref().map(|r| &r.condition) {
        Some(Condition::Threshold { operator, value, .. }) => {
            (*operator, *value, 3.0, 4, 0.0, Direction::Up, String::new(), String::new(), String::new())
        }
        Some(Condition::Anomaly { z_score, weeks, min_volume, direction, .. }) => (
            Comparison::Above,
            0.0,
            *z_score,
            *weeks,
            *min_volume,
            *direction,
            String::new(),
            String::new(),
            String::new(),
        ),
        Some(Condition::Audit { operations, target_type, target_id }) => (
            Comparison::Above,
            0.0,
            3.0,
            4,
            0.0,
            Direction::Up,
            operations.join(", "),
            target_type.clone().unwrap_or_default(),
            target_id.clone().unwrap_or_default(),
        ),
        None => (Comparison::Above, 0.0, 3.0, 4, 100.0, Direction::Up, String::new(), String::new(), String::new()),
    };
    let operator = RwSignal::new(op0);
    let value = RwSignal::new(value0.to_string());
    let z_score = RwSignal::new(z0.to_string());
    let weeks = RwSignal::new(weeks0);
    let min_volume = RwSignal::new(volume0.to_string());
    let direction = RwSignal::new(dir0);
    let operations = RwSignal::new(ops0);
    let target_type = RwSignal::new(ttype0);
    let target_id = RwSignal::new(tid0);
    let for_minutes = RwSignal::new(rule.as_ref().map(|r| r.for_minutes.to_string()).unwrap_or_else(|| "0".into()));
    let renotify = RwSignal::new(rule.as_ref().map(|r| r.renotify_minutes.to_string()).unwrap_or_else(|| "0".into()));
    let labels = text(rule.as_ref().map(|r| labels_text(&r.labels)));
    let description = text(rule.as_ref().map(|r| r.description.clone()));
    let enabled = RwSignal::new(rule.as_ref().is_none_or(|r| r.enabled));
    let chosen = RwSignal::new(rule.as_ref().map(|r| r.channels.clone()).unwrap_or_default());
    let channels = load(move || {
        let c = customer.get();
        async move { api::alert_channels(&c).await }
    });

    // What the form says, as the API takes it (a number the user left unreadable goes as one out of bounds, which the server names).
    let input = move || -> AlertRuleInput {
        let number = |s: RwSignal<String>| s.get_untracked().trim().parse::<f64>().unwrap_or(f64::MAX);
        let minutes = |s: RwSignal<String>| s.get_untracked().trim().parse::<u32>().unwrap_or(u32::MAX);
        let watch = Watch {
            path: path.get_untracked(),
            dimensions: list_of(&dimensions.get_untracked()),
            metric: metric.get_untracked(),
            filters: Some(filters.get_untracked()).filter(|f| !f.trim().is_empty()),
            denominator: ratio.get_untracked().then(|| Denominator {
                metric: den_metric.get_untracked(),
                filters: Some(den_filters.get_untracked()).filter(|f| !f.trim().is_empty()),
            }),
            window_minutes: window.get_untracked(),
        };
        let condition = match kind.get_untracked().as_str() {
            "anomaly" => Condition::Anomaly {
                watch,
                z_score: number(z_score),
                weeks: weeks.get_untracked(),
                min_volume: number(min_volume),
                direction: direction.get_untracked(),
            },
            "audit" => Condition::Audit {
                operations: list_of(&operations.get_untracked()),
                target_type: Some(target_type.get_untracked()).filter(|t| !t.trim().is_empty()),
                target_id: Some(target_id.get_untracked()).filter(|t| !t.trim().is_empty()),
            },
            _ => Condition::Threshold { watch, operator: operator.get_untracked(), value: number(value) },
        };
        AlertRuleInput {
            name: name.get_untracked(),
            description: description.get_untracked(),
            enabled: enabled.get_untracked(),
            severity: severity.get_untracked(),
            condition,
            for_minutes: minutes(for_minutes),
            renotify_minutes: minutes(renotify),
            channels: chosen.get_untracked(),
            labels: labels_of(&labels.get_untracked()),
        }
    };

    let save = act(move |rule: &AlertRuleInput| {
        let (c, rule, id) = (customer.get_untracked(), rule.clone(), id.clone());
        async move {
            match id {
                Some(id) => api::update_alert_rule(&c, &id, &rule).await.map(|r| format!("{} was saved.", r.name)),
                None => api::create_alert_rule(&c, &rule).await.map(|r| format!("{} was created.", r.name)),
            }
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(message)) = save.value().get() {
            on_done.run(message);
        }
    });
    let error: Signal<Option<ApiError>> = Signal::derive(move || save.value().get().and_then(Result::err));
    let preview = act(move |rule: &AlertRuleInput| {
        let (c, rule) = (customer.get_untracked(), rule.clone());
        async move { api::preview_alert_rule(&c, &rule).await }
    });
    let preview_error: Signal<Option<ApiError>> = Signal::derive(move || preview.value().get().and_then(Result::err));
    let previewed: Signal<Option<RulePreview>> = Signal::derive(move || preview.value().get().and_then(Result::ok));

    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        save.dispatch(input());
    };
    let title = if rule.is_some() { "Edit alert rule" } else { "New alert rule" }.to_string();
    let stats = move || kind.get() != "audit";
    view! {
        <Dialog title on_close>
            <form class="form rule-editor" on:submit=submit novalidate>
                <FormError error fields=&["name", "condition", "channels", "labels", "for_minutes", "renotify_minutes", "description"] />
                <label>
                    "Name"
                    <input name="name" autocomplete="off" bind:value=name autofocus=true />
                    <FieldError error field="name" />
                </label>
                <div class="row">
                    <label>
                        "Severity"
                        <select name="severity" on:change=move |e| severity.set(Severity::parse(&event_target_value(&e)).unwrap_or(Severity::Warning))>
                            {Severity::ALL.map(|s| view! { <option value=s.as_str() selected={severity.get_untracked() == s}>{s.as_str()}</option> }).collect_view()}
                        </select>
                    </label>
                    <label>
                        "Watches"
                        <select name="kind" on:change=move |e| kind.set(event_target_value(&e))>
                            <option value="threshold" selected={kind.get_untracked() == "threshold"}>"A threshold on statistics"</option>
                            <option value="anomaly" selected={kind.get_untracked() == "anomaly"}>"An anomaly in statistics"</option>
                            <option value="audit" selected={kind.get_untracked() == "audit"}>"Audit records"</option>
                        </select>
                    </label>
                </div>
                {move || stats().then(|| view! {
                    <fieldset>
                        <legend>"Statistics query"</legend>
                        <label>
                            "Path"
                            <select name="path" on:change=move |e| { path.set(event_target_value(&e)); metric.set(metrics_of(&path.get_untracked())[0].to_string()); }>
                                {paths().into_iter().map(|(p, l)| { let v = p.clone(); view! { <option value=p selected={path.get_untracked() == v}>{l}</option> } }).collect_view()}
                            </select>
                        </label>
                        <div class="row">
                            <label>
                                "Metric"
                                <select name="metric" on:change=move |e| metric.set(event_target_value(&e))>
                                    {move || metrics_of(&path.get()).into_iter().map(|m| view! { <option value=m selected={metric.get_untracked() == m}>{m}</option> }).collect_view()}
                                </select>
                            </label>
                            <label>
                                "Window"
                                <select name="window" on:change=move |e| window.set(event_target_value(&e).parse().unwrap_or(5))>
                                    {WINDOWS.map(|w| view! { <option value=w.to_string() selected={window.get_untracked() == w}>{if w < 60 { format!("{w} minutes") } else { format!("{} h", w / 60) }}</option> }).collect_view()}
                                </select>
                            </label>
                        </div>
                        <label>
                            "Filters"
                            <input name="filters" autocomplete="off" placeholder="http_status_code==500,http_status_code==503" bind:value=filters />
                        </label>
                        <label>
                            "Group by dimensions (the worst group counts)"
                            <input name="dimensions" autocomplete="off" placeholder="country" bind:value=dimensions />
                        </label>
                        <label class="check">
                            <input type="checkbox" name="ratio" bind:checked=ratio />
                            "Divide by another metric (a ratio, e.g. 5xx hits / hits)"
                        </label>
                        {move || ratio.get().then(|| view! {
                            <div class="row">
                                <label>
                                    "Divided by"
                                    <select name="denominator" on:change=move |e| den_metric.set(event_target_value(&e))>
                                        {move || metrics_of(&path.get()).into_iter().map(|m| view! { <option value=m selected={den_metric.get_untracked() == m}>{m}</option> }).collect_view()}
                                    </select>
                                </label>
                                <label>
                                    "with filters"
                                    <input name="denominator_filters" autocomplete="off" placeholder="(every row)" bind:value=den_filters />
                                </label>
                            </div>
                        })}
                    </fieldset>
                })}
                {move || match kind.get().as_str() {
                    "threshold" => view! {
                        <div class="row">
                            <label>
                                "Fires when the value is"
                                <select name="operator" on:change=move |e| operator.set(Comparison::ALL.into_iter().find(|c| c.as_str() == event_target_value(&e)).unwrap_or(Comparison::Above))>
                                    {Comparison::ALL.map(|c| view! { <option value=c.as_str() selected={operator.get_untracked() == c}>{c.as_str()}</option> }).collect_view()}
                                </select>
                            </label>
                            <label>
                                "Threshold (a ratio as a fraction: 0.02 is 2 %)"
                                <input name="value" inputmode="decimal" bind:value=value />
                            </label>
                        </div>
                    }.into_any(),
                    "anomaly" => view! {
                        <div class="row">
                            <label>
                                "z-score"
                                <input name="z_score" inputmode="decimal" bind:value=z_score />
                            </label>
                            <label>
                                "Previous weeks"
                                <select name="weeks" on:change=move |e| weeks.set(event_target_value(&e).parse().unwrap_or(4))>
                                    {[1u32, 2, 3, 4].map(|w| view! { <option value=w.to_string() selected={weeks.get_untracked() == w}>{w}</option> }).collect_view()}
                                </select>
                            </label>
                            <label>
                                "Minimum volume"
                                <input name="min_volume" inputmode="decimal" bind:value=min_volume />
                            </label>
                            <label>
                                "Direction"
                                <select name="direction" on:change=move |e| direction.set(match event_target_value(&e).as_str() { "down" => Direction::Down, "both" => Direction::Both, _ => Direction::Up })>
                                    <option value="up" selected={direction.get_untracked() == Direction::Up}>"Above"</option>
                                    <option value="down" selected={direction.get_untracked() == Direction::Down}>"Below"</option>
                                    <option value="both" selected={direction.get_untracked() == Direction::Both}>"Either"</option>
                                </select>
                            </label>
                        </div>
                    }.into_any(),
                    _ => view! {
                        <label>
                            "Operations (comma-separated; a prefix ends in .*)"
                            <input name="operations" autocomplete="off" placeholder="property.config.*, cache.purge, login.lockout" bind:value=operations />
                        </label>
                        <div class="row">
                            <label>
                                "Target type (optional)"
                                <input name="target_type" autocomplete="off" placeholder="property" bind:value=target_type />
                            </label>
                            <label>
                                "Target id (optional)"
                                <input name="target_id" autocomplete="off" placeholder="www" bind:value=target_id />
                            </label>
                        </div>
                    }.into_any(),
                }}
                <FieldError error field="condition" />
                <div class="row">
                    <label>
                        "Pending for (minutes)"
                        <input name="for_minutes" inputmode="numeric" bind:value=for_minutes />
                        <FieldError error field="for_minutes" />
                    </label>
                    <label>
                        "Notify again every (minutes, 0: once)"
                        <input name="renotify_minutes" inputmode="numeric" bind:value=renotify />
                        <FieldError error field="renotify_minutes" />
                    </label>
                </div>
                <fieldset>
                    <legend>"Channels"</legend>
                    {move || match channels.get() {
                        Some(Ok(page)) if page.items.is_empty() => view! { <p class="muted small">"No channels yet: add one under Channels."</p> }.into_any(),
                        Some(Ok(page)) => page.items.into_iter().map(|c| {
                            let (id, id2) = (c.id.clone(), c.id.clone());
                            view! {
                                <label class="check">
                                    <input type="checkbox" name="channel" prop:checked=move || chosen.get().contains(&id)
                                        on:change=move |e| { let on = event_target_checked(&e); chosen.update(|l| { l.retain(|x| *x != id2); if on { l.push(id2.clone()); } }); } />
                                    {c.name.clone()} " " <span class="muted small">{c.kind.as_str()}</span>
                                </label>
                            }
                        }).collect_view().into_any(),
                        Some(Err(error)) => view! { <ApiErrorNotice error /> }.into_any(),
                        None => view! { <p class="muted small">"Loading channels…"</p> }.into_any(),
                    }}
                    <FieldError error field="channels" />
                </fieldset>
                <label>
                    "Labels (name=value, comma-separated)"
                    <input name="labels" autocomplete="off" placeholder="team=edge" bind:value=labels />
                    <FieldError error field="labels" />
                </label>
                <label>
                    "Description"
                    <textarea name="description" rows="2" bind:value=description></textarea>
                </label>
                <label class="check">
                    <input type="checkbox" name="enabled" bind:checked=enabled />
                    "Enabled"
                </label>
                <div class="preview">
                    <button type="button" class="secondary" on:click=move |_| { preview.dispatch(input()); } disabled=move || preview.pending().get()>
                        {move || if preview.pending().get() { "Previewing…" } else { "Preview the last 7 days" }}
                    </button>
                    {move || preview_error.get().map(|error| view! { <ApiErrorNotice error /> })}
                    {move || previewed.get().map(|p| view! { <PreviewChart preview=p /> })}
                </div>
                <div class="actions">
                    <button type="submit" class="primary" disabled=move || save.pending().get()>{move || if save.pending().get() { "Saving…" } else { "Save rule" }}</button>
                    <button type="button" class="secondary" on:click=move |_| on_close.run(())>"Cancel"</button>
                </div>
            </form>
        </Dialog>
    }
}
