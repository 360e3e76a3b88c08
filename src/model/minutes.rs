//! Wall-clock minute windows: the exact count, total and maximum pause per
//! minute (not a decaying maximum), time stopped at safepoints, and the heap
//! figures of the collections that ended in the minute. This is the series that
//! correlation, metrics and alerts line up with request latency.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use pausewatch_parsers::{GcEvent, LogTime, StallKind};
use serde::{Deserialize, Serialize};

use crate::model::changes::Changes;
use crate::model::histogram::Histogram;

/// One wall-clock minute. Events belong to the minute in which they ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Minute {
    pub start: DateTime<Utc>,
    pub pause_count: u64,
    pub pause_total_seconds: f64,
    pub pause_max_seconds: f64,
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
}

/// The minute (seconds since the epoch, floored) a wall-clock time falls in.
pub fn minute_of(time: DateTime<Utc>) -> i64 {
    time.timestamp().div_euclid(60) * 60
}

/// The minute a log time falls in, if it has wall-clock time.
pub fn minute_key(time: &LogTime) -> Option<i64> {
    time.wall.map(minute_of)
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
fn event_end(event: &GcEvent) -> Option<&LogTime> {
    match event {
        GcEvent::Pause(p) => Some(&p.end),
        GcEvent::Safepoint(s) => Some(&s.end),
        GcEvent::Stall(s) => Some(&s.end),
        GcEvent::Cycle(c) => Some(&c.end),
        GcEvent::ConcurrentPhase(c) => Some(&c.end),
        GcEvent::JvmRestart(_) => None,
    }
}

/// Per-minute aggregation keyed by minute start (seconds since the epoch).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct MinuteWindows {
    /// Not in a checkpoint's record of the stream: the journal writes the
    /// minutes that changed apart (`changes`). Read from older checkpoints.
    #[serde(default, skip_serializing)]
    minutes: BTreeMap<i64, Minute>,
    /// Events without a wall-clock time cannot be placed in a minute.
    pub unplaced_events: u64,
    #[serde(skip)]
    changes: Changes,
}

fn empty_minute(key: i64) -> Minute {
    Minute {
        start: minute_start(key),
        ..Minute::default()
    }
}

impl MinuteWindows {
    /// The minute an event that ended at `end` belongs to, created on demand;
    /// `None` for an event without wall-clock time, which [`add`](Self::add)
    /// has counted.
    pub fn minute_at(&mut self, end: &LogTime) -> Option<&mut Minute> {
        let key = minute_key(end)?;
        self.changes.touch(key);
        Some(self.minutes.entry(key).or_insert_with(|| empty_minute(key)))
    }

    /// Which minutes changed when, for the checkpoint journal.
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    /// Puts back a minute read from a checkpoint (not a change).
    pub fn restore(&mut self, minute: Minute) {
        self.minutes.insert(minute.start.timestamp(), minute);
    }

    /// Counts the parts of an event that need no history: pauses, safepoints,
    /// stalls, cycles. Heap-derived figures are added by the caller, which
    /// knows the previous collection. An event without wall-clock time is
    /// counted once in `unplaced_events`, here and nowhere else.
    pub fn add(&mut self, event: &GcEvent) {
        if event_end(event).is_some_and(|end| end.wall.is_none()) {
            self.unplaced_events += 1;
        }
        match event {
            GcEvent::Pause(p) => {
                if let Some(minute) = self.minute_at(&p.end) {
                    minute.pause_count += 1;
                    minute.pause_total_seconds += p.duration_s;
                    minute.pause_max_seconds = minute.pause_max_seconds.max(p.duration_s);
                    minute.pause_histogram.observe(p.duration_s);
                    minute.full_gcs += u64::from(p.full);
                    minute.evacuation_failures += u64::from(p.evacuation_failure);
                    minute.degenerated_gcs += u64::from(p.degenerated);
                }
            }
            GcEvent::Safepoint(s) => {
                if let Some(minute) = self.minute_at(&s.end) {
                    minute.safepoint_count += 1;
                    minute.safepoint_total_seconds += s.total_s;
                    minute.safepoint_max_seconds = minute.safepoint_max_seconds.max(s.total_s);
                    minute.time_to_safepoint_max_seconds = minute
                        .time_to_safepoint_max_seconds
                        .max(s.reaching_s.unwrap_or(0.0));
                }
            }
            GcEvent::Stall(s) if s.kind == StallKind::Allocation => {
                if let Some(minute) = self.minute_at(&s.end) {
                    minute.allocation_stalls += 1;
                    minute.allocation_stall_seconds += s.duration_s;
                }
            }
            // Relocation stalls are not allocation stalls (JvmState counts them apart).
            GcEvent::Stall(_) => {}
            GcEvent::Cycle(c) => {
                if let Some(minute) = self.minute_at(&c.end) {
                    minute.concurrent_cycle_seconds += c.duration_s.unwrap_or(0.0);
                }
            }
            GcEvent::ConcurrentPhase(_) | GcEvent::JvmRestart(_) => {}
        }
    }

    /// Drops minutes that started before `oldest_kept`.
    pub fn prune_before(&mut self, oldest_kept: DateTime<Utc>) {
        let cutoff = oldest_kept.timestamp();
        self.minutes = self.minutes.split_off(&cutoff);
        self.changes.prune_before(cutoff);
    }

    /// The minute starting at `start`, if anything happened in it.
    pub fn get(&self, start: DateTime<Utc>) -> Option<&Minute> {
        self.minutes.get(&start.timestamp())
    }

    /// The last complete minute before `now`, if anything happened in it.
    pub fn last_complete(&self, now: DateTime<Utc>) -> Option<&Minute> {
        self.get(last_complete_minute(now))
    }

    /// Complete minutes starting in the `window` that ends with the last
    /// complete minute, oldest first, quiet ones absent.
    pub fn last_window(
        &self,
        now: DateTime<Utc>,
        window: Duration,
    ) -> impl Iterator<Item = &Minute> {
        self.window_ending(last_complete_minute(now) + TimeDelta::minutes(1), window)
    }

    /// Minutes starting in `[end - window, end)`, oldest first, quiet ones absent.
    pub fn window_ending(
        &self,
        end: DateTime<Utc>,
        window: Duration,
    ) -> impl Iterator<Item = &Minute> {
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

    /// Minutes that saw events, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Minute> {
        self.minutes.values()
    }

    /// Every minute from the first to the last one seen, quiet minutes included,
    /// so that the series lines up with other per-minute data.
    pub fn contiguous(&self) -> Vec<Minute> {
        let (Some(first), Some(last)) = (
            self.minutes.keys().next().copied(),
            self.minutes.keys().next_back().copied(),
        ) else {
            return Vec::new();
        };
        (first..=last)
            .step_by(60)
            .map(|key| {
                self.minutes
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| empty_minute(key))
            })
            .collect()
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
}
