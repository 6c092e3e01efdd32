//! Alert channels: e-mail (through the server's mail: SMTP, or the outbox) and webhooks (a JSON body signed with
//! a per-channel secret shown once), each with its delivery log and a "send test".

use axum::{
    extract::{Path, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::{
    ErrorBody,
    alerts::{
        AlertChannel, AlertChannelInput, AlertChannelPage, AlertRuleInput, ChannelKind, Delivery, DeliveryPage,
        DeliveryStatus, MAX_EMAIL_ADDRESSES, NotificationKind, WebhookPayload,
    },
    audit::op,
    paths, perm,
};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::invalid;
use crate::{
    alerting,
    clock::iso_ms,
    domain::{
        alerts::{check_name, cut_for_message, notify::LEASE_MS, webhook},
        auth::Caller,
    },
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
        extract::{Json, Query},
        paging::PageQuery,
        routes::users::is_email,
    },
    state::AppState,
    store::{self, AuditEvent, ChannelRecord, ClaimedDelivery, Customer, DeliveryRecord, Target},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_channels, create_channel))
        .routes(routes!(get_channel, update_channel, delete_channel))
        .routes(routes!(test_channel))
        .routes(routes!(channel_deliveries))
        // The webhook body is documented as a schema of its own (no operation returns it).
        .routes(routes!(webhook_body))
}

fn channel_uri(customer: &Customer, id: &str) -> String {
    format!("{}/alerts/channels/{id}", paths::base(&customer.name))
}

fn channel_body(customer: &Customer, c: &ChannelRecord, show_secret: bool) -> AlertChannel {
    let uri = channel_uri(customer, &c.id);
    AlertChannel {
        id: c.id.clone(),
        name: c.name.clone(),
        kind: ChannelKind::parse(&c.kind).unwrap_or(ChannelKind::Email),
        addresses: c.addresses.clone(),
        url: c.url.clone(),
        secret: if show_secret { c.secret.clone() } else { None },
        deliveries_uri: format!("{uri}/deliveries"),
        test_uri: format!("{uri}/test"),
        created: iso_ms(c.created_ms),
        modified: iso_ms(c.modified_ms),
        uri,
    }
}

pub(super) fn delivery_body(d: &DeliveryRecord) -> Delivery {
    let status = DeliveryStatus::parse(&d.status).unwrap_or(DeliveryStatus::Pending);
    Delivery {
        id: d.id.clone(),
        time: iso_ms(d.created_ms),
        kind: NotificationKind::parse(&d.kind).unwrap_or(NotificationKind::Test),
        rule_id: d.rule_id.clone(),
        rule_name: d.rule_name.clone(),
        status,
        attempts: d.attempts,
        response_status: d.response_status,
        error: d.error.clone(),
        next_attempt: (status == DeliveryStatus::Pending).then(|| iso_ms(d.next_attempt_ms)),
        sent: d.sent_ms.map(iso_ms),
    }
}

/// Checks a channel's fields for its kind; every problem.
fn check(input: &AlertChannelInput) -> AppResult<()> {
    let mut problems = Vec::new();
    check_name("name", &input.name, &mut problems);
    match input.kind {
        ChannelKind::Email => {
            if input.addresses.is_empty() || input.addresses.len() > MAX_EMAIL_ADDRESSES {
                problems.push(format!("addresses: 1 to {MAX_EMAIL_ADDRESSES} e-mail addresses"));
            }
            for (i, a) in input.addresses.iter().enumerate() {
                if !is_email(a) {
                    problems.push(format!("addresses[{i}]: {:?} is not an e-mail address", cut_for_message(a)));
                }
            }
            if input.url.is_some() {
                problems.push("url: only for webhooks".into());
            }
        }
        ChannelKind::Webhook => {
            match &input.url {
                Some(url) => {
                    if let Err(e) = webhook::check_url(url) {
                        problems.push(format!("url: {e}"));
                    }
                }
                None => problems.push("url: a webhook needs one".into()),
            }
            if !input.addresses.is_empty() {
                problems.push("addresses: only for e-mail".into());
            }
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(invalid("invalid_alert_channel", "alert channel", problems)) }
}

/// The customer's alert channels, by name (secrets are never shown here).
#[utoipa::path(
    get, path = "/alerts/channels", tag = "alerts",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of channels", body = AlertChannelPage),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn list_channels(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
    Query(q): Query<PageQuery>,
) -> AppResult<axum::Json<AlertChannelPage>> {
    let page = q.resolve()?;
    let (channels, total) = state.store.alert_channels(caller.customer.id, page.offset(), page.count).await?;
    let items = channels.iter().map(|c| channel_body(&caller.customer, c, false)).collect();
    let path = format!("{}/alerts/channels", paths::base(&caller.customer.name));
    Ok(axum::Json(page.paged(&path, "", items, total).into()))
}

