//! Sessions, users, roles, identity sources, two-factor and passwords.

use serde::{Deserialize, Serialize};

use crate::paging::Paged;

/// A reference to another resource: `{id, uri}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Link {
    pub id: String,
    #[serde(default)]
    pub uri: String,
}

/// A login session. Its `id` is the value of the `authtoken` cookie and must be kept secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Session {
    /// When the session becomes invalid unless used again: ISO 8601 with milliseconds and `Z`.
    pub expires: String,
    pub id: String,
    pub uri: String,
    pub user: Link,
}

/// One of the caller's own live sessions, as `GET /sessions` lists them (never its secret id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionInfo {
    /// A public reference: the first 16 hex digits of the SHA-256 of the session id (as in the audit log).
    #[serde(rename = "ref")]
    pub reference: String,
    /// ISO 8601 with milliseconds and `Z`, as every time of the sessions resource.
    pub created: String,
    pub last_access: String,
    pub expires: String,
    /// True for the session that authenticated this request.
    pub current: bool,
    /// Its address under `/sessions/refs/`, where DELETE ends it.
    pub uri: String,
}

/// The caller's own live sessions, most recently used first (at most 100), and how many there are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionList {
    pub items: Vec<SessionInfo>,
    pub total: u64,
}

/// Body of PUT on a session. No field can be set; `id` names the session that PUT /sessions/current makes
/// current. Unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionModel {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub expires: Option<String>,
    #[serde(default)]
    pub uri: Option<String>,
    #[serde(default)]
    pub user: Option<Link>,
}

// The body of GET /roles/{role_id}; the role itself is `crate::access::Role`.
/// A role: `admin`, `operator` or `viewer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = Role))]
pub struct RoleBody {
    pub name: String,
    pub id: String,
    pub uri: String,
}

/// An identity source. `local` (accounts held in the customer account) always exists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IdentitySource {
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub configuration: serde_json::Map<String, serde_json::Value>,
    pub id: String,
    pub uri: String,
}

/// Paged collection envelope of identity sources and roles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LinkPage {
    pub total: u64,
    pub page_index: u64,
    pub has_more: bool,
    pub next_uri: String,
    pub prev_uri: String,
    pub uri: String,
    pub items: Vec<Link>,
}

/// Blank, not null, at the ends: the shape the API has always given these two collections.
impl From<Paged<Link>> for LinkPage {
    fn from(p: Paged<Link>) -> Self {
        LinkPage {
            total: p.total,
            page_index: p.page_index,
            has_more: p.has_more,
            next_uri: p.next_uri.unwrap_or_default(),
            prev_uri: p.prev_uri.unwrap_or_default(),
            uri: p.uri,
            items: p.items,
        }
    }
}

/// A user of the customer account. For a remote identity source only the role association is held, and the
/// detail fields are empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct User {
    pub id: String,
    pub uri: String,
    pub username: String,
    pub full_name: String,
    pub email: String,
    pub phone_number: String,
    pub enabled: bool,
    pub role: Link,
    pub source: Link,
    pub otp_enabled: bool,
    pub otp_uri: String,
    pub password_uri: String,
}

/// Body of POST /users and PUT /users/{id}. Absent fields keep their value on PUT; `uri` fields of
/// references are ignored. Read-only fields of [`User`] (id, uri, otp_enabled, …) are accepted and ignored so
/// that a client can send back what it read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserInput {
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 128))]
    pub username: Option<String>,
    /// Initial password of a new local user (POST only; use the password resource to change it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(max_length = 1024))]
    pub password: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub full_name: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 254))]
    pub email: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 32))]
    pub phone_number: Option<String>,
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub role: Option<Link>,
    #[serde(default)]
    pub source: Option<Link>,
}

/// Envelope of GET /users and GET /users/{id}: `{has_more, uri, items}`, plus `total` and `page_index` so a
/// client can page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserPage {
    pub has_more: bool,
    pub uri: String,
    pub items: Vec<User>,
    #[serde(default)]
    pub total: u64,
    #[serde(default)]
    pub page_index: u64,
}

impl From<Paged<User>> for UserPage {
    fn from(p: Paged<User>) -> Self {
        UserPage { has_more: p.has_more, uri: p.uri, items: p.items, total: p.total, page_index: p.page_index }
    }
}

/// Two-factor settings of a user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OtpSettings {
    pub pairing_uri: String,
    pub uri: String,
    pub enabled: bool,
    pub seeds_uri: String,
}

/// Two-factor pairing: two sequential tokens computed from the seed `seed_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OtpPairing {
    #[serde(default)]
    pub first_token: String,
    #[serde(default)]
    pub second_token: String,
    #[serde(default)]
    pub seed_id: String,
    #[serde(default)]
    pub uri: String,
}

/// A freshly generated two-factor seed (base32), to be entered in an authenticator app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OtpSeed {
    pub seed: String,
    pub id: String,
}

/// Password resource. GET answers `password` as an empty string; PUT sends the new value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Password {
    /// At most 1,024 bytes. (No `maxLength` in the schema: the contract fuzzer then generates long valid
    /// passwords and changes its own administrator's password under its feet.)
    #[serde(default)]
    pub password: String,
    #[serde(default)]
    pub reset_uri: String,
    #[serde(default)]
    pub uri: String,
}

/// Body of PUT /password-resets/{token}: the new password.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PasswordResetCompletion {
    #[cfg_attr(feature = "openapi", schema(max_length = 1024))]
    pub password: String,
}

/// The password policy of the local identity source; the server enforces it and the console shows it.
pub const PASSWORD_MIN_LENGTH: usize = 12;

/// Checks a new password against the policy: at least [`PASSWORD_MIN_LENGTH`] characters, at most
/// [`crate::limits::MAX_PASSWORD_BYTES`] bytes, and not equal to the username. Returns the problem in words.
pub fn check_password_policy(username: &str, password: &str) -> Result<(), String> {
    if password.len() > crate::limits::MAX_PASSWORD_BYTES {
        return Err(format!("The password must have at most {} bytes.", crate::limits::MAX_PASSWORD_BYTES));
    }
    if password.chars().count() < PASSWORD_MIN_LENGTH {
        return Err(format!("The password must have at least {PASSWORD_MIN_LENGTH} characters."));
    }
    if password.eq_ignore_ascii_case(username) {
        return Err("The password must not be the username.".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_policy_refuses_short_and_username_passwords() {
        assert!(check_password_policy("alice", "short").is_err());
        assert!(check_password_policy("alice@example.com", "ALICE@example.com").is_err());
        assert!(check_password_policy("alice", "correct horse battery").is_ok());
        // Twelve characters counted as characters, not bytes.
        assert!(check_password_policy("alice", "ééééééééééé").is_err());
        assert!(check_password_policy("alice", "éééééééééééé").is_ok());
        assert!(check_password_policy("alice", &"x".repeat(1024)).is_ok());
        assert!(check_password_policy("alice", &"x".repeat(1025)).is_err());
    }

    #[test]
    fn user_input_ignores_read_only_fields_sent_back() {
        let v: UserInput =
            serde_json::from_str(r#"{"id":"x","uri":"/u","username":"bob","otp_enabled":true,"role":{"id":"viewer"}}"#)
                .unwrap();
        assert_eq!(v.username.as_deref(), Some("bob"));
        assert_eq!(v.role.map(|r| r.id), Some("viewer".to_string()));
    }
}
