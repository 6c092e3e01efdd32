//! The audit log: every change of the account's users, sessions, configuration, purges, network lists and
//! account, and every failed login and lockout, as administrators read it (`GET /audit`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::paging::paged;

/// `outcome` of a change that was made, or a login that went through.
pub const OUTCOME_SUCCESS: &str = "success";
/// `outcome` of a failed login or a lockout.
pub const OUTCOME_FAILURE: &str = "failure";

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditActor {
    /// `user`, or `system` for what the server or its operator did (expiry, retention, the command line).
    #[serde(rename = "type")]
    pub kind: String,
    /// The user's id; null for `system`, and for a failed login under a username that does not exist.
    #[serde(default)]
    pub id: Option<String>,
    /// The username (as typed, for a failed login), or `system`.
    pub name: String,
}

/// What a change was made to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditTarget {
    /// `user`, `session`, `property`, `network_list`, `purge`, `account` or `identity_source`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its id: a user or list id, a property name, a transaction id, the first 16 hex digits of a session's
    /// stored hash.
    pub id: String,
    /// What it was called when the change was made (username, list or property name).
    pub name: String,
    /// Its address in the API, while it still exists; null once it is gone (and for sessions).
    #[serde(default)]
    pub uri: Option<String>,
}

/// One record of the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditRecord {
    /// 16 random hex digits (records written before random ids keep their number).
    pub id: String,
    /// When, UTC, ISO 8601 with milliseconds.
    pub time: String,
    /// The customer (account) name.
    pub customer: String,
    pub actor: AuditActor,
    /// The client's address (behind trusted proxies, the one they forwarded); empty for `system`.
    pub source_address: String,
    /// What was done, e.g. `user.create`, `property.config.rollback` (see the operations in the API's description).
    pub operation: String,
    pub target: AuditTarget,
    /// `success` or `failure` (failed logins and lockouts).
    pub outcome: String,
    /// What changed: the fields and their new values, version numbers of a configuration change
    /// (`from_version`, `to_version`, `restored_version`), counts, the reason of a failure.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub details: Map<String, Value>,
}

paged!(
    /// A page of audit records, newest first.
    AuditPage,
    AuditRecord
);

/// Every operation the audit log records, with what it means; the console's filter offers them.
pub const AUDIT_OPERATIONS: &[(&str, &str)] = &[
    ("session.create", "Logged in (a session was created)"),
    ("session.delete", "Logged out, or a session was ended"),
    ("session.expire", "A session expired"),
    ("login.failure", "A login failed (wrong password or one-time code)"),
    ("login.lockout", "Logins were locked after repeated failures"),
    ("user.create", "User created"),
    ("user.update", "User changed"),
    ("user.role_change", "User's role changed"),
    ("user.delete", "User deleted"),
    ("user.password.change", "Password changed by its user"),
    ("user.password.reset", "Password reset by an administrator"),
    ("user.password.reset_complete", "New password set from a reset link"),
    ("user.otp.seed", "Two-factor seed generated"),
    ("user.otp.pair", "Two-factor paired"),
    ("user.otp.unpair", "Two-factor unpaired"),
    ("property.create", "Property created"),
    ("property.config.update", "Property configuration updated"),
    ("property.config.rollback", "Property configuration rolled back to an earlier version"),
    ("cache.purge", "Cache purged"),
    ("networklist.create", "Network list created"),
    ("networklist.update", "Network list renamed, described or (un)deprecated"),
    ("networklist.delete", "Network list deleted"),
    ("networklist.entries.add", "Entries added to a network list"),
    ("networklist.entry.delete", "Entry removed from a network list"),
    ("networklist.entries.clear", "Every entry removed from a network list"),
    ("account.update", "Account changed"),
    ("customer.create", "Account created (command line)"),
    ("identity_source.create", "Identity source registered (command line)"),
];
