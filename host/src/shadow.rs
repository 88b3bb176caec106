//! `[backend] shadow`: a backend run in lockstep with a reference one. Every call a proof
//! makes runs on both (the backend's own `proof_msms` against the reference's primitives),
//! and the first whose answers differ fails with where: the call, the sizes and the first
//! index that differs. What a backend author needs once the synthetic conformance suites
//! pass and a real circuit still fails.

use bellhop_plugin_sdk::{
    backend::{proof_msms_from_primitives, Backend, NttDirection, ProofMsms, ProvingBases},
    cast,
    strategy::Assignment,
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

    /// The primary's call against the reference's primitives; where they differ, the
    /// primitives run in lockstep ([`proof_msms_from_primitives`] over both) say which
    /// primitive and index, or that every primitive agrees and the call itself is wrong.
    fn proof_msms(&self, bases: ProvingBases<'_>, assignment: &Assignment) -> Result<ProofMsms, PluginError> {
        let answer = self.primary.proof_msms(bases, assignment)?;
        let expected = proof_msms_from_primitives(self.shadow.as_ref(), bases, assignment)?;
        let g1 = |got: G1Projective, want: G1Projective| {
            cast::<_, blstrs::G1Projective>(got) != cast::<_, blstrs::G1Projective>(want)
        };
        let differs = [
            ("msm_h", g1(answer.h, expected.h)),
            ("msm_l", g1(answer.l, expected.l)),
            ("msm_a", g1(answer.a, expected.a)),
            ("msm_b_g1", g1(answer.b_g1, expected.b_g1)),
            (
                "msm_b_g2",
                cast::<_, blstrs::G2Projective>(answer.b_g2) != cast::<_, blstrs::G2Projective>(expected.b_g2),
            ),
        ];
        let Some((part, _)) = differs.iter().find(|(_, differs)| *differs) else { return Ok(answer) };
        let through = match proof_msms_from_primitives(self, bases, assignment) {
            Err(e) => format!("through the primitives: {}", e.message),
            Ok(_) => "every primitive agrees, so the call itself combines them wrongly".into(),
        };
        Err(self.diverged(format!("proof_msms's {part} differs ({through})")))
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

    /// The CPU backend with a `proof_msms` of its own that doubles `l`.
    struct WrongCall {
        cpu: CpuBackend,
    }

    impl Backend for WrongCall {
        bellhop_plugin_sdk::forward_primitives!(cpu);

        fn proof_msms(&self, bases: ProvingBases<'_>, x: &Assignment) -> Result<ProofMsms, PluginError> {
            let mut msms = proof_msms_from_primitives(&self.cpu, bases, x)?;
            msms.l = cast(cast::<_, blstrs::G1Projective>(msms.l).double());
            Ok(msms)
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

    /// The fused call is checked too: against the reference's primitives, and where it
    /// differs, the primitives in lockstep say whether one of them or the call is wrong.
    #[test]
    fn proof_msms_is_checked_and_the_wrong_part_named() {
        use bellhop_plugin_sdk::strategy::Density;
        let g1 = |i: u64| (blstrs::G1Affine::generator() * Scalar::from(i)).to_affine();
        let g2 = |i: u64| (blstrs::G2Affine::generator() * Scalar::from(i)).to_affine();
        let fr = |n: u64| -> Vec<Fr> { (1..=n).map(|i| cast(Scalar::from(i * 7))).collect() };
        let x = Assignment {
            a: fr(12).into(),
            b: fr(12).into(),
            c: fr(12).into(),
            inputs: [vec![cast(Scalar::ONE)], fr(1)].concat().into(),
            aux: fr(10).into(),
            a_aux_density: Density::from_bits((0..10).map(|i| i % 3 != 0)),
            b_input_density: Density::from_bits([true, false]),
            b_aux_density: Density::from_bits((0..10).map(|i| i % 2 == 0)),
        };
        let points: Vec<blstrs::G1Affine> = (1..=20).map(g1).collect();
        let points2: Vec<blstrs::G2Affine> = (1..=20).map(g2).collect();
        let bases = ProvingBases {
            h: cast_slice(&points[..15]).into(),
            l: cast_slice(&points[..10]).into(),
            a: cast_slice(&points[..12]).into(),
            b_g1: cast_slice(&points[..12]).into(),
            b_g2: cast_slice(&points2[..12]).into(),
        };
        let reference = || Box::new(CpuBackend::new(1).unwrap());
        let honest = Shadowed::new(reference(), reference(), "cpu");
        assert!(honest.proof_msms(bases, &x).is_ok());

        let wrong_call = Shadowed::new(Box::new(WrongCall { cpu: CpuBackend::new(1).unwrap() }), reference(), "cpu");
        let e = wrong_call.proof_msms(bases, &x).unwrap_err();
        assert!(e.message.contains("proof_msms's msm_l differs (every primitive agrees"), "{e}");

        let e = shadowed().proof_msms(bases, &x).unwrap_err();
        assert!(
            e.message.contains("proof_msms's msm_h differs (through the primitives: h: compute_h of length 16"),
            "{e}"
        );
    }
}
