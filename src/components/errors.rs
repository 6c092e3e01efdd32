//! How failures are shown: the API's own message, never a blank view.

use leptos::prelude::*;

use crate::api::ApiError;

/// One failed call, with the API's message and details.
#[component]
pub fn ApiErrorNotice(error: ApiError) -> impl IntoView {
    let details = (!error.body.details.is_empty()).then(|| {
        view! { <ul>{error.body.details.iter().map(|d| view! { <li>{d.message.clone()}</li> }).collect_view()}</ul> }
    });
    view! {
        <div class="notice error" role="alert">
            <strong>{error.body.message.clone()}</strong>
            {details}
        </div>
    }
}

/// The fallback of the error boundary around every view: each error's message.
pub fn error_fallback(errors: ArcRwSignal<Errors>) -> impl IntoView {
    view! {
        <div class="notice error" role="alert">
            <strong>"Something went wrong."</strong>
            <ul>
                {move || {
                    errors.get().into_iter().map(|(_, e)| view! { <li>{e.to_string()}</li> }).collect_view()
                }}
            </ul>
        </div>
    }
}

/// The problems an API error names for one form field (details written `field: problem`), and the rest.
pub fn field_problems(error: &ApiError, field: &str) -> Vec<String> {
    let prefix = format!("{field}:");
    error.body.details.iter().filter_map(|d| d.message.strip_prefix(&prefix).map(|m| m.trim().to_string())).collect()
}

/// The message under a form field: the field's problems from the last error, if any.
#[component]
pub fn FieldError(#[prop(into)] error: Signal<Option<ApiError>>, field: &'static str) -> impl IntoView {
    move || {
        error.get().map(|e| field_problems(&e, field)).filter(|p| !p.is_empty()).map(|problems| {
            view! { <span class="field-error" role="alert">{problems.join(" ")}</span> }
        })
    }
}

/// An error's message with the details that belong to none of `fields` (those show under their field).
#[component]
pub fn FormError(#[prop(into)] error: Signal<Option<ApiError>>, fields: &'static [&'static str]) -> impl IntoView {
    move || {
        error.get().map(|e| {
            let others: Vec<String> = e
                .body
                .details
                .iter()
                .filter(|d| !fields.iter().any(|f| d.message.starts_with(&format!("{f}:"))))
                .map(|d| d.message.clone())
                .collect();
            view! {
                <div class="notice error" role="alert">
                    <strong>{e.body.message.clone()}</strong>
                    {(!others.is_empty()).then(|| view! { <ul>{others.into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}</ul> })}
                </div>
            }
        })
    }
}
