//! The JSON error body of every non-2xx answer (except cache purge and transactions, which keep their own).

use serde::{Deserialize, Serialize};

/// `{"type": "<machine_code>", "message": "<human text>", "details": [{"message": "..."}]}`:
/// the shape of a task's `error_info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// Machine-readable snake_case code, e.g. `invalid_parameter`, `otp_required`, `not_found`.
    #[serde(rename = "type")]
    pub kind: String,
    /// One sentence for a person.
    pub message: String,
    /// Further problems, one per item (for example every invalid field).
    #[serde(default)]
    pub details: Vec<ErrorDetail>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    pub message: String,
}

impl ErrorBody {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorBody { kind: kind.into(), message: message.into(), details: Vec::new() }
    }

    pub fn with_details<I, S>(mut self, details: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.details = details.into_iter().map(|m| ErrorDetail { message: m.into() }).collect();
        self
    }
}

impl std::fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        for d in &self.details {
            write!(f, "; {}", d.message)?;
        }
        Ok(())
    }
}
