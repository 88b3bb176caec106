//! `bellperson-peer`: proves a catalog circuit with bellperson's own prover, reading the
//! same parameter file as `bellhop`, and prints one JSON object of wall times.
//!
//! Which prover depends on the build: default features give bellperson's CPU prover (also
//! what an `opencl` build does with `BELLMAN_NO_GPU=1`), `opencl` its OpenCL GPU path,
//! `supraseal` supraseal-c2.

use std::{fs::File, io::BufReader, path::PathBuf, time::Instant};

use anyhow::{ensure, Context, Result};
use bellhop_circuits::CircuitSpec;
use bellperson::groth16::{self, prepare_verifying_key, verify_proof, VerifyingKey};
use blstrs::Bls12;
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// A catalog circuit, e.g. chain:1048576.
    circuit: CircuitSpec,
    /// Its parameter file (bellperson's format, as `bellhop params gen` writes it).
    #[arg(long)]
    params: PathBuf,
    /// Proofs after the first.
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

/// The prover this build uses, as the report names it.
fn prover_name() -> &'static str {
    if cfg!(feature = "supraseal") {
        "bellperson+supraseal-c2"
    } else if cfg!(feature = "opencl") && std::env::var_os("BELLMAN_NO_GPU").is_none() {
        "bellperson+opencl"
    } else {
        "bellperson-cpu"
    }
}

#[cfg(feature = "supraseal")]
type Params = groth16::SuprasealParameters<Bls12>;
#[cfg(not(feature = "supraseal"))]
type Params = groth16::MappedParameters<Bls12>;

fn load(path: &PathBuf) -> Result<Params> {
    #[cfg(feature = "supraseal")]
    let params = groth16::SuprasealParameters::new(path.clone());
    #[cfg(not(feature = "supraseal"))]
    let params = groth16::Parameters::<Bls12>::build_mapped_parameters(path.clone(), false);
    params.with_context(|| format!("cannot read parameters {}", path.display()))
}

fn prove(spec: &CircuitSpec, params: &Params, seed: u64) -> Result<(groth16::Proof<Bls12>, Vec<blstrs::Scalar>)> {
    let instance = spec.synthetic(seed).expect("a synthetic circuit");
    let rng = &mut rand::thread_rng();
    // The same call in every build: with `supraseal` it takes the SuprasealParameters.
    let proof = groth16::create_random_proof(instance.circuit, params, rng)?;
    Ok((proof, instance.public_inputs))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let start = Instant::now();
    let vk = VerifyingKey::<Bls12>::read(BufReader::new(File::open(&args.params)?))?;
    let pvk = prepare_verifying_key(&vk);
    let params = load(&args.params)?;
    let load_s = start.elapsed().as_secs_f64();
    let mut times = Vec::new();
    for seed in 0..=args.runs as u64 {
        let t = Instant::now();
        let (proof, inputs) = prove(&args.circuit, &params, seed)?;
        times.push(t.elapsed().as_secs_f64());
        ensure!(verify_proof(&pvk, &proof, &inputs)?, "proof {seed} does not verify");
    }
    let mut warm = times[1..].to_vec();
    warm.sort_by(f64::total_cmp);
    let median = warm.get(warm.len() / 2).copied().unwrap_or(f64::NAN);
    println!(
        "{}",
        serde_json::json!({
            "prover": prover_name(),
            "circuit": args.circuit.to_string(),
            "load_s": load_s,
            "first_proof_s": times[0],
            "process_to_first_proof_s": load_s + times[0],
            "proofs_s": &times[1..],
            "median_s": median,
        })
    );
    Ok(())
}
