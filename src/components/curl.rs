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
    copy_curl(Box::new(path))
}

/// Writes `text` to the clipboard when the browser lets the page (a secure context, a user's click); callers
/// also show it, to copy by hand when it does not.
pub fn copy_to_clipboard(text: &str) {
    let get =
        |o: &wasm_bindgen::JsValue, k: &str| js_sys::Reflect::get(o, &k.into()).ok().filter(|v| !v.is_undefined());
    let clipboard = web_sys::window().and_then(|w| get(&w, "navigator")).and_then(|n| get(&n, "clipboard"));
    if let Some(c) = clipboard
        && let Some(write) =
            get(&c, "writeText").and_then(|f| wasm_bindgen::JsCast::dyn_into::<js_sys::Function>(f).ok())
        && let Ok(p) = write.call1(&c, &text.into())
    {
        let p: js_sys::Promise = wasm_bindgen::JsCast::unchecked_into(p);
        leptos::task::spawn_local(async move {
            let _ = wasm_bindgen_futures::JsFuture::from(p).await;
        });
    }
}

/// The button and the command, the same code for every view (the wrapper above is all that is per call site).
fn copy_curl(path: Box<dyn Fn() -> Option<String> + Send + Sync>) -> AnyView {
    let shown = RwSignal::new(None::<String>);
    let copy = move |_| {
        let Some(p) = path() else { return };
        let command = api::curl(&p);
        // A refused write (no focus, no permission) leaves the command shown to copy by hand.
        copy_to_clipboard(&command);
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
    .into_any()
}
