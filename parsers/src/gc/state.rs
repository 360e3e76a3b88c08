//! What a [`GcLogParser`] knows, and the [`Grammar`] trait through which each
//! format reads a line into it. A leaf below the front door: every grammar
//! and the run's clock import it, and it imports none of them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::envelope::{self, Envelope, Repeated};
use super::legacy::LegacyParser;
use crate::events::*;
use crate::lines::LineSplitter;

/// One GC log format, as the front door sees it. Each decoded line is
/// offered to the formats in turn and the first to claim it says what became
/// of it, so a new format is one more implementation and one more entry in
/// the front door's list, not an edit to the other grammars. Grammars keep
/// their state in the parser (it is checkpointed as one value) and share its
/// run's clock, so that every format gets the same restart and anchoring
/// rules.
pub(super) trait Grammar {
    /// What became of `line`, or `None` when it is not this format's.
    fn read(&self, p: &mut GcLogParser, line: &Line, out: &mut Vec<GcEvent>) -> Option<Outcome>;
}

/// A decoded line and its unified-logging decorations, parsed at once: a
/// line that does not start with `[` (a Go or JDK 8 line) costs nothing to
/// split, and a lazy cell cost more than it saved.
pub(super) struct Line<'a> {
    pub(super) text: &'a str,
    envelope: Option<Envelope<'a>>,
}

impl<'a> Line<'a> {
    /// `known`: the decorations of the line before, see [`Repeated`].
    pub(super) fn new(text: &'a str, known: &mut Repeated) -> Self {
        Line {
            text,
            envelope: envelope::parse(text, known),
        }
    }

    pub(super) fn envelope(&self) -> Option<&Envelope<'a>> {
        self.envelope.as_ref()
    }
}

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

    /// Adds what another parser counted between `since` and `later`.
    pub(super) fn add_between(&mut self, since: &ParseStats, later: &ParseStats) {
        self.bytes += later.bytes - since.bytes;
        self.lines += later.lines - since.lines;
        self.events += later.events - since.events;
        self.ignored_lines += later.ignored_lines - since.ignored_lines;
        self.restarts += later.restarts - since.restarts;
        for (kind, count) in &later.unparsed {
            let added = count - since.unparsed.get(kind).copied().unwrap_or(0);
            // A kind is listed only once a line was counted under it.
            if added > 0 {
                *self.unparsed.entry(*kind).or_insert(0) += added;
            }
        }
    }
}

/// What is known about the JVM run being read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    pub(super) max_uptime_s: Option<f64>,
    pub(super) saw_collection: bool,
    /// GC id of the generational-ZGC minor collection in progress.
    pub(super) zgc_minor_active: Option<u64>,
}

/// A collection whose lines are still arriving.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct OpenCollection {
    /// From the `gc,start` twin of the pause being assembled.
    pub(super) pause_start: Option<LogTime>,
    /// From the start line of a ZGC cycle.
    pub(super) cycle_start: Option<LogTime>,
    pub(super) cause: Option<Name>,
    pub(super) generation: Option<Generation>,
    pub(super) evacuation_failure: bool,
    pub(super) pools: Vec<PoolTransition>,
}

/// JDK 9-12 safepoints span three lines; this is the `Entering` one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct SafepointBegin {
    pub(super) operation: Name,
    pub(super) time: LogTime,
}

/// Streaming parser for one GC log stream (a file, or a rotated set in order).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GcLogParser {
    pub(super) lines: LineSplitter,
    pub(super) run: JvmRun,
    /// Runs seen before the current one, most recent last: when two JVMs
    /// write one file, a line of the other one switches back to its run
    /// instead of counting a restart at every turn.
    #[serde(default)]
    pub(super) other_runs: Vec<JvmRun>,
    pub(super) open: BTreeMap<u64, OpenCollection>,
    /// A pause waits one line for its `User=… Sys=… Real=…` line.
    pub(super) pending: Option<Pause>,
    pub(super) safepoint_begin: Option<SafepointBegin>,
    /// The stream is written with `-Xlog:...:none`: undecorated lines that are
    /// not understood are then GC logging we ignore, not foreign output.
    pub(super) undecorated_logging: bool,
    /// The JDK 6 to 8 format, read behind the same front door.
    #[serde(default)]
    pub(super) legacy: LegacyParser,
    pub(super) stats: ParseStats,
    #[serde(skip)]
    pub(super) repeated_decorations: Repeated,
}

impl GcLogParser {
    pub(super) fn emit(&mut self, event: GcEvent, out: &mut Vec<GcEvent>) {
        self.stats.events += 1;
        out.push(event);
    }

    pub(super) fn count_unparsed(&mut self, kind: UnparsedKind) {
        *self.stats.unparsed.entry(kind).or_insert(0) += 1;
    }
}

/// What a grammar made of a line it reads.
pub(super) enum Understood {
    Yes,
    Ignored,
    Malformed,
}

/// What became of a whole line; each line is counted in exactly one way.
pub(super) enum Outcome {
    /// It produced or completed an event, or set what the parser knows.
    Used,
    /// Well-formed logging that carries nothing pausewatch uses.
    Ignored,
    Unparsed(UnparsedKind),
}
