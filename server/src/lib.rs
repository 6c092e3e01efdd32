//! Edge Console's backend: the Edge Delivery Management and Statistics API under `/{customer}/v1`, and the
//! console's static files at `/`.
//!
//! The modules, top down: [`app`] assembles the router and runs the server, [`state`] holds what every handler
//! reaches, [`upkeep`] runs the periodic jobs, [`demo_account`] seeds `serve --demo`; below them [`http`] (errors,
//! extractors, the console's files, the handlers), [`domain`] (the rules), [`store`] (the state, behind one trait
//! per resource) and [`stats`] (the statistics engines); [`clock`], [`private`] and [`disk`] are leaves every
//! layer may use.

pub mod alerting;
pub mod app;
pub mod clock;
pub mod demo_account;
pub mod disk;
pub mod domain;
pub mod http;
pub mod private;
pub mod state;
pub mod stats;
pub mod store;
pub mod upkeep;

pub use app::{Server, Stop, api_middleware, app, shutdown_signals};
pub use state::{AppState, Settings};
pub use upkeep::upkeep;

// The paths the tests, the benchmarks, the end-to-end tests and the binary name, kept so that their files need no
// change while other work on them is in flight. The crate's own modules name the real paths (which the layers
// check follows).
pub use demo_account as demo;
pub use domain::{admin, auth, fleet, net, otp, property_config as config, throttle};
pub use http::{crash_reports, metrics, routes, web};
