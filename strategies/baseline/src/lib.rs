//! The baseline synthesis strategy: bellperson's `ProvingAssignment` behaviour, with the
//! jobs of a batch synthesized in parallel.
//!
//! [`ProvingCs`], [`synthesize_jobs`] and the option helpers are shared with the other
//! strategies, which differ only in how they fill the constraint system.

mod proving_cs;

use std::{sync::Arc, time::Instant};

use bellhop_circuits::CircuitSpec;
use bellhop_plugin_api::{
    pool,
    strategy::{Assignment, Job, Strategy, StrategyPlugin, Synthesis},
    Capabilities, Description, ErrorKind, OpenRequest, PhaseTiming, PluginError,
};
use rayon::prelude::*;
use serde::Deserialize;

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

/// Synthesizes one job into an assignment with `evaluator` and room for `capacity`.
pub fn synthesize_one<E: Evaluate>(
    spec: CircuitSpec,
    job: &Job,
    capacity: Capacity,
    evaluator: E,
) -> Result<ProvingCs<E>, PluginError> {
    ProvingCs::synthesize(job_circuit(spec, job)?, capacity, evaluator).map_err(|e| synthesis_failed(spec, e))
}

/// The baseline strategy: grow-as-you-go vectors, as bellperson does.
pub struct Baseline {
    pool: Arc<rayon::ThreadPool>,
    test_slowdown: f64,
}

/// `[synthesis.options]` of the baseline strategy.
#[derive(Deserialize, Default, Debug)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Test-only: stretch every job's synthesis, on its own thread, by this fraction of
    /// its own time (0.2: 20% slower), so the A/B harness can be checked against a known
    /// regression. At most 10.
    pub test_slowdown: f64,
}

impl Strategy for Baseline {
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError> {
        synthesize_jobs(&self.pool, jobs, |spec, job| {
            let start = Instant::now();
            let assignment = synthesize_one(spec, job, Capacity::default(), Direct).map(ProvingCs::into_assignment);
            if self.test_slowdown > 0.0 {
                // Busy on the job's own thread, like real extra work, and exact, unlike a
                // sleep that can overshoot.
                let until = Instant::now() + start.elapsed().mul_f64(self.test_slowdown);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
            assignment
        })
    }
}

impl StrategyPlugin for Baseline {
    type Options = Options;

    fn describe() -> Description {
        Description {
            name: "baseline".into(),
            description: "bellperson's ProvingAssignment, jobs in parallel".into(),
            capabilities: Capabilities::PARALLEL_BATCH,
            devices: Vec::new(),
        }
    }

    fn open(request: &OpenRequest, options: Options) -> Result<Self, PluginError> {
        let test_slowdown = options.test_slowdown;
        if !(0.0..=10.0).contains(&test_slowdown) {
            return Err(PluginError::new(
                ErrorKind::OPTIONS,
                format!("[synthesis.options]: test_slowdown = {test_slowdown}; it must be between 0.0 and 10.0"),
            ));
        }
        Ok(Self { pool: thread_pool("bellhop-baseline", request.threads)?, test_slowdown })
    }
}
