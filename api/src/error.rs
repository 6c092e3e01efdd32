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

    /// Sets the details, at most [`MAX_DETAILS`] of them (see [`capped_details`]).
    pub fn with_details<I, S>(mut self, details: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.details = capped_details(details);
        self
    }
}

/// An error body lists at most this many details; the rest are counted in one more detail.
pub const MAX_DETAILS: usize = 100;

/// The first [`MAX_DETAILS`] problems, each cut to [`crate::limits::MAX_DETAIL_BYTES`] (a detail may quote what
/// was sent), and then, when there were more, one detail `… and N more` counting them: an error body stays small
/// whatever the size of the input that caused it.
pub fn capped_details<I, S>(details: I) -> Vec<ErrorDetail>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut details = details.into_iter();
    let mut kept: Vec<ErrorDetail> =
        details.by_ref().take(MAX_DETAILS).map(|m| ErrorDetail { message: bounded(m.into()) }).collect();
    let more = details.count();
    if more > 0 {
        kept.push(ErrorDetail { message: format!("… and {more} more") });
    }
    kept
}

fn bounded(message: String) -> String {
    match crate::limits::cut(&message, crate::limits::MAX_DETAIL_BYTES) {
        std::borrow::Cow::Borrowed(_) => message,
        std::borrow::Cow::Owned(cut) => cut,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_capped_with_a_count_of_the_rest() {
        let body = ErrorBody::new("x", "y").with_details((0..250).map(|i| format!("p{i}")));
        assert_eq!(body.details.len(), MAX_DETAILS + 1);
        assert_eq!(body.details[99].message, "p99");
        assert_eq!(body.details[100].message, "… and 150 more");
        assert_eq!(ErrorBody::new("x", "y").with_details((0..100).map(|i| format!("p{i}"))).details.len(), 100);
    }

    #[test]
    fn a_detail_quoting_a_huge_value_is_cut() {
        let body = ErrorBody::new("x", "y").with_details([format!("{:?} is not valid", "a".repeat(5_000_000))]);
        assert!(body.details[0].message.len() <= crate::limits::MAX_DETAIL_BYTES);
        assert!(body.details[0].message.ends_with('…'));
    }
}
