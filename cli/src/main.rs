//! `bellhop`: the command line over Bellhop's host library, engine and gRPC service.

mod ab;
mod bench;
mod client;
mod config;
mod conformance;
mod demo;
mod fil;
mod install;
mod load;
mod params;
mod plugins;
mod prove;
mod serve;

use std::{path::PathBuf, process::ExitCode};

use anyhow::Result;
use clap::{Parser, Subcommand};
use tracing_subscriber::{layer::SubscriberExt, util::SubscriberInitExt, EnvFilter, Layer as _};

use bellhop_host::{
    config::{Config, LogFormat},
    phases::{PhaseLayer, PhaseLog},
    plugins::plugin_dir,
};

/// Counts host allocations when asked (`bellhop ab --allocations`), per phase.
#[global_allocator]
static ALLOC: bellhop_host::memory::CountingAlloc = bellhop_host::memory::CountingAlloc;

fn main() -> ExitCode {
    match Cli::parse().run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Bellhop: Groth16 proofs on pluggable backends.
#[derive(Debug, Parser)]
#[command(name = "bellhop", version, about)]
struct Cli {
    /// The configuration file (see the README for its keys).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Prove a built-in circuit on the embedded CPU backend with fresh parameters.
    Demo(demo::Args),
    /// Generate or inspect parameter files.
    #[command(subcommand)]
    Params(params::Command),
    /// Prove circuits of the catalog with the configured backend and strategy.
    Prove(prove::ProveArgs),
    /// Verify proofs against a parameter file's verifying key.
    Verify(prove::VerifyArgs),
    /// Prove N times and report the median and spread of every phase.
    Bench(bench::Args),
    /// Compare two configurations in one process: interleaved runs, per-phase statistics.
    Ab(ab::Args),
    /// List the backend and strategy plugins: embedded ones and those in the plugin directory.
    Plugins(plugins::Args),
    /// Check a backend plugin's primitives against the CPU references.
    Conformance(conformance::Args),
    /// Filecoin: seal a sector, make PoSt and SnapDeals vanilla proofs and Curio's
    /// requests, verify proofs with filecoin-proofs.
    #[command(subcommand)]
    Fil(fil::Command),
    /// Run the proving engine as a daemon speaking cuzk's ProvingEngine gRPC API (Curio's
    /// `[Cuzk] Address` can point at it).
    Serve(serve::Args),
    /// Talk to a proving daemon (bellhop serve, or cuzk's): submit, await, prove, cancel,
    /// status, metrics, preload, evict.
    Client(client::Args),
    /// Configuration files: a cuzk.toml written as the equivalent bellhop.toml.
    #[command(subcommand)]
    Config(config::Command),
    /// Install this binary and its plugins where a systemd unit finds them, with the unit
    /// and a production configuration.
    Install(install::Args),
}

impl Cli {
    /// Runs the command; the exit code says whether it succeeded.
    fn run(self) -> Result<ExitCode> {
        let (config, notes) = match &self.command {
            Command::Serve(args) => serve::config(self.config.as_deref(), args)?,
            _ => match &self.config {
                Some(path) => (Config::load(path)?, Vec::new()),
                None => (Config::default(), Vec::new()),
            },
        };
        let phases = PhaseLog::default();
        let daemon = matches!(self.command, Command::Serve(_));
        init_logging(&config, if daemon { "info" } else { "warn" }, &phases)?;
        for note in notes {
            tracing::warn!("{note}");
        }
        let context =
            Context { plugin_dir: plugin_dir(config.plugins.dir.as_deref()), config, config_path: self.config, phases };
        match self.command {
            Command::Demo(args) => demo::run(&context, &args),
            Command::Params(command) => params::run(&context, command),
            Command::Prove(args) => prove::prove(&context, &args),
            Command::Verify(args) => prove::verify(&args),
            Command::Bench(args) => bench::run(&context, &args),
            Command::Ab(args) => ab::run(&context, &args),
            Command::Plugins(args) => plugins::run(&context, &args),
            Command::Conformance(args) => conformance::run(&context, &args),
            Command::Fil(command) => fil::run(&context, command),
            Command::Serve(args) => serve::run(&context, &args),
            Command::Client(args) => client::run(&context, args),
            Command::Config(command) => config::run(command),
            Command::Install(args) => install::run(&context, &args),
        }
    }
}

/// Logs to stderr at `RUST_LOG`'s levels, else `[logging] level`, else `default`, in
/// `[logging] format`; phases are recorded whatever the level.
fn init_logging(config: &Config, default: &str, phases: &PhaseLog) -> Result<()> {
    let filter = match EnvFilter::try_from_default_env() {
        Ok(filter) => filter,
        Err(_) => {
            let level = config.logging.level.as_deref().unwrap_or(default);
            EnvFilter::try_new(level).map_err(|e| {
                anyhow::anyhow!("[logging] level `{level}` is not a level (error, warn, info, debug, trace): {e}")
            })?
        }
    };
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let layer = match config.logging.format {
        LogFormat::Text => layer.with_filter(filter).boxed(),
        LogFormat::Json => layer.json().with_filter(filter).boxed(),
    };
    tracing_subscriber::registry().with(PhaseLayer::new(phases.clone())).with(layer).init();
    Ok(())
}

/// What every command gets: the validated config, the resolved plugin directory and the
/// phase records of the tracing layer.
struct Context {
    config: Config,
    config_path: Option<PathBuf>,
    plugin_dir: PathBuf,
    phases: PhaseLog,
}

impl Context {
    /// Points filecoin-proofs (its verifiers, SnarkPack aggregation, PoRep's parent cache)
    /// at `[params] dir`; filecoin-proofs reads its directories once, on first use.
    fn use_params_dir_for_filecoin_proofs(&self) -> Result<()> {
        bellhop_filecoin::set_directories(
            &self.config.params.dir,
            &bellhop_plugin_sdk::dirs::cache_dir("filecoin-parents")?,
        );
        Ok(())
    }
}

/// Says at the start, before any proof, that proofs will not be checked.
fn warn_if_unverified(config: &bellhop_host::config::Config) {
    if !config.pipeline.verify {
        tracing::warn!("[pipeline] verify is off: proofs are returned without being checked");
    }
}
