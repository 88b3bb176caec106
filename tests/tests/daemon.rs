//! `bellhop serve` end to end over loopback TCP and a unix socket, on the CPU backend:
//! WinningPoSt and WindowPoSt of 2 KiB sectors sealed by filecoin-proofs, sent in Curio's
//! formats through a real gRPC client and checked by filecoin-proofs' verifiers;
//! Curio's own request ids (one for every WindowPoSt partition of a deadline) and
//! retries, duplicates, timeouts, cancellation, eviction, bad requests, priority, a
//! panicking plugin and SIGTERM. The daemon answers GetStatus after every case.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
    time::{Duration, Instant},
};

use bellhop_circuits::CircuitSpec;
use bellhop_filecoin::{curio, make, reference, verify, FilecoinSpec, Kind, SectorSize};
use bellhop_host::params;
use bellhop_proto::v1::{
    self as pb, await_proof_response::Status as AwaitStatus, AwaitProofRequest, AwaitProofResponse, CancelProofRequest,
    EvictSrsRequest, GetMetricsRequest, GetStatusRequest, PreloadSrsRequest, ProveRequest,
};
use bellhop_server::client::{connect, submit_request, Client};
use bellhop_tests::{build_dir, built_library, curio as go, daemon::Daemon};
use bellperson::groth16::generate_random_parameters;
use blstrs::Bls12;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tonic::Code;

/// Three sealed 2 KiB sectors of miner 1000, their PoSt inputs and Curio's requests.
struct Fixture {
    dir: PathBuf,
    params: PathBuf,
    winning: Vec<u8>,
    /// Three sectors: two partitions.
    window: Vec<u8>,
    winning_request: curio::Request,
    window_requests: Vec<curio::Request>,
    /// Two partitions of one WindowPoSt deadline as Curio proves them, each on its own
    /// (sectors 1 and 2, sector 3; one randomness): each one's input and request.
    deadline: Vec<(Vec<u8>, curio::Request)>,
}

fn spec(kind: Kind) -> FilecoinSpec {
    FilecoinSpec { kind, sector_size: SectorSize::Kib2 }
}

/// Insecure parameters for `spec`, kept between runs under the build directory (their
/// file names change with the circuit).
fn cached_params(dir: &Path, spec: FilecoinSpec) {
    let circuit = CircuitSpec::Filecoin(spec);
    let path = dir.join(circuit.params_file_name().unwrap());
    if path.exists() && path.with_extension("vk").exists() {
        return;
    }
    let generated =
        generate_random_parameters::<Bls12, _, _>(circuit.setup_circuit().unwrap(), &mut ChaCha20Rng::seed_from_u64(5))
            .unwrap();
    params::write_for_circuit(&circuit, &generated, &path).unwrap();
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = build_dir().join(format!("daemon-{}", std::process::id()));
        let params = build_dir().join("test-params");
        bellhop_filecoin::set_directories(&params, &dir.join("parents"));
        cached_params(&params, spec(Kind::WinningPost));
        cached_params(&params, spec(Kind::WindowPost));
        let sectors: Vec<PathBuf> = (1..=3)
            .map(|seed| {
                let sector = dir.join(format!("sector-{seed}"));
                make::seal(&sector, SectorSize::Kib2, seed, 1000, None).unwrap();
                sector
            })
            .collect();
        let winning = make::post(spec(Kind::WinningPost), &sectors, 7).unwrap();
        let window = make::post(spec(Kind::WindowPost), &sectors, 8).unwrap();
        let mut winning_requests = curio::requests(spec(Kind::WinningPost), &winning, None).unwrap();
        let window_requests = curio::requests(spec(Kind::WindowPost), &window, None).unwrap();
        assert_eq!((winning_requests.len(), window_requests.len()), (1, 2));
        let deadline = [&sectors[..2], &sectors[2..]]
            .into_iter()
            .map(|partition| {
                let input = make::post(spec(Kind::WindowPost), partition, 9).unwrap();
                let mut requests = curio::requests(spec(Kind::WindowPost), &input, None).unwrap();
                assert_eq!(requests.len(), 1);
                (input, requests.remove(0))
            })
            .collect();
        Fixture { winning_request: winning_requests.remove(0), window_requests, deadline, winning, window, dir, params }
    })
}

/// The config of a daemon named `name`: the fixture's parameters, its own journal, and
/// `extra` lines (`[daemon]` keys go in `daemon`).
fn config(name: &str, daemon: &str, extra: &str) -> String {
    let fixture = fixture();
    let state = fixture.dir.join(name).join("state");
    format!(
        "[params]\ndir = {:?}\n[daemon]\nstate_dir = {:?}\n{daemon}\n{extra}",
        fixture.params.display().to_string(),
        state.display().to_string()
    )
}

