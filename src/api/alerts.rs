//! Alerting: rules and their preview, channels (with their delivery log and "send test"), silences, events,
//! the firing count and the incident timeline.

use edge_api::alerts::{
    AlertChannel, AlertChannelInput, AlertChannelPage, AlertEventPage, AlertRule, AlertRuleInput, AlertRulePage,
    AlertSummary, Delivery, DeliveryPage, RulePreview, Silence, SilenceInput, SilencePage, Timeline,
};
use gloo_net::http::Request;

use super::*;

fn url(customer: &str, path: &str) -> String {
    format!("{}/alerts{path}", base(customer))
}

pub fn alert_rules_url(customer: &str) -> String {
    url(customer, "/rules?count=200")
}

pub async fn alert_rules(customer: &str) -> ApiResult<AlertRulePage> {
    get_json(&alert_rules_url(customer)).await
}

pub async fn create_alert_rule(customer: &str, rule: &AlertRuleInput) -> ApiResult<AlertRule> {
    send_json(with_json(Request::post(&url(customer, "/rules")), rule)?).await
}

pub async fn update_alert_rule(customer: &str, id: &str, rule: &AlertRuleInput) -> ApiResult<AlertRule> {
    send_json(with_json(Request::put(&url(customer, &format!("/rules/{}", encode(id)))), rule)?).await
}

pub async fn delete_alert_rule(customer: &str, id: &str) -> ApiResult<()> {
    send_empty(Request::delete(&url(customer, &format!("/rules/{}", encode(id))))).await
}

pub async fn preview_alert_rule(customer: &str, rule: &AlertRuleInput) -> ApiResult<RulePreview> {
    send_json(with_json(Request::post(&url(customer, "/rules/preview")), rule)?).await
}

pub async fn alert_summary(customer: &str) -> ApiResult<AlertSummary> {
    get_json(&url(customer, "/summary")).await
}

pub fn alert_events_url(customer: &str, page: u64, count: u64, rule: &str) -> String {
    let rule = if rule.is_empty() { String::new() } else { format!("&rule_id={}", encode(rule)) };
    url(customer, &format!("/events?page={page}&count={count}{rule}"))
}

pub async fn alert_events(url: &str) -> ApiResult<AlertEventPage> {
    get_json(url).await
}

pub async fn alert_channels(customer: &str) -> ApiResult<AlertChannelPage> {
    get_json(&url(customer, "/channels?count=100")).await
}

pub async fn create_alert_channel(customer: &str, channel: &AlertChannelInput) -> ApiResult<AlertChannel> {
    send_json(with_json(Request::post(&url(customer, "/channels")), channel)?).await
}

pub async fn update_alert_channel(customer: &str, id: &str, channel: &AlertChannelInput) -> ApiResult<AlertChannel> {
    send_json(with_json(Request::put(&url(customer, &format!("/channels/{}", encode(id)))), channel)?).await
}

pub async fn delete_alert_channel(customer: &str, id: &str) -> ApiResult<()> {
    send_empty(Request::delete(&url(customer, &format!("/channels/{}", encode(id))))).await
}

pub async fn test_alert_channel(customer: &str, id: &str) -> ApiResult<Delivery> {
    send_json(Request::post(&url(customer, &format!("/channels/{}/test", encode(id))))).await
}

pub async fn channel_deliveries(customer: &str, id: &str) -> ApiResult<DeliveryPage> {
    get_json(&url(customer, &format!("/channels/{}/deliveries?count=50", encode(id)))).await
}

pub async fn silences(customer: &str) -> ApiResult<SilencePage> {
    get_json(&url(customer, "/silences?count=200")).await
}

pub async fn create_silence(customer: &str, silence: &SilenceInput) -> ApiResult<Silence> {
    send_json(with_json(Request::post(&url(customer, "/silences")), silence)?).await
}

pub async fn delete_silence(customer: &str, id: &str) -> ApiResult<()> {
    send_empty(Request::delete(&url(customer, &format!("/silences/{}", encode(id))))).await
}

/// The markers of `[from, to)` (ISO 8601 with `Z`) for the incident timeline.
pub async fn timeline(customer: &str, from: &str, to: &str) -> ApiResult<Timeline> {
    get_json(&url(customer, &format!("/timeline?from={}&to={}", encode(from), encode(to)))).await
}

/// The address of a new rule prefilled with a chart's query: its statistics path (relative to the customer
/// base, as [`edge_api::alerts::WATCHABLE_PATHS`]), metric, filters and dimensions.
pub fn alert_on_this_url(customer: &str, path: &str, metric: &str, filters: &str, dimensions: &str) -> String {
    let e = super::encode;
    format!(
        "/{customer}/alerts?tab=rules&new=1&path={}&metric={}&filters={}&dimensions={}",
        e(path),
        e(metric),
        e(filters),
        e(dimensions)
    )
}

/// The watchable path of a statistics data address (`/{customer}/v1/stats/security/waf/trends/data?…` →
/// `/stats/security/waf/trends`), for "Alert on this".
pub fn watch_path(data_url: &str) -> Option<String> {
    let path = data_url.split('?').next()?;
    let at = path.find("/stats")?;
    Some(path[at..].trim_end_matches("/data").to_string())
}

/// Whether a rule may watch `path` (one of [`edge_api::alerts::WATCHABLE_PATHS`], a category in place of
/// `{category}`): the top URLs, for one, cannot be watched.
pub fn watchable(path: &str) -> bool {
    edge_api::alerts::WATCHABLE_PATHS.iter().any(|w| match w.split_once("{category}") {
        Some((head, tail)) => path
            .strip_prefix(head)
            .and_then(|rest| rest.strip_suffix(tail))
            .is_some_and(|c| !c.is_empty() && !c.contains('/')),
        None => path == *w,
    })
}
