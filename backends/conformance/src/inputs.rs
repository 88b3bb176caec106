//! Input classes for the checks, all drawn from one seeded generator.

use blstrs::Scalar;
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_chacha::ChaCha8Rng;

/// Which scalars to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarClass {
    Random,
    Zero,
    One,
    /// `r - 1, r - 2, ...`: the largest canonical values.
    NearModulus,
}

impl ScalarClass {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Random => "random",
            Self::Zero => "all-zero",
            Self::One => "all-one",
            Self::NearModulus => "near the modulus",
        }
    }
}

/// Which bases to draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BaseClass {
    Random,
    /// Random, with every third one the point at infinity.
    WithIdentities,
    /// One random point, repeated.
    Repeated,
}

impl BaseClass {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Random => "random bases",
            Self::WithIdentities => "identity bases mixed in",
            Self::Repeated => "one base repeated",
        }
    }
}

pub(crate) struct Inputs(ChaCha8Rng);

impl Inputs {
    pub(crate) fn new(rng: ChaCha8Rng) -> Self {
        Self(rng)
    }

    pub(crate) fn scalars(&mut self, class: ScalarClass, n: usize) -> Vec<Scalar> {
        match class {
            ScalarClass::Random => (0..n).map(|_| Scalar::random(&mut self.0)).collect(),
            ScalarClass::Zero => vec![Scalar::ZERO; n],
            ScalarClass::One => vec![Scalar::ONE; n],
            ScalarClass::NearModulus => (1..=n as u64).map(|k| -Scalar::from(k)).collect(),
        }
    }

    pub(crate) fn bases<G: PrimeCurveAffine<Scalar = Scalar>>(&mut self, class: BaseClass, n: usize) -> Vec<G> {
        let random = |rng: &mut ChaCha8Rng| G::generator() * Scalar::random(rng);
        let points: Vec<G::Curve> = match class {
            BaseClass::Random => (0..n).map(|_| random(&mut self.0)).collect(),
            BaseClass::WithIdentities => {
                (0..n).map(|i| if i % 3 == 0 { G::Curve::identity() } else { random(&mut self.0) }).collect()
            }
            BaseClass::Repeated => vec![random(&mut self.0); n],
        };
        let mut affine = vec![G::identity(); n];
        G::Curve::batch_normalize(&points, &mut affine);
        affine
    }
}
