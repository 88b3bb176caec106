//! `bellhop bench`: N proofs after warm-up on the daemon's engine in process, with the median and
//! spread of every phase.

use std::{process::ExitCode, sync::Arc, time::Instant};

use anyhow::{bail, Context as _, Result};
use bellhop_engine::{Engine, JobRequest, Submitted};
use serde_json::json;

use super::Context;
use bellhop_host::{
    config::parse_size,
    memory,
    params::Shape,
    phases::{PhaseTable, PHASES},
    pipeline::{Randomness, Workload},
    session::load_params,
    stats::Summary,
    synthetic_params,
};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The circuit, e.g. chain:65536, or synthetic-porep:32GiB with --input.
    circuit: String,
    /// The input of a Filecoin circuit: a proof is then one of each of its partitions.
    #[arg(long, value_name = "FILE")]
    input: Option<std::path::PathBuf>,
    /// Measured proofs.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Proofs before measuring (thread pools, twiddle tables, page faults).
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Partitions (or proofs) synthesized together in one strategy call.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// A host memory budget (e.g. 96GiB): as many partitions are synthesized together
    /// as fit in it beside the resident parameters and the partition being proved
    /// (instead of --batch).
    #[arg(long, value_parser = parse_size, conflicts_with = "batch")]
    budget: Option<u64>,
    /// The parameter file (default: the circuit's file in `[params] dir`).
    #[arg(long)]
    params: Option<std::path::PathBuf>,
    /// For a synthetic-porep circuit: make its synthetic parameters in memory (as `bellhop
    /// params synthetic` writes them) instead of reading a file.
    #[arg(long, conflicts_with = "params")]
    synthetic_params: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub(super) fn run(context: &Context, args: &Args) -> Result<ExitCode> {
    // The input before the parameters, which may take a minute and most of the memory.
    let workload = Workload::read(args.circuit.parse()?, args.input.as_deref())?;
    let (spec, partitions) = (workload.spec, workload.partitions);
    let srs = if args.synthetic_params {
        if !spec.benchmark_only() {
            bail!("--synthetic-params is for synthetic-porep circuits; {spec} is proved with real parameters");
        }
        let start = Instant::now();
        let srs = synthetic_params::in_memory(&spec.shape()?.into(), 1, &spec);
        eprintln!("made synthetic parameters for {spec} in memory in {:.1} s", start.elapsed().as_secs_f64());
        Arc::new(srs)
    } else {
        load_params(&context.config, &spec, args.params.as_deref())?
    };
    let lookahead = context.config.pipeline.lookahead;
    let batch = match args.budget {
        Some(budget) => batch_within(&srs.shape(), budget, lookahead)?,
        None => args.batch.max(1),
    };
    if spec.benchmark_only() && context.config.pipeline.verify {
        eprintln!("{spec}: proofs of a synthetic input prove nothing, so they are not verified (nor kept)");
    }
    let total = args.warmup + args.runs;
    // The daemon's engine, in process: a job per proof, each of every partition of the
    // input (a catalog circuit's proof is a job of one partition).
    let mut config = context.config.clone();
    config.pipeline.batch = batch;
    config.daemon.synthetic_benchmarks = spec.benchmark_only();
    config.daemon.max_queued = config.daemon.max_queued.max(total);
    config.daemon.max_queued_bytes = u64::MAX;
    let engine = Engine::in_process(&config, &context.plugin_dir, Randomness::Os)?;
    engine.provide_params(&spec, Arc::clone(&srs));
    // The backend keeps the bases before the measured proofs, as the daemon's preload does.
    engine.preload(&spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    let status = engine.status();
    let backend = status.devices.first().map_or_else(String::new, |d| d.backend.clone());
    let request = JobRequest {
        request_id: None,
        circuit: spec,
        input: workload.input.clone(),
        partitions,
        first_seed: 0,
        prepared: workload.prepared.clone(),
        aggregation: None,
        priority: None,
    };
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} proofs, {elapsed}")?);
    bar.set_message(format!("bench {spec} on {backend}"));
    // Reading and uploading the parameters peaks apart from proving: both are reported.
    let loading_peak_rss = memory::peak_rss();
    let reset = memory::reset_peak_rss();
    let start = Instant::now();
    // A catalog circuit's proof n is of witness seed n.
    let submitted: Vec<Submitted> = (0..total as u64)
        .map(|n| {
            let first_seed = if spec.reads_input() { 0 } else { n };
            engine.submit(JobRequest { first_seed, ..request.clone() }).map_err(|e| anyhow::anyhow!("{e}"))
        })
        .collect::<Result<_>>()?;
    // When the last warm-up proof was done: from there, the engine is in its steady state.
    let mut warm = start;
    for (n, job) in submitted.iter().enumerate() {
        engine.proof_of(job).with_context(|| format!("proof {n}"))?;
        if n + 1 == args.warmup {
            warm = Instant::now();
        }
        bar.inc(1);
        if bar.is_hidden() {
            eprintln!("proof {n} proved after {:.1} s", start.elapsed().as_secs_f64());
        }
    }
    let end = Instant::now();
    // Stopped, so that the last proof's buffers are freed (and that phase recorded).
    drop(engine);
    let wall = (end - start).as_secs_f64();
    // Throughput: synthesis of the next proof overlaps proving of this one (lookahead), so
    // this is below the sum of a proof's phases, which is its latency.
    let steady = (end - warm).as_secs_f64() / args.runs.max(1) as f64;
    bar.finish_and_clear();
    let table = PhaseTable::from_records(&context.phases.take(), total * partitions);
    let measured = &table.proofs[args.warmup * partitions..];
    // The phases, each followed by the backend's sub-phases of it that were measured.
    let names: Vec<String> = PHASES
        .iter()
        .flat_map(|phase| {
            let prefix = format!("{phase}.");
            let subphases: std::collections::BTreeSet<&String> =
                measured.iter().flat_map(|row| row.keys()).filter(|k| k.starts_with(&prefix)).collect();
            std::iter::once(phase.to_string()).chain(subphases.into_iter().cloned())
        })
        .collect();
    let summaries: Vec<(String, Summary)> = names
        .into_iter()
        .map(|phase| {
            let summary = Summary::of(measured.iter().map(|row| row.get(&phase).copied().unwrap_or(0.0)));
            (phase, summary)
        })
        .collect();
    let peak_rss = memory::peak_rss().filter(|_| reset);
    if args.json {
        let phases: serde_json::Map<_, _> =
            summaries.iter().map(|(p, s)| (p.clone(), serde_json::to_value(s).expect("plain numbers"))).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "circuit": spec.to_string(), "backend": backend, "strategy": status.strategy,
                "partitions": partitions, "batch": batch, "budget_bytes": args.budget, "lookahead": lookahead,
                "warmup": args.warmup, "runs": args.runs, "wall_seconds": wall,
                "seconds_per_proof_after_warmup": steady, "peak_rss_bytes": peak_rss,
                "loading_peak_rss_bytes": loading_peak_rss,
                "phases": phases, "per_partition": measured,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let of = if partitions > 1 { format!(" of {partitions} partitions each") } else { String::new() };
    println!("{spec}: {} runs{of} after {} warm-up on {} with {}", args.runs, args.warmup, backend, status.strategy);
    let per = if partitions > 1 { "per partition: " } else { "" };
    println!("{per}{:<20} {:>10} {:>10} {:>10} {:>8}", "phase", "median s", "min s", "max s", "spread");
    for (phase, s) in &summaries {
        println!(
            "{:width$}{phase:<20} {:>10.4} {:>10.4} {:>10.4} {:>7.1}%",
            "",
            s.median,
            s.min,
            s.max,
            s.spread_percent(),
            width = per.len()
        );
    }
    println!("wall time {wall:.2} s for {total} proofs; {steady:.3} s per proof after warm-up");
    if let (Some(proving), Some(loading)) = (peak_rss, loading_peak_rss) {
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        println!("peak RSS {:.2} GiB proving, {:.2} GiB reading the parameters", gib(proving), gib(loading));
    }
    Ok(ExitCode::SUCCESS)
}

/// The batch that keeps a bench inside `budget` bytes of host memory: the synthesized
/// partitions that fit beside the resident parameters and the one being proved, shared
/// among the `lookahead + 1` batches in flight.
fn batch_within(shape: &Shape, budget: u64, lookahead: usize) -> Result<usize> {
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    let batch = shape.partitions_within(budget) as usize / (lookahead + 1);
    if batch == 0 {
        bail!(
            "a budget of {:.1} GiB does not hold these parameters ({:.1} GiB resident), a partition being proved \
             ({:.1} GiB) and {} synthesized one(s) ({:.1} GiB each) with [pipeline] lookahead = {lookahead}: give \
             at least {:.1} GiB",
            gib(budget),
            gib(shape.resident_bytes()),
            gib(shape.proving_bytes()),
            lookahead + 1,
            gib(shape.assignment_bytes()),
            gib(shape.resident_bytes() + shape.proving_bytes() + (lookahead as u64 + 1) * shape.assignment_bytes())
        );
    }
    eprintln!(
        "budget {:.1} GiB: {:.1} GiB of parameters, {:.1} GiB a synthesized partition, {:.1} GiB proving one: \
         {batch} partition(s) synthesized together",
        gib(budget),
        gib(shape.resident_bytes()),
        gib(shape.assignment_bytes()),
        gib(shape.proving_bytes())
    );
    Ok(batch)
}
