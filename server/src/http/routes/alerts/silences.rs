//! Silences: by rule and/or labels, from–until, optionally repeating daily or weekly (maintenance windows).
//! A silenced notification is recorded in its channel's log as silenced, not sent.

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::{
    ErrorBody,
    alerts::{Repeat, Silence, SilenceInput, SilencePage},
    audit::op,
    limits::{MAX_COMMENT_CHARS, over_chars},
    paths, perm,
};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{invalid, parse_iso};
use crate::{
    clock::iso_ms,
    domain::alerts::{check_labels, cut_for_message, silence},
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
        extract::{Json, Query},
        paging::{Page, filters},
    },
    state::AppState,
    store::{self, AuditEvent, Customer, SilenceRecord, Target},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_silences, create_silence)).routes(routes!(get_silence, delete_silence))
}

fn silence_uri(customer: &Customer, id: &str) -> String {
    format!("{}/alerts/silences/{id}", paths::base(&customer.name))
}

fn silence_body(customer: &Customer, s: &SilenceRecord, now: i64) -> Silence {
    let rule = silence::Silence::of(s);
    Silence {
        id: s.id.clone(),
        uri: silence_uri(customer, &s.id),
        comment: s.comment.clone(),
        rule_id: s.rule_id.clone(),
        labels: rule.labels.clone(),
        starts: iso_ms(s.starts_ms),
        ends: iso_ms(s.ends_ms),
        repeat: rule.repeat,
        repeat_until: s.repeat_until_ms.map(iso_ms),
        active: rule.active_at(now),
        expired: s.expires_ms.is_some_and(|e| e <= now),
        created: iso_ms(s.created_ms),
        author: s.author.clone(),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct SilenceQuery {
    /// Page number, from 1 (default 1).
    page: Option<u64>,
    /// Silences per page (default 100, at most 1000).
    count: Option<u64>,
    /// Include expired silences (default false).
    expired: Option<bool>,
}

/// The customer's silences, newest first; expired ones only when asked for.
#[utoipa::path(
    get, path = "/alerts/silences", tag = "alerts",
    params(SilenceQuery),
    responses(
        (status = 200, description = "A page of silences", body = SilencePage),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn list_silences(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
    Query(q): Query<SilenceQuery>,
) -> AppResult<axum::Json<SilencePage>> {
    let page = Page::of(q.page, q.count, 100)?;
    let now = state.clock.now_ms();
    let expired = q.expired.unwrap_or(false);
    let (silences, total) =
        state.store.alert_silences(caller.customer.id, (!expired).then_some(now), page.offset(), page.count).await?;
    let items = silences.iter().map(|s| silence_body(&caller.customer, s, now)).collect();
    let path = format!("{}/alerts/silences", paths::base(&caller.customer.name));
    let sent = filters(&[("expired", expired.then_some("true"))]);
    Ok(axum::Json(page.paged(&path, &sent, items, total).into()))
}

/// Silence a rule, or every rule with some labels, for a window, or a window that repeats daily or weekly
/// (in UTC). Notifications in it are recorded as silenced, not sent; the rules' states go on changing.
#[utoipa::path(
    post, path = "/alerts/silences", tag = "alerts",
    request_body = SilenceInput,
    responses(
        (status = 201, description = "The new silence", body = Silence),
        (status = 400, description = "Invalid fields (`invalid_silence`: neither a rule nor labels, a rule that is not the customer's, an end not after the start, a repeating window not shorter than its period, an end in the past), or 200 silences in force (`limit_exceeded`)", body = ErrorBody),
        (status = 403, description = "The caller's role may not manage alerts", body = ErrorBody),
    )
)]
async fn create_silence(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageAlerts>,
    Json(input): Json<SilenceInput>,
) -> AppResult<Response> {
    let now = state.clock.now_ms();
    let mut problems = Vec::new();
    if over_chars(&input.comment, MAX_COMMENT_CHARS) {
        problems.push(format!("comment: at most {MAX_COMMENT_CHARS} characters"));
    }
    check_labels("labels", &input.labels, &mut problems);
    match &input.rule_id {
        Some(id) if over_chars(id, 64) || state.store.alert_rule(caller.customer.id, id).await?.is_none() => {
            problems.push(format!("rule_id: no rule {:?}", cut_for_message(id)));
        }
        Some(_) => {}
        None if input.labels.is_empty() => {
            problems.push("rule_id or labels: a silence names a rule, labels or both".into())
        }
        None => {}
    }
    let time = |field: &str, text: &str, problems: &mut Vec<String>| match parse_iso(field, text) {
        Ok(ms) => Some(ms),
        Err(_) => {
            problems.push(format!("{field}: an ISO 8601 time with Z or an offset, as 2026-11-27T22:00:00Z"));
            None
        }
    };
    let starts = time("starts", &input.starts, &mut problems);
    let ends = time("ends", &input.ends, &mut problems);
    let until = input.repeat_until.as_deref().and_then(|t| time("repeat_until", t, &mut problems));
    if let (Some(s), Some(e)) = (starts, ends) {
        if e <= s {
            problems.push("ends: later than starts".into());
        }
        if let Some(r) = input.repeat
            && e - s >= r.millis()
        {
            problems.push(format!("ends: a {} window is shorter than its period", r.as_str()));
        }
    }
    if input.repeat_until.is_some() && input.repeat.is_none() {
        problems.push("repeat_until: only with repeat".into());
    }
    let (Some(starts_ms), Some(ends_ms), true) = (starts, ends, problems.is_empty()) else {
        return Err(invalid("invalid_silence", "silence", problems));
    };
    let rule = silence::Silence {
        rule_id: input.rule_id.clone(),
        labels: input.labels.clone(),
        starts_ms,
        ends_ms,
        repeat: input.repeat,
        repeat_until_ms: until,
    };
    let expires_ms = rule.expires_ms();
    if expires_ms.is_some_and(|e| e <= now) {
        return Err(invalid("invalid_silence", "silence", vec!["ends: the silence would be over already".into()]));
    }
    let record = SilenceRecord {
        id: store::new_id(),
        customer_id: caller.customer.id,
        comment: input.comment.clone(),
        rule_id: input.rule_id.clone(),
        labels: serde_json::to_string(&input.labels).unwrap_or_else(|_| "{}".into()),
        starts_ms,
        ends_ms,
        repeat: input.repeat.map(|r: Repeat| r.as_str().to_string()),
        repeat_until_ms: until,
        expires_ms,
        created_ms: now,
        author: caller.user.username.clone(),
    };
    let name = if input.comment.is_empty() { record.id.clone() } else { input.comment.clone() };
    let audit =
        AuditEvent::by(&caller, now, op::ALERT_SILENCE_CREATE, Target::alert("alert_silence", &record.id, &name))
            .detail("starts", iso_ms(starts_ms))
            .detail("ends", iso_ms(ends_ms));
    state.store.create_alert_silence(&record, &audit).await?;
    let uri = silence_uri(&caller.customer, &record.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, uri)], axum::Json(silence_body(&caller.customer, &record, now)))
        .into_response())
}

