//! The `bellhop` command line.

mod conformance;
mod plugins;

use std::{path::PathBuf, process::ExitCode};

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::{config::Config, plugins::plugin_dir};

/// Bellhop: Groth16 proofs on pluggable backends.
#[derive(Debug, Parser)]
#[command(name = "bellhop", version, about)]
pub struct Cli {
    /// The configuration file (see the README for its keys).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the backend and strategy plugins: embedded ones and those in the plugin directory.
    Plugins(plugins::Args),
    /// Check a backend plugin's primitives against the CPU references.
    Conformance(conformance::Args),
}

impl Cli {
    /// Runs the command; the exit code says whether it succeeded.
    pub fn run(self) -> Result<ExitCode> {
        let config = match &self.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        };
        let context = Context {
            plugin_dir: plugin_dir(config.plugins.dir.as_deref()),
            config,
        };
        match self.command {
            Command::Plugins(args) => plugins::run(&context, &args),
            Command::Conformance(args) => conformance::run(&context, &args),
        }
    }
}

/// What every command gets: the validated config and the resolved plugin directory.
struct Context {
    config: Config,
    plugin_dir: PathBuf,
}
