//! pausewatch: GC and pause telemetry for JVM services. Data flows one way:
//! log bytes -> `pausewatch_parsers` events -> per-JVM state and minute
//! windows -> reports, metrics and the JSON API.

pub mod analyze;
pub mod config;
pub mod jvm;
pub mod mxbean;
pub mod state;
pub mod windows;
