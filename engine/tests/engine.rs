//! The engine in process, on the embedded CPU backend with small catalog circuits: jobs,
//! their partitions and outcomes, duplicates, timeouts, cancellation, priority, parameter
//! sets, status and shutdown.

use std::{
    path::Path,
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use bellhop_circuits::CircuitSpec;
use bellhop_engine::{Engine, JobKind, JobRequest, Outcome, Priority, Refused, Waited};
use bellhop_host::{
    config::{Config, DaemonConfig},
    params,
};
use bellperson::groth16::{generate_random_parameters, prepare_verifying_key, verify_proof, Parameters, Proof};
use blstrs::Bls12;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const SMALL: &str = "chain:1024";
const LARGE: &str = "chain:4096";
/// Three circuits whose parameter sets do not fit the budget together.
const COMPETING: [&str; 3] = ["chain:2048", "chain:3072", LARGE];

/// Where a child process of these tests finds its parent's parameter directory.
const PARAMS_DIR: &str = "BELLHOP_TEST_ENGINE_PARAMS";

/// A parameter directory with the parameters of both circuits, made once (a child process
/// uses its parent's).
fn params_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static PARENTS: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    if let Some(dir) = PARENTS.get_or_init(|| std::env::var_os(PARAMS_DIR).map(Into::into)) {
        return dir;
    }
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        for circuit in [SMALL, COMPETING[0], COMPETING[1], LARGE] {
            let spec: CircuitSpec = circuit.parse().unwrap();
            let p: Parameters<Bls12> =
                generate_random_parameters(spec.setup_circuit().unwrap(), &mut ChaCha20Rng::seed_from_u64(3)).unwrap();
            params::write(&p, &dir.path().join(spec.params_file_name().unwrap())).unwrap();
        }
        dir
    })
    .path()
}

/// A config with `workers` synthesis workers whose synthesis is `slowdown` times slower
/// (the slow-strategy fixture), so that jobs stay queued long enough to watch, and a
/// journal of its own.
fn config(workers: usize, slowdown: f64) -> Config {
    let mut config = Config::default();
    config.params.dir = params_dir().to_path_buf();
    config.daemon.synthesis_workers = workers;
    config.daemon.keep_results = Duration::from_secs(600);
    config.daemon.state_dir = tempfile::tempdir().unwrap().keep();
    if slowdown > 0.0 {
        config.synthesis.strategy = bellhop_tests::built_library("fixture_slow_strategy").display().to_string();
        config.synthesis.options.insert("slowdown".into(), slowdown.into());
    }
    config
}

/// `config` whose synthesis holds each partition of `circuit` `ms` milliseconds more.
fn holding(mut config: Config, circuit: &str, ms: u64) -> Config {
    config.synthesis.strategy = bellhop_tests::built_library("fixture_slow_strategy").display().to_string();
    let hold = toml::Table::from_iter([(circuit.to_string(), toml::Value::Integer(ms as i64))]);
    config.synthesis.options.insert("hold_ms".into(), hold.into());
    config
}

fn engine(workers: usize, slowdown: f64) -> Engine {
    Engine::start(&config(workers, slowdown), params_dir()).unwrap()
}

/// The engine of `config` started on a stopped engine's state dir: a worker in the middle
/// of a partition outlives its engine, holding the journal until the partition ends, so
/// the start is tried again while the journal is in use (up to a minute).
fn restart(config: &Config) -> Engine {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match Engine::start(config, params_dir()) {
            Ok(engine) => return engine,
            Err(e) if format!("{e:#}").contains("in use by another") && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("{e:#}"),
        }
    }
}

fn request(circuit: &str, partitions: usize) -> JobRequest {
    JobRequest { partitions, ..JobRequest::new(circuit.parse().unwrap(), Vec::new()).unwrap() }
}

fn with_id(id: &str, mut request: JobRequest) -> JobRequest {
    request.request_id = Some(id.into());
    request
}

async fn outcome(engine: &Engine, id: &str) -> Outcome {
    match engine.wait(id, Some(Duration::from_secs(300))).await.unwrap() {
        Waited::Done(outcome) => outcome,
        Waited::Timeout => panic!("{id} did not end in 5 minutes"),
    }
}

/// Checks each 192-byte proof of `proof` against partition `k`'s public inputs.
fn assert_verifies(circuit: &str, proof: &[u8]) {
    let spec: CircuitSpec = circuit.parse().unwrap();
    let bytes = std::fs::read(params_dir().join(spec.params_file_name().unwrap())).unwrap();
    let p = Parameters::<Bls12>::read(&bytes[..], false).unwrap();
    let pvk = prepare_verifying_key(&p.vk);
    assert_eq!(proof.len() % 192, 0);
    for (k, chunk) in proof.chunks(192).enumerate() {
        let inputs = spec.synthetic(k as u64).unwrap().public_inputs;
        let proof = Proof::<Bls12>::read(chunk).unwrap();
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap(), "partition {k} of {circuit} does not verify");
    }
}

