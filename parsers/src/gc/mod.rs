//! The streaming parser for HotSpot unified GC logs (`-Xlog:gc*,safepoint`).
//!
//! Bytes go in as they arrive; complete lines are parsed one at a time and the
//! events of one collection are assembled by `GC(N)` id across interleaved
//! lines. All state is serialisable so that a tailing agent can checkpoint it.

mod envelope;
mod gctrace;
mod grammar;
mod legacy;
mod run;
#[cfg(test)]
mod tests;
mod unified;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::events::*;
use crate::lines::{LineSplitter, Piece};
use envelope::Envelope;
use gctrace::{GoLine, Traced};
use grammar::plausible;
use legacy::{Claim, LegacyParser};
use unified::{split_message, Message};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ParserOptions {
    /// Wall-clock time the JVM started, for logs that carry uptime only.
    pub jvm_start: Option<DateTime<Utc>>,
    /// Lines longer than this are counted as [`UnparsedKind::TooLong`] and skipped.
    pub max_line_bytes: usize,
}

impl Default for ParserOptions {
    fn default() -> Self {
        ParserOptions {
            jvm_start: None,
            max_line_bytes: 64 * 1024,
        }
    }
}

/// Why a line was not understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnparsedKind {
    /// Neither unified logging nor anything recognisable (application output, garbage).
    NotUnifiedLogging,
    /// A JDK 6 to 8 (`-XX:+PrintGCDetails`) event that does not parse.
    LegacyFormat,
    /// A line that names an event (`Pause …`, `Safepoint …`) but whose fields do not parse.
    MalformedEvent,
    /// Longer than `max_line_bytes`.
    TooLong,
    /// Holds bytes that are not UTF-8 and, read with them replaced, yields
    /// nothing (a line that still yields its event is not counted here).
    InvalidUtf8,
}

impl UnparsedKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            UnparsedKind::NotUnifiedLogging => "not_unified_logging",
            UnparsedKind::LegacyFormat => "legacy_format",
            UnparsedKind::MalformedEvent => "malformed_event",
            UnparsedKind::TooLong => "too_long",
            UnparsedKind::InvalidUtf8 => "invalid_utf8",
        }
    }
}

/// Counters of what the parser has seen.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParseStats {
    pub bytes: u64,
    pub lines: u64,
    pub events: u64,
    /// Well-formed unified-logging lines that carry nothing pausewatch uses
    /// (phase breakdowns, metaspace, task counts, ...).
    pub ignored_lines: u64,
    pub unparsed: BTreeMap<UnparsedKind, u64>,
    pub restarts: u64,
}

impl ParseStats {
    pub fn unparsed_total(&self) -> u64 {
        self.unparsed.values().sum()
    }
}

/// What is known about the JVM run being read.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JvmRun {
    pub collector: Collector,
    /// From the `Version:` preamble line (JDK 17+).
    pub version: Option<String>,
    /// G1 region size, to turn region counts into bytes.
    pub region_bytes: Option<u64>,
    /// Maximum heap (`Heap Max Capacity:`, ZGC's `Max Capacity:`; JDK 17+ preamble).
    pub max_heap_bytes: Option<u64>,
    /// Wall-clock time at uptime zero.
    pub anchor: Option<DateTime<Utc>>,
    max_uptime_s: Option<f64>,
    saw_collection: bool,
    /// GC id of the generational-ZGC minor collection in progress.
    zgc_minor_active: Option<u64>,
}

/// A collection whose lines are still arriving.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct OpenCollection {
    /// From the `gc,start` twin of the pause being assembled.
    pause_start: Option<LogTime>,
    /// From the start line of a ZGC cycle.
    cycle_start: Option<LogTime>,
    cause: Option<String>,
    generation: Option<Generation>,
    evacuation_failure: bool,
    pools: Vec<PoolTransition>,
}

/// JDK 9-12 safepoints span three lines; this is the `Entering` one.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SafepointBegin {
    operation: String,
    time: LogTime,
}

/// Streaming parser for one GC log stream (a file, or a rotated set in order).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GcLogParser {
    lines: LineSplitter,
    run: JvmRun,
    /// Runs seen before the current one, most recent last: when two JVMs
    /// write one file, a line of the other one switches back to its run
    /// instead of counting a restart at every turn.
    #[serde(default)]
    other_runs: Vec<JvmRun>,
    open: BTreeMap<u64, OpenCollection>,
    /// A pause waits one line for its `User=… Sys=… Real=…` line.
    pending: Option<Pause>,
    safepoint_begin: Option<SafepointBegin>,
    /// The stream is written with `-Xlog:...:none`: undecorated lines that are
    /// not understood are then GC logging we ignore, not foreign output.
    undecorated_logging: bool,
    /// The JDK 6 to 8 format, read behind the same front door.
    #[serde(default)]
    legacy: LegacyParser,
    stats: ParseStats,
}

