//! Wall-clock minute windows: the exact count, total and maximum pause per
//! minute (not a decaying maximum), plus time stopped at safepoints. This is
//! the series that correlation, metrics and alerts line up with request latency.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use pausewatch_parsers::{GcEvent, LogTime};
use serde::Serialize;

/// One wall-clock minute. Events belong to the minute in which they ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Minute {
    pub start: DateTime<Utc>,
    pub pause_count: u64,
    pub pause_total_seconds: f64,
    pub pause_max_seconds: f64,
    pub safepoint_count: u64,
    pub safepoint_total_seconds: f64,
}

/// Per-minute aggregation keyed by minute start (seconds since the epoch).
#[derive(Debug, Default)]
pub struct MinuteWindows {
    minutes: BTreeMap<i64, Minute>,
    /// Events without a wall-clock time cannot be placed in a minute.
    pub unplaced_events: u64,
}

fn minute_key(time: &LogTime) -> Option<i64> {
    time.wall.map(|w| w.timestamp().div_euclid(60) * 60)
}

impl MinuteWindows {
    fn minute(&mut self, key: i64) -> &mut Minute {
        self.minutes.entry(key).or_insert_with(|| Minute {
            start: Utc.timestamp_opt(key, 0).single().unwrap_or_default(),
            ..Minute::default()
        })
    }

    pub fn add(&mut self, event: &GcEvent) {
        let (end, seconds, is_pause) = match event {
            GcEvent::Pause(p) => (&p.end, p.duration_s, true),
            GcEvent::Safepoint(s) => (&s.end, s.total_s, false),
            _ => return,
        };
        let Some(key) = minute_key(end) else {
            self.unplaced_events += 1;
            return;
        };
        let minute = self.minute(key);
        if is_pause {
            minute.pause_count += 1;
            minute.pause_total_seconds += seconds;
            minute.pause_max_seconds = minute.pause_max_seconds.max(seconds);
        } else {
            minute.safepoint_count += 1;
            minute.safepoint_total_seconds += seconds;
        }
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
                self.minutes.get(&key).cloned().unwrap_or_else(|| Minute {
                    start: Utc.timestamp_opt(key, 0).single().unwrap_or_default(),
                    ..Minute::default()
                })
            })
            .collect()
    }
}
