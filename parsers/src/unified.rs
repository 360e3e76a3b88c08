//! The streaming parser for HotSpot unified GC logs (`-Xlog:gc*,safepoint`).
//!
//! Bytes go in as they arrive; complete lines are parsed one at a time and the
//! events of one collection are assembled by `GC(N)` id across interleaved
//! lines. All state is serialisable so that a tailing agent can checkpoint it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::envelope::{self, Envelope};
use crate::events::*;
use crate::gctrace::{self, GoLine, Traced};
use crate::grammar;
use crate::legacy::{self, Claim, LegacyParser};
use crate::lines::{LineSplitter, Piece};

/// At most this many collections are tracked as open at once; the oldest ids
/// are dropped first. Keeps memory bounded on any input.
const MAX_OPEN_COLLECTIONS: usize = 128;

/// At most this many pool lines are kept per collection (HotSpot writes two
/// to five); more means a garbled log, and memory must stay bounded.
const MAX_POOLS_PER_COLLECTION: usize = 16;

/// A drop in uptime larger than this (seconds) means a new JVM run.
const RESTART_UPTIME_DROP_S: f64 = 1.0;

/// Two lines belong to the same JVM run when their anchors (wall-clock time
/// minus uptime) are this close (seconds): both are rounded to milliseconds,
/// and the system clock may be slewed against the JVM's monotonic uptime.
const SAME_RUN_ANCHOR_S: f64 = 2.0;

/// How many other runs a stream remembers, for JVMs that take turns in one file.
const OTHER_RUNS_KEPT: usize = 4;

/// No pause, phase, cycle, safepoint or stall lasts a day: a longer duration
/// is a garbled number, and one such value would swamp every sum and maximum.
const MAX_DURATION_S: f64 = 24.0 * 3600.0;

/// Whether a parsed duration (seconds) is one HotSpot could have measured.
pub(crate) fn plausible(duration_s: f64) -> bool {
    (0.0..=MAX_DURATION_S).contains(&duration_s)
}

/// Parenthesised groups that qualify a pause rather than name its cause.
const QUALIFIERS: &[&str] = &[
    "Normal",
    "Concurrent Start",
    "Prepare Mixed",
    "Mixed",
    "Young",
    "Old",
    "Global",
    "Major",
    "Minor",
    "process weakrefs",
    "unload classes",
    "update refs",
    "Outside of Cycle",
    "Mark",
    "Evacuation",
    "Update Refs",
    "Update Roots",
    "Roots",
];

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

/// Wall-clock time at uptime zero, for a line that carries both clocks.
fn line_anchor(env: &Envelope) -> Option<DateTime<Utc>> {
    env.wall()?
        .checked_sub_signed(seconds_to_duration(env.uptime_s?))
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

fn same_run(a: DateTime<Utc>, b: DateTime<Utc>) -> bool {
    (a - b).abs() <= seconds_to_duration(SAME_RUN_ANCHOR_S)
}

impl Default for GcLogParser {
    fn default() -> Self {
        GcLogParser::new(ParserOptions::default())
    }
}

/// A message with its `GC(N)` id and generational-ZGC prefix taken off.
struct Message<'a> {
    gc_id: Option<u64>,
    /// `y`, `Y` or `O` in generational ZGC lines.
    zgc_generation: Option<char>,
    body: &'a str,
}

