//! Network lists: the lists with filters and paging; a list's entries with search and paging (all in the
//! address); adding entries by paste or file (a file of 50,000 lines is read, checked and sent without going
//! through the text area) with a per-line validation report, sent in calls of 5,000 with each call's
//! outcome and deployment; removal; deprecation. ("Add to network list" from the security view is a component.)

mod add;
mod detail;
mod index;
mod lines;
mod usage;

use leptos::prelude::*;

pub use self::lines::{CheckedLine, Covered, check_lines, mark_covered, replace_entry, valid_values};
use self::{detail::ListDetail, index::ListIndex};
use crate::components::index_or_item::IndexOrItem;

#[component]
pub fn NetworkLists() -> impl IntoView {
    view! {
        <IndexOrItem
            title="Network lists"
            param="list"
            index=|| view! { <ListIndex /> }
            item=|id| view! { <ListDetail id /> }
        />
    }
}
