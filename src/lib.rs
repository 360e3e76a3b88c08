//! pausewatch: GC and pause telemetry for JVM services. Data flows one way:
//! log bytes -> `pausewatch_parsers` events -> per-JVM state and minute
//! windows -> reports, metrics and the JSON API.

pub mod access_source;
pub mod agent;
pub mod alerts;
pub mod analyze;
pub mod config;
pub mod correlate;
pub mod export;
pub mod histogram_source;
pub mod jvm;
pub mod latency;
pub mod mxbean;
pub mod procfs;
pub mod replay;
pub mod server;
pub mod state;
pub mod tail;
pub mod windows;
