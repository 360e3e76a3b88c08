//! Reading a later stretch of a stream before the parser gets there, so that
//! a caller can parse one stream on two threads and still get, in order,
//! exactly the events of a sequential parse.
//!
//! The parser is a state machine, so a later stretch cannot simply be parsed
//! on its own. [`GcLogParser::speculate`] guesses the state it starts in and
//! [`Speculation::read`] reads it from that guess (what is known of the
//! stream and its runs, no event in progress), noting its state at the first
//! line end past 8, 16, 32, ... KiB.
//! [`GcLogParser::catch_up`], once the parser has read up to the stretch,
//! reads on into it until its state equals the guess's at one of those
//! lines; the parser is deterministic, so from there on the guess read what
//! the parser would have, and its events and state are taken as they are. A
//! guess that never converges costs its reading and nothing else.

use super::state::{GcLogParser, ParseStats};
use crate::events::GcEvent;

/// The guess's state is noted at the first line end past this many bytes,
/// then past twice as many each time: about 64 lines of a trace-level log
/// first. Counted in bytes, not lines, so that one search finds each mark:
/// counting lines searched the guess's stretch once more, line by line
/// (3.6 % of `analyze`'s instructions on a log where every line is an event).
const FIRST_MARK_BYTES: usize = 8 * 1024;

/// A stretch of a stream read from a guess of the parser's state
/// ([`GcLogParser::speculate`]), for [`GcLogParser::catch_up`] on the same bytes.
pub struct Speculation {
    parser: GcLogParser,
    events: Vec<GcEvent>,
    marks: Vec<Mark>,
}

impl Speculation {
    /// Reads `bytes`, a stretch that starts at a line boundary at or after
    /// the point the parser that made this guess had reached.
    pub fn read(&mut self, bytes: &[u8]) {
        let (mut start, mut past) = (0, FIRST_MARK_BYTES);
        while start < bytes.len() {
            // Past the mark before too, whose line may have run beyond `past`.
            let from = past.max(start).min(bytes.len());
            let end = memchr::memchr(b'\n', &bytes[from..]).map_or(bytes.len(), |at| from + at + 1);
            self.parser.feed(&bytes[start..end], &mut self.events);
            self.marks.push(Mark {
                end,
                events: self.events.len(),
                state: self.parser.clone(),
            });
            start = end;
            past = past.saturating_mul(2);
        }
    }
}

/// The guess's state at a line end of the stretch.
struct Mark {
    /// The offset just past the line end.
    end: usize,
    /// Events the guess had emitted by then.
    events: usize,
    state: GcLogParser,
}

impl GcLogParser {
    /// A guess of the state this parser will be in at a later line
    /// boundary: what it knows of the stream and its runs, no event in
    /// progress, no counts. [`Speculation::read`] it on another thread.
    /// `spare` holds its events: the vector [`catch_up`](Self::catch_up)
    /// returned last time, so that each stretch does not grow a new one
    /// into fresh pages (a few MB each, which page faults made cost more
    /// than the copy).
    pub fn speculate(&self, mut spare: Vec<GcEvent>) -> Speculation {
        spare.clear();
        let mut guess = self.clone();
        // The latest uptime is left out: the gap to the stretch would read as a restart.
        guess.run.max_uptime_s = None;
        guess.run.zgc_minor_active = None;
        guess.open.clear();
        guess.pending = None;
        guess.safepoint_begin = None;
        guess.legacy.forget_event();
        guess.stats = ParseStats::default();
        Speculation {
            parser: guess,
            events: spare,
            marks: Vec::new(),
        }
    }

    /// Reads `bytes`, the stretch `speculation` was read from, now that
    /// this parser has reached it: on its own until its state equals the
    /// guess's, then the guess's events and state. `out` gets the events a
    /// sequential [`feed`](Self::feed) of `bytes` gives; the guess's event
    /// vector is handed back, empty, for the next [`speculate`](Self::speculate).
    pub fn catch_up(
        &mut self,
        bytes: &[u8],
        speculation: Speculation,
        out: &mut Vec<GcEvent>,
    ) -> Vec<GcEvent> {
        let Speculation {
            parser: later,
            mut events,
            marks,
        } = speculation;
        let mut fed = 0;
        for mark in marks {
            self.feed(&bytes[fed..mark.end], out);
            fed = mark.end;
            if self.converged(&mark.state) {
                // The guess's events after the mark follow `out`'s: `out`'s
                // take the place of those before it, and the vectors swap.
                // Copied into `out`, a stretch's events faulted in as many
                // fresh pages as they filled, every stretch.
                events.splice(..mark.events, out.drain(..));
                std::mem::swap(out, &mut events);
                let mut stats = std::mem::take(&mut self.stats);
                stats.add_between(&mark.state.stats, &later.stats);
                *self = later;
                self.stats = stats;
                events.clear();
                return events;
            }
        }
        self.feed(&bytes[fed..], out);
        events.clear();
        events
    }

    /// Whether this parser holds the same state as `guess`, the counts apart.
    fn converged(&self, guess: &GcLogParser) -> bool {
        // Destructured, so that a new field cannot be left out of the comparison.
        let GcLogParser {
            lines,
            run,
            other_runs,
            open,
            pending,
            safepoint_begin,
            undecorated_logging,
            legacy,
            stats: _,
            // A cache: what it holds changes no result.
            repeated_decorations: _,
        } = self;
        *lines == guess.lines
            && *run == guess.run
            && *other_runs == guess.other_runs
            && *open == guess.open
            && *pending == guess.pending
            && *safepoint_begin == guess.safepoint_begin
            && *undecorated_logging == guess.undecorated_logging
            && *legacy == guess.legacy
    }
}
