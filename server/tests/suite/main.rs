//! The server's tests, one module per part of the API or the server (each says what it proves), in one test
//! binary: the helpers are compiled and the binary linked once. `cargo xtask test` runs each test in a process
//! of its own (cargo-nextest), the router suites a second time on PostgreSQL (`EDGE_TEST_STORE=postgres`).
//! `held_logins` is a binary of its own: it measures its process's CPU time.

mod common;
mod receivers;

mod account;
mod alert_replicas;
mod alerts;
mod audit;
mod bounds;
mod cli;
mod compression;
mod crash_reports;
mod durability;
mod faults;
mod files;
mod hostile_bodies;
mod hosts;
mod http;
mod ingest;
mod limits;
mod networklists;
mod openapi;
mod openapi_rules;
mod paging;
mod passwords;
mod properties;
mod purge;
mod replicas;
mod roles;
mod sessions;
mod stats;
mod stats_answers;
mod stats_clickhouse;
mod store_contract;
mod tasks;
mod throttling;
mod tokens;
mod two_factor;
mod users;
