//! What the host's test files share; each uses a part of it.
#![allow(dead_code)]

pub mod one_call_cpu;

use std::path::Path;

use bellhop_baseline::Baseline;
use bellhop_circuits::CircuitSpec;
use bellhop_host::{
    params::{self, Srs},
    pipeline::{PipelineOptions, Randomness},
    prover::Blinding,
};
use bellhop_plugin_sdk::{
    strategy::{Job, StrategyPlugin},
    OpenRequest,
};
use bellperson::groth16::generate_random_parameters;
use blstrs::{Bls12, Scalar};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Parameters of `spec` from `seed`, written in `dir` under their usual name and read back.
pub fn params_in(dir: &Path, spec: &CircuitSpec, seed: u64) -> Srs {
    let path = dir.join(spec.params_file_name().unwrap());
    let p = generate_random_parameters::<Bls12, _, _>(
        spec.synthetic(0).expect("a synthetic circuit").circuit,
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .unwrap();
    params::write(&p, &path).unwrap();
    Srs::read(&path, &spec.to_string(), false).unwrap()
}

/// One job of `spec` with `seed`.
pub fn job(spec: &CircuitSpec, seed: u64) -> Job {
    Job { circuit: spec.to_string().into(), seed, input: Default::default() }
}

/// Two batches of two `poseidon-merkle:3` jobs with fixed r and s, and their
/// parameters in `dir`.
pub fn two_batches(dir: &Path) -> (Srs, Vec<Vec<Job>>, PipelineOptions) {
    let spec: CircuitSpec = "poseidon-merkle:3".parse().unwrap();
    let srs = params_in(dir, &spec, 3);
    let batches = vec![vec![job(&spec, 1), job(&spec, 2)], vec![job(&spec, 3), job(&spec, 4)]];
    let blindings = (0..4u64).map(|i| Blinding { r: Scalar::from(10 + i), s: Scalar::from(20 + i) }).collect();
    (srs, batches, PipelineOptions { verify: true, randomness: Randomness::Fixed(blindings) })
}

/// The baseline strategy on two threads.
pub fn baseline() -> Baseline {
    Baseline::open(&OpenRequest { device: 0, threads: 2, options: "".into() }, Default::default()).unwrap()
}
