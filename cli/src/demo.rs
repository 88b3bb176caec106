//! `bellhop demo`: a whole proof on the embedded CPU backend, from fresh parameters.

use std::{process::ExitCode, sync::Arc, time::Instant};

use anyhow::{Context as _, Result};
use bellhop_circuits::CircuitSpec;
use bellhop_engine::{Engine, JobRequest};
use rand::rngs::OsRng;

use super::{params::generate, prove::hex, Context};
use bellhop_host::{
    config::Config,
    params::{self, Srs},
    phases::PhaseTable,
    pipeline::Randomness,
};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The circuit to prove.
    #[arg(long, default_value = "chain:2^15")]
    circuit: String,
}

pub(super) fn run(context: &Context, args: &Args) -> Result<ExitCode> {
    let spec: CircuitSpec = args.circuit.parse()?;
    let start = Instant::now();
    println!("bellhop demo: one Groth16 proof of {spec} on the embedded cpu backend");

    let dir = tempfile::tempdir()?;
    let path = dir.path().join(spec.params_file_name()?);
    let t = Instant::now();
    params::write(&generate(&spec, &mut OsRng)?, &path)?;
    println!("  parameters generated in {:.1} s (insecure: random toxic waste)", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let srs = Srs::read(&path, &spec.to_string(), false)?;
    println!("  parameters read back in {:.2} s", t.elapsed().as_secs_f64());

    // The daemon's engine in process, on the embedded plugins whatever the config names.
    let mut config = Config::default();
    config.params.dir = dir.path().to_path_buf();
    let engine = Engine::in_process(&config, &context.plugin_dir, Randomness::Os)?;
    engine.provide_params(&spec, Arc::new(srs));
    let t = Instant::now();
    let submitted = engine.submit(JobRequest::new(spec, Vec::new())?).map_err(|e| anyhow::anyhow!("{e}"))?;
    let proof = engine.proof_of(&submitted)?.context("the job completed without a proof")?;
    let prove_time = t.elapsed();
    drop(engine);
    println!("  proved and verified in {:.2} s", prove_time.as_secs_f64());
    println!("  public input: {}", spec.public_inputs(0, &[])?.iter().map(hex).collect::<Vec<_>>().join(" "));
    println!("  proof (192 bytes): 0x{}", proof.iter().map(|b| format!("{b:02x}")).collect::<String>());
    println!();
    print!("{}", PhaseTable::from_records(&context.phases.take(), 1));
    println!("\ndone in {:.1} s", start.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}
