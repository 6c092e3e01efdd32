//! Request extractors whose rejections are [`AppError`]s, so malformed input gets the same JSON error body as
//! everything else.

use axum::{
    extract::{FromRequest, FromRequestParts, Request, rejection::JsonRejection},
    http::{StatusCode, request::Parts},
};
use edge_api::limits::MAX_QUERY_VALUE_BYTES;
use serde::de::DeserializeOwned;

use crate::http::error::AppError;

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

/// Query parameters. Unparseable values → 400 `invalid_parameter` naming the problem; a value longer than
/// [`MAX_QUERY_VALUE_BYTES`] (a filter, a search) → 400 `invalid_parameter` before anything reads it.
pub struct Query<T>(pub T);

impl<S, T> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        let invalid = |details: Vec<String>| AppError::BadRequest {
            kind: "invalid_parameter",
            message: "A query parameter is invalid.".into(),
            details,
        };
        let pairs = serde_urlencoded::from_str::<Vec<(String, String)>>(query).unwrap_or_default();
        let too_long: Vec<String> = pairs
            .iter()
            .filter(|(_, value)| value.len() > MAX_QUERY_VALUE_BYTES)
            .map(|(name, value)| {
                format!(
                    "{}: {} bytes; a query parameter has at most {MAX_QUERY_VALUE_BYTES}",
                    edge_api::limits::cut(name, 64),
                    value.len()
                )
            })
            .collect();
        if !too_long.is_empty() {
            return Err(invalid(too_long));
        }
        serde_urlencoded::from_str(query).map(Query).map_err(|e| invalid(vec![e.to_string()]))
    }
}
