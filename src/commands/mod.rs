//! The subcommands besides the agent's loop: offline analysis, replaying a
//! recorded log, and the demo.

pub mod analyze;
pub mod demo;
pub mod replay;
pub mod run;
