//! The engine's devices. With a device that fails (the test plugin `failing-device` is the
//! CPU backend on two devices, of which device 1 fails: every call, its first calls, out of
//! memory, or hanging), the engine marks it down, proves its partition on another and says
//! so in its status and metrics; probes it until it works; fails a job whose call passes
//! `[backend] call_timeout`; and keeps a device out of memory up. With a backend that keeps
//! host memory (`keeping-backend`), it proves from kept buffers, charges them to its memory
//! budget and releases every one.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use bellhop_circuits::CircuitSpec;
use bellhop_engine::{Engine, JobRequest, Outcome, Priority, Waited};
use bellhop_host::{config::Config, params};
use bellhop_tests::{build_dir, built_library};
use bellperson::groth16::generate_random_parameters;
use blstrs::Bls12;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const CIRCUIT: &str = "chain:2048";

/// A config of the failing-device backend with `options`, and the parameters of `CIRCUIT`
/// in `dir`.
fn config(dir: &Path, options: toml::Table) -> Config {
    let spec: CircuitSpec = CIRCUIT.parse().unwrap();
    let generated =
        generate_random_parameters::<Bls12, _, _>(spec.setup_circuit().unwrap(), &mut ChaCha20Rng::seed_from_u64(2))
            .unwrap();
    params::write(&generated, &dir.join(spec.params_file_name().unwrap())).unwrap();
    let mut config = Config::default();
    config.backend.plugin = built_library("fixture_failing_device").display().to_string();
    config.backend.options = options;
    config.params.dir = dir.to_path_buf();
    config.daemon.state_dir = dir.join("state");
    config
}

fn job(partitions: usize) -> JobRequest {
    JobRequest { partitions, ..JobRequest::new(CIRCUIT.parse().unwrap(), Vec::new()).unwrap() }
}

async fn outcome(engine: &Engine, id: &str) -> Outcome {
    match engine.wait(id, Some(Duration::from_secs(300))).await.unwrap() {
        Waited::Done(outcome) => outcome,
        Waited::Timeout => panic!("{id} did not end in 5 minutes"),
    }
}

