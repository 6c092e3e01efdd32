//! "Copy as curl": the read behind a view as a shell command, copied to the clipboard and shown, with the
//! session cookie as a placeholder (`$EDGE_SESSION`), never the secret itself.

use leptos::prelude::*;

use crate::api;

/// `path` gives the API address (path and query) of what the view shows, when there is one.
#[component]
pub fn CopyCurl<F>(path: F) -> impl IntoView
where
    F: Fn() -> Option<String> + Send + Sync + 'static,
{
    let shown = RwSignal::new(None::<String>);
    let copy = move |_| {
        let Some(p) = path() else { return };
        let command = api::curl(&p);
        // A refused write (no focus, no permission) leaves the command shown to copy by hand.
        let write = js_sys::Function::new_with_args(
            "t",
            "try { navigator.clipboard.writeText(t).catch(() => {}); } catch (e) {}",
        );
        let _ = write.call1(&wasm_bindgen::JsValue::NULL, &command.clone().into());
        shown.set(Some(command));
    };
    view! {
        <span class="curl">
            <button type="button" class="small secondary copy-curl" on:click=copy>"Copy as curl"</button>
            {move || {
                shown
                    .get()
                    .map(|c| {
                        view! {
                            <span class="curl-command" role="status">
                                <span class="muted small">
                                    "Copied. EDGE_SESSION is a session id: POST …/v1/sessions with your username and password (curl -u) answers one. "
                                </span>
                                <code>{c}</code>
                                <button type="button" class="icon" aria-label="Hide the command" on:click=move |_| shown.set(None)>
                                    "×"
                                </button>
                            </span>
                        }
                    })
            }}
        </span>
    }
}
