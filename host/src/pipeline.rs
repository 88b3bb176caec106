//! The two steps of a proof that the engine schedules: synthesis of a batch of jobs in one
//! strategy call ([`synthesize_into_lent`]), and proving what it made ([`prove_synthesized`]):
//! in one call for a backend that proves whole batches (`Capabilities::PROVE_BATCH`, ABI
//! 1.2), else proof by proof ([`prover::prove`]); every proof is verified before it is
//! handed on (unless turned off), and large buffers are freed off the hot path.

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    path::Path,
};

use anyhow::{bail, Context as _};
use bellhop_circuits::CircuitSpec;
use bellhop_plugin_sdk::{
    panic_message,
    strategy::{Assignment, Job, Strategy, Synthesis},
    PluginError,
};
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand::rngs::OsRng;
use tracing::info_span;

use crate::{
    dealloc::Dealloc,
    params::Srs,
    phases::record_subphase,
    prover::{self, Blinding, ProveError},
    recycler::{Lent, Recycler},
    session::OpenedBackend,
};

/// The jobs a bench or A/B comparison proves: of `spec`, from a Filecoin circuit's `input`.
pub struct Workload {
    /// The circuit.
    pub spec: CircuitSpec,
    /// Its input (empty for the catalog's circuits).
    pub input: Vec<u8>,
    /// Partitions of the input: proofs of a Filecoin circuit are one of each.
    pub partitions: usize,
    /// Each partition's own input, where the circuit prepares one (a PoRep's).
    pub prepared: Option<Vec<Vec<u8>>>,
}

impl Workload {
    /// `spec`'s workload, with the input read from `path`, which a Filecoin circuit needs.
    pub fn read(spec: CircuitSpec, path: Option<&Path>) -> anyhow::Result<Self> {
        let input = match path {
            Some(path) => std::fs::read(path).with_context(|| format!("reading --input {}", path.display()))?,
            None if spec.reads_input() => bail!("{spec} reads its witness from a file: give it with --input FILE"),
            None => Vec::new(),
        };
        let prepared = spec.prepare(&input)?.partitions;
        let partitions = match &prepared {
            Some(each) => each.len(),
            None => spec.partitions(&input)?,
        };
        Ok(Self { spec, input, partitions, prepared })
    }

    /// Job `n`: partition n mod partitions of a Filecoin circuit; a catalog circuit's
    /// job n has seed n.
    pub fn job(&self, n: usize) -> Job {
        let seed = if self.spec.reads_input() { n % self.partitions } else { n } as u64;
        let input = self.prepared.as_ref().map_or(&self.input, |each| &each[seed as usize]);
        Job { circuit: self.spec.to_string().into(), seed, input: input.clone().into() }
    }
}

/// Why a run of the pipeline failed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The strategy failed.
    #[error("synthesis of batch {batch} failed: {error}")]
    Synthesis {
        /// The batch.
        batch: usize,
        /// The strategy's error.
        error: PluginError,
    },
    /// The strategy returned another number of assignments than jobs.
    #[error("the strategy returned {got} assignments for {expected} jobs")]
    Count {
        /// Jobs given.
        expected: usize,
        /// Assignments returned.
        got: usize,
    },
    /// Fewer fixed blinding pairs than proofs.
    #[error("proof {index} has no fixed r and s: {given} pairs were given, one is needed per proof")]
    Blinding {
        /// The proof's index in the run.
        index: usize,
        /// Pairs given.
        given: usize,
    },
    /// A proof failed.
    #[error("proof {index}: {error}")]
    Prove {
        /// The proof's index in the run.
        index: usize,
        /// Why.
        error: ProveError,
    },
}

/// Where `r` and `s` come from.
#[derive(Clone, Debug)]
pub enum Randomness {
    /// Fresh from the operating system's CSPRNG for every proof.
    Os,
    /// Fixed, one pair per proof in order (for tests against bellperson).
    Fixed(Vec<Blinding>),
}

impl Randomness {
    /// The blinding of proof `index`. Fixed pairs are never reused: two proofs with one
    /// `r` and `s` would leak information about their witnesses.
    pub fn blinding(&self, index: usize) -> Result<Blinding, PipelineError> {
        match self {
            Randomness::Os => Ok(Blinding { r: Scalar::random(OsRng), s: Scalar::random(OsRng) }),
            Randomness::Fixed(pairs) => {
                pairs.get(index).copied().ok_or(PipelineError::Blinding { index, given: pairs.len() })
            }
        }
    }
}

