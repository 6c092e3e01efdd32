//! `wasm-bindgen`, as wasm-bindgen-cli's own main.

use std::{env, process};

fn main() {
    env_logger::init();
    if let Err(e) = wasm_bindgen_cli::wasm_bindgen::run_cli_with_args(env::args_os()) {
        eprintln!("error: {e:?}");
        process::exit(1);
    }
}
