//! The server's one error type: every failure a handler can meet, mapped to a status and the JSON error body.

use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use edge_api::ErrorBody;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A request the caller must change: bad parameter, invalid body, policy violation.
    #[error("{message}")]
    BadRequest { kind: &'static str, message: String, details: Vec<String> },
    /// No valid credentials, or credentials that need more (a one-time password).
    #[error("{message}")]
    Unauthorized { kind: &'static str, message: String },
    /// Authenticated, but the caller's role does not allow the operation.
    #[error("{0}")]
    Forbidden(String),
    /// Authenticated, but not allowed for a reason of its own (`kind`): an API token without the scope, or used
    /// from an address outside its ranges.
    #[error("{message}")]
    ForbiddenAs { kind: &'static str, message: String, details: Vec<String> },
    /// The resource does not exist, or belongs to another customer.
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("{message}")]
    Conflict { kind: &'static str, message: String },
    /// 409 `stale_etag`: the resource changed since the caller read it; its current etag (when known) goes in
    /// the `ETag` header, so that the client can read again and retry.
    #[error("the resource changed since it was read")]
    StaleEtag { etag: Option<String> },
    /// 409 with `Retry-After`: the same request is being handled now (an `Idempotency-Key` in flight).
    #[error("{message}")]
    Busy { kind: &'static str, message: String, retry_after_secs: u64 },
    /// 422: a well-formed request that contradicts an earlier one (an `Idempotency-Key` reused with another body).
    #[error("{message}")]
    Unprocessable { kind: &'static str, message: String },
    #[error("{0}")]
    PreconditionRequired(String),
    #[error("request body too large")]
    PayloadTooLarge,
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("too many requests")]
    TooManyRequests { message: String, retry_after_secs: u64 },
    /// The server cannot handle this request now — bounded work is full (`overloaded`), or the database cannot
    /// be reached (`database_unavailable`); nothing was changed, and the client may retry later.
    #[error("{message}")]
    Unavailable { kind: &'static str, message: String, retry_after_secs: u64 },
    /// Anything else: logged with its cause, answered as 500 without details.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn bad_request(kind: &'static str, message: impl Into<String>) -> Self {
        AppError::BadRequest { kind, message: message.into(), details: Vec::new() }
    }

    pub fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::bad_request("invalid_parameter", message)
    }

    /// 503 `database_unavailable`: the database did not answer; nothing was changed.
    pub fn database_unavailable() -> Self {
        AppError::Unavailable {
            kind: "database_unavailable",
            message: "The database cannot be reached right now; nothing was changed. Try again in a moment.".into(),
            retry_after_secs: 2,
        }
    }

    /// 503 `storage_unavailable`: the storage refused to write (disk full, read-only, I/O error); nothing was
    /// changed, and the same request works once the operator has freed the cause — no restart needed.
    pub fn storage_unavailable() -> Self {
        AppError::Unavailable {
            kind: "storage_unavailable",
            message: "The server's storage cannot take writes right now (disk full or read-only); nothing was \
                      changed. Try again in a moment."
                .into(),
            retry_after_secs: 5,
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        AppError::Unauthorized { kind: "unauthorized", message: message.into() }
    }

    /// Seconds the client should wait before trying again, for the errors that say so (429, 503).
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            AppError::TooManyRequests { retry_after_secs, .. }
            | AppError::Unavailable { retry_after_secs, .. }
            | AppError::Busy { retry_after_secs, .. } => Some((*retry_after_secs).max(1)),
            _ => None,
        }
    }

    /// The status and the error body this error is answered with.
    pub fn status_and_body(&self) -> (StatusCode, ErrorBody) {
        let (status, kind, message, details): (StatusCode, &str, String, &[String]) = match self {
            AppError::BadRequest { kind, message, details } => {
                (StatusCode::BAD_REQUEST, kind, message.clone(), details)
            }
            AppError::Unauthorized { kind, message } => (StatusCode::UNAUTHORIZED, kind, message.clone(), &[]),
            AppError::Forbidden(m) => (StatusCode::FORBIDDEN, "forbidden", m.clone(), &[]),
            AppError::ForbiddenAs { kind, message, details } => (StatusCode::FORBIDDEN, kind, message.clone(), details),
            AppError::NotFound(what) => {
                (StatusCode::NOT_FOUND, "not_found", format!("The {what} does not exist."), &[])
            }
            AppError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "This method is not allowed on this resource.".into(),
                &[],
            ),
            AppError::Conflict { kind, message } => (StatusCode::CONFLICT, kind, message.clone(), &[]),
            AppError::StaleEtag { .. } => (
                StatusCode::CONFLICT,
                "stale_etag",
                "The configuration changed since you read it: read it again (its etag is in the ETag header) and retry."
                    .into(),
                &[],
            ),
            AppError::Busy { kind, message, .. } => (StatusCode::CONFLICT, kind, message.clone(), &[]),
            AppError::Unprocessable { kind, message } => (StatusCode::UNPROCESSABLE_ENTITY, kind, message.clone(), &[]),
            AppError::PreconditionRequired(m) => {
                (StatusCode::PRECONDITION_REQUIRED, "precondition_required", m.clone(), &[])
            }
            AppError::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "The request body is larger than the server accepts.".into(),
                &[],
            ),
            AppError::UnsupportedMediaType(m) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", m.clone(), &[])
            }
            AppError::TooManyRequests { message, .. } => {
                (StatusCode::TOO_MANY_REQUESTS, "too_many_requests", message.clone(), &[])
            }
            AppError::Unavailable { kind, message, .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, kind, message.clone(), &[])
            }
            AppError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "The server failed to handle the request; the failure was logged.".into(),
                &[],
            ),
        };
        (status, ErrorBody::new(kind, message).with_details(details.iter().cloned()))
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        if let AppError::Internal(cause) = &self {
            tracing::error!(error = ?cause, "request failed");
        }
        let (status, body) = self.status_and_body();
        let mut response = (status, Json(body)).into_response();
        if let Some(secs) = self.retry_after_secs() {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let AppError::StaleEtag { etag: Some(etag) } = &self
            && let Ok(value) = HeaderValue::from_str(etag)
        {
            response.headers_mut().insert(header::ETAG, value);
        }
        response
    }
}

