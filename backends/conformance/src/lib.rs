//! The backend conformance kit.
//!
//! Every backend primitive is checked against an independent reference (a naive sum for
//! small MSMs, bellperson 0.27's CPU multiexp and FFT otherwise) on edge inputs — sizes 0,
//! 1, 2, 2^k-1, 2^k, 2^k+1; all-zero scalars; scalar one everywhere; scalars near the
//! modulus; identity and repeated bases — and on random inputs from a printed seed.
//! Inputs a backend must refuse (unequal lengths, non-power-of-two NTTs) must come back
//! as [`ErrorKind::INVALID_INPUT`] errors, not panics or results: the kit checks a backend
//! as the host sees it, behind the seam ([`seam`](bellhop_plugin_sdk::backend::seam) for a
//! backend value; a loaded plugin is behind it already), which refuses them for every backend.
//!
//! Use it through `bellhop conformance <plugin>`, or stamp it into a backend's own test
//! suite with [`conformance_tests!`].

mod inputs;
pub mod reference;

use std::{fmt, time::Instant};

use bellhop_plugin_sdk::{
    backend::{Backend, NttDirection, ProvingBases},
    cast, cast_slice, cast_slice_mut,
    strategy::{Assignment, Density},
    ErrorKind, PluginError,
};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use inputs::{BaseClass, Inputs, ScalarClass};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A group of checks, one per primitive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// `msm_g1`.
    MsmG1,
    /// `msm_g2`.
    MsmG2,
    /// `ntt` in all four directions.
    Ntt,
    /// `compute_h`.
    ComputeH,
    /// `proof_msms` (ABI 1.4), where the backend offers it.
    ProofMsms,
}

impl Suite {
    /// All suites, in the order `run` uses.
    pub const ALL: [Suite; 5] = [Suite::MsmG1, Suite::MsmG2, Suite::Ntt, Suite::ComputeH, Suite::ProofMsms];
}

/// The result of one check.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The primitive, e.g. `msm_g1` or `ntt coset-inverse`.
    pub primitive: String,
    /// The input class, e.g. `scalars near the modulus`.
    pub input: String,
    /// The input length.
    pub size: usize,
    /// `None` on a pass; otherwise the first divergence.
    pub failure: Option<String>,
    /// Wall time of the backend call, in milliseconds.
    pub millis: f64,
}

/// The results of a run, with the seed that reproduces it.
#[derive(Clone, Debug)]
pub struct Report {
    /// The seed of the random inputs (`BELLHOP_SEED` reproduces the run).
    pub seed: u64,
    /// One entry per check, in order.
    pub results: Vec<CaseResult>,
}

impl Report {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|r| r.failure.is_none())
    }

    /// The first failing check.
    pub fn first_failure(&self) -> Option<&CaseResult> {
        self.results.iter().find(|r| r.failure.is_some())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "conformance seed {} (set BELLHOP_SEED={} to reproduce)", self.seed, self.seed)?;
        writeln!(f, "{:<22} {:<32} {:>7}  {:<6} {:>9}", "primitive", "input", "size", "result", "ms")?;
        for r in &self.results {
            let verdict = if r.failure.is_some() { "FAIL" } else { "pass" };
            writeln!(f, "{:<22} {:<32} {:>7}  {:<6} {:>9.2}", r.primitive, r.input, r.size, verdict, r.millis)?;
        }
        let failed = self.results.iter().filter(|r| r.failure.is_some()).count();
        writeln!(f, "{} passed, {} failed", self.results.len() - failed, failed)?;
        if let Some(first) = self.first_failure() {
            let why = first.failure.as_deref().unwrap_or_default();
            writeln!(f, "first divergence: {} / {} / size {}: {why}", first.primitive, first.input, first.size)?;
        }
        Ok(())
    }
}

/// Says on stderr, past the test harness's capture, that `what` could not be checked on
/// this machine; with `BELLHOP_REQUIRE_GPU=1` (the GPU machine's runs set it) it panics
/// instead, since there the check must run.
pub fn cannot_check_here(what: &str) {
    use std::io::Write as _;
    if std::env::var_os("BELLHOP_REQUIRE_GPU").is_some_and(|v| v == "1") {
        panic!("BELLHOP_REQUIRE_GPU=1, but {what}");
    }
    let _ = writeln!(std::io::stderr(), "NOT CHECKED here: {what}");
}

