//! Shared UI pieces.

pub mod async_view;
pub mod chart;
pub mod curl;
pub mod dialog;
pub mod download;
pub mod errors;
pub mod layout;
pub mod pager;
pub mod progress;
pub mod range;
pub mod time;
