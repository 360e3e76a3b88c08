//! Pure data and arithmetic, no I/O: what the agent and `analyze` know about
//! each JVM (pauses, minutes, heap), its service's latency and the
//! correlation between the two, and the alert data the rules produce.

pub mod alerts;
pub mod bootstrap;
pub mod changes;
pub mod correlate;
pub mod gc_cpu;
pub mod histogram;
pub mod jvm;
pub mod latency;
mod minute_chunks;
mod minute_codec;
pub mod minutes;
pub mod mxbean;
pub mod rank_test;
pub mod runtime;

use std::time::Duration;

use serde::Serializer;

/// Durations are written as humantime text so a printed config reads back.
pub fn serialize_duration<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_duration(*d))
}
