//! Intervals of time (requests, stops) as the checkpoint journal writes
//! them: at 800 requests a second the journal is mostly requests, and
//! `{"start":"2026-11-30T01:53:07.123Z","duration_s":0.005}` for each would
//! alone exceed its budget. Here a request costs a few bytes: its start as
//! the gap from the one before and its length, both in the coarsest unit
//! that keeps every figure exact.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// Nanoseconds since the epoch: exact for every `DateTime`, whose range
/// exceeds an `i64` of nanoseconds.
pub fn nanos(time: DateTime<Utc>) -> i128 {
    i128::from(time.timestamp()) * NANOS_PER_SECOND + i128::from(time.timestamp_subsec_nanos())
}

/// The time `nanos` after the epoch, when a `DateTime` can hold it.
pub fn time(nanos: i128) -> Option<DateTime<Utc>> {
    let seconds = i64::try_from(nanos.div_euclid(NANOS_PER_SECOND)).ok()?;
    let subsecond = u32::try_from(nanos.rem_euclid(NANOS_PER_SECOND)).ok()?;
    DateTime::from_timestamp(seconds, subsecond)
}

/// The whole nanoseconds of `seconds` from which `nanos as f64 / 1e9` gives
/// `seconds` back (the access log parser makes every duration so), the
/// nearest otherwise.
pub fn whole_nanos(seconds: f64) -> i128 {
    let nearest = (seconds * 1e9).round() as i128;
    [nearest, nearest - 1, nearest + 1]
        .into_iter()
        .find(|n| seconds_of(*n) == seconds)
        .unwrap_or(nearest)
}

pub fn seconds_of(nanos: i128) -> f64 {
    nanos as f64 / 1e9
}

/// Intervals, each a start and a length in nanoseconds, in their order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// Nanoseconds per unit: 1 ms, 1 µs or 1 ns.
    unit: i128,
    /// The first start, in units since the epoch.
    first: i128,
    /// Each later start, as units after the start before it.
    gaps: Vec<i128>,
    /// Each interval's length, in units.
    lengths: Vec<i128>,
}

impl Timeline {
    pub fn new(intervals: &[(i128, i128)]) -> Timeline {
        let Some(&(first, _)) = intervals.first() else {
            return Timeline::default();
        };
        let gaps = intervals.windows(2).map(|pair| pair[1].0 - pair[0].0);
        let unit = [1_000_000, 1_000, 1]
            .into_iter()
            .find(|unit| {
                first % unit == 0
                    && gaps.clone().all(|gap| gap % unit == 0)
                    && intervals.iter().all(|(_, length)| length % unit == 0)
            })
            .unwrap_or(1);
        Timeline {
            unit,
            first: first / unit,
            gaps: gaps.map(|gap| gap / unit).collect(),
            lengths: intervals.iter().map(|(_, length)| length / unit).collect(),
        }
    }

    /// The intervals back, in nanoseconds; `None` when the lists disagree
    /// (a damaged record).
    pub fn intervals(&self) -> Option<Vec<(i128, i128)>> {
        if self.lengths.is_empty() {
            return self.gaps.is_empty().then(Vec::new);
        }
        if self.gaps.len() + 1 != self.lengths.len() || self.unit <= 0 {
            return None;
        }
        let starts = std::iter::once(0).chain(self.gaps.iter().copied());
        let mut at = self.first;
        Some(
            starts
                .zip(&self.lengths)
                .map(|(gap, length)| {
                    at += gap;
                    (at * self.unit, length * self.unit)
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_come_back_exactly_in_the_coarsest_unit() {
        let ms = 1_000_000;
        let t0 = nanos(DateTime::from_timestamp(1_800_000_000, 0).unwrap());
        let intervals = [(t0, 5 * ms), (t0 + ms, 3 * ms), (t0 + ms, ms)];
        let timeline = Timeline::new(&intervals);
        let json = serde_json::to_string(&timeline).unwrap();
        assert!(json.contains(r#""gaps":[1,0],"lengths":[5,3,1]"#), "{json}");
        let back: Timeline = serde_json::from_str(&json).unwrap();
        assert_eq!(back.intervals().unwrap(), intervals);
        // One nanosecond off the millisecond: nanoseconds, still exact.
        let odd = [(t0, 5 * ms), (t0 + 7, 1)];
        assert_eq!(Timeline::new(&odd).intervals().unwrap(), odd);
        assert_eq!(Timeline::new(&[]).intervals().unwrap(), []);
    }

    #[test]
    fn times_and_durations_round_trip() {
        for time in [DateTime::<Utc>::MIN_UTC, DateTime::<Utc>::MAX_UTC] {
            assert_eq!(self::time(nanos(time)), Some(time));
        }
        for n in [
            1_i128,
            5_000_000,
            226_000_000,
            987_654_321_123,
            i64::MAX as i128,
        ] {
            let seconds = n as i64 as f64 / 1e9;
            assert_eq!(seconds_of(whole_nanos(seconds)), seconds, "{n}");
        }
    }
}
