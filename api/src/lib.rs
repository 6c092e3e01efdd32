//! The wire contract of the Edge Delivery Management and Statistics API, shared by the console and the server.
//!
//! Every request and response body is defined here once. The `openapi` feature adds utoipa schemas for the
//! server; the console (wasm32) never enables it.

pub mod access;
pub mod account;
pub mod alerts;
pub mod audit;
pub mod config;
pub mod error;
pub mod identity;
pub mod limits;
pub mod networklists;
pub mod paging;
pub mod paths;
pub mod purge;
pub mod reading;
#[cfg(feature = "openapi")]
pub mod schema;
pub mod stats;
pub mod tasks;
pub mod tokens;

pub use access::{OPERATION_SCOPES, Permission, ROLES, Role, Scope, TokenAccess, perm, token_access};
pub use account::*;
pub use audit::*;
pub use error::{ErrorBody, ErrorDetail};
pub use identity::*;
pub use networklists::*;
pub use paging::{PageInfo, Paged};
pub use purge::*;
pub use tasks::*;
pub use tokens::{ApiToken, TokenInput, TokenPage};
