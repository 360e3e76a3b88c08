//! The JDK 6 to 8 GC log format (`-XX:+PrintGCDetails`, `-verbose:gc`), read
//! behind the same front door as unified logging: [`GcLogParser`] hands every
//! undecorated line to [`LegacyParser::line`] first.
//!
//! A JDK 8 event is a tree of bracket groups, each optionally preceded by
//! its own stamps (`2016-04-14T22:30:09.108+0200: 1.053: #4: [ParNew: ...]`).
//! One event can span many lines (tenuring distribution, G1 ergonomics,
//! `PrintHeapAtGC` blocks, `PrintFLSStatistics` tables in between) and carry
//! concurrent CMS/G1 output spliced into it. So lines are joined until the
//! brackets balance, known interleaved blocks are skipped, the tree is parsed,
//! spliced concurrent groups are taken out as events of their own, and what
//! remains is one pause.
//!
//! A pause lasts the `, N secs]` figure of its outermost group: the
//! collector's own elapsed time, which is what the JVM's
//! `GarbageCollectorMXBean` accumulates and what GCViewer reads. `[Times:
//! real=...]` is rounded to 10 ms and only fills [`CpuTimes`].
//!
//! [`GcLogParser`]: crate::GcLogParser

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use memchr::memmem::Finder;
use nom::bytes::complete::tag;
use nom::sequence::{delimited, preceded};
use nom::{IResult, Parser};
use serde::{Deserialize, Serialize};

use crate::envelope::parse_iso8601;
use crate::events::*;
use crate::grammar;
use crate::unified::plausible;

/// Bracket groups nest at most this deep in a real log (four or five); a
/// deeper tree is garbage, and recursion must stay bounded.
const MAX_DEPTH: usize = 12;

/// At most this many pool transitions are kept per pause.
const MAX_POOLS: usize = 16;

/// `Total time for which application threads were stopped: ` (PrintGCApplicationStoppedTime).
const STOPPED_TIME: &str = "Total time for which application threads were stopped: ";

/// Old-generation pools: a young collection that also ran one of these with
/// its own duration (promotion failed, concurrent mode failure) was full.
const OLD_POOLS: &[&str] = &["Tenured", "CMS", "PSOldGen", "ParOldGen"];

/// Lines HotSpot writes inside or between GC events that carry nothing
/// pausewatch uses: tenuring distribution, adaptive size policy,
/// `PrintFLSStatistics`, `PrintCMSInitiationStatistics`, `PrintReferenceGC`
/// summaries, G1 and Shenandoah sentences.
const NOISE_PREFIXES: &[&str] = &[
    "Desired survivor size",
    "- age ",
    "AdaptiveSize",
    "PSAdaptiveSize",
    "PSYoungGen::",
    "PSYoungGen: ",
    "Statistics for ",
    "---",
    "Total Free Space:",
    "Max   Chunk Size:",
    "Number of Blocks:",
    "Av.  Block  Size:",
    "Tree      Height:",
    "Before GC:",
    "After GC:",
    "CMS: Large ",
    "GC locker: ",
    "Finished ",
    "Concurrent ",
    "Pacer for ",
    "Trigger: ",
    "Free: ",
    "Evacuation Reserve: ",
    "Uncommitted ",
    "Cancelling ",
    "Periodic GC ",
    "Capacity: ",
    "Using ",
    "Adaptive CSet ",
    "Collectable Garbage: ",
    "Immediate Garbage: ",
    "Heap",
    "Shenandoah ",
    "GC STATISTICS",
    "Pause ",
    "All times are ",
    "all workers. ",
    "Allocation pacing ",
    "===",
    "size[",
    "No shared spaces ",
    "time_until_cms",
    "cms_",
    "promotion_rate=",
    "occupancy=",
    "initiatingOccupancy=",
    "free=",
    "contiguous_available=",
    "initiatingPermOccupancy=",
    "CMSCollector ",
    ", [Metaspace: ",
    "Pacing ",
];

/// What became of a line handed to [`LegacyParser::line`].
#[derive(Debug, PartialEq)]
pub(crate) enum Claim<'a> {
    /// Not JDK 8 output: the unified parser reads it.
    NotLegacy,
    /// It produced, completed or continued an event.
    Used,
    /// JDK 8 GC logging that carries nothing pausewatch uses.
    Ignored,
    /// It looked like a JDK 8 GC event but did not parse.
    Malformed,
    /// `PrintGCApplicationStoppedTime`: the safepoint line shared with JDK
    /// 9-12 unified logging, for the unified parser to read.
    StoppedTime { stamp: Stamp, rest: &'a str },
    /// The `-Xloggc` file header.
    Preamble(Preamble),
}

/// What the `-Xloggc` header says about the JVM.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Preamble {
    pub collector: Option<Collector>,
    pub version: Option<String>,
    pub max_heap_bytes: Option<u64>,
}

/// What a line's, or a bracket group's, prefix says:
/// `2015-07-22T14:53:42.655-0100: 1.807: #2: `.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    pub wall: Option<DateTime<Utc>>,
    pub uptime_s: Option<f64>,
    /// `-XX:+PrintGCID`.
    pub gc_id: Option<u64>,
}

impl Stamp {
    pub fn time(&self) -> LogTime {
        LogTime {
            uptime_s: self.uptime_s,
            wall: self.wall,
        }
    }

    fn is_empty(&self) -> bool {
        self.wall.is_none() && self.uptime_s.is_none() && self.gc_id.is_none()
    }
}

/// The JDK 8 side of a [`GcLogParser`](crate::GcLogParser)'s state: small
/// and serialisable, since it is checkpointed with the rest.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct LegacyParser {
    /// An event whose brackets are still open, its lines joined.
    open: Option<String>,
    /// A pause waiting for its G1 detail lines or its `[Times: ...]` line.
    pending: Option<Pause>,
    /// Inside a `PrintHeapAtGC` block (`{Heap before GC` ... `}`).
    in_heap_block: bool,
    /// JDK 8 output was seen in this stream: its noise lines are GC logging.
    active: bool,
    /// Joined lines longer than this are dropped, as over-long lines are.
    max_bytes: usize,
}

impl Default for LegacyParser {
    /// The state a checkpoint written before this parser existed loads as.
    fn default() -> Self {
        LegacyParser::new(crate::ParserOptions::default().max_line_bytes)
    }
}

impl LegacyParser {
    pub fn new(max_bytes: usize) -> Self {
        LegacyParser {
            open: None,
            pending: None,
            in_heap_block: false,
            active: false,
            max_bytes,
        }
    }

    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Emits a pause still waiting for its detail lines.
    pub fn flush(&mut self, out: &mut Vec<GcEvent>) {
        if let Some(pause) = self.pending.take() {
            out.push(GcEvent::Pause(pause));
        }
    }

