//! Statistics: delivery statistics and the top-K URL report, security events, WAF and traffic-shaping trends
//! and top-K reports, security request trends — and ingestion of the access logs and security events behind
//! them.

use std::fmt::Write as _;

use axum::{
    extract::{OriginalUri, Path, State},
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use edge_api::{
    ErrorBody, perm,
    stats::{
        self, Dimension, DimensionList, Family, Granularity, GroupingList, MetricList, Query, RawQuery, StatsResponse,
        format_time, validate, write_time,
    },
};
use serde::Deserialize;
use utoipa::openapi;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    domain::auth::Caller,
    http::{
        caller::Allowed,
        error::{AppError, AppResult},
        extract,
    },
    state::AppState,
    stats::{Answer, Cell, QueryError},
};

mod ingest;

pub use ingest::MAX_IDEMPOTENCY_KEY;

/// The families a statistics path answers for (every category of a `{category}` path); none for other paths.
fn families_of_path(path: &str) -> Vec<Family> {
    let Some(rest) = path.split_once("/stats").map(|(_, r)| r) else { return Vec::new() };
    let categories = |waf: bool, table: &[(&'static str, &'static str)]| -> Vec<Family> {
        table.iter().filter_map(|(c, _)| Family::topk(waf, c)).collect()
    };
    let prefixes: [(&str, Vec<Family>); 8] = [
        ("/security/waf/topk/", categories(true, &stats::WAF_CATEGORIES)),
        ("/security/trafficshaping/topk/", categories(false, &stats::SHAPING_CATEGORIES)),
        ("/security/waf/trends", vec![Family::WafTrends]),
        ("/security/request/trends", vec![Family::RequestTrends]),
        ("/security/trafficshaping/trends", vec![Family::ShapingTrends]),
        ("/security/events", vec![Family::Events]),
        ("/topk/", vec![Family::TopKUrl]),
        ("", vec![Family::Delivery]),
    ];
    prefixes.into_iter().find(|(p, _)| rest.starts_with(p)).map(|(_, f)| f).unwrap_or_default()
}

/// A statistics time as `parse_time` accepts it: a real calendar date (leap years included) and time of day,
/// fractional seconds optional, no time-zone designator.
const TIME_PATTERN: &str = concat!(
    "^(?:[0-9]{4}-(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])",
    "|[0-9]{4}-(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)",
    "|[0-9]{4}-02-(?:0[1-9]|1[0-9]|2[0-8])",
    "|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)",
    "T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?$"
);

/// What the OpenAPI document says of one statistics parameter: its schema, whether it is required, and the
/// rules across parameters that a schema cannot state (the validator in `edge_api::stats::validate` checks them).
pub struct ParameterRule {
    pub schema: openapi::Object,
    pub required: bool,
    pub description: String,
}