/// The envelope a JDK 8 stamp stands for, so that its events share the
/// unified lines' clock handling. Date stamps have millisecond precision.
fn legacy_envelope(time: LogTime) -> Envelope<'static> {
    Envelope {
        wall_millis: time.wall.map(|wall| wall.timestamp_millis()),
        uptime_s: time.uptime_s,
        decorated: true,
        ..Envelope::default()
    }
}

impl Default for GcLogParser {
    fn default() -> Self {
        GcLogParser::new(ParserOptions::default())
    }
}

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
    let time = match envelope::parse(line) {
        Some(env) if env.decorated => LogTime {
            uptime_s: env.uptime_s,
            wall: env.wall(),
        },
        // JDK 6 to 8: `2016-04-14T22:30:09.108+0200: 1.053: [GC (...`.
        _ => legacy::leading_stamp(line).0.time(),
    };
    (time.uptime_s.is_some() || time.wall.is_some()).then_some(time)
}

fn is_legacy_line(line: &str) -> bool {
    let first = line.as_bytes().first().copied().unwrap_or(b' ');
    (first.is_ascii_digit() && line.contains(": ["))
        || line.starts_with("[GC")
        || line.starts_with("[Full GC")
        || line.starts_with("{Heap")
        || line.starts_with("Java HotSpot")
        || line.starts_with("OpenJDK ")
        || line.starts_with("CommandLine flags:")
        || line.starts_with("Memory: ")
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

    /// Whether a pause waits for its CPU-times line: a tailing agent then
    /// owes [`flush`](Self::flush) a call once the log has been quiet.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some() || self.legacy.has_pending()
    }

    /// Emits a pause still waiting for its CPU-times line. A tailing agent calls
    /// this when the log has been quiet for a moment.
    pub fn flush(&mut self, out: &mut Vec<GcEvent>) {
        if let Some(pause) = self.pending.take() {
            self.emit(GcEvent::Pause(pause), out);
        }
        let mut held = Vec::new();
        self.legacy.flush(&mut held);
        self.place_legacy(held, out);
    }

    fn emit(&mut self, event: GcEvent, out: &mut Vec<GcEvent>) {
        self.stats.events += 1;
        out.push(event);
    }

    fn count_unparsed(&mut self, kind: UnparsedKind) {
        *self.stats.unparsed.entry(kind).or_insert(0) += 1;
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

    /// Handles one decoded line and says what became of it.
    fn text_line(&mut self, text: &str, out: &mut Vec<GcEvent>) -> Outcome {
        if let Some(traced) = gctrace::recognise(text) {
            return self.go_line(traced, out);
        }
        let envelope = envelope::parse(text);
        if envelope.as_ref().is_none_or(|env| !env.decorated) {
            if let Some(outcome) = self.legacy_line(text, out) {
                return outcome;
            }
        }
        let Some(env) = envelope else {
            self.flush(out);
            return Outcome::Unparsed(if is_legacy_line(text) {
                UnparsedKind::LegacyFormat
            } else {
                UnparsedKind::NotUnifiedLogging
            });
        };
        if env.continuation || (env.message.is_empty() && (env.decorated || text.is_empty())) {
            self.flush(out);
            return Outcome::Ignored;
        }
        let message = split_message(env.message);
        if let (Some(pending), Some(id)) = (&self.pending, message.gc_id) {
            if pending.gc_id == Some(id) {
                if let Ok((_, cpu)) = grammar::cpu_times(message.body) {
                    let mut pause = self.pending.take().expect("checked above");
                    let cpu_ok = [cpu.user_s, cpu.sys_s, cpu.real_s]
                        .into_iter()
                        .all(plausible);
                    if cpu_ok {
                        pause.cpu = Some(cpu);
                    }
                    self.emit(GcEvent::Pause(pause), out);
                    return if cpu_ok {
                        Outcome::Used
                    } else {
                        Outcome::Unparsed(UnparsedKind::MalformedEvent)
                    };
                }
            }
        }
        self.flush(out);
        self.check_restart(&env, &message, out);
        let understood = match message.gc_id {
            Some(id) => {
                self.run.saw_collection = true;
                self.collection_line(id, &message, &env, out)
            }
            None => self.plain_line(message.body, &env, out),
        };
        if !env.decorated && (message.gc_id.is_some() || matches!(understood, Understood::Yes)) {
            self.undecorated_logging = true;
        }
        match understood {
            Understood::Yes => Outcome::Used,
            Understood::Ignored => {
                if env.decorated || message.gc_id.is_some() || self.undecorated_logging {
                    Outcome::Ignored
                } else if is_legacy_line(text) {
                    Outcome::Unparsed(UnparsedKind::LegacyFormat)
                } else {
                    Outcome::Unparsed(UnparsedKind::NotUnifiedLogging)
                }
            }
            Understood::Malformed => Outcome::Unparsed(UnparsedKind::MalformedEvent),
        }
    }

    /// A Go runtime line: a cycle is dated by its `@` uptime (and a prefix's
    /// wall clock) and goes through the same restart and anchoring rules as
    /// a unified-logging line, its number standing for the `GC(N)` id.
    fn go_line(&mut self, traced: Traced, out: &mut Vec<GcEvent>) -> Outcome {
        self.flush(out);
        let cycle = match traced.line {
            GoLine::Cycle(cycle) => cycle,
            GoLine::Other => return Outcome::Ignored,
            GoLine::Malformed => return Outcome::Unparsed(UnparsedKind::MalformedEvent),
        };
        let env = Envelope {
            wall_millis: traced.wall.map(|wall| wall.timestamp_millis()),
            uptime_s: Some(cycle.end_s()),
            decorated: true,
            ..Envelope::default()
        };
        let message = Message {
            gc_id: Some(cycle.number),
            zgc_generation: None,
            body: "",
        };
        self.check_restart(&env, &message, out);
        self.infer_collector(Some(Collector::Go));
        self.run.saw_collection = true;
        let end = self.time_of(&env);
        for event in cycle.events(end) {
            self.emit(event, out);
        }
        Outcome::Used
    }
}

