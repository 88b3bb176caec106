//! Whole proofs, synthesis included, Bellhop (embedded CPU backend, baseline strategy)
//! against bellperson 0.27's CPU prover, on the same circuit and parameters in one run.
//!
//! `cargo bench -p bellhop-benches --bench end_to_end`.

use bellhop_circuits::CircuitSpec;
use bellhop_host::{
    config::Config,
    params::{self, Srs},
    pipeline::{self, PipelineOptions, Randomness},
    session::Session,
};
use bellhop_plugin_sdk::strategy::Job;
use bellperson::groth16::{create_random_proof, generate_random_parameters};
use blstrs::Bls12;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::{rngs::OsRng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn end_to_end(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let session = Session::open(&Config::default(), dir.path()).expect("the embedded plugins open");
    let mut group = c.benchmark_group("prove");
    group.sample_size(10);
    for circuit in ["chain:2^16", "sha256-merkle:2"] {
        let spec: CircuitSpec = circuit.parse().expect("a catalog circuit");
        let params = generate_random_parameters::<Bls12, _, _>(
            spec.synthetic(0).expect("a synthetic circuit").circuit,
            &mut ChaCha20Rng::seed_from_u64(1),
        )
        .expect("parameters");
        let path = dir.path().join(spec.params_file_name().expect("a catalog circuit"));
        params::write(&params, &path).expect("parameters written");
        let srs = Srs::read(&path, &spec.to_string(), false).expect("parameters read");
        let options = PipelineOptions { verify: false, randomness: Randomness::Os };
        let name = spec.to_string();
        group.bench_function(BenchmarkId::new("bellhop-cpu", &name), |b| {
            b.iter(|| {
                let jobs = vec![vec![Job { circuit: name.clone().into(), seed: 1, input: Default::default() }]];
                pipeline::run(&session.backend, session.strategy.as_ref(), &srs, jobs, &options, &|_| {})
                    .expect("a proof")
            })
        });
        group.bench_function(BenchmarkId::new("bellperson", &name), |b| {
            b.iter(|| {
                create_random_proof(spec.synthetic(1).expect("a synthetic circuit").circuit, &params, &mut OsRng)
                    .expect("a proof")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, end_to_end);
criterion_main!(benches);