/// One finished proof.
#[derive(Clone, Debug)]
pub struct ProvedJob {
    /// The job's index in the run.
    pub index: usize,
    /// The circuit.
    pub circuit: String,
    /// The proof.
    pub proof: Proof<Bls12>,
    /// Its public inputs, without the constant one.
    pub public_inputs: Vec<Scalar>,
}

impl ProvedJob {
    /// The proof in bellperson's 192-byte encoding.
    pub fn proof_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(192);
        self.proof.write(&mut out).expect("writing to a Vec does not fail");
        out
    }
}

/// How [`run`] proves.
#[derive(Clone, Debug)]
pub struct PipelineOptions {
    /// Verify every proof before returning it.
    pub verify: bool,
    /// Where `r` and `s` come from.
    pub randomness: Randomness,
}

/// Synthesizes `jobs`, batch number `batch` whose first proof is number `first`, in one
/// strategy call, inside its `batch` and `synthesis` spans (the strategy's own timings
/// become `synthesis.*` sub-phases, its warnings are logged).
pub fn synthesize_batch(
    strategy: &dyn Strategy,
    batch: usize,
    first: usize,
    jobs: &[Job],
) -> Result<Vec<Assignment>, PipelineError> {
    synthesize_into_lent(strategy, None, batch, first, jobs)
}

/// [`synthesize_batch`], into `lent`'s buffers where given (one per job, lent from a
/// [`KeptPool`](crate::recycler::KeptPool): `synthesize_into`); on failure they go back to the pool.
pub fn synthesize_into_lent(
    strategy: &dyn Strategy,
    mut lent: Option<Lent<'_>>,
    batch: usize,
    first: usize,
    jobs: &[Job],
) -> Result<Vec<Assignment>, PipelineError> {
    let _batch = info_span!("batch", first = first as u64, count = jobs.len() as u64).entered();
    let _span = info_span!("synthesis").entered();
    // The circuit's own public inputs are computed beside the strategy's synthesis.
    let (synthesized, expected) = rayon::join(
        || match &mut lent {
            Some(lent) => strategy.synthesize_into(jobs, &mut lent.buffers()),
            None => strategy.synthesize(jobs),
        },
        || jobs.iter().map(prover::expected_public_inputs).collect::<Vec<_>>(),
    );
    let Synthesis { mut assignments, timings, warnings } = match synthesized {
        Ok(synthesized) => synthesized,
        Err(error) => return Err(PipelineError::Synthesis { batch, error }),
    };
    for t in timings {
        record_subphase("synthesis", &t.name, t.nanos);
    }
    for warning in warnings {
        tracing::warn!("strategy: {warning}");
    }
    if assignments.len() != jobs.len() {
        return Err(PipelineError::Count { expected: jobs.len(), got: assignments.len() });
    }
    let pool = lent.as_ref().map(|lent| lent.pool());
    if let Some(lent) = lent {
        lent.fill(&mut assignments);
    }
    for (offset, ((job, assignment), expected)) in jobs.iter().zip(&assignments).zip(expected).enumerate() {
        if let Err(error) =
            expected.and_then(|expected| prover::check_public_inputs(assignment, &expected, &job.circuit))
        {
            if let Some(pool) = pool {
                for (job, assignment) in jobs.iter().zip(assignments) {
                    // What the pool does not keep is freed here.
                    let _ = pool.take_back(&job.circuit, assignment);
                }
            }
            return Err(PipelineError::Prove { index: first + offset, error });
        }
    }
    Ok(assignments)
}

