//! A/B comparison of two configurations in one process: interleaved runs (driven by
//! `bellhop_engine::ab`), per-phase statistics, and a verdict that does not call noise a
//! change.
//!
//! After warm-up, runs alternate A B B A A B ... on the same jobs, so each round is a
//! pair measured under the same machine conditions (shared machines drift by tens of
//! percent over seconds). For every phase (and the whole proof, and peak RSS) it reports
//! the medians, the B/A ratio (median of the per-round ratios) with a bootstrap
//! confidence interval over rounds, a two-sided Mann-Whitney U p-value of the two
//! samples, a Wilcoxon signed-rank p-value of the paired log ratios, and a verdict.
//! A change is called only when all of these agree: the paired p is below `alpha`
//! divided by the number of metrics compared (Bonferroni), the interval excludes 1, the
//! ratio is at least `threshold` away from 1, and the medians differ by more than a
//! floor (0.1 ms, 1 MiB) below which a difference is not worth a verdict.
//!
//! Runs either prove (every phase) or, without parameters, only synthesize: two
//! strategies differ only there, and a synthesis-only round costs milliseconds, not
//! seconds, so enough rounds fit to see a small change through a noisy machine.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{
    phases::{PhaseRecord, GPU_PHASES, PHASES},
    stats::{bootstrap_median_ci, mann_whitney_p, median, signed_rank_p},
};

/// How an A/B comparison runs and judges.
#[derive(Clone, Debug, Serialize)]
pub struct AbOptions {
    /// Measured runs of each variant.
    pub runs: usize,
    /// Unmeasured runs of each variant first.
    pub warmup: usize,
    /// Jobs per run, synthesized as one batch (2 or more keeps both of a 2-core
    /// machine's cores busy in synthesis too).
    pub batch: usize,
    /// Verify each proof (as the configs say).
    pub verify: bool,
    /// Family-wise significance level, split over the metrics compared.
    pub alpha: f64,
    /// Confidence level of the ratio intervals.
    pub confidence: f64,
    /// Smallest relative change that gets a verdict (0.03: 3%).
    pub threshold: f64,
}

impl Default for AbOptions {
    fn default() -> Self {
        Self { runs: 15, warmup: 1, batch: 1, verify: true, alpha: 0.05, confidence: 0.95, threshold: 0.03 }
    }
}

/// One measured run.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// 0 for A, 1 for B.
    pub variant: usize,
    /// Position in the interleaved sequence.
    pub order: usize,
    /// Phase -> seconds, with `total` the whole proof and `gpu` its h and MSMs by either
    /// route ([`GPU_PHASES`]); plugins' sub-phases (`synthesis.replay_witness_cpu`) too,
    /// for the record (report.json), not compared.
    pub seconds: BTreeMap<String, f64>,
    /// Phase -> process page faults.
    pub faults: BTreeMap<String, u64>,
    /// Phase -> host allocations (empty when not counted).
    pub allocations: BTreeMap<String, u64>,
    /// Peak RSS of the process during the run, when it could be reset and read.
    pub peak_rss: Option<u64>,
}

/// What the statistics say about one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// B is lower (faster, or less memory).
    Lower,
    /// B is higher (slower, or more memory).
    Higher,
    /// No change that the data support.
    NoDifference,
}

/// One metric compared.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The phase, `gpu`, `total`, or `peak_rss`.
    pub metric: String,
    /// Seconds or bytes.
    pub unit: &'static str,
    /// Median of A.
    pub median_a: f64,
    /// Median of B.
    pub median_b: f64,
    /// The median of the per-round ratios B/A.
    pub ratio: f64,
    /// The ratio's bootstrap confidence interval (resampling rounds).
    pub ci: (f64, f64),
    /// Two-sided Mann-Whitney U p-value of the two samples.
    pub p_value: f64,
    /// Two-sided Wilcoxon signed-rank p-value of the per-round log ratios.
    pub p_paired: f64,
    /// The verdict.
    pub verdict: Verdict,
}

