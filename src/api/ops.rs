//! Properties, purge, network lists, tasks, the account and the audit log.

use edge_api::{
    Account, AccountUpdate, AddEntriesResult, AuditPage, EntryInput, Feature, NetworkList, NetworkListPage,
    NetworkListUpdate, NetworkListUsage, NewNetworkList, PurgeError, PurgeRequest, Task, TransactionStatus,
    TransactionSummary,
    config::{Change, ConfigDocument, ConfigVersion, NewProperty, PropertySummary, UpdatePropertyModel},
};
use gloo_net::http::{Request, Response};
use serde_json::Value;

use super::*;

fn url(customer: &str, path: &str) -> String {
    format!("{}{path}", base(customer))
}

// Properties

pub fn properties_url(customer: &str) -> String {
    url(customer, "/properties")
}

pub async fn list_properties(customer: &str) -> ApiResult<Vec<PropertySummary>> {
    get_json(&properties_url(customer)).await
}

pub async fn create_property(customer: &str, property: &NewProperty) -> ApiResult<ConfigDocument> {
    send_json(with_json(Request::post(&url(customer, "/properties")), property)?).await
}

pub fn config_url(customer: &str, name: &str) -> String {
    url(customer, &format!("/properties/{}/config", encode(name)))
}

pub async fn get_config(customer: &str, name: &str) -> ApiResult<ConfigDocument> {
    send_json(Request::get(&config_url(customer, name))).await
}

/// Saves a configuration edited from the version with `etag`. A 409 means someone else saved meanwhile.
pub async fn put_config(
    customer: &str,
    name: &str,
    etag: &str,
    config: &Value,
    comment: &str,
) -> ApiResult<ConfigDocument> {
    let body = UpdatePropertyModel { config: config.clone(), comment: comment.to_string() };
    send_json(with_json(Request::put(&config_url(customer, name)).header("If-Match", etag), &body)?).await
}

pub async fn config_versions(customer: &str, name: &str) -> ApiResult<Vec<ConfigVersion>> {
    send_json(Request::get(&format!("{}/versions", config_url(customer, name)))).await
}

pub async fn config_version(customer: &str, name: &str, version: u64) -> ApiResult<ConfigDocument> {
    send_json(Request::get(&format!("{}/versions/{version}", config_url(customer, name)))).await
}

pub async fn config_diff(customer: &str, name: &str, from: u64, to: u64) -> ApiResult<Vec<Change>> {
    send_json(Request::get(&format!("{}/diff?from={from}&to={to}", config_url(customer, name)))).await
}

// Purge

/// Turns a purge-style error body (`{code, description, details}`) into an [`ApiError`].
async fn purge_error(response: Response) -> ApiError {
    let status = response.status();
    match response.json::<PurgeError>().await {
        Ok(e) => ApiError {
            status,
            body: ErrorBody::new(format!("purge_{}", e.code), e.description)
                .with_details(e.details.into_iter().map(|d| d.message)),
        },
        Err(_) => ApiError { status, body: ErrorBody::new("http_error", format!("The server answered {status}.")) },
    }
}

async fn purge_json<T: serde::de::DeserializeOwned>(request: impl Into<Sendable>) -> ApiResult<T> {
    let _in_flight = super::InFlight::start();
    let response = send(request).await?;
    if (200..300).contains(&response.status()) {
        let status = response.status();
        return response.json::<T>().await.map_err(|e| ApiError::unreadable(status, e));
    }
    Err(purge_error(response).await)
}

/// Submits a purge. The API answers 303 to the transaction's status, which the browser follows: the answer is
/// that status.
pub async fn purge(customer: &str, request: &PurgeRequest) -> ApiResult<TransactionStatus> {
    match purge_once(customer, request).await {
        Purged::Done(t) => Ok(t),
        Purged::Later(_) => Err(ApiError {
            status: 429,
            body: ErrorBody::new("purge_429", "At most 2 purge requests per second: try again in a moment."),
        }),
        Purged::Failed(e) => Err(e),
    }
}

/// What one purge request came to.
pub enum Purged {
    Done(TransactionStatus),
    /// Refused for the rate limit (429): send it again after this many seconds (the answer's Retry-After).
    Later(u32),
    Failed(ApiError),
}

/// Submits a purge once, telling a refusal for the rate limit apart.
pub async fn purge_once(customer: &str, request: &PurgeRequest) -> Purged {
    let _in_flight = super::InFlight::start();
    let request = match with_json(Request::post(&url(customer, "/cache/purge")), request) {
        Ok(r) => r,
        Err(e) => return Purged::Failed(e),
    };
    let response = match send(request).await {
        Ok(r) => r,
        Err(e) => return Purged::Failed(e),
    };
    let status = response.status();
    if status == 429 {
        let wait = response.headers().get("retry-after").and_then(|v| v.trim().parse::<u32>().ok()).unwrap_or(1);
        return Purged::Later(wait.clamp(1, 60));
    }
    if (200..300).contains(&status) {
        return match response.json::<TransactionStatus>().await {
            Ok(t) => Purged::Done(t),
            Err(e) => Purged::Failed(ApiError::unreadable(status, e)),
        };
    }
    Purged::Failed(purge_error(response).await)
}

