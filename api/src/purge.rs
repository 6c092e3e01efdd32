//! Cache purge: requests, the submission answer, transaction status. Purge keeps its own `code`/`description`
//! bodies, as the API has always done.

use serde::{Deserialize, Serialize};

use crate::ErrorDetail;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeRequest {
    pub purge_request: PurgeBody,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeBody {
    /// `PURGE` (remove from cache) or `EXPIRE` (mark expired; may be served stale if the origin fails).
    pub action: String,
    pub uris: Vec<PurgeUri>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeUri {
    /// `host/path`: with EXACT_LITERAL one object; with PREFIX_LITERAL a prefix. The host may start with `*.`
    /// only where a property's host patterns define that wildcard.
    pub uri_pattern: String,
    /// `EXACT_LITERAL` or `PREFIX_LITERAL`.
    pub match_mode: String,
    /// Only with PREFIX_LITERAL; may end with `*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key_modifier_regex: Option<String>,
}

pub const PURGE_ACTIONS: [&str; 2] = ["PURGE", "EXPIRE"];
pub const MATCH_MODES: [&str; 2] = ["EXACT_LITERAL", "PREFIX_LITERAL"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeResponse {
    /// 201: submitted.
    pub code: u16,
    pub description: String,
    pub purge_response: PurgeResponseBody,
    pub transaction_id: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeResponseBody {
    pub transaction_status_uri: String,
}

/// A failed purge or transaction call: `code` is 400 (validation), 403 (authentication), 405, 406, 429 or 5xx.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PurgeError {
    pub code: u16,
    pub description: String,
    /// Every problem, e.g. one per invalid URI (`uris[3]: ...`).
    #[serde(default)]
    pub details: Vec<ErrorDetail>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransactionStatus {
    pub code: u16,
    pub description: String,
    pub transaction_id: i64,
    pub transaction_response: TransactionResponse,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransactionResponse {
    /// Milliseconds since the Unix epoch.
    pub begin_ts: i64,
    /// Milliseconds since the Unix epoch; 0 while pending.
    pub end_ts: i64,
    pub percent_received_responses: u8,
    /// `PENDING` or `SUCCESS`.
    pub transaction_status: String,
    /// `Transaction is pending` or `Completed`.
    pub transaction_status_description: String,
}

/// A recent purge, for the console's history (GET /transactions).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransactionSummary {
    pub transaction_id: i64,
    pub uri: String,
    pub action: String,
    /// Number of URI patterns in the request.
    pub uri_count: u64,
    /// The first few patterns.
    pub sample: Vec<String>,
    /// Username of who submitted it.
    pub user: String,
    pub begin_ts: i64,
    pub end_ts: i64,
    pub percent_received_responses: u8,
    pub transaction_status: String,
}
