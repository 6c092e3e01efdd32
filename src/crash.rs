//! What a panic leaves: a plain "Something went wrong — Reload" screen instead of a dead page, and a report to
//! the server's log. Nothing here may rely on the reactive system or the async executor, which the panic may
//! have left half-way (the wasm stops right after the hook): the screen is built with the DOM alone, and the
//! report goes by `navigator.sendBeacon`, which the browser delivers by itself.

use std::sync::atomic::{AtomicBool, Ordering};

/// Where reports go (`server/src/crash_reports.rs`): outside the API and outside every customer's addresses
/// (a customer name has no `_`).
pub const REPORT_PATH: &str = "/_console/errors";

/// The most of a panic's message a report carries.
const REPORT_MESSAGE_CHARS: usize = 2000;
/// The server refuses a larger report.
pub const REPORT_MAX_BYTES: usize = 4096;

static CRASHED: AtomicBool = AtomicBool::new(false);

/// Installs the panic hook: the message in the browser's console (with a stack), then the screen and the report.
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        crashed(&info.to_string());
    }));
}

/// Shows the crash screen and reports `message`, once: a panic often brings more about (a second one from
/// the half-run executor), and the first says what happened.
pub fn crashed(message: &str) {
    if CRASHED.swap(true, Ordering::SeqCst) {
        return;
    }
    report(message);
    show();
}

/// The report's body: the message (cut short to fit [`REPORT_MAX_BYTES`], whatever its characters and their
/// escapes) and the page's path (no query: it may hold search terms).
pub fn report_body(message: &str, path: &str) -> String {
    let path: String = path.chars().take(200).collect();
    let mut chars = REPORT_MESSAGE_CHARS;
    loop {
        let message: String = message.chars().take(chars).collect();
        let body = format!(
            "{{\"message\":{},\"path\":{},\"version\":\"{}\"}}",
            json_string(&message),
            json_string(&path),
            env!("CARGO_PKG_VERSION")
        );
        if body.len() <= REPORT_MAX_BYTES || chars == 0 {
            return body;
        }
        chars /= 2;
    }
}

/// `s` as a JSON string, written out here: the sign-in app carries no JSON serializer otherwise.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn report(message: &str) {
    let Some(w) = web_sys::window() else { return };
    let path = w.location().pathname().unwrap_or_default();
    let _ = w.navigator().send_beacon_with_opt_str(REPORT_PATH, Some(&report_body(message, &path)));
}

/// Puts the crash screen in place of the page; its Reload is a plain link to this address, which works without
/// any script (the wasm is gone, and the content security policy allows no inline handlers).
fn show() {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else { return };
    let Some(body) = doc.body() else { return };
    let here = doc.location().and_then(|l| l.href().ok()).unwrap_or_else(|| "/".into());
    let el = |tag: &str, text: &str| {
        let e = doc.create_element(tag).ok()?;
        e.set_text_content(Some(text));
        Some(e)
    };
    let (Some(screen), Some(title), Some(text), Some(reload)) = (
        doc.create_element("div").ok(),
        el("h1", "Something went wrong"),
        el(
            "p",
            "The console stopped because of an error, which was reported. Reload the page to go on; a property \
             draft stays in this browser.",
        ),
        el("a", "Reload"),
    ) else {
        return;
    };
    let _ = screen.set_attribute("class", "splash crashed");
    let _ = screen.set_attribute("role", "alert");
    let _ = screen.set_attribute("id", "crashed");
    let _ = reload.set_attribute("href", &here);
    let _ = reload.set_attribute("class", "button primary");
    for child in [&title, &text, &reload] {
        let _ = screen.append_child(child);
    }
    // The dead page is hidden rather than removed: nothing of it runs any more, and whatever else the body
    // holds (a test runner's output) stays readable.
    let children = body.children();
    for i in 0..children.length() {
        if let Some(child) = children.item(i) {
            let _ = child.set_attribute("hidden", "");
        }
    }
    let _ = body.append_child(&screen);
    // Whatever had the focus is gone: Reload takes it, for keyboard users.
    if let Ok(a) = wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(reload) {
        let _ = a.focus();
    }
}