/// The rule of a statistics parameter on `path`: the categories, granularities, dimensions and metrics each
/// path accepts, the time format, the filter grammar, which parameters each family requires, and in words
/// what relates them. None for other paths and parameters.
pub fn parameter_rule(path: &str, name: &str) -> Option<ParameterRule> {
    let families = families_of_path(path);
    let family = *families.first()?;
    let topk = matches!(family, Family::WafTopK(_) | Family::ShapingTopK(_));
    let trends = matches!(family, Family::Delivery | Family::WafTrends | Family::RequestTrends | Family::ShapingTrends);
    let list_of = |names: Vec<&str>, signed: bool| {
        let one = format!("{}({})", if signed { "-?" } else { "" }, names.join("|"));
        text().pattern(Some(format!("^{one}(,{one})*$"))).build()
    };
    let dims = sorted_unique(families.iter().flat_map(|f| f.dimensions()));
    let metrics = sorted_unique(families.iter().flat_map(|f| f.metrics()));
    let rule = |mut schema: openapi::Object, required: bool, description: &str| {
        // A query value is at most MAX_QUERY_VALUE_BYTES bytes: this many characters are that many bytes.
        if schema.enum_values.is_none() {
            schema.max_length = Some(edge_api::limits::MAX_QUERY_VALUE_BYTES / 4);
        }
        Some(ParameterRule { schema, required, description: description.to_string() })
    };
    match name {
        "category" => {
            let categories = families.iter().filter_map(|f| match f {
                Family::WafTopK(c) | Family::ShapingTopK(c) => Some(*c),
                Family::TopKUrl => Some("url"),
                _ => None,
            });
            rule(text().enum_values(Some(sorted_unique(categories))).build(), true, "The category.")
        }
        "granularity" if trends => rule(
            text().enum_values(Some(Granularity::ALL.map(Granularity::as_str))).build(),
            true,
            "`day`, `hour` or `5minute`. 5-minute data is kept for one week and hourly data for 31 days: starttime \
             must not be earlier (use a coarser granularity for older spans).",
        ),
        "granularity" if family == Family::TopKUrl => {
            rule(text().enum_values(Some(vec!["day"])).build(), false, "`day`, the only granularity of this report.")
        }
        "granularity" => rule(text().build(), false, "Ignored: this report has no granularity."),
        "starttime" => rule(
            text().pattern(Some(TIME_PATTERN)).build(),
            false,
            "Start, UTC without a time-zone designator: `2026-11-22T10:00:00`. Required, as starttime or startime \
             (not both); earlier than endtime.",
        ),
        "startime" => rule(
            text().pattern(Some(TIME_PATTERN)).build(),
            false,
            "The same as starttime (the misspelling of some request templates); give one of the two, not both.",
        ),
        "endtime" => rule(
            text().pattern(Some(TIME_PATTERN)).build(),
            true,
            "End (exclusive), UTC without a time-zone designator; later than the start.",
        ),
        "start" => rule(text().pattern(Some("^[0-9]{1,9}$")).build(), false, "Zero-based index of the first row."),
        "limit" if topk => rule(
            text().pattern(Some("^[0-9]{1,9}$")).build(),
            false,
            "Top values to return (default 20, at most 1000; larger values are taken as 1000).",
        ),
        "limit" => rule(text().pattern(Some("^[0-9]{1,9}$")).build(), false, "Rows to return."),
        "dimensions" if family == Family::Events => rule(
            list_of(dims, false),
            true,
            "Comma-separated event fields, each once (event_timestamp_ms is always the first column).",
        ),
        "dimensions" => rule(
            list_of(dims, false),
            false,
            "Comma-separated dimensions, each once, that form one of the grouping sets the groupings operation \
             lists (for the granularity of the query, in any order); none for the totals.",
        ),
        "metrics" if trends => rule(list_of(metrics, false), true, "Comma-separated metrics (at least one)."),
        "metrics" => rule(list_of(metrics, false), false, "Comma-separated metrics (default and only one: hits)."),
        "filters" => rule(
            text().pattern(Some(filter_pattern(&families))).build(),
            false,
            "`dim==v,dim!=w` (OR) or `dim==v;dim!=w` (AND), not both separators in one expression; `\\` escapes \
             `,` `;` `\\`. The integer dimensions (status codes, cache statuses, scheme, ASN) take integers.",
        ),
        "sortby" if topk || family == Family::TopKUrl => {
            rule(list_of([dims, metrics].concat(), true), false, "Ignored: top values are sorted by hits.")
        }
        "sortby" => rule(
            list_of([dims, metrics, vec!["starttime", "endtime"]].concat(), true),
            false,
            "Comma-separated fields of the query (its dimensions and metrics, and starttime/endtime when it has a \
             granularity), `-` for descending.",
        ),
        _ => None,
    }
}

/// The grammar of `filters` for the dimensions of `families`: conditions joined by `,` or by `;`, the integer
/// dimensions with integer values, every other value any text with `\` escaping `,` `;` `\`.
fn filter_pattern(families: &[Family]) -> String {
    let dims = sorted_unique(families.iter().flat_map(|f| f.dimensions()));
    let (integers, texts): (Vec<&str>, Vec<&str>) =
        dims.into_iter().partition(|d| Dimension::parse(d).is_some_and(Dimension::is_integer));
    let mut alternatives = Vec::new();
    if !integers.is_empty() {
        alternatives.push(format!(" *(?:{}) *(?:==|!=) *[+-]?[0-9]{{1,18}} *", integers.join("|")));
    }
    if !texts.is_empty() {
        alternatives.push(format!(" *(?:{}) *(?:==|!=)(?:[^,;\\\\]|\\\\[\\s\\S])*", texts.join("|")));
    }
    let condition = format!("(?:{})", alternatives.join("|"));
    format!("^(?:{condition}(?:,{condition})*|{condition}(?:;{condition})*)?$")
}

