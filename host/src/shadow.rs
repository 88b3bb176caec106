//! `[backend] shadow`: a backend run in lockstep with a reference one. Every primitive runs
//! on both, and the first call whose answers differ fails with where: the primitive, the
//! sizes and the first index that differs (the prover adds the phase). What a backend
//! author needs once the synthetic conformance suites pass and a real circuit still fails.

use bellhop_plugin_sdk::{
    backend::{Backend, NttDirection},
    cast,
    types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective},
    DeviceMemory, ErrorKind, PhaseTiming, PluginError,
};
use blstrs::Scalar;

/// `primary`, checked call by call against `shadow`.
pub struct Shadowed {
    primary: Box<dyn Backend>,
    shadow: Box<dyn Backend>,
    /// The shadow's name, for messages.
    shadow_name: String,
}

impl Shadowed {
    /// `primary` with every call also run on `shadow`, called `shadow_name` in messages.
    pub fn new(primary: Box<dyn Backend>, shadow: Box<dyn Backend>, shadow_name: impl Into<String>) -> Self {
        Self { primary, shadow, shadow_name: shadow_name.into() }
    }

    fn diverged(&self, what: String) -> PluginError {
        PluginError::new(ErrorKind::INTERNAL, format!("{what}, against the shadow backend {}", self.shadow_name))
    }

    /// One MSM on both, compared as group elements; on a difference, bisects for the
    /// shortest prefix of terms whose sums differ. Returns the primary's answer.
    fn msm<B, P: PartialEq>(
        &self,
        call: &str,
        bases: &[B],
        scalars: &[Fr],
        msm: impl Fn(&dyn Backend, &[B], &[Fr]) -> Result<P, PluginError>,
    ) -> Result<P, PluginError> {
        let answer = msm(self.primary.as_ref(), bases, scalars)?;
        if answer == msm(self.shadow.as_ref(), bases, scalars)? {
            return Ok(answer);
        }
        let differs = |k: usize| -> Result<bool, PluginError> {
            Ok(msm(self.primary.as_ref(), &bases[..k], &scalars[..k])?
                != msm(self.shadow.as_ref(), &bases[..k], &scalars[..k])?)
        };
        let (mut agree, mut differ) = (0, bases.len());
        while differ - agree > 1 {
            let middle = agree + (differ - agree) / 2;
            if differs(middle)? {
                differ = middle;
            } else {
                agree = middle;
            }
        }
        Err(self.diverged(format!(
            "{call} of {} terms differs; the sums first differ over the first {differ} terms (index {})",
            bases.len(),
            differ - 1
        )))
    }

    /// The first index at which `got` and `expected` differ as field elements.
    fn first_difference(got: &[Fr], expected: &[Fr]) -> Option<usize> {
        got.iter().zip(expected).position(|(g, e)| cast::<Fr, Scalar>(*g) != cast::<Fr, Scalar>(*e))
    }
}

