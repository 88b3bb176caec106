//! The gRPC and status servers in process, over the engine on the CPU backend: the bearer
//! token on TCP, the bounds on requests served at once (waits for a proof apart from the
//! rest), and the status server's cut-off for a client that never finishes its request
//! header. Loopback only.

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
    Guard { max_requests, max_waits: 64, max_streams_per_connection: 16, token: token.map(Into::into) }
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

/// An address other machines reach is refused at start without a token (gRPC) or at all
/// (status), unless `allow_insecure_listen`; cuzk's `0.0.0.0` carried over included.
#[test]
fn an_address_other_machines_reach_needs_a_token_or_the_switch() {
    use bellhop_host::{config::DaemonConfig, cuzk_config};
    use bellhop_server::check_listen;
    let mut daemon = DaemonConfig::default();
    check_listen(&daemon).expect("the defaults are loopback");
    for local in ["127.0.0.1:9820", "[::1]:9820", "localhost:9820", "unix:///run/bellhop.sock"] {
        daemon.listen = local.into();
        check_listen(&daemon).unwrap_or_else(|e| panic!("{local}: {e}"));
    }
    let carried = cuzk_config::translate("[daemon]\nlisten = \"0.0.0.0:9820\"\n").unwrap().config().daemon;
    for daemon in [DaemonConfig { listen: "0.0.0.0:9820".into(), ..DaemonConfig::default() }, carried] {
        let refused = check_listen(&daemon).unwrap_err().to_string();
        assert!(refused.contains("listen = \"0.0.0.0:9820\" takes connections from other machines"), "{refused}");
        assert!(refused.contains("token_file") && refused.contains("allow_insecure_listen = true"), "{refused}");
        check_listen(&DaemonConfig { token_file: Some("/etc/bellhop/token".into()), ..daemon.clone() })
            .expect("with a token it is guarded");
        check_listen(&DaemonConfig { allow_insecure_listen: true, ..daemon }).expect("the switch lets it through");
    }
    let status = DaemonConfig { status_listen: "[::]:9821".into(), ..DaemonConfig::default() };
    let refused = check_listen(&status).unwrap_err().to_string();
    assert!(refused.contains("status_listen = \"[::]:9821\""), "{refused}");
    check_listen(&DaemonConfig { allow_insecure_listen: true, ..status }).expect("the switch lets it through");
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

/// Waits parked on a job that synthesis holds for `hold` s: `count` AwaitProof calls on
/// `job` over `client`.
fn park(
    client: &bellhop_server::client::Client,
    job: &str,
    count: usize,
) -> Vec<tokio::task::JoinHandle<Result<tonic::Response<bellhop_proto::v1::AwaitProofResponse>, tonic::Status>>> {
    (0..count)
        .map(|_| {
            let (mut client, job_id) = (client.clone(), job.to_string());
            tokio::spawn(async move { client.await_proof(AwaitProofRequest { job_id, timeout_ms: 30_000 }).await })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn parked_waits_have_their_own_bound_and_never_lock_out_the_other_calls() {
    let guard = Guard { max_requests: 2, max_waits: 6, max_streams_per_connection: 16, token: None };
    let served = serve(guard, 6000).await;
    let job = served.engine.submit(JobRequest::new(CIRCUIT.parse().unwrap(), Vec::new()).unwrap()).unwrap().job_id;
    let client = connect(&served.grpc).await.unwrap();
    // Three times max_requests waits parked on a job that synthesis holds for 6 s.
    let waits = park(&client, &job, 6);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(waits.iter().all(|wait| !wait.is_finished()), "every wait within max_waits is served and held");
    for _ in 0..3 {
        let start = Instant::now();
        client.clone().get_status(GetStatusRequest {}).await.expect("GetStatus is served beside the parked waits");
        assert!(start.elapsed() < Duration::from_millis(200), "GetStatus took {:?}", start.elapsed());
    }
    // Past max_waits, a wait is refused, and says which bound.
    let refused = park(&client, &job, 1).pop().unwrap().await.unwrap().expect_err("a wait past max_waits is refused");
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted, "{refused:?}");
    assert!(refused.message().contains("max_waits"), "{refused:?}");
    for wait in waits {
        wait.await.unwrap().expect("the waits within the bound are served");
    }
    park(&client, &job, 1).pop().unwrap().await.unwrap().expect("waits are served again once they ended");
}

/// The bounds over a service whose calls are held until the test lets them end: each kind
/// of call is refused past its own bound, whatever the other kind holds, and served
/// again once its calls ended.
#[tokio::test(flavor = "multi_thread")]
async fn each_kind_of_call_is_refused_past_its_own_bound_until_one_ends() {
    use tower::{Layer as _, ServiceExt as _};
    type Request = tonic::codegen::http::Request<()>;
    let (open, opened) = tokio::sync::watch::channel(false);
    let held = tower::service_fn(move |_: Request| {
        let mut opened = opened.clone();
        async move {
            let _ = opened.wait_for(|open| *open).await;
            Ok::<_, std::convert::Infallible>(tonic::codegen::http::Response::new(String::new()))
        }
    });
    let bounded = bellhop_server::bounds::Bounds::new(1, 2).layer(held);
    let call = |method: &str| {
        let request = Request::builder().uri(format!("/cuzk.v1.ProvingEngine/{method}")).body(()).unwrap();
        tokio::spawn(bounded.clone().oneshot(request))
    };
    let refused = |response: &tonic::codegen::http::Response<String>| {
        let status = tonic::Status::from_header_map(response.headers());
        status.map(|s| (s.code(), s.message().to_string()))
    };
    let others = [call("GetStatus"), call("SubmitProof")];
    let wait = call("AwaitProof");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let third = call("CancelProof").await.unwrap().unwrap();
    let (code, message) = refused(&third).expect("a third other call is refused");
    assert!(code == tonic::Code::ResourceExhausted && message.contains("max_requests"), "{message}");
    let (code, message) = refused(&call("Prove").await.unwrap().unwrap()).expect("a second wait is refused");
    assert!(code == tonic::Code::ResourceExhausted && message.contains("max_waits"), "{message}");
    assert!(others.iter().chain([&wait]).all(|held| !held.is_finished()), "the calls within the bounds are held");
    open.send(true).unwrap();
    for held in others.into_iter().chain([wait]) {
        assert!(refused(&held.await.unwrap().unwrap()).is_none(), "served");
    }
    assert!(refused(&call("GetStatus").await.unwrap().unwrap()).is_none(), "served again once they ended");
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