fn split_message(message: &str) -> Message<'_> {
    let Some(after) = message.strip_prefix("GC(") else {
        return Message {
            gc_id: None,
            zgc_generation: None,
            body: message,
        };
    };
    let Some(close) = after.find(')') else {
        return Message {
            gc_id: None,
            zgc_generation: None,
            body: message,
        };
    };
    let Ok(id) = after[..close].parse::<u64>() else {
        return Message {
            gc_id: None,
            zgc_generation: None,
            body: message,
        };
    };
    let body = after[close + 1..]
        .strip_prefix(' ')
        .unwrap_or(&after[close + 1..]);
    let bytes = body.as_bytes();
    if bytes.len() >= 3 && matches!(bytes[0], b'y' | b'Y' | b'O') && &bytes[1..3] == b": " {
        return Message {
            gc_id: Some(id),
            zgc_generation: Some(bytes[0] as char),
            body: &body[3..],
        };
    }
    Message {
        gc_id: Some(id),
        zgc_generation: None,
        body,
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

/// A size from a preamble line such as `Heap Region Size: 1M`.
fn preamble_size(body: &str, prefixes: &[&str]) -> Option<u64> {
    let value = prefixes
        .iter()
        .find_map(|prefix| body.strip_prefix(prefix))?;
    grammar::size_bytes(value.trim())
        .ok()
        .map(|(_, bytes)| bytes)
}

fn collector_from_using(name: &str) -> Option<Collector> {
    Some(match name {
        "G1" => Collector::G1,
        "Parallel" => Collector::Parallel,
        "Serial" => Collector::Serial,
        "Concurrent Mark Sweep" => Collector::Cms,
        "Shenandoah" => Collector::Shenandoah,
        "The Z Garbage Collector" => Collector::Z,
        _ => return None,
    })
}

pub(crate) fn collector_from_pool(pool: &str) -> Option<Collector> {
    Some(match pool {
        "PSYoungGen" | "ParOldGen" | "PSOldGen" => Collector::Parallel,
        "DefNew" | "Tenured" => Collector::Serial,
        "ParNew" | "CMS" => Collector::Cms,
        _ => return None,
    })
}

/// Collector implied by a pause's name and groups, for logs without a preamble.
fn collector_from_pause(
    name: &str,
    groups: &[&str],
    zgc_generation: Option<char>,
) -> Option<Collector> {
    if zgc_generation.is_some() {
        return Some(Collector::ZGenerational);
    }
    match name {
        "Pause Init Mark"
        | "Pause Final Mark"
        | "Pause Init Update Refs"
        | "Pause Final Update Refs"
        | "Pause Final Roots"
        | "Pause Final Evac"
        | "Pause Degenerated GC" => Some(Collector::Shenandoah),
        "Pause Mark Start" | "Pause Mark End" | "Pause Relocate Start" => Some(Collector::Z),
        "Pause Mixed" | "Pause Cleanup" => Some(Collector::G1),
        _ if groups.iter().any(|g| {
            g.starts_with("G1 ")
                || matches!(
                    *g,
                    "Normal" | "Concurrent Start" | "Prepare Mixed" | "Mixed"
                )
        }) =>
        {
            Some(Collector::G1)
        }
        "Pause Initial Mark" => Some(Collector::Cms),
        _ => None,
    }
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

    /// Detects a new JVM run in the same stream (uptime went back, or the
    /// start-up preamble appeared after collections were seen), or a line of
    /// another JVM writing the same file (its anchor is one seen before).
    fn check_restart(&mut self, env: &Envelope, message: &Message, out: &mut Vec<GcEvent>) {
        let preamble = message.gc_id.is_none()
            && (message.body.starts_with("Using ")
                && collector_from_using(&message.body[6..]).is_some()
                || message
                    .body
                    .starts_with("Initializing The Z Garbage Collector")
                || message.body.starts_with("Version: "));
        let uptime_jumped = match (env.uptime_s, self.run.max_uptime_s) {
            (Some(now), Some(max)) => (now - max).abs() > RESTART_UPTIME_DROP_S,
            _ => false,
        };
        // The wall clock is decoded only when uptime jumped or a run starts:
        // this runs for every line.
        let anchor = (uptime_jumped || preamble || self.run.anchor.is_none())
            .then(|| line_anchor(env))
            .flatten();
        let switched = uptime_jumped && !preamble && self.switch_to_run_anchored_at(anchor);
        let uptime_went_back = match (env.uptime_s, self.run.max_uptime_s) {
            (Some(now), Some(max)) => now + RESTART_UPTIME_DROP_S < max,
            _ => false,
        };
        if !switched && (uptime_went_back || (preamble && self.run.saw_collection)) {
            let previous = std::mem::take(&mut self.run);
            self.remember_run(previous);
            self.open.clear();
            self.safepoint_begin = None;
            self.stats.restarts += 1;
            let time = self.time_of(env);
            self.emit(GcEvent::JvmRestart(JvmRestart { time }), out);
        }
        if self.run.anchor.is_none() {
            self.run.anchor = anchor;
        }
        if let Some(now) = env.uptime_s {
            self.run.max_uptime_s = Some(self.run.max_uptime_s.map_or(now, |m| m.max(now)));
        }
    }

    /// Makes the remembered run anchored at `anchor` current, if there is
    /// one and it is not the current run.
    fn switch_to_run_anchored_at(&mut self, anchor: Option<DateTime<Utc>>) -> bool {
        let Some(anchor) = anchor else {
            return false;
        };
        let same = |run: &JvmRun| run.anchor.is_some_and(|a| same_run(a, anchor));
        if same(&self.run) {
            return false;
        }
        let Some(index) = self.other_runs.iter().position(same) else {
            return false;
        };
        let mut other = self.other_runs.remove(index);
        // Follow the clock's slew, so a run found once is found again.
        other.anchor = Some(anchor);
        let previous = std::mem::replace(&mut self.run, other);
        self.remember_run(previous);
        true
    }

    fn remember_run(&mut self, run: JvmRun) {
        if run.anchor.is_none() {
            return;
        }
        if self.other_runs.len() == OTHER_RUNS_KEPT {
            self.other_runs.remove(0);
        }
        self.other_runs.push(run);
    }

    fn time_of(&mut self, env: &Envelope) -> LogTime {
        let wall = env.wall();
        let uptime_s = env.uptime_s;
        match (wall, uptime_s) {
            (Some(wall), Some(uptime)) => {
                if self.run.anchor.is_none() {
                    self.run.anchor = wall.checked_sub_signed(seconds_to_duration(uptime));
                }
                LogTime {
                    uptime_s,
                    wall: Some(wall),
                }
            }
            (None, Some(_)) => self.anchored(LogTime {
                uptime_s,
                wall: None,
            }),
            (wall, None) => LogTime {
                uptime_s: None,
                wall,
            },
        }
    }

    /// Wall-clock time for an uptime-only instant, once the run is anchored.
    fn anchored(&self, time: LogTime) -> LogTime {
        match (time.wall, time.uptime_s, self.run.anchor) {
            (None, Some(uptime), Some(anchor)) => LogTime {
                wall: anchor.checked_add_signed(seconds_to_duration(uptime)),
                ..time
            },
            _ => time,
        }
    }

    fn infer_collector(&mut self, hint: Option<Collector>) {
        match (self.run.collector, hint) {
            (Collector::Unknown, Some(c)) => self.run.collector = c,
            (Collector::Z, Some(Collector::ZGenerational)) => {
                self.run.collector = Collector::ZGenerational
            }
            _ => {}
        }
    }

    fn add_pool(&mut self, id: u64, pool: PoolTransition) {
        let pools = &mut self.open_collection(id).pools;
        if pools.len() < MAX_POOLS_PER_COLLECTION {
            pools.push(pool);
        }
    }

    fn open_collection(&mut self, id: u64) -> &mut OpenCollection {
        if !self.open.contains_key(&id) && self.open.len() >= MAX_OPEN_COLLECTIONS {
            self.open.pop_first();
        }
        self.open.entry(id).or_default()
    }

    /// Lines without a `GC(N)` id: preamble, safepoints, stalls.
    fn plain_line(&mut self, body: &str, env: &Envelope, out: &mut Vec<GcEvent>) -> Understood {
        if let Some(quoted_onward) = body.strip_prefix("Safepoint ") {
            return self.safepoint_line(quoted_onward, env, out);
        }
        if let Some(operation) = body.strip_prefix("Entering safepoint region: ") {
            self.safepoint_begin = Some(SafepointBegin {
                operation: operation.to_string(),
                time: self.time_of(env),
            });
            return Understood::Yes;
        }
        if let Some(rest) =
            body.strip_prefix("Total time for which application threads were stopped: ")
        {
            return self.stopped_time_line(rest, env, out);
        }
        if let Some(rest) = body.strip_prefix("Allocation Stall (") {
            return self.stall_line(StallKind::Allocation, rest, env, out);
        }
        if let Some(rest) = body.strip_prefix("Relocation Stall (") {
            return self.stall_line(StallKind::Relocation, rest, env, out);
        }
        if let Some(name) = body.strip_prefix("Using ") {
            if let Some(collector) = collector_from_using(name) {
                if self.run.collector != Collector::ZGenerational {
                    self.run.collector = collector;
                }
                return Understood::Yes;
            }
        }
        if body.starts_with("Initializing The Z Garbage Collector") {
            self.infer_collector(Some(Collector::Z));
            return Understood::Yes;
        }
        if let Some(version) = body.strip_prefix("Version: ") {
            // `17.0.15+6-Debian-1deb12u1 (release)`: the build type is not part of the version.
            let version = version.split(" (").next().unwrap_or(version);
            self.run.version = Some(version.to_string());
            return Understood::Yes;
        }
        if let Some(bytes) = preamble_size(body, &["Heap Max Capacity: ", "Max Capacity: "]) {
            self.run.max_heap_bytes = Some(bytes);
            return Understood::Yes;
        }
        if let Some(bytes) = preamble_size(body, &["Heap Region Size: ", "Heap region size: "]) {
            self.run.region_bytes = Some(bytes);
            return Understood::Yes;
        }
        Understood::Ignored
    }

    /// JDK 13+: `Safepoint "op", Time since last: N ns, Reaching safepoint: N ns, ... Total: N ns`.
    fn safepoint_line(
        &mut self,
        quoted_onward: &str,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Ok((mut rest, operation)) = grammar::quoted(quoted_onward) else {
            return Understood::Malformed;
        };
        let mut safepoint = Safepoint {
            operation: Some(operation.to_string()),
            start: LogTime::default(),
            end: LogTime::default(),
            reaching_s: None,
            cleanup_s: None,
            at_safepoint_s: None,
            leaving_s: None,
            total_s: f64::NAN,
        };
        while let Some(after) = rest.strip_prefix(", ") {
            let Ok((after_field, (key, value))) = grammar::safepoint_field(after) else {
                // A field without a key, such as the `12 total` tail of JDK 25's `Threads:`.
                rest = after.find(',').map_or("", |comma| &after[comma..]);
                continue;
            };
            rest = after_field;
            let slot = match key {
                "Reaching safepoint" => &mut safepoint.reaching_s,
                "Cleanup" => &mut safepoint.cleanup_s,
                "At safepoint" => &mut safepoint.at_safepoint_s,
                "Leaving safepoint" => &mut safepoint.leaving_s,
                "Total" => {
                    let Ok(("", total)) = grammar::nanos(value) else {
                        return Understood::Malformed;
                    };
                    if !plausible(total) {
                        return Understood::Malformed;
                    }
                    safepoint.total_s = total;
                    continue;
                }
                // "Time since last", "Threads: N runnable" and its ", M total" tail.
                _ => continue,
            };
            match grammar::nanos(value) {
                Ok(("", seconds)) if plausible(seconds) => *slot = Some(seconds),
                _ => return Understood::Malformed,
            }
        }
        if safepoint.total_s.is_nan() {
            return Understood::Malformed;
        }
        // The line is written when the safepoint ends.
        safepoint.end = self.time_of(env);
        safepoint.start = safepoint.end.earlier_by(safepoint.total_s);
        self.emit(GcEvent::Safepoint(safepoint), out);
        Understood::Yes
    }

    /// JDK 9-12: `Total time for which application threads were stopped: X seconds, Stopping threads took: Y seconds`.
    fn stopped_time_line(
        &mut self,
        rest: &str,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Ok((rest, total_s)) = grammar::seconds_word(rest) else {
            return Understood::Malformed;
        };
        let reaching_s = rest
            .strip_prefix(", Stopping threads took: ")
            .and_then(|r| grammar::seconds_word(r).ok())
            .map(|(_, s)| s);
        if !plausible(total_s) || reaching_s.is_some_and(|r| !plausible(r)) {
            return Understood::Malformed;
        }
        let end = self.time_of(env);
        let begin = self.safepoint_begin.take();
        let safepoint = Safepoint {
            operation: begin.as_ref().map(|b| b.operation.clone()),
            start: begin.map_or_else(|| end.earlier_by(total_s), |b| b.time),
            end,
            reaching_s,
            cleanup_s: None,
            at_safepoint_s: reaching_s.map(|r| (total_s - r).max(0.0)),
            leaving_s: None,
            total_s,
        };
        self.emit(GcEvent::Safepoint(safepoint), out);
        Understood::Yes
    }

    /// `Allocation Stall (thread name) 0.706ms`; the thread name may hold parentheses.
    fn stall_line(
        &mut self,
        kind: StallKind,
        rest: &str,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Some((thread, duration)) = rest.rsplit_once(") ") else {
            return Understood::Malformed;
        };
        let Ok(("", duration_s)) = grammar::duration(duration) else {
            return Understood::Malformed;
        };
        if !plausible(duration_s) {
            return Understood::Malformed;
        }
        self.infer_collector(Some(Collector::Z));
        let end = self.time_of(env);
        self.emit(
            GcEvent::Stall(Stall {
                kind,
                thread: thread.to_string(),
                end,
                duration_s,
            }),
            out,
        );
        Understood::Yes
    }

    fn collection_line(
        &mut self,
        id: u64,
        message: &Message,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let body = message.body;
        match body.as_bytes().first() {
            // Indented phase breakdowns, heap tables: the bulk of a gc* log.
            None | Some(b' ') => return Understood::Ignored,
            _ => {}
        }
        if body.starts_with("Pause ") {
            return self.pause_line(id, message, env);
        }
        if body.starts_with("Concurrent ") {
            return self.concurrent_line(id, message, env, out);
        }
        if body.starts_with("Garbage Collection (")
            || body.starts_with("Minor Collection (")
            || body.starts_with("Major Collection (")
        {
            return self.zgc_collection_line(id, body, env, out);
        }
        if body == "To-space exhausted" {
            self.infer_collector(Some(Collector::G1));
            self.open_collection(id).evacuation_failure = true;
            return Understood::Yes;
        }
        // `PSYoungGen: 33275K->5090K(38400K)`, `Eden regions: 6->0(6)`: checked by
        // label first, since most `Label: value` lines are detail we ignore.
        // memchr, not `split_once`: this runs on most lines of a trace-level
        // log, and the two-way string search was a seventh of the whole run.
        let label_value = memchr::memchr_iter(b':', body.as_bytes())
            .find(|&at| body.as_bytes().get(at + 1) == Some(&b' '))
            .map(|at| (&body[..at], &body[at + 2..]));
        if let Some((label, value)) = label_value {
            if let Some(collector) = collector_from_pool(label) {
                // JDK 17+ appends the Eden/From breakdown after the pool's own figures.
                let parsed = grammar::heap_transition(value)
                    .ok()
                    .filter(|(rest, _)| rest.is_empty() || rest.starts_with(' '));
                if let Some((_, transition)) = parsed {
                    self.infer_collector(Some(collector));
                    self.add_pool(
                        id,
                        PoolTransition {
                            name: label.to_string(),
                            before_bytes: transition.before_bytes,
                            after_bytes: transition.after_bytes,
                            capacity_bytes: transition.capacity_bytes,
                        },
                    );
                    return Understood::Yes;
                }
            } else if let Some(region) = label.strip_suffix(" regions") {
                if let Ok(("", (before, after, capacity))) = grammar::region_transition(value) {
                    self.infer_collector(Some(Collector::G1));
                    if let Some(region_bytes) = self.run.region_bytes {
                        self.add_pool(
                            id,
                            PoolTransition {
                                name: format!("{region} regions"),
                                before_bytes: before.saturating_mul(region_bytes),
                                after_bytes: after.saturating_mul(region_bytes),
                                capacity_bytes: capacity.map(|c| c.saturating_mul(region_bytes)),
                            },
                        );
                    }
                    return Understood::Yes;
                }
            }
        }
        if message.zgc_generation.is_some() {
            self.infer_collector(Some(Collector::ZGenerational));
        }
        Understood::Ignored
    }

    fn pause_line(&mut self, id: u64, message: &Message, env: &Envelope) -> Understood {
        let Ok((_, line)) = grammar::phase_line(message.body) else {
            return Understood::Malformed;
        };
        if line.duration_s.is_some_and(|d| !plausible(d)) {
            return Understood::Malformed;
        }
        self.infer_collector(collector_from_pause(
            line.name,
            &line.groups,
            message.zgc_generation,
        ));
        let mut qualifiers: Vec<String> = Vec::new();
        let mut cause: Option<String> = None;
        let mut evacuation_failure = false;
        for group in &line.groups {
            if group.starts_with("Evacuation Failure") {
                evacuation_failure = true;
                qualifiers.push(group.to_string());
            } else if QUALIFIERS.contains(group) {
                qualifiers.push(group.to_string());
            } else if cause.is_none() {
                cause = Some(group.to_string());
            }
        }
        let generation = pause_generation(
            self.run.collector,
            line.name,
            &qualifiers,
            message.zgc_generation,
        );
        let time = self.time_of(env);
        let Some(duration_s) = line.duration_s else {
            // The `gc,start` twin of a pause: remember when it began.
            let open = self.open_collection(id);
            open.pause_start = Some(time);
            if cause.is_some() {
                open.cause = cause;
            }
            if generation.is_some() {
                open.generation = generation;
            }
            return Understood::Yes;
        };
        // HotSpot accounts a generational-ZGC pause to the minor collection
        // whenever one is running (ZServiceabilityPauseTracer::minor_is_active),
        // so an old-generation pause during a minor collection is a minor pause.
        match message.zgc_generation {
            Some('y') => qualifiers.push("Minor".to_string()),
            Some(_) if self.run.zgc_minor_active.is_some() => qualifiers.push("Minor".to_string()),
            Some(_) if !qualifiers.iter().any(|q| q == "Major") => {
                qualifiers.push("Major".to_string())
            }
            _ => {}
        }
        let collector = self.run.collector;
        let open = self.open_collection(id);
        let start = open
            .pause_start
            .take()
            .unwrap_or_else(|| time.earlier_by(duration_s));
        let cause = cause.or_else(|| open.cause.clone());
        let generation = generation.or(open.generation);
        let pools = std::mem::take(&mut open.pools);
        let evacuation_failure = evacuation_failure || std::mem::take(&mut open.evacuation_failure);
        // A collection is over with its pause unless a cycle spans it (ZGC)
        // or later pauses of the cycle inherit its generation (Shenandoah's
        // `Pause Final Update Refs` after `Pause Init Mark (Young)`). Kept, it
        // would only fill the parser's checkpointed state.
        if open.cycle_start.is_none() && collector != Collector::Shenandoah {
            self.open.remove(&id);
        }
        let pause = Pause {
            gc_id: Some(id),
            collector,
            full: line.name == "Pause Full",
            degenerated: line.name.starts_with("Pause Degenerated"),
            humongous: cause.as_deref().is_some_and(|c| c.contains("Humongous")),
            explicit: cause.as_deref() == Some("System.gc()"),
            name: line.name.to_string(),
            qualifiers,
            cause,
            generation,
            start,
            end: time,
            duration_s,
            heap: line.heap,
            pools,
            cpu: None,
            evacuation_failure,
        };
        self.pending = Some(pause);
        Understood::Yes
    }

    fn concurrent_line(
        &mut self,
        id: u64,
        message: &Message,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Ok((_, line)) = grammar::phase_line(message.body) else {
            // Shapes such as JDK 9's `Concurrent Mark (0.298s, 0.318s)` carry nothing we need.
            return Understood::Ignored;
        };
        if line.duration_s.is_some_and(|d| !plausible(d)) {
            return Understood::Malformed;
        }
        if line
            .groups
            .iter()
            .any(|g| *g == "Young" || *g == "Old" || *g == "Global")
        {
            self.infer_collector(Some(Collector::Shenandoah));
        }
        let Some(duration_s) = line.duration_s else {
            return Understood::Ignored;
        };
        let collector = self.run.collector;
        let end = self.time_of(env);
        if line.name.ends_with(" Cycle") {
            self.infer_collector(Some(Collector::G1));
            let cause = self.open.get(&id).and_then(|o| o.cause.clone());
            let cycle = Cycle {
                gc_id: Some(id),
                collector: self.run.collector,
                name: line.name.to_string(),
                cause,
                end,
                duration_s: Some(duration_s),
                heap: line.heap,
            };
            self.emit(GcEvent::Cycle(cycle), out);
            return Understood::Yes;
        }
        let generation = match message.zgc_generation {
            Some('y') | Some('Y') => Some(Generation::Young),
            Some(_) => Some(Generation::Old),
            None => line
                .groups
                .iter()
                .find_map(|g| generation_from_qualifier(g)),
        };
        let phase = ConcurrentPhase {
            gc_id: Some(id),
            collector,
            name: line.name.to_string(),
            generation,
            end,
            duration_s,
        };
        self.emit(GcEvent::ConcurrentPhase(phase), out);
        Understood::Yes
    }

    /// ZGC cycle lines: `Garbage Collection (cause) a->b` (single generation),
    /// `Minor|Major Collection (cause) a->b D s` (generational).
    fn zgc_collection_line(
        &mut self,
        id: u64,
        body: &str,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Ok((_, line)) = grammar::phase_line(body) else {
            return Understood::Malformed;
        };
        if line.duration_s.is_some_and(|d| !plausible(d)) {
            return Understood::Malformed;
        }
        self.infer_collector(Some(if line.name == "Garbage Collection" {
            Collector::Z
        } else {
            Collector::ZGenerational
        }));
        let time = self.time_of(env);
        let cause = line.groups.first().map(|g| g.to_string());
        let minor = line.name == "Minor Collection";
        if line.heap.is_none() {
            if minor {
                self.run.zgc_minor_active = Some(id);
            }
            let open = self.open_collection(id);
            open.cycle_start = Some(time);
            open.cause = cause;
            return Understood::Yes;
        }
        if minor && self.run.zgc_minor_active == Some(id) {
            self.run.zgc_minor_active = None;
        }
        let started = self.open.get(&id).and_then(|o| o.cycle_start);
        let duration_s = line.duration_s.or_else(|| match (started, time.uptime_s) {
            (
                Some(LogTime {
                    uptime_s: Some(s), ..
                }),
                Some(e),
            ) => Some(e - s),
            (Some(LogTime { wall: Some(s), .. }), _) => time
                .wall
                .map(|e| (e - s).num_microseconds().unwrap_or(0) as f64 / 1e6),
            _ => None,
        });
        let cycle = Cycle {
            gc_id: Some(id),
            collector: self.run.collector,
            name: line.name.to_string(),
            cause,
            end: time,
            duration_s,
            heap: line.heap,
        };
        self.open.remove(&id);
        self.emit(GcEvent::Cycle(cycle), out);
        Understood::Yes
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

fn generation_from_qualifier(qualifier: &str) -> Option<Generation> {
    match qualifier {
        "Young" => Some(Generation::Young),
        "Old" => Some(Generation::Old),
        "Global" => Some(Generation::Global),
        "Mixed" => Some(Generation::Mixed),
        _ => None,
    }
}

fn pause_generation(
    collector: Collector,
    name: &str,
    qualifiers: &[String],
    zgc_generation: Option<char>,
) -> Option<Generation> {
    if name == "Pause Full" {
        return Some(Generation::Full);
    }
    match zgc_generation {
        Some('y') | Some('Y') => return Some(Generation::Young),
        Some(_) => return Some(Generation::Old),
        None => {}
    }
    if let Some(generation) = qualifiers.iter().find_map(|q| generation_from_qualifier(q)) {
        return Some(generation);
    }
    match (collector, name) {
        (_, "Pause Mixed") => Some(Generation::Mixed),
        (_, "Pause Young") | (Collector::G1, "Pause Initial Mark") => Some(Generation::Young),
        (Collector::G1 | Collector::Cms, "Pause Remark")
        | (Collector::G1, "Pause Cleanup")
        | (Collector::Cms, "Pause Initial Mark") => Some(Generation::Old),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &[u8]) -> (Vec<GcEvent>, ParseStats) {
        let mut parser = GcLogParser::default();
        let mut events = Vec::new();
        parser.feed(text, &mut events);
        parser.finish(&mut events);
        (events, parser.stats().clone())
    }

    fn malformed(stats: &ParseStats) -> u64 {
        stats
            .unparsed
            .get(&UnparsedKind::MalformedEvent)
            .copied()
            .unwrap_or(0)
    }

    #[test]
    fn durations_beyond_a_day_are_malformed_events() {
        let lines = [
            "[0.2s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 99999999999999999999999999ms",
            "[0.2s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 86400001ms",
            "[0.2s][info][gc] GC(2) Concurrent Mark 99999999999.000ms",
            "[0.2s][info][gc] GC(3) Concurrent Mark Cycle 86401.0s",
            "[0.2s][info][gc] GC(4) Garbage Collection (Warmup) 24M(10%)->4M(2%) 100000s",
            "[0.2s][info][gc] Allocation Stall (main) 90000000.0ms",
            "[0.2s][info][safepoint] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 1 ns, At safepoint: 1 ns, Total: 18446744073709551615 ns",
            "[0.2s][info][safepoint] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 86400000000001 ns, At safepoint: 1 ns, Total: 2 ns",
            "[0.2s][info][safepoint] Total time for which application threads were stopped: 86400.5 seconds, Stopping threads took: 0.1 seconds",
            "[0.2s][info][safepoint] Total time for which application threads were stopped: 0.5 seconds, Stopping threads took: 1000000000 seconds",
        ];
        for line in lines {
            let (events, stats) = parse(format!("{line}\n").as_bytes());
            assert!(events.is_empty(), "{line}: {events:?}");
            assert_eq!(malformed(&stats), 1, "{line}");
        }
    }

    #[test]
    fn a_day_long_pause_still_counts() {
        let (events, stats) = parse(
            b"[0.2s][info][gc] GC(0) Pause Full (System.gc()) 24M->4M(256M) 86400000.000ms\n",
        );
        let [GcEvent::Pause(pause)] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!(pause.duration_s, 86400.0);
        assert_eq!(stats.unparsed_total(), 0);
    }

    #[test]
    fn an_invalid_byte_in_a_harmless_place_keeps_the_event() {
        let (events, stats) = parse(
            b"[0.2s][info][gc] GC(0) Pause Young (Normal) (G1 Evac\xffuation Pause) 24M->4M(256M) 7.033ms\n\
              [0.3s][info][safepoint] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 2000 ns, At safepoint: 3000 ns, Total: 5000 ns, Threads: 3 runn\xc3ble\n",
        );
        let [GcEvent::Pause(pause), GcEvent::Safepoint(safepoint)] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!(pause.duration_s, 0.007033);
        assert_eq!(pause.cause.as_deref(), Some("G1 Evac\u{fffd}uation Pause"));
        assert_eq!(safepoint.total_s, 0.000005);
        assert_eq!(stats.unparsed_total(), 0);
    }

    #[test]
    fn an_invalid_byte_that_breaks_the_line_is_counted_as_invalid_utf8() {
        let (events, stats) = parse(
            b"[0.2s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 7.0\xff3ms\n\
              [0.2s][info][gc,phases] GC(0)   Other: 0.\xff1ms\n\
              \xfe\xff binary\n",
        );
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(stats.unparsed.get(&UnparsedKind::InvalidUtf8), Some(&3));
        assert_eq!(stats.unparsed_total(), 3);
        assert_eq!(stats.ignored_lines, 0);
    }

    #[test]
    fn a_nul_block_does_not_swallow_the_next_pause() {
        let second = b"[0.300s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 30M->6M(256M) 5.000ms\n";
        for first in [
            &b"[0.207s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\n\0\0\0\0"[..],
            &b"[0.207s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\0\0\0\0"[..],
            &b"\0\0\0[0.207s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 14M->12M(128M) 7.033ms\n\0\0\0"[..],
        ] {
            let (events, stats) = parse(&[first, &second[..]].concat());
            let durations: Vec<f64> = events
                .iter()
                .filter_map(|e| match e {
                    GcEvent::Pause(p) => Some(p.duration_s),
                    _ => None,
                })
                .collect();
            assert_eq!(durations, vec![0.007033, 0.005], "{first:?}");
            assert_eq!((stats.lines, stats.unparsed_total()), (2, 0));
        }
    }

    /// The shape the hostile-host trial met: a space between the duration
    /// and its unit. Shenandoah's end-of-run table (`gc,stats`, no `GC(N)`)
    /// has the same spacing and is a total, not a pause.
    #[test]
    fn a_space_before_the_unit_keeps_the_pause() {
        let (events, stats) = parse(
            b"[2021-03-01T10:00:00.000+0000][info][gc] GC(5) Pause Young (Normal) (G1 Evacuation Pause) 1338M->1324M(5120M) 6.363 ms\n\
              [2021-03-01T10:00:01.000+0000][info][gc] GC(6) Pause Remark 1400M->1390M(5120M) 250 us\n\
              [2021-03-01T10:00:02.000+0000][info][gc,stats] Pause Init Mark (G)  1516 us\n",
        );
        let durations: Vec<f64> = events
            .iter()
            .filter_map(|e| match e {
                GcEvent::Pause(p) => Some(p.duration_s),
                _ => None,
            })
            .collect();
        assert_eq!(durations.len(), 2, "{durations:?}");
        assert!((durations[0] - 0.006363).abs() < 1e-12);
        assert!((durations[1] - 0.000250).abs() < 1e-12);
        assert_eq!(stats.unparsed_total(), 0);
    }

    /// A checkpoint holds the parser's state every second: finished
    /// collections must not stay in it (they used to, up to 128 of them).
    #[test]
    fn finished_collections_leave_no_state_behind() {
        let mut log = String::new();
        for id in 0..200 {
            log.push_str(&format!(
                "[1.0s][info][gc,start] GC({id}) Pause Young (Normal) (G1 Evacuation Pause)\n\
                 [1.0s][info][gc] GC({id}) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.210ms\n\
                 [1.0s][info][gc,cpu] GC({id}) User=0.01s Sys=0.00s Real=0.00s\n"
            ));
        }
        let mut parser = GcLogParser::default();
        let mut events = Vec::new();
        parser.feed(log.as_bytes(), &mut events);
        assert_eq!(events.len(), 200);
        assert!(parser.open.is_empty(), "{} open", parser.open.len());
    }

    #[test]
    fn absurd_cpu_times_are_dropped_but_the_pause_kept() {
        let (events, stats) = parse(
            b"[0.2s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 7.033ms\n\
              [0.2s][info][gc,cpu] GC(0) User=99999999.00s Sys=0.00s Real=0.01s\n",
        );
        let [GcEvent::Pause(pause)] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!(pause.duration_s, 0.007033);
        assert_eq!(pause.cpu, None);
        assert_eq!(malformed(&stats), 1);
    }
}
