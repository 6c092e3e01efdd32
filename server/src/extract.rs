//! Request extractors whose rejections are [`AppError`]s, so malformed input gets the same JSON error body as
//! everything else.

use axum::{
    extract::{FromRequest, FromRequestParts, Request, rejection::JsonRejection},
    http::{StatusCode, request::Parts},
};
use serde::de::DeserializeOwned;

use crate::error::AppError;

/// A JSON body. Wrong content type → 415, body over the limit → 413, bad JSON → 400 `invalid_json`.
pub struct Json<T>(pub T);

impl<S, T> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Json(v)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> AppError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => {
            AppError::UnsupportedMediaType("The request body must be JSON (Content-Type: application/json).".into())
        }
        JsonRejection::BytesRejection(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => AppError::PayloadTooLarge,
        other => AppError::BadRequest {
            kind: "invalid_json",
            message: "The request body is not valid JSON for this operation.".into(),
            details: vec![other.body_text()],
        },
    }
}

/// Query parameters. Unparseable values → 400 `invalid_parameter` naming the problem.
pub struct Query<T>(pub T);

impl<S, T> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        serde_urlencoded::from_str(query).map(Query).map_err(|e| AppError::BadRequest {
            kind: "invalid_parameter",
            message: "A query parameter is invalid.".into(),
            details: vec![e.to_string()],
        })
    }
}
