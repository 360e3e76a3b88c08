//! Wall-clock minute windows: the exact count, total and maximum pause per
//! minute (not a decaying maximum), time stopped at safepoints, and the heap
//! figures of the collections that ended in the minute. This is the series that
//! correlation, metrics and alerts line up with request latency.

use std::borrow::Cow;
use std::ops::Range;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use pausewatch_parsers::{GcEvent, LogTime, StallKind};
use serde::{Deserialize, Serialize};

use crate::model::changes::Changes;
use crate::model::gc_cpu::cycle_gc_seconds;
use crate::model::histogram::Histogram;
use crate::model::minute_chunks::MinuteChunks;

/// One wall-clock minute. Events belong to the minute in which they ended.
/// `/api/v1/minutes` leaves out what nothing measures: read back, such a
/// figure is its default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Minute {
    pub start: DateTime<Utc>,
    pub pause_count: u64,
    pub pause_total_seconds: f64,
    pub pause_max_seconds: f64,
    /// `pause_max_seconds` is a lower bound: several pauses fell between two
    /// samples of a JVM's counters (no GC log), and only their total is known.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pause_max_lower_bound: bool,
    /// The agent did not watch the JVM for this whole minute (it started
    /// after the minute began, or was down for part of it): the figures are
    /// of what it saw.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seen_partly: bool,
    /// eBPF records lost in this minute (the JVM spent its budget, or the
    /// host's ring buffer was full: then the host's drops, whose JVMs
    /// cannot be told apart): its pauses are counted short.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub records_lost: u64,
    /// Pauses by duration (the `jvm_gc_pause_seconds` buckets), for quantiles over windows.
    #[serde(default)]
    pub pause_histogram: Histogram,
    pub safepoint_count: u64,
    pub safepoint_total_seconds: f64,
    pub safepoint_max_seconds: f64,
    pub time_to_safepoint_max_seconds: f64,
    pub full_gcs: u64,
    pub evacuation_failures: u64,
    pub degenerated_gcs: u64,
    pub allocation_stalls: u64,
    pub allocation_stall_seconds: f64,
    pub concurrent_cycle_seconds: f64,
    /// Heap occupancy after the last collection that ended in this minute.
    pub heap_after_gc_bytes: Option<u64>,
    pub heap_committed_bytes: Option<u64>,
    /// Heap after the last full, mixed or major collection in this minute: live data.
    pub live_data_bytes: Option<u64>,
    /// Bytes allocated since the previous collection, summed over this minute's collections.
    pub allocated_bytes: u64,
    /// Bytes promoted into the old generation by this minute's young collections.
    pub promoted_bytes: u64,
    /// The collector's CPU seconds in this minute (`model::gc_cpu`), where
    /// known: a discovered JVM, a Go program's gctrace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_cpu_seconds: Option<f64>,
    /// The process's CPU seconds in this minute, where it is read (a
    /// discovered JVM's or Go program's /proc; gctrace does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_cpu_seconds: Option<f64>,
    /// CPUs available to the process: Go's GOMAXPROCS, a JVM's CPU affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    /// The collector's share of the process's CPU in this minute; none
    /// below [`MIN_PROCESS_CPU_SECONDS`] of process CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_cpu_of_process: Option<f64>,
    /// The collector's share of the CPUs available over the minute (Go's
    /// `GCCPUFraction` over one minute; a partial first minute reads low).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_cpu_of_available: Option<f64>,
}

/// Process CPU in a minute below which the collector's share of it is not
/// given: an idle JDK 17 G1 JVM uses ~0.05 s a minute, a fifth of it in
/// `G1 Service`, a share over GcCpuHigh's 20% of nothing that matters
/// (1% of one CPU).
pub const MIN_PROCESS_CPU_SECONDS: f64 = 0.6;