#[tokio::test]
async fn every_partition_is_proved_in_order_and_verifies() {
    let engine = engine(2, 0.0);
    let submitted = engine.submit(request(SMALL, 3)).unwrap();
    assert!(!submitted.existing);
    assert_eq!(submitted.assigned_device, Some(0));
    let Outcome::Completed { proof, timings } = outcome(&engine, &submitted.job_id).await else { panic!() };
    assert_eq!(proof.len(), 3 * 192);
    assert_verifies(SMALL, &proof);
    assert!(timings.synthesis > Duration::ZERO && timings.proving > Duration::ZERO);
    assert!(timings.total >= timings.queue_wait);
    let status = engine.status();
    assert_eq!(status.completed, 1);
    assert_eq!(status.params.len(), 1);
    assert_eq!(status.params[0].circuit, SMALL);
    assert!(status.params[0].bytes > 0);
    let metrics = engine.metrics();
    assert!(metrics.contains(r#"bellhop_jobs_total{kind="catalog",outcome="completed"} 1"#), "{metrics}");
    assert!(metrics.contains("bellhop_params_loads_total"), "{metrics}");
}

/// A job whose proof is made of its partitions' proofs (an NI-PoRep's aggregate) ends once
/// that is made, outside the state lock; a catalog circuit's is their concatenation.
#[tokio::test]
async fn a_job_with_an_aggregation_ends_with_the_proof_made_of_its_partitions() {
    let engine = engine(2, 0.0);
    let submitted =
        engine.submit(JobRequest { aggregation: Some(b"public data".to_vec()), ..request(SMALL, 3) }).unwrap();
    let Outcome::Completed { proof, .. } = outcome(&engine, &submitted.job_id).await else { panic!() };
    assert_eq!(proof.len(), 3 * 192);
    assert_verifies(SMALL, &proof);
    assert_eq!(engine.status().completed, 1);
}

#[tokio::test]
async fn a_repeated_request_is_the_same_job_and_another_payload_under_its_id_is_another_job() {
    let engine = engine(2, 0.0);
    let first = engine.submit(with_id("wdpost-1000-0-[1 2 3 4 5 6 7 8]", request(SMALL, 2))).unwrap();
    assert_eq!(first.job_id, "wdpost-1000-0-[1 2 3 4 5 6 7 8]");
    let again = engine.submit(with_id(&first.job_id, request(SMALL, 2))).unwrap();
    assert!(again.existing);
    assert_eq!((&again.job_id, again.handle), (&first.job_id, first.handle));
    // Curio sends one id for every WindowPoSt partition of a deadline: another payload
    // under it is another job, proved beside the first, with an id of its own.
    let other = engine.submit(with_id(&first.job_id, request(COMPETING[0], 1))).unwrap();
    assert!(!other.existing);
    assert_ne!(other.handle, first.handle);
    assert!(other.job_id.starts_with("wdpost-1000-0-[1 2 3 4 5 6 7 8]~"), "{}", other.job_id);
    let [Waited::Done(Outcome::Completed { proof: small, .. }), Waited::Done(Outcome::Completed { proof: other_proof, .. })] =
        [engine.wait_for(&first, None).await.unwrap(), engine.wait_for(&other, None).await.unwrap()]
    else {
        panic!("both jobs complete")
    };
    // Each job got its own partitions' proofs: they verify against its own circuit.
    assert_verifies(SMALL, &small);
    assert_verifies(COMPETING[0], &other_proof);
    assert_eq!(small.len(), 2 * 192);
    assert_eq!(other_proof.len(), 192);
    assert!(matches!(outcome(&engine, &other.job_id).await, Outcome::Completed { proof, .. } if proof == other_proof));
    // Completed jobs are kept: each request again answers with its job, no second run.
    for (request, done) in [(request(SMALL, 2), &first), (request(COMPETING[0], 1), &other)] {
        let repeated = engine.submit(with_id(&first.job_id, request)).unwrap();
        assert!(repeated.existing);
        assert_eq!(repeated.job_id, done.job_id);
    }
    assert_eq!(engine.status().completed, 2);
}

/// A request id may be anything, another job's derived id included: each job keeps an id
/// of its own, and every one is proved.
#[tokio::test]
async fn request_ids_shaped_like_derived_ones_take_no_other_jobs_id() {
    // The id `x` with a second payload takes, while the first holds `x`.
    let derived = {
        let engine = engine(1, 3.0);
        engine.submit(with_id("x", request(SMALL, 1))).unwrap();
        engine.submit(with_id("x", request(SMALL, 2))).unwrap().job_id
    };
    let engine = engine(1, 3.0);
    // A caller names its own job so first; then the two payloads come under `x`.
    let squatter = engine.submit(with_id(&derived, request(SMALL, 3))).unwrap();
    assert_eq!(squatter.job_id, derived);
    let first = engine.submit(with_id("x", request(SMALL, 1))).unwrap();
    let second = engine.submit(with_id("x", request(SMALL, 2))).unwrap();
    assert!(second.job_id.starts_with(&derived) && second.job_id != derived, "{}", second.job_id);
    for (submitted, partitions) in [(&squatter, 3), (&first, 1), (&second, 2)] {
        let Waited::Done(Outcome::Completed { proof, .. }) = engine.wait_for(submitted, None).await.unwrap() else {
            panic!("{} did not complete", submitted.job_id)
        };
        assert_eq!(proof.len(), partitions * 192, "{}", submitted.job_id);
        assert!(matches!(outcome(&engine, &submitted.job_id).await, Outcome::Completed { proof: p, .. } if p == proof));
    }
}

/// A parameter directory holding a copy of `circuit`'s file with one point damaged, as a
/// half-fetched file would be: its sections' counts are whole, so a job is accepted, and
/// it fails when the set is read. Returns the directory and the file's good bytes.
fn damaged_params(circuit: &str) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
    let name = circuit.parse::<CircuitSpec>().unwrap().params_file_name().unwrap();
    let good = std::fs::read(params_dir().join(&name)).unwrap();
    let mut damaged = good.clone();
    // The low bit of a coordinate: the point is no longer on the curve.
    damaged[good.len() / 2] ^= 1;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, damaged).unwrap();
    (dir, path, good)
}

