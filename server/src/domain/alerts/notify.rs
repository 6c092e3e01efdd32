//! Notifications: the body made once when a rule notifies (the webhook's JSON, which the e-mail is written
//! from), how one attempt to one channel is made, and when a failed one is tried again.

use edge_api::alerts::{AlertState, NotificationKind, WebhookPayload};

use super::webhook::{self, Attempt, SIGNATURE_HEADER};
use crate::{domain::mail::Mailer, store::ChannelRecord};

/// Attempts a delivery gets: the first and four retries, after [`RETRY_AFTER_MS`].
pub const MAX_ATTEMPTS: u32 = 5;
/// The wait before the 2nd, 3rd, 4th and 5th attempt (30 s, 2 min, 10 min, 30 min: about 43 minutes in all).
pub const RETRY_AFTER_MS: [i64; 4] = [30_000, 120_000, 600_000, 1_800_000];
/// How long a sender holds a claimed delivery before another may take it over.
pub const LEASE_MS: i64 = 60_000;

/// The wait before the attempt after `attempts` made, or None when none is left.
pub fn retry_after(attempts: u32) -> Option<i64> {
    if attempts >= MAX_ATTEMPTS { None } else { RETRY_AFTER_MS.get(attempts.saturating_sub(1) as usize).copied() }
}

/// The subject and text of the e-mail of a notification.
pub fn email(p: &WebhookPayload) -> (String, String) {
    let (name, severity) = match &p.rule {
        Some(rule) => (rule.name.as_str(), rule.severity.as_str()),
        None => ("test notification", "info"),
    };
    let what = match p.kind {
        NotificationKind::Firing => "FIRING",
        NotificationKind::Renotify => "STILL FIRING",
        NotificationKind::Resolved => "RESOLVED",
        NotificationKind::Test => "TEST",
    };
    let subject = format!("[{what}] {name} ({severity}, {})", p.customer);
    let mut body = format!("{what}: {name}\n\nCondition: {}\n", p.summary);
    if let Some(v) = p.value {
        body.push_str(&format!("Value: {v}\n"));
    }
    body.push_str(&format!("State: {} (was {})\nTime: {}\n", p.state.as_str(), p.previous_state.as_str(), p.time));
    if let Some(rule) = &p.rule
        && !rule.labels.is_empty()
    {
        let labels: Vec<String> = rule.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        body.push_str(&format!("Labels: {}\n", labels.join(", ")));
    }
    if !p.details.is_empty() {
        body.push_str(&format!("Details: {}\n", serde_json::Value::Object(p.details.clone())));
    }
    body.push_str(&format!("\nOpen the rule: {}\n\nDelivery {}\n", p.console_url, p.id));
    (subject, body)
}

/// How an attempt to a channel ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub ok: bool,
    /// Trying again may help (a 5xx, 408 or 429 answer, a timeout, a lost connection, a mail server that failed).
    pub retry: bool,
    pub response_status: Option<u16>,
    pub error: Option<String>,
}

/// Makes one attempt of a notification whose body is `payload` (the JSON of a [`WebhookPayload`]) to `channel`.
pub async fn attempt(mailer: &Mailer, channel: &ChannelRecord, payload: &str, allow_internal: bool) -> Sent {
    match channel.kind.as_str() {
        "webhook" => {
            let (Some(url), Some(secret)) = (&channel.url, &channel.secret) else {
                return Sent { ok: false, retry: false, response_status: None, error: Some("no URL".into()) };
            };
            let id = serde_json::from_str::<WebhookPayload>(payload).map(|p| p.id).unwrap_or_default();
            let headers = [(SIGNATURE_HEADER, webhook::signature(secret, payload.as_bytes())), ("X-Edge-Delivery", id)];
            match webhook::post(url, &headers, payload.as_bytes().to_vec(), allow_internal).await {
                Attempt::Answered(status) if (200..300).contains(&status) => {
                    Sent { ok: true, retry: false, response_status: Some(status), error: None }
                }
                Attempt::Answered(status) => Sent {
                    ok: false,
                    retry: status >= 500 || status == 408 || status == 429,
                    response_status: Some(status),
                    error: Some(format!("the receiver answered {status}")),
                },
                Attempt::Failed { error, retry } => {
                    Sent { ok: false, retry, response_status: None, error: Some(error) }
                }
            }
        }
        _ => {
            let Ok(p) = serde_json::from_str::<WebhookPayload>(payload) else {
                return Sent { ok: false, retry: false, response_status: None, error: Some("unreadable body".into()) };
            };
            let (subject, body) = email(&p);
            for to in &channel.addresses {
                if let Err(e) = mailer.send(to, &subject, &body).await {
                    return Sent { ok: false, retry: true, response_status: None, error: Some(format!("{e:#}")) };
                }
            }
            Sent { ok: true, retry: false, response_status: None, error: None }
        }
    }
}

/// The state a notification of `kind` reports, and the one before, for a test.
pub fn test_states() -> (AlertState, AlertState) {
    (AlertState::Firing, AlertState::Ok)
}
