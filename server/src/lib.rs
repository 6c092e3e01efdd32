//! Edge Console's backend: the Edge Delivery Management and Statistics API under `/{customer}/v1`, and the
//! console's static files at `/`.
//!
//! The modules, top down: [`app`] assembles the router and runs the server, [`state`] holds what every handler
//! reaches, [`upkeep`] runs the periodic jobs; below them the HTTP layer, the domain rules, the store and the
//! statistics engines.

pub mod access;
pub mod admin;
pub mod app;
pub mod auth;
pub mod clock;
pub mod config;
pub mod demo;
pub mod disk;
pub mod error;
pub mod extract;
pub mod fleet;
pub mod hashing;
pub mod mail;
pub mod net;
pub mod otp;
pub mod private;
pub mod routes;
pub mod state;
pub mod stats;
pub mod store;
pub mod tasks;
pub mod throttle;
pub mod upkeep;
pub mod web;

pub use app::{Server, Stop, api_middleware, app, shutdown_signals};
pub use state::{AppState, Settings};
pub use upkeep::upkeep;
