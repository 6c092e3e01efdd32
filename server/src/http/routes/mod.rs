//! Every API route, registered once: the axum router and the OpenAPI document are built from the same
//! registration, so the document cannot drift from the routes.

mod account;
mod alerts;
mod audit;
mod networklists;
mod otp;
mod passwords;
mod properties;
pub mod purge;
mod roles;
mod sessions;
mod stats;
mod tasks;
mod tokens;
mod users;

use utoipa::{
    Modify, OpenApi,
    openapi::{
        self,
        path::{Parameter, ParameterBuilder, ParameterIn},
        security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
    },
};
use utoipa_axum::router::OpenApiRouter;

use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Edge Delivery Management and Statistics API",
        description = "The API behind Edge Console. Every path is relative to `/{customer}/v1`. Non-2xx answers carry \
                       `{\"type\", \"message\", \"details\"}` (cache purge and transactions keep their own body). \
                       A change authenticated by the session cookie must come from the console's own origin \
                       (`Origin` equal to the `Host`), else 403 `forbidden`.",
        version = "v1"
    ),
    modifiers(&Security),
    security(("basic" = []), ("session" = [])),
    tags(
        (name = "sessions", description = "Log in and out; session keep-alive"),
        (name = "users", description = "Users, roles and identity sources"),
        (name = "two-factor", description = "Two-factor authentication (TOTP, RFC 6238)"),
        (name = "passwords", description = "Password change and reset"),
        (name = "tasks", description = "Long-running changes and their progress"),
        (name = "account", description = "The customer account and its features"),
        (name = "network lists", description = "IP and geo lists referenced by security rules"),
        (name = "properties", description = "Property configuration with optimistic concurrency and history"),
        (name = "delivery statistics", description = "Access-log statistics and the top URLs"),
        (name = "security statistics", description = "Security events, WAF and traffic-shaping trends and top-K reports"),
        (name = "ingestion", description = "Access logs and security events in (NDJSON)"),
        (name = "purge", description = "Cache purge and its transactions (with their own code/description bodies)"),
        (name = "audit", description = "The audit log: every change, failed login and lockout"),
        (name = "tokens", description = "API tokens for automation: scoped, optionally expiring and limited to client ranges"),
        (name = "alerts", description = "Alert rules, channels, silences, their events and the incident timeline"),
    )
)]
struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "basic",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Basic).build()),
        );
        components.add_security_scheme(
            "token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("edge_ and 46 characters of 0-9A-Za-z")
                    .description(Some(
                        "An API token (POST /tokens). Each operation names the one scope a token needs for it; a \
                         token without it answers 403 `insufficient_scope`, naming it.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                edge_api::paths::SESSION_COOKIE,
                "Session id from POST /sessions",
            ))),
        );
    }
}

/// The API routes under `/{customer}/v1`, with their OpenAPI document.
pub fn api() -> OpenApiRouter<AppState> {
    let v1 = OpenApiRouter::new()
        .merge(sessions::router())
        .merge(users::router())
        .merge(otp::router())
        .merge(passwords::router())
        .merge(roles::router())
        .merge(tasks::router())
        .merge(account::router())
        .merge(audit::router())
        .merge(networklists::router())
        .merge(purge::router())
        .merge(properties::router())
        .merge(stats::router())
        .merge(tokens::router())
        .merge(alerts::router());
    OpenApiRouter::with_openapi(ApiDoc::openapi()).nest(&format!("/{{customer}}/{}", edge_api::paths::VERSION), v1)
}

/// The OpenAPI document, with the `{customer}` path parameter and the answers every operation can get from the
/// layers around its handler declared on every operation.
pub fn openapi_document() -> openapi::OpenApi {
    let (_, mut doc) = api().split_for_parts();
    let customer: Parameter = ParameterBuilder::new()
        .name("customer")
        .parameter_in(ParameterIn::Path)
        .required(openapi::Required::True)
        .description(Some("Customer (account) name"))
        .schema(Some(openapi::ObjectBuilder::new().schema_type(openapi::schema::Type::String)))
        .build();
    for (path, item) in doc.paths.paths.iter_mut() {
        for (method, op) in [
            ("GET", &mut item.get),
            ("PUT", &mut item.put),
            ("POST", &mut item.post),
            ("DELETE", &mut item.delete),
            ("HEAD", &mut item.head),
            ("PATCH", &mut item.patch),
            ("OPTIONS", &mut item.options),
            ("TRACE", &mut item.trace),
        ]
        .into_iter()
        .filter_map(|(m, op)| op.as_mut().map(|op| (m, op)))
        {
            let params = op.parameters.get_or_insert_with(Vec::new);
            if !params.iter().any(|p| p.name == "customer") {
                params.insert(0, customer.clone());
            }
            add_common_responses(op);
            tighten_parameters(path, op);
            token_security(path, method, op);
        }
    }
    doc
}

/// Names the scope an API token needs for the operation (edge-api's table) as a requirement of the `token`
/// scheme beside Basic credentials and the session; operations no token may call keep the other two only.
fn token_security(path: &str, method: &str, op: &mut openapi::path::Operation) {
    let route = path.strip_prefix(&format!("/{{customer}}/{}", edge_api::paths::VERSION)).unwrap_or(path);
    if let edge_api::TokenAccess::Scope(scope) = edge_api::token_access(method, route) {
        let security = op.security.get_or_insert_with(|| {
            vec![
                openapi::security::SecurityRequirement::new("basic", Vec::<String>::new()),
                openapi::security::SecurityRequirement::new("session", Vec::<String>::new()),
            ]
        });
        security.push(openapi::security::SecurityRequirement::new("token", [scope.as_str()]));
    }
}