impl Comparison {
    /// The verdict in the metric's words: faster/slower or less/more memory.
    pub fn verdict_text(&self) -> &'static str {
        match (self.verdict, self.unit) {
            (Verdict::NoDifference, _) => "no difference",
            (Verdict::Lower, "s") => "faster",
            (Verdict::Higher, "s") => "slower",
            (Verdict::Lower, _) => "less",
            (Verdict::Higher, _) => "more",
        }
    }
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct AbReport {
    /// The circuit.
    pub circuit: String,
    /// What A is (the keys where it differs from B).
    pub a: String,
    /// What B is.
    pub b: String,
    /// The options used.
    pub options: AbOptions,
    /// Runs only synthesized (and freed the assignments), without proving.
    pub synthesis_only: bool,
    /// Every measured run.
    pub runs: Vec<Run>,
    /// One comparison per metric.
    pub comparisons: Vec<Comparison>,
}

impl AbReport {
    /// The comparison of `metric`.
    pub fn comparison(&self, metric: &str) -> Option<&Comparison> {
        self.comparisons.iter().find(|c| c.metric == metric)
    }

    /// The values of `metric` for `variant`, in round order, for rounds where both
    /// variants have one (so the two lists pair up).
    pub fn paired(&self, variant: usize, metric: &str) -> Vec<f64> {
        let rounds = self.runs.len() / 2;
        (0..rounds)
            .filter_map(|round| {
                let pick = |v: usize| {
                    self.runs.iter().find(|r| r.variant == v && r.order / 2 == round).and_then(|r| value_of(r, metric))
                };
                pick(0).zip(pick(1)).map(|(a, b)| if variant == 0 { a } else { b })
            })
            .collect()
    }

    /// The measured values of `metric` for `variant`, in run order.
    pub fn values(&self, variant: usize, metric: &str) -> Vec<f64> {
        self.runs.iter().filter(|r| r.variant == variant).filter_map(|r| value_of(r, metric)).collect()
    }
}

fn value_of(run: &Run, metric: &str) -> Option<f64> {
    match metric {
        "peak_rss" => run.peak_rss.map(|b| b as f64),
        phase => run.seconds.get(phase).copied(),
    }
}

impl Run {
    /// Run `order` of `variant` from its phase `records` (each phase summed over the run's
    /// proofs; a batch phase counts once), its `total` seconds and peak RSS.
    pub fn from_records(
        variant: usize,
        order: usize,
        records: Vec<PhaseRecord>,
        total: f64,
        peak_rss: Option<u64>,
    ) -> Self {
        let mut run = Run {
            variant,
            order,
            seconds: BTreeMap::new(),
            faults: BTreeMap::new(),
            allocations: BTreeMap::new(),
            peak_rss,
        };
        for r in records {
            if !PHASES.contains(&r.phase.as_str()) {
                // A plugin's sub-phase (`synthesis.replay_witness_cpu`): kept, not compared.
                if r.phase.split_once('.').is_some_and(|(phase, _)| PHASES.contains(&phase)) {
                    *run.seconds.entry(r.phase).or_insert(0.0) += r.seconds;
                }
                continue;
            }
            *run.seconds.entry(r.phase.clone()).or_insert(0.0) += r.seconds;
            *run.faults.entry(r.phase.clone()).or_insert(0) += r.faults;
            if let Some(n) = r.allocations {
                *run.allocations.entry(r.phase).or_insert(0) += n;
            }
        }
        let gpu: Vec<f64> = GPU_PHASES.iter().filter_map(|p| run.seconds.get(*p).copied()).collect();
        if !gpu.is_empty() {
            run.seconds.insert("gpu".into(), gpu.iter().sum());
        }
        run.seconds.insert("total".into(), total);
        run
    }
}