/// A daemon on `listen` with the fixture's parameters and `extra` config lines.
fn daemon(name: &str, listen: &str, extra: &str) -> Daemon {
    daemon_with(name, listen, "", extra)
}

fn daemon_with(name: &str, listen: &str, daemon: &str, extra: &str) -> Daemon {
    Daemon::start(&fixture().dir.join(name), &config(name, daemon, extra), listen, false)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

async fn prove(client: &mut Client, request: &curio::Request, id: &str) -> AwaitProofResponse {
    let submit = submit_request(request, id, pb::Priority::Unspecified);
    client.prove(ProveRequest { submit: Some(submit) }).await.unwrap().into_inner().result.unwrap()
}

fn completed(response: &AwaitProofResponse) -> &[u8] {
    assert_eq!(response.status, AwaitStatus::Completed as i32, "{response:?}");
    &response.proof
}

/// The daemon still answers, and its counters.
async fn alive(client: &mut Client) -> pb::GetStatusResponse {
    client.get_status(GetStatusRequest {}).await.expect("the daemon answers GetStatus").into_inner()
}

/// Proves WinningPoSt and both WindowPoSt partitions through `addr`; filecoin-proofs
/// accepts them.
async fn post_proofs_verify(addr: &str) {
    let fixture = fixture();
    let mut client = connect(addr).await.unwrap();
    let winning = prove(&mut client, &fixture.winning_request, "").await;
    assert!(winning.total_ms > 0 && winning.gpu_compute_ms > 0);
    let proof = completed(&winning).to_vec();
    assert_eq!(proof.len(), 192);
    assert!(verify::verify(spec(Kind::WinningPost), &fixture.winning, None, &proof).unwrap());
    let mut window = Vec::new();
    for request in &fixture.window_requests {
        window.extend_from_slice(completed(&prove(&mut client, request, "").await));
    }
    assert!(verify::verify(spec(Kind::WindowPost), &fixture.window, None, &window).unwrap());
    // The partitions in the other order are another proof, which filecoin-proofs rejects.
    let swapped = [&window[192..], &window[..192]].concat();
    assert!(!verify::verify(spec(Kind::WindowPost), &fixture.window, None, &swapped).unwrap());
    let status = alive(&mut client).await;
    assert_eq!(status.total_proofs_completed, 3);
    let mut held: Vec<&str> = status.loaded_srs.iter().map(|s| s.circuit_id.as_str()).collect();
    held.sort();
    assert_eq!(held, ["winning-2k", "wpost-2k"]);
    assert!(status.loaded_srs.iter().all(|s| s.size_bytes > 0));
    let device = &status.gpus[0];
    assert!(status.gpus.len() == 1 && device.vram_free_bytes > 0 && device.vram_free_bytes <= device.vram_total_bytes);
    assert_eq!(device.kept_host_bytes, 0, "the CPU backend keeps no host memory");
    assert!(status.pinned_memory_bytes >= status.loaded_srs.iter().map(|s| s.size_bytes).sum::<u64>());
}

/// `bellhop client status` through `addr`, as an operator reads it.
fn client_status_text(addr: &str) -> String {
    let ran = std::process::Command::new(build_dir().join("bellhop"))
        .args(["client", "--addr", addr, "status"])
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    String::from_utf8(ran.stdout).unwrap()
}

#[test]
fn post_proofs_over_tcp_and_a_unix_socket_are_accepted_by_filecoin_proofs() {
    let tcp = daemon("tcp", "127.0.0.1:0", "");
    runtime().block_on(post_proofs_verify(&tcp.addr));
    let text = client_status_text(&tcp.addr);
    assert!(text.contains("proofs completed 3") && text.contains("0 MiB of host memory kept"), "{text}");
    assert!(text.contains("memory budget: ") && text.contains(" MiB reserved of "), "{text}");
    let socket = fixture().dir.join("bellhop.sock");
    let unix = daemon("unix", &format!("unix://{}", socket.display()), "");
    assert!(unix.addr.starts_with("unix://"));
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777, 0o660);
    runtime().block_on(post_proofs_verify(&unix.addr));
    // A second daemon on the socket the first still listens on is refused, and the first
    // serves on.
    let dir = fixture().dir.join("unix-second");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bellhop.toml"), config("unix-second", "", "")).unwrap();
    let mut second = std::process::Command::new(bellhop_tests::build_dir().join("bellhop"))
        .args(["serve", "--config"])
        .arg(dir.join("bellhop.toml"))
        .args(["--listen", &unix.addr, "--status-listen", ""])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let exited = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            second.kill().unwrap();
            panic!("a second daemon took over the first one's socket");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut second.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!exited.success() && stderr.contains("another process (a running daemon?) listens on"), "{stderr}");
    runtime().block_on(async { alive(&mut connect(&unix.addr).await.unwrap()).await });
}

