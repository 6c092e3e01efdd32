//! Statistics queries.

use edge_api::stats::StatsResponse;
use gloo_net::http::Request;

use super::*;

/// Runs a statistics query: `path` under the customer's base (e.g. `/stats/data`), with `params`.
pub async fn stats(customer: &str, path: &str, params: &[(&str, String)]) -> ApiResult<StatsResponse> {
    let query: Vec<String> =
        params.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| format!("{k}={}", users::encode(v))).collect();
    send_json(Request::get(&format!("{}{path}?{}", base(customer), query.join("&")))).await
}
