//! The baseline synthesis strategy: bellperson's `ProvingAssignment` behaviour, with the
//! jobs of a batch synthesized in parallel.
//!
//! [`ProvingCs`] and [`synthesize_jobs`] are shared with the other strategies, which
//! differ only in how they fill the constraint system.

mod proving_cs;

use std::time::Instant;

use bellhop_circuits::CircuitSpec;
use bellhop_plugin_api::{
    strategy::{Assignment, Job, Strategy, StrategyPlugin},
    Capabilities, Description, ErrorKind, OpenRequest, PhaseTiming, PluginError,
};
use rayon::prelude::*;

pub use proving_cs::{Capacity, ProvingCs};

/// Parses a job's circuit spec, naming the job on error.
pub fn parse_job(index: usize, job: &Job) -> Result<CircuitSpec, PluginError> {
    job.circuit
        .parse()
        .map_err(|e| PluginError::invalid_input(format!("job {index}: {e}")))
}

/// Builds a strategy's rayon pool of `threads` threads (0: one per core).
pub fn thread_pool(name: &str, threads: u32) -> Result<rayon::ThreadPool, PluginError> {
    let name = name.to_string();
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads as usize)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map_err(|e| {
            PluginError::new(
                ErrorKind::INTERNAL,
                format!("cannot start the thread pool: {e}"),
            )
        })
}

/// Refuses any key in an options table, for strategies that take none.
pub fn no_options(strategy: &str, options: &str) -> Result<(), PluginError> {
    let table: toml::Table = options.parse().map_err(|e| {
        PluginError::new(
            ErrorKind::OPTIONS,
            format!("[synthesis.options] is not valid TOML: {e}"),
        )
    })?;
    match table.keys().next() {
        Some(key) => Err(PluginError::new(
            ErrorKind::OPTIONS,
            format!("unknown option `{key}` in [synthesis.options]: the {strategy} strategy takes no options"),
        )),
        None => Ok(()),
    }
}

/// Synthesizes each job on `pool` with `one` (spec, seed, job) -> assignment, in parallel,
/// returning the assignments in order and one `synthesis` timing for the batch.
pub fn synthesize_jobs(
    pool: &rayon::ThreadPool,
    jobs: &[Job],
    one: impl Fn(CircuitSpec, &Job) -> Result<Assignment, PluginError> + Sync,
) -> Result<(Vec<Assignment>, Vec<PhaseTiming>), PluginError> {
    let start = Instant::now();
    let specs = jobs
        .iter()
        .enumerate()
        .map(|(i, job)| parse_job(i, job))
        .collect::<Result<Vec<_>, _>>()?;
    let assignments = pool.install(|| {
        specs
            .into_par_iter()
            .zip(jobs.par_iter())
            .map(|(spec, job)| one(spec, job))
            .collect::<Result<Vec<_>, _>>()
    })?;
    Ok((
        assignments,
        vec![PhaseTiming::new("synthesis", start.elapsed())],
    ))
}

/// Turns a synthesis error into a plugin error naming the circuit.
pub fn synthesis_failed(spec: CircuitSpec, error: bellpepper_core::SynthesisError) -> PluginError {
    PluginError::new(
        ErrorKind::INTERNAL,
        format!("synthesis of {spec} failed: {error}"),
    )
}

/// The baseline strategy: grow-as-you-go vectors, as bellperson does.
pub struct Baseline {
    pool: rayon::ThreadPool,
}

impl Strategy for Baseline {
    fn synthesize(&self, jobs: &[Job]) -> Result<(Vec<Assignment>, Vec<PhaseTiming>), PluginError> {
        synthesize_jobs(&self.pool, jobs, |spec, job| {
            let instance = spec.instance(job.seed);
            ProvingCs::synthesize(instance.circuit, Capacity::default())
                .map(ProvingCs::into_assignment)
                .map_err(|e| synthesis_failed(spec, e))
        })
    }
}

impl StrategyPlugin for Baseline {
    fn describe() -> Description {
        Description {
            name: "baseline".into(),
            description: "bellperson's ProvingAssignment, jobs in parallel".into(),
            capabilities: Capabilities::PARALLEL_BATCH,
            devices: Vec::new(),
        }
    }

    fn open(request: &OpenRequest) -> Result<Self, PluginError> {
        no_options("baseline", &request.options)?;
        Ok(Self {
            pool: thread_pool("bellhop-baseline", request.threads)?,
        })
    }
}