impl Minute {
    /// Adds collector CPU, the process's CPU where read, and the CPUs
    /// available, and the shares they make.
    pub fn add_gc_cpu(&mut self, gc: f64, process: Option<f64>, cpus: Option<f64>) {
        let gc = *self
            .gc_cpu_seconds
            .insert(self.gc_cpu_seconds.unwrap_or(0.0) + gc);
        if let Some(process) = process {
            let total = self.process_cpu_seconds.unwrap_or(0.0) + process;
            self.process_cpu_seconds = Some(total);
            self.gc_cpu_of_process =
                (total >= MIN_PROCESS_CPU_SECONDS).then(|| (gc / total).min(1.0));
        }
        self.cpus = cpus.or(self.cpus);
        let available = self.cpus.filter(|cpus| *cpus > 0.0);
        self.gc_cpu_of_available = available.map(|cpus| gc / (cpus * 60.0));
    }
}

/// The minute (seconds since the epoch, floored) a wall-clock time falls in.
pub fn minute_of(time: DateTime<Utc>) -> i64 {
    time.timestamp().div_euclid(60) * 60
}

pub(crate) fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Which clock a stream's `history` of minutes is kept by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepFrom {
    /// The agent's: an exited JVM's minutes.
    Now,
    /// The stream's newest event, as well as the agent's: a live stream.
    NewestEvent,
}

/// The start of the minute keyed `key`.
pub fn minute_start(key: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(key, 0).single().unwrap_or_default()
}

/// The last complete wall-clock minute before `now`: the one gauges and
/// alerts report, since the current one is still filling.
pub fn last_complete_minute(now: DateTime<Utc>) -> DateTime<Utc> {
    minute_start(minute_of(now) - 60)
}

/// When an event ended; a JVM restart has no time of its own.
pub fn event_end(event: &GcEvent) -> Option<&LogTime> {
    match event {
        GcEvent::Pause(p) => Some(&p.end),
        GcEvent::Safepoint(s) => Some(&s.end),
        GcEvent::Stall(s) => Some(&s.end),
        GcEvent::Cycle(c) => Some(&c.end),
        GcEvent::ConcurrentPhase(c) => Some(&c.end),
        GcEvent::JvmRestart(_) => None,
    }
}

/// How far an event's time may be from the stream's recent events before it
/// is a clock outlier. A JVM's events are seconds apart; a day covers a quiet
/// JVM, and anything further is a corrupt or absurd date (year 9999, 1970).
pub const MAX_CLOCK_JUMP_SECONDS: i64 = 86_400;

/// The `kind` under which clock outliers are counted with the unparsed lines.
pub const CLOCK_OUTLIER: &str = "clock_outlier";

/// How far past the agent's clock a minute may start and still be kept:
/// a log written on another host may run a little ahead.
pub const FUTURE_TOLERANCE_SECONDS: i64 = 600;

/// Decides whether an event's time is credible, from the events before it.
/// Crate-visible for the checkpoint's record of it.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ClockCheck {
    /// The time of the last credible event (seconds since the epoch).
    pub(crate) reference: Option<i64>,
    /// The last event far from the reference, with its minute's figures:
    /// the next event says whether it was an outlier (the next is near the
    /// reference) or the clock really moved (the next is near it).
    pub(crate) suspect: Option<(i64, Minute)>,
}

fn near(a: i64, b: i64) -> bool {
    a.abs_diff(b) <= MAX_CLOCK_JUMP_SECONDS.unsigned_abs()
}

/// Where [`MinuteWindows::add`] put an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// In the minute with this key.
    Minute(i64),
    /// Held aside in the minute with this key until the next event says
    /// whether its time is credible.
    Held(i64),
    /// Nowhere: no time, or a JVM restart.
    Nowhere,
}

impl Placement {
    /// The key of the minute that takes the event's figures, if any.
    pub fn key(self) -> Option<i64> {
        match self {
            Placement::Minute(key) | Placement::Held(key) => Some(key),
            Placement::Nowhere => None,
        }
    }
}

