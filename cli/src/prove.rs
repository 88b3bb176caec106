//! `bellhop prove` and `bellhop verify`.

use std::{
    fs::File,
    io::{BufReader, Write},
    path::PathBuf,
    process::ExitCode,
    time::Instant,
};

use anyhow::{bail, Context as _, Result};
use bellhop_circuits::CircuitSpec;
use bellhop_plugin_sdk::strategy::Job;
use bellperson::groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::{Context, Proving};
use bellhop_host::{
    phases::PhaseTable,
    pipeline::{self, ProvedJob, Randomness},
    prover::Blinding,
};

#[derive(Debug, clap::Args)]
pub(super) struct ProveArgs {
    /// The circuit, e.g. chain:65536 or sha256-merkle:2.
    circuit: String,
    /// The input of a Filecoin circuit (a C1 output, or vanilla proofs from `bellhop
    /// fil`): one proof per partition, written in partition order as filecoin-proofs
    /// expects them.
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// The witness seed of the first proof; proof i uses seed + i.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// How many proofs.
    #[arg(long, default_value_t = 1)]
    count: usize,
    /// Jobs synthesized together in one strategy call.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// The parameter file (default: the circuit's file in `[params] dir`).
    #[arg(long)]
    params: Option<PathBuf>,
    /// Write the proofs here, 192 bytes each (bellperson's encoding), in order; for a
    /// NonInteractivePoRep, their SnarkPack aggregate (its proof, as filecoin-proofs makes it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the public inputs here: one line per proof, hex field elements (big-endian).
    #[arg(long)]
    inputs: Option<PathBuf>,
    /// Print each proof's public inputs.
    #[arg(long)]
    print_inputs: bool,
    /// Print the phase table as JSON.
    #[arg(long)]
    json: bool,
    /// For comparing backends only: r and s of every proof from this seed instead of the
    /// OS CSPRNG, so that two runs give the same bytes. Such proofs are NOT zero-knowledge.
    #[arg(long, value_name = "SEED")]
    insecure_blinding_seed: Option<u64>,
}

/// `count` blinding pairs drawn from ChaCha20 seeded with `seed`.
fn seeded_blinding(seed: u64, count: usize) -> Randomness {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    Randomness::Fixed(
        (0..count).map(|_| Blinding { r: Scalar::random(&mut rng), s: Scalar::random(&mut rng) }).collect(),
    )
}

/// Jobs in batches, each synthesized in one strategy call.
pub(super) type Batches = Vec<Vec<Job>>;

/// Jobs for `count` proofs of `spec` from `seed` (for a Filecoin circuit: partitions
/// `seed..` of `input`, each reading its own prepared input where `spec` prepares one), in
/// batches of `batch`; and what the proof of the whole input is made with besides theirs
/// ([`CircuitSpec::job_proof`]).
pub(super) fn batches(
    spec: &CircuitSpec,
    seed: u64,
    count: usize,
    batch: usize,
    input: &[u8],
) -> Result<(Batches, Option<Vec<u8>>)> {
    let prepared = spec.prepare(input)?;
    let input_of = |k: u64| prepared.partitions.as_ref().map_or(input, |each| &each[k as usize][..]);
    let jobs: Vec<Job> = (0..count as u64)
        .map(|i| Job { circuit: spec.to_string().into(), seed: seed + i, input: input_of(seed + i).to_vec().into() })
        .collect();
    Ok((jobs.chunks(batch.max(1)).map(<[Job]>::to_vec).collect(), prepared.aggregation))
}

/// A field element as 0x-prefixed big-endian hex.
pub(super) fn hex(x: &Scalar) -> String {
    format!("0x{}", x.to_bytes_be().iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn parse_hex(s: &str) -> Result<Scalar> {
    let digits = s.strip_prefix("0x").unwrap_or(s);
    if digits.len() != 64 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("`{s}` is not a field element: 64 hex digits (32 bytes, big-endian), with or without 0x");
    }
    let mut bytes = [0u8; 32];
    for (i, byte) in bytes.iter_mut().enumerate() {
        // Every digit is ASCII, so each pair is a character boundary.
        *byte = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16)?;
    }
    Option::from(Scalar::from_bytes_be(&bytes)).with_context(|| format!("`{s}` is not below the field modulus"))
}

