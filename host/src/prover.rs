//! The Groth16 prover core: one proof from an assignment, over any backend's primitives.

use bellhop_circuits::CircuitSpec;
use bellhop_plugin_sdk::{
    backend::{Backend, ProvingBases},
    cast, cast_slice,
    strategy::{Assignment, Density, Job},
    types::Fr,
    ErrorKind, PluginError,
};
use bellperson::groth16::{verify_proof, Proof};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use ff::Field as _;
use group::{prime::PrimeCurveAffine, Curve};
use rayon::prelude::*;
use tracing::info_span;

use crate::{
    params::{ParamsError, Srs},
    phases::record_subphase,
    recycler::Recycler,
};

/// Why a proof could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// The parameters do not fit the circuit.
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// The backend failed in a phase.
    #[error("the backend failed in phase {phase}: {error}")]
    Backend {
        /// The phase.
        phase: &'static str,
        /// The backend's error.
        error: PluginError,
    },
    /// The strategy's assignment is not of a shape any circuit has.
    #[error(
        "the assignment of {circuit} is malformed ({problem}): a bug in the synthesis strategy; \
         compare it with baseline (`bellhop ab --synthesis-only`)"
    )]
    Malformed {
        /// The circuit.
        circuit: String,
        /// What is wrong.
        problem: String,
    },
    /// The assignment is for other public inputs than the circuit's own.
    #[error(
        "the assignment of {circuit} is for other public inputs than the circuit's own ({detail}): a bug in the \
         synthesis strategy; compare it with baseline (`bellhop ab --synthesis-only`)"
    )]
    OtherStatement {
        /// The circuit.
        circuit: String,
        /// Where they differ, or why the circuit's own could not be computed.
        detail: String,
    },
    /// The backend returned a point outside the group it must be in.
    #[error("the backend returned a {group} point that is {problem} in phase {phase}: its result is wrong")]
    BadPoint {
        /// The phase.
        phase: &'static str,
        /// G1 or G2.
        group: &'static str,
        /// "not on the curve" or "not in the prime-order subgroup".
        problem: &'static str,
    },
    /// The parameters' delta is the identity: a subverted CRS.
    #[error("the parameters' delta is the point at infinity (a subverted CRS); regenerate them")]
    SubvertedParameters,
    /// The proof does not verify: the backend computed something wrong.
    #[error(
        "the proof of {circuit} does not verify: the backend returned wrong results; \
         run `bellhop conformance` on it, or prove on the cpu backend"
    )]
    Unverified {
        /// The circuit.
        circuit: String,
    },
    /// The verifier itself failed (malformed inputs).
    #[error("verification of {circuit} failed: {error}")]
    Verifier {
        /// The circuit.
        circuit: String,
        /// bellperson's error.
        error: String,
    },
}

/// The blinding factors of one proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blinding {
    /// `r`.
    pub r: Scalar,
    /// `s`.
    pub s: Scalar,
}

/// The scalars of the variables `density` marks, in order.
fn select<'a>(values: &'a [Fr], density: &'a Density) -> impl Iterator<Item = Fr> + 'a {
    values.iter().enumerate().filter(|(i, _)| density.get(*i)).map(|(_, v)| *v)
}

/// Values per task of [`gather`]: a whole number of density words.
const GATHER_BLOCK: usize = 1 << 14;

/// `prefix`, then the values `density` marks in order: an A or B query's MSM scalars.
/// In parallel, a block of values per task: each block's marked count first (a popcount
/// of its density words), then each block copies its values into its own part of the
/// output.
fn gather(prefix: impl Iterator<Item = Fr>, values: &[Fr], density: &Density) -> Vec<Fr> {
    // Bit i of word w of block b marks value b * GATHER_BLOCK + 64 * w + i; bits past the
    // end of `values` are not values.
    let words = |block: usize, len: usize| {
        let first = block * GATHER_BLOCK / 64;
        (0..len.div_ceil(64)).map(move |w| {
            let bits = (len - 64 * w).min(64);
            let word = density.words.get(first + w).copied().unwrap_or(0);
            if bits == 64 {
                word
            } else {
                word & ((1 << bits) - 1)
            }
        })
    };
    let counts: Vec<usize> = values
        .par_chunks(GATHER_BLOCK)
        .enumerate()
        .map(|(block, chunk)| words(block, chunk.len()).map(|word| word.count_ones() as usize).sum())
        .collect();
    let mut out: Vec<Fr> = prefix.collect();
    let start = out.len();
    out.par_extend(rayon::iter::repeat_n(Fr::default(), counts.iter().sum()));
    let mut rest = &mut out[start..];
    let parts: Vec<&mut [Fr]> = counts
        .iter()
        .map(|&count| {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(count);
            rest = tail;
            part
        })
        .collect();
    values.par_chunks(GATHER_BLOCK).zip(parts).enumerate().for_each(|(block, (chunk, part))| {
        let mut next = part.iter_mut();
        for (values, mut word) in chunk.chunks(64).zip(words(block, chunk.len())) {
            while word != 0 {
                *next.next().expect("counted") = values[word.trailing_zeros() as usize];
                word &= word - 1;
            }
        }
    });
    out
}

