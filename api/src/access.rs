//! Roles and what each may do: the permission table, and beside it the scopes of API tokens with the table of
//! which scope each operation needs; in one place for the server (which checks them), the console and the
//! command line (which show them).

/// Declares the permissions once: the [`Permission`] enum, its list, and a marker type per permission in
/// [`perm`] so that the server's handler signatures can name the permission they need.
macro_rules! permissions {
    ($($name:ident),* $(,)?) => {
        /// What a role may be allowed to do.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Permission {
            $($name),*
        }

        impl Permission {
            pub const ALL: &[Permission] = &[$(Permission::$name),*];
        }

        /// Permissions as types, so a handler's signature names the permission it needs.
        pub mod perm {
            pub trait Perm: Send + Sync + 'static {
                const PERMISSION: super::Permission;
            }
            $(
                pub struct $name;
                impl Perm for $name {
                    const PERMISSION: super::Permission = super::Permission::$name;
                }
            )*
        }
    };
}

permissions!(
    ReadStats,
    Ingest,
    ReadUsers,
    ManageUsers,
    ReadRoles,
    ResetPasswords,
    DisableOtp,
    ReadConfig,
    WriteConfig,
    Purge,
    ReadPurgeStatus,
    ReadLists,
    WriteLists,
    ReadTasks,
    ReadAccount,
    WriteAccount,
    ReadAudit,
    ReadAlerts,
    ManageAlerts,
);

/// A user's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Admin,
    Operator,
    Viewer,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Admin, Role::Operator, Role::Viewer];

    /// The role's id on the wire (`admin`, `operator`, `viewer`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Operator => "operator",
            Role::Viewer => "viewer",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// What the role allows, in words, for pickers and explanations.
    pub const fn description(self) -> &'static str {
        match self {
            Role::Admin => "Everything, including users, roles, two-factor resets and account changes.",
            Role::Operator => {
                "Everything except users, roles and account changes: configuration, purges, network lists, ingestion, alerts."
            }
            Role::Viewer => {
                "Read-only: statistics, configurations, network lists, tasks, purge status and alerts; their own password and two-factor."
            }
        }
    }

    /// The permission matrix (decisions.md): admin everything; operator everything except users, roles and
    /// account changes; viewer read-only statistics, configs, lists, tasks and purge status.
    pub fn allows(self, p: Permission) -> bool {
        use Permission::*;
        match self {
            Role::Admin => true,
            Role::Operator => !matches!(
                p,
                ReadUsers | ManageUsers | ReadRoles | ResetPasswords | DisableOtp | WriteAccount | ReadAudit
            ),
            Role::Viewer => {
                matches!(p, ReadStats | ReadConfig | ReadPurgeStatus | ReadLists | ReadTasks | ReadAlerts)
            }
        }
    }
}

/// The roles, with what each allows, for pickers and explanations.
pub const ROLES: [(&str, &str); 3] = [
    (Role::Admin.as_str(), Role::Admin.description()),
    (Role::Operator.as_str(), Role::Operator.description()),
    (Role::Viewer.as_str(), Role::Viewer.description()),
];

/// Declares the scopes of API tokens once: the [`Scope`] enum, each scope's name on the wire, the permission a
/// role needs to use it, and what it allows in words.
macro_rules! scopes {
    ($($variant:ident $name:literal $permission:ident $label:literal,)*) => {
        /// What an API token may be used for. Each operation of the API needs one scope ([`OPERATION_SCOPES`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Scope {
            $($variant),*
        }

        impl Scope {
            pub const ALL: &[Scope] = &[$(Scope::$variant),*];

            /// Its name on the wire (`stats:read`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Scope::$variant => $name),*
                }
            }

            /// The permission a role needs for a token of its user to hold this scope.
            pub const fn permission(self) -> Permission {
                match self {
                    $(Scope::$variant => Permission::$permission),*
                }
            }

            /// What it allows, in words, for pickers and explanations.
            pub const fn label(self) -> &'static str {
                match self {
                    $(Scope::$variant => $label),*
                }
            }

            pub fn parse(s: &str) -> Option<Scope> {
                Scope::ALL.iter().copied().find(|x| x.as_str() == s)
            }
        }
    };
}

