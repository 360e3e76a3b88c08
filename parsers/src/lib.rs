//! Pure, streaming parsers for JVM GC logs.
//!
//! No file or network I/O and no async runtime: callers hand in bytes as they
//! read them and get typed [`GcEvent`]s back. The agent, `pausewatch analyze`
//! and the fuzz target all drive the same [`GcLogParser`]. Every parser
//! implements [`StreamParser`], the one interface the agent reads any source
//! through.
//!
//! ```
//! use pausewatch_parsers::{GcEvent, GcLogParser};
//! let mut parser = GcLogParser::default();
//! let mut events = Vec::new();
//! parser.feed(b"[0.207s][info][gc] GC(0) Pause Young (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\n", &mut events);
//! parser.finish(&mut events);
//! let GcEvent::Pause(pause) = &events[0] else { panic!() };
//! assert_eq!(pause.name, "Pause Young");
//! assert_eq!(pause.cause.as_deref(), Some("G1 Evacuation Pause"));
//! ```
#![forbid(unsafe_code)]

mod access;
mod events;
mod gc;
pub mod hsperf;
mod lines;
mod stream;

pub use access::{
    parse_line, AccessFormat, AccessLogParser, AccessStats, DurationUnit, Request, Server,
    TimeFormat, TimestampMeaning,
};
pub use events::*;
pub use gc::{
    line_time, GcLogParser, JvmRun, ParseStats, ParserOptions, Speculation, UnparsedKind,
};
pub use lines::{LineSplitter, Piece};
/// Shared by every parser so that the agent drives each source (GC and access
/// logs now; hsperfdata, JDK 8 and Go `gctrace` parsers later) the same way.
pub use stream::StreamParser;
