//! Dialogs: the browser's own modal `<dialog>` (`showModal()`): the page behind is inert, so focus stays
//! inside; Escape closes it from anywhere in it; focus starts on the safe choice (the element marked
//! `autofocus`, else the first control) and returns to what opened it when it closes.

use leptos::{ev, html, prelude::*};
use wasm_bindgen::JsCast;

#[component]
pub fn Dialog(
    /// Heading of the dialog.
    title: String,
    /// Called when the user dismisses the dialog (Escape, the × button, a click on the backdrop).
    on_close: Callback<()>,
    #[prop(optional)] id: Option<&'static str>,
    children: Children,
) -> impl IntoView {
    let node = NodeRef::<html::Dialog>::new();
    // What had the focus: it gets it back when the dialog goes.
    let opener = document().active_element();
    node.on_load(move |d| {
        let _ = d.show_modal();
    });
    on_cleanup(move || {
        // After the dialog has left the page: while it is open, the rest of the page cannot take the focus.
        set_timeout(
            move || {
                let back = opener.and_then(|o| o.dyn_into::<web_sys::HtmlElement>().ok()).filter(|o| o.is_connected());
                let main =
                    || document().get_element_by_id("content").and_then(|m| m.dyn_into::<web_sys::HtmlElement>().ok());
                if let Some(el) = back.or_else(main) {
                    let _ = el.focus();
                }
            },
            std::time::Duration::ZERO,
        );
    });
    let heading = format!("dialog-{}", title.len() ^ (js_sys::Math::random() * 1e9) as usize);
    let cancel = move |e: ev::Event| {
        // Escape: the page closes the dialog by removing it, so that its state goes with it.
        e.prevent_default();
        on_close.run(());
    };
    let backdrop = move |e: ev::MouseEvent| {
        // A click on the backdrop reaches the dialog element itself (its content fills it).
        let on_dialog = e.target().zip(node.get_untracked()).is_some_and(|(t, d)| {
            let d: &web_sys::EventTarget = d.as_ref();
            t == *d
        });
        if on_dialog {
            on_close.run(());
        }
    };
    // Tab from the last control goes to the first, Shift+Tab from the first to the last: the focus never
    // leaves the dialog (the browser's own modality would let it go to the address bar).
    let trap = move |e: ev::KeyboardEvent| {
        if e.key() != "Tab" {
            return;
        }
        let Some(d) = node.get_untracked() else { return };
        let Ok(all) = d.query_selector_all("button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])") else { return };
        let items: Vec<web_sys::HtmlElement> = (0..all.length()).filter_map(|i| all.item(i)?.dyn_into().ok()).collect();
        let (Some(first), Some(last)) = (items.first(), items.last()) else { return };
        let active = document().active_element();
        let at = |el: &web_sys::HtmlElement| {
            active.as_ref().is_some_and(|a| {
                let a: &web_sys::Element = a;
                let el: &web_sys::Element = el;
                a == el
            })
        };
        if e.shift_key() && at(first) {
            e.prevent_default();
            let _ = last.focus();
        } else if !e.shift_key() && at(last) {
            e.prevent_default();
            let _ = first.focus();
        }
    };
    view! {
        <dialog node_ref=node class="dialog" id=id aria-labelledby=heading.clone() on:cancel=cancel on:click=backdrop on:keydown=trap>
            <div class="dialog-body">
                <header>
                    <h2 id=heading.clone()>{title}</h2>
                    <button type="button" class="icon" aria-label="Close" on:click=move |_| on_close.run(())>
                        "×"
                    </button>
                </header>
                {children()}
            </div>
        </dialog>
    }
}

/// A confirmation for a destructive or consequential action: what will happen, then Cancel (the safe choice,
/// focused first) or the action.
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
    /// More to show under the message (a list of what is affected, a warning).
    #[prop(optional)]
    children: Option<Children>,
) -> impl IntoView {
    view! {
        <Dialog title on_close>
            <p>{message}</p>
            {children.map(|c| c())}
            // Read with try_get: the caller's signals may go before the dialog does (a view that goes when the
            // session ends), and the dialog may still hear of a change.
            {move || error.try_get().flatten().map(|error| view! { <crate::components::errors::ApiErrorNotice error /> })}
            <div class="actions">
                <button type="button" autofocus=true on:click=move |_| on_close.run(())>"Cancel"</button>
                <button type="button" class="danger" disabled=move || pending.try_get() == Some(true) on:click=move |_| on_confirm.run(())>
                    {action}
                </button>
            </div>
        </Dialog>
    }
}
