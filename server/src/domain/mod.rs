//! The domain rules, independent of HTTP: who is calling and what they may do, login throttling, passwords and
//! one-time codes, property configurations, the tasks that track changes on the edge fleet, mail, and the
//! operator's own tasks, API tokens.

pub mod access;
pub mod admin;
pub mod alerts;
pub mod auth;
pub mod fleet;
pub mod hashing;
pub mod mail;
pub mod net;
pub mod otp;
pub mod property_config;
pub mod tasks;
pub mod throttle;
pub mod tokens;
