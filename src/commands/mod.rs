//! The subcommands besides the agent's loop: offline analysis, replaying a
//! recorded log, the demo, and the Prometheus rules for a configuration.

pub mod analyze;
pub mod chart;
pub mod compare;
pub mod demo;
mod gc_input;
mod gc_parallel;
pub mod man;
mod mapped_log;
pub mod replay;
pub mod report;
pub mod rules;
pub mod run;