impl From<crate::store::StoreError> for AppError {
    fn from(e: crate::store::StoreError) -> Self {
        use crate::store::StoreError;
        match e {
            StoreError::Conflict(what) => {
                AppError::Conflict { kind: "conflict", message: format!("The {what} already exists.") }
            }
            StoreError::HostClaimed(message) => AppError::Conflict {
                kind: "host_claimed",
                message: format!("A host pattern is not this property's to claim: {message}."),
            },
            StoreError::LastAdmin => AppError::Conflict {
                kind: "last_admin",
                message: "This would leave the account without an enabled administrator.".into(),
            },
            StoreError::Limit(message) => AppError::BadRequest { kind: "limit_exceeded", message, details: vec![] },
            StoreError::Invalid(message) => AppError::BadRequest {
                kind: "invalid_text",
                message: format!("The request holds text the server cannot store: {message}."),
                details: vec![],
            },
            StoreError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "the database is unavailable");
                AppError::database_unavailable()
            }
            StoreError::Storage(cause) => {
                tracing::warn!(error = %cause, "storage refuses to write");
                AppError::storage_unavailable()
            }
            StoreError::Other(e) => AppError::Internal(e),
        }
    }
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        crate::store::StoreError::from(e).into()
    }
}

/// The error body for a bare status, used where an error response was produced outside the handlers
/// (router fallbacks, body limits, timeouts).
pub fn body_for_status(status: StatusCode) -> ErrorBody {
    let (kind, message) = match status {
        StatusCode::NOT_FOUND => ("not_found", "No resource exists at this address."),
        StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", "This method is not allowed on this resource."),
        StatusCode::PAYLOAD_TOO_LARGE => ("payload_too_large", "The request body is larger than the server accepts."),
        StatusCode::REQUEST_TIMEOUT => ("timeout", "The request took too long and was stopped."),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            ("unsupported_media_type", "The request body has an unsupported content type.")
        }
        StatusCode::BAD_REQUEST => ("bad_request", "The request is malformed."),
        StatusCode::UNAUTHORIZED => ("unauthorized", "Authentication is required."),
        StatusCode::FORBIDDEN => ("forbidden", "You are not allowed to do this."),
        s if s.is_server_error() => {
            ("internal_error", "The server failed to handle the request; the failure was logged.")
        }
        _ => ("error", "The request failed."),
    };
    ErrorBody::new(kind, message)
}