/// The proving step the pipeline and the engine share: `assignments` of `circuit` (the
/// circuit `srs` is for), proofs number `first` on, proved the way `backend` offers (the
/// whole batch in one call where it has PROVE_BATCH, else one by one, its h and MSMs in
/// one `proof_msms` call), with the blinding `blinding` gives each, verified if `verify`
/// (a panic in the verifier is an error), and handed to `proved` one by one in order.
/// Each assignment, proved or not, goes to `recycler`.
#[allow(clippy::too_many_arguments)]
pub fn prove_synthesized(
    backend: &OpenedBackend,
    srs: &Srs,
    circuit: &str,
    first: usize,
    assignments: Vec<Assignment>,
    blinding: impl Fn(usize) -> Result<Blinding, PipelineError>,
    verify: bool,
    recycler: &Recycler<'_>,
    proved: &mut dyn FnMut(ProvedJob),
) -> Result<(), PipelineError> {
    // Verifies a proof (inside its `proof` span) and hands it on.
    let mut finish = |index: usize, proof: Proof<Bls12>, public_inputs: Vec<Scalar>| {
        if verify {
            catch_unwind(AssertUnwindSafe(|| prover::verify(srs, &proof, &public_inputs, circuit)))
                .unwrap_or_else(|panic| {
                    Err(ProveError::Verifier {
                        circuit: circuit.to_string(),
                        error: format!("the verifier panicked: {}", panic_message(&*panic)),
                    })
                })
                .map_err(|error| PipelineError::Prove { index, error })?;
        }
        proved(ProvedJob { index, circuit: circuit.to_string(), proof, public_inputs });
        Ok::<_, PipelineError>(())
    };
    if backend.proves_whole_batches() && !assignments.is_empty() {
        // (A recycler keeps nothing for a backend that proves whole batches.)
        let mut blindings = Vec::with_capacity(assignments.len());
        for (offset, assignment) in assignments.iter().enumerate() {
            prover::check_inputs(srs, assignment, circuit)
                .map_err(|error| PipelineError::Prove { index: first + offset, error })?;
            blindings.push(blinding(first + offset)?);
        }
        let proofs = {
            let _batch = info_span!("batch", first = first as u64, count = assignments.len() as u64).entered();
            let batch: Vec<&Assignment> = assignments.iter().collect();
            prover::prove_whole_batch(backend.as_ref(), srs, &batch, &blindings)
                .map_err(|error| PipelineError::Prove { index: first, error })?
        };
        for (offset, (assignment, proof)) in assignments.iter().zip(proofs).enumerate() {
            let _proof = info_span!("proof", index = (first + offset) as u64).entered();
            finish(first + offset, proof, prover::public_inputs(assignment))?;
        }
        recycler.drop_later(assignments);
        return Ok(());
    }
    let mut assignments = assignments.into_iter().enumerate();
    while let Some((offset, assignment)) = assignments.next() {
        let index = first + offset;
        let _proof = info_span!("proof", index = index as u64).entered();
        let proof = match blinding(index) {
            Ok(blinding) => prover::prove(backend, srs, assignment, blinding, circuit, recycler)
                .map_err(|error| PipelineError::Prove { index, error }),
            Err(e) => {
                recycler.spent(circuit, assignment);
                Err(e)
            }
        };
        if let Err(e) = proof.and_then(|(proof, public_inputs)| finish(index, proof, public_inputs)) {
            recycler.spent_all(circuit, assignments.map(|(_, assignment)| assignment));
            return Err(e);
        }
    }
    Ok(())
}

/// Proves `batches` of jobs of the circuit `srs` is for, in order, each synthesized in one
/// strategy call and then proved ([`synthesize_batch`], [`prove_synthesized`]), with `srs`
/// on `backend`, calling
/// `on_proof` as each proof is done. The commands prove on the engine (`bellhop-engine`),
/// which schedules these two steps; this runs them one after the other, for tests and
/// benchmarks of the steps themselves.
pub fn run(
    backend: &OpenedBackend,
    strategy: &dyn Strategy,
    srs: &Srs,
    batches: Vec<Vec<Job>>,
    options: &PipelineOptions,
    on_proof: &(dyn Fn(&ProvedJob) + Sync),
) -> Result<Vec<ProvedJob>, PipelineError> {
    let dealloc = Dealloc::new();
    let recycler = Recycler::off(&dealloc);
    let mut proved = Vec::new();
    let mut first = 0;
    for (batch, jobs) in batches.iter().enumerate() {
        let Some(circuit) = jobs.first().map(|job| job.circuit.to_string()) else { continue };
        let assignments = synthesize_batch(strategy, batch, first, jobs)?;
        let blinding = |index| options.randomness.blinding(index);
        prove_synthesized(backend, srs, &circuit, first, assignments, blinding, options.verify, &recycler, &mut |p| {
            on_proof(&p);
            proved.push(p);
        })?;
        first += jobs.len();
    }
    Ok(proved)
}