pub(super) fn prove(context: &Context, args: &ProveArgs) -> Result<ExitCode> {
    // The circuit and its input before the parameters, which may take a minute and most
    // of the memory.
    let spec: CircuitSpec = args.circuit.parse()?;
    spec.refuse_benchmark_only()?;
    // An NI-PoRep's aggregation reads its verifying key and SRS where its parameters are.
    if spec.reads_input() {
        context.use_params_dir_for_filecoin_proofs()?;
    }
    let input = match &args.input {
        Some(path) => std::fs::read(path).with_context(|| format!("reading --input {}", path.display()))?,
        None if spec.reads_input() => bail!("{spec} reads its witness from a file: give it with --input FILE"),
        None => Vec::new(),
    };
    let partitions = spec.partitions(&input)?;
    // A Filecoin input makes one proof per partition, from partition 0.
    let (first, count) = if spec.reads_input() {
        if args.count != 1 || args.seed != 0 {
            bail!("--count and --seed do not apply to {spec}: it proves every partition of its --input");
        }
        (0, partitions)
    } else {
        (args.seed, args.count)
    };
    let (batches, aggregation) = batches(&spec, first, count, args.batch, &input)?;
    let mut batches = batches.into_iter();
    let first_batch = batches.next();
    let start = Instant::now();
    // The first batch is synthesized while the backend opens and the parameters are read.
    let (Proving { spec, session, srs, mut options }, first_synthesized) = context.proving_while(
        spec,
        |spec| bellhop_host::session::load_params(&context.config, spec, args.params.as_deref()),
        |strategy| first_batch.map(|jobs| pipeline::synthesize_batch(strategy, 0, 0, &jobs)),
    )?;
    if let Some(seed) = args.insecure_blinding_seed {
        eprintln!("warning: r and s come from --insecure-blinding-seed {seed}: these proofs are not zero-knowledge");
        options.randomness = seeded_blinding(seed, count);
    }
    eprintln!("proving {count} x {spec} on {} with {}", session.backend.name, session.strategy_name);
    let (backend, strategy) = (&session.backend, session.strategy.as_ref());
    let proved = match first_synthesized {
        Some(synthesized) => {
            pipeline::run_synthesized_first(backend, strategy, &srs, synthesized?, batches.collect(), &options, &|_| {})
        }
        None => pipeline::run(backend, strategy, &srs, Vec::new(), &options, &|_| {}),
    }?;
    let elapsed = start.elapsed();
    let partitions: Vec<u8> = proved.iter().flat_map(ProvedJob::proof_bytes).collect();
    if aggregation.is_some() {
        eprintln!("aggregating the {} partitions' proofs (filecoin-proofs' SnarkPack)", proved.len());
    }
    let proof = spec.job_proof(aggregation.as_deref(), partitions)?;
    write_outputs(args, &proof, &proved)?;
    let table = PhaseTable::from_records(&context.phases.take(), proved.len());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&table)?);
    } else {
        print!("{table}");
        let verified = if options.verify { ", each verified" } else { " (verification off)" };
        println!(
            "{} proof(s) in {:.3} s{verified} (opening the backend and reading the parameters included)",
            proved.len(),
            elapsed.as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `proof` (the whole input's) to `--out` and the proofs' public inputs where asked.
fn write_outputs(args: &ProveArgs, proof: &[u8], proved: &[ProvedJob]) -> Result<()> {
    if let Some(path) = &args.out {
        std::fs::write(path, proof).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let lines: Vec<String> =
        proved.iter().map(|p| p.public_inputs.iter().map(hex).collect::<Vec<_>>().join(" ")).collect();
    if let Some(path) = &args.inputs {
        let mut file = File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        for line in &lines {
            writeln!(file, "{line}")?;
        }
    }
    if args.print_inputs {
        for (p, line) in proved.iter().zip(&lines) {
            println!("proof {} public inputs: {line}", p.index);
        }
    }
    Ok(())
}

#[derive(Debug, clap::Args)]
pub(super) struct VerifyArgs {
    /// The parameter file whose verifying key to use.
    #[arg(long)]
    params: PathBuf,
    /// The proofs: 192 bytes each, concatenated.
    #[arg(long)]
    proof: PathBuf,
    /// The public inputs: one line per proof, hex field elements.
    #[arg(long)]
    inputs: PathBuf,
}

pub(super) fn verify(args: &VerifyArgs) -> Result<ExitCode> {
    let file = File::open(&args.params).with_context(|| format!("cannot open {}", args.params.display()))?;
    let vk = VerifyingKey::<Bls12>::read(BufReader::new(file))
        .with_context(|| format!("{} does not start with a verifying key", args.params.display()))?;
    let pvk = prepare_verifying_key(&vk);
    let proofs = std::fs::read(&args.proof).with_context(|| format!("cannot read {}", args.proof.display()))?;
    if proofs.is_empty() || proofs.len() % 192 != 0 {
        bail!("{} holds {} bytes, not a whole number of 192-byte proofs", args.proof.display(), proofs.len());
    }
    let inputs =
        std::fs::read_to_string(&args.inputs).with_context(|| format!("cannot read {}", args.inputs.display()))?;
    let lines: Vec<&str> = inputs.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() != proofs.len() / 192 {
        bail!("{} proofs but {} lines of public inputs", proofs.len() / 192, lines.len());
    }
    let mut all_valid = true;
    for (i, (bytes, line)) in proofs.chunks(192).zip(lines).enumerate() {
        let proof = Proof::<Bls12>::read(bytes).with_context(|| format!("proof {i} is not a valid encoding"))?;
        let public: Vec<Scalar> = line.split_whitespace().map(parse_hex).collect::<Result<_>>()?;
        let valid = verify_proof(&pvk, &proof, &public).map_err(|e| anyhow::anyhow!("proof {i}: {e}"))?;
        println!("proof {i}: {}", if valid { "valid" } else { "INVALID" });
        all_valid &= valid;
    }
    Ok(if all_valid { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_inputs_that_are_not_hex_are_errors() {
        let one = format!("0x{}1", "0".repeat(63));
        assert_eq!(parse_hex(&one).unwrap(), Scalar::from(1u64));
        for bad in ["é".repeat(32), format!("0x{}", "ü".repeat(32)), "zz".repeat(32), "00".into()] {
            let e = parse_hex(&bad).unwrap_err().to_string();
            assert!(e.contains("64 hex digits"), "{bad}: {e}");
        }
        assert!(parse_hex(&"ff".repeat(32)).unwrap_err().to_string().contains("modulus"));
    }
}
