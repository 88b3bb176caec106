//! What a proving command sets up from the config: the backend (with its fallback), the
//! strategy, and the parameters of a circuit.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
};

use anyhow::{Context as _, Result};
use bellhop_circuits::CircuitSpec;
use bellhop_plugin_api::{
    backend::Backend, cast_slice, strategy::Strategy, Capabilities, DeviceInfo, DeviceMemory, OpenRequest,
};

use crate::{
    config::Config,
    params::Srs,
    plugins::{Backends, Plugin, Strategies},
};

/// An opened backend on one device, and the parameters whose bases it was told to keep.
pub struct OpenedBackend {
    backend: Box<dyn Backend>,
    /// Its name and source, for reports.
    pub name: String,
    /// What the plugin says it can do.
    pub capabilities: Capabilities,
    /// The device it was opened on, as the plugin describes it (none if it lists none).
    pub device: Option<DeviceInfo>,
    /// Parameters whose bases the backend keeps; each is held here until the backend
    /// releases it, which is the promise `keep_bases` makes.
    kept: Mutex<Vec<Arc<Srs>>>,
}

impl AsRef<dyn Backend> for OpenedBackend {
    fn as_ref(&self) -> &(dyn Backend + 'static) {
        self.backend.as_ref()
    }
}

fn open_backend_named(spec: &str, config: &Config, plugin_dir: &Path, device: u32) -> Result<OpenedBackend> {
    let plugin = Plugin::<Backends>::find(spec, plugin_dir)?;
    let options = toml::to_string(&config.backend.options)?;
    let request = OpenRequest { device, threads: config.backend.threads, options: options.into() };
    let backend = plugin.open(&request)?;
    Ok(OpenedBackend {
        backend,
        name: format!("{} ({})", plugin.info.name, plugin.source),
        capabilities: plugin.info.capabilities,
        device: plugin.info.devices.iter().find(|d| d.index == device).cloned(),
        kept: Mutex::new(Vec::new()),
    })
}

impl OpenedBackend {
    /// Opens the configured backend on `device` (or its fallback, with a warning).
    pub fn open(config: &Config, plugin_dir: &Path, device: u32) -> Result<Self> {
        match (open_backend_named(&config.backend.plugin, config, plugin_dir, device), &config.backend.fallback) {
            (Ok(opened), _) => Ok(opened),
            (Err(e), Some(fallback)) => {
                tracing::warn!(
                    "backend `{}` is unavailable ({e:#}); falling back to `{fallback}`",
                    config.backend.plugin
                );
                let fallback_config = Config {
                    backend: crate::config::BackendConfig { options: toml::Table::new(), ..config.backend.clone() },
                    ..config.clone()
                };
                open_backend_named(fallback, &fallback_config, plugin_dir, device)
                    .with_context(|| format!("the fallback backend `{fallback}` is unavailable too"))
            }
            (Err(e), None) => Err(e),
        }
    }

    fn kept(&self) -> MutexGuard<'_, Vec<Arc<Srs>>> {
        self.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn keep(&self, kept: &mut Vec<Arc<Srs>>, srs: &Arc<Srs>) -> Result<()> {
        if kept.iter().any(|k| Arc::ptr_eq(k, srs)) {
            return Ok(());
        }
        let _span = tracing::info_span!("keep_bases").entered();
        self.backend
            .keep_bases(
                &[cast_slice(&srs.h), cast_slice(&srs.l), cast_slice(&srs.a), cast_slice(&srs.b_g1)],
                &[cast_slice(&srs.b_g2)],
            )
            .with_context(|| format!("backend {} could not keep the bases of {}", self.name, srs.path.display()))?;
        kept.push(Arc::clone(srs));
        Ok(())
    }

    /// Whether the backend keeps `srs`'s bases.
    pub fn keeps(&self, srs: &Arc<Srs>) -> bool {
        self.kept().iter().any(|k| Arc::ptr_eq(k, srs))
    }

    /// Lets the backend keep `srs`'s bases until [`OpenedBackend::release`] or the end
    /// (a GPU backend uploads them once and each proof then uploads only its scalars).
    /// `srs` is held here until then.
    pub fn keep_bases(&self, srs: &Arc<Srs>) -> Result<()> {
        self.keep(&mut self.kept(), srs)
    }

    /// Ends the promise for `srs` alone: the ABI releases every kept set at once, so the
    /// others are kept again.
    pub fn release(&self, srs: &Arc<Srs>) -> Result<()> {
        let mut kept = self.kept();
        if !kept.iter().any(|k| Arc::ptr_eq(k, srs)) {
            return Ok(());
        }
        self.backend.release_bases().with_context(|| format!("backend {} could not release kept bases", self.name))?;
        let others: Vec<Arc<Srs>> = std::mem::take(&mut *kept).into_iter().filter(|k| !Arc::ptr_eq(k, srs)).collect();
        for other in &others {
            self.keep(&mut kept, other)?;
        }
        Ok(())
    }

    /// The device's memory now, as the backend reports it (ABI 1.3), if it does.
    pub fn memory(&self) -> Option<DeviceMemory> {
        self.backend.memory().ok()
    }
}

impl Drop for OpenedBackend {
    fn drop(&mut self) {
        if !self.kept().is_empty() {
            if let Err(e) = self.backend.release_bases() {
                tracing::warn!("backend {} failed to release kept bases: {e}", self.name);
            }
        }
    }
}

/// Opens the configured strategy; returns it with its name and source.
pub fn open_strategy(config: &Config, plugin_dir: &Path) -> Result<(Box<dyn Strategy>, String)> {
    let plugin = Plugin::<Strategies>::find(&config.synthesis.strategy, plugin_dir)?;
    let options = toml::to_string(&config.synthesis.options)?;
    let strategy =
        plugin.open(&OpenRequest { device: 0, threads: config.synthesis.threads, options: options.into() })?;
    Ok((strategy, format!("{} ({})", plugin.info.name, plugin.source)))
}

/// An opened backend and strategy, and what they are called.
pub struct Session {
    /// The backend, on `[backend] device`.
    pub backend: OpenedBackend,
    /// The strategy.
    pub strategy: Box<dyn Strategy>,
    /// Its name and source, for reports.
    pub strategy_name: String,
}

impl Session {
    /// Opens the configured backend (or its fallback, with a warning) and strategy.
    pub fn open(config: &Config, plugin_dir: &Path) -> Result<Self> {
        let backend = OpenedBackend::open(config, plugin_dir, config.backend.device())?;
        let (strategy, strategy_name) = open_strategy(config, plugin_dir)?;
        Ok(Self { backend, strategy, strategy_name })
    }

    /// Lets the backend keep `srs`'s bases for the rest of the session (see
    /// [`OpenedBackend::keep_bases`]).
    pub fn keep_bases(&mut self, srs: &Arc<Srs>) -> Result<()> {
        self.backend.keep_bases(srs)
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
