//! Cumulative scrapes turned into per-minute deltas, checkpointed with the agent.

use super::quantiles::summarize;
use super::Buckets;
use crate::model::correlate::LatencySummary;
use crate::model::minutes::minute_start;
use chrono::{DateTime, Utc};

/// Scrape gaps longer than this are not bridged: the minutes in the gap are
/// not emitted and the accumulator starts over (the first minute after the
/// gap has no baseline).
pub const MAX_GAP_MINUTES: i64 = 60;

/// Cumulative counts; crate-visible, as the next two, for the checkpoint's
/// record of them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cumulative(pub(crate) Buckets);

/// One scrape as the accumulator keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scrape {
    pub(crate) at: DateTime<Utc>,
    /// The counts as scraped, to detect resets.
    pub(crate) raw: Cumulative,
    /// The counts made monotonic across resets.
    pub(crate) adjusted: Cumulative,
}

/// Turns scrapes of cumulative buckets into per-minute summaries.
///
/// Minute `M` (`[M, M + 60 s)`) is complete once a scrape after its end has
/// been seen; its delta is the cumulative count at the last scrape at or
/// before `M`'s end minus that at the last scrape at or before `M`'s start.
/// So the first minute after start (no scrape at or before its start) is
/// skipped, and a scrape exactly on a boundary closes the minute before it.
///
/// - Counter resets: when any cumulative count is lower than in the previous
///   scrape, the new scrape counts from zero (as Prometheus' `rate` does):
///   its counts are added to what was counted before the reset. Requests
///   between the last scrape before a restart and the restart are lost.
/// - Scrape gaps: a minute in which no scrape happened takes the nearest
///   earlier scrape as its baseline and as its end, so it is still emitted,
///   with a zero summary, and the requests of the gap are counted in the
///   minute of the next scrape. Gaps over [`MAX_GAP_MINUTES`] are not
///   bridged: the accumulator starts over.
/// - A scrape older than the previous one, or with no buckets, a NaN bound or
///   a non-finite or negative count, is ignored. A change of bucket layout
///   (bounds added or removed) starts the accumulator over at that scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MinuteAccumulator {
    /// The latest scrape.
    pub(crate) last: Option<Scrape>,
    /// Adjusted counts at the last scrape at or before the start of the
    /// minute the latest scrape closes (the minute before it when it is on a
    /// boundary); `None` until there is one.
    pub(crate) baseline: Option<Cumulative>,
}

/// The minute (epoch seconds) a scrape taken at `at` ends: the `M` with
/// `M < at <= M + 60 s`.
fn closing_minute(at: DateTime<Utc>) -> i64 {
    let seconds = at.timestamp();
    let minute = seconds.div_euclid(60) * 60;
    if minute == seconds && at.timestamp_subsec_nanos() == 0 {
        minute - 60
    } else {
        minute
    }
}

fn valid(mut buckets: Buckets) -> Option<Buckets> {
    if buckets.is_empty()
        || buckets
            .iter()
            .any(|(le, count)| le.is_nan() || !count.is_finite() || *count < 0.0)
    {
        return None;
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    if buckets.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        return None;
    }
    Some(buckets)
}

fn same_layout(a: &Buckets, b: &Buckets) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0)
}

fn delta(end: &Buckets, start: &Buckets) -> Buckets {
    end.iter()
        .zip(start)
        .map(|((le, e), (_, s))| (*le, (e - s).max(0.0)))
        .collect()
}

impl MinuteAccumulator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one scrape taken at `at`; returns the summaries of minutes that
    /// completed, i.e. the per-minute delta between the last scrape at or
    /// before each minute boundary (counter resets: when any cumulative count
    /// decreases, treat the new scrape as starting from zero). Each minute is
    /// returned with its start; oldest first.
    pub fn observe(
        &mut self,
        at: DateTime<Utc>,
        buckets: Buckets,
    ) -> Vec<(DateTime<Utc>, LatencySummary)> {
        let Some(raw) = valid(buckets) else {
            return Vec::new();
        };
        let Some(last) = self.last.take() else {
            self.last = Some(Scrape {
                at,
                adjusted: Cumulative(raw.clone()),
                raw: Cumulative(raw),
            });
            return Vec::new();
        };
        if at < last.at {
            self.last = Some(last);
            return Vec::new();
        }
        let relayout = !same_layout(&raw, &last.raw.0);
        let adjusted = if relayout {
            raw.clone()
        } else {
            let reset = raw.iter().zip(&last.raw.0).any(|(new, old)| new.1 < old.1);
            raw.iter()
                .zip(&last.raw.0)
                .zip(&last.adjusted.0)
                .map(|(((le, new), (_, old)), (_, before))| {
                    let increase = if reset { *new } else { new - old };
                    (*le, before + increase)
                })
                .collect()
        };
        let previous_minute = closing_minute(last.at);
        let minute = closing_minute(at);
        let mut completed = Vec::new();
        if minute > previous_minute {
            if let Some(baseline) = &self.baseline {
                let summary = summarize(&delta(&last.adjusted.0, &baseline.0));
                completed.push((minute_start(previous_minute), summary));
            }
            let gap = (minute - previous_minute) / 60 - 1;
            if gap > MAX_GAP_MINUTES {
                self.baseline = None;
            } else {
                for skipped in 1..=gap {
                    completed.push((
                        minute_start(previous_minute + 60 * skipped),
                        LatencySummary::default(),
                    ));
                }
                self.baseline = Some(last.adjusted.clone());
            }
        }
        if relayout {
            self.baseline = None;
        }
        self.last = Some(Scrape {
            at,
            raw: Cumulative(raw),
            adjusted: Cumulative(adjusted),
        });
        completed
    }
}
