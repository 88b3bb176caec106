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

/// A first batch synthesized beforehand (as `bellhop prove` does while it reads the
/// parameters) gives the proofs `run` gives, with and without lookahead.
#[test]
fn a_first_batch_synthesized_beforehand_gives_the_same_proofs() {
    use bellhop_host::prover::Blinding;
    use blstrs::Scalar;

    let spec: CircuitSpec = "chain:300".parse().unwrap();
    let p = generate_random_parameters::<Bls12, _, _>(
        spec.synthetic(0).expect("a synthetic circuit").circuit,
        &mut ChaCha20Rng::seed_from_u64(6),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(spec.params_file_name().unwrap());
    params::write(&p, &path).unwrap();
    let srs = Srs::read(&path, &spec.to_string(), false).unwrap();
    let session = Session::open(&Config::default(), dir.path()).unwrap();
    let job = |seed| Job { circuit: spec.to_string().into(), seed, input: Default::default() };
    let batches = vec![vec![job(0), job(1)], vec![job(2)], vec![job(3), job(4)]];
    let blindings: Vec<Blinding> =
        (0..5u64).map(|i| Blinding { r: Scalar::from(3 + i), s: Scalar::from(50 + i) }).collect();
    // Under a subscriber, as the other test is: tracing caches a call site's interest, and
    // one first reached with none would hide its spans from the other test's.
    let log = PhaseLog::default();
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(PhaseLayer::new(log)));
    for lookahead in [0, 1, 2] {
        let options = PipelineOptions { lookahead, verify: true, randomness: Randomness::Fixed(blindings.clone()) };
        let strategy = session.strategy.as_ref();
        let whole = pipeline::run(&session.backend, strategy, &srs, batches.clone(), &options, &|_| {}).unwrap();
        let first = pipeline::synthesize_batch(strategy, 0, 0, &batches[0]).unwrap();
        let rest = batches[1..].to_vec();
        let after =
            pipeline::run_synthesized_first(&session.backend, strategy, &srs, first, rest, &options, &|_| {}).unwrap();
        let bytes = |proved: &[pipeline::ProvedJob]| -> Vec<(usize, Vec<u8>)> {
            proved.iter().map(|p| (p.index, p.proof_bytes())).collect()
        };
        assert_eq!(bytes(&after), bytes(&whole), "lookahead {lookahead}");
        assert_eq!(after.iter().map(|p| p.index).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    }
}
