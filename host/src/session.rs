//! What a proving command sets up from the config: the backend (with its fallback), the
//! strategy, and the parameters of a circuit.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::{Context as _, Result};
use bellhop_circuits::CircuitSpec;
use bellhop_plugin_api::{backend::Backend, cast_slice, strategy::Strategy, OpenRequest};

use crate::{
    config::Config,
    params::Srs,
    plugins::{Backends, Plugin, Strategies},
};

/// An opened backend and strategy, and what they are called.
pub struct Session {
    /// The backend.
    pub backend: Box<dyn Backend>,
    /// Its name and source, for reports.
    pub backend_name: String,
    /// The strategy.
    pub strategy: Box<dyn Strategy>,
    /// Its name and source, for reports.
    pub strategy_name: String,
    /// Parameters whose bases the backend was told to keep; held until the backend is
    /// dropped (it is declared first, so it drops first), which is the promise
    /// `keep_bases` makes.
    kept: Vec<Arc<Srs>>,
}

fn open_backend(spec: &str, config: &Config, plugin_dir: &Path) -> Result<(Box<dyn Backend>, String)> {
    let plugin = Plugin::<Backends>::find(spec, plugin_dir)?;
    let options = toml::to_string(&config.backend.options)?;
    let request =
        OpenRequest { device: config.backend.device, threads: config.backend.threads, options: options.into() };
    let backend = plugin.open(&request)?;
    Ok((backend, format!("{} ({})", plugin.info.name, plugin.source)))
}

impl Session {
    /// Opens the configured backend (or its fallback, with a warning) and strategy.
    pub fn open(config: &Config, plugin_dir: &Path) -> Result<Self> {
        let (backend, backend_name) =
            match (open_backend(&config.backend.plugin, config, plugin_dir), &config.backend.fallback) {
                (Ok(opened), _) => opened,
                (Err(e), Some(fallback)) => {
                    tracing::warn!(
                        "backend `{}` is unavailable ({e:#}); falling back to `{fallback}`",
                        config.backend.plugin
                    );
                    let fallback_config = Config {
                        backend: crate::config::BackendConfig { options: toml::Table::new(), ..config.backend.clone() },
                        ..config.clone()
                    };
                    open_backend(fallback, &fallback_config, plugin_dir)
                        .with_context(|| format!("the fallback backend `{fallback}` is unavailable too"))?
                }
                (Err(e), None) => return Err(e),
            };
        let plugin = Plugin::<Strategies>::find(&config.synthesis.strategy, plugin_dir)?;
        let options = toml::to_string(&config.synthesis.options)?;
        let strategy =
            plugin.open(&OpenRequest { device: 0, threads: config.synthesis.threads, options: options.into() })?;
        let strategy_name = format!("{} ({})", plugin.info.name, plugin.source);
        Ok(Self { backend, backend_name, strategy, strategy_name, kept: Vec::new() })
    }

    /// Lets the backend keep `srs`'s bases for the rest of the session (a GPU backend
    /// uploads them once and each proof then uploads only its scalars). `srs` is held here
    /// until the session ends.
    pub fn keep_bases(&mut self, srs: &Arc<Srs>) -> Result<()> {
        if self.kept.iter().any(|kept| Arc::ptr_eq(kept, srs)) {
            return Ok(());
        }
        let _span = tracing::info_span!("keep_bases").entered();
        self.backend
            .keep_bases(
                &[cast_slice(&srs.h), cast_slice(&srs.l), cast_slice(&srs.a), cast_slice(&srs.b_g1)],
                &[cast_slice(&srs.b_g2)],
            )
            .with_context(|| {
                format!("backend {} could not keep the bases of {}", self.backend_name, srs.path.display())
            })?;
        self.kept.push(Arc::clone(srs));
        Ok(())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.kept.is_empty() {
            if let Err(e) = self.backend.release_bases() {
                tracing::warn!("backend {} failed to release kept bases: {e}", self.backend_name);
            }
        }
    }
}

/// The parameter file for `circuit`: `explicit` if given, else its name in `[params] dir`.
pub fn params_path(config: &Config, spec: &CircuitSpec, explicit: Option<&Path>) -> Result<PathBuf> {
    match explicit {
        Some(path) => Ok(path.to_path_buf()),
        None => Ok(config.params.dir.join(spec.params_file_name()?)),
    }
}

/// Reads the parameters of `circuit`.
pub fn load_params(config: &Config, spec: &CircuitSpec, explicit: Option<&Path>) -> Result<Arc<Srs>> {
    Ok(Arc::new(Srs::read(&params_path(config, spec, explicit)?, &spec.to_string(), false)?))
}
