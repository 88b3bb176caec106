//! `bellhop params gen`: random (insecure) parameters for a catalog circuit; for a
//! Filecoin circuit under filecoin-proofs' file names, with the `.vk` beside. `params srs`:
//! an insecure SnarkPack SRS under filecoin-proofs' name.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Instant,
};

use anyhow::{bail, Context as _, Result};
use bellhop_circuits::CircuitSpec;
use bellperson::groth16::{generate_random_parameters, Parameters};
use blstrs::Bls12;
use rand::{rngs::OsRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::Context;
use bellhop_host::{params, session::params_path, synthetic_params};

#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// Generate parameters for a circuit from random toxic waste (INSECURE: for
    /// development and benchmarks only).
    Gen(GenArgs),
    /// Write SYNTHETIC parameters for a synthetic-porep circuit: every section of the
    /// length its circuit needs, points cycled from a pool of random ones, so that proving
    /// with them costs what proving with the real file does (for sizes whose published
    /// parameters cannot be had here). Proofs made with them verify against nothing.
    Synthetic(SyntheticArgs),
    /// Write a SnarkPack SRS from random toxic waste (INSECURE: for development only) as
    /// filecoin-proofs' v28-fil-inner-product-v1.srs, with which NonInteractivePoRep's
    /// partition proofs are aggregated; operators fetch the published one.
    Srs(SrsArgs),
    /// Print the path of a circuit's parameter file in `[params] dir` (for a Filecoin
    /// circuit, filecoin-proofs' `v28-<identifier>.params`).
    Path {
        /// The circuit, e.g. porep:2KiB.
        circuit: String,
    },
    /// Check every point of a circuit's parameter file: on the curve and in its prime-order
    /// subgroup (proving reads points checked for the curve only, which is faster).
    Check {
        /// The circuit, e.g. porep:2KiB.
        circuit: String,
        /// The file (default: the circuit's file in `[params] dir`).
        #[arg(long)]
        params: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
pub(super) struct GenArgs {
    /// The circuit, e.g. chain:65536 or sha256-merkle:2.
    circuit: String,
    /// Where to write them (default: the circuit's file in `[params] dir`).
    #[arg(long, conflicts_with = "dir")]
    out: Option<PathBuf>,
    /// Write the circuit's file into this directory instead of `[params] dir` (the only
    /// way, with --out, to write into filecoin-proofs' parameter directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Replace files that exist already.
    #[arg(long)]
    force: bool,
    /// Derive the toxic waste from this seed (reproducible, and even less secret).
    #[arg(long)]
    seed: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub(super) struct SyntheticArgs {
    /// The circuit, e.g. synthetic-porep:32GiB.
    circuit: String,
    /// Where to write them (default: the circuit's file in `[params] dir`).
    #[arg(long, conflicts_with = "dir")]
    out: Option<PathBuf>,
    /// Write the circuit's file into this directory instead of `[params] dir`.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Replace a file that exists already.
    #[arg(long)]
    force: bool,
    /// Draws the points.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Debug, clap::Args)]
pub(super) struct SrsArgs {
    /// Write it into this directory instead of `[params] dir`.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The most proofs it aggregates (a 32 GiB NI-PoRep has 126 partitions, padded to 128).
    #[arg(long, default_value_t = 256)]
    proofs: usize,
    /// Replace a file that exists already.
    #[arg(long)]
    force: bool,
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
        Command::Synthetic(args) => return synthetic(context, &args),
        Command::Srs(args) => return srs(context, &args),
        Command::Path { circuit } => {
            println!("{}", params_path(&context.config, &circuit.parse()?, None)?.display());
            return Ok(ExitCode::SUCCESS);
        }
        Command::Check { circuit, params } => {
            let spec: CircuitSpec = circuit.parse()?;
            let path = params_path(&context.config, &spec, params.as_deref())?;
            let start = Instant::now();
            let srs = params::Srs::read(&path, &spec.to_string(), true)?;
            let points = srs.h.len() + srs.l.len() + srs.a.len() + srs.b_g1.len() + srs.b_g2.len() + srs.vk.ic.len();
            println!(
                "{}: all {points} points on the curve and in their subgroups ({:.1} s)",
                path.display(),
                start.elapsed().as_secs_f64()
            );
            return Ok(ExitCode::SUCCESS);
        }
    };
    let spec: CircuitSpec = args.circuit.parse()?;
    let path = match (&args.out, &args.dir) {
        (Some(out), _) => out.clone(),
        (None, Some(dir)) => dir.join(spec.params_file_name()?),
        (None, None) => {
            // Filecoin's verifiers trust the files they find there; the catalog's are
            // nothing they read.
            if spec.reads_input() {
                refuse_filecoin_proofs_dir(&context.config.params.dir)?;
            }
            params_path(&context.config, &spec, None)?
        }
    };
    if !args.force {
        refuse_to_replace(&spec, &path)?;
    }
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

fn synthetic(context: &Context, args: &SyntheticArgs) -> Result<ExitCode> {
    let spec: CircuitSpec = args.circuit.parse()?;
    if !spec.benchmark_only() {
        bail!(
            "synthetic parameters are made only for synthetic-porep circuits (e.g. synthetic-porep:32GiB), whose \
             proofs prove nothing; {spec} is proved with real ones: the published file for a Filecoin circuit, or \
             `bellhop params gen {spec}`"
        );
    }
    let path = match (&args.out, &args.dir) {
        (Some(out), _) => out.clone(),
        (None, Some(dir)) => dir.join(spec.params_file_name()?),
        (None, None) => params_path(&context.config, &spec, None)?,
    };
    if !args.force && path.exists() {
        bail!("{} exists: pass --force to replace it", path.display());
    }
    let start = Instant::now();
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(std::time::Duration::from_millis(200));
    spinner.set_message(format!("counting the constraints of {spec}"));
    let shape = spec.shape()?;
    let counted = start.elapsed().as_secs_f64();
    spinner.set_message(format!("writing SYNTHETIC parameters for {spec}"));
    let bytes = synthetic_params::write(&shape.into(), args.seed, &path)?;
    spinner.finish_and_clear();
    println!(
        "{spec}: {} constraints (domain 2^{}), {} public inputs, {} private variables ({} in A, {} in B); \
         counted in {counted:.1} s",
        shape.constraints,
        shape.domain().trailing_zeros(),
        shape.inputs,
        shape.aux,
        shape.a_aux,
        shape.b_aux
    );
    println!(
        "wrote {} ({:.2} GB) in {:.1} s: SYNTHETIC parameters, for benchmarks only",
        path.display(),
        bytes as f64 / 1e9,
        start.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// `params srs`: an insecure SnarkPack SRS in `--dir` or `[params] dir`.
fn srs(context: &Context, args: &SrsArgs) -> Result<ExitCode> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => {
            refuse_filecoin_proofs_dir(&context.config.params.dir)?;
            context.config.params.dir.clone()
        }
    };
    let path = dir.join(bellhop_filecoin::aggregate::SRS_FILE);
    if path.exists() && !args.force {
        bail!(
            "{} exists: `params srs` does not replace it (it may be the published one); pass --force to replace it \
             with an insecure one",
            path.display()
        );
    }
    if args.proofs < 2 {
        bail!("--proofs {}: an SRS aggregates at least 2 proofs", args.proofs);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let start = Instant::now();
    let proofs = args.proofs.next_power_of_two();
    let srs = match args.seed {
        Some(seed) => bellhop_filecoin::aggregate::insecure_srs(proofs, &mut ChaCha20Rng::seed_from_u64(seed)),
        None => bellhop_filecoin::aggregate::insecure_srs(proofs, &mut OsRng),
    }
    .context("serializing the SRS")?;
    // Whole or not at all: the scripts take an SRS file that exists for a finished one.
    bellhop_plugin_sdk::dirs::write_atomically(&path, &srs)
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!(
        "wrote {} for up to {proofs} proofs in {:.1} s (insecure: random toxic waste; for development only)",
        path.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Insecure parameters go into filecoin-proofs' directory only when `--dir` or `--out`
/// names it: `[params] dir` defaults to it, and its published files must not be replaced.
fn refuse_filecoin_proofs_dir(dir: &Path) -> Result<()> {
    let published = bellhop_filecoin::filecoin_proofs_parameter_dir();
    let same = match (dir.canonicalize(), published.canonicalize()) {
        (Ok(dir), Ok(published)) => dir == published,
        _ => dir == published,
    };
    if same {
        bail!(
            "`[params] dir` ({}) is filecoin-proofs' parameter directory, whose published parameters its verifiers \
             trust: insecure parameters are not written there unless asked. Set `[params] dir` to another \
             directory, or pass --dir {} to write there all the same",
            dir.display(),
            dir.display()
        );
    }
    Ok(())
}

/// Fails if `path` (or the `.vk` a Filecoin circuit's file has beside it) exists.
fn refuse_to_replace(spec: &CircuitSpec, path: &Path) -> Result<()> {
    let vk = spec.reads_input().then(|| path.with_extension("vk"));
    for file in std::iter::once(path.to_path_buf()).chain(vk) {
        if file.exists() {
            bail!(
                "{} exists: `params gen` does not replace parameter files (they may be the published ones); \
                 pass --force to replace it with insecure parameters",
                file.display()
            );
        }
    }
    Ok(())
}
