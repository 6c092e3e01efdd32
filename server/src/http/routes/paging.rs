//! Page and count query parameters, and the paged envelope of identity sources and roles.

use edge_api::{Link, LinkPage};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::error::{AppError, AppResult};

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
    pub fn offset(&self) -> u64 {
        (self.page - 1).saturating_mul(self.count)
    }

    /// Query string of this page (or another page number) for `uri` fields.
    pub fn query(&self, page: u64) -> String {
        format!("page={page}&count={}", self.count)
    }
}

impl PageQuery {
    pub fn resolve(&self) -> AppResult<Page> {
        let page = self.page.unwrap_or(1);
        let count = self.count.unwrap_or(DEFAULT_COUNT);
        if page == 0 {
            return Err(AppError::invalid_parameter("page starts at 1."));
        }
        if count == 0 || count > MAX_COUNT {
            return Err(AppError::invalid_parameter(format!("count must be between 1 and {MAX_COUNT}.")));
        }
        Ok(Page { page, count })
    }
}

/// The paged envelope of `all` (the whole collection) at `page`, addressed at `path`.
pub fn link_page(path: &str, page: Page, all: Vec<Link>) -> LinkPage {
    let total = all.len() as u64;
    let items: Vec<Link> = all.into_iter().skip(page.offset() as usize).take(page.count as usize).collect();
    let has_more = page.offset() + (items.len() as u64) < total;
    LinkPage {
        total,
        page_index: page.page,
        has_more,
        next_uri: if has_more { format!("{path}?{}", page.query(page.page + 1)) } else { String::new() },
        prev_uri: if page.page > 1 { format!("{path}?{}", page.query(page.page - 1)) } else { String::new() },
        uri: format!("{path}?{}", page.query(page.page)),
        items,
    }
}