impl Backend for Shadowed {
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
        let sum = |b: &dyn Backend, bases: &[G1Affine], scalars: &[Fr]| {
            b.msm_g1(bases, scalars).map(cast::<G1Projective, blstrs::G1Projective>)
        };
        self.msm("msm_g1", bases, scalars, sum).map(cast)
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
        let sum = |b: &dyn Backend, bases: &[G2Affine], scalars: &[Fr]| {
            b.msm_g2(bases, scalars).map(cast::<G2Projective, blstrs::G2Projective>)
        };
        self.msm("msm_g2", bases, scalars, sum).map(cast)
    }

    fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
        let mut expected = values.to_vec();
        self.shadow.ntt(&mut expected, direction)?;
        self.primary.ntt(values, direction)?;
        match Self::first_difference(values, &expected) {
            None => Ok(()),
            Some(i) => {
                Err(self.diverged(format!("ntt {direction:?} of length {} differs first at index {i}", values.len())))
            }
        }
    }

    fn compute_h(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr]) -> Result<Vec<PhaseTiming>, PluginError> {
        let mut expected = a.to_vec();
        self.shadow.compute_h(&mut expected, &mut b.to_vec(), &mut c.to_vec())?;
        let timings = self.primary.compute_h(a, b, c)?;
        // The contract covers h's n - 1 coefficients; the last element is scratch.
        let n = a.len().saturating_sub(1);
        match Self::first_difference(&a[..n], &expected[..n]) {
            None => Ok(timings),
            Some(i) => {
                Err(self.diverged(format!("compute_h of length {} differs first at coefficient {i} of h", a.len())))
            }
        }
    }

    fn keep_bases(&self, g1: &[&[G1Affine]], g2: &[&[G2Affine]]) -> Result<(), PluginError> {
        self.primary.keep_bases(g1, g2)?;
        self.shadow.keep_bases(g1, g2)
    }

    fn release_bases(&self) -> Result<(), PluginError> {
        self.primary.release_bases()?;
        self.shadow.release_bases()
    }

    fn memory(&self) -> Result<DeviceMemory, PluginError> {
        self.primary.memory()
    }
}

#[cfg(test)]
mod tests {
    use bellhop_cpu::CpuBackend;
    use bellhop_plugin_sdk::cast_slice;
    use ff::Field;
    use group::{prime::PrimeCurveAffine, Curve, Group};

    use super::*;

    /// The CPU backend with two bugs: its MSMs drop the term at index 7, its NTTs add one
    /// to the value at index 5.
    struct Buggy(CpuBackend);

    impl Backend for Buggy {
        fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
            let mut scalars = scalars.to_vec();
            if let Some(s) = scalars.get_mut(7) {
                *s = Fr::default();
            }
            self.0.msm_g1(bases, &scalars)
        }

        fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
            self.0.msm_g2(bases, scalars)
        }

        fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
            self.0.ntt(values, direction)?;
            if let Some(v) = values.get_mut(5) {
                *v = cast(cast::<Fr, Scalar>(*v) + Scalar::ONE);
            }
            Ok(())
        }
    }

    fn shadowed() -> Shadowed {
        Shadowed::new(Box::new(Buggy(CpuBackend::new(1).unwrap())), Box::new(CpuBackend::new(1).unwrap()), "cpu")
    }

    #[test]
    fn the_first_divergence_is_named_by_its_index() {
        let bases: Vec<blstrs::G1Affine> =
            (1..=40u64).map(|i| (blstrs::G1Affine::generator() * Scalar::from(i)).to_affine()).collect();
        let scalars: Vec<Fr> = (1..=40u64).map(|i| cast(Scalar::from(i * 3))).collect();
        let e = shadowed().msm_g1(cast_slice(&bases), &scalars).unwrap_err();
        assert_eq!(e.kind, ErrorKind::INTERNAL);
        assert!(e.message.contains("msm_g1 of 40 terms differs"), "{e}");
        assert!(e.message.contains("first 8 terms (index 7), against the shadow backend cpu"), "{e}");
        // Below the buggy index the two agree, and the primary's answer comes back.
        let sum = shadowed().msm_g1(cast_slice(&bases[..7]), &scalars[..7]).unwrap();
        let expected: blstrs::G1Projective =
            (1..=7u64).map(|i| blstrs::G1Projective::generator() * Scalar::from(i * i * 3)).sum();
        assert_eq!(cast::<G1Projective, blstrs::G1Projective>(sum), expected);

        let mut values: Vec<Fr> = (0..16u64).map(|i| cast(Scalar::from(i))).collect();
        let e = shadowed().ntt(&mut values, NttDirection::CosetForward).unwrap_err();
        assert!(e.message.contains("ntt CosetForward of length 16 differs first at index 5"), "{e}");
        assert!(shadowed().ntt(&mut values[..4], NttDirection::Inverse).is_ok(), "length 4 has no index 5");
    }
}