/// The seed from `BELLHOP_SEED`, or a fresh one.
pub fn seed_from_env() -> u64 {
    std::env::var("BELLHOP_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random)
}

/// Runs every suite against `backend`.
pub fn run(backend: &dyn Backend, seed: u64) -> Report {
    let mut results = Vec::new();
    for suite in Suite::ALL {
        results.extend(run_suite(backend, suite, seed).results);
    }
    Report { seed, results }
}

/// Runs one suite against `backend`.
pub fn run_suite(backend: &dyn Backend, suite: Suite, seed: u64) -> Report {
    let mut checker = Checker { backend, inputs: Inputs::new(ChaCha8Rng::seed_from_u64(seed)), results: Vec::new() };
    match suite {
        Suite::MsmG1 => checker.msm::<G1Affine>(
            "msm_g1",
            |b, bases, s| b.msm_g1(cast_slice(bases), s).map(cast),
            |b, kept| b.keep_bases(&kept.iter().map(|k| cast_slice(k)).collect::<Vec<_>>(), &[]),
        ),
        Suite::MsmG2 => checker.msm::<G2Affine>(
            "msm_g2",
            |b, bases, s| b.msm_g2(cast_slice(bases), s).map(cast),
            |b, kept| b.keep_bases(&[], &kept.iter().map(|k| cast_slice(k)).collect::<Vec<_>>()),
        ),
        Suite::Ntt => checker.ntt(),
        Suite::ComputeH => checker.compute_h(),
        Suite::ProofMsms => checker.proof_msms(),
    }
    Report { seed, results: checker.results }
}

/// Runs `suite` on `backend` behind the seam and panics with the report if anything
/// failed; for backends' test suites.
pub fn assert_suite<B: Backend + 'static>(backend: B, suite: Suite) {
    let report = run_suite(&bellhop_plugin_sdk::backend::seam(backend), suite, seed_from_env());
    println!("{report}");
    assert!(report.passed(), "{suite:?} conformance failed:\n{report}");
}

/// Stamps a module `$module` with one `#[test]` per [`Suite`] for the backend `$make`
/// evaluates to (any `bellhop_plugin_sdk::backend::Backend`, evaluated once per test and
/// checked behind the seam). With `skip_unless = $available`, a test on a machine where
/// `$available` is false says on stderr that it could not check (and fails under
/// `BELLHOP_REQUIRE_GPU=1`, see [`cannot_check_here`]) instead of evaluating `$make`.
///
/// ```ignore
/// bellhop_conformance::conformance_tests!(cuda, open_gpu_0(), skip_unless = !gpus().is_empty());
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($module:ident, $make:expr) => {
        $crate::conformance_tests!($module, $make, skip_unless = true);
    };
    ($module:ident, $make:expr, skip_unless = $available:expr) => {
        mod $module {
            use super::*;

            fn check(suite: $crate::Suite) {
                if !($available) {
                    $crate::cannot_check_here(&format!(
                        "{} conformance ({suite:?}) needs `{}`, which is false on this machine",
                        stringify!($module),
                        stringify!($available)
                    ));
                    return;
                }
                $crate::assert_suite($make, suite);
            }

            #[test]
            fn msm_g1() {
                check($crate::Suite::MsmG1);
            }

            #[test]
            fn msm_g2() {
                check($crate::Suite::MsmG2);
            }

            #[test]
            fn ntt() {
                check($crate::Suite::Ntt);
            }

            #[test]
            fn compute_h() {
                check($crate::Suite::ComputeH);
            }

            #[test]
            fn proof_msms() {
                check($crate::Suite::ProofMsms);
            }
        }
    };
}

