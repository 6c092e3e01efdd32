//! Statistics answers: the echo of the query, the columns and rows, the vocabulary lists, and what an
//! ingestion call reports.

use serde::{Deserialize, Serialize};

/// The echo of the effective query in a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueryEcho {
    pub starttime: String,
    pub endtime: String,
    pub start: u64,
    pub limit: u64,
    pub dimensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granularity: Option<String>,
    pub sortby: Option<Vec<String>>,
    pub filters: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatsColumn {
    pub name: String,
    /// `string` or `long` (delivery statistics only).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub column_type: Option<String>,
}

/// A statistics answer: the echo, columns, rows in column order, the total, and for delivery statistics the
/// addresses of this, the next and the previous slice (blank when none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatsResponse {
    pub query: QueryEcho,
    pub columns: Vec<StatsColumn>,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schema::stats_rows))]
    pub rows: Vec<Vec<serde_json::Value>>,
    pub total_results: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_uri: Option<String>,
}

/// `{"dimensions": [...]}`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DimensionList {
    pub dimensions: Vec<String>,
}

/// `{"groupings": [...]}`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupingList {
    pub groupings: Vec<String>,
}

/// `{"metrics": [...]}`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetricList {
    pub metrics: Vec<String>,
}

/// An ingestion answer lists at most this many rejected lines; the rest are counted in `rejected_more`.
pub const MAX_REJECTED: usize = 100;

/// The value a text dimension's values are stored as once the customer holds as many distinct values of that
/// dimension as the server allows (integer dimensions: 0). Queries see it as any other value; a record that
/// sends it as is counts with the folded ones.
pub const OTHER_VALUE: &str = "(other)";

/// Answer of an ingestion call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IngestResult {
    /// Records stored.
    pub accepted: u64,
    /// The first 100 rejected lines (in line order), each with its number and why.
    pub rejected: Vec<RejectedLine>,
    /// How many more lines were rejected than `rejected` lists (0 when it lists them all), so an answer stays
    /// small whatever the body held.
    #[serde(default)]
    pub rejected_more: u64,
    /// The dimensions whose new values were stored as `(other)` (0 for integer dimensions) because the
    /// customer already holds as many distinct values of them as the server allows; the records are stored,
    /// counted under that value. Left out when nothing was folded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folded: Vec<FoldedDimension>,
}

/// Records of an ingestion call whose value of a dimension was folded into `(other)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FoldedDimension {
    pub dimension: String,
    /// Records of the call whose value was folded.
    pub records: u64,
    /// Distinct values of the dimension a customer may hold.
    pub limit: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RejectedLine {
    /// 1-based line number.
    pub line: u64,
    pub message: String,
}
