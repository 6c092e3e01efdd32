//! The console's wasm binary (`index.html`): mounts the console.

fn main() {
    edge_console::mount();
}