/// MSM sizes: 0, 1, 2 and 2^k-1, 2^k, 2^k+1 around a small k and around the CPU
/// backend's chunk size.
const MSM_SIZES: [usize; 9] = [0, 1, 2, 15, 16, 17, 2047, 2048, 2049];
/// Sizes at which each non-random input class is checked.
const MSM_CLASS_SIZES: [usize; 3] = [1, 17, 2049];
/// NTT sizes that must work.
const NTT_SIZES: [usize; 6] = [1, 2, 4, 16, 1024, 4096];
/// NTT sizes that must be refused.
const NTT_BAD_SIZES: [usize; 4] = [0, 3, 1023, 1025];
/// NTT directions, with the names the report shows.
const DIRECTIONS: [(NttDirection, &str); 4] = [
    (NttDirection::Forward, "forward"),
    (NttDirection::Inverse, "inverse"),
    (NttDirection::CosetForward, "coset-forward"),
    (NttDirection::CosetInverse, "coset-inverse"),
];
/// Largest MSM checked against the naive sum; larger ones use bellperson's multiexp,
/// except those with identity bases, which it refuses.
const NAIVE_LIMIT: usize = 64;

struct Checker<'a> {
    backend: &'a dyn Backend,
    inputs: Inputs,
    results: Vec<CaseResult>,
}