fn sorted_unique(names: impl IntoIterator<Item = &'static str>) -> Vec<&'static str> {
    names.into_iter().collect::<std::collections::BTreeSet<_>>().into_iter().collect()
}

fn text() -> openapi::ObjectBuilder {
    openapi::ObjectBuilder::new().schema_type(openapi::schema::Type::String)
}

/// Runs a query of `family` and writes the answer.
async fn run(
    state: &AppState,
    caller: &Caller,
    family: Family,
    raw: &RawQuery,
    uri: &axum::http::Uri,
) -> AppResult<Response> {
    let query = validate(family, raw, state.clock.now_ms()).map_err(|problems| AppError::BadRequest {
        kind: "invalid_parameter",
        message: "The statistics query is not valid.".into(),
        details: problems,
    })?;
    let engine = state.stats.clone();
    let (id, name) = (caller.customer.id, caller.customer.name.clone());
    let q = query.clone();
    let answer = tokio::task::spawn_blocking(move || engine.query(id, &name, &q))
        .await
        .map_err(|e| anyhow::anyhow!("query task: {e}"))?
        .map_err(|e| match e {
            QueryError::Unsupported(m) => AppError::invalid_parameter(m),
            QueryError::Unavailable(message) => {
                AppError::Unavailable { kind: "database_unavailable", message, retry_after_secs: 2 }
            }
            QueryError::Internal(e) => AppError::Internal(e),
        })?;
    let body = write_response(family, &query, &answer, &caller.customer.name, uri);
    let mut response = ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response();
    response.headers_mut().insert("x-total-results", HeaderValue::from(answer.total));
    Ok(response)
}

/// Appends `s` as a JSON string.
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut plain = 0;
    for (i, c) in s.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[plain..i]);
        plain = i + c.len_utf8();
        if escaped.is_empty() {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push_str(escaped);
        }
    }
    out.push_str(&s[plain..]);
    out.push('"');
}

/// The query string with `start` set to `start`.
fn with_start(uri: &axum::http::Uri, start: u64) -> String {
    let mut parts: Vec<&str> =
        uri.query().unwrap_or("").split('&').filter(|p| !p.is_empty() && !p.starts_with("start=")).collect();
    let s = format!("start={start}");
    parts.push(&s);
    format!("{}?{}", uri.path(), parts.join("&"))
}