fn phase<T>(name: &'static str, result: Result<T, PluginError>) -> Result<T, ProveError> {
    result.map_err(|error| ProveError::Backend { phase: name, error })
}

/// `point`, an MSM's result in `group`, if it is on the curve and in the prime-order
/// subgroup.
fn checked<P>(
    phase: &'static str,
    group: &'static str,
    point: P,
    on_curve: fn(&P) -> bool,
    in_subgroup: fn(&P) -> bool,
) -> Result<P, ProveError> {
    let problem = if !on_curve(&point) {
        "not on the curve"
    } else if !in_subgroup(&point) {
        "not in the prime-order subgroup"
    } else {
        return Ok(point);
    };
    Err(ProveError::BadPoint { phase, group, problem })
}

fn checked_g1(phase: &'static str, point: G1Projective) -> Result<G1Projective, ProveError> {
    checked(phase, "G1", point, |p| p.is_on_curve().into(), |p| p.to_affine().is_torsion_free().into())
}

fn checked_g2(phase: &'static str, point: G2Projective) -> Result<G2Projective, ProveError> {
    checked(phase, "G2", point, |p| p.is_on_curve().into(), |p| p.to_affine().is_torsion_free().into())
}

/// How a proof's h and MSMs reach the backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsmCalls {
    /// A primitive call each: `compute_h`, then `msm_g1` and `msm_g2` on scalars gathered
    /// on the host (phases `h`, `msm_h`, ... `msm_b_g2`).
    Primitives,
    /// One `proof_msms` call ([`Capabilities::PROOF_MSMS`](bellhop_plugin_sdk::Capabilities),
    /// ABI 1.4): phase `msms`, with the backend's timing of each part as its sub-phases.
    OneCall,
}

/// The five MSM results of a proof.
struct Msms {
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b_g1: G1Projective,
    b_g2: G2Projective,
}

/// Proves `assignment` of `circuit` with `srs` through `backend`, its h and MSMs by
/// `calls`, exactly as bellperson 0.27 does: the same h, the same MSMs, combined with
/// `blinding` in the same way, so that a fixed `r` and `s` give bellperson's proof bytes.
/// Returns the proof and its public inputs (without the constant one). The assignment,
/// proved or not, and other large buffers go to `recycler`.
pub fn prove(
    backend: &dyn Backend,
    calls: MsmCalls,
    srs: &Srs,
    assignment: Assignment,
    blinding: Blinding,
    circuit: &str,
    recycler: &Recycler<'_>,
) -> Result<(Proof<Bls12>, Vec<Scalar>), ProveError> {
    if let Err(e) = check_inputs(srs, &assignment, circuit) {
        recycler.spent(circuit, assignment);
        return Err(e);
    }
    let public_inputs = public_inputs(&assignment);
    let msms = match calls {
        MsmCalls::Primitives => msms_by_primitives(backend, srs, assignment, recycler)?,
        MsmCalls::OneCall => msms_in_one_call(backend, srs, assignment, circuit, recycler)?,
    };
    let vk = &srs.vk;
    let Blinding { r, s } = blinding;
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + msms.a;
    let g_b = vk.delta_g2 * s + vk.beta_g2 + msms.b_g2;
    let g_c = msms.a * s + msms.b_g1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + msms.h + msms.l;
    Ok((Proof { a: g_a.to_affine(), b: g_b.to_affine(), c: g_c.to_affine() }, public_inputs))
}

