//! Proofs through the loaded `.so` plugins are the same bytes as through the embedded ones.

use bellhop_circuits::CircuitSpec;
use bellhop_host::{
    config::Config,
    params::{self, Srs},
    pipeline::{self, PipelineOptions, Randomness},
    prover::Blinding,
    session::Session,
};
use bellhop_plugin_sdk::strategy::Job;
use bellhop_tests::{build_dir, built_library};
use bellperson::groth16::generate_random_parameters;
use blstrs::{Bls12, Scalar};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn proof_bytes(config: &Config, srs: &Srs, spec: &CircuitSpec) -> Vec<u8> {
    let session = Session::open(config, &build_dir()).unwrap();
    let jobs = vec![vec![Job { circuit: spec.to_string().into(), seed: 9, input: Default::default() }]];
    let blinding = Blinding { r: Scalar::from(5u64), s: Scalar::from(6u64) };
    let options = PipelineOptions { verify: true, randomness: Randomness::Fixed(vec![blinding]) };
    let proved = pipeline::run(&session.backend, session.strategy.as_ref(), srs, jobs, &options, &|_| {}).unwrap();
    proved[0].proof_bytes()
}

/// Parameters for `spec`, written under the build directory.
fn parameters(spec: &CircuitSpec) -> Srs {
    let dir = build_dir().join("plugin-proofs");
    let path = dir.join(spec.params_file_name().unwrap());
    let params = generate_random_parameters::<Bls12, _, _>(
        spec.synthetic(0).expect("a synthetic circuit").circuit,
        &mut ChaCha20Rng::seed_from_u64(1),
    )
    .unwrap();
    params::write(&params, &path).unwrap();
    Srs::read(&path, &spec.to_string(), false).unwrap()
}

#[test]
fn loaded_plugins_prove_like_embedded_ones() {
    let spec: CircuitSpec = "poseidon-merkle:4".parse().unwrap();
    let srs = parameters(&spec);
    let embedded = proof_bytes(&Config::default(), &srs, &spec);
    let mut loaded = Config::default();
    loaded.backend.plugin = built_library("bellhop_backend_cpu").display().to_string();
    loaded.synthesis.strategy = built_library("bellhop_strategy_baseline").display().to_string();
    assert_eq!(proof_bytes(&loaded, &srs, &spec), embedded);
}

/// The template backend (naive MSMs, a textbook NTT, the provided compute_h), loaded by
/// name, proves a catalog circuit with the CPU backend's bytes.
#[test]
fn the_template_backend_proves_like_the_cpu() {
    let spec: CircuitSpec = "chain:800".parse().unwrap();
    let srs = parameters(&spec);
    let mut template = Config::default();
    template.backend.plugin = "template".into();
    assert_eq!(proof_bytes(&template, &srs, &spec), proof_bytes(&Config::default(), &srs, &spec));
}

#[test]
fn opencl_proves_like_the_cpu() {
    if bellhop_opencl::devices().is_empty() {
        bellhop_conformance::cannot_check_here(
            "opencl's proofs against the cpu's need an OpenCL device and this machine has none \
             (scripts/opencl-runtime.sh installs PoCL)",
        );
        return;
    }
    let spec: CircuitSpec = "chain:1000".parse().unwrap();
    let srs = parameters(&spec);
    let mut opencl = Config::default();
    opencl.backend.plugin = built_library("bellhop_backend_opencl").display().to_string();
    let cache = build_dir().join("plugin-proofs").join("opencl-cache");
    opencl.backend.options.insert("cache_dir".into(), cache.display().to_string().into());
    assert_eq!(proof_bytes(&opencl, &srs, &spec), proof_bytes(&Config::default(), &srs, &spec));
}
