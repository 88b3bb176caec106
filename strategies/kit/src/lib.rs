//! What synthesis strategies share: the proving constraint system ([`ProvingCs`], with
//! pluggable evaluation and capacity), a batch's jobs synthesized in parallel on a shared
//! pool ([`synthesize_jobs`]), the reference synthesis ([`synthesize_directly`]) and the
//! test that holds a strategy to it ([`strategy_tests!`]).

mod parts;
mod proving_cs;

use std::{sync::Arc, time::Instant};

use bellhop_circuits::CircuitSpec;
use bellhop_plugin_sdk::{
    pool,
    strategy::{Assignment, Buffers, Job, Strategy, Synthesis},
    types::Fr,
    ErrorKind, PhaseTiming, PluginError,
};
use rayon::prelude::*;

pub use parts::{append_past_head, differs_in, synthesize_in_parts, Join};
pub use proving_cs::{eval, Bits, Capacity, Direct, Evaluate, ProvingCs, Query};

/// Parses a job's circuit spec, naming the job on error.
pub fn parse_job(index: usize, job: &Job) -> Result<CircuitSpec, PluginError> {
    job.circuit.parse().map_err(|e| PluginError::invalid_input(format!("job {index}: {e}")))
}

/// A strategy's rayon pool of `threads` threads (0: one per core), shared by every
/// instance of the strategy with that many threads (see [`pool::shared`]).
pub fn thread_pool(name: &str, threads: u32) -> Result<Arc<rayon::ThreadPool>, PluginError> {
    pool::shared(name, threads as usize)
}

/// Synthesizes each job on `pool` with `one` (spec, job) -> assignment, in parallel,
/// returning the assignments in order and one `synthesis` timing for the batch.
pub fn synthesize_jobs(
    pool: &rayon::ThreadPool,
    jobs: &[Job],
    one: impl Fn(CircuitSpec, &Job) -> Result<Assignment, PluginError> + Sync,
) -> Result<Synthesis, PluginError> {
    let start = Instant::now();
    let specs = jobs.iter().enumerate().map(|(i, job)| parse_job(i, job)).collect::<Result<Vec<_>, _>>()?;
    let assignments = pool.install(|| {
        specs.into_par_iter().zip(jobs.par_iter()).map(|(spec, job)| one(spec, job)).collect::<Result<Vec<_>, _>>()
    })?;
    Ok(Synthesis { assignments, timings: vec![PhaseTiming::new("synthesis", start.elapsed())], warnings: Vec::new() })
}

/// The circuit of `job` with its witness, or an `INVALID_INPUT` error naming the job's
/// circuit and what is wrong with its input.
pub fn job_circuit(spec: CircuitSpec, job: &Job) -> Result<bellhop_circuits::CatalogCircuit, PluginError> {
    spec.instance(job.seed, &job.input)
        .map(|i| i.circuit)
        .map_err(|e| PluginError::invalid_input(format!("{spec}: {e}")))
}

/// Turns a synthesis error into a plugin error naming the circuit.
pub fn synthesis_failed(spec: CircuitSpec, error: bellpepper_core::SynthesisError) -> PluginError {
    PluginError::new(ErrorKind::INTERNAL, format!("synthesis of {spec} failed: {error}"))
}

/// Synthesizes one job as bellperson's `ProvingAssignment` does (grow-as-you-go vectors,
/// every product evaluated as it is enforced): the baseline, and the reference every
/// strategy's assignments must equal.
pub fn synthesize_directly(spec: CircuitSpec, job: &Job) -> Result<Assignment, PluginError> {
    synthesize_one(spec, job, Capacity::default(), Direct).map(ProvingCs::into_assignment)
}

/// Synthesizes one job as [`synthesize_directly`] does, with the same result, but a
/// circuit that can be cut into [`bellhop_circuits::Parts`] (PoRep C2, PoSt) on the current
/// rayon pool's threads, its pieces apart (see [`synthesize_in_parts`]).
pub fn synthesize_in_parallel(spec: CircuitSpec, job: &Job) -> Result<Assignment, PluginError> {
    match job_circuit(spec, job)?.into_parts() {
        Ok(parts) => {
            synthesize_in_parts(spec, parts.head, parts.pieces, || ProvingCs::begin(Capacity::default(), Direct))
                .map(|cs| cs.finish().into_assignment())
        }
        Err(whole) => ProvingCs::synthesize(whole, Capacity::default(), Direct)
            .map(ProvingCs::into_assignment)
            .map_err(|e| synthesis_failed(spec, e)),
    }
}

