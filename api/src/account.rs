//! The customer account and its features.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Account {
    /// The customer name; it cannot change.
    pub name: String,
    pub display_name: String,
    pub contact_email: String,
    /// IANA time zone name, e.g. `Europe/Berlin`; used by the console to show local times.
    pub timezone: String,
    /// ISO 8601 with milliseconds, UTC.
    pub created: String,
    pub uri: String,
}

/// Body of PUT /account. Absent fields keep their value; a non-null `name` must equal the current one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AccountUpdate {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub display_name: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 254))]
    pub contact_email: Option<String>,
    #[serde(default)]
    pub timezone: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Feature {
    pub id: String,
    pub name: String,
    pub description: String,
    pub enabled: bool,
}
