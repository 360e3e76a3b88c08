//! The one fixed-bucket histogram of the model (pauses, request durations)
//! and the one `histogram_quantile`, shared by it and by the latency
//! histogram scraped from applications, so that every quantile the agent
//! reports is computed the way Prometheus computes it.

use serde::{Deserialize, Serialize};

/// Upper bounds of the pause histogram, seconds: 0.5 ms to 10 s in 1-2-5 steps,
/// so that common pause budgets (10, 50, 100, 200 ms) fall on a boundary.
pub const PAUSE_BUCKETS: [f64; 15] = [
    0.0005,
    0.001,
    0.002,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1.0,
    2.0,
    5.0,
    10.0,
    f64::INFINITY,
];

/// A fixed-bucket histogram (per-bucket counts, not cumulative).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum: f64,
}

impl Histogram {
    pub fn observe(&mut self, value: f64) {
        if self.buckets.len() != PAUSE_BUCKETS.len() {
            self.buckets = vec![0; PAUSE_BUCKETS.len()];
        }
        let index = PAUSE_BUCKETS
            .iter()
            .position(|&bound| value <= bound)
            .unwrap_or(PAUSE_BUCKETS.len() - 1);
        self.buckets[index] += 1;
        self.count += 1;
        self.sum += value;
    }

    pub fn merge(&mut self, other: &Histogram) {
        if self.buckets.len() != PAUSE_BUCKETS.len() {
            self.buckets = vec![0; PAUSE_BUCKETS.len()];
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum += other.sum;
    }

    /// The `q` quantile as Prometheus's `histogram_quantile` estimates it
    /// from these buckets.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let mut cumulative = 0u64;
        let buckets: Vec<(f64, f64)> = PAUSE_BUCKETS
            .iter()
            .enumerate()
            .map(|(i, &bound)| {
                cumulative += self.buckets.get(i).copied().unwrap_or(0);
                (bound, cumulative as f64)
            })
            .collect();
        histogram_quantile(q, &buckets)
    }
}

/// The `q` quantile of cumulative bucket counts, with Prometheus'
/// `histogram_quantile` semantics: linear interpolation inside the bucket the
/// rank falls in, the lowest bucket interpolated from 0 (unless its bound is
/// not positive: then that bound), and the highest finite bound when the rank
/// falls in the `+Inf` bucket. Counts that decrease with the bound are raised
/// to keep them cumulative.
///
/// `None` when the total count is 0, when there is no `+Inf` bucket or no
/// finite one, or when `q` is outside `[0, 1]` (where Prometheus answers NaN
/// or ±Inf).
pub fn histogram_quantile(q: f64, cumulative: &[(f64, f64)]) -> Option<f64> {
    if !(0.0..=1.0).contains(&q) {
        return None;
    }
    let mut buckets: Vec<(f64, f64)> = cumulative
        .iter()
        .copied()
        .filter(|(le, _)| !le.is_nan())
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    if buckets.len() < 2 || buckets.last()?.0 != f64::INFINITY {
        return None;
    }
    let mut highest = 0.0_f64;
    for bucket in &mut buckets {
        if bucket.1.is_nan() {
            return None;
        }
        highest = highest.max(bucket.1);
        bucket.1 = highest;
    }
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let mut rank = q * total;
    let index = buckets.partition_point(|(_, count)| *count < rank);
    if index >= buckets.len() - 1 {
        return Some(buckets[buckets.len() - 2].0);
    }
    let end = buckets[index].0;
    if index == 0 && end <= 0.0 {
        return Some(end);
    }
    let mut start = 0.0;
    let mut count = buckets[index].1;
    if index > 0 {
        start = buckets[index - 1].0;
        count -= buckets[index - 1].1;
        rank -= buckets[index - 1].1;
    }
    if count <= 0.0 {
        return Some(start);
    }
    Some(start + (end - start) * (rank / count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_inside_buckets_like_prometheus() {
        let mut histogram = Histogram::default();
        // 90 pauses of 3 ms (bucket 2-5 ms), 10 of 30 ms (bucket 20-50 ms).
        for _ in 0..90 {
            histogram.observe(0.003);
        }
        for _ in 0..10 {
            histogram.observe(0.030);
        }
        // p50: rank 50 of the 90 in (2 ms, 5 ms]: 2 + 3 * 50/90 ms.
        assert!((histogram.quantile(0.5).unwrap() - (0.002 + 0.003 * 50.0 / 90.0)).abs() < 1e-12);
        // p99: rank 99, 9th of the 10 in (20 ms, 50 ms]: 20 + 30 * 9/10 ms.
        assert!((histogram.quantile(0.99).unwrap() - 0.047).abs() < 1e-12);
        assert_eq!(Histogram::default().quantile(0.99), None);
    }
}