/// Create a channel. A webhook's signing secret is in this answer only (`secret`): keep it to check
/// `X-Edge-Signature`.
#[utoipa::path(
    post, path = "/alerts/channels", tag = "alerts",
    request_body = AlertChannelInput,
    responses(
        (status = 201, description = "The new channel (a webhook's with its secret, shown this once)", body = AlertChannel),
        (status = 400, description = "Invalid fields (`invalid_alert_channel`, every problem in details), or the customer has 50 channels (`limit_exceeded`)", body = ErrorBody),
        (status = 403, description = "The caller's role may not manage alerts", body = ErrorBody),
    )
)]
async fn create_channel(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageAlerts>,
    Json(input): Json<AlertChannelInput>,
) -> AppResult<Response> {
    check(&input)?;
    let now = state.clock.now_ms();
    let webhook = input.kind == ChannelKind::Webhook;
    let record = ChannelRecord {
        id: store::new_id(),
        customer_id: caller.customer.id,
        name: input.name.trim().to_string(),
        kind: input.kind.as_str().into(),
        addresses: input.addresses.iter().map(|a| a.trim().to_string()).collect(),
        url: input.url.clone(),
        secret: webhook.then(webhook::new_secret),
        created_ms: now,
        modified_ms: now,
    };
    let audit = AuditEvent::by(
        &caller,
        now,
        op::ALERT_CHANNEL_CREATE,
        Target::alert("alert_channel", &record.id, &record.name),
    )
    .detail("type", record.kind.as_str());
    state.store.create_alert_channel(&record, &audit).await?;
    let uri = channel_uri(&caller.customer, &record.id);
    Ok((StatusCode::CREATED, [(header::LOCATION, uri)], axum::Json(channel_body(&caller.customer, &record, true)))
        .into_response())
}

#[derive(Deserialize)]
struct ChannelPath {
    channel_id: String,
}

async fn find(state: &AppState, caller: &Caller, id: &str) -> AppResult<ChannelRecord> {
    state.store.alert_channel(caller.customer.id, id).await?.ok_or(AppError::NotFound("alert channel"))
}

/// One channel (without its secret).
#[utoipa::path(
    get, path = "/alerts/channels/{channel_id}", tag = "alerts",
    params(("channel_id" = String, Path, description = "The channel's id", max_length = 64)),
    responses(
        (status = 200, description = "The channel", body = AlertChannel),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn get_channel(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
    Path(p): Path<ChannelPath>,
) -> AppResult<axum::Json<AlertChannel>> {
    Ok(axum::Json(channel_body(&caller.customer, &find(&state, &caller, &p.channel_id).await?, false)))
}

/// Change a channel's name, addresses or URL; `rotate_secret` makes a new signing secret, shown in this answer.
#[utoipa::path(
    put, path = "/alerts/channels/{channel_id}", tag = "alerts",
    params(("channel_id" = String, Path, description = "The channel's id", max_length = 64)),
    request_body = AlertChannelInput,
    responses(
        (status = 200, description = "The channel as changed (with the new secret when rotated)", body = AlertChannel),
        (status = 400, description = "Invalid fields, or another type than the channel's (`invalid_alert_channel`)", body = ErrorBody),
        (status = 403, description = "The caller's role may not manage alerts", body = ErrorBody),
    )
)]
async fn update_channel(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageAlerts>,
    Path(p): Path<ChannelPath>,
    Json(input): Json<AlertChannelInput>,
) -> AppResult<axum::Json<AlertChannel>> {
    let old = find(&state, &caller, &p.channel_id).await?;
    check(&input)?;
    if input.kind.as_str() != old.kind {
        return Err(invalid(
            "invalid_alert_channel",
            "alert channel",
            vec![format!("type: this channel is {}; make a new channel for another type", old.kind)],
        ));
    }
    let rotate = input.rotate_secret && old.kind == "webhook";
    let now = state.clock.now_ms();
    let record = ChannelRecord {
        name: input.name.trim().to_string(),
        addresses: input.addresses.iter().map(|a| a.trim().to_string()).collect(),
        url: input.url.clone(),
        secret: if rotate { Some(webhook::new_secret()) } else { old.secret.clone() },
        modified_ms: now,
        ..old
    };
    let audit = AuditEvent::by(
        &caller,
        now,
        op::ALERT_CHANNEL_UPDATE,
        Target::alert("alert_channel", &record.id, &record.name),
    )
    .detail("secret_rotated", rotate);
    if !state.store.update_alert_channel(&record, &audit).await? {
        return Err(AppError::NotFound("alert channel"));
    }
    Ok(axum::Json(channel_body(&caller.customer, &record, rotate)))
}

