//! Shared UI pieces.

pub mod add_to_list;
pub mod answers;
pub mod async_view;
pub mod bulk;
pub mod chart;
pub mod curl;
pub mod dialog;
pub mod download;
pub mod errors;
pub mod filters;
pub mod layout;
pub mod pager;
pub mod progress;
pub mod purge_url;
pub mod range;
pub mod time;