/// Per-minute aggregation keyed by minute start (seconds since the epoch).
/// Sparse: only minutes that saw events are stored; quiet ones are filled in
/// when a window is read ([`MinuteWindows::filled`]).
#[derive(Debug, Default, Clone)]
pub struct MinuteWindows {
    /// The checkpoint journal writes the minutes that changed apart
    /// (`changes`). In chunks, so that a write after a snapshot copies one
    /// hour, not a day.
    minutes: MinuteChunks,
    /// Events without a wall-clock time cannot be placed in a minute.
    pub unplaced_events: u64,
    /// Events whose time is more than [`MAX_CLOCK_JUMP_SECONDS`] from the
    /// stream's recent events: counted by the JVM state, not placed.
    pub clock_outliers: u64,
    pub(crate) clock: ClockCheck,
    changes: Changes,
}

/// Minutes of a window with quiet ones filled in (see [`MinuteWindows::filled`]).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Filled {
    pub minutes: Vec<Minute>,
    /// Quiet minutes between events that were not listed for lack of budget.
    pub quiet_left_out: u64,
}

fn empty_minute(key: i64) -> Minute {
    Minute {
        start: minute_start(key),
        ..Minute::default()
    }
}

impl MinuteWindows {
    /// The minute keyed `key` (from [`add`](Self::add)), created on demand;
    /// the one held aside when `key` is the held event's.
    pub fn minute_mut(&mut self, key: i64) -> &mut Minute {
        match &mut self.clock.suspect {
            Some((_, minute)) if minute.start.timestamp() == key => minute,
            _ => {
                self.changes.touch(key);
                self.minutes.get_or_insert_with(key, || empty_minute(key))
            }
        }
    }

    /// Decides the held event, if any: an outlier when the reference was
    /// right, else placed in its minute (the clock moved).
    fn decide_suspect(&mut self, outlier: bool) {
        let Some((_, held)) = self.clock.suspect.take() else {
            return;
        };
        let key = held.start.timestamp();
        if outlier || self.minutes.contains_key(key) {
            // A minute already there would need merging: so rare (a clock
            // set back more than a day onto a minute seen before) that the
            // event is counted as an outlier instead.
            self.clock_outliers += 1;
        } else {
            self.changes.touch(key);
            self.minutes.insert(key, held);
        }
    }

    /// Ends the stream: an event still held is an outlier.
    pub fn finish(&mut self) {
        self.decide_suspect(true);
    }

    /// Before the first event, or after a JVM restart, nothing says which
    /// time is credible: take the first of `events` that has a neighbour
    /// within [`MAX_CLOCK_JUMP_SECONDS`], so that one absurd first line does
    /// not become the reference the credible lines after it are judged by.
    ///
    /// Returns how many of `events` may be added before asking again (at
    /// least one): up to the next restart when none before it has a
    /// wall-clock time, which keeps a caller that asks before every event
    /// linear on logs without one. With `complete` false (more events to
    /// come) it decides nothing and returns `None` while no two times before
    /// the end of `events` are near each other: a later event may still be
    /// the neighbour that makes one credible.
    pub fn settle_clock(&mut self, events: &[GcEvent], complete: bool) -> Option<usize> {
        if self.clock.reference.is_some() {
            return Some(1);
        }
        let run = events
            .iter()
            .position(|e| matches!(e, GcEvent::JvmRestart(_)))
            .unwrap_or(events.len());
        let mut times = events[..run]
            .iter()
            .filter_map(|e| Some(event_end(e)?.wall?.timestamp()));
        let Some(first) = times.next() else {
            return Some(run.max(1));
        };
        let mut previous = first;
        let mut credible = None;
        for time in times {
            if near(previous, time) {
                credible = Some(previous);
                break;
            }
            previous = time;
        }
        if credible.is_none() && !complete && run == events.len() {
            return None;
        }
        self.clock.reference = Some(credible.unwrap_or(first));
        Some(1)
    }