/// Writes the answer as JSON directly (rows can be many; this avoids building a tree of values).
fn write_response(family: Family, q: &Query, a: &Answer, customer: &str, uri: &axum::http::Uri) -> String {
    let security = !matches!(family, Family::Delivery | Family::TopKUrl);
    let mut out = String::with_capacity(256 + a.rows.len() * 24 * a.columns.len().max(1));
    out.push_str("{\"query\":{\"starttime\":");
    json_str(&mut out, &format_time(q.start_ms));
    out.push_str(",\"endtime\":");
    json_str(&mut out, &format_time(q.end_ms));
    let _ = write!(out, ",\"start\":{},\"limit\":{},\"dimensions\":", q.start, q.limit);
    let list = |out: &mut String, items: &[String]| {
        out.push('[');
        for (i, s) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_str(out, s);
        }
        out.push(']');
    };
    list(&mut out, &q.dimensions);
    if family != Family::Events {
        out.push_str(",\"metrics\":");
        list(&mut out, &q.metrics);
    }
    if let Some(g) = q.granularity {
        out.push_str(",\"granularity\":");
        json_str(&mut out, g.as_str());
    }
    out.push_str(",\"sortby\":");
    if q.sortby.is_empty() {
        out.push_str("null");
    } else {
        let keys: Vec<String> =
            q.sortby.iter().map(|k| format!("{}{}", if k.descending { "-" } else { "" }, k.field)).collect();
        list(&mut out, &keys);
    }
    out.push_str(",\"filters\":");
    let filters = match (&q.filters_text, security) {
        (Some(f), true) => Some(format!("{f};customer=={customer}")),
        (None, true) => Some(format!("customer=={customer}")),
        (f, false) => f.clone(),
    };
    match filters {
        Some(f) => json_str(&mut out, &f),
        None => out.push_str("null"),
    }
    out.push_str("},\"columns\":[");
    for (i, (name, long)) in a.columns.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        json_str(&mut out, name);
        if !security {
            out.push_str(if *long { ",\"type\":\"long\"" } else { ",\"type\":\"string\"" });
        }
        out.push('}');
    }
    out.push_str("],\"rows\":[");
    let mut times = vec![(i64::MIN, String::new()); a.columns.len().max(1)];
    for (i, row) in a.rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        for (j, cell) in row.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            match cell {
                Cell::Int(v) => out.push_str(itoa::Buffer::new().format(*v)),
                Cell::Text(s) => json_str(&mut out, s),
                Cell::Time(ms) => {
                    // Rows of one bucket follow each other: each time column remembers its last text.
                    let at = j.min(times.len() - 1);
                    let (last_ms, text) = &mut times[at];
                    if *last_ms != *ms {
                        text.clear();
                        write_time(text, *ms);
                        *last_ms = *ms;
                    }
                    out.push('"');
                    out.push_str(text);
                    out.push('"');
                }
            }
        }
        out.push(']');
    }
    let _ = write!(out, "],\"total_results\":{}", a.total);
    if family == Family::Delivery {
        // A slice of no rows has no next or previous slice: its address would be its own, and a client
        // following next_uri would never stop.
        let next = q.start.saturating_add(q.limit);
        let (has_next, has_prev) = (q.limit > 0 && next < a.total, q.limit > 0 && q.start > 0);
        out.push_str(",\"uri\":");
        json_str(&mut out, &uri.to_string());
        out.push_str(",\"next_uri\":");
        json_str(&mut out, &if has_next { with_start(uri, next) } else { String::new() });
        out.push_str(",\"prev_uri\":");
        json_str(&mut out, &if has_prev { with_start(uri, q.start.saturating_sub(q.limit)) } else { String::new() });
    }
    out.push('}');
    out
}

fn as_vec(v: Vec<&str>) -> Vec<String> {
    v.into_iter().map(String::from).collect()
}

#[derive(Deserialize)]
struct CategoryPath {
    category: String,
}

fn topk_family(waf: bool, category: &str) -> AppResult<Family> {
    Family::topk(waf, category).ok_or(AppError::NotFound("top-K category"))
}