    /// Reads one undecorated line (trailing blanks already trimmed); events
    /// go to `out` with the times the log gives, not yet anchored.
    pub fn line<'a>(&mut self, text: &'a str, out: &mut Vec<GcEvent>) -> Claim<'a> {
        if self.in_heap_block {
            if text.starts_with([' ', '\t']) {
                return Claim::Ignored;
            }
            self.in_heap_block = false;
            if text.starts_with('}') {
                return Claim::Ignored;
            }
        }
        // `PrintHeapAtGC`: the block may start at the end of an event's line.
        if let Some(at) = HEAP_BEFORE.find(text.as_bytes()) {
            self.in_heap_block = true;
            self.active = true;
            // `2.385: {Heap before GC ...`: nothing but stamps before it.
            if leading_stamp(&text[..at]).1.trim().is_empty() {
                return Claim::Ignored;
            }
            return self.line(&text[..at], out);
        }
        if text.starts_with("Heap after GC") || (self.active && text == "Heap") {
            self.in_heap_block = true;
            return Claim::Ignored;
        }
        let text = cut_spliced(text);
        if self.pending.is_some() {
            if text.starts_with([' ', '\t']) || text.starts_with("[Times: ") {
                return self.detail_line(text.trim_start(), out);
            }
            self.flush(out);
        }
        if let Some(open) = self.open.take() {
            if let Some(claim) = self.continue_open(open, text, out) {
                return claim;
            }
        }
        self.fresh_line(text, out)
    }

    /// A line while an event's brackets are open: its continuation, noise
    /// in between, or (`None`) the start of something new.
    fn continue_open(
        &mut self,
        mut open: String,
        text: &str,
        out: &mut Vec<GcEvent>,
    ) -> Option<Claim<'static>> {
        let trimmed = text.trim_start();
        let (_, after_stamp) = leading_stamp(trimmed);
        // Only a CMS remark holds a whole young collection
        // (-XX:+CMSScavengeBeforeRemark); elsewhere a new collection means
        // the open one was cut short (a crash, a truncated file).
        if starts_collection(after_stamp) && !open.contains("[YG occupancy") {
            return None;
        }
        // `: 2624K->...` after tenuring lines, `, 0.0052 secs]`, ` 150M->150M(256M)`
        // after a spliced concurrent phase, ` (concurrent mode failure): ...`.
        let continues = matches!(
            trimmed.as_bytes().first(),
            Some(b':' | b',' | b'[' | b'(' | b'0'..=b'9')
        ) && !is_histogram_row(trimmed);
        if !continues {
            self.open = Some(open);
            return Some(Claim::Ignored);
        }
        // `PrintFLSStatistics` announces its table at the end of a line.
        let text = text
            .strip_suffix("Before GC:")
            .or_else(|| text.strip_suffix("After GC:"))
            .unwrap_or(text);
        if open.len() + text.len() > self.max_bytes {
            return Some(Claim::Malformed);
        }
        open.push_str(text);
        Some(self.event_text(&open, out))
    }

    fn fresh_line<'a>(&mut self, text: &'a str, out: &mut Vec<GcEvent>) -> Claim<'a> {
        let trimmed = text.trim_start();
        let (stamp, rest) = leading_stamp(trimmed);
        // A `[Times: ...]` whose event is gone: the first line of a rotated file.
        if rest.starts_with("[Times: ") {
            self.active = true;
            return Claim::Ignored;
        }
        if rest.starts_with('[') {
            if !self.active && !starts_legacy_group(rest) {
                return Claim::NotLegacy;
            }
            self.active = true;
            return self.event_text(trimmed, out);
        }
        if let Some(rest) = rest.strip_prefix(STOPPED_TIME) {
            if !stamp.is_empty() {
                self.active = true;
            }
            return Claim::StoppedTime { stamp, rest };
        }
        if rest.starts_with("Application time: ") {
            self.active = true;
            return Claim::Ignored;
        }
        if let Some(preamble) = preamble(text) {
            self.active = true;
            return Claim::Preamble(preamble);
        }
        // `-verbose:gc` on stdout: a GC event after application output on one line.
        if let Some(at) = find_collection(text) {
            self.active = true;
            return match self.event_text(&text[at..], out) {
                Claim::Malformed => Claim::NotLegacy,
                claim => claim,
            };
        }
        // `-XX:+UseGCLogFileRotation` markers: `2016-04-14 22:37:55 GC log file created ...`.
        if (self.active && is_noise(text)) || text.contains(" GC log file ") {
            self.active = true;
            return Claim::Ignored;
        }
        Claim::NotLegacy
    }

    /// Parses the text of the events that start at a stamp or bracket, one
    /// after another on a line; keeps the last open when its brackets do not
    /// balance yet. What becomes of the line is what became of its first.
    fn event_text(&mut self, text: &str, out: &mut Vec<GcEvent>) -> Claim<'static> {
        let mut text = text;
        let mut first = None;
        loop {
            let (stamp, rest) = leading_stamp(text);
            let (claim, next) = match group(rest, stamp, 0) {
                Err(Unbalanced::Open) if text.len() <= self.max_bytes => {
                    self.open = Some(text.to_string());
                    (Claim::Used, None)
                }
                Err(_) => (Claim::Malformed, None),
                Ok((root, after)) => self.root(root, after, out),
            };
            let claim = first.take().unwrap_or(claim);
            match next {
                // Another group on the same line, such as a concurrent
                // phase that ended while the pause was being written.
                Some(next) => {
                    first = Some(claim);
                    text = next;
                }
                None => return claim,
            }
        }
    }

    /// One complete top-level group; returns what became of it and the
    /// rest of the line when another group starts there.
    fn root<'t>(
        &mut self,
        root: Group,
        after: &'t str,
        out: &mut Vec<GcEvent>,
    ) -> (Claim<'static>, Option<&'t str>) {
        let after = after.trim_start();
        let next = leading_stamp(after).1.starts_with('[').then_some(after);
        if let Some(phase) = concurrent_phase(&root) {
            if !plausible(phase.duration_s) {
                return (Claim::Malformed, next);
            }
            out.push(GcEvent::ConcurrentPhase(phase));
            return (Claim::Used, next);
        }
        let Some(mut pause) = interpret(&root, out) else {
            let claim = if is_concurrent(&root.text) || ignored_group(&root.text) {
                Claim::Used
            } else if names_collection(&root.text) {
                Claim::Malformed
            } else {
                // Detail groups with no pause to belong to: a stray `[Times:`,
                // G1 string deduplication statistics.
                Claim::Ignored
            };
            return (claim, next);
        };
        // A pause earlier on the line came first.
        self.flush(out);
        if let Some(cpu) = after.strip_prefix('[').and_then(times) {
            pause.cpu = Some(cpu);
            out.push(GcEvent::Pause(pause));
            return (Claim::Used, None);
        }
        self.pending = Some(pause);
        (Claim::Used, next)
    }

    /// An indented line after a pause: G1's phase breakdown and heap
    /// summary, or the `[Times: ...]` that ends the event.
    fn detail_line<'a>(&mut self, trimmed: &str, out: &mut Vec<GcEvent>) -> Claim<'a> {
        let Some(pause) = self.pending.as_mut() else {
            return Claim::Ignored;
        };
        if let Some(cpu) = trimmed.strip_prefix('[').and_then(times) {
            pause.cpu = Some(cpu);
            self.flush(out);
            return Claim::Used;
        }
        if let Some(summary) = trimmed.strip_prefix("[Eden: ") {
            g1_summary(pause, summary);
            return Claim::Used;
        }
        // JDK 6/7 G1: `   [ 4096K->3936K(16M)]`.
        if let Some(heap) = trimmed.strip_prefix("[ ") {
            if let Ok((_, heap)) = grammar::heap_transition(heap) {
                pause.heap = Some(heap);
                return Claim::Used;
            }
        }
        Claim::Ignored
    }
}

