//! The end-to-end tests: the real console served by the real server (or replicas behind a load balancer),
//! driven in headless Chromium, one module per part of the console, in one test binary (linked once). Each test
//! starts its own server and browser (see `edge_e2e::Harness`); `cargo xtask test` runs them in processes of
//! their own, a few at once.

mod alerts;
mod delivery;
mod identity;
mod login;
mod operations;
mod overview;
mod replicated;
mod robustness;
mod soak;
mod statistics;
mod timeline;
mod tokens;
mod views;
mod workflows;
