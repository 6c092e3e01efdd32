//! The sign-in app's wasm binary (`signin.html`): mounts the login and password-reset pages.

fn main() {
    edge_console::signin::mount();
}
