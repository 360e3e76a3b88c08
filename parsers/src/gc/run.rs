//! The run's clock, shared by every grammar: which JVM run a line belongs to
//! (a restart, or another JVM writing the same file), and the wall-clock time
//! of an uptime-only instant once the run is anchored.

use chrono::{DateTime, TimeZone, Utc};

use super::envelope::{split_message, Envelope, Message};
use super::grammar::collector_from_using;
use super::state::{GcLogParser, JvmRun};
use crate::events::*;

/// A drop in uptime larger than this (seconds) means a new JVM run.
pub(super) const RESTART_UPTIME_DROP_S: f64 = 1.0;

/// Two lines belong to the same JVM run when their anchors (wall-clock time
/// minus uptime) are this close (seconds): both are rounded to milliseconds,
/// and the system clock may be slewed against the JVM's monotonic uptime.
pub(super) const SAME_RUN_ANCHOR_S: f64 = 2.0;

/// How many other runs a stream remembers, for JVMs that take turns in one file.
pub(super) const OTHER_RUNS_KEPT: usize = 4;

/// Wall-clock time at uptime zero, for a line that carries both clocks.
pub(super) fn line_anchor(env: &Envelope) -> Option<DateTime<Utc>> {
    env.wall()?
        .checked_sub_signed(seconds_to_duration(env.uptime_s?))
}

pub(super) fn same_run(a: DateTime<Utc>, b: DateTime<Utc>) -> bool {
    (a - b).abs() <= seconds_to_duration(SAME_RUN_ANCHOR_S)
}

impl GcLogParser {
    /// Detects a new JVM run in the same stream (uptime went back, or the
    /// start-up preamble appeared after collections were seen), or a line of
    /// another JVM writing the same file (its anchor is one seen before).
    pub(super) fn check_restart(
        &mut self,
        env: &Envelope,
        message: &Message,
        out: &mut Vec<GcEvent>,
    ) {
        let body = message.body;
        let preamble = message.gc_id.is_none()
            && match body.as_bytes().first() {
                Some(b'U') => body
                    .strip_prefix("Using ")
                    .is_some_and(|name| collector_from_using(name).is_some()),
                Some(b'I') => body.starts_with("Initializing The Z Garbage Collector"),
                Some(b'V') => body.starts_with("Version: "),
                _ => false,
            };
        // Nearly every line: uptime near the run's, and nothing to anchor
        // the run by or an anchor already. What follows would only raise
        // the run's uptime.
        if let (false, Some(now), Some(max)) = (preamble, env.uptime_s, self.run.max_uptime_s) {
            let anchored_or_nothing_to_anchor_by =
                self.run.anchor.is_some() || (env.wall_time.is_none() && env.wall_text.is_none());
            if (now - max).abs() <= RESTART_UPTIME_DROP_S && anchored_or_nothing_to_anchor_by {
                self.run.max_uptime_s = Some(max.max(now));
                return;
            }
        }
        self.check_restart_in_full(env, preamble, out);
    }

    /// [`check_restart`](Self::check_restart) for a line that may start,
    /// anchor or switch a run. Kept out of line: inlined, its frame was set
    /// up for every line.
    #[inline(never)]
    fn check_restart_in_full(&mut self, env: &Envelope, preamble: bool, out: &mut Vec<GcEvent>) {
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
    pub(super) fn switch_to_run_anchored_at(&mut self, anchor: Option<DateTime<Utc>>) -> bool {
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

    pub(super) fn remember_run(&mut self, run: JvmRun) {
        if run.anchor.is_none() {
            return;
        }
        if self.other_runs.len() == OTHER_RUNS_KEPT {
            self.other_runs.remove(0);
        }
        self.other_runs.push(run);
    }

    pub(super) fn time_of(&mut self, env: &Envelope) -> LogTime {
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
    pub(super) fn anchored(&self, time: LogTime) -> LogTime {
        match (time.wall, time.uptime_s, self.run.anchor) {
            (None, Some(uptime), Some(anchor)) => LogTime {
                wall: anchor.checked_add_signed(seconds_to_duration(uptime)),
                ..time
            },
            _ => time,
        }
    }

    pub(super) fn infer_collector(&mut self, hint: Option<Collector>) {
        match (self.run.collector, hint) {
            (Collector::Unknown, Some(c)) => self.run.collector = c,
            (Collector::Z, Some(Collector::ZGenerational)) => {
                self.run.collector = Collector::ZGenerational
            }
            _ => {}
        }
    }

    /// Emits a pause still waiting for its CPU-times line. A tailing agent calls
    /// this when the log has been quiet for a moment.
    pub fn flush(&mut self, out: &mut Vec<GcEvent>) {
        // Called for nearly every line: most have nothing held.
        if !self.has_pending() {
            return;
        }
        if let Some(pause) = self.pending.take() {
            self.emit(GcEvent::Pause(pause), out);
        }
        let mut held = self.legacy.take_found();
        self.legacy.flush(&mut held);
        self.place_legacy(&mut held, out);
        self.legacy.give_back_found(held);
    }

    /// Puts JDK 6 to 8 events on the run's clock and emits them: the same
    /// restart detection and anchoring as unified lines, keyed by the
    /// instant each event ends (a concurrent phase spliced into a pause's
    /// line is stamped after the pause began).
    pub(super) fn place_legacy(&mut self, events: &mut Vec<GcEvent>, out: &mut Vec<GcEvent>) {
        for mut event in events.drain(..) {
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

/// The envelope a JDK 8 stamp stands for, so that its events share the
/// unified lines' clock handling. Date stamps have millisecond precision:
/// an instant a duration after one is taken to its millisecond.
pub(super) fn legacy_envelope(time: LogTime) -> Envelope<'static> {
    let to_millisecond = |wall: DateTime<Utc>| Utc.timestamp_millis_opt(wall.timestamp_millis());
    Envelope {
        wall_time: time.wall.and_then(|wall| to_millisecond(wall).single()),
        uptime_s: time.uptime_s,
        decorated: true,
        ..Envelope::default()
    }
}
