//! Independent references: naive sums, and bellperson 0.27's own CPU multiexp and FFT.

use std::sync::Arc;

use bellperson::domain::EvaluationDomain;
use blstrs::Scalar;
use ec_gpu_gen::{
    multiexp_cpu::{multiexp_cpu, FullDensity},
    threadpool::Worker,
};
use ff::PrimeField;
use group::{prime::PrimeCurveAffine, Group};

use bellhop_plugin_sdk::backend::NttDirection;

/// `sum_i scalars[i] * bases[i]`, one scalar multiplication at a time.
pub fn naive_msm<G: PrimeCurveAffine<Scalar = Scalar>>(bases: &[G], scalars: &[Scalar]) -> G::Curve {
    bases.iter().zip(scalars).fold(G::Curve::identity(), |acc, (b, s)| acc + *b * *s)
}

/// bellperson's CPU multiexp (ec-gpu-gen's `multiexp_cpu`, which bellperson 0.27 calls).
pub fn bellperson_msm<G>(bases: &[G], scalars: &[Scalar]) -> G::Curve
where
    G: PrimeCurveAffine<Scalar = Scalar>,
{
    let exponents = Arc::new(scalars.iter().map(|s| s.to_repr()).collect::<Vec<_>>());
    multiexp_cpu::<FullDensity, _, G, _>(&Worker::new(), (Arc::new(bases.to_vec()), 0), FullDensity, exponents)
        .wait()
        .expect("bellperson's multiexp fails only on bad lengths")
}

/// bellperson's `EvaluationDomain` applying `direction` to `values` (a power-of-two length).
pub fn bellperson_ntt(values: &[Scalar], direction: NttDirection) -> Vec<Scalar> {
    let worker = Worker::new();
    let mut domain = EvaluationDomain::from_coeffs(values.to_vec()).expect("a supported size");
    let kernel = &mut None;
    match direction {
        NttDirection::Forward => domain.fft(&worker, kernel),
        NttDirection::Inverse => domain.ifft(&worker, kernel),
        NttDirection::CosetForward => domain.coset_fft(&worker, kernel),
        NttDirection::CosetInverse => domain.icoset_fft(&worker, kernel),
    }
    .expect("the CPU FFT does not fail");
    domain.into_coeffs()
}

/// bellperson's computation of h in its Groth16 prover: the `n - 1` coefficients.
pub fn bellperson_h(a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Vec<Scalar> {
    let worker = Worker::new();
    let kernel = &mut None;
    let domain = |v: &[Scalar]| EvaluationDomain::from_coeffs(v.to_vec()).expect("a supported size");
    let (mut a, mut b, mut c) = (domain(a), domain(b), domain(c));
    for d in [&mut a, &mut b, &mut c] {
        d.ifft(&worker, kernel).expect("cpu");
        d.coset_fft(&worker, kernel).expect("cpu");
    }
    a.mul_assign(&worker, &b);
    a.sub_assign(&worker, &c);
    a.divide_by_z_on_coset(&worker);
    a.icoset_fft(&worker, kernel).expect("cpu");
    let mut h = a.into_coeffs();
    h.truncate(h.len() - 1);
    h
}