/// Declares the data, head, dimensions, groupings and metrics operations of a family with a fixed path.
macro_rules! family_routes {
    ($family:expr, $tag:literal, data: $data:ident $data_path:literal, head: $head:ident $head_path:literal,
     dimensions: $dims:ident $dims_path:literal $(, groupings: $groups:ident $groups_path:literal)? $(, metrics: $metrics:ident $metrics_path:literal)?) => {
        #[utoipa::path(get, path = $data_path, tag = $tag, params(RawQuery),
            responses(
                (status = 200, description = "The statistics", body = StatsResponse),
                (status = 400, description = "Invalid query parameters (`invalid_parameter`, every problem in details)", body = ErrorBody),
                (status = 401, description = "Not authenticated", body = ErrorBody),
                (status = 403, description = "The caller's role may not read statistics", body = ErrorBody),
            ))]
        async fn $data(
            State(state): State<AppState>,
            Allowed(caller, _): Allowed<perm::ReadStats>,
            OriginalUri(uri): OriginalUri,
            extract::Query(raw): extract::Query<RawQuery>,
        ) -> AppResult<Response> {
            run(&state, &caller, $family, &raw, &uri).await
        }

        #[utoipa::path(head, path = $head_path, tag = $tag, params(RawQuery),
            responses(
                (status = 200, description = "As the data query, headers only (X-Total-Results)"),
                (status = 400, description = "Invalid query parameters"),
                (status = 401, description = "Not authenticated"),
            ))]
        async fn $head(
            State(state): State<AppState>,
            Allowed(caller, _): Allowed<perm::ReadStats>,
            OriginalUri(uri): OriginalUri,
            extract::Query(raw): extract::Query<RawQuery>,
        ) -> AppResult<Response> {
            run(&state, &caller, $family, &raw, &uri).await
        }

        #[utoipa::path(get, path = $dims_path, tag = $tag,
            responses((status = 200, description = "The dimensions", body = DimensionList), (status = 401, description = "Not authenticated", body = ErrorBody)))]
        async fn $dims(Allowed(_, _): Allowed<perm::ReadStats>) -> axum::Json<DimensionList> {
            axum::Json(DimensionList { dimensions: as_vec($family.dimensions()) })
        }

        $(
        #[utoipa::path(get, path = $groups_path, tag = $tag,
            responses((status = 200, description = "The grouping sets, `<granularity>/<dim>/...`", body = GroupingList), (status = 401, description = "Not authenticated", body = ErrorBody)))]
        async fn $groups(Allowed(_, _): Allowed<perm::ReadStats>) -> axum::Json<GroupingList> {
            axum::Json(GroupingList { groupings: $family.groupings() })
        }
        )?

        $(
        #[utoipa::path(get, path = $metrics_path, tag = $tag,
            responses((status = 200, description = "The metrics", body = MetricList), (status = 401, description = "Not authenticated", body = ErrorBody)))]
        async fn $metrics(Allowed(_, _): Allowed<perm::ReadStats>) -> axum::Json<MetricList> {
            axum::Json(MetricList { metrics: as_vec($family.metrics()) })
        }
        )?
    };
}

family_routes!(Family::Delivery, "delivery statistics",
    data: delivery_data "/stats/data", head: delivery_head "/stats",
    dimensions: delivery_dimensions "/stats/dimensions",
    groupings: delivery_groupings "/stats/groupings",
    metrics: delivery_metrics "/stats/metrics");
family_routes!(Family::TopKUrl, "delivery statistics",
    data: topk_url_data "/stats/topk/url/data", head: topk_url_head "/stats/topk/url",
    dimensions: topk_url_dimensions "/stats/topk/url/dimensions",
    metrics: topk_url_metrics "/stats/topk/url/metrics");
family_routes!(Family::Events, "security statistics",
    data: events_data "/stats/security/events/data", head: events_head "/stats/security/events",
    dimensions: events_dimensions "/stats/security/events/dimensions");
family_routes!(Family::WafTrends, "security statistics",
    data: waf_trends_data "/stats/security/waf/trends/data", head: waf_trends_head "/stats/security/waf/trends",
    dimensions: waf_trends_dimensions "/stats/security/waf/trends/dimensions",
    groupings: waf_trends_groupings "/stats/security/waf/trends/groupings",
    metrics: waf_trends_metrics "/stats/security/waf/trends/metrics");
family_routes!(Family::RequestTrends, "security statistics",
    data: request_trends_data "/stats/security/request/trends/data", head: request_trends_head "/stats/security/request/trends",
    dimensions: request_trends_dimensions "/stats/security/request/trends/dimensions",
    groupings: request_trends_groupings "/stats/security/request/trends/groupings",
    metrics: request_trends_metrics "/stats/security/request/trends/metrics");
family_routes!(Family::ShapingTrends, "security statistics",
    data: shaping_trends_data "/stats/security/trafficshaping/trends/data", head: shaping_trends_head "/stats/security/trafficshaping/trends",
    dimensions: shaping_trends_dimensions "/stats/security/trafficshaping/trends/dimensions",
    groupings: shaping_trends_groupings "/stats/security/trafficshaping/trends/groupings",
    metrics: shaping_trends_metrics "/stats/security/trafficshaping/trends/metrics");

