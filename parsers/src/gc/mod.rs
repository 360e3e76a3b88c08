//! The front door for GC logs: [`GcLogParser`] splits bytes into lines and
//! offers each to one [`Grammar`](state::Grammar) per format (Go `gctrace`,
//! JDK 6 to 8, HotSpot unified logging), so that one stream may hold any of
//! them and a new format does not edit the others. The grammars share the
//! run's clock (`run.rs`): restarts and wall-clock anchoring are decided once
//! for every format. All state is serialisable so that a tailing agent can
//! checkpoint it.

mod envelope;
mod gctrace;
mod grammar;
mod jdk8;
mod legacy;
mod run;
mod speculation;
mod state;
#[cfg(test)]
mod tests;
mod unified;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::events::*;
use crate::lines::{LineSplitter, Piece};
use gctrace::{Gctrace, GoLine};
use jdk8::Jdk8;
use legacy::LegacyParser;
pub use speculation::Speculation;
pub use state::{GcLogParser, JvmRun, ParseStats, ParserOptions, UnparsedKind};
use state::{Grammar, Line, Outcome};
use unified::Unified;

/// The formats a line is offered to, in this order: a Go `gctrace` line is
/// unmistakable, a JDK 8 line is undecorated, and unified logging takes the
/// rest (and says whether it is foreign output).
const GRAMMARS: [&dyn Grammar; 3] = [&Gctrace, &Jdk8, &Unified];

impl Default for GcLogParser {
    fn default() -> Self {
        GcLogParser::new(ParserOptions::default())
    }
}

/// The time a single log line carries (anchored only if the line has both clocks);
/// used to put the files of a rotated set in order.
pub fn line_time(line: &str) -> Option<LogTime> {
    if let Some(traced) = gctrace::recognise(line) {
        let GoLine::Cycle(cycle) = traced.line else {
            return None;
        };
        return Some(LogTime {
            uptime_s: Some(cycle.end_s()),
            wall: traced.wall,
        });
    }
    let time = match envelope::parse(line, &mut envelope::Repeated::default()) {
        Some(env) if env.decorated => LogTime {
            uptime_s: env.uptime_s,
            wall: env.wall(),
        },
        // JDK 6 to 8: `2016-04-14T22:30:09.108+0200: 1.053: [GC (...`.
        _ => legacy::leading_stamp(line).0.time(),
    };
    (time.uptime_s.is_some() || time.wall.is_some()).then_some(time)
}

impl GcLogParser {
    pub fn new(options: ParserOptions) -> Self {
        let run = JvmRun {
            anchor: options.jvm_start,
            ..JvmRun::default()
        };
        GcLogParser {
            lines: LineSplitter::new(options.max_line_bytes),
            run,
            other_runs: Vec::new(),
            open: BTreeMap::new(),
            pending: None,
            safepoint_begin: None,
            undecorated_logging: false,
            legacy: LegacyParser::new(options.max_line_bytes),
            stats: ParseStats::default(),
            repeated_decorations: Default::default(),
        }
    }

    /// Anchors an uptime-only run to the wall clock, unless a line carrying
    /// both clocks already did.
    pub fn anchor_jvm_start(&mut self, jvm_start: DateTime<Utc>) {
        self.run.anchor.get_or_insert(jvm_start);
    }

    pub fn stats(&self) -> &ParseStats {
        &self.stats
    }

    /// What is known about the current JVM run (collector, version, clock anchor).
    pub fn run(&self) -> &JvmRun {
        &self.run
    }

    /// Bytes of an unfinished last line held until its newline arrives.
    pub fn buffered_bytes(&self) -> usize {
        self.lines.buffered()
    }

    /// Feeds bytes as they arrive; complete lines are parsed and their events
    /// appended to `out`. Chunk boundaries never change the result.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<GcEvent>) {
        self.stats.bytes += bytes.len() as u64;
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(bytes, |piece| self.piece(piece, out));
        self.lines = lines;
    }

    /// Ends the stream: parses an unterminated last line and emits anything held back.
    pub fn finish(&mut self, out: &mut Vec<GcEvent>) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.finish(|piece| self.piece(piece, out));
        self.lines = lines;
        self.flush(out);
    }

    fn piece(&mut self, piece: Piece<'_>, out: &mut Vec<GcEvent>) {
        match piece {
            Piece::Text(text) => self.line(text.as_bytes(), Some(text), out),
            Piece::Line(line) => self.line(line, None, out),
            Piece::TooLong => {
                self.stats.lines += 1;
                self.flush(out);
                self.count_unparsed(UnparsedKind::TooLong);
            }
        }
    }

    /// Handles one decoded line and says what became of it: the first format
    /// to claim it reads it.
    fn text_line(&mut self, text: &str, out: &mut Vec<GcEvent>) -> Outcome {
        let line = Line::new(text, &mut self.repeated_decorations);
        // Where the grammars in turn would take a decorated line, nearly every
        // line of a log: Go's turns away a leading `[`, JDK 8's a decorated one.
        if line.envelope().is_some_and(|env| env.decorated) {
            return self.unified_line(&line, out);
        }
        for grammar in GRAMMARS {
            if let Some(outcome) = grammar.read(self, &line, out) {
                return outcome;
            }
        }
        Outcome::Unparsed(UnparsedKind::NotUnifiedLogging)
    }

    /// Whether a pause waits for its CPU-times line: a tailing agent then
    /// owes [`flush`](Self::flush) a call once the log has been quiet.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some() || self.legacy.has_pending()
    }

    /// One line; `checked` is the same line when it is known to be UTF-8.
    fn line(&mut self, raw: &[u8], checked: Option<&str>, out: &mut Vec<GcEvent>) {
        self.stats.lines += 1;
        // Trailing CR (CRLF files) and padding; ASCII only, cheaper than `trim_end`.
        let end = raw
            .iter()
            .rposition(|&b| !matches!(b, b'\r' | b' ' | b'\t'))
            .map_or(0, |i| i + 1);
        let raw = &raw[..end];
        // Validated once; only a line with invalid bytes pays for a lossy copy,
        // so a stray byte in a cause or a trailing field does not lose its event.
        let lossy;
        // The bytes trimmed are ASCII, so `end` is a char boundary of `checked`.
        let (text, valid) = match checked.map(|text| &text[..end]) {
            Some(text) => (text, true),
            None => match std::str::from_utf8(raw) {
                Ok(text) => (text, true),
                Err(_) => {
                    lossy = String::from_utf8_lossy(raw);
                    (&*lossy, false)
                }
            },
        };
        match self.text_line(text, out) {
            Outcome::Used => {}
            _ if !valid => self.count_unparsed(UnparsedKind::InvalidUtf8),
            Outcome::Ignored => self.stats.ignored_lines += 1,
            Outcome::Unparsed(kind) => self.count_unparsed(kind),
        }
    }
}
