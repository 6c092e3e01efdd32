//! `GET /metrics`, for the operator: what each customer's statistics hold in this process — rows, memory,
//! distinct values per dimension, folded records — against the limits, in Prometheus's text format. Served
//! only with `--metrics-token`, to requests bearing it: the answer names every customer.

use std::fmt::Write as _;

use axum::{
    extract::State,
    http::{HeaderMap, HeaderValue, header},
    response::{IntoResponse, Response},
};

use crate::{http::error::AppError, state::AppState};

pub async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match answer(&state, &headers).await {
        Ok(text) => (
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8")),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
            text,
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

async fn answer(state: &AppState, headers: &HeaderMap) -> Result<String, AppError> {
    let Some(token) = &state.settings.metrics_token else {
        return Err(AppError::NotFound("metrics endpoint (start the server with --metrics-token to serve it)"));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if !same(given.as_bytes(), token.as_bytes()) {
        return Err(AppError::Unauthorized {
            kind: "unauthorized",
            message: "Send the metrics token as Authorization: Bearer TOKEN.".into(),
        });
    }
    let names = state.store.customer_names().await?;
    let stats = state.stats.clone();
    let (usage, limits) = tokio::task::spawn_blocking(move || (stats.usage(), stats.limits()))
        .await
        .map_err(|e| AppError::Internal(e.into()))?;
    let name = |id: i64| names.iter().find(|(c, _)| *c == id).map_or_else(|| format!("#{id}"), |(_, n)| n.clone());
    let mut out = String::new();
    let mut family = |metric: &str, kind: &str, help: &str, samples: Vec<(String, u64)>| {
        let _ = writeln!(out, "# HELP {metric} {help}\n# TYPE {metric} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "{metric}{labels} {value}");
        }
    };
    let per_customer = |f: &dyn Fn(&crate::stats::Usage) -> u64| {
        usage.iter().map(|u| (format!("{{customer=\"{}\"}}", name(u.customer)), f(u))).collect()
    };
    let per_dimension = |f: &dyn Fn(&crate::stats::Usage) -> &[(&'static str, u64)]| {
        usage
            .iter()
            .flat_map(|u| {
                f(u).iter().map(move |(d, n)| (format!("{{customer=\"{}\",dimension=\"{d}\"}}", name(u.customer)), *n))
            })
            .collect()
    };
    family(
        "edge_stats_rows",
        "gauge",
        "Rollup rows and raw security events a customer's statistics hold (embedded engine).",
        per_customer(&|u| u.rows),
    );
    family(
        "edge_stats_rows_limit",
        "gauge",
        "Rows a customer's statistics may hold (--stats-max-rows); ingestion is refused past it.",
        limit(limits.max_rows),
    );
    family(
        "edge_stats_memory_bytes",
        "gauge",
        "Memory a customer's statistics take, rows, indexes and dictionaries.",
        per_customer(&|u| u.bytes),
    );
    family(
        "edge_stats_values",
        "gauge",
        "Distinct values a customer's statistics hold, per dimension.",
        per_dimension(&|u| &u.values),
    );
    family(
        "edge_stats_values_limit",
        "gauge",
        "Distinct values of a dimension a customer may hold (--stats-max-values); new ones past it are stored as (other).",
        limit(limits.max_values as u64),
    );
    family(
        "edge_stats_folded_records_total",
        "counter",
        "Records whose value of a dimension was stored as (other), since the server started.",
        per_dimension(&|u| &u.folded),
    );
    family(
        "edge_process_resident_bytes",
        "gauge",
        "Resident memory of this server process.",
        vec![(String::new(), resident_bytes())],
    );
    Ok(out)
}

/// A limit's sample, or none when there is no limit.
fn limit(value: u64) -> Vec<(String, u64)> {
    if value >= u64::MAX / 2 || value >= usize::MAX as u64 / 2 { Vec::new() } else { vec![(String::new(), value)] }
}

/// Equal, in a time that depends only on the length of `a`.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Resident memory of this process, from /proc (0 where there is none).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf takes an integer and reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}
