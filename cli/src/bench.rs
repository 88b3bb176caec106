//! `bellhop bench`: N proofs after warm-up, with the median and spread of every phase.

use std::{process::ExitCode, time::Instant};

use anyhow::Result;
use serde_json::json;

use super::{prove::batches, Context, Proving};
use bellhop_host::{
    phases::{PhaseTable, PHASES},
    pipeline,
    stats::Summary,
};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The circuit, e.g. chain:65536.
    circuit: String,
    /// Measured proofs.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Proofs before measuring (thread pools, twiddle tables, page faults).
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// The parameter file (default: the circuit's file in `[params] dir`).
    #[arg(long)]
    params: Option<std::path::PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub(super) fn run(context: &Context, args: &Args) -> Result<ExitCode> {
    let Proving { spec, session, srs, options } = context.proving(&args.circuit, args.params.as_deref())?;
    let total = args.warmup + args.runs;
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} proofs, {elapsed}")?);
    bar.set_message(format!("bench {spec} on {}", session.backend.name));
    // When the last warm-up proof was done: from there, the pipeline is in its steady state.
    let warm = std::sync::Mutex::new(None);
    let start = Instant::now();
    pipeline::run(
        &session.backend,
        session.strategy.as_ref(),
        &srs,
        batches(&spec, 0, total, 1, &[]),
        &options,
        &|proved| {
            if proved.index + 1 == args.warmup {
                *warm.lock().expect("not poisoned") = Some(Instant::now());
            }
            bar.inc(1)
        },
    )?;
    let end = Instant::now();
    let wall = (end - start).as_secs_f64();
    // Throughput: synthesis of the next proof overlaps proving of this one (lookahead), so
    // this is below the sum of a proof's phases, which is its latency.
    let warm = warm.into_inner().expect("not poisoned").unwrap_or(start);
    let steady = (end - warm).as_secs_f64() / args.runs.max(1) as f64;
    bar.finish_and_clear();
    let table = PhaseTable::from_records(&context.phases.take(), total);
    let measured = &table.proofs[args.warmup..];
    let summaries: Vec<(String, Summary)> = PHASES
        .iter()
        .map(|phase| {
            (phase.to_string(), Summary::of(measured.iter().map(|row| row.get(*phase).copied().unwrap_or(0.0))))
        })
        .collect();
    if args.json {
        let phases: serde_json::Map<_, _> =
            summaries.iter().map(|(p, s)| (p.clone(), serde_json::to_value(s).expect("plain numbers"))).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "circuit": spec.to_string(), "backend": session.backend.name, "strategy": session.strategy_name,
                "warmup": args.warmup, "runs": args.runs, "wall_seconds": wall,
                "seconds_per_proof_after_warmup": steady, "phases": phases, "per_proof": measured,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{spec}: {} runs after {} warm-up on {} with {}",
        args.runs, args.warmup, session.backend.name, session.strategy_name
    );
    println!("{:<10} {:>10} {:>10} {:>10} {:>8}", "phase", "median s", "min s", "max s", "spread");
    for (phase, s) in &summaries {
        println!("{phase:<10} {:>10.4} {:>10.4} {:>10.4} {:>7.1}%", s.median, s.min, s.max, s.spread_percent());
    }
    println!("wall time {wall:.2} s for {total} proofs; {steady:.3} s per proof after warm-up");
    Ok(ExitCode::SUCCESS)
}
