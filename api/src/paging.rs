//! The paged collection of network lists, entries and tasks: `page` from 1, `count`, `page_count`, `has_more`,
//! and `prev_uri`/`next_uri` that are null at the ends.

use serde::{Deserialize, Serialize};

/// Declares a paged collection of `$item`.
macro_rules! paged {
    ($(#[$doc:meta])* $name:ident, $item:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub struct $name {
            pub uri: String,
            pub items: Vec<$item>,
            /// Items in the whole collection (after filters).
            pub total: u64,
            pub has_more: bool,
            /// Pages of `count` items.
            pub page_count: u64,
            /// This page's number, from 1.
            pub page_index: u64,
            /// Null on the first page.
            pub prev_uri: Option<String>,
            /// Null on the last page.
            pub next_uri: Option<String>,
        }
    };
}
pub(crate) use paged;

/// Computes the paging fields of page `page` (from 1) of `count` items in a collection of `total` items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageInfo {
    pub page: u64,
    pub count: u64,
    pub total: u64,
}

impl PageInfo {
    pub fn page_count(&self) -> u64 {
        self.total.div_ceil(self.count.max(1))
    }

    pub fn has_more(&self) -> bool {
        self.page < self.page_count()
    }

    pub fn offset(&self) -> u64 {
        (self.page.max(1) - 1).saturating_mul(self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_edges() {
        let p = |page, count, total| PageInfo { page, count, total };
        assert_eq!(p(1, 10, 0).page_count(), 0);
        assert!(!p(1, 10, 0).has_more());
        assert_eq!(p(1, 10, 10).page_count(), 1);
        assert!(!p(1, 10, 10).has_more());
        assert_eq!(p(1, 10, 11).page_count(), 2);
        assert!(p(1, 10, 11).has_more());
        assert!(!p(2, 10, 11).has_more());
        assert_eq!(p(3, 10, 25).offset(), 20);
    }
}
