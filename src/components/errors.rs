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