/// The grouping sets of the top-K URL report (`category` is `url`).
#[utoipa::path(get, path = "/stats/topk/{category}/groupings", tag = "delivery statistics",
    params(("category" = String, Path, description = "url")),
    responses(
        (status = 200, description = "The grouping sets", body = GroupingList),
        (status = 401, description = "Not authenticated", body = ErrorBody),
        (status = 404, description = "No such category", body = ErrorBody),
    ))]
async fn topk_url_groupings(
    Allowed(_, _): Allowed<perm::ReadStats>,
    Path(p): Path<CategoryPath>,
) -> AppResult<axum::Json<GroupingList>> {
    if p.category != "url" {
        return Err(AppError::NotFound("top-K category"));
    }
    Ok(axum::Json(GroupingList { groupings: Family::TopKUrl.groupings() }))
}

/// Declares the per-category operations of a security top-K family.
macro_rules! topk_routes {
    ($waf:literal, $data:ident $data_path:literal, $head:ident $head_path:literal, $dims:ident $dims_path:literal,
     $groups:ident $groups_path:literal, $metrics:ident $metrics_path:literal) => {
        #[utoipa::path(get, path = $data_path, tag = "security statistics",
            params(("category" = String, Path, description = "The category"), RawQuery),
            responses(
                (status = 200, description = "The top values of the category, by hits (default 20, at most 1000)", body = StatsResponse),
                (status = 400, description = "Invalid query parameters", body = ErrorBody),
                (status = 401, description = "Not authenticated", body = ErrorBody),
                (status = 404, description = "No such category", body = ErrorBody),
            ))]
        async fn $data(
            State(state): State<AppState>,
            Allowed(caller, _): Allowed<perm::ReadStats>,
            Path(p): Path<CategoryPath>,
            OriginalUri(uri): OriginalUri,
            extract::Query(raw): extract::Query<RawQuery>,
        ) -> AppResult<Response> {
            run(&state, &caller, topk_family($waf, &p.category)?, &raw, &uri).await
        }

        #[utoipa::path(head, path = $head_path, tag = "security statistics",
            params(("category" = String, Path, description = "The category"), RawQuery),
            responses((status = 200, description = "As the data query, headers only"), (status = 404, description = "No such category")))]
        async fn $head(
            State(state): State<AppState>,
            Allowed(caller, _): Allowed<perm::ReadStats>,
            Path(p): Path<CategoryPath>,
            OriginalUri(uri): OriginalUri,
            extract::Query(raw): extract::Query<RawQuery>,
        ) -> AppResult<Response> {
            run(&state, &caller, topk_family($waf, &p.category)?, &raw, &uri).await
        }

        #[utoipa::path(get, path = $dims_path, tag = "security statistics", params(("category" = String, Path, description = "The category")),
            responses((status = 200, description = "The dimensions", body = DimensionList), (status = 404, description = "No such category", body = ErrorBody)))]
        async fn $dims(Allowed(_, _): Allowed<perm::ReadStats>, Path(p): Path<CategoryPath>) -> AppResult<axum::Json<DimensionList>> {
            Ok(axum::Json(DimensionList { dimensions: as_vec(topk_family($waf, &p.category)?.dimensions()) }))
        }

        #[utoipa::path(get, path = $groups_path, tag = "security statistics", params(("category" = String, Path, description = "The category")),
            responses((status = 200, description = "The grouping sets", body = GroupingList), (status = 404, description = "No such category", body = ErrorBody)))]
        async fn $groups(Allowed(_, _): Allowed<perm::ReadStats>, Path(p): Path<CategoryPath>) -> AppResult<axum::Json<GroupingList>> {
            Ok(axum::Json(GroupingList { groupings: topk_family($waf, &p.category)?.groupings() }))
        }

        #[utoipa::path(get, path = $metrics_path, tag = "security statistics", params(("category" = String, Path, description = "The category")),
            responses((status = 200, description = "The metrics", body = MetricList), (status = 404, description = "No such category", body = ErrorBody)))]
        async fn $metrics(Allowed(_, _): Allowed<perm::ReadStats>, Path(p): Path<CategoryPath>) -> AppResult<axum::Json<MetricList>> {
            Ok(axum::Json(MetricList { metrics: as_vec(topk_family($waf, &p.category)?.metrics()) }))
        }
    };
}