/// `Eden: 24.0M(24.0M)->0.0B(30.0M) Survivors: 0.0B->3072.0K Heap: 33.6M(256.0M)->13.9M(256.0M)]`.
fn g1_summary(pause: &mut Pause, summary: &str) {
    let mut fields = vec![("Eden", summary)];
    for label in ["Survivors", "Heap"] {
        if let Some(at) = summary.find(&format!(" {label}: ")) {
            fields.push((label, &summary[at + label.len() + 3..]));
        }
    }
    for (label, value) in fields {
        let Ok((_, transition)) = grammar::heap_transition(value) else {
            continue;
        };
        if label == "Heap" {
            pause.heap = Some(transition);
        } else if pause.pools.len() < MAX_POOLS {
            pause.pools.push(PoolTransition {
                name: label.to_string(),
                before_bytes: transition.before_bytes,
                after_bytes: transition.after_bytes,
                capacity_bytes: transition.capacity_bytes,
            });
        }
    }
}

/// `Times: user=0.08 sys=0.02, real=0.03 secs`, the opening bracket taken off.
fn times(text: &str) -> Option<CpuTimes> {
    let parsed: IResult<&str, CpuTimes> = (
        preceded(tag("Times: user="), grammar::decimal),
        preceded(tag(" sys="), grammar::decimal),
        delimited(tag(", real="), grammar::decimal, tag(" secs")),
    )
        .map(|(user_s, sys_s, real_s)| CpuTimes {
            user_s,
            sys_s,
            real_s,
        })
        .parse(text);
    parsed.ok().map(|(_, cpu)| cpu)
}

/// The leading stamps of a line: date stamp, uptime and GC id, each optional.
/// Threads that log at once interleave their stamps
/// (`2015-02-25T12:47:08.028+0100: 2015-02-25T12:47:08.028+0100: 6616,888: `):
/// repeated stamps are skipped, the first of each kind kept.
pub(crate) fn leading_stamp(text: &str) -> (Stamp, &str) {
    let mut stamp = Stamp::default();
    let mut rest = text;
    loop {
        if rest.as_bytes().get(10) == Some(&b'T') {
            if let Some(wall) = rest.get(..28).and_then(parse_iso8601) {
                if let Some(after) = rest[28..].strip_prefix(": ") {
                    stamp.wall.get_or_insert(wall);
                    rest = after;
                    continue;
                }
            }
        }
        if let Some((uptime, after)) = uptime_prefix(rest) {
            stamp.uptime_s.get_or_insert(uptime);
            rest = after;
            continue;
        }
        break;
    }
    if let Some((id, after)) = rest.strip_prefix('#').and_then(id_prefix) {
        stamp.gc_id = Some(id);
        rest = after;
    }
    (stamp, rest)
}

/// `1.807: ` or `366,174: ` at the start of `text`.
fn uptime_prefix(text: &str) -> Option<(f64, &str)> {
    let (rest, uptime) = grammar::decimal(text).ok()?;
    let consumed = &text[..text.len() - rest.len()];
    if !consumed.contains(['.', ',']) {
        return None;
    }
    Some((uptime, rest.strip_prefix(": ")?))
}

fn id_prefix(text: &str) -> Option<(u64, &str)> {
    let (rest, id) = grammar::integer(text).ok()?;
    Some((id, rest.strip_prefix(": ")?))
}

/// Splits the stamps off the end of the text that precedes a nested group:
/// `GC (Allocation Failure) 2016-03-22T10:02:41.962-0100: 13.396: ` (the
/// stamps may follow a word directly when concurrent output was spliced in).
fn trailing_stamp(text: &str) -> (&str, Stamp) {
    let mut stamp = Stamp::default();
    let mut rest = text;
    if let Some(before) = rest.strip_suffix(": ") {
        let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && before[..before.len() - digits].ends_with('#') {
            stamp.gc_id = before[before.len() - digits..].parse().ok();
            rest = &before[..before.len() - digits - 1];
        }
    }
    if let Some(before) = rest.strip_suffix(": ") {
        let start = before
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',')
            .len();
        if let Some((uptime, "")) = uptime_prefix_exact(&before[start..]) {
            stamp.uptime_s = Some(uptime);
            rest = &before[..start];
        }
    }
    if let Some(before) = rest.strip_suffix(": ") {
        if let Some(wall) = before
            .len()
            .checked_sub(28)
            .and_then(|at| before.get(at..))
            .and_then(parse_iso8601)
        {
            stamp.wall = Some(wall);
            rest = &before[..before.len() - 28];
        }
    }
    (rest, stamp)
}

/// A whole `D[.,]D` token as an uptime.
fn uptime_prefix_exact(token: &str) -> Option<(f64, &str)> {
    let separators = token.matches(['.', ',']).count();
    if separators != 1 || token.starts_with(['.', ',']) {
        return None;
    }
    let (rest, value) = grammar::decimal(token).ok()?;
    Some((value, rest))
}

/// One bracket group: its stamps, its own text with nested groups taken
/// out, and those groups.
#[derive(Debug, Default)]
struct Group {
    stamp: Stamp,
    text: String,
    children: Vec<Group>,
}

enum Unbalanced {
    /// The group is not closed yet: more lines may close it.
    Open,
    /// Nested beyond any real log.
    Garbled,
}

/// Parses the group that opens at `text[0] == '['`; returns it and the text after its `]`.
fn group(text: &str, stamp: Stamp, depth: usize) -> Result<(Group, &str), Unbalanced> {
    if depth > MAX_DEPTH || !text.starts_with('[') {
        return Err(Unbalanced::Garbled);
    }
    let mut node = Group {
        stamp,
        ..Group::default()
    };
    let mut rest = &text[1..];
    loop {
        let Some(at) = memchr::memchr2(b'[', b']', rest.as_bytes()) else {
            return Err(Unbalanced::Open);
        };
        if rest.as_bytes()[at] == b']' {
            node.text.push_str(&rest[..at]);
            return Ok((node, &rest[at + 1..]));
        }
        let (before, child_stamp) = trailing_stamp(&rest[..at]);
        node.text.push_str(before);
        let (child, after) = group(&rest[at..], child_stamp, depth + 1)?;
        node.children.push(child);
        rest = after;
    }
}