scopes! {
    StatsRead "stats:read" ReadStats "Delivery statistics and the top URLs",
    SecurityRead "security:read" ReadStats "Security events, WAF and traffic-shaping statistics",
    Ingest "ingest" Ingest "Send access logs and security events",
    Purge "purge" Purge "Purge the cache and follow the purges",
    ListsRead "lists:read" ReadLists "Read network lists and their entries",
    ListsWrite "lists:write" WriteLists "Create, change and delete network lists and their entries",
    ConfigRead "config:read" ReadConfig "Read properties, their configurations and history",
    ConfigWrite "config:write" WriteConfig "Create properties and change their configurations",
    TasksRead "tasks:read" ReadTasks "Follow deployments (tasks)",
    AccountRead "account:read" ReadAccount "Read the account and its features",
    AccountWrite "account:write" WriteAccount "Change the account",
    UsersRead "users:read" ReadUsers "Read users, roles and identity sources",
    UsersWrite "users:write" ManageUsers "Create, change and delete users; reset passwords; turn two-factor off",
    AuditRead "audit:read" ReadAudit "Read the audit log",
    AlertsRead "alerts:read" ReadAlerts "Read alert rules, channels, silences, their events and the incident timeline",
    AlertsWrite "alerts:write" ManageAlerts "Create, change and delete alert rules, channels and silences; send tests",
}

/// How an operation may be called with an API token (`Authorization: Bearer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAccess {
    /// With a token that holds this scope (and a user whose role passes the operation's rule).
    Scope(Scope),
    /// Never with a token: a person's own credentials only (sessions, passwords, two-factor, tokens themselves),
    /// so that a token cannot make itself more or longer-lived credentials.
    Person,
    /// No credentials at all (logging in, completing a password reset).
    Public,
}

