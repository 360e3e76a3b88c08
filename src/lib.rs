//! pausewatch: GC and pause telemetry for JVM services.
//!
//! Data flows one way: [`sources`] read logs and endpoints (through
//! [`follow`] for files) and hand what they parse to the [`model`] in the
//! agent's [`store`]; [`export`] and [`server`] publish snapshots of it and
//! [`alerts`] evaluates rules over them. `ARCHITECTURE.md` draws the picture.

pub mod agent;
pub mod alerts;
pub mod checkpoint;
pub mod commands;
pub mod config;
pub mod export;
pub mod follow;
pub mod http_client;
pub mod labels;
pub mod model;
pub mod server;
pub mod sources;
pub mod store;
pub mod web;
