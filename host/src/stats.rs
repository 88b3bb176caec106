//! Statistics of repeated measurements: summaries, and the tests and intervals the A/B
//! harness judges with (Mann-Whitney U, Wilcoxon signed-rank, a bootstrap interval of
//! the median).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use statrs::function::erf::erfc;

/// Median, extremes and quartiles of a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Sample size.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// First quartile.
    pub q1: f64,
    /// Third quartile.
    pub q3: f64,
}

/// The `q`-quantile of sorted `values` by linear interpolation.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

impl Summary {
    /// The summary of `values`.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Self {
        let mut v: Vec<f64> = values.into_iter().collect();
        v.sort_by(f64::total_cmp);
        Self {
            n: v.len(),
            median: quantile(&v, 0.5),
            min: v.first().copied().unwrap_or(0.0),
            max: v.last().copied().unwrap_or(0.0),
            q1: quantile(&v, 0.25),
            q3: quantile(&v, 0.75),
        }
    }

    /// The interquartile range relative to the median, in percent (0 for phases under
    /// a millisecond, where it means nothing).
    pub fn spread_percent(&self) -> f64 {
        if self.median < 1e-3 {
            0.0
        } else {
            100.0 * (self.q3 - self.q1) / self.median
        }
    }
}

/// A percentile bootstrap interval of the median of `values` at `level`.
pub fn bootstrap_median_ci(values: &[f64], level: f64, resamples: usize, seed: u64) -> (f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut medians: Vec<f64> = (0..resamples)
        .map(|_| median(&(0..values.len()).map(|_| values[rng.gen_range(0..values.len())]).collect::<Vec<_>>()))
        .collect();
    medians.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    (quantile(&medians, tail), quantile(&medians, 1.0 - tail))
}

/// The two-sided p-value of the Wilcoxon signed-rank test that `d` is centred on zero
/// (normal approximation with tie and continuity corrections; zeros dropped).
pub fn signed_rank_p(d: &[f64]) -> f64 {
    let mut nonzero: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    if nonzero.is_empty() {
        return 1.0;
    }
    nonzero.sort_by(|x, y| x.abs().total_cmp(&y.abs()));
    let n = nonzero.len() as f64;
    let (mut w_plus, mut ties, mut i) = (0.0, 0.0, 0);
    while i < nonzero.len() {
        let j = (i..nonzero.len()).find(|&j| nonzero[j].abs() != nonzero[i].abs()).unwrap_or(nonzero.len());
        let average_rank = (i + j + 1) as f64 / 2.0;
        w_plus += average_rank * nonzero[i..j].iter().filter(|x| **x > 0.0).count() as f64;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    let mean = n * (n + 1.0) / 4.0;
    let variance = n * (n + 1.0) * (2.0 * n + 1.0) / 24.0 - ties / 48.0;
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((w_plus - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// The median (0 for an empty sample).
pub fn median(values: &[f64]) -> f64 {
    Summary::of(values.iter().copied()).median
}

/// The two-sided p-value of the Mann-Whitney U test (normal approximation with tie
/// and continuity corrections).
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return 1.0;
    }
    let mut all: Vec<(f64, bool)> = a.iter().map(|&x| (x, true)).chain(b.iter().map(|&x| (x, false))).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut rank_sum_a, mut ties, mut i) = (0.0, 0.0, 0);
    while i < all.len() {
        let j = (i..all.len()).find(|&j| all[j].0 != all[i].0).unwrap_or(all.len());
        let average_rank = (i + j + 1) as f64 / 2.0;
        rank_sum_a += average_rank * all[i..j].iter().filter(|x| x.1).count() as f64;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    let n = n1 + n2;
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_of_small_samples() {
        let s = Summary::of([3.0, 1.0, 2.0, 4.0]);
        assert_eq!((s.n, s.median, s.min, s.max), (4, 2.5, 1.0, 4.0));
        assert_eq!((s.q1, s.q3), (1.75, 3.25));
        assert_eq!(Summary::of([]).median, 0.0);
        assert!((Summary::of([2.0, 2.0, 2.0]).spread_percent()).abs() < 1e-12);
    }

    #[test]
    fn mann_whitney_matches_known_values() {
        // Fully separated samples of 10: exact two-sided p is 1.08e-5; the normal
        // approximation gives about 1.8e-4.
        let a: Vec<f64> = (0..10).map(f64::from).collect();
        let b: Vec<f64> = (10..20).map(f64::from).collect();
        let p = mann_whitney_p(&a, &b);
        assert!(p > 1e-5 && p < 3e-4, "{p}");
        // Identical samples: no evidence at all.
        assert!((mann_whitney_p(&a, &a) - 1.0).abs() < 0.05);
        assert_eq!(mann_whitney_p(&[1.0, 1.0], &[1.0, 1.0]), 1.0);
    }

    #[test]
    fn bootstrap_interval_brackets_a_known_ratio() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let ratios: Vec<f64> = (0..15).map(|_| 1.2 + rng.gen_range(-0.03..0.03)).collect();
        let (lo, hi) = bootstrap_median_ci(&ratios, 0.95, 2000, 1);
        assert!(lo < 1.2 && 1.2 < hi && hi - lo < 0.05, "({lo}, {hi})");
    }

    #[test]
    fn signed_rank_matches_known_values() {
        // Twelve positive differences: W+ = 78, z = 3.02, two-sided p = 0.0025.
        let d: Vec<f64> = (1..=12).map(f64::from).collect();
        assert!((signed_rank_p(&d) - 0.0025).abs() < 3e-4, "{}", signed_rank_p(&d));
        let mixed = [1.0, -2.0, 3.0, -4.0, 5.0, -6.0];
        assert!(signed_rank_p(&mixed) > 0.5);
    }
}
