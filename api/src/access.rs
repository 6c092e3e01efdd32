//! Roles and what each may do: the permission table, in one place for the server (which checks it) and the
//! console (which shows it).

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
}
