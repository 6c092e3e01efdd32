//! Where a network list is used: the properties and their traffic-shaping rules that match it, each linking to
//! the rule in the property's editor; shown on the list's page and in the confirmation of emptying or deleting it.

use edge_api::{NetworkListUsage, PropertyUse};
use leptos::prelude::*;

use crate::{
    api::{self, ApiResult},
    components::async_view::Load,
    nav::use_customer,
};

/// "3 traffic-shaping rules in 2 properties would match nothing.": what emptying or deleting the list does to them.
pub(super) fn consequence(usage: &NetworkListUsage) -> Option<String> {
    let rules: u64 = usage.properties.iter().map(|p| p.rule_count).sum();
    if rules == 0 {
        return None;
    }
    let properties = usage.properties.len();
    let more = if usage.has_more { " or more" } else { "" };
    Some(format!(
        "{rules}{more} traffic-shaping {} in {properties}{more} {} would match nothing.",
        if rules == 1 { "rule" } else { "rules" },
        if properties == 1 { "property" } else { "properties" },
    ))
}

/// A rule's action in words: "block", "rate limit", "warn".
fn action_words(action: &str) -> String {
    action.to_lowercase().replace('_', " ")
}

/// The rules of one property, each a link to its row in the editor.
fn property_uses(customer: &str, p: PropertyUse) -> impl IntoView {
    let name = api::encode(&p.property);
    let more = p.rule_count.saturating_sub(p.rules.len() as u64);
    view! {
        <li data-property=p.property.clone()>
            <a href=format!("/{customer}/properties?name={name}")>{p.property.clone()}</a>
            <span class="muted small">{format!(" · version {}", p.version)}</span>
            <ul>
                {p
                    .rules
                    .into_iter()
                    .map(|r| {
                        let href = format!("/{customer}/properties?name={name}&node={}", api::encode(&r.id));
                        let state = if r.enabled { String::new() } else { ", off".to_string() };
                        view! {
                            <li data-rule=r.id.clone()>
                                <a href=href>{if r.name.is_empty() { "(no name)".to_string() } else { r.name.clone() }}</a>
                                <span class="muted small">{format!(" ({}{state})", action_words(&r.action))}</span>
                            </li>
                        }
                    })
                    .collect_view()}
                {(more > 0).then(|| view! { <li class="muted small">{format!("and {more} more rules")}</li> })}
            </ul>
        </li>
    }
}

/// The card "Where it is used" of a list's page.
#[component]
pub(super) fn Usage(usage: Load<NetworkListUsage>) -> impl IntoView {
    let customer = use_customer();
    let body = move || -> Option<AnyView> {
        let answer: ApiResult<NetworkListUsage> = usage.get()?;
        Some(match answer {
            Ok(u) if u.properties.is_empty() => {
                view! { <p class="muted">"No traffic-shaping rule of any property uses this list."</p> }.into_any()
            }
            Ok(u) => {
                let c = customer.get_untracked();
                view! {
                    <ul class="usage">
                        {u.properties.into_iter().map(|p| property_uses(&c, p)).collect_view()}
                    </ul>
                    {u.has_more.then(|| view! { <p class="muted small">"More properties use it than are shown here (the first 100, by name)."</p> })}
                }
                .into_any()
            }
            Err(e) if e.is_cancelled() => view! { <p class="muted loading" role="status">"Looking for its rules…"</p> }.into_any(),
            // A role that may read lists but not configurations: there is nothing to show it.
            Err(e) if e.status == 403 => {
                view! { <p class="muted">"Your role may not read configurations, so where this list is used is not shown."</p> }.into_any()
            }
            Err(error) => view! { <crate::components::errors::ApiErrorNotice error /> }.into_any(),
        })
    };
    view! {
        <div class="card panel" id="list-usage">
            <h2>"Where it is used"</h2>
            {move || body().unwrap_or_else(|| view! { <p class="muted loading" role="status">"Looking for its rules…"</p> }.into_any())}
        </div>
    }
}
