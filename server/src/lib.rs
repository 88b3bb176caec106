//! The network side of `bellhop serve`: Curio's `cuzk.v1.ProvingEngine` gRPC service
//! ([`service`]) on TCP or a unix socket, and `GET /metrics` and `GET /status` over HTTP;
//! and the other end of it ([`client`]). Scheduling, parameters and jobs are the
//! engine's; this crate decodes, maps and listens.

pub mod bounds;
pub mod client;
pub mod service;

use std::{
    future::Future,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use anyhow::{bail, Context as _, Result};
use axum::{http::header, routing::get, Router};
use bellhop_engine::Engine;
use bellhop_host::config::DaemonConfig;
use bellhop_proto::{v1::proving_engine_server::ProvingEngineServer, MAX_MESSAGE_BYTES};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    service::TowerToHyperService,
};
use tokio::{
    net::{TcpListener, UnixListener},
    sync::{watch, Semaphore},
};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tonic::{service::interceptor::InterceptedService, Status};

pub use service::{decode_submit, ProvingService};

/// How long the status server waits for a request's headers.
const STATUS_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a status connection may stay open, busy or idle.
const STATUS_CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// Status connections open at once; more wait to be accepted.
const STATUS_MAX_CONNECTIONS: usize = 64;

/// What guards the gRPC service: its limits, and the token TCP requests must send.
#[derive(Clone, Debug)]
pub struct Guard {
    /// Requests served at once over all connections, waits for a proof apart; more are
    /// refused.
    pub max_requests: usize,
    /// Calls waiting for a proof (AwaitProof, Prove) served at once; more are refused.
    pub max_waits: usize,
    /// Requests (HTTP/2 streams) one connection may have open.
    pub max_streams_per_connection: u32,
    /// The bearer token of `[daemon] token_file`.
    pub token: Option<String>,
}

impl Guard {
    /// `daemon`'s limits, and the token of its `token_file`, read.
    pub fn from_config(daemon: &DaemonConfig) -> Result<Self> {
        Ok(Self {
            max_requests: daemon.max_requests.max(1),
            max_waits: daemon.max_waits.max(1),
            max_streams_per_connection: daemon.max_streams_per_connection.max(1),
            token: daemon.token_file.as_deref().map(read_token).transpose()?,
        })
    }
}

/// Refuses, unless `[daemon] allow_insecure_listen`, a gRPC address that takes connections
/// from other machines without a token, and a status address that does: the loopback
/// addresses and a unix socket are local; a name must resolve to loopback addresses alone.
/// With the switch on, each such address is logged at warn.
pub fn check_listen(daemon: &DaemonConfig) -> Result<()> {
    // `what` = `address` reaches other machines: `unguarded` says why that matters, `fix`
    // what else to do.
    let insecure = |what: &str, address: &str, unguarded: &str, fix: &str| -> Result<()> {
        if daemon.allow_insecure_listen {
            tracing::warn!("{what} {address} takes connections from other machines ([daemon] allow_insecure_listen)");
            return Ok(());
        }
        bail!(
            "[daemon] {what} = \"{address}\" takes connections from other machines{unguarded}; listen on 127.0.0.1 \
             or a unix socket, {fix}or set [daemon] allow_insecure_listen = true behind a firewall of your own"
        )
    };
    if !daemon.listen.starts_with("unix://") && daemon.token_file.is_none() && !local(&daemon.listen) {
        let unguarded = " and no token_file is set: anyone who reaches it may submit and cancel proofs";
        insecure("listen", &daemon.listen, unguarded, "set [daemon] token_file, ")?;
    }
    if !daemon.status_listen.is_empty() && !local(&daemon.status_listen) {
        insecure("status_listen", &daemon.status_listen, "", "")?;
    }
    Ok(())
}

/// Whether every address `host:port` names is a loopback one (false if it names none).
fn local(address: &str) -> bool {
    use std::net::ToSocketAddrs as _;
    match address.to_socket_addrs() {
        Ok(addresses) => {
            let addresses: Vec<SocketAddr> = addresses.collect();
            !addresses.is_empty() && addresses.iter().all(|a| a.ip().is_loopback())
        }
        Err(_) => false,
    }
}

