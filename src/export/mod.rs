//! Exporters of the agent state, and the catalog of metric families they share.

pub mod catalog;
pub mod otlp;
pub mod prometheus;