pub async fn transaction(customer: &str, id: i64) -> ApiResult<TransactionStatus> {
    purge_json(Request::get(&url(customer, &format!("/transactions/{id}")))).await
}

pub async fn recent_purges(customer: &str) -> ApiResult<Vec<TransactionSummary>> {
    purge_json(Request::get(&url(customer, "/transactions"))).await
}

// Network lists

pub fn lists_url(customer: &str, page: u64, count: u64, list_type: Option<&str>, deprecated: bool) -> String {
    let mut u = url(customer, &format!("/config/networklists?page={page}&count={count}&deprecated={deprecated}"));
    if let Some(t) = list_type {
        u.push_str(&format!("&type={t}"));
    }
    u
}

pub async fn list_lists(
    customer: &str,
    page: u64,
    count: u64,
    list_type: Option<&str>,
    deprecated: bool,
) -> ApiResult<NetworkListPage> {
    get_json(&lists_url(customer, page, count, list_type, deprecated)).await
}

fn list_url(customer: &str, id: &str) -> String {
    url(customer, &format!("/config/networklists/{}", encode(id)))
}

pub async fn get_list(customer: &str, id: &str) -> ApiResult<NetworkList> {
    send_json(Request::get(&format!("{}?includelist=false", list_url(customer, id)))).await
}

/// Every entry of a list (at most 50,000), for checking new entries against them.
pub async fn list_entries_all(customer: &str, id: &str) -> ApiResult<Vec<String>> {
    let list: NetworkList = send_json(Request::get(&list_url(customer, id))).await?;
    Ok(list.list.unwrap_or_default())
}

pub async fn create_list(customer: &str, list: &NewNetworkList) -> ApiResult<NetworkList> {
    send_json(with_json(Request::post(&url(customer, "/config/networklists")), list)?).await
}

pub async fn update_list(customer: &str, id: &str, update: &NetworkListUpdate) -> ApiResult<NetworkList> {
    send_json(with_json(Request::put(&list_url(customer, id)), update)?).await
}

/// Where a list is used: the properties and traffic-shaping rules that name it.
pub async fn list_usage(customer: &str, id: &str) -> ApiResult<NetworkListUsage> {
    send_json(Request::get(&format!("{}/usage", list_url(customer, id)))).await
}

pub async fn delete_list(customer: &str, id: &str) -> ApiResult<()> {
    send_empty(Request::delete(&list_url(customer, id))).await
}

pub fn entries_url(customer: &str, id: &str, page: u64, count: u64, search: &str) -> String {
    let mut u = format!("{}/entries?page={page}&count={count}", list_url(customer, id));
    if !search.trim().is_empty() {
        u.push_str(&format!("&q={}", encode(search.trim())));
    }
    u
}

pub async fn add_entries(customer: &str, id: &str, values: &[String]) -> ApiResult<AddEntriesResult> {
    let body: Vec<EntryInput> = values.iter().map(|v| EntryInput { entry: Some(v.clone()), value: None }).collect();
    send_json(with_json(Request::post(&format!("{}/entries", list_url(customer, id))), &body)?).await
}

pub async fn delete_entry(customer: &str, id: &str, entry_id: &str) -> ApiResult<Task> {
    send_json(Request::delete(&format!("{}/entries/{}", list_url(customer, id), encode(entry_id)))).await
}

pub async fn clear_entries(customer: &str, id: &str) -> ApiResult<Task> {
    send_json(Request::post(&format!("{}/entries/deletions", list_url(customer, id)))).await
}

// Tasks

pub fn tasks_url(customer: &str, page: u64, count: u64, status: &str, operation: &str) -> String {
    let mut u = url(customer, &format!("/tasks?page={page}&count={count}"));
    if !status.is_empty() {
        u.push_str(&format!("&status={}", encode(status)));
    }
    if !operation.is_empty() {
        u.push_str(&format!("&operation={}", encode(operation)));
    }
    u
}

pub async fn get_task(customer: &str, id: &str) -> ApiResult<Task> {
    send_json(Request::get(&url(customer, &format!("/tasks/{}", encode(id))))).await
}

// Account

pub async fn get_account(customer: &str) -> ApiResult<Account> {
    send_json(Request::get(&url(customer, "/account"))).await
}

pub async fn put_account(customer: &str, update: &AccountUpdate) -> ApiResult<Account> {
    send_json(with_json(Request::put(&url(customer, "/account")), update)?).await
}

pub async fn features(customer: &str) -> ApiResult<Vec<Feature>> {
    send_json(Request::get(&url(customer, "/features"))).await
}

// The audit log

/// The audit log's filters; empty ones are left out. `from` and `to` are API times.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub from: String,
    pub to: String,
    pub actor: String,
    pub operation: String,
    pub target: String,
}

pub async fn list_audit(customer: &str, filter: &AuditFilter, page: u64, count: u64) -> ApiResult<AuditPage> {
    let mut u = url(customer, &format!("/audit?page={page}&count={count}"));
    for (k, v) in [
        ("from", &filter.from),
        ("to", &filter.to),
        ("actor", &filter.actor),
        ("operation", &filter.operation),
        ("target", &filter.target),
    ] {
        if !v.is_empty() {
            u.push_str(&format!("&{k}={}", encode(v)));
        }
    }
    send_json(Request::get(&u)).await
}