/// The bearer token in `path`: its first line, refused if empty or if the file may be
/// read by anyone but its owner.
pub fn read_token(path: &Path) -> Result<String> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode =
        std::fs::metadata(path).with_context(|| format!("the token file {}", path.display()))?.permissions().mode();
    if mode & 0o077 != 0 {
        bail!("the token file {} may be read by others (mode {:o}); `chmod 600` it", path.display(), mode & 0o777);
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the token file {}", path.display()))?;
    let token = text.lines().next().unwrap_or_default().trim().to_string();
    if token.is_empty() {
        bail!("the token file {} is empty; write a long random token on its first line", path.display());
    }
    Ok(token)
}

/// Lets a request through when no token is asked for, or it sends `authorization:
/// Bearer TOKEN` with the token.
fn authorize(token: Option<&str>, request: &tonic::Request<()>) -> Result<(), Status> {
    let Some(token) = token else { return Ok(()) };
    let sent = request.metadata().get("authorization").and_then(|v| v.to_str().ok());
    match sent.and_then(|value| value.strip_prefix("Bearer ")) {
        Some(sent) if same_bytes(sent.as_bytes(), token.as_bytes()) => Ok(()),
        Some(_) => Err(Status::unauthenticated("the bearer token is wrong; send the one in [daemon] token_file")),
        None => Err(Status::unauthenticated(
            "this daemon asks for `authorization: Bearer TOKEN` on TCP ([daemon] token_file); `bellhop client` \
             sends it with --token-file",
        )),
    }
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Where the gRPC service listens.
enum GrpcListener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

/// The daemon's sockets, bound (so that their addresses are known) and not yet served.
pub struct Bound {
    grpc: GrpcListener,
    status: Option<TcpListener>,
}

/// Binds `listen` (`host:port`, or `unix:///path` for a unix socket of permissions
/// `socket_mode`, replacing a stale socket file but never one that a process still listens
/// on) for gRPC and, unless empty, `status_listen` (`host:port`) for HTTP.
pub async fn bind(listen: &str, status_listen: &str, socket_mode: u32) -> Result<Bound> {
    let grpc = match listen.strip_prefix("unix://") {
        Some(path) => {
            use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
            let path = PathBuf::from(path);
            if path.exists() {
                let kind = std::fs::symlink_metadata(&path)?.file_type();
                if !kind.is_socket() {
                    bail!("{} exists and is not a socket; choose another [daemon] listen path", path.display());
                }
                if std::os::unix::net::UnixStream::connect(&path).is_ok() {
                    bail!(
                        "another process (a running daemon?) listens on {}; stop it first, or give this daemon \
                         another [daemon] listen path",
                        path.display()
                    );
                }
                std::fs::remove_file(&path).with_context(|| format!("removing the stale socket {}", path.display()))?;
            }
            let listener = UnixListener::bind(&path)
                .with_context(|| format!("cannot listen on unix socket {}", path.display()))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(socket_mode))
                .with_context(|| format!("setting {} to mode {socket_mode:o}", path.display()))?;
            GrpcListener::Unix(listener, path)
        }
        None => GrpcListener::Tcp(
            TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen} (host:port, or unix:///path)"))?,
        ),
    };
    let status = if status_listen.is_empty() {
        None
    } else {
        Some(
            TcpListener::bind(status_listen)
                .await
                .with_context(|| format!("cannot serve status on {status_listen}"))?,
        )
    };
    Ok(Bound { grpc, status })
}

impl Bound {
    /// The gRPC address as clients name it: `host:port`, or `unix:///path`.
    pub fn grpc_address(&self) -> String {
        match &self.grpc {
            GrpcListener::Tcp(listener) => listener.local_addr().map_or_else(|e| e.to_string(), |a| a.to_string()),
            GrpcListener::Unix(_, path) => format!("unix://{}", path.display()),
        }
    }

