//! Edge Console: the browser admin console of the Edge Delivery Management and Statistics API.

pub mod api;
pub mod app;
pub mod components;
pub mod crash;
pub mod nav;
pub mod pages;
pub mod session;
pub mod signin;

/// Marks a moment in the browser's performance timeline (`cargo xtask perf-console` reads the marks
/// `edge:login-form` and `edge:first-chart`).
pub fn mark(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = p.mark(name);
    }
}

/// Mounts the console on the page's body, in place of the frame index.html shows while the wasm loads.
pub fn mount() {
    crash::install();
    if let Some(shell) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id("app-shell")) {
        shell.remove();
    }
    leptos::mount::mount_to_body(app::App);
}
