//! The Mann-Whitney U test (two-sided), so that `compare` calls a change
//! significant only when the per-minute values of two runs differ by more
//! than minute-to-minute noise. Rank-based: it assumes nothing about the
//! shape of pause or latency distributions, which are far from normal.
//!
//! Computed as SciPy's `mannwhitneyu(..., method="auto")` does: the exact
//! distribution of U when there are no ties and one sample has at most 8
//! values, else the normal approximation with tie and continuity correction.

/// Two-sided p-value of the hypothesis that `a` and `b` come from the same
/// distribution; `None` when a sample is empty.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (n1, n2) = (a.len(), b.len());
    let (ranks, tie_term) = ranks(a.iter().chain(b).copied().collect());
    let rank_sum_a: f64 = ranks[..n1].iter().sum();
    let u1 = rank_sum_a - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let p = if (n1 <= 8 || n2 <= 8) && tie_term == 0.0 {
        exact_p(u1.max(u2).round() as usize, n1, n2)
    } else {
        normal_p(u1.max(u2), n1, n2, tie_term)
    };
    Some(p.clamp(0.0, 1.0))
}

/// The smallest two-sided p-value any two samples of `n1` and `n2` values
/// can reach (complete separation, no ties): 2 / C(n1 + n2, n1). When it
/// is not below the significance level, the samples are too small to
/// test, whatever their values.
pub fn smallest_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // C(n1 + n2, n1) as a product, exact in f64 for the sizes of runs.
    let ways = (1..=n1).fold(1.0, |c, k| c * (n2 + k) as f64 / k as f64);
    (2.0 / ways).min(1.0)
}

/// The fewest values per sample, the same in both, with which a test can
/// be significant at `level`.
pub fn smallest_testable(level: f64) -> usize {
    (1..)
        .find(|&n| smallest_p(n, n) < level)
        .unwrap_or(usize::MAX)
}

/// Midranks (1-based) of `values` in their original order, and Σ(t³ − t)
/// over the groups of tied values.
fn ranks(values: Vec<f64>) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let midrank = (start + end + 1) as f64 / 2.0;
        for &index in &order[start..end] {
            ranks[index] = midrank;
        }
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        start = end;
    }
    (ranks, tie_term)
}

/// P(U ≥ u) · 2 under the null hypothesis, from the exact distribution of U
/// (counting the arrangements of n1 + n2 ranks), `u` being the larger of U1, U2.
fn exact_p(u: usize, n1: usize, n2: usize) -> f64 {
    // ways[k][s]: subsets of size k of the ranks seen so far whose U is s.
    let max_u = n1 * n2;
    let mut ways = vec![vec![0f64; max_u + 1]; n1 + 1];
    ways[0][0] = 1.0;
    for position in 0..n1 + n2 {
        for k in (1..=n1.min(position + 1)).rev() {
            // Taking the value at `position` as the k-th of sample a puts
            // (position - (k - 1)) values of b below it.
            let shift = position + 1 - k;
            if shift > n2 {
                continue;
            }
            for s in (shift..=max_u).rev() {
                ways[k][s] += ways[k - 1][s - shift];
            }
        }
    }
    let counts = &ways[n1];
    let total: f64 = counts.iter().sum();
    let upper: f64 = counts[u..].iter().sum();
    2.0 * upper / total
}

/// The normal approximation with tie correction and continuity correction.
fn normal_p(u: f64, n1: usize, n2: usize, tie_term: f64) -> f64 {
    let (n1, n2) = (n1 as f64, n2 as f64);
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        // Every value equal: nothing tells the samples apart.
        return 1.0;
    }
    let z = (u - mean - 0.5) / variance.sqrt();
    // Two-sided: 2 · P(Z > z) = erfc(z / √2).
    libm::erfc(z / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact cases by hand: with n1 = n2 = 4 there are C(8,4) = 70
    /// arrangements; complete separation is 1 of them in each direction.
    #[test]
    fn exact_distribution_by_counting() {
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).unwrap();
        assert!((p - 2.0 / 70.0).abs() < 1e-12, "{p}");
        // One swap (U = 1): 2 arrangements at U ≤ 1 on each side → 4/70.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 5.0], &[4.0, 6.0, 7.0, 8.0]).unwrap();
        assert!((p - 4.0 / 70.0).abs() < 1e-12, "{p}");
        // n1 = n2 = 1: the two orders are equally likely.
        assert_eq!(mann_whitney_p(&[1.0], &[2.0]), Some(1.0));
        // n1 = 3, n2 = 2, complete separation: 1 of C(5,2) = 10 each way.
        let p = mann_whitney_p(&[10.0, 11.0, 12.0], &[1.0, 2.0]).unwrap();
        assert!((p - 0.2).abs() < 1e-12, "{p}");
    }

    /// Values computed with SciPy 1.17.1: `scipy.stats.mannwhitneyu(a, b,
    /// alternative="two-sided").pvalue` (method "auto").
    #[test]
    fn agrees_with_scipy() {
        let cases: [(&[f64], &[f64], f64); 5] = [
            // ties, normal approximation
            (
                &[1.0, 2.0, 2.0, 3.0, 5.0],
                &[2.0, 4.0, 6.0, 6.0, 7.0],
                0.08968602177036457,
            ),
            // 8 values each, no ties: exact
            (
                &[0.3, 1.2, 2.5, 3.1, 4.8, 5.0, 6.6, 7.7],
                &[2.9, 4.1, 5.5, 6.9, 8.2, 9.0, 9.4, 10.1],
                0.037917637917637914,
            ),
            // exact, 5 and 6 values
            (
                &[12.0, 15.0, 11.0, 19.0, 14.0],
                &[21.0, 13.0, 25.0, 22.0, 18.0, 30.0],
                0.05194805194805195,
            ),
            // identical samples
            (&[3.0, 3.0, 3.0], &[3.0, 3.0, 3.0], 1.0),
            // 9 against 10 values, no ties: normal approximation
            (
                &[1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0],
                &[20.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 19.0],
                0.17790959498698244,
            ),
        ];
        for (a, b, expected) in cases {
            let p = mann_whitney_p(a, b).unwrap();
            assert!(
                (p - expected).abs() < 1e-9,
                "{a:?} vs {b:?}: {p} != {expected}"
            );
            let swapped = mann_whitney_p(b, a).unwrap();
            assert!((swapped - p).abs() < 1e-12);
        }
    }

    /// The floor is the p of complete separation, which the test itself
    /// computes; 3 against 3 minutes can never be significant at 0.05.
    #[test]
    fn the_smallest_p_is_that_of_complete_separation() {
        for (n1, n2) in [(3, 3), (4, 4), (3, 5), (2, 9), (1, 1)] {
            let low: Vec<f64> = (0..n1).map(|i| i as f64).collect();
            let high: Vec<f64> = (0..n2).map(|i| 100.0 + i as f64).collect();
            let p = mann_whitney_p(&low, &high).unwrap();
            assert!((smallest_p(n1, n2) - p).abs() < 1e-12, "{n1} {n2}: {p}");
        }
        assert!((smallest_p(3, 3) - 0.1).abs() < 1e-12);
        assert_eq!(smallest_testable(0.05), 4);
    }

    #[test]
    fn empty_sample_has_no_p_value() {
        assert_eq!(mann_whitney_p(&[], &[1.0]), None);
    }
}
