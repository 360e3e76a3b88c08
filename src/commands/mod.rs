//! The subcommands besides the agent's loop: offline analysis, replaying a
//! recorded log, the demo, and the Prometheus rules for a configuration.

pub mod analyze;
pub mod demo;
pub mod replay;
pub mod rules;
pub mod run;
