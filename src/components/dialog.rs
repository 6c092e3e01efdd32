//! A modal dialog: a titled panel over the page, closed by its buttons or the Escape key.

use leptos::{ev, prelude::*};

#[component]
pub fn Dialog(
    /// Heading of the dialog.
    title: String,
    /// Called when the user dismisses the dialog (Escape, the × button, a click beside it).
    on_close: Callback<()>,
    children: Children,
) -> impl IntoView {
    let label = title.clone();
    let keydown = move |e: ev::KeyboardEvent| {
        if e.key() == "Escape" {
            on_close.run(());
        }
    };
    view! {
        <div class="overlay" on:click=move |_| on_close.run(()) on:keydown=keydown>
            <div
                class="dialog"
                role="dialog"
                aria-modal="true"
                aria-label=label
                on:click=|e: ev::MouseEvent| e.stop_propagation()
            >
                <header>
                    <h2>{title}</h2>
                    <button class="icon" aria-label="Close" on:click=move |_| on_close.run(())>
                        "×"
                    </button>
                </header>
                {children()}
            </div>
        </div>
    }
}

/// A confirmation for a destructive or consequential action: what will happen, then Cancel or the action.
#[component]
pub fn Confirm(
    title: String,
    /// What will happen, in a sentence.
    message: String,
    /// Label of the confirming button, e.g. "Delete user".
    action: String,
    /// Set while the action runs.
    #[prop(into)]
    pending: Signal<bool>,
    /// The error of the last attempt, shown in the dialog.
    #[prop(into)]
    error: Signal<Option<crate::api::ApiError>>,
    on_confirm: Callback<()>,
    on_close: Callback<()>,
) -> impl IntoView {
    view! {
        <Dialog title on_close>
            <p>{message}</p>
            {move || error.get().map(|error| view! { <crate::components::errors::ApiErrorNotice error /> })}
            <div class="actions">
                <button on:click=move |_| on_close.run(())>"Cancel"</button>
                <button class="danger" autofocus=true disabled=move || pending.get() on:click=move |_| on_confirm.run(())>
                    {action}
                </button>
            </div>
        </Dialog>
    }
}
