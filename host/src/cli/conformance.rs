//! `bellhop conformance`: a backend's primitives against the CPU references.

use std::process::ExitCode;

use anyhow::Result;
use bellhop_conformance::{run_suite, seed_from_env, Report, Suite};
use bellhop_plugin_api::OpenRequest;

use super::Context;
use crate::plugins::{Backends, Plugin};

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// A backend name (as `bellhop plugins` lists it) or the path of a plugin file.
    plugin: String,
    /// The device to open.
    #[arg(long, default_value_t = 0)]
    device: u32,
    /// Worker threads for the backend (0: all cores).
    #[arg(long, default_value_t = 0)]
    threads: u32,
    /// The seed of the random inputs (default: `BELLHOP_SEED`, else fresh; always printed).
    #[arg(long)]
    seed: Option<u64>,
}

pub(super) fn run(context: &Context, args: &Args) -> Result<ExitCode> {
    let plugin = Plugin::<Backends>::find(&args.plugin, &context.plugin_dir)?;
    let options = if args.plugin == context.config.backend.plugin {
        toml::to_string(&context.config.backend.options)?
    } else {
        String::new()
    };
    let request = OpenRequest { device: args.device, threads: args.threads, options: options.into() };
    let backend = plugin.open(&request)?;
    println!("backend {} ({}) device {}", plugin.info.name, plugin.source, args.device);
    let seed = args.seed.unwrap_or_else(seed_from_env);
    let mut results = Vec::new();
    for suite in Suite::ALL {
        results.extend(run_suite(backend.as_ref(), suite, seed).results);
    }
    let report = Report { seed, results };
    print!("{report}");
    Ok(if report.passed() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
