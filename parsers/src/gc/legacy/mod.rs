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

use serde::{Deserialize, Serialize};

mod groups;
mod interpret;
#[cfg(test)]
mod tests;

use crate::events::*;
use crate::gc::grammar::{self, plausible};
pub(crate) use groups::leading_stamp;
use groups::*;
pub(super) use interpret::Preamble;
use interpret::*;

/// `Total time for which application threads were stopped: ` (PrintGCApplicationStoppedTime).
const STOPPED_TIME: &str = "Total time for which application threads were stopped: ";

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

/// The JDK 8 side of a [`GcLogParser`](crate::GcLogParser)'s state: small
/// and serialisable, since it is checkpointed with the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    #[serde(skip)]
    tree: Tree,
    /// The events of the line being read, before they are put on the run's
    /// clock: kept empty between lines, reused so that a line with an event
    /// does not allocate a vector for it.
    #[serde(skip)]
    found: Vec<GcEvent>,
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
            tree: Tree::default(),
            found: Vec::new(),
        }
    }

    /// The empty vector a line's events are gathered in; hand it back with
    /// [`give_back_found`](Self::give_back_found) once emptied.
    pub fn take_found(&mut self) -> Vec<GcEvent> {
        std::mem::take(&mut self.found)
    }

    /// Keeps `found`, emptied, for the next line.
    pub fn give_back_found(&mut self, found: Vec<GcEvent>) {
        debug_assert!(found.is_empty(), "events left behind");
        self.found = found;
    }

    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Forgets the event being read, keeping what the stream is.
    pub fn forget_event(&mut self) {
        self.open = None;
        self.pending = None;
        self.in_heap_block = false;
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
        if let Some(at) = heap_before(text) {
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
                return self.detail_line(trim_start(text), out);
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
        let trimmed = trim_start(text);
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
        let trimmed = trim_start(text);
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
            return self.stamped_event_text(trimmed, stamp, rest, out);
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
        let (stamp, rest) = leading_stamp(text);
        self.stamped_event_text(text, stamp, rest, out)
    }

    /// [`event_text`](Self::event_text) with the leading stamps of `text`
    /// already read (`rest` is what follows them).
    fn stamped_event_text(
        &mut self,
        text: &str,
        stamp: Stamp,
        rest: &str,
        out: &mut Vec<GcEvent>,
    ) -> Claim<'static> {
        let mut tree = std::mem::take(&mut self.tree);
        let claim = self.events_in(text, stamp, rest, &mut tree, out);
        self.tree = tree;
        claim
    }

    /// [`stamped_event_text`](Self::stamped_event_text) with the tree to parse into.
    fn events_in(
        &mut self,
        text: &str,
        stamp: Stamp,
        rest: &str,
        tree: &mut Tree,
        out: &mut Vec<GcEvent>,
    ) -> Claim<'static> {
        let (mut text, mut stamp, mut rest) = (text, stamp, rest);
        let mut first = None;
        loop {
            let (claim, next) = match tree.parse(rest, stamp) {
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
                    (stamp, rest) = leading_stamp(next);
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
        let after = trim_start(after);
        let next = leading_stamp(after)
            .1
            .starts_with('[')
            .then_some(after)
            .filter(|after| !lone_times(after));
        if let Some(phase) = concurrent_phase(root) {
            if !plausible(phase.duration_s) {
                return (Claim::Malformed, next);
            }
            out.push(GcEvent::ConcurrentPhase(phase));
            return (Claim::Used, next);
        }
        let Some(mut pause) = interpret(root, out) else {
            let claim = if is_concurrent(root.text()) || ignored_group(root.text()) {
                Claim::Used
            } else if names_collection(root.text()) {
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

/// `[Times: ...]` and nothing after it, as CMS ends its concurrent phases'
/// lines: read as a group of its own it yields nothing and changes nothing,
/// so it is not parsed at all (a fifth of the lines of a CMS log).
fn lone_times(text: &str) -> bool {
    text.strip_prefix("[Times: ")
        .and_then(|times| times.strip_suffix(']'))
        .is_some_and(|times| memchr::memchr2(b'[', b']', times.as_bytes()).is_none())
}

/// Whether an unreadable line looks like JDK 6 to 8 output, to count it as such.
pub(crate) fn is_legacy_line(line: &str) -> bool {
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
