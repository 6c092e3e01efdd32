//! Edge Console: the browser admin console of the Edge Delivery Management and Statistics API.

pub mod api;
pub mod app;
pub mod components;
pub mod pages;
pub mod session;

/// Mounts the console on the page's body.
pub fn mount() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