impl Checker<'_> {
    fn record(&mut self, primitive: &str, input: &str, size: usize, millis: f64, failure: Option<String>) {
        self.results.push(CaseResult { primitive: primitive.into(), input: input.into(), size, failure, millis });
    }

    fn msm<G>(
        &mut self,
        name: &str,
        call: impl Fn(&dyn Backend, &[G], &[bellhop_plugin_sdk::types::Fr]) -> Result<G::Curve, PluginError>,
        keep: impl Fn(&dyn Backend, &[&[G]]) -> Result<(), PluginError>,
    ) where
        G: PrimeCurveAffine<Scalar = Scalar> + Send + Sync,
        G::Curve: fmt::Debug,
    {
        let max = MSM_SIZES.iter().max().copied().unwrap_or(0);
        let random_bases: Vec<G> = self.inputs.bases(BaseClass::Random, max);
        let mut cases: Vec<(ScalarClass, BaseClass, usize)> =
            MSM_SIZES.iter().map(|&n| (ScalarClass::Random, BaseClass::Random, n)).collect();
        for &n in &MSM_CLASS_SIZES {
            for class in [ScalarClass::Zero, ScalarClass::One, ScalarClass::NearModulus] {
                cases.push((class, BaseClass::Random, n));
            }
            cases.push((ScalarClass::Random, BaseClass::WithIdentities, n));
            cases.push((ScalarClass::Random, BaseClass::Repeated, n.max(2)));
        }
        for (scalar_class, base_class, n) in cases {
            let scalars = self.inputs.scalars(scalar_class, n);
            let bases: Vec<G> = match base_class {
                BaseClass::Random => random_bases[..n].to_vec(),
                other => self.inputs.bases(other, n),
            };
            let input = format!("{}, {}", scalar_class.name(), base_class.name());
            self.check_msm(name, &input, &bases, &scalars, &call);
        }

        // Unequal lengths must be refused.
        let scalars = self.inputs.scalars(ScalarClass::Random, 3);
        let result = call(self.backend, &random_bases[..2], cast_slice(&scalars));
        self.record(name, "2 bases, 3 scalars (refuse)", 2, 0.0, expect_invalid_input(result.map(|_| ())));

        self.kept_bases(name, random_bases, &call, &keep);
    }

    /// Records whether `call` gives the reference MSM of `bases` and `scalars`: the naive
    /// sum for small sizes and for bases with the identity (bellperson's multiexp refuses
    /// those: "an identity element in the CRS"), else bellperson's multiexp.
    fn check_msm<G>(
        &mut self,
        name: &str,
        input: &str,
        bases: &[G],
        scalars: &[Scalar],
        call: &impl Fn(&dyn Backend, &[G], &[bellhop_plugin_sdk::types::Fr]) -> Result<G::Curve, PluginError>,
    ) where
        G: PrimeCurveAffine<Scalar = Scalar> + Send + Sync,
        G::Curve: fmt::Debug,
    {
        let expected = if bases.len() <= NAIVE_LIMIT || bases.iter().any(|b| bool::from(b.is_identity())) {
            reference::naive_msm(bases, scalars)
        } else {
            reference::bellperson_msm(bases, scalars)
        };
        let start = Instant::now();
        let got = call(self.backend, bases, cast_slice(scalars));
        let millis = start.elapsed().as_secs_f64() * 1e3;
        let failure = match got {
            Ok(got) if got == expected => None,
            Ok(got) => Some(format!("got {got:?}, expected {expected:?}")),
            Err(e) => Some(format!("returned an error: {e}")),
        };
        self.record(name, input, bases.len(), millis, failure);
    }

    /// Kept bases (ABI 1.1): two slices of one size kept in one call, as the host keeps a
    /// parameter file's queries; MSMs over each and over a prefix of the first match the
    /// reference, and after `release_bases` changed contents are used, not a stale copy.
    fn kept_bases<G>(
        &mut self,
        name: &str,
        mut bases: Vec<G>,
        call: &impl Fn(&dyn Backend, &[G], &[bellhop_plugin_sdk::types::Fr]) -> Result<G::Curve, PluginError>,
        keep: &impl Fn(&dyn Backend, &[&[G]]) -> Result<(), PluginError>,
    ) where
        G: PrimeCurveAffine<Scalar = Scalar> + Send + Sync,
        G::Curve: fmt::Debug,
    {
        let check = |checker: &mut Self, bases: &[G], input: &str| {
            let scalars = checker.inputs.scalars(ScalarClass::Random, bases.len());
            checker.check_msm(name, input, bases, &scalars, call);
        };
        let second: Vec<G> = bases.iter().rev().copied().collect();
        if let Err(e) = keep(self.backend, &[&bases, &second]) {
            self.record(name, "keep_bases", bases.len(), 0.0, Some(format!("returned an error: {e}")));
            return;
        }
        check(self, &bases, "random, kept bases");
        check(self, &second, "random, second kept slice");
        check(self, &bases[..17], "random, prefix of kept bases");
        let released = self.backend.release_bases().err().map(|e| format!("release_bases returned an error: {e}"));
        self.record(name, "release_bases", bases.len(), 0.0, released);
        bases.reverse();
        check(self, &bases, "random, changed after release");
    }

    fn ntt(&mut self) {
        for (direction, dir_name) in DIRECTIONS {
            let primitive = format!("ntt {dir_name}");
            for n in NTT_SIZES {
                for class in [ScalarClass::Random, ScalarClass::Zero, ScalarClass::One, ScalarClass::NearModulus] {
                    if class != ScalarClass::Random && n != 1024 {
                        continue;
                    }
                    let input = self.inputs.scalars(class, n);
                    let expected = reference::bellperson_ntt(&input, direction);
                    let mut got = input.clone();
                    let start = Instant::now();
                    let result = self.backend.ntt(cast_slice_mut(&mut got), direction);
                    let millis = start.elapsed().as_secs_f64() * 1e3;
                    let failure = match result {
                        Ok(()) => first_divergence(&got, &expected),
                        Err(e) => Some(format!("returned an error: {e}")),
                    };
                    self.record(&primitive, class.name(), n, millis, failure);
                }
            }
            for n in NTT_BAD_SIZES {
                let mut values = self.inputs.scalars(ScalarClass::Random, n);
                let result = self.backend.ntt(cast_slice_mut(&mut values), direction);
                self.record(&primitive, "not a power of two (refuse)", n, 0.0, expect_invalid_input(result));
            }
        }
    }

    fn compute_h(&mut self) {
        // One constraint: there is no h to compare, the call must only succeed.
        let [mut a, mut b, mut c] = [(); 3].map(|()| self.inputs.scalars(ScalarClass::Random, 1));
        let result = self.backend.compute_h(cast_slice_mut(&mut a), cast_slice_mut(&mut b), cast_slice_mut(&mut c));
        self.record("compute_h", "size 1 (h is empty; accepted)", 1, 0.0, result.err().map(|e| format!("{e}")));
        for log_n in [1u32, 2, 10, 12] {
            let n = 1usize << log_n;
            let (a, b, c) = (
                self.inputs.scalars(ScalarClass::Random, n),
                self.inputs.scalars(ScalarClass::Random, n),
                self.inputs.scalars(ScalarClass::Random, n),
            );
            let expected = reference::bellperson_h(&a, &b, &c);
            let (mut ga, mut gb, mut gc) = (a.clone(), b.clone(), c.clone());
            let start = Instant::now();
            let result =
                self.backend.compute_h(cast_slice_mut(&mut ga), cast_slice_mut(&mut gb), cast_slice_mut(&mut gc));
            let millis = start.elapsed().as_secs_f64() * 1e3;
            let failure = match result {
                Ok(_) => first_divergence(&ga[..n - 1], &expected),
                Err(e) => Some(format!("returned an error: {e}")),
            };
            self.record("compute_h", "random a, b, c", n, millis, failure);
        }
        for (lengths, input) in [([8, 8, 4], "lengths 8, 8, 4 (refuse)"), ([12, 12, 12], "not a power of two (refuse)")]
        {
            let [mut a, mut b, mut c] = lengths.map(|n| self.inputs.scalars(ScalarClass::Random, n));
            let result = self.backend.compute_h(cast_slice_mut(&mut a), cast_slice_mut(&mut b), cast_slice_mut(&mut c));
            self.record("compute_h", input, lengths[0], 0.0, expect_invalid_input(result.map(|_| ())));
        }
    }

    /// `proof_msms` against the references on each of [`PROOF_SHAPES`], then once more
    /// with the bases kept. A backend that does not offer it must say so
    /// ([`ErrorKind::UNSUPPORTED`]); bases fewer than the scalars must be refused.
    fn proof_msms(&mut self) {
        const NAME: &str = "proof_msms";
        let cases: Vec<ProofCase> = PROOF_SHAPES.iter().map(|&shape| ProofCase::new(&mut self.inputs, shape)).collect();
        let describe = |case: &ProofCase, kept: bool| {
            let x = &case.assignment;
            let kept = if kept { ", kept bases" } else { "" };
            format!("{} inputs, {} aux, {}/{} marked{kept}", x.inputs.len(), x.aux.len(), case.a.len(), case.b_g1.len())
        };
        let check = |checker: &mut Self, case: &ProofCase, kept: bool| -> bool {
            let start = Instant::now();
            let got = checker.backend.proof_msms(case.bases(), &case.assignment);
            let millis = start.elapsed().as_secs_f64() * 1e3;
            let failure = match got {
                Err(e) if e.kind == ErrorKind::UNSUPPORTED => {
                    checker.record(NAME, "not offered (unsupported)", 0, 0.0, None);
                    return false;
                }
                Err(e) => Some(format!("returned an error: {e}")),
                Ok(got) => {
                    let (h, l, a, b_g1, b_g2) = case.expected();
                    let got_g1: [G1Projective; 4] = [got.h, got.l, got.a, got.b_g1].map(cast);
                    let wrong: Vec<&str> = ["h", "l", "a", "b_g1"]
                        .into_iter()
                        .zip(got_g1.iter().zip([h, l, a, b_g1]))
                        .filter(|(_, (g, e))| *g != e)
                        .map(|(name, _)| name)
                        .chain((cast::<_, G2Projective>(got.b_g2) != b_g2).then_some("b_g2"))
                        .collect();
                    (!wrong.is_empty()).then(|| format!("the MSM of {} differs from the reference", wrong.join(", ")))
                }
            };
            checker.record(NAME, &describe(case, kept), case.assignment.a.len(), millis, failure);
            true
        };
        for case in &cases {
            if !check(self, case, false) {
                return;
            }
        }
        let last = cases.last().expect("shapes are listed");
        let kept = self.backend.keep_bases(
            &[cast_slice(&last.h), cast_slice(&last.l), cast_slice(&last.a), cast_slice(&last.b_g1)],
            &[cast_slice(&last.b_g2)],
        );
        match kept {
            Ok(()) => {
                check(self, last, true);
                let released =
                    self.backend.release_bases().err().map(|e| format!("release_bases returned an error: {e}"));
                self.record(NAME, "release_bases", 0, 0.0, released);
            }
            Err(e) => self.record(NAME, "keep_bases", 0, 0.0, Some(format!("returned an error: {e}"))),
        }
        let short = ProvingBases { h: cast_slice(&last.h[1..]).into(), ..last.bases() };
        let result = self.backend.proof_msms(short, &last.assignment).map(drop);
        self.record(NAME, "one h base short (refuse)", last.assignment.a.len(), 0.0, expect_invalid_input(result));
        self.kept_host_memory();
    }

    /// `proof_msms` from host memory the backend keeps (`keep_host_memory`), as the host
    /// reuses it: a proof, other values written into the same buffers and proved,
    /// then released and proved again. A backend that keeps nothing passes.
    fn kept_host_memory(&mut self) {
        const NAME: &str = "proof_msms";
        let shape = PROOF_SHAPES[6];
        let (mut case, next) = (ProofCase::new(&mut self.inputs, shape), ProofCase::new(&mut self.inputs, shape));
        let x = &case.assignment;
        let ranges = [x.a.as_slice(), &x.b, &x.c, &x.aux];
        match self.backend.keep_host_memory(&ranges) {
            Ok(true) => {}
            Ok(false) => return self.record(NAME, "keep_host_memory (keeps none)", 0, 0.0, None),
            Err(e) => return self.record(NAME, "keep_host_memory", 0, 0.0, Some(format!("returned an error: {e}"))),
        }
        let check = |checker: &mut Self, case: &ProofCase, what: &str| {
            let got = checker.backend.proof_msms(case.bases(), &case.assignment);
            let failure = match got {
                Err(e) => Some(format!("returned an error: {e}")),
                Ok(got) => {
                    let (h, l, a, b_g1, b_g2) = case.expected();
                    let right = [got.h, got.l, got.a, got.b_g1].map(cast::<_, G1Projective>) == [h, l, a, b_g1]
                        && cast::<_, G2Projective>(got.b_g2) == b_g2;
                    (!right).then(|| "differs from the reference".to_string())
                }
            };
            checker.record(NAME, what, case.assignment.a.len(), 0.0, failure);
        };
        check(self, &case, "kept host memory");
        let (to, from) = (&mut case.assignment, &next.assignment);
        for (to, from) in [(&mut to.a, &from.a), (&mut to.b, &from.b), (&mut to.c, &from.c), (&mut to.aux, &from.aux)] {
            to.copy_from_slice(from);
        }
        // The same circuit's densities, as in a reused assignment; new values.
        to.inputs.clone_from(&from.inputs);
        check(self, &case, "kept host memory, rewritten");
        let x = &case.assignment;
        let released = self.backend.release_host_memory(&[x.a.as_slice(), &x.b, &x.c, &x.aux]);
        let failure = released.err().map(|e| format!("release_host_memory returned an error: {e}"));
        self.record(NAME, "release_host_memory", 0, 0.0, failure);
        check(self, &case, "host memory released");
    }
}