/// The JDK 6 to 8 format's way in (`legacy.rs` holds its grammar).
impl GcLogParser {
    /// Hands an undecorated line to the JDK 6 to 8 parser; `None` when it
    /// is not JDK 8 output.
    fn legacy_line(&mut self, text: &str, out: &mut Vec<GcEvent>) -> Option<Outcome> {
        let mut found = Vec::new();
        let claim = self.legacy.line(text, &mut found);
        self.place_legacy(found, out);
        Some(match claim {
            Claim::NotLegacy => return None,
            Claim::Used => Outcome::Used,
            Claim::Ignored => Outcome::Ignored,
            Claim::Malformed => Outcome::Unparsed(UnparsedKind::LegacyFormat),
            Claim::StoppedTime { stamp, rest } => {
                let env = legacy_envelope(stamp.time());
                self.check_restart(&env, &split_message(""), out);
                match self.stopped_time_line(rest, &env, out) {
                    Understood::Yes => Outcome::Used,
                    Understood::Ignored => Outcome::Ignored,
                    Understood::Malformed => Outcome::Unparsed(UnparsedKind::MalformedEvent),
                }
            }
            Claim::Preamble(preamble) => {
                if let Some(collector) = preamble.collector {
                    self.run.collector = collector;
                }
                self.run.version = preamble.version.or(self.run.version.take());
                self.run.max_heap_bytes = preamble.max_heap_bytes.or(self.run.max_heap_bytes);
                Outcome::Used
            }
        })
    }

    /// Puts JDK 6 to 8 events on the run's clock and emits them: the same
    /// restart detection and anchoring as unified lines, keyed by the
    /// instant each event ends (a concurrent phase spliced into a pause's
    /// line is stamped after the pause began).
    fn place_legacy(&mut self, events: Vec<GcEvent>, out: &mut Vec<GcEvent>) {
        for mut event in events {
            let (end, hint) = match &event {
                GcEvent::Pause(pause) => (pause.end, pause.collector),
                GcEvent::ConcurrentPhase(phase) => (phase.end, phase.collector),
                _ => (LogTime::default(), Collector::Unknown),
            };
            let env = legacy_envelope(end);
            self.check_restart(&env, &split_message(""), out);
            self.time_of(&env);
            self.run.saw_collection = true;
            self.infer_collector(Some(hint).filter(|c| *c != Collector::Unknown));
            let collector = self.run.collector;
            match &mut event {
                GcEvent::Pause(pause) => {
                    pause.collector = collector;
                    pause.start = self.anchored(pause.start);
                    pause.end = self.anchored(pause.end);
                }
                GcEvent::ConcurrentPhase(phase) => {
                    phase.collector = collector;
                    phase.end = self.anchored(phase.end);
                }
                _ => {}
            }
            self.emit(event, out);
        }
    }
}

enum Understood {
    Yes,
    Ignored,
    Malformed,
}

/// What became of a whole line; each line is counted in exactly one way.
enum Outcome {
    /// It produced or completed an event, or set what the parser knows.
    Used,
    /// Well-formed logging that carries nothing pausewatch uses.
    Ignored,
    Unparsed(UnparsedKind),
}
