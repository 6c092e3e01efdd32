//! Shared UI, one of each, for any page: the frame (layout), async views, dialogs, pager, time, charts and what
//! they draw from statistics answers (and the incident timeline's markers), the filter builder, the bulk flow, and the dialogs pages open from another
//! page's data (add to a network list, purge a URL), and the API tokens panel of My account and Users. Components
//! never import pages.

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
pub mod firing_count;
pub mod index_or_item;
pub mod labels;
pub mod layout;
pub mod pager;
pub mod progress;
pub mod purge_url;
pub mod range;
pub mod time;
pub mod timeline;
pub mod tokens;
