//! `bellhop demo`: a whole proof on the embedded CPU backend, from fresh parameters.

use std::{process::ExitCode, time::Instant};

use anyhow::Result;
use bellhop_circuits::CircuitSpec;
use rand::rngs::OsRng;

use super::{params::generate, prove::batches, prove::hex, Context};
use bellhop_host::{
    config::Config,
    params::{self, Srs},
    phases::PhaseTable,
    pipeline::{self, PipelineOptions, Randomness},
    session::Session,
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

    // The embedded plugins, whatever the config names.
    let session = Session::open(&Config::default(), &context.plugin_dir)?;
    let options = PipelineOptions { lookahead: 0, verify: true, randomness: Randomness::Os };
    let t = Instant::now();
    let proved = pipeline::run(
        &session.backend,
        session.strategy.as_ref(),
        &srs,
        batches(&spec, 0, 1, 1, &[])?.0,
        &options,
        &|_| {},
    )?;
    let prove_time = t.elapsed();
    let proof = &proved[0];
    println!("  proved and verified in {:.2} s", prove_time.as_secs_f64());
    println!("  public input: {}", proof.public_inputs.iter().map(hex).collect::<Vec<_>>().join(" "));
    println!("  proof (192 bytes): 0x{}", proof.proof_bytes().iter().map(|b| format!("{b:02x}")).collect::<String>());
    println!();
    print!("{}", PhaseTable::from_records(&context.phases.take(), proved.len()));
    println!("\ndone in {:.1} s", start.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}
