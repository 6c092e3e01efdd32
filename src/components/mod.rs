//! Shared UI pieces.

pub mod errors;
pub mod layout;
