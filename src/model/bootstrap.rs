//! Bootstrap intervals on the difference of a quantile (p50 to p99.9, or
//! the max) between two samples of pauses or requests, so that `compare`
//! can test a tail from the individual pauses and requests of two short
//! runs, where a test on per-minute values has too few points to ever
//! reach significance.
//!
//! A circular block bootstrap: each resample is made of blocks of
//! consecutive values (in time order), `⌈n^(1/3)⌉` long, so that runs of
//! requests stalled behind one pause, or pauses that grow with the heap,
//! are resampled together rather than as if independent. Seeded: the same
//! runs always give the same intervals and verdict.

use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

/// Resamples per interval: enough for a stable 2.5 % and 97.5 % point.
const RESAMPLES: usize = 2000;

/// The fixed seed: a comparison is reproducible, run after run.
const SEED: u64 = 0x5eed_c0de_2026_0022;

/// What the bootstrap says about `quantile(candidate) − quantile(baseline)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// The 95 % percentile interval of the difference.
    pub low: f64,
    pub high: f64,
    /// Two-sided: twice the share of resampled differences on the far side
    /// of zero (ties counted half), `(k + 1) / (B + 1)` so it is never 0.
    pub p_value: f64,
}

/// Nearest-rank quantile (as `analyze` computes its figures) of `values`,
/// reordering them; `quantile` 1.0 is the max.
fn nearest_rank(values: &mut [f64], quantile: f64) -> f64 {
    *values
        .select_nth_unstable_by(rank_index(values.len(), quantile), f64::total_cmp)
        .1
}

/// The 0-based index of the nearest-rank `quantile` of `n` sorted values.
fn rank_index(n: usize, quantile: f64) -> usize {
    let rank = (quantile * n as f64).ceil() as usize;
    rank.clamp(1, n) - 1
}

/// One sample ready to resample: its values sorted, and each value's place
/// in that order. A resample is kept as how often it drew each place, so
/// that all its quantiles come from one pass over the counts rather than a
/// sort or selection per quantile (a run has tens of thousands of requests).
struct Sample {
    sorted: Vec<f64>,
    place: Vec<usize>,
    block: usize,
    draws: Vec<u32>,
}

impl Sample {
    fn new(values: &[f64]) -> Sample {
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
        let mut place = vec![0; values.len()];
        for (rank, &index) in order.iter().enumerate() {
            place[index] = rank;
        }
        Sample {
            sorted: order.iter().map(|&i| values[i]).collect(),
            place,
            block: (values.len() as f64).cbrt().ceil() as usize,
            draws: vec![0; values.len()],
        }
    }

    /// Draws a circular block resample and returns its value at each of
    /// `quantiles` (ascending).
    fn resample(&mut self, rng: &mut XorShiftRng, quantiles: &[f64], out: &mut Vec<f64>) {
        let n = self.place.len();
        self.draws.fill(0);
        let mut drawn = 0;
        while drawn < n {
            let start = rng.random_range(0..n);
            let take = self.block.min(n - drawn);
            for i in 0..take {
                self.draws[self.place[(start + i) % n]] += 1;
            }
            drawn += take;
        }
        out.clear();
        let (mut seen, mut place) = (0usize, 0usize);
        for &quantile in quantiles {
            let wanted = rank_index(n, quantile);
            // The value at 0-based rank `wanted` is the first place whose
            // draws bring the count past it.
            while seen + self.draws[place] as usize <= wanted {
                seen += self.draws[place] as usize;
                place += 1;
            }
            out.push(self.sorted[place]);
        }
    }
}

/// The bootstrap of `quantile(candidate) − quantile(baseline)` for each of
/// `quantiles` (ascending), from the same resamples; `None` when a sample
/// is empty. The samples are in time order.
pub fn quantile_differences(
    baseline: &[f64],
    candidate: &[f64],
    quantiles: &[f64],
) -> Option<Vec<Difference>> {
    if baseline.is_empty() || candidate.is_empty() {
        return None;
    }
    debug_assert!(quantiles.is_sorted());
    let mut rng = XorShiftRng::seed_from_u64(SEED);
    let mut differences = vec![Vec::with_capacity(RESAMPLES); quantiles.len()];
    let (mut base, mut cand) = (Sample::new(baseline), Sample::new(candidate));
    let (mut base_q, mut cand_q) = (Vec::new(), Vec::new());
    for _ in 0..RESAMPLES {
        base.resample(&mut rng, quantiles, &mut base_q);
        cand.resample(&mut rng, quantiles, &mut cand_q);
        for ((out, b), c) in differences.iter_mut().zip(&base_q).zip(&cand_q) {
            out.push(c - b);
        }
    }
    Some(differences.into_iter().map(summarise).collect())
}

fn summarise(mut differences: Vec<f64>) -> Difference {
    let below = differences.iter().filter(|d| **d < 0.0).count() as f64;
    let above = differences.iter().filter(|d| **d > 0.0).count() as f64;
    let ties = differences.len() as f64 - below - above;
    let far_side = below.min(above) + ties / 2.0;
    let p_value = (2.0 * (far_side + 1.0) / (differences.len() as f64 + 1.0)).min(1.0);
    let low = nearest_rank(&mut differences, 0.025);
    let high = nearest_rank(&mut differences, 0.975);
    Difference { low, high, p_value }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of values (no RNG shared with the code).
    fn spread(n: usize, scale: f64) -> Vec<f64> {
        (0..n)
            .map(|i| scale * (1.0 + ((i * 7919) % 1000) as f64 / 1000.0))
            .collect()
    }

    #[test]
    fn the_same_samples_give_the_same_interval() {
        let (a, b) = (spread(200, 0.01), spread(150, 0.012));
        let first = quantile_differences(&a, &b, &[0.5, 0.999, 1.0]).unwrap();
        assert_eq!(
            first,
            quantile_differences(&a, &b, &[0.5, 0.999, 1.0]).unwrap()
        );
    }

    /// Identical samples: the interval holds zero and nothing is significant.
    #[test]
    fn no_change_is_not_significant() {
        let a = spread(300, 0.01);
        for d in quantile_differences(&a, &a, &[0.5, 0.99, 0.999, 1.0]).unwrap() {
            assert!(d.low <= 0.0 && d.high >= 0.0, "{d:?}");
            assert!(d.p_value > 0.3, "{d:?}");
        }
    }

    /// Every candidate value three times the baseline's: the interval is
    /// the shift's and excludes zero, at the smallest p the resamples allow.
    #[test]
    fn a_tripled_tail_is_outside_the_interval() {
        let a = spread(100, 0.01);
        let b: Vec<f64> = a.iter().map(|v| v * 3.0).collect();
        let d = quantile_differences(&a, &b, &[0.999]).unwrap()[0];
        // p99.9 of 100 values is the max, 0.01999 → 0.05997.
        assert!(d.low > 0.0 && d.high <= 0.06 - 0.01 + 1e-12, "{d:?}");
        assert!((d.p_value - 2.0 / (RESAMPLES as f64 + 1.0)).abs() < 1e-12);
    }

    #[test]
    fn empty_samples_have_no_interval() {
        assert_eq!(quantile_differences(&[], &[1.0], &[0.5]), None);
    }
}
