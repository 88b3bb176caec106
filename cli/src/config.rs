//! `bellhop config`: configuration files.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context as _, Result};
use bellhop_host::cuzk_config;

#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// Write a cuzk.toml as the bellhop.toml that runs Bellhop's daemon where cuzk's ran
    /// (its listen address, parameter directory and memory budget, cuzk's defaults
    /// included); keys with no equivalent are named with what replaces them.
    FromCuzk {
        /// The cuzk.toml.
        file: PathBuf,
        /// Write here instead of standard output (an existing file is replaced only with --force).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Replace `--out` if it exists.
        #[arg(long)]
        force: bool,
    },
}

pub(super) fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::FromCuzk { file, out, force } => {
            let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let translation = cuzk_config::translate(&text).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            for note in &translation.notes {
                eprintln!("{}: {note}", file.display());
            }
            let toml = translation.to_toml();
            match out {
                Some(out) => {
                    anyhow::ensure!(
                        force || !out.exists(),
                        "{} exists; give --force to replace it, or another --out",
                        out.display()
                    );
                    std::fs::write(&out, toml).with_context(|| format!("cannot write {}", out.display()))?;
                    eprintln!("wrote {}", out.display());
                }
                None => print!("{toml}"),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
