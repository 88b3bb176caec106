//! Summary statistics of repeated measurements.

use serde::Serialize;

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
}
