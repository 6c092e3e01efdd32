//! The statistics view's state: the view in the page's address, the range and granularity in effect, and the
//! changes the controls make to it.

use edge_api::stats::Granularity;
use leptos::prelude::*;
use leptos_router::{
    NavigateOptions,
    hooks::{use_navigate, use_query_map},
};

use super::{
    FILTER_DIMENSIONS,
    view::{View, grouping_state},
};
use crate::components::{
    filters::with_condition,
    range::{Range, allowed_granularities, now_ms},
};

/// The view and what follows from it, read from the address; every change goes back to the address.
#[derive(Clone, Copy)]
pub(super) struct ViewState {
    pub view: Memo<View>,
    set: Callback<View>,
    /// The range and granularity in effect, and the granularities the range allows; None for a range that
    /// cannot be read.
    pub resolved: Memo<Option<(Range, Granularity, Vec<Granularity>)>>,
    /// Whether the dimensions form a grouping set at that granularity, and the dimensions that may be added.
    pub valid: Memo<Option<(bool, Vec<&'static str>)>>,
    /// Narrows the view to a dimension's value (a clicked legend entry, bar or cell).
    pub add_filter: Callback<(String, String)>,
}

impl ViewState {
    pub fn from_address() -> ViewState {
        let query = use_query_map();
        let navigate = use_navigate();
        let view = Memo::new(move |_| {
            let q = query.read();
            View::from_params(|k| q.get(k))
        });
        let set = Callback::new(move |next: View| {
            navigate(&next.to_query(), NavigateOptions { scroll: false, ..Default::default() });
        });
        let update = move |f: &dyn Fn(&mut View)| {
            let mut v = view.get_untracked();
            f(&mut v);
            set.run(v);
        };
        // The range and granularity in effect, fixed when the view changes (presets move with the clock).
        // Only a change of the range itself reads the clock again: sorting or paging keeps the same times.
        let range_of = Memo::new(move |_| {
            let v = view.get();
            View {
                dims: Vec::new(),
                metrics: Vec::new(),
                filters: String::new(),
                sort: String::new(),
                page: 0,
                compare: false,
                stacked: false,
                classes: false,
                ..v
            }
        });
        let range_at = Memo::new(move |_| {
            let now = now_ms();
            range_of.get().range(now).map(|r| (r, now))
        });
        // The granularity also follows the dimensions (the natural one, or one where they form a grouping set).
        let dims = Memo::new(move |_| view.get().dims);
        let resolved = Memo::new(move |_| {
            let v = View { dims: dims.get(), ..range_of.get() };
            range_at.get().map(|(r, now)| (r, v.granularity(r, now), allowed_granularities(r, now)))
        });
        let valid = Memo::new(move |_| resolved.get().map(|(_, g, _)| grouping_state(g, &view.get().dims)));
        let add_filter = Callback::new(move |(dim, value): (String, String)| {
            update(&move |v: &mut View| {
                v.filters = with_condition(&v.filters, &FILTER_DIMENSIONS, &dim, &value);
                v.page = 0;
            })
        });
        ViewState { view, set, resolved, valid, add_filter }
    }

    /// Changes the view (a new history entry, the page not scrolled).
    pub fn update(&self, f: &dyn Fn(&mut View)) {
        let mut v = self.view.get_untracked();
        f(&mut v);
        self.set.run(v);
    }

    /// Adds a dimension, or removes it when chosen (back to the first page, unsorted).
    pub fn toggle_dim(&self, d: &'static str) {
        self.update(&move |v: &mut View| {
            if let Some(i) = v.dims.iter().position(|x| x == d) {
                v.dims.remove(i);
            } else {
                v.dims.push(d.to_string());
            }
            v.page = 0;
            v.sort.clear();
        })
    }

    /// Adds a metric, or removes it when chosen and not the last.
    pub fn toggle_metric(&self, m: &'static str) {
        self.update(&move |v: &mut View| {
            if let Some(i) = v.metrics.iter().position(|x| x == m) {
                if v.metrics.len() > 1 {
                    v.metrics.remove(i);
                }
            } else {
                v.metrics.push(m.to_string());
            }
            v.page = 0;
        })
    }
}