fn msms_by_primitives(
    backend: &dyn Backend,
    srs: &Srs,
    assignment: Assignment,
    recycler: &Recycler<'_>,
) -> Result<Msms, ProveError> {
    let Assignment { mut a, mut b, mut c, inputs, aux, a_aux_density, b_input_density, b_aux_density } = assignment;
    let h = {
        let _span = info_span!("h").entered();
        let domain = a.len().next_power_of_two();
        for v in [&mut a, &mut b, &mut c] {
            v.resize(domain, Fr::default());
        }
        let timings = phase("h", backend.compute_h(&mut a, &mut b, &mut c))?;
        for t in timings {
            record_subphase("h", &t.name, t.nanos);
        }
        recycler.drop_later((b, c));
        a.truncate(domain - 1);
        a
    };
    let msm_h = {
        let _span = info_span!("msm_h").entered();
        checked_g1("msm_h", phase("msm_h", backend.msm_g1(cast_slice(&srs.h), &h)).map(cast::<_, G1Projective>)?)?
    };
    recycler.drop_later(h);
    let msm_l = {
        let _span = info_span!("msm_l").entered();
        checked_g1("msm_l", phase("msm_l", backend.msm_g1(cast_slice(&srs.l), &aux)).map(cast::<_, G1Projective>)?)?
    };
    // The A and B queries hold the input bases first, then the aux bases: one MSM each.
    let a_answer = {
        let _span = info_span!("msm_a").entered();
        let scalars = gather(inputs.iter().copied(), &aux, &a_aux_density);
        checked_g1("msm_a", phase("msm_a", backend.msm_g1(cast_slice(&srs.a), &scalars)).map(cast::<_, G1Projective>)?)?
    };
    let b_scalars = gather(select(&inputs, &b_input_density), &aux, &b_aux_density);
    let b_g1_answer = {
        let _span = info_span!("msm_b_g1").entered();
        checked_g1(
            "msm_b_g1",
            phase("msm_b_g1", backend.msm_g1(cast_slice(&srs.b_g1), &b_scalars)).map(cast::<_, G1Projective>)?,
        )?
    };
    let b_g2_answer = {
        let _span = info_span!("msm_b_g2").entered();
        checked_g2(
            "msm_b_g2",
            phase("msm_b_g2", backend.msm_g2(cast_slice(&srs.b_g2), &b_scalars)).map(cast::<_, G2Projective>)?,
        )?
    };
    recycler.drop_later((b_scalars, aux, a_aux_density, b_input_density, b_aux_density, inputs));
    Ok(Msms { h: msm_h, l: msm_l, a: a_answer, b_g1: b_g1_answer, b_g2: b_g2_answer })
}

fn msms_in_one_call(
    backend: &dyn Backend,
    srs: &Srs,
    assignment: Assignment,
    circuit: &str,
    recycler: &Recycler<'_>,
) -> Result<Msms, ProveError> {
    let out = {
        let _span = info_span!("msms").entered();
        let bases = ProvingBases {
            h: cast_slice(&srs.h).into(),
            l: cast_slice(&srs.l).into(),
            a: cast_slice(&srs.a).into(),
            b_g1: cast_slice(&srs.b_g1).into(),
            b_g2: cast_slice(&srs.b_g2).into(),
        };
        backend.proof_msms(bases, &assignment)
    };
    // After the call's phase: the first time, keeping it page-locks it.
    recycler.spent(circuit, assignment);
    let out = phase("msms", out)?;
    for t in &out.timings {
        record_subphase("msms", &t.name, t.nanos);
    }
    Ok(Msms {
        h: checked_g1("msm_h", cast(out.h))?,
        l: checked_g1("msm_l", cast(out.l))?,
        a: checked_g1("msm_a", cast(out.a))?,
        b_g1: checked_g1("msm_b_g1", cast(out.b_g1))?,
        b_g2: checked_g2("msm_b_g2", cast(out.b_g2))?,
    })
}

/// Checks that `assignment` of `circuit` is well formed, that `srs` fits it and that `srs`
/// is not subverted; every backend, `prove_batch` included, may then rely on its shape.
pub fn check_inputs(srs: &Srs, assignment: &Assignment, circuit: &str) -> Result<(), ProveError> {
    check_shape(assignment).map_err(|problem| ProveError::Malformed { circuit: circuit.into(), problem })?;
    srs.check_fits(assignment, circuit)?;
    if bool::from(srs.vk.delta_g1.is_identity() | srs.vk.delta_g2.is_identity()) {
        return Err(ProveError::SubvertedParameters);
    }
    Ok(())
}

/// The internal shape of an assignment ([`Assignment::check_shape`]), and the constant one
/// first among its inputs.
pub fn check_shape(assignment: &Assignment) -> Result<(), String> {
    assignment.check_shape()?;
    if assignment.inputs.first() != Some(&cast(Scalar::ONE)) {
        return Err("its first input is not the constant one".into());
    }
    Ok(())
}

/// The public inputs a proof of `job` must be for (without the constant one), from the
/// circuit itself, apart from any strategy ([`CircuitSpec::public_inputs`]).
pub fn expected_public_inputs(job: &Job) -> Result<Vec<Scalar>, ProveError> {
    let spec: CircuitSpec = job.circuit.parse().map_err(|e| other_statement(&job.circuit, e))?;
    spec.public_inputs(job.seed, &job.input).map_err(|e| other_statement(&job.circuit, e))
}

