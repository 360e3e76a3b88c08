//! pausewatch: GC and pause telemetry for JVM services. Data flows one way:
//! log bytes -> `pausewatch_parsers` events -> minute windows -> reports.

pub mod analyze;
pub mod mxbean;
pub mod windows;
