fn main() {
    edge_console::signin::mount();
}