impl AbReport {
    /// The comparison of A (`labels[0]`) and B on `circuit` from their measured `runs`:
    /// every phase measured in both, `gpu`, `total` and peak RSS, each judged as
    /// [`compare`] does at `options.alpha` shared among them (Bonferroni).
    pub fn new(
        circuit: String,
        labels: [String; 2],
        options: &AbOptions,
        synthesis_only: bool,
        runs: Vec<Run>,
    ) -> Self {
        let [a, b] = labels;
        let mut report =
            AbReport { circuit, a, b, options: options.clone(), synthesis_only, runs, comparisons: vec![] };
        let metrics: Vec<(&str, &'static str, f64)> = PHASES
            .iter()
            .map(|p| (*p, "s", 1e-4))
            .chain([("gpu", "s", 1e-4), ("total", "s", 1e-4), ("peak_rss", "bytes", f64::from(1u32 << 20))])
            .filter(|(m, _, _)| !report.values(0, m).is_empty() && !report.values(1, m).is_empty())
            .collect();
        let alpha = options.alpha / metrics.len().max(1) as f64;
        report.comparisons = metrics
            .iter()
            .map(|&(metric, unit, floor)| {
                compare(metric, unit, &report.paired(0, metric), &report.paired(1, metric), alpha, floor, options)
            })
            .collect();
        report
    }
}

/// Compares paired samples `a` and `b` (round `k` of each measured together) of one metric.
pub fn compare(
    metric: &str,
    unit: &'static str,
    a: &[f64],
    b: &[f64],
    alpha: f64,
    floor: f64,
    options: &AbOptions,
) -> Comparison {
    let (median_a, median_b) = (median(a), median(b));
    let ratios: Vec<f64> = a.iter().zip(b).filter(|(a, _)| **a > 0.0).map(|(a, b)| b / a).collect();
    let ratio = if ratios.is_empty() { f64::NAN } else { median(&ratios) };
    let ci = bootstrap_median_ci(&ratios, options.confidence, 4000, 0x0ab);
    let p_value = mann_whitney_p(a, b);
    let log_ratios: Vec<f64> = ratios.iter().filter(|r| **r > 0.0).map(|r| r.ln()).collect();
    let p_paired = signed_rank_p(&log_ratios);
    let changed = p_paired < alpha
        && (ci.0 > 1.0 || ci.1 < 1.0)
        && (ratio - 1.0).abs() >= options.threshold
        && (median_b - median_a).abs() >= floor;
    let verdict = match (changed, ratio > 1.0) {
        (false, _) => Verdict::NoDifference,
        (true, true) => Verdict::Higher,
        (true, false) => Verdict::Lower,
    };
    Comparison { metric: metric.into(), unit, median_a, median_b, ratio, ci, p_value, p_paired, verdict }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn drift_shared_by_both_variants_does_not_hide_a_change() {
        // The machine slows down by 50% for half the rounds; B is 20% slower throughout.
        let a: Vec<f64> = (0..12).map(|k| if k % 4 < 2 { 1.0 } else { 1.5 }).collect();
        let b: Vec<f64> = a.iter().enumerate().map(|(k, x)| x * (1.2 + 0.002 * (k as f64 - 5.5))).collect();
        let c = compare("synthesis", "s", &a, &b, 0.05 / 11.0, 1e-4, &AbOptions::default());
        assert_eq!(c.verdict, Verdict::Higher, "{c:?}");
        assert!(c.ci.0 <= 1.2 && 1.2 <= c.ci.1, "{c:?}");
        assert!(c.p_value > c.p_paired * 10.0, "the unpaired test is blind to paired drift: {c:?}");
    }

    #[test]
    fn noise_is_not_called_a_change() {
        let options = AbOptions::default();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut noise = |n| (0..n).map(|_| 1.0 + rng.gen_range(-0.05..0.05)).collect::<Vec<f64>>();
        let (a, b) = (noise(12), noise(12));
        assert_eq!(compare("h", "s", &a, &b, 0.05 / 10.0, 1e-3, &options).verdict, Verdict::NoDifference);
        let slower: Vec<f64> = a.iter().map(|x| x * 1.19).collect();
        let c = compare("h", "s", &a, &slower, 0.05 / 10.0, 1e-3, &options);
        assert_eq!(c.verdict, Verdict::Higher);
        assert_eq!(c.verdict_text(), "slower");
    }
}
