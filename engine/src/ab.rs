//! `bellhop ab` on the engine: A and B, each its configuration's engine in process (or,
//! synthesizing only, its strategy), run in turn on the same jobs (A B, then B A), one run
//! at a time, and compared ([`AbReport::new`]).

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use bellhop_host::{
    ab::{AbOptions, AbReport, Run},
    config::Config,
    memory,
    params::Srs,
    phases::PhaseLog,
    pipeline::{synthesize_batch, Randomness, Workload},
    session::open_strategy,
};
use bellhop_plugin_sdk::strategy::{Job, Strategy};

use crate::{job::JobRequest, Engine};

/// The pause before each synthesis-only run. A rayon pool whose work is done keeps its
/// threads spinning and yielding for a while before they sleep; on a 2-vCPU machine that
/// took CPU from the next run's threads in another pool (pce's synthesis measured 74 ms
/// right after baseline's, 49 ms after its own, and 49.5 ms after baseline's with this
/// pause). Proved runs do not pause: they run on, as a prover does.
const SETTLE: Duration = Duration::from_millis(50);

/// One side of the comparison.
enum Variant {
    /// Its engine, proving.
    Proving(Engine),
    /// Its strategy, synthesizing only.
    Synthesizing(Box<dyn Strategy>),
}

impl Variant {
    /// `config`'s engine, holding `srs` (its devices keeping the bases), or without it
    /// `config`'s strategy alone.
    fn open(
        config: &Config,
        plugin_dir: &Path,
        workload: &Workload,
        srs: Option<&Arc<Srs>>,
        options: &AbOptions,
    ) -> anyhow::Result<Self> {
        let Some(srs) = srs else {
            return Ok(Variant::Synthesizing(open_strategy(config, plugin_dir)?.0));
        };
        let mut config = config.clone();
        // A run's jobs are one batch, and nothing is synthesized ahead of a run.
        config.pipeline.batch = options.batch.max(1);
        config.pipeline.lookahead = 0;
        config.pipeline.verify = options.verify;
        config.daemon.synthetic_benchmarks = workload.spec.benchmark_only();
        config.daemon.max_queued_bytes = u64::MAX;
        let engine = Engine::in_process(&config, plugin_dir, Randomness::Os)?;
        engine.provide_params(&workload.spec, Arc::clone(srs));
        engine.preload(&workload.spec).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Variant::Proving(engine))
    }

    /// Proves (or only synthesizes, then frees) `jobs`: its seconds.
    fn run(&self, workload: &Workload, jobs: &[Job]) -> anyhow::Result<f64> {
        let start = Instant::now();
        match self {
            Variant::Synthesizing(strategy) => {
                let synthesized = synthesize_batch(strategy.as_ref(), 0, 0, jobs)?;
                let _batch = tracing::info_span!("batch", first = 0u64, count = jobs.len() as u64).entered();
                let _span = tracing::info_span!("dealloc").entered();
                drop(synthesized);
            }
            Variant::Proving(engine) => {
                let submitted = {
                    // Queued together, so synthesized as one batch.
                    let _paused = engine.pause_synthesis();
                    jobs.iter()
                        .map(|job| engine.submit(request(workload, job)).map_err(|e| anyhow::anyhow!("{e}")))
                        .collect::<anyhow::Result<Vec<_>>>()?
                };
                for job in &submitted {
                    engine.proof_of(job)?;
                }
                // Its buffers freed within the run, as a proof's are before it returns.
                engine.settle();
            }
        }
        Ok(start.elapsed().as_secs_f64())
    }
}

/// A job of one partition, as `job` (from [`Workload::job`]) describes it.
fn request(workload: &Workload, job: &Job) -> JobRequest {
    let input = job.input.to_vec();
    // A prepared partition reads its own input alone.
    let (input, prepared) = match workload.prepared {
        Some(_) => (Vec::new(), Some(vec![input])),
        None => (input, None),
    };
    JobRequest {
        request_id: None,
        circuit: workload.spec,
        input,
        partitions: 1,
        first_seed: job.seed,
        prepared,
        aggregation: None,
        priority: None,
    }
}

/// Runs A and B (`configs[0]`, `configs[1]`, from `plugin_dir`) on `workload`,
/// interleaved, and compares them: run k of each takes jobs k·batch onwards. Runs prove
/// with `srs`; without it they only synthesize, which is all that differs between two
/// strategies, so many more rounds fit in the same time. `log` must be the [`PhaseLog`] of
/// the subscriber of this thread; `progress` is called after each run.
#[allow(clippy::too_many_arguments)]
pub fn run(
    workload: &Workload,
    srs: Option<Arc<Srs>>,
    configs: [&Config; 2],
    plugin_dir: &Path,
    labels: [String; 2],
    options: &AbOptions,
    log: &PhaseLog,
    progress: &dyn Fn(),
) -> anyhow::Result<AbReport> {
    let variants = [
        Variant::open(configs[0], plugin_dir, workload, srs.as_ref(), options).context("opening A")?,
        Variant::open(configs[1], plugin_dir, workload, srs.as_ref(), options).context("opening B")?,
    ];
    let batch = options.batch.max(1);
    let jobs = |round: usize| -> Vec<Job> { (0..batch).map(|i| workload.job(round * batch + i)).collect() };
    // One run: its phases, page faults, allocations and peak RSS.
    let measure = |variant: usize, order: usize, jobs: &[Job]| -> anyhow::Result<Run> {
        if srs.is_none() {
            std::thread::sleep(SETTLE);
        }
        log.take();
        let reset = memory::reset_peak_rss();
        let total = variants[variant].run(workload, jobs)?;
        let peak_rss = if reset { memory::peak_rss() } else { None };
        Ok(Run::from_records(variant, order, log.take(), total, peak_rss))
    };
    for round in 0..options.warmup {
        for variant in 0..2 {
            measure(variant, 0, &jobs(round))?;
            progress();
        }
    }
    let mut runs = Vec::with_capacity(2 * options.runs);
    for round in 0..options.runs {
        // A B, then B A: whichever runs second in a pair (warmer caches, the other's
        // garbage still being freed) alternates, so order effects cancel.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for variant in order {
            runs.push(measure(variant, runs.len(), &jobs(round))?);
            progress();
        }
    }
    Ok(AbReport::new(workload.spec.to_string(), labels, options, srs.is_none(), runs))
}