/// Every operation of the API (method and path under `/{customer}/v1`, as in the OpenAPI document) and how a
/// token may call it: the one table the server checks tokens against, beside the permission table above (a
/// token passes both: its scope here, and its user's role there). A `HEAD` not listed is its `GET`. An
/// operation missing from the table is refused to tokens; a test keeps the table to the document's operations.
pub const OPERATION_SCOPES: &[(&str, &str, TokenAccess)] = {
    use Scope::*;
    use TokenAccess::{Person as P, Public as O, Scope as S};
    &[
        ("GET", "/account", S(AccountRead)),
        ("PUT", "/account", S(AccountWrite)),
        ("GET", "/features", S(AccountRead)),
        ("GET", "/audit", S(AuditRead)),
        ("POST", "/cache/purge", S(Purge)),
        ("GET", "/transactions", S(Purge)),
        ("GET", "/transactions/{transaction_id}", S(Purge)),
        ("GET", "/config/networklists", S(ListsRead)),
        ("POST", "/config/networklists", S(ListsWrite)),
        ("GET", "/config/networklists/{network_list_id}", S(ListsRead)),
        ("POST", "/config/networklists/{network_list_id}", S(ListsWrite)),
        ("PUT", "/config/networklists/{network_list_id}", S(ListsWrite)),
        ("DELETE", "/config/networklists/{network_list_id}", S(ListsWrite)),
        ("GET", "/config/networklists/{network_list_id}/entries", S(ListsRead)),
        ("POST", "/config/networklists/{network_list_id}/entries", S(ListsWrite)),
        ("POST", "/config/networklists/{network_list_id}/entries/deletions", S(ListsWrite)),
        ("GET", "/config/networklists/{network_list_id}/entries/{entry_id}", S(ListsRead)),
        ("DELETE", "/config/networklists/{network_list_id}/entries/{entry_id}", S(ListsWrite)),
        ("DELETE", "/config/networklists/{network_list_id}/{entry_id}", S(ListsWrite)),
        ("GET", "/config/networklists/{network_list_id}/usage", S(ConfigRead)),
        ("GET", "/properties", S(ConfigRead)),
        ("POST", "/properties", S(ConfigWrite)),
        ("GET", "/properties/{property_name}/config", S(ConfigRead)),
        ("PUT", "/properties/{property_name}/config", S(ConfigWrite)),
        ("GET", "/properties/{property_name}/config/diff", S(ConfigRead)),
        ("GET", "/properties/{property_name}/config/versions", S(ConfigRead)),
        ("GET", "/properties/{property_name}/config/versions/{version}", S(ConfigRead)),
        ("GET", "/tasks", S(TasksRead)),
        ("GET", "/tasks/{task_id}", S(TasksRead)),
        ("POST", "/ingest/accesslogs", S(Ingest)),
        ("POST", "/ingest/securityevents", S(Ingest)),
        ("GET", "/users", S(UsersRead)),
        ("POST", "/users", S(UsersWrite)),
        ("GET", "/users/{user_id}", S(UsersRead)),
        ("PUT", "/users/{user_id}", S(UsersWrite)),
        ("DELETE", "/users/{user_id}", S(UsersWrite)),
        ("POST", "/users/{user_id}/password/resets", S(UsersWrite)),
        ("DELETE", "/users/{user_id}/otp/pairing", S(UsersWrite)),
        ("GET", "/roles", S(UsersRead)),
        ("GET", "/roles/{role_id}", S(UsersRead)),
        ("GET", "/idps", S(UsersRead)),
        ("GET", "/idps/{source_id}", S(UsersRead)),
        ("GET", "/users/{user_id}/password", P),
        ("PUT", "/users/{user_id}/password", P),
        ("GET", "/users/{user_id}/otp", P),
        ("GET", "/users/{user_id}/otp/pairing", P),
        ("PUT", "/users/{user_id}/otp/pairing", P),
        ("POST", "/users/{user_id}/otp/seeds", P),
        ("GET", "/sessions", P),
        ("DELETE", "/sessions/refs/{ref}", P),
        ("GET", "/sessions/current", P),
        ("PUT", "/sessions/current", P),
        ("DELETE", "/sessions/current", P),
        ("GET", "/sessions/{session_id}", P),
        ("PUT", "/sessions/{session_id}", P),
        ("DELETE", "/sessions/{session_id}", P),
        ("GET", "/tokens", P),
        ("POST", "/tokens", P),
        ("GET", "/tokens/{token_id}", P),
        ("PUT", "/tokens/{token_id}", P),
        ("DELETE", "/tokens/{token_id}", P),
        ("POST", "/tokens/{token_id}/roll", P),
        ("POST", "/sessions", O),
        ("PUT", "/password-resets/{token}", O),
        ("GET", "/alerts/rules", S(AlertsRead)),
        ("POST", "/alerts/rules", S(AlertsWrite)),
        ("GET", "/alerts/rules/{rule_id}", S(AlertsRead)),
        ("PUT", "/alerts/rules/{rule_id}", S(AlertsWrite)),
        ("DELETE", "/alerts/rules/{rule_id}", S(AlertsWrite)),
        ("POST", "/alerts/rules/preview", S(AlertsRead)),
        ("GET", "/alerts/summary", S(AlertsRead)),
        ("GET", "/alerts/events", S(AlertsRead)),
        ("GET", "/alerts/timeline", S(AlertsRead)),
        ("GET", "/alerts/webhook-body", S(AlertsRead)),
        ("GET", "/alerts/channels", S(AlertsRead)),
        ("POST", "/alerts/channels", S(AlertsWrite)),
        ("GET", "/alerts/channels/{channel_id}", S(AlertsRead)),
        ("PUT", "/alerts/channels/{channel_id}", S(AlertsWrite)),
        ("DELETE", "/alerts/channels/{channel_id}", S(AlertsWrite)),
        ("POST", "/alerts/channels/{channel_id}/test", S(AlertsWrite)),
        ("GET", "/alerts/channels/{channel_id}/deliveries", S(AlertsRead)),
        ("GET", "/alerts/silences", S(AlertsRead)),
        ("POST", "/alerts/silences", S(AlertsWrite)),
        ("GET", "/alerts/silences/{silence_id}", S(AlertsRead)),
        ("DELETE", "/alerts/silences/{silence_id}", S(AlertsWrite)),
        ("GET", "/stats/data", S(StatsRead)),
        ("HEAD", "/stats", S(StatsRead)),
        ("GET", "/stats/dimensions", S(StatsRead)),
        ("GET", "/stats/groupings", S(StatsRead)),
        ("GET", "/stats/metrics", S(StatsRead)),
        ("GET", "/stats/topk/url/data", S(StatsRead)),
        ("HEAD", "/stats/topk/url", S(StatsRead)),
        ("GET", "/stats/topk/url/dimensions", S(StatsRead)),
        ("GET", "/stats/topk/url/metrics", S(StatsRead)),
        ("GET", "/stats/topk/{category}/groupings", S(StatsRead)),
        ("GET", "/stats/security/events/data", S(SecurityRead)),
        ("HEAD", "/stats/security/events", S(SecurityRead)),
        ("GET", "/stats/security/events/dimensions", S(SecurityRead)),
        ("GET", "/stats/security/request/trends/data", S(SecurityRead)),
        ("HEAD", "/stats/security/request/trends", S(SecurityRead)),
        ("GET", "/stats/security/request/trends/dimensions", S(SecurityRead)),
        ("GET", "/stats/security/request/trends/groupings", S(SecurityRead)),
        ("GET", "/stats/security/request/trends/metrics", S(SecurityRead)),
        ("GET", "/stats/security/waf/trends/data", S(SecurityRead)),
        ("HEAD", "/stats/security/waf/trends", S(SecurityRead)),
        ("GET", "/stats/security/waf/trends/dimensions", S(SecurityRead)),
        ("GET", "/stats/security/waf/trends/groupings", S(SecurityRead)),
        ("GET", "/stats/security/waf/trends/metrics", S(SecurityRead)),
        ("GET", "/stats/security/trafficshaping/trends/data", S(SecurityRead)),
        ("HEAD", "/stats/security/trafficshaping/trends", S(SecurityRead)),
        ("GET", "/stats/security/trafficshaping/trends/dimensions", S(SecurityRead)),
        ("GET", "/stats/security/trafficshaping/trends/groupings", S(SecurityRead)),
        ("GET", "/stats/security/trafficshaping/trends/metrics", S(SecurityRead)),
        ("GET", "/stats/security/waf/topk/{category}/data", S(SecurityRead)),
        ("HEAD", "/stats/security/waf/topk/{category}", S(SecurityRead)),
        ("GET", "/stats/security/waf/topk/{category}/dimensions", S(SecurityRead)),
        ("GET", "/stats/security/waf/topk/{category}/groupings", S(SecurityRead)),
        ("GET", "/stats/security/waf/topk/{category}/metrics", S(SecurityRead)),
        ("GET", "/stats/security/trafficshaping/topk/{category}/data", S(SecurityRead)),
        ("HEAD", "/stats/security/trafficshaping/topk/{category}", S(SecurityRead)),
        ("GET", "/stats/security/trafficshaping/topk/{category}/dimensions", S(SecurityRead)),
        ("GET", "/stats/security/trafficshaping/topk/{category}/groupings", S(SecurityRead)),
        ("GET", "/stats/security/trafficshaping/topk/{category}/metrics", S(SecurityRead)),
    ]
};