/// Output that HotSpot starts in the middle of an event's line and
/// continues on lines of its own (`PrintAdaptiveSizePolicy`,
/// `PrintFLSStatistics`): the event's part of the line ends where it starts.
static SPLICED: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| {
    [
        Finder::new("AdaptiveSize"),
        Finder::new("Before GC:"),
        Finder::new("After GC:"),
    ]
});

/// `-XX:+PrintHeapAtGC`'s block, which may start at the end of an event's line.
static HEAP_BEFORE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("{Heap before GC"));

/// Collections in `-verbose:gc` output mixed with other lines.
static COLLECTIONS: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| {
    [
        Finder::new("[GC ("),
        Finder::new("[Full GC"),
        Finder::new("[GC pause"),
    ]
});

fn cut_spliced(text: &str) -> &str {
    let Some(open) = memchr::memchr(b'[', text.as_bytes()) else {
        return text;
    };
    SPLICED
        .iter()
        .filter_map(|marker| marker.find(&text.as_bytes()[open..]).map(|at| open + at))
        .min()
        .map_or(text, |at| &text[..at])
}

/// The kinds of top-level event a JDK 6 to 8 log writes.
fn starts_legacy_group(text: &str) -> bool {
    starts_collection(text)
        || text.starts_with("[GC concurrent-")
        || text.starts_with("[CMS-concurrent-")
        || text.starts_with("[ASCMS-concurrent-")
        || text.starts_with("[GC remark")
        || text.starts_with("[GC cleanup")
        || text.starts_with("[Pause ")
        || text.starts_with("[Concurrent ")
        || text.starts_with("[G1Ergonomics")
}

/// A stop-the-world collection starts here: `[GC (`, `[GC pause`, `[GC
/// remark`, `[Full GC`, JDK 6's `[GC--` and `[GC[YG occupancy`, or a `[GC`
/// whose line continues elsewhere.
fn starts_collection(text: &str) -> bool {
    text.starts_with("[Full GC")
        || text.strip_prefix("[GC").is_some_and(|rest| {
            matches!(
                rest.as_bytes().first(),
                None | Some(b' ' | b'(' | b'-' | b'[' | b'0'..=b'9')
            ) && !rest.starts_with(" concurrent-")
        })
}

/// Where a collection starts inside a line of other output, with its stamps.
fn find_collection(text: &str) -> Option<usize> {
    let at = COLLECTIONS
        .iter()
        .filter_map(|needle| needle.find(text.as_bytes()))
        .min()?;
    let (before, _) = trailing_stamp(&text[..at]);
    Some(before.len())
}

/// `   1:       2050241     4701812112  [Ljava.lang.Object;`: a row of the
/// `-XX:+PrintClassHistogramBeforeFullGC` table printed inside a full
/// collection (its `[` never closes).
fn is_histogram_row(trimmed: &str) -> bool {
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && trimmed[digits..].starts_with(": ")
}

/// A collection's group, which must carry a duration.
fn names_collection(text: &str) -> bool {
    let text = text.trim_start();
    ["GC pause", "GC remark", "GC cleanup", "Full GC", "Pause "]
        .iter()
        .any(|name| text.starts_with(name))
        || young_collection(text).is_some()
}

/// What follows `GC` in a young collection's group (`GC (Allocation
/// Failure) ...`, `GC--`, JDK 1.4's `GC 1534K->276K(16256K), ...`), but not
/// in G1's `GC Worker Start (ms): ...` detail groups.
fn young_collection(text: &str) -> Option<&str> {
    text.strip_prefix("GC")
        .filter(|rest| !rest.trim_start().starts_with(char::is_alphabetic))
}

fn is_concurrent(text: &str) -> bool {
    text.starts_with("CMS-concurrent-")
        || text.starts_with("ASCMS-concurrent-")
        || text.starts_with("GC concurrent-")
        || text.starts_with("Concurrent ")
}

/// Top-level groups that are not events: Shenandoah's `start` markers and
/// G1 ergonomics decisions.
fn ignored_group(text: &str) -> bool {
    text.ends_with(", start") || text.ends_with(", start ") || text.starts_with("G1Ergonomics")
}

fn is_noise(text: &str) -> bool {
    text.starts_with([' ', '\t'])
        || text.starts_with('}')
        || NOISE_PREFIXES.iter().any(|p| text.starts_with(p))
}

/// The `-Xloggc` header: the VM line, `Memory:` and `CommandLine flags:`.
fn preamble(text: &str) -> Option<Preamble> {
    if text.starts_with("Memory: ") || text == "/proc/meminfo:" {
        return Some(Preamble::default());
    }
    if text.starts_with("Java HotSpot(TM) ")
        || (text.starts_with("OpenJDK ") && text.contains(" VM ("))
    {
        let version = text
            .split_once(" JRE (")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(version, _)| version.to_string());
        return Some(Preamble {
            version,
            ..Preamble::default()
        });
    }
    let flags = text.strip_prefix("CommandLine flags: ")?;
    let mut preamble = Preamble::default();
    for flag in flags.split_whitespace() {
        let collector = match flag {
            "-XX:+UseG1GC" => Collector::G1,
            "-XX:+UseConcMarkSweepGC" => Collector::Cms,
            "-XX:+UseParallelGC" | "-XX:+UseParallelOldGC" => Collector::Parallel,
            "-XX:+UseSerialGC" => Collector::Serial,
            "-XX:+UseShenandoahGC" => Collector::Shenandoah,
            _ => {
                if let Some(size) = flag.strip_prefix("-XX:MaxHeapSize=") {
                    preamble.max_heap_bytes = size.parse().ok();
                }
                continue;
            }
        };
        preamble.collector = Some(collector);
    }
    Some(preamble)
}

/// The duration a group's own text ends with: `, 0.0146984 secs`,
/// `0.146/0.280 secs` (CMS concurrent: CPU/wall, the wall figure), `1.983 ms`
/// (JDK 8 Shenandoah). A number without a unit is not a duration: G1's
/// detail groups end with bare figures.
fn trailing_duration(text: &str) -> Option<f64> {
    let text = text.trim_end();
    let (number, scale) = if let Some(t) = text.strip_suffix(" secs") {
        (t, 1.0)
    } else if let Some(t) = text.strip_suffix(" sec") {
        (t, 1.0)
    } else {
        (text.strip_suffix(" ms")?, 1e-3)
    };
    trailing_seconds(number).map(|value| value * scale)
}