/// Synthesizes one job into an assignment with `evaluator` and room for `capacity`.
pub fn synthesize_one<E: Evaluate>(
    spec: CircuitSpec,
    job: &Job,
    capacity: Capacity,
    evaluator: E,
) -> Result<ProvingCs<E>, PluginError> {
    ProvingCs::synthesize(job_circuit(spec, job)?, capacity, evaluator).map_err(|e| synthesis_failed(spec, e))
}

/// Checks that `strategy` gives the baseline's assignments for a mixed batch of catalog
/// jobs (two circuits of one shape among them), twice, so that a strategy that learns from
/// its first run (presized's hints, pce's recordings) is checked on what it learnt; then
/// the same into lent buffers holding stale values (`synthesize_into`), and that buffers
/// of the wrong size are refused. Panics naming the first difference. For strategies'
/// test suites: see [`strategy_tests!`].
pub fn assert_same_as_baseline(name: &str, strategy: &dyn Strategy) {
    let jobs: Vec<Job> = [("chain:2000", 1), ("sha256-merkle:2", 2), ("poseidon-merkle:10", 3), ("chain:2000", 4)]
        .into_iter()
        .map(|(circuit, seed)| Job { circuit: circuit.into(), seed, input: Default::default() })
        .collect();
    let pool = thread_pool("bellhop-synthesis-kit", 2).expect("a thread pool");
    let expected = synthesize_jobs(&pool, &jobs, synthesize_directly).expect("the catalog synthesizes").assignments;
    for round in 0..2 {
        let got = strategy.synthesize(&jobs).unwrap_or_else(|e| panic!("{name}, round {round}: {e}"));
        assert!(got.warnings.is_empty(), "{name}, round {round}: {:?}", got.warnings);
        assert_eq!(got.assignments.len(), jobs.len(), "{name}, round {round}");
        for (job, (got, expected)) in jobs.iter().zip(got.assignments.iter().zip(&expected)) {
            assert!(
                got == expected,
                "{name}, round {round}: the assignment of {} differs from baseline's",
                job.circuit
            );
        }
    }
    let stale = |n: usize| vec![Fr([7, 7, 7, 7]); n];
    let mut held: Vec<[Vec<Fr>; 4]> =
        expected.iter().map(|e| [stale(e.a.len()), stale(e.b.len()), stale(e.c.len()), stale(e.aux.len())]).collect();
    for round in 0..2 {
        let mut buffers: Vec<Buffers<'_>> = held.iter_mut().map(|[a, b, c, aux]| Buffers { a, b, c, aux }).collect();
        let got = strategy
            .synthesize_into(&jobs, &mut buffers)
            .unwrap_or_else(|e| panic!("{name}, into lent buffers, round {round}: {e}"));
        assert_eq!(got.assignments.len(), jobs.len(), "{name}, into lent buffers, round {round}");
        for ((job, got), (expected, [a, b, c, aux])) in jobs.iter().zip(got.assignments).zip(expected.iter().zip(&held))
        {
            let got = Assignment {
                a: a.clone().into(),
                b: b.clone().into(),
                c: c.clone().into(),
                aux: aux.clone().into(),
                ..got
            };
            assert!(
                &got == expected,
                "{name}, into lent buffers, round {round}: the assignment of {} differs from baseline's",
                job.circuit
            );
        }
    }
    let [a, b, c, aux] = &mut held[0];
    let mut short = [Buffers { a: &mut a[1..], b: &mut b[1..], c: &mut c[1..], aux }];
    let e = strategy
        .synthesize_into(&jobs[..1], &mut short)
        .err()
        .unwrap_or_else(|| panic!("{name}: buffers one constraint short were taken"));
    assert_eq!(e.kind, ErrorKind::INVALID_INPUT, "{name}: {e}");
    assert!(e.message.contains("lend buffers of the job's own sizes"), "{name}: {e}");
}

/// Stamps a module `$module` with a `#[test]` that checks the strategy `$make` evaluates
/// to (any `Strategy`) against the baseline ([`assert_same_as_baseline`]).
#[macro_export]
macro_rules! strategy_tests {
    ($module:ident, $make:expr) => {
        mod $module {
            use super::*;

            #[test]
            fn assignments_are_the_baselines() {
                $crate::assert_same_as_baseline(stringify!($module), &$make);
            }
        }
    };
}
