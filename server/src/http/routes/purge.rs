//! Cache purge and its transactions. These keep the API's own bodies: `{code, description, ...}`, with the
//! statuses the API has always used (303 on submission, 406 without a JSON content type, authentication
//! failures reported as code 403).

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::{
    PURGE_ACTIONS, PurgeError, PurgeRequest, PurgeResponse, PurgeResponseBody, TASK_PURGE_SAMPLE, TransactionResponse,
    TransactionStatus, TransactionSummary, audit::op, paths, perm, uri_problems,
};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    domain::{
        auth::Caller,
        fleet,
        tasks::{PURGE, TaskTarget, new_task},
    },
    http::{caller::Allowed, error::AppError},
    state::AppState,
    store::{AuditEvent, PurgeRecord, Target, TaskRecord},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(purge)).routes(routes!(transaction)).routes(routes!(recent))
}

/// A purge-style error answer.
fn fail(status: StatusCode, code: u16, description: impl Into<String>, details: Vec<String>) -> Response {
    let body = PurgeError { code, description: description.into(), details: edge_api::error::capped_details(details) };
    (status, axum::Json(body)).into_response()
}

/// An error of the authentication or permission check, as a purge-style answer: authentication problems carry
/// code 403, as the API documents; `auth_status` is the HTTP status to use for them.
fn access_failure(e: AppError, auth_status: StatusCode) -> Response {
    let (status, body) = e.status_and_body();
    match status {
        StatusCode::UNAUTHORIZED => fail(auth_status, 403, body.message, vec![]),
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
            let mut r = fail(status, status.as_u16(), body.message, vec![]);
            if let Some(secs) = e.retry_after_secs() {
                r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            r
        }
        StatusCode::NOT_FOUND => fail(auth_status, 403, "Authentication failed for this customer.", vec![]),
        s if s.is_server_error() => {
            fail(StatusCode::SERVICE_UNAVAILABLE, 503, "The service failed; try again.", vec![])
        }
        s => fail(s, s.as_u16(), body.message, body.details.into_iter().map(|d| d.message).collect()),
    }
}

fn internal(e: impl Into<AppError>) -> Response {
    let e: AppError = e.into();
    tracing::error!(error = %e, "purge failed");
    fail(StatusCode::SERVICE_UNAVAILABLE, 503, "The service failed to handle the purge; try again.", vec![])
}

/// The host patterns the customer's properties claim: only those may be purged (another customer's hosts, or a
/// pattern a property lists without owning it, may not).
async fn host_patterns(state: &AppState, caller: &Caller) -> Result<Vec<String>, AppError> {
    Ok(state.store.host_claims(caller.customer.id).await?)
}