/// Delete a channel with its delivery log. A channel that rules notify is not deleted (409 `channel_in_use`,
/// naming them): take it out of them first.
#[utoipa::path(
    delete, path = "/alerts/channels/{channel_id}", tag = "alerts",
    params(("channel_id" = String, Path, description = "The channel's id", max_length = 64)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "The caller's role may not manage alerts", body = ErrorBody),
        (status = 409, description = "Rules notify this channel (`channel_in_use`)", body = ErrorBody),
    )
)]
async fn delete_channel(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageAlerts>,
    Path(p): Path<ChannelPath>,
) -> AppResult<StatusCode> {
    let old = find(&state, &caller, &p.channel_id).await?;
    let (rules, _) = state.store.alert_rules(caller.customer.id, 0, edge_api::alerts::MAX_RULES).await?;
    let users: Vec<String> = rules
        .iter()
        .filter(|r| serde_json::from_str::<AlertRuleInput>(&r.definition).is_ok_and(|d| d.channels.contains(&old.id)))
        .map(|r| r.name.clone())
        .collect();
    if !users.is_empty() {
        return Err(AppError::Conflict {
            kind: "channel_in_use",
            message: format!("Rules notify this channel: {}. Take it out of them first.", users.join(", ")),
        });
    }
    let now = state.clock.now_ms();
    let audit =
        AuditEvent::by(&caller, now, op::ALERT_CHANNEL_DELETE, Target::alert("alert_channel", &old.id, &old.name));
    if !state.store.delete_alert_channel(caller.customer.id, &old.id, &audit).await? {
        return Err(AppError::NotFound("alert channel"));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Send a test notification now, and answer how it went (one attempt within 10 s; a failure that may pass is
/// retried as any notification). It is in the channel's delivery log.
#[utoipa::path(
    post, path = "/alerts/channels/{channel_id}/test", tag = "alerts",
    params(("channel_id" = String, Path, description = "The channel's id", max_length = 64)),
    responses(
        (status = 200, description = "The test's delivery: sent, pending (to be retried) or failed, with the receiver's status or the error", body = Delivery),
        (status = 403, description = "The caller's role may not manage alerts", body = ErrorBody),
    )
)]
async fn test_channel(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ManageAlerts>,
    Path(p): Path<ChannelPath>,
) -> AppResult<axum::Json<Delivery>> {
    let channel = find(&state, &caller, &p.channel_id).await?;
    let now = state.clock.now_ms();
    let mut delivery = alerting::test_delivery(&state, &caller.customer.name, &channel, now);
    // Claimed by this request from the start: one attempt now, the sender retries it if it may pass later.
    delivery.status = "sending".into();
    delivery.attempts = 1;
    delivery.lease_ms = now + LEASE_MS;
    let audit = AuditEvent::by(
        &caller,
        now,
        op::ALERT_CHANNEL_TEST,
        Target::alert("alert_channel", &channel.id, &channel.name),
    );
    state.store.insert_delivery(&delivery).await?;
    state.store.record_audit(&audit).await?;
    let done = alerting::attempt(&state, ClaimedDelivery { delivery: delivery.clone(), channel }).await;
    let d = match done {
        Some(d) => d,
        None => state.store.delivery(caller.customer.id, &delivery.id).await?.unwrap_or(delivery),
    };
    Ok(axum::Json(delivery_body(&d)))
}

/// The channel's delivery log, newest first: every notification with its attempts, the receiver's status and
/// the last error (the newest 200 finished ones are kept, 90 days).
#[utoipa::path(
    get, path = "/alerts/channels/{channel_id}/deliveries", tag = "alerts",
    params(("channel_id" = String, Path, description = "The channel's id", max_length = 64), PageQuery),
    responses(
        (status = 200, description = "A page of deliveries", body = DeliveryPage),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn channel_deliveries(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
    Path(p): Path<ChannelPath>,
    Query(q): Query<PageQuery>,
) -> AppResult<axum::Json<DeliveryPage>> {
    let channel = find(&state, &caller, &p.channel_id).await?;
    let page = q.resolve()?;
    let (items, total) =
        state.store.channel_deliveries(caller.customer.id, &channel.id, page.offset(), page.count).await?;
    let path = format!("{}/deliveries", channel_uri(&caller.customer, &channel.id));
    Ok(axum::Json(page.paged(&path, "", items.iter().map(delivery_body).collect(), total).into()))
}

/// What a webhook receives: this body (`Content-Type: application/json`), POSTed with `X-Edge-Signature:
/// sha256=<hex of HMAC-SHA256 of the raw body, keyed with the channel's secret>` and `X-Edge-Delivery: <id>`.
/// A 2xx answer ends the delivery; 5xx, 408, 429, a timeout (10 s) or a lost connection is retried after 30 s,
/// 2, 10 and 30 minutes; any other answer fails it. This operation answers an example body, for the record.
#[utoipa::path(
    get, path = "/alerts/webhook-body", tag = "alerts",
    responses(
        (status = 200, description = "An example of the body a webhook receives", body = WebhookPayload),
        (status = 403, description = "The caller's role may not read alerts", body = ErrorBody),
    )
)]
async fn webhook_body(
    State(state): State<AppState>,
    Allowed(caller, _): Allowed<perm::ReadAlerts>,
) -> AppResult<axum::Json<WebhookPayload>> {
    let now = state.clock.now_ms();
    let example = ChannelRecord {
        id: "example".into(),
        customer_id: caller.customer.id,
        name: String::new(),
        kind: "webhook".into(),
        addresses: Vec::new(),
        url: None,
        secret: None,
        created_ms: now,
        modified_ms: now,
    };
    let d = alerting::test_delivery(&state, &caller.customer.name, &example, now);
    Ok(axum::Json(serde_json::from_str(&d.payload).map_err(|e| anyhow::anyhow!("{e}"))?))
}