topk_routes!(true,
    waf_topk_data "/stats/security/waf/topk/{category}/data",
    waf_topk_head "/stats/security/waf/topk/{category}",
    waf_topk_dimensions "/stats/security/waf/topk/{category}/dimensions",
    waf_topk_groupings "/stats/security/waf/topk/{category}/groupings",
    waf_topk_metrics "/stats/security/waf/topk/{category}/metrics");
topk_routes!(false,
    shaping_topk_data "/stats/security/trafficshaping/topk/{category}/data",
    shaping_topk_head "/stats/security/trafficshaping/topk/{category}",
    shaping_topk_dimensions "/stats/security/trafficshaping/topk/{category}/dimensions",
    shaping_topk_groupings "/stats/security/trafficshaping/topk/{category}/groupings",
    shaping_topk_metrics "/stats/security/trafficshaping/topk/{category}/metrics");

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(delivery_data))
        .routes(routes!(delivery_head))
        .routes(routes!(delivery_dimensions))
        .routes(routes!(delivery_groupings))
        .routes(routes!(delivery_metrics))
        .routes(routes!(topk_url_data))
        .routes(routes!(topk_url_head))
        .routes(routes!(topk_url_dimensions))
        .routes(routes!(topk_url_groupings))
        .routes(routes!(topk_url_metrics))
        .routes(routes!(events_data))
        .routes(routes!(events_head))
        .routes(routes!(events_dimensions))
        .routes(routes!(waf_trends_data))
        .routes(routes!(waf_trends_head))
        .routes(routes!(waf_trends_dimensions))
        .routes(routes!(waf_trends_groupings))
        .routes(routes!(waf_trends_metrics))
        .routes(routes!(request_trends_data))
        .routes(routes!(request_trends_head))
        .routes(routes!(request_trends_dimensions))
        .routes(routes!(request_trends_groupings))
        .routes(routes!(request_trends_metrics))
        .routes(routes!(shaping_trends_data))
        .routes(routes!(shaping_trends_head))
        .routes(routes!(shaping_trends_dimensions))
        .routes(routes!(shaping_trends_groupings))
        .routes(routes!(shaping_trends_metrics))
        .routes(routes!(waf_topk_data))
        .routes(routes!(waf_topk_head))
        .routes(routes!(waf_topk_dimensions))
        .routes(routes!(waf_topk_groupings))
        .routes(routes!(waf_topk_metrics))
        .routes(routes!(shaping_topk_data))
        .routes(routes!(shaping_topk_head))
        .routes(routes!(shaping_topk_dimensions))
        .routes(routes!(shaping_topk_groupings))
        .routes(routes!(shaping_topk_metrics))
        .merge(ingest::router())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped_exactly_as_serde_json_reads_them() {
        for s in ["", "plain", "a\"b", "back\\slash", "line\nbreak\r\t", "\u{0}\u{1f}ctl", "é\"ü\\", "\u{2028}end\""]
        {
            let mut out = String::new();
            json_str(&mut out, s);
            assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s, "{out}");
        }
    }

    #[test]
    fn written_times_match_chrono_and_parse_back() {
        for ms in [-62_167_219_200_000, -1, 0, 951_782_400_999, 1_795_000_000_123, 253_402_300_799_999] {
            let mut out = String::from("x");
            write_time(&mut out, ms);
            let reference = chrono::DateTime::from_timestamp_millis(ms).unwrap().format("%Y-%m-%dT%H:%M:%S");
            assert_eq!(&out[1..], reference.to_string(), "{ms}");
            assert_eq!(edge_api::stats::parse_time(&out[1..]).unwrap(), ms - ms.rem_euclid(1000));
        }
        // Outside the years 0 to 9999: the general path.
        assert_eq!(format_time(253_402_300_800_000), "10000-01-01T00:00:00");
        assert_eq!(format_time(-62_167_219_200_001), "-001-12-31T23:59:59");
        // Far outside any calendar a query can name: no overflow (a panic would fail the test).
        let _ = format_time(i64::MIN / 4);
    }
}