/// Submit a purge (or expiry) of cached content. Answers 303 See Other with the transaction's address; its
/// progress is at GET /transactions/{transaction_id}. At most 2 requests per second per customer.
#[utoipa::path(
    post, path = "/cache/purge", tag = "purge",
    request_body(content = edge_api::schema::PurgeRequestSchema, content_type = "application/json"),
    responses(
        (status = 303, description = "Submitted: `code` 201; Location is the transaction status", body = PurgeResponse),
        (status = 400, description = "Malformed JSON or a validation failure (`code` 400, every problem in details)", body = PurgeError),
        (status = 401, description = "Authentication failed (`code` 403)", body = PurgeError),
        (status = 403, description = "The caller's role may not purge (`code` 403)", body = PurgeError),
        (status = 406, description = "Content-Type missing or not application/json (`code` 406)", body = PurgeError),
        (status = 429, description = "More than 2 purge requests per second for this customer; see Retry-After (`code` 429)", body = PurgeError),
        (status = 503, description = "Internal error (`code` 503)", body = PurgeError),
    )
)]
async fn purge(
    State(state): State<AppState>,
    allowed: Result<Allowed<perm::Purge>, AppError>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let caller = match allowed {
        Ok(Allowed(caller, _)) => caller,
        Err(e) => return access_failure(e, StatusCode::UNAUTHORIZED),
    };
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return fail(
            StatusCode::NOT_ACCEPTABLE,
            406,
            "The purge request must be sent as Content-Type: application/json.",
            vec![],
        );
    }
    let token = match state.store.take_purge_token(caller.customer.id, state.clock.now_ms()).await {
        Ok(token) => token,
        Err(e) => return internal(e),
    };
    if let Err(wait_ms) = token {
        let mut r = fail(
            StatusCode::TOO_MANY_REQUESTS,
            429,
            "At most 2 purge requests per second per customer: wait a moment and send it again.",
            vec![],
        );
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from((wait_ms.max(1) as u64).div_ceil(1000)));
        return r;
    }
    let request: PurgeRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return fail(
                StatusCode::BAD_REQUEST,
                400,
                "The purge request is not valid JSON of the documented shape.",
                vec![e.to_string()],
            );
        }
    };
    let patterns = match host_patterns(&state, &caller).await {
        Ok(p) => p,
        Err(e) => return internal(e),
    };
    let body = request.purge_request;
    let mut problems = Vec::new();
    if !PURGE_ACTIONS.contains(&body.action.as_str()) {
        problems.push(format!("action {:?} is not one of {}", body.action, PURGE_ACTIONS.join(", ")));
    }
    if body.uris.is_empty() {
        problems.push("uris: at least one URI pattern".into());
    }
    for (i, u) in body.uris.iter().enumerate() {
        problems.extend(uri_problems(u, &patterns).into_iter().map(|p| format!("uris[{i}]: {p}")));
    }
    if !problems.is_empty() {
        return fail(
            StatusCode::BAD_REQUEST,
            400,
            format!("The purge request is not valid: {} problem(s).", problems.len()),
            problems,
        );
    }
    let base = paths::base(&caller.customer.name);
    let uri = format!("{base}/cache/purge");
    let task = new_task(&state, &caller, PURGE, TaskTarget { id: "cache", uri: &uri, name: "" });
    let record = PurgeRecord {
        id: 0,
        customer_id: caller.customer.id,
        task_id: task.id.clone(),
        action: body.action.clone(),
        uri_count: body.uris.len() as u64,
        uris: serde_json::to_string(&body.uris).unwrap_or_default(),
        sample: body.uris.iter().take(TASK_PURGE_SAMPLE).map(|u| u.uri_pattern.clone()).collect(),
        username: caller.user.username.clone(),
    };
    let audit = AuditEvent::by(&caller, task.begin_ms, op::PURGE, Target::purge(&body.action))
        .detail("action", body.action.as_str())
        .detail("uris", body.uris.len())
        .detail("first_uri", body.uris.first().map(|u| u.uri_pattern.as_str()).unwrap_or_default());
    let id = match state.store.create_purge(&record, &task, &audit).await {
        Ok(id) => id,
        Err(e) => return internal(e),
    };
    let status_uri = format!("{base}/transactions/{id}");
    let answer = PurgeResponse {
        code: 201,
        description: format!("Request accepted: {} {} URI pattern(s).", body.action, body.uris.len()),
        purge_response: PurgeResponseBody { transaction_status_uri: status_uri.clone() },
        transaction_id: id,
    };
    (StatusCode::SEE_OTHER, [(header::LOCATION, status_uri)], axum::Json(answer)).into_response()
}

/// The transaction's state: PENDING while edge nodes acknowledge, then SUCCESS.
fn status_of(state: &AppState, task: &TaskRecord, now: i64) -> (TransactionResponse, bool) {
    let schedule = state.fleet.schedule(&task.id);
    let done = now >= task.end_ms;
    let failed = done && task.error_info.is_some();
    let percent = if done && !failed { 100 } else { fleet::progress(&schedule, task.begin_ms, now).percent.min(99) };
    let (status, description) = match (done, failed) {
        (false, _) => ("PENDING", "Transaction is pending"),
        (true, false) => ("SUCCESS", "Completed"),
        (true, true) => ("FAILED", "Some edge nodes did not acknowledge"),
    };
    (
        TransactionResponse {
            begin_ts: task.begin_ms,
            end_ts: if done { task.end_ms } else { 0 },
            percent_received_responses: percent,
            transaction_status: status.into(),
            transaction_status_description: description.into(),
        },
        done,
    )
}

