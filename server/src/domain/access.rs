//! Who may do what: the access rules of every operation, decided in one place ([`authorize`]). The permission
//! matrix is edge-api's (`Role::allows`); a handler names its rule in its signature through the extractors of
//! `http::caller`.

use edge_api::Permission;

use crate::{
    domain::auth::{self, Caller},
    http::error::{AppError, AppResult},
    store::UserRecord,
};

/// The rule an operation is guarded by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Any authenticated user.
    Authenticated,
    /// A role with this permission.
    Role(Permission),
    /// A role with this permission; to any other caller the resource does not exist (404), as the API states
    /// for `PUT /account` by an issuer that is not authorized.
    RoleElseNotFound(Permission),
    /// The user named by `{user_id}` is the caller, or the caller's role has this permission.
    SelfOr(Permission),
    /// A resource of the user named by `{user_id}` that only that user may use (their password and two-factor).
    /// `password`: the request must carry that user's password as HTTP Basic credentials (else 401).
    /// `local_only`: the resource exists only for local users (else 405).
    Own { password: bool, local_only: bool },
}

/// Checks `rule` for `caller` against the target user of the path: its id, and for [`Rule::Own`] its record.
/// The one place access is decided.
/// `changes`: the request changes something (any method but GET and HEAD).
pub fn authorize(
    caller: &Caller,
    rule: Rule,
    changes: bool,
    target_id: Option<&str>,
    target: Option<&UserRecord>,
) -> AppResult<()> {
    let by_password = caller.by_password();
    let own = target_id == Some(caller.user.id.as_str());
    // With two-factor on, a password alone must not open the account: Basic credentials without a code serve
    // only to read the user's own password and two-factor resources; changing them needs the code too
    // (X-OTP-Token), and everything else a session made with a code (or the code on the request).
    if caller.password_only && !matches!(rule, Rule::Own { .. }) {
        return Err(auth::otp_required(
            "This account uses two-factor authentication: log in with a one-time code (POST /sessions with \
             X-OTP-Token) and use the session.",
        ));
    }
    if caller.password_only && changes {
        return Err(auth::otp_required(
            "This account uses two-factor authentication: send the one-time code of your authenticator app \
             (header X-OTP-Token) with the password to change it.",
        ));
    }
    let forbidden =
        || AppError::Forbidden(format!("Your role ({}) does not allow this operation.", caller.role.as_str()));
    match rule {
        Rule::Authenticated => Ok(()),
        Rule::Role(p) if caller.role.allows(p) => Ok(()),
        Rule::Role(_) => Err(forbidden()),
        Rule::RoleElseNotFound(p) if caller.role.allows(p) => Ok(()),
        Rule::RoleElseNotFound(_) => Err(AppError::NotFound("resource")),
        Rule::SelfOr(p) if own || caller.role.allows(p) => Ok(()),
        Rule::SelfOr(_) => Err(forbidden()),
        Rule::Own { local_only: true, .. } if target.is_some_and(|t| t.source != "local") => {
            Err(AppError::MethodNotAllowed)
        }
        Rule::Own { password: true, .. } if !(own && by_password) => Err(AppError::Unauthorized {
            kind: "password_required",
            message: "This needs the username and password of the user it belongs to (HTTP Basic credentials).".into(),
        }),
        Rule::Own { .. } if !own => {
            Err(AppError::Forbidden("You may only use your own password and two-factor resources.".into()))
        }
        Rule::Own { .. } => Ok(()),
    }
}
