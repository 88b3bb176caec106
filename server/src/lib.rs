//! The network side of `bellhop serve`: Curio's `cuzk.v1.ProvingEngine` gRPC service
//! ([`service`]) on TCP or a unix socket, and `GET /metrics` and `GET /status` over HTTP;
//! and the other end of it ([`client`]). Scheduling, parameters and jobs are the
//! engine's; this crate decodes, maps and listens.

pub mod client;
pub mod service;

use std::{future::Future, net::SocketAddr, path::PathBuf, sync::Arc};

use anyhow::{bail, Context as _, Result};
use axum::{http::header, routing::get, Router};
use bellhop_engine::Engine;
use bellhop_proto::{v1::proving_engine_server::ProvingEngineServer, MAX_MESSAGE_BYTES};
use tokio::net::{TcpListener, UnixListener};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};

pub use service::{decode_submit, ProvingService};

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

    /// Serves `engine` until `shutdown` completes, then stops taking connections and
    /// waits for the requests in flight.
    pub async fn serve(self, engine: Arc<Engine>, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
        let service = ProvingEngineServer::new(ProvingService::new(Arc::clone(&engine)))
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_MESSAGE_BYTES);
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let status = self.status.map(|listener| {
            let mut stopped = stopped.clone();
            let app = status_routes(Arc::clone(&engine));
            tokio::spawn(async move {
                let stop = async move {
                    let _ = stopped.wait_for(|s| *s).await;
                };
                if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stop).await {
                    tracing::warn!("the status server stopped: {e}");
                }
            })
        });
        let router = tonic::transport::Server::builder().add_service(service);
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

/// `GET /metrics` (Prometheus text) and `GET /status` (JSON).
fn status_routes(engine: Arc<Engine>) -> Router {
    let metrics_engine = Arc::clone(&engine);
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let engine = Arc::clone(&metrics_engine);
                async move {
                    (
                        [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
                        engine.metrics(),
                    )
                }
            }),
        )
        .route(
            "/status",
            get(move || {
                let engine = Arc::clone(&engine);
                async move {
                    let json = serde_json::to_string_pretty(&engine.status())
                        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
                    ([(header::CONTENT_TYPE, "application/json")], json)
                }
            }),
        )
}