/// The bare number a text ends with, as JDK 6 G1 ends `GC concurrent-count-end, 0.0019007`.
fn trailing_seconds(number: &str) -> Option<f64> {
    let number = number.trim_end();
    let start = number
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',' || c == '/')
        .len();
    let token = &number[start..];
    let token = token.rsplit('/').next().unwrap_or(token);
    match uptime_prefix_exact(token) {
        Some((value, "")) if value.is_finite() => Some(value),
        _ => None,
    }
}

/// The first `a->b(c)` in a group's own text.
fn heap_in(text: &str) -> Option<HeapTransition> {
    let arrow = text.find("->")?;
    let start = text[..arrow]
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '.' || c == ',')
        .len();
    grammar::heap_transition(&text[start..])
        .ok()
        .map(|(_, heap)| heap)
}

/// The parenthesised groups at the start of `text` (`(System.gc()) (young)`)
/// and what follows them.
fn groups_after(text: &str) -> (Vec<&str>, &str) {
    let mut rest = text;
    let mut groups = Vec::new();
    loop {
        let trimmed = rest.trim_start();
        match grammar::paren_group(trimmed) {
            Ok((after, group)) => {
                groups.push(group);
                rest = after;
            }
            Err(_) => return (groups, rest),
        }
    }
}

/// What a top-level group is. Spliced concurrent phases and a nested young
/// collection (CMS scavenge before remark) go to `out` at once; the pause
/// the group itself stands for is returned, to wait for its `[Times: ...]`.
fn interpret(root: &Group, out: &mut Vec<GcEvent>) -> Option<Pause> {
    let text = root.text.trim();
    let mut pause = blank_pause(root.stamp);
    let rest = if let Some(rest) = text.strip_prefix("GC pause") {
        pause.collector = Collector::G1;
        let (groups, rest) = groups_after(rest);
        g1_groups(&mut pause, &groups);
        // JDK 7's `(young)-- 90M->94M(128M)`: to-space overflow.
        if rest.starts_with("--") {
            pause.evacuation_failure = true;
        }
        rest
    } else if let Some(rest) = text.strip_prefix("GC remark") {
        pause.collector = Collector::G1;
        pause.name = "Pause Remark".to_string();
        pause.generation = Some(Generation::Old);
        rest
    } else if let Some(rest) = text.strip_prefix("GC cleanup") {
        pause.collector = Collector::G1;
        pause.name = "Pause Cleanup".to_string();
        pause.generation = Some(Generation::Old);
        rest
    } else if let Some(rest) = text.strip_prefix("Full GC") {
        pause.name = "Pause Full".to_string();
        pause.generation = Some(Generation::Full);
        pause.full = true;
        let (groups, rest) = groups_after(rest);
        pause.cause = groups.first().map(|g| g.to_string());
        rest
    } else if let Some(rest) = text.strip_prefix("Pause ") {
        // JDK 8 Shenandoah backport: `Pause Init Mark (process weakrefs), 1.983 ms`.
        pause.collector = Collector::Shenandoah;
        let name_end = rest.find(['(', ',']).unwrap_or(rest.len());
        pause.name = format!("Pause {}", rest[..name_end].trim_end());
        pause.degenerated = pause.name.starts_with("Pause Degenerated");
        pause.full = pause.name == "Pause Full";
        pause.generation = pause.full.then_some(Generation::Full);
        let (groups, rest) = groups_after(&rest[name_end..]);
        pause.qualifiers = groups.iter().map(|g| g.to_string()).collect();
        rest
    } else if let Some(rest) = young_collection(text) {
        let rest = match rest.strip_prefix("--") {
            Some(rest) => {
                pause.qualifiers.push("promotion failed".to_string());
                rest
            }
            None => rest,
        };
        let (groups, rest) = groups_after(rest);
        pause.cause = groups.first().map(|g| g.to_string());
        rest
    } else {
        return None;
    };
    let own = trailing_duration(rest).filter(|d| plausible(*d));
    pause.heap = heap_in(rest);
    let nested = children(root, &mut pause, out);
    pause.duration_s = (own? - nested).max(0.0);
    if pause.collector == Collector::Shenandoah {
        // Shenandoah writes its pause line when the pause ends.
        pause.end = pause.start;
        pause.start = pause.end.earlier_by(pause.duration_s);
    } else {
        pause.end = pause.start.later_by(pause.duration_s);
    }
    pause.humongous = pause
        .cause
        .as_deref()
        .is_some_and(|c| c.contains("Humongous"));
    pause.explicit = pause.cause.as_deref() == Some("System.gc()");
    Some(pause)
}

/// `-XX:+PrintGCID` and the stamps of the group a pause starts at.
fn blank_pause(stamp: Stamp) -> Pause {
    let start = stamp.time();
    Pause {
        gc_id: stamp.gc_id,
        collector: Collector::Unknown,
        name: "Pause Young".to_string(),
        generation: Some(Generation::Young),
        start,
        end: start,
        ..Pause::default()
    }
}

/// G1's `(G1 Evacuation Pause) (young) (initial-mark) (to-space exhausted)`,
/// named as unified logging names them (`Mixed`, `Concurrent Start`).
fn g1_groups(pause: &mut Pause, groups: &[&str]) {
    for group in groups {
        match *group {
            "young" => {}
            "mixed" | "partial" => {
                pause.qualifiers.push("Mixed".to_string());
                pause.generation = Some(Generation::Mixed);
            }
            "initial-mark" => pause.qualifiers.push("Concurrent Start".to_string()),
            "to-space exhausted" | "to-space overflow" => {
                pause.evacuation_failure = true;
                pause.qualifiers.push(group.to_string());
            }
            cause if pause.cause.is_none() => pause.cause = Some(cause.to_string()),
            _ => {}
        }
    }
}

/// `CMS-concurrent-mark: 0.005/0.013 secs`, `GC concurrent-mark-end, 0.0027 secs`,
/// Shenandoah's `Concurrent marking, 38.059 ms`; `-start` markers carry no duration.
fn concurrent_phase(group: &Group) -> Option<ConcurrentPhase> {
    let text = group.text.trim();
    // `AS`: JDK 6's -XX:+UseAdaptiveSizePolicy CMS (`ASParNew`, `ASCMS`).
    let text = text.strip_prefix("AS").unwrap_or(text);
    let collector = if text.starts_with("CMS-concurrent-") {
        Collector::Cms
    } else if text.starts_with("GC concurrent-") {
        Collector::G1
    } else if text.starts_with("Concurrent ") {
        Collector::Shenandoah
    } else {
        return None;
    };
    let name_end = text.find([':', ',', '(']).unwrap_or(text.len());
    let name = text[..name_end].trim_end();
    let name = name.strip_suffix("-end").unwrap_or(name);
    let tail = &text[name_end..];
    let duration_s = trailing_duration(tail).or_else(|| trailing_seconds(tail))?;
    Some(ConcurrentPhase {
        gc_id: group.stamp.gc_id,
        collector,
        name: name.to_string(),
        generation: Some(Generation::Old),
        end: group.stamp.time(),
        duration_s,
    })
}