#[tokio::test]
async fn a_request_runs_again_after_it_failed_or_was_cancelled() {
    let (dir, path, good) = damaged_params(SMALL);
    let mut config = config(1, 0.0);
    config.params.dir = dir.path().to_path_buf();
    let damaged = Engine::start(&config, params_dir()).unwrap();
    let failing = damaged.submit(with_id("snap-1000-7", request(SMALL, 2))).unwrap();
    let Outcome::Failed(why) = outcome(&damaged, &failing.job_id).await else { panic!("a damaged set proves nothing") };
    assert!(why.contains("its parameters"), "{why}");
    // The operator fetches the file again; the client's retry, same id and payload, runs.
    std::fs::write(&path, good).unwrap();
    let retry = damaged.submit(with_id("snap-1000-7", request(SMALL, 2))).unwrap();
    assert!(!retry.existing, "a failed job is not the answer to its retry");
    assert_eq!(retry.job_id, failing.job_id);
    let Outcome::Completed { proof, .. } = outcome(&damaged, &retry.job_id).await else {
        panic!("the retry completes")
    };
    assert_verifies(SMALL, &proof);

    // Cancelled: the same request again runs again.
    let slow = engine(1, 10.0);
    let cancelled = slow.submit(with_id("porep-1000-3", request(LARGE, 2))).unwrap();
    assert!(slow.cancel(&cancelled.job_id).is_ok());
    assert_eq!(outcome(&slow, &cancelled.job_id).await, Outcome::Cancelled);
    let retry = slow.submit(with_id("porep-1000-3", request(LARGE, 2))).unwrap();
    assert!(!retry.existing);
    let Outcome::Completed { proof, .. } = outcome(&slow, "porep-1000-3").await else { panic!("the retry completes") };
    assert_verifies(LARGE, &proof);
    assert_eq!((slow.status().cancelled, slow.status().completed), (1, 1));
}

/// After a restart, each request id and payload still names its own job, collided ones too.
#[tokio::test]
async fn jobs_sharing_a_request_id_are_told_apart_after_a_restart() {
    let config = config(1, 0.0);
    let ids = {
        let engine = Engine::start(&config, params_dir()).unwrap();
        let ids: Vec<String> = [1, 2]
            .map(|partitions| engine.submit(with_id("shared", request(SMALL, partitions))).unwrap().job_id)
            .into();
        for id in &ids {
            assert!(matches!(outcome(&engine, id).await, Outcome::Completed { .. }));
        }
        ids
    };
    let engine = Engine::start(&config, params_dir()).unwrap();
    assert_eq!(engine.status().journal.kept, 2);
    for (partitions, id) in [1, 2].into_iter().zip(&ids) {
        let again = engine.submit(with_id("shared", request(SMALL, partitions))).unwrap();
        assert!(again.existing, "{partitions} partitions: {again:?}");
        assert_eq!(&again.job_id, id);
        let Outcome::Completed { proof, .. } = outcome(&engine, id).await else { panic!() };
        assert_eq!(proof.len(), partitions * 192);
    }
}

#[tokio::test]
async fn waiting_times_out_while_the_job_goes_on() {
    let engine = engine(1, 10.0);
    let job = engine.submit(request(LARGE, 4)).unwrap().job_id;
    assert_eq!(engine.wait(&job, Some(Duration::from_millis(1))).await.unwrap(), Waited::Timeout);
    assert!(matches!(outcome(&engine, &job).await, Outcome::Completed { .. }));
    assert!(engine.wait("no-such-job", None).await.is_err());
}

