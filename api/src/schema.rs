//! What request bodies accept, as JSON Schema for the OpenAPI document (server only, `openapi` feature): the
//! patterns, enums and bounds of the validators beside the wire types, and request-only schemas where a body
//! accepts less than the type it is read into (a new user needs a username, a role and a password; a password
//! change needs a password that meets the policy). Rules across fields are stated in the descriptions.

use utoipa::{
    PartialSchema, ToSchema,
    openapi::{ArrayBuilder, ObjectBuilder, OneOfBuilder, RefOr, Schema, schema::Type},
};

use crate::{COUNTRY_CODES, MATCH_MODES, PASSWORD_MIN_LENGTH, PURGE_ACTIONS, config::schemas::LABEL, limits};

/// An IPv4 octet without leading zeros.
const OCTET: &str = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
/// An IPv6 address in its usual forms (without an embedded IPv4 part or a zone).
const IPV6: &str = concat!(
    "(?:(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|(?:[0-9a-fA-F]{1,4}:){1,7}:",
    "|(?:[0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}|(?:[0-9a-fA-F]{1,4}:){1,5}(?::[0-9a-fA-F]{1,4}){1,2}",
    "|(?:[0-9a-fA-F]{1,4}:){1,4}(?::[0-9a-fA-F]{1,4}){1,3}|(?:[0-9a-fA-F]{1,4}:){1,3}(?::[0-9a-fA-F]{1,4}){1,4}",
    "|(?:[0-9a-fA-F]{1,4}:){1,2}(?::[0-9a-fA-F]{1,4}){1,5}|[0-9a-fA-F]{1,4}:(?::[0-9a-fA-F]{1,4}){1,6}",
    "|:(?:(?::[0-9a-fA-F]{1,4}){1,7}|:))"
);

fn text() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

/// A name of 1 to 200 characters without control characters, not only spaces.
pub fn display_name() -> Schema {
    text()
        .pattern(Some("^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$"))
        .max_length(Some(200))
        .into()
}

/// At most 200 characters without control characters (may be empty).
pub fn optional_display_name() -> Schema {
    text().pattern(Some(NO_CONTROL)).max_length(Some(200)).into()
}

/// The entries of a network list of one type, each once (`networklists::normalize_entry`), at most 5,000.
fn entries(item: Schema) -> Schema {
    ArrayBuilder::new()
        .items(RefOr::T(item))
        .max_items(Some(5000))
        .description(Some("Initial entries (at most 5,000)."))
        .into()
}

/// An entry of an IP list: an IPv4 or IPv6 address, or a CIDR range whose address has no bits set past the
/// prefix (`10.0.0.0/8`, not `10.1.2.3/8`).
pub fn ip_entry() -> Schema {
    let v4 = format!("{OCTET}(?:\\.{OCTET}){{3}}(?:/(?:3[0-2]|[12][0-9]|[0-9]))?");
    let v6 = format!("{IPV6}(?:/(?:12[0-8]|1[01][0-9]|[1-9][0-9]|[0-9]))?");
    text()
        .pattern(Some(format!("^(?:{v4}|{v6})$")))
        .description(Some(
            "An IPv4 or IPv6 address, or a CIDR range with no address bits set past its prefix (10.0.0.0/8).",
        ))
        .into()
}

/// An entry of a GEO list: an ISO 3166-1 alpha-2 code (upper case; lower case is accepted too).
pub fn country_code() -> Schema {
    text().enum_values(Some(COUNTRY_CODES.to_vec())).into()
}

/// Body of POST /config/networklists: an IP list with IP entries, or a GEO list with country codes.
pub struct NewNetworkListSchema;

impl PartialSchema for NewNetworkListSchema {
    fn schema() -> RefOr<Schema> {
        let variant = |list_type: &str, entry: Schema| -> Schema {
            ObjectBuilder::new()
                .property("name", display_name())
                .required("name")
                .property("type", text().enum_values(Some([list_type])))
                .required("type")
                .property("description", optional_display_name_long())
                .property("list", entries(entry))
                .into()
        };
        OneOfBuilder::new()
            .item(variant("IP", ip_entry()))
            .item(variant("GEO", country_code()))
            .description(Some(
                "Body of POST /config/networklists: `type` IP with IP entries, or GEO with country codes.",
            ))
            .into()
    }
}

impl ToSchema for NewNetworkListSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "NewNetworkList".into()
    }
}

/// A description: at most [`limits::MAX_DESCRIPTION_CHARS`] characters.
fn optional_display_name_long() -> Schema {
    text().max_length(Some(limits::MAX_DESCRIPTION_CHARS)).into()
}

/// A role reference: `admin`, `operator` or `viewer`.
fn role_link() -> Schema {
    ObjectBuilder::new()
        .property("id", text().enum_values(Some(crate::access::Role::ALL.map(crate::access::Role::as_str))))
        .required("id")
        .property("uri", text())
        .into()
}

