//! The pipeline overlaps synthesis of the next batch with proving of the current one.

mod common;

use bellhop_circuits::CircuitSpec;
use bellhop_host::{
    config::{set_key, Config},
    phases::{PhaseLayer, PhaseLog, PhaseRecord},
    pipeline::{self, PipelineOptions, Randomness},
    session::Session,
};
use bellhop_plugin_sdk::strategy::Job;
use common::{job, params_in};
use tracing_subscriber::layer::SubscriberExt;

/// The phase records of three one-job batches proved with `lookahead`.
fn records(lookahead: usize) -> Vec<PhaseRecord> {
    let spec: CircuitSpec = "chain:3000".parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let srs = params_in(dir.path(), &spec, 4);
    // Synthesis stretched to take about as long as proving, so overlap is unmistakable.
    let mut config = toml::Table::new();
    let slow = bellhop_tests::built_library("fixture_slow_strategy");
    set_key(&mut config, "synthesis.strategy", &slow.display().to_string()).unwrap();
    set_key(&mut config, "synthesis.options.slowdown", "5.0").unwrap();
    let session = Session::open(&Config::from_table(&config).unwrap(), dir.path()).unwrap();
    let batches = (0..3).map(|seed| vec![job(&spec, seed)]).collect();
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
    let dir = tempfile::tempdir().unwrap();
    let srs = params_in(dir.path(), &spec, 6);
    let session = Session::open(&Config::default(), dir.path()).unwrap();
    let job = |seed| common::job(&spec, seed);
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

/// A strategy whose synthesis waits `delay` first (off the CPU, so two cores can run
/// several), counting the calls running at once.
struct Sleepy<'a> {
    inner: &'a dyn bellhop_plugin_sdk::strategy::Strategy,
    delay: std::time::Duration,
    running: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

impl bellhop_plugin_sdk::strategy::Strategy for Sleepy<'_> {
    fn synthesize(
        &self,
        jobs: &[Job],
    ) -> Result<bellhop_plugin_sdk::strategy::Synthesis, bellhop_plugin_sdk::PluginError> {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.running.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        std::thread::sleep(self.delay);
        let result = self.inner.synthesize(jobs);
        self.running.fetch_sub(1, SeqCst);
        result
    }
}

/// Synthesis far slower than proving: the pipeline synthesizes up to `lookahead` batches
/// at once, never more, and the proofs and their order are those of one batch at a time.
#[test]
fn slow_synthesis_runs_on_as_many_threads_as_the_lookahead_allows() {
    use bellhop_host::prover::Blinding;
    use blstrs::Scalar;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    let spec: CircuitSpec = "chain:300".parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let srs = params_in(dir.path(), &spec, 7);
    let session = Session::open(&Config::default(), dir.path()).unwrap();
    let batches: Vec<Vec<Job>> = (0..6).map(|seed| vec![job(&spec, seed)]).collect();
    let blindings: Vec<Blinding> =
        (0..6u64).map(|i| Blinding { r: Scalar::from(7 + i), s: Scalar::from(70 + i) }).collect();
    let log = PhaseLog::default();
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(PhaseLayer::new(log)));
    let prove = |lookahead: usize| {
        let sleepy = Sleepy {
            inner: session.strategy.as_ref(),
            // Many times a proof on the CPU backend here (100-150 ms; 300 ms and more on a
            // busy machine, where 600 ms left room for two threads only).
            delay: std::time::Duration::from_millis(1200),
            running: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        };
        let options = PipelineOptions { lookahead, verify: true, randomness: Randomness::Fixed(blindings.clone()) };
        let proved = pipeline::run(&session.backend, &sleepy, &srs, batches.clone(), &options, &|_| {}).unwrap();
        let bytes: Vec<(usize, Vec<u8>)> = proved.iter().map(|p| (p.index, p.proof_bytes())).collect();
        (bytes, sleepy.most.load(SeqCst))
    };
    let (one_at_a_time, most) = prove(0);
    assert_eq!(most, 1);
    let (concurrent, most) = prove(3);
    assert_eq!(most, 3, "synthesis takes many times a proof: every allowed thread synthesizes");
    assert_eq!(concurrent, one_at_a_time);
    assert_eq!(concurrent.iter().map(|(i, _)| *i).collect::<Vec<_>>(), (0..6).collect::<Vec<_>>());
    let (_, most) = prove(1);
    assert_eq!(most, 1, "lookahead 1: one batch ahead, on one thread");
}

/// A strategy that panics on the job with seed 2.
struct PanicsOnTwo<'a>(&'a dyn bellhop_plugin_sdk::strategy::Strategy);

impl bellhop_plugin_sdk::strategy::Strategy for PanicsOnTwo<'_> {
    fn synthesize(
        &self,
        jobs: &[Job],
    ) -> Result<bellhop_plugin_sdk::strategy::Synthesis, bellhop_plugin_sdk::PluginError> {
        assert!(jobs.iter().all(|job| job.seed != 2), "the strategy fell over");
        self.0.synthesize(jobs)
    }
}

/// A synthesis thread that panics stops the others: the run ends with the panic instead
/// of waiting for a batch that will never come.
#[test]
fn a_panicking_synthesis_ends_the_run() {
    let spec: CircuitSpec = "chain:300".parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let srs = params_in(dir.path(), &spec, 8);
    let session = Session::open(&Config::default(), dir.path()).unwrap();
    let strategy = PanicsOnTwo(session.strategy.as_ref());
    let batches: Vec<Vec<Job>> = (0..6).map(|seed| vec![job(&spec, seed)]).collect();
    for lookahead in [1, 3] {
        let options = PipelineOptions { lookahead, verify: true, randomness: Randomness::Os };
        let run = std::panic::AssertUnwindSafe(|| {
            pipeline::run(&session.backend, &strategy, &srs, batches.clone(), &options, &|_| {})
        });
        assert!(std::panic::catch_unwind(run).is_err(), "lookahead {lookahead}");
    }
}