/// `proof_msms` shapes: constraints, inputs, aux variables and which of them the densities
/// mark (none, all, or drawn at random), around one constraint, word edges (64) and
/// powers of two.
const PROOF_SHAPES: [(usize, usize, usize, DensityClass); 8] = [
    (1, 1, 0, DensityClass::All),
    (2, 1, 1, DensityClass::All),
    (3, 2, 5, DensityClass::None),
    (16, 2, 63, DensityClass::All),
    (17, 3, 64, DensityClass::Random),
    (100, 65, 65, DensityClass::Random),
    (255, 2, 300, DensityClass::Random),
    (300, 1, 129, DensityClass::All),
];

/// Which variables a generated assignment's densities mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DensityClass {
    None,
    All,
    Random,
}

/// A proof's assignment and bases for the `proof_msms` checks, and the reference MSMs.
struct ProofCase {
    assignment: Assignment,
    h: Vec<G1Affine>,
    l: Vec<G1Affine>,
    a: Vec<G1Affine>,
    b_g1: Vec<G1Affine>,
    b_g2: Vec<G2Affine>,
}

impl ProofCase {
    fn new(inputs: &mut Inputs, (constraints, n_inputs, n_aux, class): (usize, usize, usize, DensityClass)) -> Self {
        let mut scalars =
            |n| cast_slice::<Scalar, bellhop_plugin_sdk::types::Fr>(&inputs.scalars(ScalarClass::Random, n)).to_vec();
        let (a, b, c, mut input_values, aux) =
            (scalars(constraints), scalars(constraints), scalars(constraints), scalars(n_inputs), scalars(n_aux));
        input_values[0] = cast(Scalar::ONE);
        let mut density = |n: usize| {
            let bits: Vec<bool> = match class {
                DensityClass::None => vec![false; n],
                DensityClass::All => vec![true; n],
                DensityClass::Random => {
                    inputs.scalars(ScalarClass::Random, n).iter().map(|s| s.to_bytes_le()[0] & 1 == 1).collect()
                }
            };
            Density::from_bits(bits)
        };
        let (a_aux_density, b_input_density, b_aux_density) = (density(n_aux), density(n_inputs), density(n_aux));
        let domain = constraints.next_power_of_two();
        let b_count = b_input_density.count() + b_aux_density.count();
        let mut g1 = |n| inputs.bases::<G1Affine>(BaseClass::Random, n);
        let (h, l, a_bases, b_g1) = (g1(domain - 1), g1(n_aux), g1(n_inputs + a_aux_density.count()), g1(b_count));
        let b_g2 = inputs.bases::<G2Affine>(BaseClass::Random, b_count);
        let assignment = Assignment {
            a: a.into(),
            b: b.into(),
            c: c.into(),
            inputs: input_values.into(),
            aux: aux.into(),
            a_aux_density,
            b_input_density,
            b_aux_density,
        };
        Self { assignment, h, l, a: a_bases, b_g1, b_g2 }
    }