/// A username (`admin::check_username`): 1 to 128 characters, no colon or control characters, no spaces at
/// either end.
pub fn username() -> Schema {
    username_text().into()
}

fn username_text() -> ObjectBuilder {
    const C: &str = "[^:\\x00-\\x1f\\x7f-\\x9f]";
    const EDGE: &str = "[^:\\s\\x00-\\x1f\\x7f-\\x9f]";
    text()
        .pattern(Some(format!("^{EDGE}(?:{C}*{EDGE})?$")))
        .max_length(Some(limits::MAX_USERNAME_CHARS))
        .description(Some("Not a reserved name (`system`)."))
}

/// An e-mail address as `is_email` takes it (a plain local part, a dotted domain).
const EMAIL: &str = "^[!#-?A-~]{1,64}@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)+$";
/// A phone number as `is_phone` takes it: an optional `+`, 5 to 15 digits, spaces, `-`, `(`, `)`.
const PHONE: &str = "^\\+?[ ()-]*(?:[0-9][ ()-]*){5,15}$";
/// An anchored pattern that also matches the empty string.
fn or_empty(pattern: &str) -> String {
    format!("^(?:{})?$", &pattern[1..pattern.len() - 1])
}

/// Text without control characters.
const NO_CONTROL: &str = "^[^\\x00-\\x1f\\x7f-\\x9f]*$";

/// A new password: at least [`PASSWORD_MIN_LENGTH`] characters.
fn new_password() -> Schema {
    text()
        .min_length(Some(PASSWORD_MIN_LENGTH))
        // At most MAX_PASSWORD_BYTES bytes: this many characters are that many bytes whatever they are.
        .max_length(Some(limits::MAX_PASSWORD_BYTES / 4))
        .description(Some(
            "At least 12 characters and at most 1,024 bytes of UTF-8, not the username (compared without case).",
        ))
        .into()
}

/// Body of POST /users: a new local user (username, role and initial password), or a user of a remote identity
/// source (username and role only).
pub struct NewUserSchema;

impl PartialSchema for NewUserSchema {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .property("username", username())
            .required("username")
            .property("role", role_link())
            .required("role")
            .property("password", new_password())
            .property("full_name", optional_display_name())
            .property("email", text().pattern(Some(EMAIL)).max_length(Some(254)))
            .property("phone_number", text().pattern(Some(PHONE)).max_length(Some(limits::MAX_PHONE_CHARS)))
            .property("enabled", ObjectBuilder::new().schema_type(Type::Boolean))
            .property("source", ObjectBuilder::new().property("id", text()).required("id").property("uri", text()))
            .description(Some(
                "Body of POST /users. A local user (source absent or `local`) needs a password; a user of a remote \
                 identity source (an id from GET /idps) holds only a role: password, full_name, email and \
                 phone_number must then be absent or empty.",
            ))
            .into()
    }
}

impl ToSchema for NewUserSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "NewUser".into()
    }
}

/// Body of PUT /users/{user_id}: what changes (absent or null fields keep their value).
pub struct UserUpdateSchema;

impl PartialSchema for UserUpdateSchema {
    fn schema() -> RefOr<Schema> {
        let nullable = |schema: ObjectBuilder| -> Schema {
            OneOfBuilder::new().item(schema).item(ObjectBuilder::new().schema_type(Type::Null)).into()
        };
        ObjectBuilder::new()
            .property("username", nullable(username_text()))
            .property("role", OneOfBuilder::new().item(role_link()).item(ObjectBuilder::new().schema_type(Type::Null)))
            .property("full_name", nullable(text().pattern(Some(NO_CONTROL)).max_length(Some(200))))
            .property("email", nullable(text().pattern(Some(or_empty(EMAIL))).max_length(Some(254))))
            .property(
                "phone_number",
                nullable(text().pattern(Some(or_empty(PHONE))).max_length(Some(limits::MAX_PHONE_CHARS))),
            )
            .property("enabled", nullable(ObjectBuilder::new().schema_type(Type::Boolean)))
            .property(
                "password",
                nullable(text().max_length(Some(0)).description(Some(
                    "Must be absent or empty: a password changes only through the password resource.",
                ))),
            )
            .property(
                "source",
                OneOfBuilder::new()
                    .item(ObjectBuilder::new().property("id", text()).required("id").property("uri", text()))
                    .item(ObjectBuilder::new().schema_type(Type::Null)),
            )
            .description(Some(
                "Body of PUT /users/{user_id}: absent or null fields keep their value; read-only fields of a user \
                 as read are accepted and ignored. `source`, when sent, must be the user's own (it cannot change); \
                 a user of a remote identity source changes only its role; the username must be no other user's.",
            ))
            .into()
    }
}

impl ToSchema for UserUpdateSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "UserUpdate".into()
    }
}

