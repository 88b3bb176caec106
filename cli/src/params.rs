//! `bellhop params gen`: random (insecure) parameters for a catalog circuit; for a
//! Filecoin circuit under filecoin-proofs' file names, with the `.vk` beside.

use std::{path::PathBuf, process::ExitCode, time::Instant};

use anyhow::{Context as _, Result};
use bellhop_circuits::CircuitSpec;
use bellperson::groth16::{generate_random_parameters, Parameters};
use blstrs::Bls12;
use rand::{rngs::OsRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::Context;
use bellhop_host::{params, session::params_path};

#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// Generate parameters for a circuit from random toxic waste (INSECURE: for
    /// development and benchmarks only).
    Gen(GenArgs),
    /// Print the path of a circuit's parameter file in `[params] dir` (for a Filecoin
    /// circuit, filecoin-proofs' `v28-<identifier>.params`).
    Path {
        /// The circuit, e.g. porep:2KiB.
        circuit: String,
    },
}

#[derive(Debug, clap::Args)]
pub(super) struct GenArgs {
    /// The circuit, e.g. chain:65536 or sha256-merkle:2.
    circuit: String,
    /// Where to write them (default: the circuit's file in `[params] dir`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Derive the toxic waste from this seed (reproducible, and even less secret).
    #[arg(long)]
    seed: Option<u64>,
}

/// Generates parameters for `spec`, showing a spinner while bellperson works.
pub(super) fn generate(spec: &CircuitSpec, rng: &mut impl RngCore) -> Result<Parameters<Bls12>> {
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_message(format!("generating parameters for {spec} (insecure: random toxic waste)"));
    spinner.enable_steady_tick(std::time::Duration::from_millis(200));
    let params = generate_random_parameters::<Bls12, _, _>(spec.setup_circuit()?, rng)
        .with_context(|| format!("parameter generation for {spec} failed"));
    spinner.finish_and_clear();
    params
}

pub(super) fn run(context: &Context, command: Command) -> Result<ExitCode> {
    let args = match command {
        Command::Gen(args) => args,
        Command::Path { circuit } => {
            println!("{}", params_path(&context.config, &circuit.parse()?, None)?.display());
            return Ok(ExitCode::SUCCESS);
        }
    };
    let spec: CircuitSpec = args.circuit.parse()?;
    let path = params_path(&context.config, &spec, args.out.as_deref())?;
    let start = Instant::now();
    let params = match args.seed {
        Some(seed) => generate(&spec, &mut ChaCha20Rng::seed_from_u64(seed))?,
        None => generate(&spec, &mut OsRng)?,
    };
    let vk = params::write_for_circuit(&spec, &params, &path)?;
    println!(
        "wrote {} for {spec} in {:.1} s (insecure: random toxic waste; for development only)",
        path.display(),
        start.elapsed().as_secs_f64()
    );
    if let Some(vk) = vk {
        println!("wrote {} (the verifying key filecoin-proofs' verifiers read)", vk.display());
    }
    Ok(ExitCode::SUCCESS)
}
