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
    /// `user`, `session`, `property`, `network_list`, `purge`, `account`, `identity_source` or `token`.
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

/// Declares the operations once: the [`AuditOperation`] enum, their names as constants in [`op`] (for code
/// that writes records), and [`AUDIT_OPERATIONS`] with what each means.
macro_rules! audit_operations {
    ($($variant:ident $constant:ident $name:literal $label:literal,)*) => {
        /// An operation the audit log records.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum AuditOperation {
            $($variant),*
        }

        impl AuditOperation {
            pub const ALL: &[AuditOperation] = &[$(AuditOperation::$variant),*];

            /// Its name in records and filters (`user.create`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(AuditOperation::$variant => $name),*
                }
            }

            /// What it means, in words.
            pub const fn label(self) -> &'static str {
                match self {
                    $(AuditOperation::$variant => $label),*
                }
            }

            pub fn parse(s: &str) -> Option<AuditOperation> {
                AuditOperation::ALL.iter().copied().find(|o| o.as_str() == s)
            }
        }

        /// The operations' names, for code that writes records (`op::USER_CREATE`).
        pub mod op {
            $(pub const $constant: &str = $name;)*
        }

        /// Every operation the audit log records, with what it means; the console's filter offers them.
        pub const AUDIT_OPERATIONS: &[(&str, &str)] = &[$(($name, $label)),*];
    };
}

audit_operations! {
    SessionCreate SESSION_CREATE "session.create" "Logged in (a session was created)",
    SessionDelete SESSION_DELETE "session.delete" "Logged out, or a session was ended",
    SessionExpire SESSION_EXPIRE "session.expire" "A session expired",
    LoginFailure LOGIN_FAILURE "login.failure" "A login failed (wrong password or one-time code)",
    LoginLockout LOGIN_LOCKOUT "login.lockout" "Logins were locked after repeated failures",
    UserCreate USER_CREATE "user.create" "User created",
    UserUpdate USER_UPDATE "user.update" "User changed",
    UserRoleChange USER_ROLE_CHANGE "user.role_change" "User's role changed",
    UserDelete USER_DELETE "user.delete" "User deleted",
    PasswordChange PASSWORD_CHANGE "user.password.change" "Password changed by its user",
    PasswordReset PASSWORD_RESET "user.password.reset" "Password reset by an administrator",
    PasswordResetComplete PASSWORD_RESET_COMPLETE "user.password.reset_complete" "New password set from a reset link",
    OtpSeed OTP_SEED "user.otp.seed" "Two-factor seed generated",
    OtpPair OTP_PAIR "user.otp.pair" "Two-factor paired",
    OtpUnpair OTP_UNPAIR "user.otp.unpair" "Two-factor unpaired",
    PropertyCreate PROPERTY_CREATE "property.create" "Property created",
    ConfigUpdate CONFIG_UPDATE "property.config.update" "Property configuration updated",
    ConfigRollback CONFIG_ROLLBACK "property.config.rollback" "Property configuration rolled back to an earlier version",
    Purge PURGE "cache.purge" "Cache purged",
    ListCreate LIST_CREATE "networklist.create" "Network list created",
    ListUpdate LIST_UPDATE "networklist.update" "Network list renamed, described or (un)deprecated",
    ListDelete LIST_DELETE "networklist.delete" "Network list deleted",
    EntriesAdd ENTRIES_ADD "networklist.entries.add" "Entries added to a network list",
    EntryDelete ENTRY_DELETE "networklist.entry.delete" "Entry removed from a network list",
    EntriesClear ENTRIES_CLEAR "networklist.entries.clear" "Every entry removed from a network list",
    AccountUpdate ACCOUNT_UPDATE "account.update" "Account changed",
    CustomerCreate CUSTOMER_CREATE "customer.create" "Account created (command line)",
    IdentitySourceCreate IDENTITY_SOURCE_CREATE "identity_source.create" "Identity source registered (command line)",
    TokenCreate TOKEN_CREATE "token.create" "API token created",
    TokenUpdate TOKEN_UPDATE "token.update" "API token renamed, rescoped or limited",
    TokenRoll TOKEN_ROLL "token.roll" "API token given a new secret",
    TokenDelete TOKEN_DELETE "token.delete" "API token revoked",
    AlertRuleCreate ALERT_RULE_CREATE "alert.rule.create" "Alert rule created",
    AlertRuleUpdate ALERT_RULE_UPDATE "alert.rule.update" "Alert rule changed",
    AlertRuleDelete ALERT_RULE_DELETE "alert.rule.delete" "Alert rule deleted",
    AlertChannelCreate ALERT_CHANNEL_CREATE "alert.channel.create" "Alert channel created",
    AlertChannelUpdate ALERT_CHANNEL_UPDATE "alert.channel.update" "Alert channel changed (or its secret rotated)",
    AlertChannelDelete ALERT_CHANNEL_DELETE "alert.channel.delete" "Alert channel deleted",
    AlertChannelTest ALERT_CHANNEL_TEST "alert.channel.test" "Test notification sent to an alert channel",
    AlertSilenceCreate ALERT_SILENCE_CREATE "alert.silence.create" "Alert silence created",
    AlertSilenceDelete ALERT_SILENCE_DELETE "alert.silence.delete" "Alert silence deleted",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_has_one_name_that_reads_back() {
        let names: std::collections::BTreeSet<&str> = AuditOperation::ALL.iter().map(|o| o.as_str()).collect();
        assert_eq!(names.len(), AuditOperation::ALL.len());
        for o in AuditOperation::ALL {
            assert_eq!(AuditOperation::parse(o.as_str()), Some(*o));
        }
        assert_eq!(AuditOperation::parse("user"), None);
        assert_eq!(op::USER_CREATE, AuditOperation::UserCreate.as_str());
        assert_eq!(AUDIT_OPERATIONS.len(), AuditOperation::ALL.len());
    }
}
