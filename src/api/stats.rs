//! Statistics queries, and reading their rows by column name (never by position: an answer with other or
//! fewer columns shows blanks instead of stopping the console).

use edge_api::stats::StatsResponse;
use gloo_net::http::Request;
use serde_json::Value;

use super::*;

/// The address of a statistics query: `path` under the customer's base (e.g. `/stats/data`), with `params`.
pub fn stats_url(customer: &str, path: &str, params: &[(&str, String)]) -> String {
    let query: Vec<String> =
        params.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k}={}", users::encode(v))).collect();
    format!("{}{path}?{}", base(customer), query.join("&"))
}

/// Runs a statistics query.
pub async fn stats(customer: &str, path: &str, params: &[(&str, String)]) -> ApiResult<StatsResponse> {
    get_stats(&stats_url(customer, path, params), None).await
}

/// Runs the statistics query at `url` (from [`stats_url`]); `abort` cancels it.
pub async fn get_stats(url: &str, abort: Option<web_sys::AbortSignal>) -> ApiResult<StatsResponse> {
    send_json(Request::get(url).abort_signal(abort.as_ref())).await
}

/// One column of an answer, found by name; reads nothing when the answer lacks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column(Option<usize>);

impl Column {
    pub fn of(response: &StatsResponse, name: &str) -> Column {
        Column(response.columns.iter().position(|c| c.name == name))
    }

    pub fn exists(&self) -> bool {
        self.0.is_some()
    }

    pub fn value<'a>(&self, row: &'a [Value]) -> Option<&'a Value> {
        self.0.and_then(|i| row.get(i))
    }

    /// The value as text (a string as it is, anything else as JSON); empty when absent.
    pub fn text(&self, row: &[Value]) -> String {
        self.value(row).map(value_text).unwrap_or_default()
    }

    /// The value as a number; 0 when absent or not a number.
    pub fn number(&self, row: &[Value]) -> f64 {
        self.value(row).and_then(Value::as_f64).unwrap_or(0.0)
    }
}

/// A cell as text: a string as it is, anything else as JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