/// The scopes of a token: names from the scope list, each once.
fn token_scopes() -> Schema {
    let names: Vec<&str> = crate::Scope::ALL.iter().map(|s| s.as_str()).collect();
    ArrayBuilder::new()
        .items(RefOr::T(text().enum_values(Some(names)).into()))
        .min_items(Some(1))
        .max_items(Some(crate::Scope::ALL.len()))
        .unique_items(true)
        .description(Some("Scopes, each within what the role of the caller allows (see the scope of each operation)."))
        .into()
}

/// Client ranges of a token: addresses or CIDR ranges without host bits set, at most 100.
fn token_cidrs() -> Schema {
    ArrayBuilder::new()
        .items(RefOr::T(ip_entry()))
        .max_items(Some(crate::tokens::MAX_ALLOWED_CIDRS))
        .description(Some("Client addresses or ranges it works from; empty: anywhere."))
        .into()
}

/// A token's expiry: a time with its zone, in the future and at most 3,650 days ahead (stated in words: JSON
/// Schema cannot compare with the clock), or null for never.
fn token_expiry() -> Schema {
    OneOfBuilder::new()
        .item(
            text()
                .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::DateTime)))
                .max_length(Some(64)),
        )
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .description(Some(
            "When it stops working: an RFC 3339 time after now and at most 3,650 days ahead; null: never.",
        ))
        .into()
}

/// Body of POST /tokens.
pub struct NewTokenSchema;

impl PartialSchema for NewTokenSchema {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .property("name", display_name())
            .required("name")
            .property("scopes", token_scopes())
            .required("scopes")
            .property("expires", token_expiry())
            .property("allowed_cidrs", token_cidrs())
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)))
            .description(Some("Body of POST /tokens: a token of the caller."))
            .into()
    }
}

impl ToSchema for NewTokenSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "NewToken".into()
    }
}

/// Body of PUT /tokens/{token_id}: what changes.
pub struct TokenUpdateSchema;

impl PartialSchema for TokenUpdateSchema {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .property("name", display_name())
            .property("scopes", token_scopes())
            .property("expires", token_expiry())
            .property("allowed_cidrs", token_cidrs())
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)))
            .description(Some(
                "Body of PUT /tokens/{token_id}: absent fields keep their value; `expires` null makes it never expire.",
            ))
            .into()
    }
}

impl ToSchema for TokenUpdateSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "TokenUpdate".into()
    }
}

/// Body of PUT /users/{user_id}/password: the new password.
pub struct PasswordChangeSchema;

impl PartialSchema for PasswordChangeSchema {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .property("password", new_password())
            .required("password")
            .property("reset_uri", text().description(Some("Ignored")))
            .property("uri", text().description(Some("Ignored")))
            .description(Some("Body of PUT /users/{user_id}/password."))
            .into()
    }
}

impl ToSchema for PasswordChangeSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "PasswordChange".into()
    }
}

/// Body of POST /cache/purge.
pub struct PurgeRequestSchema;

impl PartialSchema for PurgeRequestSchema {
    fn schema() -> RefOr<Schema> {
        let uri = ObjectBuilder::new()
            .property(
                "uri_pattern",
                text()
                    .max_length(Some(limits::MAX_URI_CHARS))
                    .pattern(Some(format!(
                        "^ *(?:https?://)?(?:\\*\\.{LABEL}(?:\\.{LABEL})+|{LABEL}(?:\\.{LABEL})*)(?:/[^\\s\\x00-\\x1f\\x7f-\\x9f]*)? *$"
                    )))
                    .description(Some(
                        "`[http[s]://]host[/path]`. The host must be served by one of the customer's properties \
                         (a wildcard `*.x` must be one of their host patterns); EXACT_LITERAL needs a path beyond \
                         `/`.",
                    )),
            )
            .required("uri_pattern")
            .property("match_mode", text().enum_values(Some(MATCH_MODES.to_vec())))
            .required("match_mode")
            .property(
                "cache_key_modifier_regex",
                text().pattern(Some("^[^*]*\\*?$")).min_length(Some(1)).max_length(Some(limits::MAX_URI_CHARS)).description(Some(
                    "PREFIX_LITERAL only; a wildcard `*` only at the end.",
                )),
            );
        let body = ObjectBuilder::new()
            .property("action", text().enum_values(Some(PURGE_ACTIONS.to_vec())))
            .required("action")
            .property("uris", ArrayBuilder::new().items(uri).min_items(Some(1)))
            .required("uris");
        ObjectBuilder::new()
            .property("purge_request", body)
            .required("purge_request")
            .description(Some("Body of POST /cache/purge. At most 2 requests a second per customer."))
            .into()
    }
}

impl ToSchema for PurgeRequestSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "PurgeRequest".into()
    }
}

/// The rows of a statistics answer: arrays of cells in column order, each a string, a number or null.
pub fn stats_rows() -> Schema {
    use utoipa::openapi::schema::SchemaType;
    let cell = ObjectBuilder::new().schema_type(SchemaType::from_iter([
        Type::String,
        Type::Integer,
        Type::Number,
        Type::Null,
    ]));
    ArrayBuilder::new().items(ArrayBuilder::new().items(cell)).into()
}