/// Narrows the schemas of parameters whose accepted values the handlers check themselves (they are all read
/// as text, to answer bad values with a message of our own): paging bounds everywhere, and the statistics
/// vocabulary of each statistics path. Clients and contract fuzzers then know what a valid request is.
fn tighten_parameters(path: &str, op: &mut openapi::path::Operation) {
    for param in op.parameters.iter_mut().flatten() {
        match (param.parameter_in.clone(), param.name.as_str()) {
            (ParameterIn::Query, "page") => param.schema = Some(integer(1, None).into()),
            (ParameterIn::Query, "count") => {
                param.schema = Some(integer(1, Some(crate::http::paging::MAX_COUNT)).into())
            }
            // An entity tag as GET gave it; `*` and an empty value are answered 428.
            (ParameterIn::Header, "If-Match") => {
                param.schema = Some(
                    openapi::ObjectBuilder::new()
                        .schema_type(openapi::schema::Type::String)
                        .pattern(Some("^(?:W/)?\"[!#-~]+\"$"))
                        .into(),
                )
            }
            (ParameterIn::Header, "Idempotency-Key") => {
                param.schema = Some(
                    openapi::ObjectBuilder::new()
                        .schema_type(openapi::schema::Type::String)
                        .min_length(Some(1))
                        .max_length(Some(stats::MAX_IDEMPOTENCY_KEY))
                        .pattern(Some("^[ -~]+$"))
                        .into(),
                )
            }
            _ => {
                if let Some(rule) = stats::parameter_rule(path, &param.name) {
                    param.schema = Some(rule.schema.into());
                    param.required = if rule.required { openapi::Required::True } else { openapi::Required::False };
                    param.description = Some(rule.description);
                }
            }
        }
    }
}

fn integer(minimum: u64, maximum: Option<u64>) -> openapi::Object {
    openapi::ObjectBuilder::new()
        .schema_type(openapi::schema::Type::Integer)
        .format(Some(openapi::SchemaFormat::KnownFormat(openapi::KnownFormat::Int64)))
        .minimum(Some(minimum as f64))
        .maximum(maximum.map(|m| m as f64))
        .build()
}

/// Answers that come from the shared layers rather than the handler (customer lookup, authentication, roles,
/// the same-origin check, login throttling, body limits, extractors), added where the operation does not
/// describe them itself.
/// A query's parameters are each bounded where they have a bound, but together they may still pass the limit on
/// the request line (checked before any handler).
const URI_TOO_LONG: &str = "The request's path and query are over 16,384 bytes (`uri_too_long`)";
const _: () = assert!(edge_api::limits::MAX_URI_BYTES == 16_384, "URI_TOO_LONG states the limit");
/// The same for a header parameter past the limit on one header value.
const HEADER_TOO_LARGE: &str = "A header value is over 8,192 bytes (`header_too_large`)";
const _: () = assert!(edge_api::limits::MAX_HEADER_VALUE_BYTES == 8_192, "HEADER_TOO_LARGE states the limit");

fn add_common_responses(op: &mut openapi::path::Operation) {
    // Purge and its transactions answer every failure in their own body and document each status themselves.
    if op.tags.as_ref().is_some_and(|tags| tags.iter().any(|t| t == "purge")) {
        return;
    }
    let public = op.security.as_ref().is_some_and(|reqs| reqs.iter().all(|r| *r == Default::default()));
    let takes_input = op.request_body.is_some() || op.parameters.as_ref().is_some_and(|p| p.len() > 1);
    let mut common: Vec<(&str, &str)> =
        vec![("404", "No such customer, or no such resource (also a resource of another customer)")];
    if takes_input {
        common.push((
            "400",
            "Malformed request: bad query or path parameters (`invalid_parameter`) or JSON (`invalid_json`)",
        ));
    }
    if !public {
        common.extend([
            ("401", "Missing or wrong credentials, an expired session, or an unknown (`token_invalid`) or expired (`token_expired`) API token"),
            (
                "403",
                "The caller's role does not allow this, a change with the session cookie came from another origin, or \
                 an API token lacks the scope (`insufficient_scope`) or is used from outside its ranges \
                 (`address_not_allowed`)",
            ),
            ("429", "Too many failed logins with these Basic credentials; see Retry-After"),
            ("503", "Too many password checks at once (`overloaded`); see Retry-After"),
        ]);
    }
    if op.request_body.is_some() {
        common.extend([("413", "The body is over the size limit"), ("415", "The body's Content-Type is not accepted")]);
    }
    let query = op
        .parameters
        .as_ref()
        .is_some_and(|ps| ps.iter().any(|p| matches!(p.parameter_in, openapi::path::ParameterIn::Query)));
    if query {
        common.push(("414", URI_TOO_LONG));
    }
    let header = op
        .parameters
        .as_ref()
        .is_some_and(|ps| ps.iter().any(|p| matches!(p.parameter_in, openapi::path::ParameterIn::Header)));
    if header {
        common.push(("431", HEADER_TOO_LARGE));
    }
    for (status, description) in common {
        op.responses.responses.entry(status.to_string()).or_insert_with(|| {
            openapi::ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    openapi::ContentBuilder::new().schema(Some(openapi::Ref::from_schema_name("ErrorBody"))).build(),
                )
                .build()
                .into()
        });
    }
}
