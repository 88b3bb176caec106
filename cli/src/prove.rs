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
use bellhop_engine::{Engine, JobRequest};
use bellperson::groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
use blstrs::{Bls12, Scalar};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::{warn_if_unverified, Context};
use bellhop_host::{phases::PhaseTable, pipeline::Randomness, prover::Blinding};

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
    // A Filecoin input makes one proof per partition, from partition 0.
    let (first_seed, count) = if spec.reads_input() {
        if args.count != 1 || args.seed != 0 {
            bail!("--count and --seed do not apply to {spec}: it proves every partition of its --input");
        }
        (0, spec.partitions(&input)?)
    } else {
        (args.seed, args.count)
    };
    let prepared = spec.prepare(&input)?;
    warn_if_unverified(&context.config);
    let randomness = match args.insecure_blinding_seed {
        Some(seed) => {
            eprintln!(
                "warning: r and s come from --insecure-blinding-seed {seed}: these proofs are not zero-knowledge"
            );
            seeded_blinding(seed, count)
        }
        None => Randomness::Os,
    };
    let start = Instant::now();
    // The daemon's engine, in process; its first synthesis reads the parameters meanwhile.
    let mut config = context.config.clone();
    config.pipeline.batch = args.batch.max(1);
    let engine = Engine::in_process(&config, &context.plugin_dir, randomness)?;
    if let Some(file) = &args.params {
        engine.read_params_from(&spec, file);
    }
    let status = engine.status();
    let backend = status.devices.first().map_or_else(String::new, |d| d.backend.clone());
    eprintln!("proving {count} x {spec} on {backend} with {}", status.strategy);
    let request = JobRequest {
        request_id: None,
        circuit: spec,
        input,
        partitions: count,
        first_seed,
        prepared: prepared.partitions,
        aggregation: prepared.aggregation,
        priority: None,
    };
    let submitted = engine.submit(request.clone()).map_err(|e| anyhow::anyhow!("{e}"))?;
    if request.aggregation.is_some() {
        eprintln!("its {count} partitions' proofs are aggregated (filecoin-proofs' SnarkPack)");
    }
    let proof = engine.proof_of(&submitted)?.context("the job completed without a proof")?;
    let elapsed = start.elapsed();
    // Stopped, so that the last proof's buffers are freed (and that phase recorded).
    drop(engine);
    // Each proof's public inputs, from the circuit (the engine checked each assignment's
    // against them).
    let public_inputs: Vec<Vec<Scalar>> = (0..count)
        .map(|k| {
            let input = request.prepared.as_ref().map_or(&request.input, |each| &each[k]);
            spec.public_inputs(first_seed + k as u64, input)
        })
        .collect::<Result<_, _>>()?;
    write_outputs(args, &proof, &public_inputs)?;
    let table = PhaseTable::from_records(&context.phases.take(), count);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&table)?);
    } else {
        print!("{table}");
        let verified = if config.pipeline.verify { ", each verified" } else { " (verification off)" };
        println!(
            "{count} proof(s) in {:.3} s{verified} (opening the backend and reading the parameters included)",
            elapsed.as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `proof` (the whole input's) to `--out` and each proof's `public_inputs` where
/// asked.
fn write_outputs(args: &ProveArgs, proof: &[u8], public_inputs: &[Vec<Scalar>]) -> Result<()> {
    if let Some(path) = &args.out {
        std::fs::write(path, proof).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let lines: Vec<String> = public_inputs.iter().map(|p| p.iter().map(hex).collect::<Vec<_>>().join(" ")).collect();
    if let Some(path) = &args.inputs {
        let mut file = File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        for line in &lines {
            writeln!(file, "{line}")?;
        }
    }
    if args.print_inputs {
        for (k, line) in lines.iter().enumerate() {
            println!("proof {k} public inputs: {line}");
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