#[derive(Deserialize)]
struct TransactionPath {
    transaction_id: String,
}

/// The status of a purge transaction.
#[utoipa::path(
    get, path = "/transactions/{transaction_id}", tag = "purge",
    params(("transaction_id" = i64, Path, description = "Transaction id")),
    responses(
        (status = 200, description = "Pending or succeeded", body = TransactionStatus),
        (status = 400, description = "Authentication failed (`code` 403) or the id is not a number (`code` 400)", body = PurgeError),
        (status = 404, description = "No such transaction (`code` 404)", body = PurgeError),
        (status = 503, description = "Internal error (`code` 503)", body = PurgeError),
    )
)]
async fn transaction(
    State(state): State<AppState>,
    allowed: Result<Allowed<perm::ReadPurgeStatus>, AppError>,
    Path(p): Path<TransactionPath>,
) -> Response {
    let caller = match allowed {
        Ok(Allowed(caller, _)) => caller,
        Err(e) => return access_failure(e, StatusCode::BAD_REQUEST),
    };
    let Ok(id) = p.transaction_id.parse::<i64>() else {
        return fail(
            StatusCode::BAD_REQUEST,
            400,
            format!("{:?} is not a transaction id (a number).", p.transaction_id),
            vec![],
        );
    };
    let (_, task) = match state.store.purge(caller.customer.id, id).await {
        Ok(Some(found)) => found,
        Ok(None) => return fail(StatusCode::NOT_FOUND, 404, format!("There is no transaction {id}."), vec![]),
        Err(e) => return internal(e),
    };
    let (response, _) = status_of(&state, &task, state.clock.now_ms());
    axum::Json(TransactionStatus {
        code: 200,
        description: response.transaction_status_description.clone(),
        transaction_id: id,
        transaction_response: response,
    })
    .into_response()
}

/// The 50 most recent purges of the customer, newest first (beyond the original API; for the console's
/// history).
#[utoipa::path(
    get, path = "/transactions", tag = "purge",
    responses(
        (status = 200, description = "Recent purges", body = Vec<TransactionSummary>),
        (status = 400, description = "Authentication failed (`code` 403)", body = PurgeError),
        (status = 503, description = "Internal error (`code` 503)", body = PurgeError),
    )
)]
async fn recent(State(state): State<AppState>, allowed: Result<Allowed<perm::ReadPurgeStatus>, AppError>) -> Response {
    let caller = match allowed {
        Ok(Allowed(caller, _)) => caller,
        Err(e) => return access_failure(e, StatusCode::BAD_REQUEST),
    };
    let purges = match state.store.recent_purges(caller.customer.id, 50).await {
        Ok(p) => p,
        Err(e) => return internal(e),
    };
    let now = state.clock.now_ms();
    let base = paths::base(&caller.customer.name);
    let items: Vec<TransactionSummary> = purges
        .into_iter()
        .map(|(p, task)| {
            let (r, _) = status_of(&state, &task, now);
            TransactionSummary {
                transaction_id: p.id,
                uri: format!("{base}/transactions/{}", p.id),
                action: p.action,
                uri_count: p.uri_count,
                sample: p.sample,
                user: p.username,
                begin_ts: r.begin_ts,
                end_ts: r.end_ts,
                percent_received_responses: r.percent_received_responses,
                transaction_status: r.transaction_status,
            }
        })
        .collect();
    axum::Json(items).into_response()
}

/// Paths answered with purge-style bodies when something outside the handlers fails (a wrong method).
pub fn is_purge_path(path: &str) -> bool {
    path.ends_with("/cache/purge") || path.contains("/transactions")
}
