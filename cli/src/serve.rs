//! `bellhop serve`: the proving engine as a daemon speaking cuzk's `ProvingEngine` API.

use std::{path::Path, process::ExitCode, sync::Arc, time::Duration};

use anyhow::{Context as _, Result};
use bellhop_engine::Engine;
use bellhop_host::{
    config::{set_key, Config},
    cuzk_config,
};
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
    /// Read cuzk's configuration file instead of a bellhop.toml (`bellhop config from-cuzk`
    /// shows what it becomes; the README maps every key).
    #[arg(long, value_name = "FILE")]
    cuzk_config: Option<std::path::PathBuf>,
    /// Set one key over the configuration file, e.g. `--set backend.plugin=cpu`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

/// The daemon's configuration: `config` (a bellhop.toml) or `--cuzk-config`, then `--set`;
/// with lines to log about it (cuzk keys not carried over).
pub(super) fn config(config: Option<&Path>, args: &Args) -> Result<(Config, Vec<String>)> {
    let (mut table, notes) = match (config, &args.cuzk_config) {
        (Some(_), Some(_)) => {
            anyhow::bail!("give either --config (a bellhop.toml) or --cuzk-config (a cuzk.toml), not both")
        }
        (_, Some(path)) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
            let translation = cuzk_config::translate(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let notes = translation.notes.iter().map(|n| format!("{}: {n}", path.display())).collect();
            (translation.table, notes)
        }
        (Some(path), None) => {
            Config::load(path)?;
            let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
            (text.parse::<toml::Table>()?, Vec::new())
        }
        (None, None) => (toml::Table::new(), Vec::new()),
    };
    for set in &args.sets {
        let (key, value) = set.split_once('=').with_context(|| format!("--set `{set}` is not KEY=VALUE"))?;
        set_key(&mut table, key.trim(), value.trim()).map_err(anyhow::Error::msg)?;
    }
    let config = Config::from_table(&table).map_err(|e| anyhow::anyhow!("the configuration with --set: {e}"))?;
    Ok((config, notes))
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
    context.use_params_dir_for_filecoin_proofs()?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(async {
        let daemon = &config.daemon;
        bellhop_server::check_listen(daemon)?;
        let guard = bellhop_server::Guard::from_config(daemon).context("[daemon] token_file")?;
        let engine = Arc::new(Engine::start(&config, &context.plugin_dir)?);
        let bound = bellhop_server::bind(&daemon.listen, &daemon.status_listen, daemon.socket_mode).await?;
        let status = bound.status_address().map_or_else(|| "off".into(), |a| format!("http://{a}/status, /metrics"));
        println!("bellhop serve: gRPC on {}; status on {status}", bound.grpc_address());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(bound.serve(Arc::clone(&engine), guard, async move {
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
