//! Paged collections. Every page is built as one type, [`Paged`] (its address, items, the collection's total and
//! where the neighbouring pages are), and answered in the shape its endpoint's contract fixes: the [`paged!`]
//! envelopes of network lists, entries, tasks and the audit log (`page_count`, and `prev_uri`/`next_uri` null at
//! the ends), [`crate::LinkPage`] of roles and identity sources (`""` at the ends, no `page_count`) and
//! [`crate::UserPage`] (no neighbours).

use serde::{Deserialize, Serialize};

/// Declares a paged collection of `$item`, built from a [`Paged`].
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

        impl From<$crate::paging::Paged<$item>> for $name {
            fn from(p: $crate::paging::Paged<$item>) -> Self {
                $name {
                    uri: p.uri,
                    items: p.items,
                    total: p.total,
                    has_more: p.has_more,
                    page_count: p.page_count,
                    page_index: p.page_index,
                    prev_uri: p.prev_uri,
                    next_uri: p.next_uri,
                }
            }
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

/// One page of a collection, whatever its wire shape (see the module's documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Paged<T> {
    /// This page's address.
    pub uri: String,
    pub items: Vec<T>,
    /// Items in the whole collection (after filters).
    pub total: u64,
    /// This page's number, from 1.
    pub page_index: u64,
    pub page_count: u64,
    pub has_more: bool,
    /// None on the first page.
    pub prev_uri: Option<String>,
    /// None on the last page.
    pub next_uri: Option<String>,
}

impl<T> Paged<T> {
    /// Page `info.page` of a collection of `info.total` items, holding `items`; page `n` is at `uri_of(n)`.
    pub fn new(info: PageInfo, items: Vec<T>, uri_of: impl Fn(u64) -> String) -> Self {
        let has_more = info.has_more();
        Paged {
            uri: uri_of(info.page),
            items,
            total: info.total,
            page_index: info.page,
            page_count: info.page_count(),
            has_more,
            prev_uri: (info.page > 1).then(|| uri_of(info.page - 1)),
            next_uri: has_more.then(|| uri_of(info.page + 1)),
        }
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

    #[test]
    fn a_page_knows_its_neighbours_and_none_past_the_ends() {
        let uri = |n: u64| format!("/x?page={n}");
        let first = Paged::new(PageInfo { page: 1, count: 10, total: 25 }, vec![1], uri);
        assert_eq!((first.prev_uri, first.next_uri.as_deref()), (None, Some("/x?page=2")));
        assert_eq!((first.uri.as_str(), first.page_count, first.has_more), ("/x?page=1", 3, true));
        let last = Paged::new(PageInfo { page: 3, count: 10, total: 25 }, vec![1], uri);
        assert_eq!((last.prev_uri.as_deref(), last.next_uri, last.has_more), (Some("/x?page=2"), None, false));
        let beyond = Paged::<u8>::new(PageInfo { page: 9, count: 10, total: 25 }, vec![], uri);
        assert_eq!((beyond.prev_uri.as_deref(), beyond.next_uri), (Some("/x?page=8"), None));
    }
}