/// How a token may call `method` on `path` (a route as declared, under `/{customer}/v1`): the table's row, a
/// `HEAD` read as its `GET` when it has no row of its own, and [`TokenAccess::Person`] for anything else.
pub fn token_access(method: &str, path: &str) -> TokenAccess {
    let find = |m: &str| OPERATION_SCOPES.iter().find(|(om, op, _)| *om == m && *op == path).map(|(_, _, a)| *a);
    find(method).or_else(|| if method == "HEAD" { find("GET") } else { None }).unwrap_or(TokenAccess::Person)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_follows_the_decisions() {
        use Permission::*;
        let all = [
            ReadStats,
            Ingest,
            ReadUsers,
            ManageUsers,
            ReadRoles,
            ResetPasswords,
            DisableOtp,
            ReadConfig,
            WriteConfig,
            Purge,
            ReadPurgeStatus,
            ReadLists,
            WriteLists,
            ReadTasks,
            ReadAccount,
            WriteAccount,
            ReadAudit,
            ReadAlerts,
            ManageAlerts,
        ];
        assert!(all.iter().all(|p| Role::Admin.allows(*p)));
        let operator: Vec<_> = all.iter().filter(|p| !Role::Operator.allows(**p)).collect();
        assert_eq!(
            operator,
            [&ReadUsers, &ManageUsers, &ReadRoles, &ResetPasswords, &DisableOtp, &WriteAccount, &ReadAudit]
        );
        let viewer: Vec<_> = all.iter().filter(|p| Role::Viewer.allows(**p)).collect();
        assert_eq!(viewer, [&ReadStats, &ReadConfig, &ReadPurgeStatus, &ReadLists, &ReadTasks, &ReadAlerts]);
    }

    #[test]
    fn every_scope_has_one_name_and_some_operation() {
        for scope in Scope::ALL {
            assert_eq!(Scope::parse(scope.as_str()), Some(*scope));
            assert!(
                OPERATION_SCOPES.iter().any(|(_, _, a)| *a == TokenAccess::Scope(*scope)),
                "{scope:?} allows no operation"
            );
        }
        let mut rows: Vec<(&str, &str)> = OPERATION_SCOPES.iter().map(|(m, p, _)| (*m, *p)).collect();
        rows.sort();
        let n = rows.len();
        rows.dedup();
        assert_eq!(rows.len(), n, "an operation is listed twice");
    }

    #[test]
    fn a_head_is_its_get_and_an_unknown_operation_is_for_persons_only() {
        assert_eq!(token_access("POST", "/cache/purge"), TokenAccess::Scope(Scope::Purge));
        assert_eq!(token_access("HEAD", "/stats"), TokenAccess::Scope(Scope::StatsRead));
        assert_eq!(token_access("HEAD", "/config/networklists"), TokenAccess::Scope(Scope::ListsRead));
        assert_eq!(token_access("PATCH", "/config/networklists"), TokenAccess::Person);
        assert_eq!(token_access("GET", "/nowhere"), TokenAccess::Person);
        // A role that may not use a scope's permission cannot hold it either.
        assert!(!Role::Viewer.allows(Scope::Purge.permission()));
        assert!(Role::Operator.allows(Scope::ListsWrite.permission()));
    }
}
