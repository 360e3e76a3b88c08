//! Exporters of the agent state, and the catalog of metric families they share.

pub mod catalog;
mod gc_cpu;
pub mod otlp;
pub mod prometheus;