    fn bases(&self) -> ProvingBases<'_> {
        ProvingBases {
            h: cast_slice(&self.h).into(),
            l: cast_slice(&self.l).into(),
            a: cast_slice(&self.a).into(),
            b_g1: cast_slice(&self.b_g1).into(),
            b_g2: cast_slice(&self.b_g2).into(),
        }
    }

    /// h by bellperson's FFT, and each MSM by the references of [`Checker::check_msm`],
    /// over scalars selected one at a time.
    fn expected(&self) -> (G1Projective, G1Projective, G1Projective, G1Projective, G2Projective) {
        fn msm<G: PrimeCurveAffine<Scalar = Scalar> + Send + Sync>(bases: &[G], scalars: &[Scalar]) -> G::Curve {
            if bases.len() <= NAIVE_LIMIT {
                reference::naive_msm(bases, scalars)
            } else {
                reference::bellperson_msm(bases, scalars)
            }
        }
        let x = &self.assignment;
        let values = |v: &[bellhop_plugin_sdk::types::Fr]| cast_slice::<_, Scalar>(v).to_vec();
        let domain = x.a.len().next_power_of_two();
        let padded = |v: &[bellhop_plugin_sdk::types::Fr]| {
            let mut v = values(v);
            v.resize(domain, Scalar::ZERO);
            v
        };
        let h =
            if domain == 1 { Vec::new() } else { reference::bellperson_h(&padded(&x.a), &padded(&x.b), &padded(&x.c)) };
        let (inputs, aux) = (values(&x.inputs), values(&x.aux));
        let marked = |values: &[Scalar], density: &Density| -> Vec<Scalar> {
            values.iter().enumerate().filter(|(i, _)| density.get(*i)).map(|(_, v)| *v).collect()
        };
        let a_scalars: Vec<Scalar> = inputs.iter().copied().chain(marked(&aux, &x.a_aux_density)).collect();
        let b_scalars: Vec<Scalar> =
            marked(&inputs, &x.b_input_density).into_iter().chain(marked(&aux, &x.b_aux_density)).collect();
        (
            msm(&self.h[..h.len()], &h),
            msm(&self.l, &aux),
            msm(&self.a, &a_scalars),
            msm(&self.b_g1, &b_scalars),
            msm(&self.b_g2, &b_scalars),
        )
    }
}

/// `None` if equal, else where and how they first differ.
fn first_divergence(got: &[Scalar], expected: &[Scalar]) -> Option<String> {
    if got.len() != expected.len() {
        return Some(format!("length {} instead of {}", got.len(), expected.len()));
    }
    got.iter().zip(expected).position(|(g, e)| g != e).map(|i| {
        let count = got.iter().zip(expected).filter(|(g, e)| g != e).count();
        format!("index {i} of {} ({count} differ): got {:?}, expected {:?}", got.len(), got[i], expected[i])
    })
}

fn expect_invalid_input(result: Result<(), PluginError>) -> Option<String> {
    match result {
        Err(e) if e.kind == ErrorKind::INVALID_INPUT => None,
        Err(e) => Some(format!("refused, but as `{}` instead of invalid input: {e}", e.kind.name())),
        Ok(()) => Some("accepted input it must refuse".into()),
    }
}