/// Polls until `ready` holds of the engine's status.
async fn until(engine: &Engine, what: &str, ready: impl Fn(&bellhop_engine::Status) -> bool) {
    let start = Instant::now();
    while !ready(&engine.status()) {
        assert!(start.elapsed() < Duration::from_secs(120), "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn cancelling_drops_queued_jobs_and_stops_running_ones() {
    let engine = engine(1, 10.0);
    let running = engine.submit(request(LARGE, 6)).unwrap().job_id;
    let queued = engine.submit(request(LARGE, 2)).unwrap().job_id;
    until(&engine, "the first job runs", |s| s.queues.iter().any(|q| q.kind == JobKind::Catalog && q.in_progress == 1))
        .await;
    let progress = engine.status().running;
    assert_eq!(progress.len(), 1, "{progress:?}");
    assert_eq!((progress[0].job_id.as_str(), progress[0].partitions), (running.as_str(), 6));
    assert!(progress[0].partitions_done < 6, "{progress:?}");
    assert!(!engine.cancel(&queued).unwrap().was_running);
    assert_eq!(outcome(&engine, &queued).await, Outcome::Cancelled);
    assert!(engine.cancel(&running).unwrap().was_running);
    assert_eq!(outcome(&engine, &running).await, Outcome::Cancelled);
    // A job that ended stays as it ended; an unknown id is not found.
    assert!(!engine.cancel(&running).unwrap().was_running);
    assert!(engine.cancel("no-such-job").is_err());
    // The engine goes on proving.
    let next = engine.submit(request(SMALL, 1)).unwrap().job_id;
    let Outcome::Completed { proof, .. } = outcome(&engine, &next).await else { panic!() };
    assert_verifies(SMALL, &proof);
    let status = engine.status();
    assert_eq!((status.cancelled, status.completed), (2, 1));
}

#[tokio::test]
async fn a_critical_job_submitted_last_passes_the_backlog() {
    let engine = Arc::new(engine(1, 5.0));
    let backlog: Vec<String> = (0..5).map(|_| engine.submit(request(LARGE, 3)).unwrap().job_id).collect();
    let critical = engine.submit(JobRequest { priority: Some(Priority::Critical), ..request(SMALL, 1) }).unwrap();
    assert_eq!(critical.queue_position, 0, "nothing ranks above a critical job");
    let start = Instant::now();
    let mut ends = Vec::new();
    for id in backlog.iter().chain([&critical.job_id]) {
        let (engine, id) = (Arc::clone(&engine), id.clone());
        ends.push(tokio::spawn(async move {
            assert!(matches!(outcome(&engine, &id).await, Outcome::Completed { .. }));
            start.elapsed()
        }));
    }
    let mut times = Vec::new();
    for end in ends {
        times.push(end.await.unwrap());
    }
    let critical_time = times[5];
    eprintln!("critical job behind a backlog of 15 partitions: {critical_time:.2?}; backlog ends at {:.2?}", times[4]);
    // At most the partitions already synthesized or on the device go before it.
    assert!(times[2..5].iter().all(|t| *t > critical_time), "{times:?}");
}

#[tokio::test]
async fn with_two_workers_a_critical_job_waits_for_no_synthesis() {
    let engine = engine(2, 10.0);
    let backlog: Vec<String> = (0..3).map(|_| engine.submit(request(LARGE, 4)).unwrap().job_id).collect();
    until(&engine, "the backlog is synthesizing", |s| s.queues.iter().any(|q| q.in_progress > 0)).await;
    let critical = engine.submit(JobRequest { priority: Some(Priority::Critical), ..request(SMALL, 1) }).unwrap();
    let Outcome::Completed { timings: urgent, .. } = outcome(&engine, &critical.job_id).await else { panic!() };
    let Outcome::Completed { timings: normal, .. } = outcome(&engine, &backlog[0]).await else { panic!() };
    let one_synthesis = normal.synthesis / 4;
    eprintln!("critical queue wait {:.2?}; a backlog partition's synthesis {one_synthesis:.2?}", urgent.queue_wait);
    // One worker is kept for it: it starts before any backlog synthesis could have ended.
    assert!(urgent.queue_wait < one_synthesis / 2, "{:?} against {one_synthesis:?}", urgent.queue_wait);
    for id in &backlog[1..] {
        assert!(matches!(outcome(&engine, id).await, Outcome::Completed { .. }));
    }
}

#[tokio::test]
async fn a_critical_partition_passes_normal_ones_waiting_for_memory() {
    let ((small_set, small_partition), (large_set, large_partition)) = (sizes(SMALL), sizes(LARGE));
    assert!(large_partition > 2 * small_partition, "{large_partition} against {small_partition}");
    // Room for both sets, one LARGE partition and one SMALL one, but not two LARGE ones.
    let mut config = holding(config(3, 0.0), LARGE, 3000);
    config.memory.budget =
        bellhop_host::config::Budget::Bytes(small_set + large_set + large_partition + small_partition * 3 / 2);
    let engine = Engine::start(&config, params_dir()).unwrap();
    engine.preload(&SMALL.parse().unwrap()).unwrap();
    let backlog = engine.submit(request(LARGE, 2)).unwrap().job_id;
    until(&engine, "the second backlog partition waits for memory", |s| s.memory.waiting == 1).await;
    let critical = engine.submit(JobRequest { priority: Some(Priority::Critical), ..request(SMALL, 1) }).unwrap();
    let Outcome::Completed { proof, .. } = outcome(&engine, &critical.job_id).await else { panic!() };
    assert_verifies(SMALL, &proof);
    let status = engine.status();
    let progress = status.running.iter().find(|job| job.job_id == backlog).expect("the backlog runs on");
    // Its first partition is held in synthesis for 3 s: the critical job did not wait for it.
    assert_eq!(progress.partitions_done, 0, "the critical job waited for a backlog partition: {status:?}");
    assert!(matches!(outcome(&engine, &backlog).await, Outcome::Completed { .. }));
    assert!(engine.metrics().contains("bellhop_memory_waiting 0"));
}

#[tokio::test]
async fn low_jobs_queued_past_the_aging_time_are_served_as_normal() {
    for (aging, low_first) in [(Duration::ZERO, true), (Duration::from_secs(3600), false)] {
        let mut config = holding(config(1, 0.0), LARGE, 500);
        config.daemon.low_priority_aging = aging;
        let engine = Engine::start(&config, params_dir()).unwrap();
        let first = engine.submit(request(LARGE, 1)).unwrap().job_id;
        until(&engine, "the first job runs", |s| s.running.len() == 1).await;
        let low = engine.submit(JobRequest { priority: Some(Priority::Low), ..request(SMALL, 1) }).unwrap().job_id;
        let normal = engine.submit(request(SMALL, 1)).unwrap().job_id;
        let mut waits = Vec::new();
        for id in [&first, &low, &normal] {
            let Outcome::Completed { timings, .. } = outcome(&engine, id).await else { panic!("{id}") };
            waits.push(timings.queue_wait);
        }
        eprintln!("aging {aging:?}: LOW waited {:.2?}, NORMAL {:.2?}", waits[1], waits[2]);
        assert_eq!(waits[1] < waits[2], low_first, "aging {aging:?}: {waits:?}");
    }
}

#[test]
fn a_request_id_past_its_bound_is_refused_by_name() {
    let engine = engine(1, 0.0);
    let long = "x".repeat(bellhop_engine::MAX_REQUEST_ID_BYTES + 1);
    let refused = engine.submit(with_id(&long, request(SMALL, 1))).unwrap_err();
    assert!(matches!(&refused, Refused::Invalid(why) if why.contains("request_id is 257 bytes")), "{refused:?}");
    let longest = "y".repeat(bellhop_engine::MAX_REQUEST_ID_BYTES);
    engine.submit(with_id(&longest, request(SMALL, 1))).expect("an id at the bound is taken");
}

/// Queued inputs are charged to the memory budget until their jobs end, and a job first
/// in line waits for its room: a job whose input would leave the largest queued job too
/// little room is refused, so that no accepted job waits forever.
#[tokio::test]
async fn a_job_whose_input_would_leave_no_room_to_prove_is_refused() {
    use bellhop_host::config::Budget;
    // What a partition of LARGE needs, as a budget of one byte refuses it.
    let mut probe = config(1, 0.0);
    probe.memory.budget = Budget::Bytes(1);
    let refused = Engine::start(&probe, params_dir()).unwrap().submit(request(LARGE, 1));
    let Err(Refused::TooBig { need, .. }) = refused else { panic!("{refused:?}") };
    let mut config = holding(config(1, 0.0), LARGE, 3000);
    config.memory.budget = Budget::Bytes(need + 1000);
    let engine = Engine::start(&config, params_dir()).unwrap();
    let running = engine.submit(request(LARGE, 1)).unwrap().job_id;
    until(&engine, "the first job runs", |s| s.running.len() == 1 && s.memory.reserved_bytes > 0).await;
    let with_input = |bytes: usize| JobRequest { input: vec![7; bytes], ..request(SMALL, 1) };
    let held = engine.submit(with_id("held", with_input(600))).unwrap().job_id;
    let over = engine.submit(with_id("over", with_input(600)));
    let Err(refused @ Refused::NoRoomToProve { held: 600, job_bytes: 600, .. }) = over else { panic!("{over:?}") };
    assert!(refused.to_string().contains(&format!("a partition of {LARGE} needs")), "{refused}");
    assert!(refused.to_string().contains("raise [memory] budget"), "{refused}");
    // Room within it is taken: 400 more bytes fit.
    let fits = engine.submit(with_id("fits", with_input(400))).unwrap().job_id;
    for id in [&held, &fits] {
        engine.cancel(id).unwrap();
    }
    assert!(matches!(outcome(&engine, &running).await, Outcome::Completed { .. }));
    engine.submit(with_id("over", with_input(600))).expect("accepted once the jobs holding inputs ended");
}

#[tokio::test]
async fn the_queue_is_bounded_by_jobs_and_input_bytes_and_post_may_use_twice_the_bounds() {
    let mut config = holding(config(1, 0.0), LARGE, 3000);
    config.daemon.max_queued = 3;
    config.daemon.max_queued_bytes = 1000;
    let engine = Engine::start(&config, params_dir()).unwrap();
    let running = engine.submit(request(LARGE, 1)).unwrap().job_id;
    // Held in synthesis for 3 s, with its memory reserved.
    until(&engine, "the first job runs", |s| s.running.len() == 1 && s.memory.reserved_bytes > 0).await;
    // Jobs with input (which a catalog circuit refuses once synthesized; these are
    // cancelled before), queued behind the first one.
    let with_input = |bytes: usize| JobRequest { input: vec![7; bytes], ..request(SMALL, 1) };
    let reserved = engine.status().memory.reserved_bytes;
    let held = engine.submit(with_id("held", with_input(600))).unwrap().job_id;
    assert_eq!(engine.status().memory.reserved_bytes, reserved + 600, "a queued job's input counts in the budget");
    let over = engine.submit(with_id("over", with_input(600)));
    let Err(full @ Refused::QueueFull { jobs: 2, bytes: 600, job_bytes: 600, .. }) = over else { panic!("{over:?}") };
    assert!(full.to_string().contains("max_queued_bytes = 1000"), "{full}");
    // By count: a third job fits, a fourth does not, a CRITICAL one does.
    let third = engine.submit(request(SMALL, 1)).unwrap().job_id;
    assert!(matches!(engine.submit(request(SMALL, 2)), Err(Refused::QueueFull { jobs: 3, .. })));
    let critical =
        engine.submit(JobRequest { priority: Some(Priority::Critical), ..request(SMALL, 1) }).unwrap().job_id;
    // Jobs that end free their room and their input's memory.
    for id in [&held, &third] {
        engine.cancel(id).unwrap();
    }
    assert_eq!(engine.status().memory.reserved_bytes, reserved);
    let over = engine.submit(with_id("over", with_input(600))).unwrap().job_id;
    engine.cancel(&over).unwrap();
    for id in [&running, &critical] {
        assert!(matches!(outcome(&engine, id).await, Outcome::Completed { .. }), "{id}");
    }
}

/// Set in a child process of the next test: the state directory of the engine it runs.
const ABORTING_LIFE: &str = "BELLHOP_TEST_ABORTING_ENGINE";

/// A job that takes the process down with it runs again after each restart until it was
/// started `[daemon] max_attempts` times; then it ends FAILED, saying why, and the queue
/// moves on. Each life of the engine is a child process running this test.
#[tokio::test]
async fn a_job_that_kills_the_process_ends_failed_after_max_attempts() {
    const NAME: &str = "a_job_that_kills_the_process_ends_failed_after_max_attempts";
    if let Some(state_dir) = std::env::var_os(ABORTING_LIFE) {
        // The poison job aborts 300 ms after its synthesis, by when the next is journaled.
        let mut config = holding(config(1, 0.0), LARGE, 300);
        config.daemon.state_dir = state_dir.into();
        config.synthesis.options.insert("abort_on".into(), LARGE.into());
        let engine = Engine::start(&config, params_dir()).unwrap();
        let journal = engine.status().journal;
        if journal.requeued + journal.kept == 0 {
            engine.submit(with_id("poison", request(LARGE, 1))).unwrap();
            engine.submit(with_id("after", JobRequest { priority: Some(Priority::Low), ..request(SMALL, 1) })).unwrap();
        }
        for id in ["poison", "after"] {
            println!("{id}: {:?}", outcome(&engine, id).await);
        }
        return;
    }
    let state_dir = tempfile::tempdir().unwrap();
    let life = || {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env(ABORTING_LIFE, state_dir.path())
            .env(PARAMS_DIR, params_dir())
            .output()
            .unwrap()
    };
    let max_attempts = Config::default().daemon.max_attempts;
    for n in 1..=max_attempts {
        let died = life();
        let stderr = String::from_utf8_lossy(&died.stderr);
        assert!(!died.status.success(), "life {n} lived: {stderr}");
        assert!(stderr.contains(&format!("aborting the process on {LARGE}")), "life {n}: {stderr}");
    }
    let last = life();
    let (stdout, stderr) = (String::from_utf8_lossy(&last.stdout), String::from_utf8_lossy(&last.stderr));
    assert!(last.status.success(), "the last life died too: {stdout}\n{stderr}");
    let poison = stdout.lines().find(|l| l.contains("poison: ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(poison.contains("Failed") && poison.contains(&format!("stopped {max_attempts} times")), "{poison}");
    assert!(poison.contains("max_attempts"), "{poison}");
    assert!(stdout.contains("after: Completed"), "the queue did not move on: {stdout}");
}

#[tokio::test]
async fn missing_parameters_are_refused_with_the_file_and_the_fix() {
    let engine = engine(1, 0.0);
    let Err(Refused::MissingParams { path, how, .. }) = engine.submit(request("chain:512", 1)) else { panic!() };
    assert!(path.ends_with("bellhop-chain-512.params"), "{path}");
    assert!(how.contains("bellhop params gen chain:512"), "{how}");
    assert!(engine.preload(&"chain:512".parse().unwrap()).is_err());
}

/// A benchmark-only circuit (synthetic input, proofs that prove nothing) is never proved
/// for a caller unless `[daemon] synthetic_benchmarks` admits it.
#[tokio::test]
async fn benchmark_only_circuits_are_refused() {
    let engine = engine(1, 0.0);
    let circuit: CircuitSpec = "synthetic-porep:2KiB".parse().unwrap();
    let request = JobRequest {
        request_id: None,
        circuit,
        input: b"{}".to_vec(),
        partitions: 1,
        first_seed: 0,
        priority: None,
        prepared: None,
        aggregation: None,
    };
    let Err(Refused::Invalid(why)) = engine.submit(request) else { panic!("a synthetic-porep job was taken") };
    assert!(why.contains("for benchmarks only") && why.contains("synthetic_benchmarks = true"), "{why}");
    assert!(matches!(engine.preload(&circuit), Err(Refused::Invalid(_))));
}

/// Admitted (`[daemon] synthetic_benchmarks`), a synthetic PoRep is proved as a real one
/// is, and completes without a proof, also as the journal gives it back; a job journaled
/// while admitted fails after a restart that no longer admits it.
#[tokio::test]
async fn admitted_benchmarks_complete_without_a_proof() {
    let circuit: CircuitSpec = "synthetic-porep:2KiB".parse().unwrap();
    let params = tempfile::tempdir().unwrap();
    let shape = circuit.shape().unwrap().into();
    bellhop_host::synthetic_params::write(&shape, 1, &params.path().join(circuit.params_file_name().unwrap())).unwrap();
    let input = bellhop_filecoin::synthetic::porep_c1(bellhop_filecoin::SectorSize::Kib2, 7).unwrap();
    let mut admitting = config(1, 0.0);
    admitting.params.dir = params.path().to_path_buf();
    admitting.daemon.synthetic_benchmarks = true;
    let refusing = Config {
        daemon: DaemonConfig { synthetic_benchmarks: false, ..admitting.daemon.clone() },
        ..admitting.clone()
    };
    let start = |config: &Config| Engine::start(config, params_dir()).unwrap();

    // Journaled while admitted, stopped before it ended (its synthesis held past the
    // stop, so it is never proved): failed at a start that refuses it.
    let engine = start(&holding(admitting.clone(), "synthetic-porep:2KiB", 2000));
    let stopped = engine.submit(JobRequest::new(circuit, input.clone()).unwrap()).unwrap().job_id;
    engine.shutdown(Duration::ZERO);
    drop(engine);
    let engine = restart(&refusing);
    let Outcome::Failed(why) = outcome(&engine, &stopped).await else { panic!("a refused benchmark ran") };
    assert!(why.contains("for benchmarks only") && why.contains("synthetic_benchmarks"), "{why}");
    assert!(matches!(engine.submit(JobRequest::new(circuit, input.clone()).unwrap()), Err(Refused::Invalid(_))));
    drop(engine);

    let engine = start(&admitting);
    let job = engine.submit(JobRequest::new(circuit, input).unwrap()).unwrap().job_id;
    let Outcome::Benchmarked { timings } = outcome(&engine, &job).await else { panic!("{job} did not complete") };
    assert!(timings.synthesis > Duration::ZERO && timings.proving > Duration::ZERO);
    assert_eq!(engine.status().completed, 1);
    assert!(engine.metrics().contains(r#"outcome="benchmarked""#));
    drop(engine);
    let engine = restart(&refusing);
    assert!(matches!(outcome(&engine, &job).await, Outcome::Benchmarked { .. }), "as the journal keeps it");
}

#[tokio::test]
async fn parameter_sets_in_use_are_not_evicted() {
    let engine = engine(1, 10.0);
    let large: CircuitSpec = LARGE.parse().unwrap();
    let loaded = engine.preload(&large).unwrap();
    assert!(!loaded.already_loaded);
    assert!(engine.preload(&large).unwrap().already_loaded);
    let job = engine.submit(request(LARGE, 4)).unwrap().job_id;
    until(&engine, "the job holds its parameters", |s| s.params.iter().any(|p| p.users > 0)).await;
    let in_use = engine.evict(&large).unwrap_err();
    assert!(in_use.users > 0 && in_use.to_string().contains("in use"), "{in_use}");
    assert!(matches!(outcome(&engine, &job).await, Outcome::Completed { .. }));
    let evicted = engine.evict(&large).unwrap();
    assert!(evicted.was_loaded && evicted.freed_bytes > 0);
    assert!(!engine.evict(&large).unwrap().was_loaded);
    assert!(engine.status().params.is_empty());
    assert!(engine.metrics().contains("bellhop_params_evictions_total"));
}

#[tokio::test]
async fn shutdown_finishes_started_jobs_and_the_rest_run_after_a_restart() {
    let config = config(1, 5.0);
    let engine = Arc::new(Engine::start(&config, params_dir()).unwrap());
    let started = engine.submit(request(LARGE, 2)).unwrap().job_id;
    let waiting = engine.submit(request(LARGE, 2)).unwrap().job_id;
    until(&engine, "the first job runs", |s| s.queues.iter().any(|q| q.in_progress == 1)).await;
    let drained = {
        let engine = Arc::clone(&engine);
        tokio::task::spawn_blocking(move || engine.shutdown(Duration::from_secs(120))).await.unwrap()
    };
    assert!(drained);
    let Outcome::Completed { proof: first, .. } = outcome(&engine, &started).await else { panic!() };
    assert_eq!(engine.wait(&waiting, Some(Duration::from_millis(200))).await.unwrap(), Waited::Timeout);
    assert_eq!(engine.submit(request(SMALL, 1)), Err(Refused::ShuttingDown));
    drop(Arc::into_inner(engine).expect("the only reference"));

    // A damaged line in the journal is reported and skipped; the rest is taken back.
    let journal = config.daemon.state_dir.join("journal");
    let mut text = std::fs::read_to_string(&journal).unwrap();
    text.push_str("deadbeefdeadbeef {\"record\":\"ended\",\"id\":\"torn\n");
    std::fs::write(&journal, text).unwrap();
    let engine = Engine::start(&config, params_dir()).unwrap();
    let status = engine.status();
    assert_eq!((status.journal.requeued, status.journal.kept), (1, 1), "{:?}", status.journal);
    assert_eq!(status.journal.damaged.len(), 1, "{:?}", status.journal);
    // The finished job is kept as it ended; the other one runs now, once.
    let Outcome::Completed { proof: again, .. } = outcome(&engine, &started).await else { panic!() };
    assert_eq!(again, first);
    let Outcome::Completed { proof, .. } = outcome(&engine, &waiting).await else { panic!() };
    assert_verifies(LARGE, &proof);
    assert_eq!(engine.status().completed, 1);
    // And its id is still the same job.
    assert!(engine.submit(with_id(&waiting, request(LARGE, 2))).unwrap().existing);
}

/// The parameter file bytes of `circuit` once decoded, and one partition's bytes.
fn sizes(circuit: &str) -> (u64, u64) {
    let spec: CircuitSpec = circuit.parse().unwrap();
    let shape = params::Shape::read(&params_dir().join(spec.params_file_name().unwrap()), circuit).unwrap();
    (shape.resident_bytes(), shape.proof_bytes())
}

#[tokio::test]
async fn parameter_sets_compete_for_the_budget_and_it_is_never_exceeded() {
    let circuits = COMPETING;
    let (sets, partitions): (Vec<u64>, Vec<u64>) = circuits.iter().map(|c| sizes(c)).unzip();
    let need = sets.iter().zip(&partitions).map(|(s, p)| s + p).max().unwrap();
    let budget = need + sets.iter().min().unwrap() / 4;
    assert!(sets.iter().sum::<u64>() + partitions[0] > budget, "the three sets must not fit together");
    let mut config = config(2, 0.0);
    config.memory.budget = bellhop_host::config::Budget::Bytes(budget);
    config.memory.eviction_min_idle = Duration::ZERO;
    let engine = Engine::start(&config, params_dir()).unwrap();
    let mut jobs = Vec::new();
    for round in 0..3 {
        for circuit in circuits {
            jobs.push((
                circuit,
                engine.submit(with_id(&format!("{circuit}-{round}"), request(circuit, 2))).unwrap().job_id,
            ));
        }
    }
    for (circuit, id) in jobs {
        let Outcome::Completed { proof, .. } = outcome(&engine, &id).await else { panic!("{id}") };
        assert_verifies(circuit, &proof);
    }
    let status = engine.status();
    eprintln!("budget {budget}: peak reserved {}", status.memory.peak_reserved_bytes);
    assert!(status.memory.peak_reserved_bytes <= budget, "{:?} against {budget}", status.memory);
    assert!(status.memory.peak_reserved_bytes > 0);
    let metrics = engine.metrics();
    let total = |name: &str| -> u64 {
        metrics.lines().filter(|l| l.starts_with(name)).filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok()).sum()
    };
    assert!(total("bellhop_params_evictions_total") >= 1, "{metrics}");
    assert!(total("bellhop_params_loads_total") > 3, "sets were loaded again after eviction: {metrics}");
    assert!(metrics.contains(&format!("bellhop_memory_budget_bytes {budget}")), "{metrics}");
}

#[tokio::test]
async fn a_job_that_can_never_fit_is_refused_at_once() {
    let mut config = config(1, 0.0);
    config.memory.budget = bellhop_host::config::Budget::Bytes(1 << 20);
    let engine = Engine::start(&config, params_dir()).unwrap();
    let Err(refused @ Refused::TooBig { need, budget, .. }) = engine.submit(request(LARGE, 1)) else { panic!() };
    assert_eq!(budget, 1 << 20);
    let (set, partition) = sizes(LARGE);
    assert_eq!(need, set + partition);
    assert!(refused.to_string().contains("raise the budget"), "{refused}");
}

/// Two devices (two CPU backends on one machine, as `devices = [0, 0]` opens two on one
/// GPU): the partitions of one job are spread over both, and so are many jobs'.
#[tokio::test]
async fn two_devices_share_the_work() {
    let mut config = config(2, 0.0);
    config.backend.devices = Some(vec![0, 0]);
    let engine = Engine::start(&config, params_dir()).unwrap();
    let status = engine.status();
    assert_eq!(status.devices.len(), 2);
    let one = engine.submit(request(LARGE, 6)).unwrap().job_id;
    let Outcome::Completed { proof, .. } = outcome(&engine, &one).await else { panic!() };
    assert_verifies(LARGE, &proof);
    let proved: Vec<u64> = engine.status().devices.iter().map(|d| d.proved).collect();
    assert!(proved.iter().all(|&p| p > 0), "one job's partitions on both devices: {proved:?}");
    let submitted = engine.submit(request(LARGE, 1)).unwrap();
    assert_eq!(submitted.assigned_device, None, "two devices: decided when one is free");
    let jobs: Vec<String> = std::iter::once(submitted.job_id)
        .chain((0..5).map(|_| engine.submit(request(LARGE, 2)).unwrap().job_id))
        .collect();
    for id in &jobs {
        let Outcome::Completed { proof, .. } = outcome(&engine, id).await else { panic!() };
        assert_verifies(LARGE, &proof);
    }
    let proved: Vec<u64> = engine.status().devices.iter().map(|d| d.proved).collect();
    eprintln!("partitions per device: {proved:?}");
    assert_eq!(proved.iter().sum::<u64>(), 6 + 11);
    assert!(proved.iter().all(|&p| p > 0), "both devices proved: {proved:?}");
}

/// The phases every engine in this process records (its workers report to the global
/// subscriber), installed once.
fn phase_log() -> &'static bellhop_host::phases::PhaseLog {
    use tracing_subscriber::layer::SubscriberExt;
    static LOG: OnceLock<bellhop_host::phases::PhaseLog> = OnceLock::new();
    LOG.get_or_init(|| {
        let log = bellhop_host::phases::PhaseLog::default();
        let subscriber = tracing_subscriber::registry().with(bellhop_host::phases::PhaseLayer::new(log.clone()));
        tracing::subscriber::set_global_default(subscriber).expect("no other global subscriber");
        log
    })
}

/// Synthesis calls of `count` partitions recorded so far (of any engine: only this test's
/// proves in batches of more than one).
fn synthesis_calls_of(count: usize) -> usize {
    phase_log().take().iter().filter(|r| r.phase == "synthesis" && r.count == count).count()
}

/// With `[pipeline] batch = 2`, a job's partitions are synthesized two at a time in one
/// strategy call, and so are the partitions of two jobs of one circuit and priority; a job
/// of another priority is not batched with them. Every proof verifies.
#[tokio::test]
async fn partitions_of_one_circuit_are_synthesized_and_proved_in_batches() {
    phase_log();
    let mut config = holding(config(1, 0.0), SMALL, 300);
    config.pipeline.batch = 2;
    let engine = Engine::start(&config, params_dir()).unwrap();
    let four = engine.submit(request(SMALL, 4)).unwrap();
    let Outcome::Completed { proof, .. } = outcome(&engine, &four.job_id).await else { panic!() };
    assert_eq!(proof.len(), 4 * 192);
    assert_verifies(SMALL, &proof);
    assert_eq!(synthesis_calls_of(2), 2, "four partitions in two batches of two");
    // One job holds the worker; two single-partition jobs queued behind it go together,
    // and a HIGH one of the same circuit is taken first, alone.
    let ids: Vec<String> = (0..3)
        .map(|n| engine.submit(with_id(&format!("one-{n}"), request(SMALL, 1))).unwrap().job_id)
        .chain(std::iter::once({
            let high = JobRequest { priority: Some(Priority::High), ..with_id("high", request(SMALL, 1)) };
            engine.submit(high).unwrap().job_id
        }))
        .collect();
    for id in &ids {
        let Outcome::Completed { proof, .. } = outcome(&engine, id).await else { panic!("{id}") };
        assert_verifies(SMALL, &proof);
    }
    assert!(synthesis_calls_of(2) >= 1, "two queued jobs of one circuit and priority share a batch");
}
