//! One minute's bucket deltas summarized as `histogram_quantile` would.

use super::Buckets;
use crate::model::correlate::LatencySummary;
use crate::model::histogram::histogram_quantile;

/// The summary of one minute's bucket deltas: `count` is the `+Inf` delta,
/// the quantiles come from [`quantile`] (0 when undefined), `max_seconds` is
/// the bound of the highest non-empty bucket (the highest finite bound when
/// that is `+Inf`). All zero when nothing was counted.
pub fn summarize(delta: &Buckets) -> LatencySummary {
    let total = delta.last().map_or(0.0, |(_, count)| *count);
    let count = if total.is_finite() && total > 0.0 {
        total.round() as u64
    } else {
        0
    };
    if count == 0 {
        return LatencySummary::default();
    }
    let q = |q: f64| histogram_quantile(q, delta).unwrap_or(0.0);
    let mut max_seconds = 0.0;
    let mut below = 0.0;
    let mut highest_finite = 0.0;
    for (le, cumulative) in delta {
        if *cumulative > below {
            max_seconds = if le.is_finite() { *le } else { highest_finite };
        }
        below = below.max(*cumulative);
        if le.is_finite() {
            highest_finite = *le;
        }
    }
    LatencySummary {
        count,
        p50_seconds: q(0.50),
        p90_seconds: q(0.90),
        p99_seconds: q(0.99),
        p999_seconds: q(0.999),
        max_seconds,
    }
}
