//! `bellhop install`: this binary and the plugins beside it, where a systemd unit finds
//! them, with the unit and a production configuration.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{Context as _, Result};
use bellhop_host::plugins::plugin_files;

use super::Context;

/// The production configuration `install` writes where none is.
pub(super) const PRODUCTION_CONFIG: &str = include_str!("../../docs/examples/bellhop.toml");

#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// Installs into PREFIX/lib/bellhop (the binary and its plugins) and PREFIX/bin/bellhop
    /// (a link to it).
    #[arg(long, default_value = "/usr/local")]
    prefix: PathBuf,
    /// Writes bellhop.toml here (the production example), unless one is there.
    #[arg(long, default_value = "/etc/bellhop")]
    config_dir: PathBuf,
    /// Writes bellhop.service here (e.g. /etc/systemd/system); none: not written.
    #[arg(long)]
    systemd_dir: Option<PathBuf>,
    /// Prefixed to every path written (a staging root for packaging), not to those the
    /// unit and links name.
    #[arg(long, default_value = "/")]
    destdir: PathBuf,
}

/// `root` + `path`, `path` taken as relative to it.
fn staged(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// Copies `from` to `to` through a temporary file, so a running daemon's file is replaced,
/// not overwritten under it.
fn copy(from: &Path, to: &Path) -> Result<()> {
    let temporary = to.with_extension("installing");
    std::fs::copy(from, &temporary)
        .with_context(|| format!("copying {} to {}", from.display(), temporary.display()))?;
    std::fs::rename(&temporary, to).with_context(|| format!("renaming {} to {}", temporary.display(), to.display()))
}

/// The systemd unit that runs `bin` with `config`.
fn unit(bin: &Path, config: &Path) -> String {
    format!(
        "[Unit]
Description=Bellhop proving engine (cuzk.v1.ProvingEngine)
After=network.target

[Service]
ExecStart={} --config {} serve
Restart=on-failure
# /run/bellhop for the socket, /var/lib/bellhop for the journal and pce's cache.
RuntimeDirectory=bellhop
RuntimeDirectoryPreserve=yes
StateDirectory=bellhop
StateDirectoryMode=0700
# SIGTERM lets started proofs finish within [daemon] shutdown_grace; leave systemd longer.
KillSignal=SIGTERM
TimeoutStopSec=600
LimitNOFILE=65536
LimitMEMLOCK=infinity
# malloc's large blocks on transparent huge pages (docs/BENCHMARKS.md: with the cuda
# backend's register_host_memory, a 32 GiB PoRep in 35.2 s against 54.0).
Environment=GLIBC_TUNABLES=glibc.malloc.hugetlb=1

[Install]
WantedBy=multi-user.target
",
        bin.display(),
        config.display()
    )
}

pub(super) fn run(context: &Context, args: &Args) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("finding this executable")?;
    let plugins = plugin_files(&context.plugin_dir);
    anyhow::ensure!(
        !plugins.is_empty(),
        "no plugin files in {} (beside this executable, or [plugins] dir): build them first with \
         `cargo build --release --workspace`, then run target/release/bellhop install",
        context.plugin_dir.display()
    );
    let lib = args.prefix.join("lib/bellhop");
    let bin = args.prefix.join("bin/bellhop");
    let (staged_lib, staged_bin) = (staged(&args.destdir, &lib), staged(&args.destdir, &bin));
    for dir in [&staged_lib, &staged_bin.parent().expect("bin/bellhop has a parent").to_path_buf()] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    copy(&exe, &staged_lib.join("bellhop"))?;
    for plugin in &plugins {
        copy(plugin, &staged_lib.join(plugin.file_name().expect("plugin files have names")))?;
    }
    // The binary finds its plugins beside itself, through the link too.
    let _ = std::fs::remove_file(&staged_bin);
    std::os::unix::fs::symlink(lib.join("bellhop"), &staged_bin)
        .with_context(|| format!("linking {} to {}", staged_bin.display(), lib.join("bellhop").display()))?;
    println!(
        "installed {} and {} plugins in {}; {} links to it",
        exe.display(),
        plugins.len(),
        lib.display(),
        bin.display()
    );

    let config = args.config_dir.join("bellhop.toml");
    let staged_config = staged(&args.destdir, &config);
    if staged_config.exists() {
        println!("kept {}, which exists (the production example is docs/examples/bellhop.toml)", config.display());
    } else {
        std::fs::create_dir_all(staged_config.parent().expect("a file in a directory"))?;
        std::fs::write(&staged_config, PRODUCTION_CONFIG)
            .with_context(|| format!("writing {}", staged_config.display()))?;
        println!("wrote {} (cuda and pce; read it before the first start)", config.display());
    }
    if let Some(dir) = &args.systemd_dir {
        let staged_dir = staged(&args.destdir, dir);
        std::fs::create_dir_all(&staged_dir)?;
        let path = staged_dir.join("bellhop.service");
        std::fs::write(&path, unit(&bin, &config)).with_context(|| format!("writing {}", path.display()))?;
        println!(
            "wrote {}; then: systemctl daemon-reload && systemctl enable --now bellhop",
            dir.join("bellhop.service").display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use bellhop_host::config::Config;

    #[test]
    fn the_production_config_is_valid_and_proves_with_cuda_and_pce() {
        let config = Config::parse(super::PRODUCTION_CONFIG).unwrap();
        assert_eq!((config.backend.plugin.as_str(), config.synthesis.strategy.as_str()), ("cuda", "pce"));
        assert_eq!(config.daemon.state_dir, std::path::PathBuf::from("/var/lib/bellhop"));
    }
}