    /// Counts the parts of an event that need no history: pauses, safepoints,
    /// stalls, cycles, and says where it was placed for the caller to add the
    /// heap-derived figures (it knows the previous collection). An event
    /// without wall-clock time is counted once in `unplaced_events`, here and
    /// nowhere else. An event more than a day from the last credible one is
    /// held aside until the next event: near it, the clock moved and both are
    /// placed; else it is counted once in `clock_outliers` and never placed.
    pub fn add(&mut self, event: &GcEvent) -> Placement {
        if let GcEvent::JvmRestart(_) = event {
            // A new JVM may start days later: its first events set the clock.
            self.decide_suspect(true);
            self.clock.reference = None;
            return Placement::Nowhere;
        }
        let Some(end) = event_end(event) else {
            return Placement::Nowhere;
        };
        let Some(wall) = end.wall else {
            self.unplaced_events += 1;
            return Placement::Nowhere;
        };
        let time = wall.timestamp();
        let key = minute_of(wall);
        let placement = match self.clock.reference {
            Some(reference) if !near(reference, time) => {
                let moved = matches!(&self.clock.suspect, Some((held, _)) if near(*held, time));
                self.decide_suspect(!moved);
                if moved {
                    self.clock.reference = Some(time);
                    Placement::Minute(key)
                } else {
                    self.clock.suspect = Some((time, empty_minute(key)));
                    Placement::Held(key)
                }
            }
            _ => {
                self.decide_suspect(true);
                self.clock.reference = Some(time);
                Placement::Minute(key)
            }
        };
        match event {
            GcEvent::Pause(p) => {
                let minute = self.minute_mut(key);
                minute.pause_count += 1;
                minute.pause_total_seconds += p.duration_s;
                minute.pause_max_seconds = minute.pause_max_seconds.max(p.duration_s);
                minute.pause_histogram.observe(p.duration_s);
                minute.full_gcs += u64::from(p.full);
                minute.evacuation_failures += u64::from(p.evacuation_failure);
                minute.degenerated_gcs += u64::from(p.degenerated);
            }
            GcEvent::Safepoint(s) => {
                let minute = self.minute_mut(key);
                minute.safepoint_count += 1;
                minute.safepoint_total_seconds += s.total_s;
                minute.safepoint_max_seconds = minute.safepoint_max_seconds.max(s.total_s);
                minute.time_to_safepoint_max_seconds = minute
                    .time_to_safepoint_max_seconds
                    .max(s.reaching_s.unwrap_or(0.0));
            }
            GcEvent::Stall(s) if s.kind == StallKind::Allocation => {
                let minute = self.minute_mut(key);
                minute.allocation_stalls += 1;
                minute.allocation_stall_seconds += s.duration_s;
            }
            // Relocation stalls are not allocation stalls (JvmState counts them apart).
            GcEvent::Stall(_) => {}
            GcEvent::Cycle(c) => {
                let minute = self.minute_mut(key);
                minute.concurrent_cycle_seconds += c.duration_s.unwrap_or(0.0);
                if let Some(cpu) = &c.cpu {
                    let cpus = Some(f64::from(cpu.processors));
                    minute.add_gc_cpu(cycle_gc_seconds(cpu), None, cpus);
                }
            }
            GcEvent::ConcurrentPhase(_) | GcEvent::JvmRestart(_) => {}
        }
        placement
    }

    /// Keeps `history` of minutes up to [`FUTURE_TOLERANCE_SECONDS`] after
    /// `now`, nothing a clock ahead of the agent's has put in the future;
    /// returns the start of what is kept. For a live stream
    /// ([`KeepFrom::NewestEvent`]) the `history` before the stream's newest
    /// minute is kept too: a host clock set a day ahead must not drop every
    /// minute at once, and the old minutes go as new events come in at the
    /// new time. An exited JVM's minutes go by the agent's clock alone.
    pub fn prune(
        &mut self,
        history: TimeDelta,
        now: DateTime<Utc>,
        from: KeepFrom,
    ) -> DateTime<Utc> {
        let by_newest_event = from == KeepFrom::NewestEvent;
        let ahead = now.timestamp().saturating_add(FUTURE_TOLERANCE_SECONDS) + 1;
        self.minutes.retain_range(i64::MIN..ahead);
        let mut oldest_kept = now - history;
        if let Some(newest) = self.minutes.last_key().filter(|_| by_newest_event) {
            oldest_kept = oldest_kept.min(minute_start(newest) + TimeDelta::minutes(1) - history);
        }
        self.minutes.retain_range(oldest_kept.timestamp()..ahead);
        self.changes.prune_before(oldest_kept.timestamp());
        oldest_kept
    }

