fn main() {
    edge_console::mount();
}
