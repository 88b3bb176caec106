//! Inputs for the benchmarks, made quickly and deterministically.

use blstrs::Scalar;
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `n` random scalars from `seed`.
pub fn scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

/// `n` distinct pseudo-random points: a walk that adds one of 16 random steps at a time
/// (one addition per point instead of a scalar multiplication), then normalised in a batch.
pub fn bases<G: PrimeCurveAffine<Scalar = Scalar>>(n: usize, seed: u64) -> Vec<G> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let steps: Vec<G::Curve> = (0..16).map(|_| G::generator() * Scalar::random(&mut rng)).collect();
    let mut point = G::generator() * Scalar::random(&mut rng);
    let walk: Vec<G::Curve> = (0..n)
        .map(|_| {
            point += steps[rng.gen_range(0..steps.len())];
            point
        })
        .collect();
    let mut affine = vec![G::identity(); n];
    G::Curve::batch_normalize(&walk, &mut affine);
    affine
}
