//! Paging of collections, one way for all of them: `page` and `count` checked ([`Page::of`]), and every paged
//! answer built by [`Page::paged`] (or [`Page::of_all`]) as edge-api's [`Paged`], which each endpoint answers in
//! the shape its contract fixes (`.into()` its envelope).

use edge_api::Paged;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::error::{AppError, AppResult};

/// `page` and `count` alone, for collections without filters of their own (roles, identity sources).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page number, from 1 (default 1).
    pub page: Option<u64>,
    /// Items per page (default 100, at most 1000).
    pub count: Option<u64>,
}

pub const DEFAULT_COUNT: u64 = 100;
pub const MAX_COUNT: u64 = 1000;

/// A validated page: number from 1, and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub page: u64,
    pub count: u64,
}

impl Page {
    /// `page` and `count` as sent: the page from 1 (default 1), the count from 1 to [`MAX_COUNT`] (default
    /// `default_count`); 400 `invalid_parameter` otherwise.
    pub fn of(page: Option<u64>, count: Option<u64>, default_count: u64) -> AppResult<Page> {
        let (page, count) = (page.unwrap_or(1), count.unwrap_or(default_count));
        if page == 0 {
            return Err(AppError::invalid_parameter("page starts at 1."));
        }
        if count == 0 || count > MAX_COUNT {
            return Err(AppError::invalid_parameter(format!("count must be between 1 and {MAX_COUNT}.")));
        }
        Ok(Page { page, count })
    }

    pub fn offset(&self) -> u64 {
        (self.page - 1).saturating_mul(self.count)
    }

    /// The address of page `n` of the collection at `path`, repeating `filters` (see [`filters`]).
    pub fn uri(&self, path: &str, n: u64, filters: &str) -> String {
        format!("{path}?page={n}&count={}{filters}", self.count)
    }

    /// This page of a collection of `total` items at `path` (read with `filters`), holding `items`.
    pub fn paged<T>(&self, path: &str, filters: &str, items: Vec<T>, total: u64) -> Paged<T> {
        let info = edge_api::PageInfo { page: self.page, count: self.count, total };
        Paged::new(info, items, |n| self.uri(path, n, filters))
    }

    /// This page of `all`, a collection held whole, at `path`.
    pub fn of_all<T>(&self, path: &str, all: Vec<T>) -> Paged<T> {
        let total = all.len() as u64;
        let items = all.into_iter().skip(self.offset() as usize).take(self.count as usize).collect();
        self.paged(path, "", items, total)
    }
}

impl PageQuery {
    pub fn resolve(&self) -> AppResult<Page> {
        Page::of(self.page, self.count, DEFAULT_COUNT)
    }
}

/// The query parameters a page's address repeats: `&name=value` for each one that was sent, percent-encoded.
pub fn filters(sent: &[(&str, Option<&str>)]) -> String {
    sent.iter().filter_map(|(name, value)| value.map(|v| format!("&{name}={}", url_encode(v)))).collect()
}

/// Percent-encodes everything but the unreserved characters of RFC 3986.
pub fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_repeat_the_filters_sent_encoded() {
        let page = Page::of(Some(2), None, 10).unwrap();
        assert_eq!(page, Page { page: 2, count: 10 });
        let filters = filters(&[("q", Some("a b&c")), ("type", None), ("deprecated", Some("true"))]);
        assert_eq!(page.uri("/x", 3, &filters), "/x?page=3&count=10&q=a%20b%26c&deprecated=true");
        let paged = page.of_all("/x", (1..=25).collect());
        assert_eq!(
            (paged.items, paged.total, paged.next_uri.as_deref()),
            ((11..=20).collect(), 25, Some("/x?page=3&count=10"))
        );
        assert!(Page::of(Some(0), None, 10).is_err() && Page::of(None, Some(1001), 10).is_err());
    }
}
