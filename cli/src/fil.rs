//! `bellhop fil`: real Filecoin inputs made with filecoin-proofs from a seed, and proofs
//! checked by filecoin-proofs' own verifiers.

use std::{fs, path::PathBuf, process::ExitCode, time::Instant};

use anyhow::{bail, Context as _, Result};
use bellhop_circuits::CircuitSpec;
use bellhop_filecoin::{curio, make, reference, synthetic, verify, ApiFeature, FilecoinSpec, Kind, SectorSize};

use super::Context;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// Seal a sector with filecoin-proofs (add_piece, PC1, PC2, C1), its data and ids drawn
    /// from SEED; writes DIR/c1.json (the input of porep:SIZE) and DIR/sector.json.
    Seal {
        /// A new directory for the sector's files.
        dir: PathBuf,
        /// 2KiB, 8MiB or 512MiB.
        #[arg(long, default_value = "2KiB")]
        sector_size: SectorSize,
        /// The sector number; draws its data, ticket and interactive seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The miner (actor id) it is sealed for; its prover id is made as Curio makes it.
        /// Sectors proved together in a PoSt have one miner.
        #[arg(long, default_value_t = 1000)]
        miner: u64,
        /// Seal with StackedDrg<size>V1_1_Feat_SyntheticPoRep, as Curio's
        /// `UseSyntheticPoRep` does (its synthetic proofs made after PreCommit), instead
        /// of StackedDrg<size>V1_1.
        #[arg(long, conflicts_with = "non_interactive")]
        synthetic_porep: bool,
        /// Seal with StackedDrg<size>V1_2_Feat_NonInteractivePoRep (NI-PoRep: its
        /// challenges drawn without the interactive seed; its proof the SnarkPack
        /// aggregate of its partitions' proofs).
        #[arg(long)]
        non_interactive: bool,
    },
    /// WinningPoSt vanilla proofs of sealed sectors: the input of winning-post:SIZE.
    WinningPost(PostArgs),
    /// WindowPoSt vanilla proofs of sealed sectors: the input of window-post:SIZE.
    WindowPost(PostArgs),
    /// A SnapDeals update of a sealed sector (new data drawn from SEED) and its vanilla
    /// partition proofs: the input of snap:SIZE.
    Snap {
        /// The sealed sector's directory (from `bellhop fil seal`).
        sector: PathBuf,
        /// Draws the new data.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where to write the input.
        #[arg(long)]
        out: PathBuf,
    },
    /// A synthetic C1 output of a sector size that cannot be sealed here: vanilla proofs
    /// of the real shape with field elements drawn from SEED, the input of
    /// synthetic-porep:SIZE for `bellhop bench` (nothing else proves it: it proves no
    /// sector).
    SyntheticC1 {
        /// 2KiB, 8MiB, 512MiB or 32GiB.
        #[arg(long, default_value = "32GiB")]
        sector_size: SectorSize,
        /// Draws every field element.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where to write it.
        #[arg(long)]
        out: PathBuf,
    },
    /// Curio's requests for a proof of CIRCUIT from INPUT, as `bellhop serve` takes them
    /// (`bellhop client prove --requests FILE`): one for PoRep, WinningPoSt and SnapDeals,
    /// one per partition for WindowPoSt. Written as a JSON list. synthetic-porep's, from a
    /// synthetic C1 output, is for measuring a daemon that admits it
    /// (`[daemon] synthetic_benchmarks`), which returns no proof.
    Request {
        /// The circuit, e.g. window-post:2KiB.
        circuit: String,
        /// The input (as for `bellhop prove --input`).
        #[arg(long)]
        input: PathBuf,
        /// For porep: the sealed sector's directory (its number and miner).
        #[arg(long)]
        sector: Option<PathBuf>,
        /// Where to write the requests.
        #[arg(long)]
        out: PathBuf,
    },
    /// Prove with filecoin-proofs' own prover (CPU) on the same input and parameter file,
    /// timed: the reference to compare Bellhop with.
    Reference {
        /// The circuit, e.g. porep:2KiB.
        circuit: String,
        /// The input (as for `bellhop prove --input`).
        #[arg(long)]
        input: PathBuf,
        /// For porep: the sealed sector's directory.
        #[arg(long)]
        sector: Option<PathBuf>,
        /// Write the proofs here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check proofs (as `bellhop prove --input --out` writes them) with filecoin-proofs'
    /// own verifier, which reads the circuit's v28-*.vk from `[params] dir`.
    Verify {
        /// The circuit, e.g. window-post:2KiB.
        circuit: String,
        /// The input the proofs were made from.
        #[arg(long)]
        input: PathBuf,
        /// The proofs.
        #[arg(long)]
        proof: PathBuf,
        /// For porep: the sealed sector's directory (its ids are not in the C1 output).
        #[arg(long)]
        sector: Option<PathBuf>,
        /// The file holds this many proofs of the input, one after another (as `bellhop
        /// client prove --out` writes the same request sent N times); each is checked.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        count: u32,
    },
}

#[derive(Debug, clap::Args)]
pub(super) struct PostArgs {
    /// The sealed sectors' directories (from `bellhop fil seal`); one prover id.
    #[arg(required = true)]
    sectors: Vec<PathBuf>,
    /// Draws the challenge randomness.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the input.
    #[arg(long)]
    out: PathBuf,
}

