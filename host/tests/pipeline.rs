//! The pipeline overlaps synthesis of the next batch with proving of the current one.

use bellhop_circuits::CircuitSpec;
use bellhop_host::{
    config::{set_key, Config},
    params::{self, Srs},
    phases::{PhaseLayer, PhaseLog, PhaseRecord},
    pipeline::{self, PipelineOptions, Randomness},
    session::Session,
};
use bellhop_plugin_sdk::strategy::Job;
use bellperson::groth16::generate_random_parameters;
use blstrs::Bls12;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tracing_subscriber::layer::SubscriberExt;

/// The phase records of three one-job batches proved with `lookahead`.
fn records(lookahead: usize) -> Vec<PhaseRecord> {
    let spec: CircuitSpec = "chain:3000".parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(spec.params_file_name().unwrap());
    let p = generate_random_parameters::<Bls12, _, _>(
        spec.synthetic(0).expect("a synthetic circuit").circuit,
        &mut ChaCha20Rng::seed_from_u64(4),
    )
    .unwrap();
    params::write(&p, &path).unwrap();
    let srs = Srs::read(&path, &spec.to_string(), false).unwrap();
    // Synthesis stretched to take about as long as proving, so overlap is unmistakable.
    let mut config = toml::Table::new();
    let slow = bellhop_tests::built_library("fixture_slow_strategy");
    set_key(&mut config, "synthesis.strategy", &slow.display().to_string()).unwrap();
    set_key(&mut config, "synthesis.options.slowdown", "5.0").unwrap();
    let session = Session::open(&Config::from_table(&config).unwrap(), dir.path()).unwrap();
    let batches =
        (0..3u64).map(|seed| vec![Job { circuit: spec.to_string().into(), seed, input: Default::default() }]).collect();
    let options = PipelineOptions { lookahead, verify: true, randomness: Randomness::Os };
    let log = PhaseLog::default();
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(log.clone()));
    tracing::subscriber::with_default(subscriber, || {
        pipeline::run(&session.backend, session.strategy.as_ref(), &srs, batches, &options, &|_| {}).unwrap()
    });
    log.take()
}

fn span(records: &[PhaseRecord], proof: usize, phase: &str) -> (f64, f64) {
    let r =
        records.iter().find(|r| r.first == proof && r.phase == phase).unwrap_or_else(|| panic!("{phase} of {proof}"));
    (r.start, r.start + r.seconds)
}

#[test]
fn synthesis_runs_ahead_of_proving() {
    let overlapped = records(1);
    for next in 1..3 {
        let (synthesis_start, _) = span(&overlapped, next, "synthesis");
        let (_, previous_proof_end) = span(&overlapped, next - 1, "msm_b_g2");
        assert!(
            synthesis_start < previous_proof_end,
            "synthesis of batch {next} should start before proof {} ends",
            next - 1
        );
    }
    let sequential = records(0);
    for next in 1..3 {
        let (synthesis_start, _) = span(&sequential, next, "synthesis");
        let (_, previous_verify_end) = span(&sequential, next - 1, "verify");
        assert!(synthesis_start >= previous_verify_end, "lookahead 0 runs one batch after the other");
    }
}
