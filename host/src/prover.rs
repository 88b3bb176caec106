//! The Groth16 prover core: one proof from an assignment, its h and MSMs in one backend call.

use bellhop_circuits::CircuitSpec;
use bellhop_plugin_sdk::{
    backend::{Backend, ProvingBases},
    cast, cast_slice,
    strategy::{Assignment, Job},
    types::Fr,
    ErrorKind, PluginError,
};
use bellperson::groth16::{verify_proof, Proof};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use ff::Field as _;
use group::{prime::PrimeCurveAffine, Curve};
use tracing::info_span;

use crate::{
    params::{ParamsError, Srs},
    phases::record_subphase,
    recycler::Recycler,
    session::OpenedBackend,
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

/// The five MSM results of a proof.
struct Msms {
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b_g1: G1Projective,
    b_g2: G2Projective,
}

/// Proves `assignment` of `circuit` with `srs` through `backend` (its h and MSMs in one
/// [`OpenedBackend::proof_msms`] call), exactly as bellperson 0.27 does: the same h, the
/// same MSMs, combined with `blinding` in the same way, so that a fixed `r` and `s` give
/// bellperson's proof bytes. Returns the proof and its public inputs (without the constant
/// one). The assignment, proved or not, goes to `recycler`.
pub fn prove(
    backend: &OpenedBackend,
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
    let out = out.map_err(|error| ProveError::Backend { phase: "msms", error })?;
    for t in &out.timings {
        record_subphase("msms", &t.name, t.nanos);
    }
    let msms = Msms {
        h: checked_g1("msm_h", cast(out.h))?,
        l: checked_g1("msm_l", cast(out.l))?,
        a: checked_g1("msm_a", cast(out.a))?,
        b_g1: checked_g1("msm_b_g1", cast(out.b_g1))?,
        b_g2: checked_g2("msm_b_g2", cast(out.b_g2))?,
    };
    let vk = &srs.vk;
    let Blinding { r, s } = blinding;
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + msms.a;
    let g_b = vk.delta_g2 * s + vk.beta_g2 + msms.b_g2;
    let g_c = msms.a * s + msms.b_g1 * r + vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + msms.h + msms.l;
    Ok((Proof { a: g_a.to_affine(), b: g_b.to_affine(), c: g_c.to_affine() }, public_inputs))
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
