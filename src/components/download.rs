//! Files the console hands to the browser: CSV text, offered as a download.

/// CSV of a header and rows: fields with a comma, a quote or a line break are quoted (RFC 4180), and a field
/// a spreadsheet would run as a formula — one starting with `=`, `+`, `-`, `@`, a tab or a carriage return,
/// such as a failed login's username `=cmd|' /C calc'!A0` in the audit log — starts with `'` instead (OWASP's
/// advice on CSV injection). Numbers (`-3`, `+1.5`) are left as they are.
pub fn csv(header: impl IntoIterator<Item = String>, rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let field = |s: String| {
        let s = neutralised(s);
        if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s }
    };
    let line = |fields: Vec<String>| fields.into_iter().map(field).collect::<Vec<_>>().join(",") + "\n";
    let mut out = line(header.into_iter().collect());
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

/// `text` with a leading `'` when a spreadsheet would read it as a formula.
fn neutralised(text: String) -> String {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula && text.parse::<f64>().is_err() { format!("'{text}") } else { text }
}

/// Offers `text` as a CSV file download named `name`.
pub fn download(name: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("text/csv");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    let document = leptos::prelude::document();
    if let Ok(a) = document.create_element("a") {
        let _ = a.set_attribute("href", &url);
        let _ = a.set_attribute("download", name);
        if let Some(a) = wasm_bindgen::JsCast::dyn_ref::<web_sys::HtmlElement>(&a) {
            a.click();
        }
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}
