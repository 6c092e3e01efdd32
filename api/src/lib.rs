//! The wire contract of the Edge Delivery Management and Statistics API, shared by the console and the server.
//!
//! Every request and response body is defined here once. The `openapi` feature adds utoipa schemas for the
//! server; the console (wasm32) never enables it.

pub mod error;
pub mod identity;
pub mod paths;

pub use error::{ErrorBody, ErrorDetail};
pub use identity::*;
