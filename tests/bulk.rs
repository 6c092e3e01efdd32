//! The bulk flow's pure parts: how values go in chunks, which lines count, and that sending stops when the
//! view has gone.

#![cfg(target_arch = "wasm32")]

use std::{cell::RefCell, rc::Rc};

use edge_console::components::bulk::{chunk_spans, numbered_lines, send_in_chunks};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn values_go_in_full_chunks_and_a_last_partial_one_numbered_from_one() {
    assert_eq!(chunk_spans(10_001, 5_000), [(1, 5_000), (5_001, 5_000), (10_001, 1)]);
    assert_eq!(chunk_spans(500, 500), [(1, 500)]);
    assert_eq!(chunk_spans(0, 500), []);
}

#[wasm_bindgen_test]
fn blank_lines_are_skipped_and_the_others_keep_the_numbers_the_user_sees() {
    let lines: Vec<(usize, &str)> = numbered_lines("a\n\n   \nb\r\n\tc").collect();
    assert_eq!(lines, [(1, "a"), (4, "b"), (5, "\tc")]);
}

#[wasm_bindgen_test]
async fn chunks_go_one_after_another_and_stop_when_the_sender_says_so() {
    let sent = Rc::new(RefCell::new(Vec::new()));
    let values: Vec<u32> = (1..=7).collect();
    let log = sent.clone();
    send_in_chunks(&values, 3, move |i, chunk| {
        let log = log.clone();
        async move {
            log.borrow_mut().push((i, chunk));
            i == 0
        }
    })
    .await;
    assert_eq!(*sent.borrow(), [(0, vec![1, 2, 3]), (1, vec![4, 5, 6])]);
}