    /// Which minutes changed when, for the checkpoint journal.
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    /// Windows as a checkpoint recorded them: no minutes yet (they are put
    /// back by [`Self::restore`]) and no change marked.
    pub(crate) fn restored(
        unplaced_events: u64,
        clock_outliers: u64,
        clock: ClockCheck,
    ) -> MinuteWindows {
        MinuteWindows {
            minutes: MinuteChunks::default(),
            unplaced_events,
            clock_outliers,
            clock,
            changes: Changes::default(),
        }
    }

    /// Puts back a minute read from a checkpoint (not a change).
    pub fn restore(&mut self, minute: Minute) {
        self.minutes.insert(minute.start.timestamp(), minute);
    }

    /// The minute starting at `start`, if anything happened in it.
    pub fn get(&self, start: DateTime<Utc>) -> Option<Cow<'_, Minute>> {
        self.minutes.get(start.timestamp())
    }

    /// The last complete minute before `now`, if anything happened in it.
    pub fn last_complete(&self, now: DateTime<Utc>) -> Option<Cow<'_, Minute>> {
        self.get(last_complete_minute(now))
    }

    /// Complete minutes starting in the `window` that ends with the last
    /// complete minute, oldest first, quiet ones absent.
    pub fn last_window(
        &self,
        now: DateTime<Utc>,
        window: Duration,
    ) -> impl Iterator<Item = Cow<'_, Minute>> {
        self.window_ending(last_complete_minute(now) + TimeDelta::minutes(1), window)
    }

    /// Minutes starting in `[end - window, end)`, oldest first, quiet ones absent.
    pub fn window_ending(
        &self,
        end: DateTime<Utc>,
        window: Duration,
    ) -> impl Iterator<Item = Cow<'_, Minute>> {
        let from = end - TimeDelta::from_std(window).unwrap_or_default();
        self.minutes
            .range(from.timestamp()..end.timestamp().max(from.timestamp()))
            .map(|(_, minute)| minute)
    }

    /// Fraction of wall time spent in pauses over that window. Pauses count
    /// in the minute they ended in, as everywhere else.
    pub fn paused_share(&self, now: DateTime<Utc>, window: Duration) -> f64 {
        // A fold from +0.0, not `sum()`, whose empty sum is -0.0 and would be exposed as such.
        let paused = self
            .last_window(now, window)
            .fold(0.0, |total, minute| total + minute.pause_total_seconds);
        paused / window.as_secs_f64().max(1.0)
    }

    /// Whether no minute saw events: without unpacking any.
    pub fn is_empty(&self) -> bool {
        self.minutes.first_key().is_none()
    }

    /// Minutes that saw events, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, Minute>> {
        self.minutes.values()
    }

    /// The keys [`filled`](Self::filled) lists for `window`: from the first
    /// minute that saw events (or the window's start, when events came
    /// before it) to the end of the last; `None` when none is in the window.
    pub fn listed(&self, window: Range<i64>) -> Option<Range<i64>> {
        let mut keys = self
            .minutes
            .range(window.start..window.end.max(window.start))
            .map(|(key, _)| key);
        let first = keys.next()?;
        let last = keys.next_back().unwrap_or(first);
        let start = match self.minutes.first_key().filter(|key| *key < window.start) {
            Some(_) => window.start.saturating_add(59).div_euclid(60) * 60,
            None => first,
        };
        Some(start..last + 60)
    }

    /// The minutes [`listed`](Self::listed) for `window`, quiet ones as zeros
    /// so that the series lines up with other per-minute data. At most
    /// `max_quiet` quiet minutes are listed: a gap longer than what is left
    /// stays a gap, counted in `quiet_left_out`. Memory is bounded by the
    /// events and `max_quiet`, never by the time between the first and the
    /// last.
    pub fn filled(&self, window: Range<i64>, max_quiet: u64) -> Filled {
        let mut filled = Filled::default();
        let Some(listed) = self.listed(window.clone()) else {
            return filled;
        };
        let mut budget = max_quiet;
        let mut previous = listed.start - 60;
        for (key, minute) in self
            .minutes
            .range(window.start..window.end.max(window.start))
        {
            let gap = ((key - previous) / 60 - 1).unsigned_abs();
            if gap <= budget {
                budget -= gap;
                filled
                    .minutes
                    .extend((1..=gap as i64).map(|i| empty_minute(previous + 60 * i)));
            } else {
                filled.quiet_left_out += gap;
            }
            filled.minutes.push(minute.into_owned());
            previous = key;
        }
        filled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, h, m, s).unwrap()
    }

    #[test]
    fn last_complete_minute_is_the_one_before_now() {
        assert_eq!(last_complete_minute(at(1, 46, 0)), at(1, 45, 0));
        assert_eq!(last_complete_minute(at(1, 46, 59)), at(1, 45, 0));
        assert_eq!(last_complete_minute(at(1, 47, 0)), at(1, 46, 0));
        assert_eq!(
            last_complete_minute(at(0, 0, 30)),
            Utc.with_ymd_and_hms(2026, 11, 29, 23, 59, 0).unwrap()
        );
        // Sub-second precision does not move the minute.
        let almost = at(1, 45, 59) + TimeDelta::milliseconds(999);
        assert_eq!(last_complete_minute(almost), at(1, 44, 0));
    }

    /// Pause lines at `times` (RFC 3339), parsed.
    fn pauses_at(times: &[&str]) -> Vec<GcEvent> {
        let log: String = times
            .iter()
            .enumerate()
            .map(|(gc, time)| {
                format!("[{time}][{gc}.000s][info][gc] GC({gc}) Pause Young (Normal) (G1 Evacuation Pause) 30M->20M(61M) 1.000ms\n")
            })
            .collect();
        let mut parser = pausewatch_parsers::GcLogParser::default();
        let mut events = Vec::new();
        parser.feed(log.as_bytes(), &mut events);
        parser.finish(&mut events);
        events
    }

    /// The events as `analyze` sees them: all at once.
    fn windows_of(events: &[GcEvent]) -> MinuteWindows {
        let mut windows = MinuteWindows::default();
        for (index, event) in events.iter().enumerate() {
            windows.settle_clock(&events[index..], true);
            windows.add(event);
        }
        windows
    }

    /// Pause lines at `times`, as the agent reads them: one at a time.
    fn live_windows(times: &[&str]) -> MinuteWindows {
        let mut windows = MinuteWindows::default();
        for event in pauses_at(times) {
            windows.settle_clock(std::slice::from_ref(&event), true);
            windows.add(&event);
        }
        windows
    }

    #[test]
    fn a_clock_that_really_moved_loses_no_event() {
        // Two days without a line, or a host clock set two days ahead: the
        // first line after the jump is held until the second confirms it.
        let windows = live_windows(&[
            "2026-11-30T01:45:10.000+0000",
            "2026-12-02T01:45:10.000+0000",
            "2026-12-02T01:46:10.000+0000",
        ]);
        assert_eq!(windows.clock_outliers, 0);
        let starts: Vec<String> = windows.iter().map(|m| m.start.to_rfc3339()).collect();
        assert_eq!(
            starts,
            [
                "2026-11-30T01:45:00+00:00",
                "2026-12-02T01:45:00+00:00",
                "2026-12-02T01:46:00+00:00"
            ]
        );
    }

    #[test]
    fn a_lone_absurd_date_is_one_outlier_once_the_next_line_arrives() {
        let mut windows = live_windows(&[
            "2026-11-30T01:45:10.000+0000",
            "9999-12-31T23:59:00.000+0000",
        ]);
        // Held: nothing placed, nothing counted yet.
        assert_eq!((windows.clock_outliers, windows.iter().count()), (0, 1));
        windows.finish();
        assert_eq!((windows.clock_outliers, windows.iter().count()), (1, 1));
    }

    #[test]
    fn minutes_ahead_of_the_agent_clock_are_not_kept() {
        let mut windows = windows_of(&pauses_at(&[
            "2026-11-30T01:44:10.000+0000",
            "2026-11-30T01:45:10.000+0000",
            "2026-11-30T01:56:10.000+0000",
        ]));
        windows.prune(TimeDelta::seconds(30), at(1, 45, 0), KeepFrom::Now);
        // 01:44 is before the history, 01:56 is more than ten minutes ahead.
        let starts: Vec<DateTime<Utc>> = windows.iter().map(|m| m.start).collect();
        assert_eq!(starts, [at(1, 45, 0)]);
    }

    /// Issue 19, 9: a host clock set a day ahead wiped the whole history.
    #[test]
    fn a_clock_a_day_ahead_keeps_a_live_streams_history_until_new_events_replace_it() {
        let times: Vec<String> = (0..120)
            .map(|m| {
                (at(0, 0, 10) + TimeDelta::minutes(m))
                    .format("%Y-%m-%dT%H:%M:%S%.3f+0000")
                    .to_string()
            })
            .collect();
        let mut windows = live_windows(&times.iter().map(String::as_str).collect::<Vec<_>>());
        let history = TimeDelta::hours(1);
        let ahead = at(2, 0, 0) + TimeDelta::days(1);
        // An exited JVM's minutes go by the agent's clock.
        let mut exited = windows.clone();
        exited.prune(history, ahead, KeepFrom::Now);
        assert_eq!(exited.iter().count(), 0);
        // A live stream keeps the hour before its newest event, 01:00 to 01:59.
        let kept = windows.prune(history, ahead, KeepFrom::NewestEvent);
        assert_eq!((kept, windows.iter().count()), (at(1, 0, 0), 60));
        // Events at the new time: the hour before them is what is kept.
        for event in pauses_at(&[
            "2026-12-01T02:00:10.000+0000",
            "2026-12-01T02:01:10.000+0000",
        ]) {
            windows.settle_clock(std::slice::from_ref(&event), true);
            windows.add(&event);
        }
        windows.prune(
            history,
            ahead + TimeDelta::minutes(2),
            KeepFrom::NewestEvent,
        );
        let starts: Vec<DateTime<Utc>> = windows.iter().map(|m| m.start).collect();
        assert_eq!(starts, [ahead, ahead + TimeDelta::minutes(1)]);
    }

    #[test]
    fn quiet_minutes_are_filled_within_the_window_and_the_budget() {
        let windows = windows_of(&pauses_at(&[
            "2026-11-30T01:40:10.000+0000",
            "2026-11-30T01:42:10.000+0000",
            "2026-11-30T01:50:10.000+0000",
        ]));
        let starts = |filled: &Filled| -> Vec<String> {
            filled
                .minutes
                .iter()
                .map(|m| m.start.format("%M").to_string())
                .collect()
        };
        let all = windows.filled(i64::MIN..i64::MAX, u64::MAX);
        assert_eq!(all.minutes.len(), 11);
        // One quiet minute fits in a budget of 3, the seven after 01:42 do not.
        let capped = windows.filled(i64::MIN..i64::MAX, 3);
        assert_eq!(starts(&capped), ["40", "41", "42", "50"]);
        assert_eq!(capped.quiet_left_out, 7);
        // A window from 01:40:30 to 01:50: quiet 01:41 follows 01:40.
        let window = windows.filled(at(1, 40, 30).timestamp()..at(1, 50, 0).timestamp(), 100);
        assert_eq!(starts(&window), ["41", "42"]);
    }

    /// An idle JVM's few ticks of CPU make no share; once the process has
    /// used the floor over the minute's samples, the share is of it all.
    #[test]
    fn no_share_of_the_process_under_its_cpu_floor() {
        let mut minute = Minute::default();
        minute.add_gc_cpu(0.01, Some(0.05), Some(2.0));
        assert_eq!(minute.gc_cpu_of_process, None);
        minute.add_gc_cpu(0.29, Some(MIN_PROCESS_CPU_SECONDS), None);
        let share = 0.3 / (0.05 + MIN_PROCESS_CPU_SECONDS);
        assert!((minute.gc_cpu_of_process.unwrap() - share).abs() < 1e-12);
        assert_eq!(minute.cpus, Some(2.0));
    }
}