/// Reads a pause's nested groups into it: pools, CMS phase markers, the
/// outcome of failures. Concurrent phases spliced in, and a whole young
/// collection nested in a CMS remark, go to `out`; returns the time of the
/// nested collections, which the outer figure includes.
fn children(root: &Group, pause: &mut Pause, out: &mut Vec<GcEvent>) -> f64 {
    let mut nested_s = 0.0;
    let mut last_nested: Option<usize> = None;
    for child in &root.children {
        let text = child.text.trim();
        // A phase spliced into the pause's group, or into a pool's group:
        // `[CMS2016-...: [CMS-concurrent-mark: ...] (concurrent mode failure): ...]`.
        let spliced = std::iter::once(child)
            .chain(&child.children)
            .filter_map(concurrent_phase)
            .filter(|phase| plausible(phase.duration_s));
        out.extend(spliced.map(GcEvent::ConcurrentPhase));
        if is_concurrent(text) {
            continue;
        }
        if let Some(cpu) = times(text) {
            match last_nested.and_then(|i| out.get_mut(i)) {
                Some(GcEvent::Pause(young)) => young.cpu = Some(cpu),
                _ => pause.cpu = Some(cpu),
            }
            continue;
        }
        if text.starts_with("GC") {
            if let Some(young) = interpret(child, out) {
                nested_s += young.duration_s;
                last_nested = Some(out.len());
                out.push(GcEvent::Pause(young));
            }
            continue;
        }
        let Some((label, value)) = text.split_once(':') else {
            continue;
        };
        let label = label.trim();
        let label = label.strip_prefix("1 AS").unwrap_or(label);
        match label.strip_prefix("1 ").unwrap_or(label) {
            "CMS-initial-mark" => {
                pause.collector = Collector::Cms;
                pause.name = "Pause Initial Mark".to_string();
                pause.generation = Some(Generation::Old);
                continue;
            }
            "CMS-remark" => {
                pause.collector = Collector::Cms;
                pause.name = "Pause Remark".to_string();
                pause.generation = Some(Generation::Old);
                continue;
            }
            _ => {}
        }
        // `ParNew (promotion failed)`, `CMS (concurrent mode failure)`.
        let (pool, failures) = groups_split(label);
        let pool = match pool.strip_prefix("AS") {
            Some(pool @ ("ParNew" | "CMS")) => pool,
            _ => pool,
        };
        // Only a pool's group holds a transition; G1 ergonomics decisions
        // (`G1Ergonomics (CSet Construction) ...: 0, ...`) do not.
        let Ok((after, transition)) = grammar::heap_transition(value.trim_start()) else {
            continue;
        };
        for failure in failures {
            pause.qualifiers.push(failure.to_string());
        }
        if let Some(collector) = crate::unified::collector_from_pool(pool) {
            if pause.collector == Collector::Unknown {
                pause.collector = collector;
            }
        }
        if OLD_POOLS.contains(&pool) && trailing_duration(after).is_some() && !pause.full {
            // Promotion failed or concurrent mode failure: the young
            // collection became a full one, and GCViewer counts it as such.
            pause.full = true;
            pause.name = "Pause Full".to_string();
            pause.generation = Some(Generation::Full);
        }
        if pause.pools.len() < MAX_POOLS {
            pause.pools.push(PoolTransition {
                name: pool.to_string(),
                before_bytes: transition.before_bytes,
                after_bytes: transition.after_bytes,
                capacity_bytes: transition.capacity_bytes,
            });
        }
    }
    nested_s
}

