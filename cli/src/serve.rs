//! `bellhop serve`: the proving engine as a daemon speaking cuzk's `ProvingEngine` API.

use std::{process::ExitCode, sync::Arc, time::Duration};

use anyhow::{Context as _, Result};
use bellhop_engine::Engine;
use tokio::signal::unix::{signal, SignalKind};

use super::Context;

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Listen here instead of `[daemon] listen`: host:port, or unix:///path.
    #[arg(long)]
    listen: Option<String>,
    /// Serve GET /metrics and /status here instead of `[daemon] status_listen` ("" for none).
    #[arg(long)]
    status_listen: Option<String>,
}

/// Resolves when the process is asked to stop (SIGTERM, as systemd does, or SIGINT).
async fn stop_signal() -> Result<&'static str> {
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    })
}

pub(super) fn run(context: &Context, args: &Args) -> Result<ExitCode> {
    let mut config = context.config.clone();
    if let Some(listen) = &args.listen {
        config.daemon.listen.clone_from(listen);
    }
    if let Some(status) = &args.status_listen {
        config.daemon.status_listen.clone_from(status);
    }
    super::warn_if_unverified(&config);
    bellhop_filecoin::set_directories(&config.params.dir, &bellhop_plugin_sdk::dirs::cache_dir("filecoin-parents")?);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async {
        let engine = Arc::new(Engine::start(&config, &context.plugin_dir)?);
        let bound = bellhop_server::bind(&config.daemon.listen, &config.daemon.status_listen).await?;
        let status = bound.status_address().map_or_else(|| "off".into(), |a| format!("http://{a}/status, /metrics"));
        println!("bellhop serve: gRPC on {}; status on {status}", bound.grpc_address());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(bound.serve(Arc::clone(&engine), async move {
            let _ = stopped.await;
        }));
        let cause = stop_signal().await?;
        let grace = config.daemon.shutdown_grace;
        eprintln!("bellhop serve: {cause}: taking no new jobs; waiting up to {grace:?} for running ones");
        let drained = {
            let engine = Arc::clone(&engine);
            tokio::task::spawn_blocking(move || engine.shutdown(grace)).await?
        };
        let _ = stop.send(());
        // Requests still waiting on jobs that outlived the grace period are not waited for.
        match tokio::time::timeout(Duration::from_secs(5), serving).await {
            Ok(served) => served??,
            Err(_) => eprintln!("bellhop serve: requests still open after shutdown; closing them"),
        }
        eprintln!(
            "bellhop serve: stopped{}",
            if drained { "" } else { " (some running jobs did not finish within the grace period)" }
        );
        Ok(ExitCode::SUCCESS)
    })
}
