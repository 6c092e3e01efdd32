//! Who may do what: the role permission matrix and the access rules of every operation, checked in one place
//! by the extractors below. A handler names its rule in its signature (`Allowed<perm::ManageUsers>`,
//! `SelfOr<perm::ReadUsers>`, `OwnWithPassword`, `OwnLocal`, `Authed`, …) and receives the [`Caller`] only when
//! the rule holds.

use std::marker::PhantomData;

use axum::{
    extract::{FromRequestParts, RawPathParams},
    http::request::Parts,
};

pub use edge_api::access::{Permission, perm};

use crate::{
    domain::auth::{self, Caller},
    http::error::{AppError, AppResult},
    state::AppState,
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
    let by_password = caller.session.is_none();
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

/// The `{user_id}` of the request's path, if the route has one.
async fn target_user_id(parts: &mut Parts, state: &AppState) -> Option<String> {
    let params = RawPathParams::from_request_parts(parts, state).await.ok()?;
    params.iter().find(|(k, _)| *k == "user_id").map(|(_, v)| v.to_string())
}

async fn check(parts: &mut Parts, state: &AppState, rule: Rule) -> AppResult<Caller> {
    let caller = Caller::from_request_parts(parts, state).await?;
    let target_id = target_user_id(parts, state).await;
    // The rules about a user's own resources depend on that user, which must exist. The other rules need only
    // the id (is it the caller?), and handlers answer 404 after the rule has passed.
    let target = match (&target_id, rule) {
        (Some(id), Rule::Own { .. }) => {
            Some(state.store.user_by_id(caller.customer.id, id).await?.ok_or(AppError::NotFound("user"))?)
        }
        _ => None,
    };
    let changes = !matches!(parts.method, axum::http::Method::GET | axum::http::Method::HEAD);
    authorize(&caller, rule, changes, target_id.as_deref(), target.as_ref())?;
    Ok(caller)
}

macro_rules! rule_extractor {
    ($(#[$doc:meta])* $name:ident $(<$p:ident>)?, $rule:expr) => {
        $(#[$doc])*
        pub struct $name$(<$p>)?(pub Caller $(, pub PhantomData<$p>)?);

        impl$(<$p: perm::Perm>)? FromRequestParts<AppState> for $name$(<$p>)? {
            type Rejection = AppError;

            async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
                let caller = check(parts, state, $rule).await?;
                Ok($name(caller $(, PhantomData::<$p>)?))
            }
        }
    };
}

rule_extractor!(
    /// Any authenticated caller.
    Authed,
    Rule::Authenticated
);
rule_extractor!(
    /// A caller whose role has permission `P`.
    Allowed<P>,
    Rule::Role(P::PERMISSION)
);
rule_extractor!(
    /// A caller whose role has permission `P`; 404 for anyone else.
    AllowedElseNotFound<P>,
    Rule::RoleElseNotFound(P::PERMISSION)
);
rule_extractor!(
    /// The caller is the path's `{user_id}`, or has permission `P`.
    SelfOr<P>,
    Rule::SelfOr(P::PERMISSION)
);
rule_extractor!(
    /// The path's `{user_id}` is the caller, who sent their password with this request.
    OwnWithPassword,
    Rule::Own { password: true, local_only: false }
);
rule_extractor!(
    /// The path's `{user_id}` is the caller, a local user.
    OwnLocal,
    Rule::Own { password: false, local_only: true }
);
rule_extractor!(
    /// The path's `{user_id}` is the caller, a local user who sent their password with this request.
    OwnLocalWithPassword,
    Rule::Own { password: true, local_only: true }
);
