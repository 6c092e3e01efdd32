//! The bulk flow network lists and purge share: lines typed, pasted or read from a file → each line checked →
//! a report → the valid values sent in chunks, one chunk after another, each chunk's outcome shown.

use std::{cell::Cell, future::Future, rc::Rc};

use leptos::{ev, prelude::*, task::spawn_local};
use wasm_bindgen::JsCast;

use crate::components::progress::sleep;

/// The files a bulk input takes: text, one value per line (or a CSV's first column).
const ACCEPT: &str = ".txt,.csv,text/plain,text/csv";

/// Where the lines come from: typed or pasted, or a file (kept out of the text area: it may be large).
#[derive(Clone, PartialEq)]
pub enum Source {
    Text,
    File { name: String, text: String },
}

/// The lines being given: the text area's text, and whether a file replaces it.
#[derive(Clone, Copy)]
pub struct BulkLines {
    pub text: RwSignal<String>,
    pub source: RwSignal<Source>,
}

impl Default for BulkLines {
    fn default() -> Self {
        BulkLines { text: RwSignal::new(String::new()), source: RwSignal::new(Source::Text) }
    }
}

impl BulkLines {
    /// The lines (the text area's, or the file's), tracked.
    pub fn get(&self) -> String {
        match self.source.get() {
            Source::Text => self.text.get(),
            Source::File { text, .. } => text,
        }
    }

    pub fn get_untracked(&self) -> String {
        match self.source.get_untracked() {
            Source::Text => self.text.get_untracked(),
            Source::File { text, .. } => text,
        }
    }

    /// Changes the lines where they are: in the text area, or in the file's text.
    pub fn edit(&self, f: impl Fn(&str) -> String) {
        match self.source.get_untracked() {
            Source::Text => self.text.update(|t| *t = f(t)),
            Source::File { name, text } => self.source.set(Source::File { name, text: f(&text) }),
        }
    }

    /// An empty text area again (after the lines were sent; the view may have gone meanwhile).
    pub fn clear(&self) {
        let _ = self.text.try_set(String::new());
        let _ = self.source.try_set(Source::Text);
    }
}

/// The lines of `text` that are not blank, numbered from 1 as the user sees them.
pub fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, l)| (i + 1, l))
}

/// The text area (the children) or, once a file is chosen, its name and a way back to typing; `on_text` runs
/// when the user goes back.
#[component]
pub fn LinesInput(
    lines: BulkLines,
    /// The id of the note naming the file.
    file_id: &'static str,
    #[prop(optional)] on_text: Option<Callback<()>>,
    children: ChildrenFn,
) -> impl IntoView {
    let children = StoredValue::new(children);
    move || match lines.source.get() {
        Source::Text => children.with_value(|c| c()).into_any(),
        Source::File { name, .. } => view! {
            <p class="file-chosen" id=file_id>
                {format!("From the file {name}. ")}
                <button
                    type="button"
                    class="link"
                    on:click=move |_| {
                        lines.source.set(Source::Text);
                        if let Some(f) = on_text {
                            f.run(());
                        }
                    }
                >
                    "Type or paste instead"
                </button>
            </p>
        }
        .into_any(),
    }
}

/// A file chooser whose file, once read, is handed to `on_file` as its name and text.
#[component]
pub fn FileChooser(label: &'static str, name: &'static str, on_file: Callback<(String, String)>) -> impl IntoView {
    view! {
        <label class="file">
            {label} <input type="file" name=name accept=ACCEPT on:change=move |e| read_file(&e, on_file) />
        </label>
    }
}

/// Reads the file chosen in a file input's change event. The input is cleared, so that choosing the same file
/// again (after changing it) reads it again.
fn read_file(e: &ev::Event, then: Callback<(String, String)>) {
    let Some(input) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) else { return };
    let Some(file) = input.files().and_then(|f| f.get(0)) else { return };
    input.set_value("");
    spawn_local(async move {
        if let Ok(content) = wasm_bindgen_futures::JsFuture::from(file.text()).await {
            let _ = then.try_run((file.name(), content.as_string().unwrap_or_default()));
        }
    });
}

/// How `n` values go in chunks of `size`: each chunk's first value (numbered from 1) and its length.
pub fn chunk_spans(n: usize, size: usize) -> Vec<(usize, usize)> {
    let size = size.max(1);
    (0..n.div_ceil(size)).map(|i| (i * size + 1, size.min(n - i * size))).collect()
}

/// Sends `values` in chunks of `size`, one after another: the next when the last is answered. `send` gets a
/// chunk's index and values and answers whether to go on (false when the view has gone).
pub async fn send_in_chunks<T, F, Fut>(values: &[T], size: usize, send: F)
where
    T: Clone,
    F: Fn(usize, Vec<T>) -> Fut,
    Fut: Future<Output = bool>,
{
    for (i, chunk) in values.chunks(size.max(1)).enumerate() {
        if !send(i, chunk.to_vec()).await {
            return;
        }
    }
}

/// At most one request every `ms` milliseconds (an API's rate limit, kept from the browser), counted from the
/// previous request's answer: the server sees requests at least `ms` apart however late the browser's busy main
/// thread or the network sends one.
#[derive(Clone)]
pub struct Pace {
    ms: f64,
    last: Rc<Cell<f64>>,
}

impl Pace {
    pub fn new(ms: f64) -> Pace {
        Pace { ms, last: Rc::new(Cell::new(f64::NEG_INFINITY)) }
    }

    /// Sends `request` once `ms` have passed since the previous one was answered.
    pub async fn send<T>(&self, request: impl Future<Output = T>) -> T {
        let wait = self.ms - (js_sys::Date::now() - self.last.get());
        if wait > 0.0 {
            sleep(wait.ceil() as i32).await;
        }
        let answer = request.await;
        self.last.set(js_sys::Date::now());
        answer
    }
}