    /// The HTTP status address, if served.
    pub fn status_address(&self) -> Option<SocketAddr> {
        self.status.as_ref().and_then(|listener| listener.local_addr().ok())
    }

    /// Serves `engine`, within `guard`, until `shutdown` completes, then stops taking
    /// connections and waits for the requests in flight.
    pub async fn serve(
        self,
        engine: Arc<Engine>,
        guard: Guard,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let service = ProvingEngineServer::new(ProvingService::new(Arc::clone(&engine)))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        // A unix socket is guarded by its file's mode.
        let token: Option<Arc<str>> = match &self.grpc {
            GrpcListener::Tcp(_) => guard.token.as_deref().map(Arc::from),
            GrpcListener::Unix(..) => None,
        };
        let service = InterceptedService::new(service, move |request: tonic::Request<()>| {
            authorize(token.as_deref(), &request).map(|()| request)
        });
        let (stop, stopped) = watch::channel(false);
        let status = self.status.map(|listener| tokio::spawn(serve_status(listener, status_routes(engine), stopped)));
        // Past its bound, a request is refused before its message is read.
        let router = tonic::transport::Server::builder()
            .max_concurrent_streams(guard.max_streams_per_connection)
            .layer(bounds::Bounds::new(guard.max_waits, guard.max_requests))
            .add_service(service);
        let signal = async move {
            shutdown.await;
            let _ = stop.send(true);
        };
        let served = match self.grpc {
            GrpcListener::Tcp(listener) => {
                router.serve_with_incoming_shutdown(TcpListenerStream::new(listener), signal).await
            }
            GrpcListener::Unix(listener, path) => {
                let served = router.serve_with_incoming_shutdown(UnixListenerStream::new(listener), signal).await;
                let _ = std::fs::remove_file(path);
                served
            }
        };
        if let Some(status) = status {
            let _ = status.await;
        }
        served.context("the gRPC server failed")
    }
}

/// Serves `app` on `listener` until `stopped` turns true: at most
/// `STATUS_MAX_CONNECTIONS` at once, each cut off `STATUS_HEADER_TIMEOUT` into an
/// unfinished request header and `STATUS_CONNECTION_LIFETIME` after it opened.
async fn serve_status(listener: TcpListener, app: Router, mut stopped: watch::Receiver<bool>) {
    let open = Arc::new(Semaphore::new(STATUS_MAX_CONNECTIONS));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(STATUS_HEADER_TIMEOUT);
    loop {
        let accepted = tokio::select! {
            _ = stopped.wait_for(|stop| *stop) => return,
            accepted = async {
                let permit = Arc::clone(&open).acquire_owned().await.expect("the semaphore is never closed");
                (permit, listener.accept().await)
            } => accepted,
        };
        let (permit, stream) = match accepted {
            (permit, Ok((stream, _))) => (permit, stream),
            (_, Err(e)) => {
                // Out of file descriptors, say: not a reason to stop serving.
                tracing::warn!("the status server could not accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        tokio::spawn(async move {
            let _open = permit;
            let _ = tokio::time::timeout(STATUS_CONNECTION_LIFETIME, connection).await;
        });
    }
}

/// `GET /metrics` (Prometheus text) and `GET /status` (JSON), computed off the async
/// threads.
fn status_routes(engine: Arc<Engine>) -> Router {
    let metrics_engine = Arc::clone(&engine);
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let engine = Arc::clone(&metrics_engine);
                async move {
                    let text = tokio::task::spawn_blocking(move || engine.metrics())
                        .await
                        .unwrap_or_else(|e| format!("# the metrics could not be computed: {e}\n"));
                    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text)
                }
            }),
        )
        .route(
            "/status",
            get(move || {
                let engine = Arc::clone(&engine);
                async move {
                    let json = tokio::task::spawn_blocking(move || serde_json::to_string_pretty(&engine.status()))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|json| json.map_err(|e| e.to_string()))
                        .unwrap_or_else(|e| serde_json::json!({ "error": e }).to_string());
                    ([(header::CONTENT_TYPE, "application/json")], json)
                }
            }),
        )
}