/// `CMS (concurrent mode failure)` into `CMS` and its groups; `CMS Perm ` trimmed.
fn groups_split(label: &str) -> (&str, Vec<&str>) {
    match label.find(" (") {
        Some(at) => {
            let (groups, _) = groups_after(&label[at..]);
            (label[..at].trim(), groups)
        }
        None => (label.trim(), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(log: &str) -> (Vec<GcEvent>, Vec<String>) {
        let mut parser = LegacyParser::new(64 * 1024);
        let mut events = Vec::new();
        let mut claims = Vec::new();
        for line in log.lines() {
            claims.push(format!("{:?}", parser.line(line.trim_end(), &mut events)));
        }
        parser.flush(&mut events);
        (events, claims)
    }

    fn pauses(events: &[GcEvent]) -> Vec<&Pause> {
        events.iter().filter_map(GcEvent::as_pause).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn stamps_at_the_start_and_before_nested_groups() {
        let (stamp, rest) = leading_stamp("2015-07-22T14:53:42.655-0100: 1.807: #2: [GC");
        assert_eq!(stamp.uptime_s, Some(1.807));
        assert_eq!(stamp.gc_id, Some(2));
        assert_eq!(
            stamp.wall.unwrap().to_rfc3339(),
            "2015-07-22T15:53:42.655+00:00"
        );
        assert_eq!(rest, "[GC");
        let (before, stamp) = trailing_stamp("ParNew2016-03-22T10:02:41.970-0100: 13.404: ");
        assert_eq!(before, "ParNew");
        assert_eq!(stamp.uptime_s, Some(13.404));
        let (before, stamp) = trailing_stamp("GC (Allocation Failure) 366,174: ");
        assert_eq!(before, "GC (Allocation Failure) ");
        assert_eq!(stamp.uptime_s, Some(366.174));
    }

    /// GCViewer TestDataReaderSun1_8_0.serialPrintGCID: 2 events, the
    /// second 0.0134215 s with 25384K before (its DefNew then Tenured ran).
    #[test]
    fn serial_young_and_promotion_into_tenured() {
        let (events, _) = parse(
            "2022-08-01T17:14:32.660+0000: 0.177: #1: [GC (Allocation Failure) 2022-08-01T17:14:32.661+0000: 0.178: #1: [DefNew: 9766K->1056K(9792K), 0.0057621 secs] 16728K->16694K(31680K), 0.0073601 secs] [Times: user=0.00 sys=0.00, real=0.01 secs] \n\
             2022-08-01T17:14:32.671+0000: 0.188: #2: [GC (Allocation Failure) 2022-08-01T17:14:32.672+0000: 0.189: #2: [DefNew: 9746K->1056K(9792K), 0.0073505 secs]2022-08-01T17:14:32.680+0000: 0.197: #3: [Tenured: 24314K->24378K(24384K), 0.0036336 secs] 25384K->25370K(34176K), [Metaspace: 2712K->2712K(1056768K)], 0.0134215 secs] [Times: user=0.01 sys=0.00, real=0.02 secs] \n",
        );
        let pauses = pauses(&events);
        assert_eq!(pauses.len(), 2);
        assert!(close(pauses[0].duration_s, 0.0073601));
        assert!(!pauses[0].full);
        assert_eq!(pauses[0].collector, Collector::Serial);
        assert!(close(pauses[1].duration_s, 0.0134215));
        assert_eq!(pauses[1].heap.unwrap().before_bytes, 25384 * 1024);
        assert!(pauses[1].full, "DefNew failed over to Tenured");
        assert_eq!(pauses[1].gc_id, Some(2));
        assert_eq!(pauses[1].cause.as_deref(), Some("Allocation Failure"));
        assert_eq!(pauses[1].cpu.unwrap().real_s, 0.02);
        let names: Vec<_> = pauses[1].pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["DefNew", "Tenured", "Metaspace"]);
    }

    /// FORMATS.md §9.2 (gctoolkit scavangeBeforeRemarkWithReference.log):
    /// PrintReferenceGC groups inside ParNew are not pauses.
    #[test]
    fn reference_processing_inside_a_young_pause() {
        let (events, _) = parse("2016-03-22T10:02:41.962-0100: 13.396: [GC (Allocation Failure) 2016-03-22T10:02:41.962-0100: 13.396: [ParNew2016-03-22T10:02:41.970-0100: 13.404: [SoftReference, 0 refs, 0.0000260 secs]2016-03-22T10:02:41.970-0100: 13.404: [WeakReference, 59 refs, 0.0000110 secs]2016-03-22T10:02:41.970-0100: 13.404: [FinalReference, 1407 refs, 0.0025979 secs]2016-03-22T10:02:41.973-0100: 13.407: [PhantomReference, 0 refs, 0 refs, 0.0000131 secs]2016-03-22T10:02:41.973-0100: 13.407: [JNI Weak Reference, 0.0000088 secs]: 69952K->8704K(78656K), 0.0104509 secs] 69952K->11354K(253440K), 0.0105137 secs] [Times: user=0.04 sys=0.01, real=0.01 secs] ");
        let pauses = pauses(&events);
        assert_eq!(events.len(), 1);
        assert!(close(pauses[0].duration_s, 0.0105137));
        assert_eq!(pauses[0].pools[0].name, "ParNew");
        assert_eq!(pauses[0].collector, Collector::Cms);
    }

    /// GCViewer TestDataReaderSun1_6_0.testCMSPromotionFailed... style, and
    /// FORMATS.md §9.2: tenuring lines split the ParNew group.
    #[test]
    fn promotion_failed_across_tenuring_lines_is_a_full_pause() {
        let (events, claims) = parse(
            "2118019.970: [GC 2118019.971: [ParNew (promotion failed)\n\
             Desired survivor size 1343488 bytes, new threshold 1 (max 1)\n\
             - age   1:    1286472 bytes,    1286472 total\n\
             : 2624K->2624K(2624K), 0.0047280 secs]2118019.975: [CMS: 2622587K->2608283K(2988200K), 13.5914940 secs] 2625211K->2608283K(2990824K), [CMS Perm : 152319K->150812K(262144K)], 13.5959700 secs] [Times: user=13.56 sys=0.02, real=13.60 secs]\n",
        );
        let pauses = pauses(&events);
        assert_eq!(pauses.len(), 1, "{claims:?}");
        assert!(close(pauses[0].duration_s, 13.5959700));
        assert!(pauses[0].full);
        assert_eq!(pauses[0].qualifiers, ["promotion failed"]);
        assert_eq!(claims[1], "Ignored");
    }

    /// GCViewer TestDataReaderSun1_8_0.scavengeBeforeRemarkPrintHeapAtGC_YGOccupancy
    /// (SampleSun1_8_0CMS_ScavengeBeforeRemark_HeapAtGc.txt, shortened heap
    /// block): 2 pauses, 0.0000778 and 0.0019970 - 0.0000778.
    #[test]
    fn scavenge_before_remark_is_two_pauses() {
        let (events, _) = parse(
            "2015-05-14T18:55:12.588+0200: 1.157: [GC (CMS Final Remark) [YG occupancy: 10451 K (47936 K)]{Heap before GC invocations=22 (full 13):\n \
             par new generation   total 47936K, used 10451K [0x00000000f6400000, 0x00000000f9800000, 0x00000000f9800000)\n\
             2015-05-14T18:55:12.588+0200: 1.158: [GC (CMS Final Remark) 1.158: [ParNew: 10451K->10451K(47936K), 0.0000303 secs] 111291K->111291K(154432K), 0.0000778 secs] [Times: user=0.00 sys=0.00, real=0.00 secs]\n\
             Heap after GC invocations=23 (full 13):\n \
             par new generation   total 47936K, used 10451K [0x00000000f6400000, 0x00000000f9800000, 0x00000000f9800000)\n\
             }\n\
             1.158: [Rescan (parallel) , 0.0002732 secs]1.158: [weak refs processing, 0.0000176 secs][1 CMS-remark: 100839K(106496K)] 111291K(154432K), 0.0019970 secs] [Times: user=0.00 sys=0.00, real=0.00 secs]\n",
        );
        let pauses = pauses(&events);
        assert_eq!(pauses.len(), 2, "{events:?}");
        assert_eq!(pauses[0].name, "Pause Young");
        assert!(close(pauses[0].duration_s, 0.0000778));
        assert_eq!(pauses[1].name, "Pause Remark");
        assert!(close(pauses[1].duration_s, 0.0019970 - 0.0000778));
        assert_eq!(pauses[1].collector, Collector::Cms);
    }

    /// FORMATS.md §9.3 (GCViewer SampleSun1_8_0G1HumongousMixed.txt): a
    /// concurrent phase spliced into a G1 pause's first line is a phase, the
    /// pause ends with its detail block.
    #[test]
    fn g1_pause_with_spliced_concurrent_output_and_details() {
        let (events, _) = parse(
            "2015-05-01T11:26:29.687+0200: 160770.873: [GC pause (G1 Humongous Allocation) (young)2015-05-01T11:26:29.701+0200: 160770.887: [GC concurrent-root-region-scan-end, 0.0157002 secs]\n\
             2015-05-01T11:26:29.701+0200: 160770.887: [GC concurrent-mark-start]\n\
             , 0.0470136 secs]\n   \
                [Parallel Time: 23.4 ms, GC Workers: 10]\n      \
                   [GC Worker Start (ms): Min: 160770887.8, Avg: 160770887.9, Max: 160770888.0, Diff: 0.2]\n   \
                [Eden: 24.0M(24.0M)->0.0B(30.0M) Survivors: 0.0B->3072.0K Heap: 33.6M(256.0M)->13.9M(256.0M)]\n \
              [Times: user=0.03 sys=0.00, real=0.05 secs]\n",
        );
        let [GcEvent::ConcurrentPhase(phase), GcEvent::Pause(pause)] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!(phase.name, "GC concurrent-root-region-scan");
        assert!(close(phase.duration_s, 0.0157002));
        assert!(close(pause.duration_s, 0.0470136));
        assert!(pause.humongous);
        assert_eq!(pause.collector, Collector::G1);
        assert_eq!(
            pause.heap.unwrap().after_bytes,
            (13.9 * 1024.0 * 1024.0f64).round() as u64
        );
        assert_eq!(pause.pools.len(), 2);
        assert_eq!(pause.cpu.unwrap().real_s, 0.05);
    }

    /// GCViewer TestDataReaderSun1_7_0G1.printSimpleToSpaceOverflow: 1
    /// pause of 0.0245257 s; `--` marks the to-space overflow.
    #[test]
    fn g1_to_space_overflow_marker() {
        let (events, _) = parse("2013-12-21T15:48:44.062+0100: 0.441: [GC pause (G1 Evacuation Pause) (young)-- 90M->94M(128M), 0.0245257 secs]");
        let pauses = pauses(&events);
        assert_eq!(pauses.len(), 1);
        assert!(close(pauses[0].duration_s, 0.0245257));
        assert!(pauses[0].evacuation_failure);
        assert_eq!(pauses[0].heap.unwrap().after_bytes, 94 << 20);
    }

    #[test]
    fn cms_concurrent_phases_are_not_pauses() {
        let (events, _) = parse(
            "2016-04-14T22:30:12.886+0200: 4.830: [GC (CMS Initial Mark) [1 CMS-initial-mark: 29170K(546176K)] 45355K(791936K), 0.0017923 secs] [Times: user=0.00 sys=0.00, real=0.00 secs] \n\
             2016-04-14T22:30:13.217+0200: 5.161: [CMS-concurrent-abortable-preclean: 0.146/0.280 secs] [Times: user=1.27 sys=0.05, real=0.28 secs] \n\
             2016-04-14T22:30:12.900+0200: 4.844: [CMS-concurrent-mark-start]\n",
        );
        let [GcEvent::Pause(mark), GcEvent::ConcurrentPhase(preclean)] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!(mark.name, "Pause Initial Mark");
        assert_eq!(mark.cause.as_deref(), Some("CMS Initial Mark"));
        assert!(close(preclean.duration_s, 0.280));
        assert_eq!(preclean.name, "CMS-concurrent-abortable-preclean");
    }

    #[test]
    fn gc_lines_among_application_output() {
        let (events, claims) = parse(
            "Starting service on port 8080\n\
             [GC (Allocation Failure)  65536K->1234K(251392K), 0.0123000 secs]\n\
             request served in 12 ms\n\
             INFO done[Full GC (System.gc())  1234K->1000K(251392K), 0.0200000 secs]\n",
        );
        let pauses = pauses(&events);
        assert_eq!(pauses.len(), 2);
        assert!(pauses[1].full && pauses[1].explicit);
        assert_eq!(claims[0], "NotLegacy");
        assert_eq!(claims[2], "NotLegacy");
    }

    /// `line_time` orders a rotated set and paces `replay`: JDK 8 stamps count.
    #[test]
    fn line_time_reads_jdk8_stamps() {
        let time =
            crate::line_time("2016-04-14T22:30:09.108+0200: 1.053: [GC (Allocation Failure)")
                .unwrap();
        assert_eq!(time.uptime_s, Some(1.053));
        assert_eq!(
            time.wall.unwrap().to_rfc3339(),
            "2016-04-14T20:30:09.108+00:00"
        );
        assert_eq!(
            crate::line_time(
                "24.268: Total time for which application threads were stopped: 0.0054520 seconds"
            )
            .unwrap()
            .uptime_s,
            Some(24.268)
        );
        assert_eq!(
            crate::line_time("Desired survivor size 1343488 bytes"),
            None
        );
    }

    #[test]
    fn durations_in_each_unit() {
        assert_eq!(trailing_duration(", 0.0146984 secs"), Some(0.0146984));
        assert_eq!(trailing_duration(": 0.146/0.280 secs"), Some(0.280));
        assert_eq!(trailing_duration(", 0.0019007"), None);
        assert_eq!(trailing_seconds(", 0.0019007"), Some(0.0019007));
        assert_eq!(trailing_duration(", 1.983 ms"), Some(0.001983));
        assert_eq!(trailing_duration(", 0,0004130 secs"), Some(0.000413));
        assert_eq!(trailing_duration("GC concurrent-mark-start"), None);
        assert_eq!(trailing_duration(" 45355K(791936K)"), None);
        // A multi-byte character right before the number (a proptest finding).
        assert_eq!(trailing_duration("é1.5 secs"), Some(1.5));
        assert_eq!(heap_in("é1K->1K(2K)").unwrap().before_bytes, 1024);
    }

    /// No pause or phase lasts a day: a longer figure is a garbled number.
    #[test]
    fn durations_beyond_a_day_are_malformed() {
        let (events, claims) = parse(
            "1.0: [GC (Allocation Failure)  1K->1K(2K), 99999999.0000000 secs]\n\
             2.0: [CMS-concurrent-mark: 0.1/86401.0 secs]\n",
        );
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(claims, ["Malformed", "Malformed"]);
    }

    /// Groups one after another on a line are read in a loop, not by
    /// recursion: a 64 KiB line of them must not exhaust the stack.
    #[test]
    fn many_events_on_one_line() {
        let line = "[GC (a)  1K->1K(2K), 0.0000001 secs]".repeat(2000);
        let (events, _) = parse(&line);
        assert_eq!(pauses(&events).len(), 2000);
        let (events, _) = parse("1.0: [GC (a)  1K->1K(2K), 0.1 secs]1.1: [CMS-concurrent-mark: 0.1/0.2 secs]1.2: [GC (b)  1K->1K(2K), 0.3 secs] [Times: user=0.01 sys=0.00, real=0.30 secs]");
        let summary: Vec<String> = events
            .iter()
            .map(|e| match e {
                GcEvent::Pause(p) => format!("pause {:?} {}", p.cause, p.cpu.is_some()),
                GcEvent::ConcurrentPhase(c) => format!("phase {}", c.name),
                _ => String::new(),
            })
            .collect();
        assert_eq!(
            summary,
            [
                "phase CMS-concurrent-mark",
                "pause Some(\"a\") false",
                "pause Some(\"b\") true"
            ]
        );
    }

    #[test]
    fn deep_or_unclosed_brackets_neither_panic_nor_grow() {
        let mut parser = LegacyParser::new(256);
        let mut events = Vec::new();
        let deep = format!("1.0: [GC {}", "[".repeat(100));
        assert_eq!(parser.line(&deep, &mut events), Claim::Malformed);
        assert_eq!(
            parser.line("1.0: [GC (x) [ParNew", &mut events),
            Claim::Used
        );
        for _ in 0..100 {
            let _ = parser.line(": [a", &mut events);
        }
        assert!(parser.open.as_ref().map_or(0, |o| o.len()) <= 256);
        assert!(events.is_empty());
    }
}