fn other_statement(circuit: &str, why: impl std::fmt::Display) -> ProveError {
    ProveError::OtherStatement {
        circuit: circuit.into(),
        detail: format!("the circuit's own could not be computed: {why}"),
    }
}

/// Checks that `assignment` of `circuit` is for the public inputs `expected` (without the
/// constant one): a strategy cannot have a proof made of another statement.
pub fn check_public_inputs(assignment: &Assignment, expected: &[Scalar], circuit: &str) -> Result<(), ProveError> {
    let other = |detail: String| Err(ProveError::OtherStatement { circuit: circuit.into(), detail });
    let got = public_inputs(assignment);
    if got.len() != expected.len() {
        return other(format!("{} public inputs, the circuit has {}", got.len(), expected.len()));
    }
    match got.iter().zip(expected).position(|(g, e)| g != e) {
        Some(i) => other(format!("public input {i} differs")),
        None => Ok(()),
    }
}

/// The public inputs of `assignment`, without the constant one (none if it has no inputs).
pub fn public_inputs(assignment: &Assignment) -> Vec<Scalar> {
    cast_slice::<Fr, Scalar>(assignment.inputs.get(1..).unwrap_or_default()).to_vec()
}

/// Proves a batch of assignments (one shape, each passed through [`check_inputs`] by the
/// caller, which knows each one's index) with `srs` in one call of a backend that proves
/// whole batches ([`Backend::prove_batch`], ABI 1.2), with `blindings[i]` for proof `i`;
/// the proofs are not yet verified.
pub fn prove_whole_batch(
    backend: &dyn Backend,
    srs: &Srs,
    assignments: &[&Assignment],
    blindings: &[Blinding],
) -> Result<Vec<Proof<Bls12>>, ProveError> {
    let failed = |error| ProveError::Backend { phase: "prove_batch", error };
    // supraseal-c2 opens parameter files by a C string path.
    let path = srs.path.to_str().ok_or_else(|| {
        failed(PluginError::invalid_input(format!(
            "the parameter file's path {} is not UTF-8, and this backend opens it by name; rename it",
            srs.path.display()
        )))
    })?;
    let r: Vec<Fr> = blindings.iter().map(|b| cast(b.r)).collect();
    let s: Vec<Fr> = blindings.iter().map(|b| cast(b.s)).collect();
    let _span = info_span!("prove_batch").entered();
    let proofs = backend.prove_batch(path, assignments, &r, &s).map_err(failed)?;
    if proofs.len() != assignments.len() {
        let error = PluginError::new(
            ErrorKind::INTERNAL,
            format!("prove_batch returned {} proofs for {} assignments", proofs.len(), assignments.len()),
        );
        return Err(failed(error));
    }
    Ok(proofs.into_iter().map(|p| Proof { a: cast(p.a), b: cast(p.b), c: cast(p.c) }).collect())
}

/// Checks `proof` against `public_inputs` (without the constant one) with bellperson's
/// verifier and the parameters' verifying key.
pub fn verify(srs: &Srs, proof: &Proof<Bls12>, public_inputs: &[Scalar], circuit: &str) -> Result<(), ProveError> {
    let _span = info_span!("verify").entered();
    match verify_proof(&srs.pvk, proof, public_inputs) {
        Ok(true) => Ok(()),
        Ok(false) => Err(ProveError::Unverified { circuit: circuit.into() }),
        Err(e) => Err(ProveError::Verifier { circuit: circuit.into(), error: e.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parallel gather against the one-by-one selection: every length around the word
    /// and block edges, densities empty, full and patterned, with and without a prefix.
    #[test]
    fn gather_selects_what_the_density_marks_in_order() {
        let block = GATHER_BLOCK;
        for len in [0, 1, 63, 64, 65, 200, block - 1, block, block + 1, 3 * block + 77] {
            let values: Vec<Fr> = (0..len as u64).map(|i| cast(Scalar::from(i + 1))).collect();
            for pattern in [0u64, u64::MAX, 0x8000_0000_0000_0001, 0x0f0f_3c3c_aaaa_5555] {
                let density = Density::from_bits((0..len).map(|i| pattern >> (i * 7 % 64) & 1 == 1));
                for prefix_len in [0, 3] {
                    let prefix = || (0..prefix_len).map(|i| cast::<Scalar, Fr>(Scalar::from(1000 + i as u64)));
                    let expected: Vec<Fr> = prefix().chain(select(&values, &density)).collect();
                    let got = gather(prefix(), &values, &density);
                    assert!(got == expected, "len {len}, pattern {pattern:#x}, prefix {prefix_len}");
                }
            }
        }
    }
}