#[derive(Deserialize)]
struct SilencePath {
    silence_id: String,
}

/// One silence.
#[utoipa::path(
    get, path = "/alerts/silences/{silence_id}", tag = "alerts",
    params(("silence_id" = String, Path, description = "The silence's id", max_length = 64)),
    responses(
        (status = 200, description = "The silence", body = Silence),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn get_silence(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
    Path(p): Path<SilencePath>,
) -> AppResult<axum::Json<Silence>> {
    let s = state.store.alert_silence(caller.customer.id, &p.silence_id).await?.ok_or(AppError::NotFound("silence"))?;
    Ok(axum::Json(silence_body(&caller.customer, &s, state.clock.now_ms())))
}

/// End a silence now (delete it).
#[utoipa::path(
    delete, path = "/alerts/silences/{silence_id}", tag = "alerts",
    params(("silence_id" = String, Path, description = "The silence's id", max_length = 64)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "The caller's role may not manage alerts", body = ErrorBody),
    )
)]
async fn delete_silence(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageAlerts>,
    Path(p): Path<SilencePath>,
) -> AppResult<StatusCode> {
    let s = state.store.alert_silence(caller.customer.id, &p.silence_id).await?.ok_or(AppError::NotFound("silence"))?;
    let now = state.clock.now_ms();
    let name = if s.comment.is_empty() { s.id.clone() } else { s.comment.clone() };
    let audit = AuditEvent::by(&caller, now, op::ALERT_SILENCE_DELETE, Target::alert("alert_silence", &s.id, &name));
    if !state.store.delete_alert_silence(caller.customer.id, &s.id, &audit).await? {
        return Err(AppError::NotFound("silence"));
    }
    Ok(StatusCode::NO_CONTENT)
}
