//! pausewatch: GC and pause telemetry for JVM services. Data flows one way:
//! log bytes -> `pausewatch_parsers` events -> per-JVM state and minute
//! windows -> reports, metrics and the JSON API.

pub mod agent;
pub mod analyze;
pub mod config;
pub mod jvm;
pub mod metrics;
pub mod mxbean;
pub mod replay;
pub mod server;
pub mod state;
pub mod tail;
pub mod windows;