/// Waits up to a minute for every device to be up.
async fn all_up(engine: &Engine) -> bellhop_engine::Status {
    let start = Instant::now();
    loop {
        let status = engine.status();
        if status.devices.iter().all(|d| d.down.is_none()) {
            return status;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "a device stayed down: {:?}", status.devices);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_failing_device_is_marked_down_and_its_work_done_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let spec: CircuitSpec = CIRCUIT.parse().unwrap();
    let engine = Engine::start(&config(dir.path(), toml::Table::new()), &build_dir()).unwrap();
    assert_eq!(engine.status().devices.len(), 2, "every device the backend describes");
    let jobs: Vec<String> = (0..4).map(|_| engine.submit(job(2)).unwrap().job_id).collect();
    for id in &jobs {
        let waited = engine.wait(id, Some(Duration::from_secs(300))).await.unwrap();
        assert!(matches!(waited, Waited::Done(Outcome::Completed { .. })), "{id}: {waited:?}");
    }
    let status = engine.status();
    let down = status.devices[1].down.as_deref().expect("device 1 is down");
    assert!(down.contains("device 1 failed on purpose"), "{down}");
    assert!(status.devices[0].down.is_none());
    assert_eq!((status.devices[0].proved, status.devices[1].proved), (8, 0));
    assert!(engine.metrics().contains(r#"bellhop_device_up{device="1"} 0"#));
    // With device 0 the only one up, the engine names it for new jobs.
    let next = engine.submit(JobRequest::new(spec, Vec::new()).unwrap()).unwrap();
    assert_eq!(next.assigned_device, Some(0));
}

#[tokio::test]
async fn a_device_marked_down_is_probed_and_comes_back_once_it_works() {
    let dir = tempfile::tempdir().unwrap();
    let options = toml::toml! { scenario = "fails once" failures = 1 };
    let mut config = config(dir.path(), options);
    // Two instances of device 1, the first of whose calls fails.
    config.backend.devices = Some(vec![1, 1]);
    config.backend.probe_after = Duration::from_millis(100);
    let engine = Engine::start(&config, &build_dir()).unwrap();
    let first = engine.submit(job(2)).unwrap().job_id;
    assert!(matches!(outcome(&engine, &first).await, Outcome::Completed { .. }));
    let status = all_up(&engine).await;
    let marked: Vec<u64> = status.devices.iter().map(|d| d.marked_down).collect();
    assert_eq!(marked.iter().sum::<u64>(), 1, "one instance failed and was marked down: {marked:?}");
    // Back up, both prove.
    for _ in 0..4 {
        let id = engine.submit(job(2)).unwrap().job_id;
        assert!(matches!(outcome(&engine, &id).await, Outcome::Completed { .. }));
    }
    assert!(engine.metrics().contains(r#"bellhop_device_up{device="0"} 1"#));
    assert!(engine.metrics().contains(r#"bellhop_device_up{device="1"} 1"#));
}

#[tokio::test]
async fn a_call_past_call_timeout_fails_its_job_and_the_device_returns_once_it_answers() {
    let dir = tempfile::tempdir().unwrap();
    let options = toml::toml! { scenario = "hangs" hang_ms = 3000 };
    let mut config = config(dir.path(), options);
    config.backend.devices = Some(vec![1]);
    config.backend.call_timeout = Duration::from_millis(500);
    config.backend.probe_after = Duration::from_millis(100);
    let engine = Engine::start(&config, &build_dir()).unwrap();
    let hung = engine.submit(job(1)).unwrap().job_id;
    let Outcome::Failed(why) = outcome(&engine, &hung).await else { panic!("a hung call fails its job") };
    assert!(why.contains("call_timeout"), "{why}");
    let status = engine.status();
    let down = status.devices[0].down.as_deref().expect("the device is down while its call hangs");
    assert!(down.contains("call_timeout"), "{down}");
    assert_eq!(status.devices[0].marked_down, 1);
    // Submitted while the device is down, proved once its call returned and a probe passed.
    let next = engine.submit(job(1)).unwrap().job_id;
    assert!(matches!(outcome(&engine, &next).await, Outcome::Completed { .. }));
    all_up(&engine).await;
}

#[tokio::test]
async fn a_device_out_of_memory_fails_the_job_and_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let options = toml::toml! { scenario = "out of memory" failures = 1 out_of_memory = true };
    let mut config = config(dir.path(), options);
    config.backend.devices = Some(vec![1, 1]);
    config.backend.probe_after = Duration::from_millis(100);
    let engine = Engine::start(&config, &build_dir()).unwrap();
    let first = engine.submit(job(1)).unwrap().job_id;
    let Outcome::Failed(why) = outcome(&engine, &first).await else { panic!("out of memory fails the job") };
    assert!(why.contains("out of device memory") && why.contains("the device stays up"), "{why}");
    let status = engine.status();
    assert!(status.devices.iter().all(|d| d.down.is_none() && d.marked_down == 0), "{:?}", status.devices);
    let next = engine.submit(job(1)).unwrap().job_id;
    assert!(matches!(outcome(&engine, &next).await, Outcome::Completed { .. }));
}

/// The keeping-backend fixture's config (its calls logged to `log`), with one synthesis
/// worker and lookahead 1: a partition in synthesis or waiting and one proving, so up to
/// two kept assignments, as `bellhop bench` keeps with the same settings.
fn keeping_config(dir: &Path, log: &Path) -> Config {
    let mut config = config(dir, toml::toml! { log = (log.display().to_string()) });
    config.backend.plugin = built_library("fixture_keeping_backend").display().to_string();
    config.daemon.synthesis_workers = 1;
    config.pipeline.lookahead = 1;
    config
}

#[tokio::test]
async fn the_engine_proves_from_kept_host_memory_charges_it_to_the_budget_and_releases_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let engine = Engine::start(&keeping_config(dir.path(), &log), &build_dir()).unwrap();
    for _ in 0..2 {
        let id = engine.submit(job(6)).unwrap().job_id;
        // Completed: every partition's proof verified, those from rewritten buffers too.
        assert!(matches!(outcome(&engine, &id).await, Outcome::Completed { .. }));
    }
    let status = engine.status();
    let kept = status.devices[0].kept_host_bytes;
    let params: u64 = status.params.iter().map(|p| p.bytes).sum();
    assert!(kept > 0, "the spent assignments are kept for the next partition");
    assert_eq!(status.memory.reserved_bytes, params + kept, "the budget holds the parameters and the kept memory");
    drop(engine);

    let calls = std::fs::read_to_string(&log).unwrap();
    let of = |verb: &str| calls.lines().filter_map(|l| l.strip_prefix(verb)).map(str::to_string).collect::<Vec<_>>();
    let (mut keeps, mut releases, proofs) = (of("keep "), of("release "), of("proof "));
    assert_eq!(proofs.len(), 12, "{calls}");
    assert!((1..=2).contains(&keeps.len()), "at most one assignment kept per partition in flight: {calls}");
    let fresh = proofs.iter().filter(|p| p.ends_with("fresh")).count();
    assert_eq!(fresh, keeps.len(), "every proof but those whose buffers were then kept reads kept memory: {calls}");
    keeps.sort();
    releases.sort();
    assert_eq!(keeps, releases, "each kept assignment released once");
}

#[tokio::test]
async fn kept_host_memory_is_released_first_when_other_work_needs_the_room() {
    // Sizes from a first engine: the circuit's parameters, one kept buffer, and the
    // parameters of another circuit.
    const OTHER: &str = "chain:1024";
    let dir = tempfile::tempdir().unwrap();
    let other: CircuitSpec = OTHER.parse().unwrap();
    let generated =
        generate_random_parameters::<Bls12, _, _>(other.setup_circuit().unwrap(), &mut ChaCha20Rng::seed_from_u64(4))
            .unwrap();
    params::write(&generated, &dir.path().join(other.params_file_name().unwrap())).unwrap();
    let log = dir.path().join("sizes.log");
    let mut config = keeping_config(dir.path(), &log);
    let engine = Engine::start(&config, &build_dir()).unwrap();
    let id = engine.submit(job(4)).unwrap().job_id;
    assert!(matches!(outcome(&engine, &id).await, Outcome::Completed { .. }));
    engine.preload(&other).unwrap();
    let status = engine.status();
    let bytes = |circuit: &str| status.params.iter().find(|p| p.circuit == circuit).unwrap().bytes;
    let (circuit_params, other_params) = (bytes(CIRCUIT), bytes(OTHER));
    let kept = std::fs::read_to_string(&log).unwrap().lines().filter(|l| l.starts_with("keep ")).count() as u64;
    let buffer = status.devices[0].kept_host_bytes / kept;
    drop(engine);

    // A budget that holds both parameter sets, but not with a kept buffer beside them.
    config.memory.budget = bellhop_host::config::Budget::Bytes(circuit_params + other_params + buffer - 1);
    config.daemon.state_dir = dir.path().join("state-2");
    let log = dir.path().join("calls.log");
    config.backend.options = toml::toml! { log = (log.display().to_string()) };
    let engine = std::sync::Arc::new(Engine::start(&config, &build_dir()).unwrap());
    let id = engine.submit(job(4)).unwrap().job_id;
    assert!(matches!(outcome(&engine, &id).await, Outcome::Completed { .. }));
    assert!(engine.status().devices[0].kept_host_bytes >= buffer, "a buffer is kept after the job");
    // Without the kept buffers released, the preload would wait: the circuit's parameters
    // are not idle long enough to be evicted.
    let (sender, preloaded) = std::sync::mpsc::channel();
    let preloading = std::sync::Arc::clone(&engine);
    std::thread::spawn(move || sender.send(preloading.preload(&other).map(drop)));
    preloaded.recv_timeout(Duration::from_secs(60)).expect("the preload found room within a minute").unwrap();
    let status = engine.status();
    assert_eq!(status.devices[0].kept_host_bytes, 0, "the kept buffers were released for the room");
    assert_eq!(status.params.len(), 2, "no parameter set was evicted instead: {:?}", status.params);
    assert!(status.memory.reserved_bytes <= status.memory.budget_bytes);
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.matches("keep ").count(), calls.matches("release ").count(), "{calls}");
}

#[tokio::test]
async fn two_workers_prove_jobs_of_two_priorities_within_a_budget_of_one_partition() {
    // Sizes from a first engine proving one partition at a time: the parameters, one
    // partition's reservation and one kept buffer.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sizes.log");
    let mut config = keeping_config(dir.path(), &log);
    config.pipeline.lookahead = 0;
    let engine = Engine::start(&config, &build_dir()).unwrap();
    let id = engine.submit(job(1)).unwrap().job_id;
    assert!(matches!(outcome(&engine, &id).await, Outcome::Completed { .. }));
    let status = engine.status();
    let (params, buffer) = (status.params[0].bytes, status.devices[0].kept_host_bytes);
    // The proof's buffer was charged to the pool before its partition's share went.
    let partition = status.memory.peak_reserved_bytes - params - buffer;
    drop(engine);

    // Room for one partition and half a buffer beside the parameters; two synthesis
    // workers, and jobs of two priorities: kept buffers are lent, given back and released
    // for room, and every job completes.
    config.memory.budget = bellhop_host::config::Budget::Bytes(params + partition + buffer / 2);
    config.daemon.synthesis_workers = 2;
    config.daemon.state_dir = dir.path().join("state-2");
    let engine = Engine::start(&config, &build_dir()).unwrap();
    let mut jobs = Vec::new();
    for priority in [Priority::Normal, Priority::High, Priority::Normal, Priority::High] {
        jobs.push(engine.submit(JobRequest { priority: Some(priority), ..job(3) }).unwrap().job_id);
    }
    for id in &jobs {
        let waited = engine.wait(id, Some(Duration::from_secs(120))).await.unwrap();
        assert!(matches!(waited, Waited::Done(Outcome::Completed { .. })), "{id}: {waited:?}");
    }
    let memory = engine.status().memory;
    assert!(memory.reserved_bytes <= memory.budget_bytes, "{memory:?}");
}

/// With fixed r and s, the proofs the engine makes from kept host memory (rewritten buffers
/// from the second partition on) are byte for byte the embedded CPU backend's.
#[test]
fn proofs_from_kept_host_memory_are_the_cpu_backends_byte_for_byte() {
    use bellhop_host::{pipeline::Randomness, prover::Blinding};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let blindings: Vec<Blinding> =
        (0..6u64).map(|i| Blinding { r: blstrs::Scalar::from(10 + i), s: blstrs::Scalar::from(20 + i) }).collect();
    let proofs = |config: &Config| {
        let engine = Engine::in_process(config, &build_dir(), Randomness::Fixed(blindings.clone())).unwrap();
        let submitted = engine.submit(job(6)).unwrap();
        engine.proof_of(&submitted).unwrap().expect("a real circuit's job completes with a proof")
    };
    let kept = proofs(&keeping_config(dir.path(), &log));
    let cpu = proofs(&Config { backend: Default::default(), ..keeping_config(dir.path(), &log) });
    assert_eq!(kept.len(), 6 * 192);
    assert!(kept == cpu, "the proofs from kept memory differ from the cpu backend's");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(calls.lines().any(|l| l.starts_with("proof ") && !l.ends_with("fresh")), "none read kept memory: {calls}");
}