async fn code_of<T: std::fmt::Debug>(
    call: impl std::future::Future<Output = Result<T, tonic::Status>>,
) -> (Code, String) {
    let status = call.await.expect_err("the call should fail");
    (status.code(), status.message().to_string())
}

/// Polls GetStatus until `ready` holds.
async fn wait_until(client: &mut Client, what: &str, ready: impl Fn(&pb::GetStatusResponse) -> bool) {
    let start = Instant::now();
    while !ready(&alive(client).await) {
        assert!(start.elapsed() < Duration::from_secs(120), "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn wait_until_running(client: &mut Client) {
    wait_until(client, "a job runs", |s| s.queues.iter().any(|q| q.in_progress > 0)).await;
}

#[test]
fn duplicates_timeouts_cancellation_eviction_and_bad_requests() {
    let fixture = fixture();
    let daemon = daemon_with("requests", "127.0.0.1:0", "synthesis_workers = 1", "");
    runtime().block_on(async {
        let mut client = connect(&daemon.addr).await.unwrap();
        let window = &fixture.window_requests;
        let submit = |request: &curio::Request, id: &str| submit_request(request, id, pb::Priority::Unspecified);

        // The same id and payload is the same job; another payload under that id is
        // another job, with an id of its own.
        let first = client.submit_proof(submit(&window[0], "dup")).await.unwrap().into_inner();
        let again = client.submit_proof(submit(&window[0], "dup")).await.unwrap().into_inner();
        assert_eq!((first.job_id.as_str(), again.job_id.as_str()), ("dup", "dup"));
        assert_eq!(first.assigned_gpu, "0");
        let second = client.submit_proof(submit(&window[1], "dup")).await.unwrap().into_inner();
        assert!(second.job_id.starts_with("dup~"), "{second:?}");
        alive(&mut client).await;

        // Awaiting with a timeout answers TIMEOUT and the job goes on.
        let waited = client.await_proof(AwaitProofRequest { job_id: "dup".into(), timeout_ms: 1 }).await.unwrap();
        assert_eq!(waited.into_inner().status, AwaitStatus::Timeout as i32);
        let done = client.await_proof(AwaitProofRequest { job_id: "dup".into(), timeout_ms: 0 }).await.unwrap();
        assert_eq!(completed(&done.into_inner()).len(), 192);
        let done = client.await_proof(AwaitProofRequest { job_id: second.job_id, timeout_ms: 0 }).await.unwrap();
        completed(&done.into_inner());
        assert_eq!(alive(&mut client).await.total_proofs_completed, 2, "one job for each payload under `dup`");

        // Cancelling: a running job, and one queued behind it and two more.
        let running = client.submit_proof(submit(&fixture.winning_request, "running")).await.unwrap().into_inner();
        for filler in ["filler-1", "filler-2"] {
            client.submit_proof(submit(&window[0], filler)).await.unwrap();
        }
        let low = submit_request(&window[1], "queued", pb::Priority::Low);
        let queued = client.submit_proof(low).await.unwrap().into_inner();
        assert_eq!(queued.queue_position, 3, "{queued:?}");
        wait_until(&mut client, "the running job holds its parameters", |s| {
            s.loaded_srs.iter().any(|set| set.circuit_id == "winning-2k" && set.ref_count > 0)
        })
        .await;
        // The parameters a running job holds are not evicted, and the reply says why.
        let (code, message) = code_of(client.evict_srs(EvictSrsRequest { circuit_id: "winning-2k".into() })).await;
        assert_eq!(code, Code::FailedPrecondition);
        assert!(message.contains("in use"), "{message}");
        let cancel = |id: &str| CancelProofRequest { job_id: id.into() };
        assert!(!client.cancel_proof(cancel(&queued.job_id)).await.unwrap().into_inner().was_running);
        assert!(client.cancel_proof(cancel(&running.job_id)).await.unwrap().into_inner().was_running);
        for id in ["queued", "running"] {
            let waited = client.await_proof(AwaitProofRequest { job_id: id.into(), timeout_ms: 0 }).await.unwrap();
            assert_eq!(waited.into_inner().status, AwaitStatus::Cancelled as i32);
        }
        alive(&mut client).await;

        // Once no proof holds it, a parameter set is evicted, and loaded again on demand.
        let start = Instant::now();
        let evicted = loop {
            match client.evict_srs(EvictSrsRequest { circuit_id: "winning-2k".into() }).await {
                Ok(evicted) => break evicted.into_inner(),
                Err(_) if start.elapsed() < Duration::from_secs(60) => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => panic!("{e}"),
            }
        };
        assert!(evicted.was_loaded && evicted.freed_bytes > 0);
        let preloaded = client.preload_srs(PreloadSrsRequest { circuit_id: "winning-post:2KiB".into() }).await.unwrap();
        assert!(!preloaded.into_inner().already_loaded);
        alive(&mut client).await;

        // Bad requests, each refused naming the field, the daemon serving on.
        let mut bad = Vec::new();
        let mut kind = submit(&window[0], "");
        kind.proof_kind = 0;
        bad.push((kind, "proof_kind"));
        let mut short = submit(&window[0], "");
        short.randomness.pop();
        bad.push((short, "randomness"));
        let mut garbage = submit(&window[0], "");
        garbage.vanilla_proofs[0] = b"not bincode".to_vec();
        bad.push((garbage, "vanilla_proofs[0]"));
        let mut registered = submit(&window[0], "");
        registered.registered_proof = 99;
        bad.push((registered, "registered_proof"));
        let mut porep = submit(&window[0], "");
        porep.proof_kind = pb::ProofKind::PorepSealCommit as i32;
        porep.vanilla_proof = b"{\"SectorNum\": 1}".to_vec();
        bad.push((porep, "vanilla_proof"));
        let mut priority = submit(&window[0], "");
        priority.priority = 9;
        bad.push((priority, "priority"));
        for (request, field) in bad {
            let (code, message) = code_of(client.submit_proof(request)).await;
            assert_eq!(code, Code::InvalidArgument, "{field}: {message}");
            assert!(message.starts_with(&format!("{field}: ")), "{field}: {message}");
            alive(&mut client).await;
        }
        let (code, message) = code_of(client.prove(ProveRequest { submit: None })).await;
        assert_eq!((code, message.as_str()), (Code::InvalidArgument, "submit: is missing"));

        // A PoRep whose vanilla proofs do not prove its comm_r is refused at submit, where
        // the whole job's vanilla proofs are checked once.
        let sector = fixture.dir.join("sector-1");
        let c1 = std::fs::read(sector.join(make::C1_FILE)).unwrap();
        let mut value: serde_json::Value = serde_json::from_slice(&c1).unwrap();
        value["comm_r"][0] = (value["comm_r"][0].as_u64().unwrap() ^ 1).into();
        let sealed = make::SealedSector::read(&sector).unwrap();
        let porep = curio::requests(spec(Kind::Porep), &serde_json::to_vec(&value).unwrap(), Some(&sealed)).unwrap();
        let (code, message) = code_of(client.submit_proof(go::porep(&porep[0], 2048))).await;
        assert_eq!(code, Code::InvalidArgument, "{message}");
        assert!(
            message.starts_with("vanilla_proof: ") && message.contains("do not match their public data"),
            "{message}"
        );
        alive(&mut client).await;

        // A missing parameter file: the file and how to get it.
        let mut eight = submit(&fixture.winning_request, "");
        eight.registered_proof = 1; // WinningPoSt of 8 MiB sectors: no parameters here.
        let (code, message) = code_of(client.submit_proof(eight)).await;
        assert_eq!(code, Code::FailedPrecondition, "{message}");
        assert!(
            message.contains("v28-proof-of-spacetime-fallback") && message.contains("bellhop params gen"),
            "{message}"
        );
        alive(&mut client).await;

        // A proof that cannot be made fails with the reason: vanilla proofs drawn with other randomness.
        let mut other = fixture.winning_request.clone();
        other.randomness[0] ^= 1;
        let failed = prove(&mut client, &other, "").await;
        assert_eq!(failed.status, AwaitStatus::Failed as i32);
        assert!(failed.error_message.contains("do not match their public data"), "{}", failed.error_message);

        // Unknown jobs are not found.
        let (code, _) = code_of(client.await_proof(AwaitProofRequest { job_id: "nope".into(), timeout_ms: 0 })).await;
        assert_eq!(code, Code::NotFound);
        let (code, _) = code_of(client.cancel_proof(CancelProofRequest { job_id: "nope".into() })).await;
        assert_eq!(code, Code::NotFound);
        let (code, _) = code_of(client.preload_srs(PreloadSrsRequest { circuit_id: "porep-128g".into() })).await;
        assert_eq!(code, Code::InvalidArgument);
        // 64 GiB is a size Bellhop proves: only its parameters are missing here.
        let (code, message) = code_of(client.preload_srs(PreloadSrsRequest { circuit_id: "porep-64g".into() })).await;
        assert_eq!(code, Code::FailedPrecondition, "{message}");
        assert!(message.contains("v28-stacked-proof-of-replication") && message.contains("porep:64GiB"), "{message}");

        for filler in ["filler-1", "filler-2"] {
            let done = client.await_proof(AwaitProofRequest { job_id: filler.into(), timeout_ms: 0 }).await.unwrap();
            completed(&done.into_inner());
        }
        let status = alive(&mut client).await;
        assert_eq!((status.total_proofs_completed, status.total_proofs_failed), (4, 1));
        let metrics = client.get_metrics(GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
        assert!(metrics.contains(r#"bellhop_jobs_total{kind="winning-post",outcome="cancelled"} 1"#), "{metrics}");
        assert!(metrics.contains(r#"bellhop_jobs_total{kind="winning-post",outcome="failed"} 1"#), "{metrics}");
    });
}

#[test]
fn go_formats_byte_slices_as_curio_puts_them_in_ids() {
    assert_eq!(go::go_decimal_bytes(&[0, 17, 255]), "[0 17 255]");
    assert_eq!(go::go_hex_bytes(&[0, 17, 255]), "0011ff");
}

/// Curio's WindowPoSt task proves each partition of a deadline on its own, as partition 0,
/// so both send `wdpost-<miner>-0-<randomness>`: both are proved, each verifies.
#[test]
fn window_post_partitions_of_one_deadline_under_curios_one_id_both_verify() {
    let fixture = fixture();
    let daemon = daemon("deadline", "127.0.0.1:0", "");
    runtime().block_on(async {
        let client = connect(&daemon.addr).await.unwrap();
        let submits: Vec<_> = fixture.deadline.iter().map(|(_, request)| go::window_post(request, 2048)).collect();
        assert_eq!(submits[0].request_id, submits[1].request_id);
        let randomness = go::go_decimal_bytes(&fixture.deadline[0].1.randomness[..8]);
        assert_eq!(submits[0].request_id, format!("wdpost-1000-0-{randomness}"));
        let mut proving = tokio::task::JoinSet::new();
        for (k, submit) in submits.into_iter().enumerate() {
            let mut client = client.clone();
            proving.spawn(async move {
                let result = client.prove(ProveRequest { submit: Some(submit) }).await.unwrap();
                (k, result.into_inner().result.unwrap())
            });
        }
        while let Some(done) = proving.join_next().await {
            let (k, result) = done.unwrap();
            let input = &fixture.deadline[k].0;
            assert!(verify::verify(spec(Kind::WindowPost), input, None, completed(&result)).unwrap(), "partition {k}");
        }
        let mut client = client.clone();
        assert_eq!(alive(&mut client).await.total_proofs_completed, 2);
        // Curio's retry of a partition that completed gets its proof back: no third run.
        let retried = client.prove(ProveRequest { submit: Some(go::window_post(&fixture.deadline[1].1, 2048)) }).await;
        let retried = retried.unwrap().into_inner().result.unwrap();
        assert!(verify::verify(spec(Kind::WindowPost), &fixture.deadline[1].0, None, completed(&retried)).unwrap());
        assert_eq!(alive(&mut client).await.total_proofs_completed, 2);
    });
    let log = std::fs::read_to_string(&daemon.log).unwrap();
    assert!(log.contains("already names job") && log.contains("is another job"), "the collision is logged: {log}");
}

/// A job that failed is not the answer to Curio's retry of it: the retry runs again.
#[test]
fn curios_retry_of_a_failed_window_post_runs_again_and_completes() {
    let fixture = fixture();
    // A parameter directory of this daemon's own, whose WindowPoSt file has one point
    // damaged (as a half-fetched file would): accepted at submit, failing when read.
    let params = fixture.dir.join("retry").join("params");
    std::fs::create_dir_all(&params).unwrap();
    let circuit = CircuitSpec::Filecoin(spec(Kind::WindowPost));
    let name = circuit.params_file_name().unwrap();
    let good = std::fs::read(fixture.params.join(&name)).unwrap();
    let mut damaged = good.clone();
    damaged[good.len() / 2] ^= 1;
    std::fs::write(params.join(&name), &damaged).unwrap();
    let vk = std::path::Path::new(&name).with_extension("vk");
    std::fs::copy(fixture.params.join(&vk), params.join(&vk)).unwrap();
    let state = fixture.dir.join("retry").join("state");
    let toml = format!(
        "[params]\ndir = {:?}\n[daemon]\nstate_dir = {:?}\n",
        params.display().to_string(),
        state.display().to_string()
    );
    let daemon = Daemon::start(&fixture.dir.join("retry"), &toml, "127.0.0.1:0", false);
    runtime().block_on(async {
        let mut client = connect(&daemon.addr).await.unwrap();
        let (input, request) = &fixture.deadline[0];
        let prove = |client: &mut Client| {
            let submit = go::window_post(request, 2048);
            let mut client = client.clone();
            async move { client.prove(ProveRequest { submit: Some(submit) }).await.unwrap().into_inner().result.unwrap() }
        };
        let failed = prove(&mut client).await;
        assert_eq!(failed.status, AwaitStatus::Failed as i32, "{failed:?}");
        assert!(failed.error_message.contains("its parameters"), "{}", failed.error_message);
        // The operator fetches the file again; Curio's task scheduler retries the task.
        std::fs::write(params.join(&name), &good).unwrap();
        let retried = prove(&mut client).await;
        assert!(verify::verify(spec(Kind::WindowPost), input, None, completed(&retried)).unwrap());
        let status = alive(&mut client).await;
        assert_eq!((status.total_proofs_completed, status.total_proofs_failed), (1, 1));
    });
}

#[test]
fn a_winning_post_submitted_last_passes_a_window_post_backlog() {
    let fixture = fixture();
    let daemon = daemon_with("priority", "127.0.0.1:0", "synthesis_workers = 1", "");
    runtime().block_on(async {
        let client = connect(&daemon.addr).await.unwrap();
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        let backlog = 6;
        for i in 0..backlog {
            let (mut client, request) = (client.clone(), fixture.window_requests[i % 2].clone());
            tasks.spawn(async move {
                completed(&prove(&mut client, &request, &format!("window-{i}")).await);
                (format!("window-{i}"), start.elapsed())
            });
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (mut client, winning) = (client.clone(), fixture.winning_request.clone());
        let submitted = start.elapsed();
        tasks.spawn(async move {
            completed(&prove(&mut client, &winning, "winning").await);
            ("winning".to_string(), start.elapsed())
        });
        let mut ends = Vec::new();
        while let Some(end) = tasks.join_next().await {
            ends.push(end.unwrap());
        }
        ends.sort_by_key(|(_, at)| *at);
        let order: Vec<&str> = ends.iter().map(|(id, _)| id.as_str()).collect();
        let winning_at = ends.iter().find(|(id, _)| id == "winning").unwrap().1;
        eprintln!(
            "WinningPoSt submitted behind {backlog} WindowPoSt partitions: latency {:.2?}; all done at {:.2?}; order {order:?}",
            winning_at - submitted,
            ends.last().unwrap().1
        );
        // Only the partitions already synthesized or on the device go before it.
        let position = order.iter().position(|id| *id == "winning").unwrap();
        assert!(position <= 3, "{order:?}");
    });
}

#[test]
fn a_panicking_plugin_fails_its_job_and_the_daemon_serves_on() {
    let fixture = fixture();
    let backend = built_library("fixture_panicking_backend");
    let daemon = daemon("panic", "127.0.0.1:0", &format!("[backend]\nplugin = {:?}\n", backend.display().to_string()));
    runtime().block_on(async {
        let mut client = connect(&daemon.addr).await.unwrap();
        for _ in 0..2 {
            let failed = prove(&mut client, &fixture.window_requests[1], "").await;
            assert_eq!(failed.status, AwaitStatus::Failed as i32);
            assert!(failed.error_message.contains("exploded on purpose"), "{}", failed.error_message);
            assert_eq!(alive(&mut client).await.gpus.len(), 1);
        }
    });
}

#[test]
fn sigterm_lets_the_running_job_finish_and_exits_0() {
    let fixture = fixture();
    let daemon = daemon_with("sigterm", "127.0.0.1:0", "shutdown_grace = \"2m\"", "");
    let addr = daemon.addr.clone();
    let rt = runtime();
    let (mut client, job) = rt.block_on(async {
        let mut client = connect(&addr).await.unwrap();
        let submit = submit_request(&fixture.winning_request, "last", pb::Priority::Unspecified);
        let job = client.submit_proof(submit).await.unwrap().into_inner().job_id;
        wait_until_running(&mut client).await;
        (client, job)
    });
    let waiting = rt.spawn(async move { client.await_proof(AwaitProofRequest { job_id: job, timeout_ms: 0 }).await });
    std::thread::sleep(Duration::from_millis(100));
    let exit = daemon.terminate(Duration::from_secs(150));
    assert!(exit.success(), "{exit:?}");
    let result = rt.block_on(waiting).unwrap().unwrap().into_inner();
    let proof = completed(&result).to_vec();
    assert!(verify::verify(spec(Kind::WinningPost), &fixture.winning, None, &proof).unwrap());
}

#[test]
fn kill_9_and_a_restart_lose_no_accepted_job() {
    let fixture = fixture();
    let config = config("kill9", "synthesis_workers = 1", "");
    let dir = fixture.dir.join("kill9");
    let ids: Vec<(usize, String)> =
        (0..3).flat_map(|round| (0..2).map(move |k| (k, format!("w{round}-{k}")))).collect();
    let first = Daemon::start(&dir, &config, "127.0.0.1:0", false);
    let rt = runtime();
    rt.block_on(async {
        let mut client = connect(&first.addr).await.unwrap();
        for (k, id) in &ids {
            let submit = submit_request(&fixture.window_requests[*k], id, pb::Priority::Unspecified);
            client.submit_proof(submit).await.unwrap();
        }
        let done = client.await_proof(AwaitProofRequest { job_id: "w0-0".into(), timeout_ms: 0 }).await.unwrap();
        completed(&done.into_inner());
    });
    // Killed in the middle of the run: some jobs done, one likely on the device, some queued.
    first.kill();
    let second = Daemon::start(&dir, &config, "127.0.0.1:0", false);
    rt.block_on(async {
        let mut client = connect(&second.addr).await.unwrap();
        let mut proofs = std::collections::HashMap::new();
        for (_, id) in &ids {
            let done = client.await_proof(AwaitProofRequest { job_id: id.clone(), timeout_ms: 0 }).await.unwrap();
            proofs.insert(id.clone(), completed(&done.into_inner()).to_vec());
        }
        for round in 0..3 {
            let both = [&proofs[&format!("w{round}-0")][..], &proofs[&format!("w{round}-1")][..]].concat();
            assert!(verify::verify(spec(Kind::WindowPost), &fixture.window, None, &both).unwrap(), "round {round}");
        }
        alive(&mut client).await;
    });
    // Every job ended exactly once: one end record each in the journal.
    let journal = std::fs::read_to_string(dir.join("state/journal")).unwrap();
    for (_, id) in &ids {
        let ends = journal
            .lines()
            .filter(|l| l.contains("\"record\":\"ended\"") && l.contains(&format!("\"id\":\"{id}\"")))
            .count();
        assert_eq!(ends, 1, "{id}:\n{journal}");
    }
}

#[test]
fn a_client_that_disconnects_mid_prove_does_not_stop_the_daemon() {
    let fixture = fixture();
    let daemon = daemon("disconnect", "127.0.0.1:0", "");
    let rt = runtime();
    rt.block_on(async {
        let mut client = connect(&daemon.addr).await.unwrap();
        let mut leaving = connect(&daemon.addr).await.unwrap();
        let submit = submit_request(&fixture.winning_request, "left", pb::Priority::Unspecified);
        let proving = tokio::spawn(async move { leaving.prove(ProveRequest { submit: Some(submit) }).await });
        wait_until_running(&mut client).await;
        proving.abort();
        assert!(proving.await.unwrap_err().is_cancelled());
        // The job goes on, and its result waits for whoever asks.
        let done = client.await_proof(AwaitProofRequest { job_id: "left".into(), timeout_ms: 0 }).await.unwrap();
        let proof = completed(&done.into_inner()).to_vec();
        assert!(verify::verify(spec(Kind::WinningPost), &fixture.winning, None, &proof).unwrap());
        completed(&prove(&mut client, &fixture.window_requests[0], "").await);
        assert_eq!(alive(&mut client).await.total_proofs_completed, 2);
    });
}

#[test]
fn the_load_generator_checks_every_outcome_on_loopback_only() {
    let fixture = fixture();
    let dir = fixture.dir.join("load");
    let daemon = Daemon::start(&dir, &config("load", "", ""), "127.0.0.1:0", true);
    let files: Vec<PathBuf> =
        [("winning", vec![fixture.winning_request.clone()]), ("window", fixture.window_requests.clone())]
            .into_iter()
            .map(|(name, requests)| {
                let path = dir.join(format!("{name}.json"));
                std::fs::write(&path, serde_json::to_vec(&requests).unwrap()).unwrap();
                path
            })
            .collect();
    let report = dir.join("report.json");
    let status = daemon.status.clone().expect("the daemon serves its status");
    let mut bench = std::process::Command::new(build_dir().join("bellhop"));
    bench.args(["client", "--addr", &daemon.addr, "bench", "--clients", "8", "--count", "32"]);
    bench.args(["--duplicates", "0.2", "--cancels", "0.15", "--malformed", "0.15", "--seconds", "600"]);
    for file in &files {
        bench.arg("--requests").arg(file);
    }
    bench.arg("--params").arg(&fixture.params).arg("--json").arg(&report).args(["--status", &status]);
    let ran = bench.output().unwrap();
    let out = format!("{}\n{}", String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
    assert!(ran.status.success(), "{out}");
    eprintln!("{out}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["operations"], 32);
    assert_eq!(report["unverified"], 0);
    assert_eq!(report["problems"].as_array().unwrap().len(), 0, "{report}");
    for op in ["prove", "duplicate", "cancel", "malformed"] {
        assert!(report["outcomes"][op].is_object(), "the seed draws every kind of operation: {report}");
    }
    let memory = &report["daemon_memory"];
    let (budget, peak) = (memory["budget_bytes"].as_u64().unwrap(), memory["peak_reserved_bytes"].as_u64().unwrap());
    assert!(peak > 0 && peak <= budget, "{memory}");
}

/// `bellhop fil verify --count N` checks each of the N proofs in a file (as `bellhop client
/// prove --out` writes a request sent N times) and fails if any one is rejected.
#[test]
fn fil_verify_checks_every_proof_of_a_file() {
    let fixture = fixture();
    let dir = fixture.dir.join("fil-verify");
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("window-post.json");
    std::fs::write(&input, &fixture.window).unwrap();
    let config = dir.join("bellhop.toml");
    std::fs::write(&config, format!("[params]\ndir = {:?}\n", fixture.params.display().to_string())).unwrap();
    let proof = reference::prove(spec(Kind::WindowPost), &fixture.window, None).unwrap();
    let swapped = [&proof[192..], &proof[..192]].concat();
    let verify = |name: &str, proofs: &[u8], count: &str| {
        let path = dir.join(name);
        std::fs::write(&path, proofs).unwrap();
        let ran = std::process::Command::new(build_dir().join("bellhop"))
            .arg("--config")
            .arg(&config)
            .args(["fil", "verify", "window-post:2KiB", "--count", count, "--input"])
            .arg(&input)
            .arg("--proof")
            .arg(&path)
            .output()
            .unwrap();
        (
            ran.status.success(),
            format!("{}{}", String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr)),
        )
    };
    let (ok, out) = verify("both.proofs", &[&proof[..], &proof[..]].concat(), "2");
    assert!(ok && out.contains("2 of 2 proofs accepted"), "{out}");
    let (ok, out) = verify("second-wrong.proofs", &[&proof[..], &swapped[..]].concat(), "2");
    assert!(!ok && out.contains("1 of 2 proofs REJECTED"), "{out}");
    let (ok, out) = verify("short.proofs", &[&proof[..], &proof[..1]].concat(), "2");
    assert!(!ok && out.contains("not 2 proofs of equal length"), "{out}");
}

/// The example cuzk.toml in cuzk's source (`../shared/peers`, Curio e0294b0), if it is there.
fn cuzk_example() -> Option<String> {
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/peers/cuzk-curio-e0294b0.tar.gz");
    if !tarball.exists() {
        eprintln!("NOT CHECKED: {} is not here, so cuzk's example cuzk.toml cannot be read", tarball.display());
        return None;
    }
    let out = std::process::Command::new("tar")
        .arg("-xzOf")
        .arg(&tarball)
        .arg("extern/cuzk/cuzk.example.toml")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap())
}

/// cuzk's own example cuzk.toml, its listen address and parameter directory pointed at
/// this test's: `bellhop serve --cuzk-config` listens and reads where it says, with the
/// budget it says, names the keys it does not carry over, and proves.
#[test]
fn a_cuzk_toml_starts_the_daemon_where_cuzk_listened_with_its_budget() {
    let Some(example) = cuzk_example() else { return };
    let fixture = fixture();
    let dir = fixture.dir.join("cuzk-toml");
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("cuzk.sock");
    let text =
        example.replace(r#"listen = "0.0.0.0:9820""#, &format!("listen = \"unix://{}\"", socket.display())).replace(
            r#"param_cache = "/data/zk/params""#,
            &format!("param_cache = {:?}", fixture.params.display().to_string()),
        );
    assert_eq!(text.matches(&*fixture.params.display().to_string()).count(), 1, "the example's param_cache moved");
    assert!(text.contains("cuzk.sock"), "the example's listen address moved");
    let file = dir.join("cuzk.toml");
    std::fs::write(&file, text).unwrap();
    let state = format!("daemon.state_dir={:?}", dir.join("state").display().to_string());
    // This machine has no GPU: the CPU backend stands in for cuzk's.
    let args = ["--cuzk-config".as_ref(), file.as_os_str(), "--set".as_ref(), "backend.plugin=cpu".as_ref()];
    let daemon = Daemon::serve(&dir, args.into_iter().chain(["--set".as_ref(), state.as_ref()]));
    assert_eq!(daemon.addr, format!("unix://{}", socket.display()));
    runtime().block_on(async {
        let mut client = connect(&daemon.addr).await.unwrap();
        let winning = client
            .prove(ProveRequest { submit: Some(go::winning_post(&fixture.winning_request, 2048)) })
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        assert!(verify::verify(spec(Kind::WinningPost), &fixture.winning, None, completed(&winning)).unwrap());
        // `total_budget = "auto"` less `safety_margin = "5GiB"`, as cuzk reckons it.
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        let total_kib: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .unwrap()
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .unwrap();
        let status = alive(&mut client).await;
        assert_eq!(status.pinned_memory_limit_bytes, total_kib * 1024 - (5 << 30));
    });
    let log = std::fs::read_to_string(&daemon.log).unwrap();
    for key in ["gpus.gpu_workers_per_device", "scheduler.max_batch_size", "scheduler.sort_by_type"] {
        assert!(log.contains(key), "{key} is named as not carried over: {log}");
    }
}