/// The Filecoin spec of `circuit`, or an error naming the Filecoin circuits (and one for
/// a circuit only benchmarks take).
fn filecoin_spec(circuit: &str) -> Result<FilecoinSpec> {
    let spec = any_filecoin_spec(circuit)?;
    CircuitSpec::Filecoin(spec).refuse_benchmark_only()?;
    Ok(spec)
}

/// The Filecoin spec of `circuit` (benchmark-only ones too), or an error naming the
/// Filecoin circuits.
fn any_filecoin_spec(circuit: &str) -> Result<FilecoinSpec> {
    match circuit.parse::<CircuitSpec>()? {
        CircuitSpec::Filecoin(filecoin) => Ok(filecoin),
        other => bail!("{other} is not a Filecoin circuit (porep, winning-post, window-post or snap, e.g. porep:2KiB)"),
    }
}

/// The size all of `sectors` were sealed with.
fn sectors_size(sectors: &[PathBuf]) -> Result<SectorSize> {
    let first = sectors.first().context("no sectors given")?;
    make::SealedSector::read(first)?.size()
}

fn write(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    bellhop_plugin_sdk::dirs::write_atomically(path, bytes).with_context(|| format!("writing {}", path.display()))
}

pub(super) fn run(context: &Context, command: Command) -> Result<ExitCode> {
    context.use_params_dir_for_filecoin_proofs()?;
    let start = Instant::now();
    match command {
        Command::Seal { dir, sector_size, seed, miner, synthetic_porep, non_interactive } => {
            let feature = synthetic_porep
                .then_some(ApiFeature::SyntheticPoRep)
                .or(non_interactive.then_some(ApiFeature::NonInteractivePoRep));
            let sector = make::seal(&dir, sector_size, seed, miner, feature)?;
            println!(
                "sealed sector {} ({sector_size}) in {} in {:.1} s; C1 output: {}",
                sector.sector_id,
                dir.display(),
                start.elapsed().as_secs_f64(),
                dir.join(make::C1_FILE).display()
            );
        }
        Command::WinningPost(args) => post(Kind::WinningPost, &args)?,
        Command::WindowPost(args) => post(Kind::WindowPost, &args)?,
        Command::Snap { sector, seed, out } => {
            write(&out, &make::snap(&sector, seed)?)?;
            println!("wrote {} (the input of snap) in {:.1} s", out.display(), start.elapsed().as_secs_f64());
        }
        Command::SyntheticC1 { sector_size, seed, out } => {
            write(&out, &synthetic::porep_c1(sector_size, seed)?)?;
            println!(
                "wrote {} in {:.1} s: a SYNTHETIC C1 output of a {sector_size} sector (it proves no sector), the input \
                 of `bellhop bench synthetic-porep:{sector_size}`",
                out.display(),
                start.elapsed().as_secs_f64()
            );
        }
        Command::Request { circuit, input, sector, out } => {
            let spec = any_filecoin_spec(&circuit)?;
            let input = fs::read(&input).with_context(|| format!("reading --input {}", input.display()))?;
            let sector = sector.as_deref().map(make::SealedSector::read).transpose()?;
            let requests = curio::requests(spec, &input, sector.as_ref())?;
            write(&out, &serde_json::to_vec_pretty(&requests)?)?;
            println!("wrote {} ({} request(s) for {spec})", out.display(), requests.len());
        }
        Command::Reference { circuit, input, sector, out } => {
            let spec = filecoin_spec(&circuit)?;
            let input = fs::read(&input).with_context(|| format!("reading --input {}", input.display()))?;
            let sector = sector.as_deref().map(make::SealedSector::read).transpose()?;
            let proofs = reference::prove(spec, &input, sector.as_ref())?;
            // Bytes, not proofs: an NI-PoRep's proof is one aggregate of its partitions'.
            println!(
                "filecoin-proofs' own prover: {} bytes of proof of {spec} in {:.3} s",
                proofs.len(),
                start.elapsed().as_secs_f64()
            );
            if let Some(out) = out {
                write(&out, &proofs)?;
            }
        }
        Command::Verify { circuit, input, proof, sector, count } => {
            let spec = filecoin_spec(&circuit)?;
            let input = fs::read(&input).with_context(|| format!("reading --input {}", input.display()))?;
            let proof_bytes = fs::read(&proof).with_context(|| format!("reading --proof {}", proof.display()))?;
            let sector = sector.as_deref().map(make::SealedSector::read).transpose()?;
            let count = count as usize;
            if proof_bytes.is_empty() || proof_bytes.len() % count != 0 {
                bail!(
                    "--proof {} holds {} bytes, which is not {count} proofs of equal length: check --count",
                    proof.display(),
                    proof_bytes.len()
                );
            }
            let mut accepted = 0;
            for one in proof_bytes.chunks(proof_bytes.len() / count) {
                accepted += usize::from(verify::verify(spec, &input, sector.as_ref(), one)?);
            }
            let verdict = if accepted == count { "accepted" } else { "REJECTED" };
            let of = if count == 1 { String::new() } else { format!("{accepted} of {count} proofs ") };
            println!("{}: {of}{verdict} by filecoin-proofs' verifier for {spec}", proof.display());
            if accepted != count {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn post(kind: Kind, args: &PostArgs) -> Result<()> {
    let start = Instant::now();
    let spec = FilecoinSpec { kind, sector_size: sectors_size(&args.sectors)? };
    write(&args.out, &make::post(spec, &args.sectors, args.seed)?)?;
    println!("wrote {} (the input of {spec}) in {:.1} s", args.out.display(), start.elapsed().as_secs_f64());
    Ok(())
}
