//! The HTTP layer: the error answers, the extractors every handler's signature names, the console's files and
//! the layers around the API, and the handlers of each resource (`routes/`), which parse, authorize, call the
//! domain and the store, and answer.

pub mod caller;
pub mod crash_reports;
pub mod error;
pub mod extract;
pub mod metrics;
pub mod paging;
pub mod routes;
pub mod web;
