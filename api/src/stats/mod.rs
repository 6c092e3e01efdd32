//! The statistics vocabulary — families, dimensions, metrics, grouping sets, top-K categories — and the
//! parsing and validation of statistics queries: times, filters, sortby, paging. Used by the server's engine
//! and handlers and by the console's pickers, so both sides agree on what a valid query is.

mod answer;
mod names;
mod query;
mod time;
mod vocabulary;

pub use answer::*;
pub use names::{Dimension, Metric};
pub use query::*;
pub use time::*;
pub use vocabulary::*;

#[cfg(test)]
mod tests;
