//! The gRPC and status servers in process, over the engine on the CPU backend: the bearer
//! token on TCP, the bound on requests served at once, and the status server's cut-off
//! for a client that never finishes its request header. Loopback only.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use bellhop_circuits::CircuitSpec;
use bellhop_engine::{Engine, JobRequest};
use bellhop_host::{config::Config, params};
use bellhop_proto::v1::{AwaitProofRequest, GetStatusRequest};
use bellhop_server::{
    client::{connect, connect_with_token},
    Guard,
};
use bellhop_tests::{build_dir, built_library};
use bellperson::groth16::generate_random_parameters;
use blstrs::Bls12;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const CIRCUIT: &str = "chain:1024";

/// A served engine: its gRPC and status addresses; it stops when dropped.
struct Served {
    engine: Arc<Engine>,
    grpc: String,
    status: std::net::SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

/// An engine whose synthesis holds each partition `hold_ms`, served on loopback within
/// `guard`.
async fn serve(guard: Guard, hold_ms: u64) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let spec: CircuitSpec = CIRCUIT.parse().unwrap();
    let generated =
        generate_random_parameters::<Bls12, _, _>(spec.setup_circuit().unwrap(), &mut ChaCha20Rng::seed_from_u64(4))
            .unwrap();
    params::write(&generated, &dir.path().join(spec.params_file_name().unwrap())).unwrap();
    let mut config = Config::default();
    config.params.dir = dir.path().to_path_buf();
    config.daemon.state_dir = dir.path().join("state");
    config.synthesis.strategy = built_library("fixture_slow_strategy").display().to_string();
    let hold = toml::Table::from_iter([(CIRCUIT.to_string(), toml::Value::Integer(hold_ms as i64))]);
    config.synthesis.options.insert("hold_ms".into(), hold.into());
    let engine = Arc::new(Engine::start(&config, &build_dir()).unwrap());
    let bound = bellhop_server::bind("127.0.0.1:0", "127.0.0.1:0", 0o660).await.unwrap();
    let (grpc, status) = (bound.grpc_address(), bound.status_address().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(bound.serve(Arc::clone(&engine), guard, async move {
        let _ = stopped.await;
    }));
    Served { engine, grpc, status, _stop: stop, _dir: dir }
}

fn guard(max_requests: usize, token: Option<&str>) -> Guard {
    Guard { max_requests, max_streams_per_connection: 16, token: token.map(Into::into) }
}

#[tokio::test(flavor = "multi_thread")]
async fn over_tcp_every_request_must_carry_the_bearer_token() {
    let served = serve(guard(64, Some("s3cret-token")), 0).await;
    let refused = connect(&served.grpc).await.unwrap().get_status(GetStatusRequest {}).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    assert!(refused.message().contains("token_file"), "{refused:?}");
    let wrong = connect_with_token(&served.grpc, Some("s3cret-tokem")).await.unwrap();
    let refused = wrong.clone().get_status(GetStatusRequest {}).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    assert!(refused.message().contains("wrong"), "{refused:?}");
    let mut right = connect_with_token(&served.grpc, Some("s3cret-token")).await.unwrap();
    right.get_status(GetStatusRequest {}).await.expect("the right token is let through");
}

#[test]
fn a_token_file_others_may_read_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "abc\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let refused = bellhop_server::read_token(&path).unwrap_err().to_string();
    assert!(refused.contains("chmod 600"), "{refused}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(bellhop_server::read_token(&path).unwrap(), "abc");
    std::fs::write(&path, "\n").unwrap();
    assert!(bellhop_server::read_token(&path).unwrap_err().to_string().contains("empty"));
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_past_max_requests_are_refused_until_one_ends() {
    let served = serve(guard(2, None), 6000).await;
    let job = served.engine.submit(JobRequest::new(CIRCUIT.parse().unwrap(), Vec::new()).unwrap()).unwrap().job_id;
    let client = connect(&served.grpc).await.unwrap();
    // Two requests held open: waits on the job, which synthesis holds for 6 s.
    let waits: Vec<_> = (0..2)
        .map(|_| {
            let (mut client, job_id) = (client.clone(), job.clone());
            tokio::spawn(async move { client.await_proof(AwaitProofRequest { job_id, timeout_ms: 30_000 }).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(waits.iter().all(|wait| !wait.is_finished()), "both waits are served and held");
    let refused = client.clone().get_status(GetStatusRequest {}).await.expect_err("a third request is refused");
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted, "{refused:?}");
    for wait in waits {
        wait.await.unwrap().expect("the requests within the bound are served");
    }
    client.clone().get_status(GetStatusRequest {}).await.expect("served again once they ended");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_status_server_drops_a_client_that_never_finishes_its_header() {
    let served = serve(guard(64, None), 0).await;
    let mut stalled = tokio::net::TcpStream::connect(served.status).await.unwrap();
    stalled.write_all(b"GET /status HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let start = Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), stalled.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the stalled connection was still open after 30 s");
    eprintln!("a stalled header was cut off after {:.1?}", start.elapsed());
    // Others are served meanwhile and after.
    let mut client = tokio::net::TcpStream::connect(served.status).await.unwrap();
    client.write_all(b"GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    client.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("\"uptime_seconds\""), "{answer}");
}
