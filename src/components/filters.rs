//! The filter builder of the statistics and security views: conditions joined by AND or OR, as the API's
//! filter expression; and adding one condition (a clicked value) to an expression.

use edge_api::stats::{Filter, parse_filters};
use leptos::{ev, prelude::*};

use crate::components::labels::{dimension_name, value_label};

/// A value written for a filter expression: `\`, `,` and `;` escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace(',', "\\,").replace(';', "\\;")
}

/// The conditions of an expression as (dimension, equal, value), and whether they are joined by AND.
fn conditions(filters: &str, dims: &[&str]) -> (Vec<(String, bool, String)>, bool) {
    let filter = parse_filters(filters, dims).unwrap_or_default();
    let and = !matches!(filter, Filter::Any(_));
    (filter.conditions().iter().map(|c| (c.dimension.clone(), c.equal, c.value.clone())).collect(), and)
}

fn expression(rows: &[(String, bool, String)], and: bool) -> String {
    rows.iter()
        .filter(|(_, _, v)| !v.is_empty())
        .map(|(d, eq, v)| format!("{d}{}{}", if *eq { "==" } else { "!=" }, escape(v)))
        .collect::<Vec<_>>()
        .join(if and { ";" } else { "," })
}

/// `filters` narrowed to `dim == value` (a clicked value): the conditions are joined by AND from then on,
/// and a condition on the same dimension is replaced.
pub fn with_condition(filters: &str, dims: &[&str], dim: &str, value: &str) -> String {
    let (mut rows, _) = conditions(filters, dims);
    rows.retain(|(d, _, _)| d != dim);
    rows.push((dim.to_string(), true, value.to_string()));
    expression(&rows, true)
}

/// Filter rows joined by AND or OR, as the API's filter expression, over `dims`.
#[component]
pub fn FilterBuilder(
    #[prop(into)] filters: Signal<String>,
    dims: &'static [&'static str],
    on_change: Callback<String>,
) -> impl IntoView {
    let parsed = Memo::new(move |_| conditions(&filters.get(), dims));
    let emit = move |rows: Vec<(String, bool, String)>, and: bool| on_change.run(expression(&rows, and));
    let new_dim = RwSignal::new(dims.first().copied().unwrap_or_default().to_string());
    let new_op = RwSignal::new(true);
    let new_value = RwSignal::new(String::new());
    let add = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let value = new_value.get_untracked();
        if value.trim().is_empty() {
            return;
        }
        let (mut rows, and) = parsed.get_untracked();
        rows.push((new_dim.get_untracked(), new_op.get_untracked(), value.trim().to_string()));
        new_value.set(String::new());
        emit(rows, and);
    };
    view! {
        <fieldset class="picker" id="filters">
            <legend>"Filters"</legend>
            {move || {
                let (rows, and) = parsed.get();
                let n = rows.len();
                let rows_view = rows
                    .iter()
                    .enumerate()
                    .map(|(i, (d, eq, v))| {
                        let all = rows.clone();
                        view! {
                            <span class="filter-chip">
                                {format!("{} {} {}", dimension_name(d), if *eq { "is" } else { "is not" }, value_label(d, v))}
                                <button
                                    type="button"
                                    class="icon"
                                    aria-label=format!("Remove filter {}", dimension_name(d))
                                    on:click=move |_| {
                                        let mut all = all.clone();
                                        all.remove(i);
                                        emit(all, and);
                                    }
                                >
                                    "×"
                                </button>
                            </span>
                        }
                    })
                    .collect_view();
                let rows_for_join = rows.clone();
                view! {
                    {rows_view}
                    {(n > 1)
                        .then(|| {
                            view! {
                                <select
                                    aria-label="Join filters"
                                    prop:value=if and { "and" } else { "or" }
                                    on:change=move |e| emit(rows_for_join.clone(), event_target_value(&e) == "and")
                                >
                                    <option value="and">"all must match (AND)"</option>
                                    <option value="or">"any may match (OR)"</option>
                                </select>
                            }
                        })}
                }
            }}
            <form class="filter-add" on:submit=add>
                <select aria-label="Filter dimension" on:change=move |e| new_dim.set(event_target_value(&e)) prop:value=move || new_dim.get()>
                    {dims.iter().map(|d| view! { <option value=*d>{dimension_name(d)}</option> }).collect_view()}
                </select>
                <select aria-label="Filter operator" on:change=move |e| new_op.set(event_target_value(&e) == "eq")>
                    <option value="eq">"is"</option>
                    <option value="ne">"is not"</option>
                </select>
                <input name="filter-value" placeholder="value" aria-label="Filter value" bind:value=new_value />
                <button type="submit">"Add filter"</button>
            </form>
        </fieldset>
    }
}
