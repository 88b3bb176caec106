//! What a proving command sets up from the config: the backend (with its fallback), the
//! strategy, and the parameters of a circuit.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
};

use anyhow::{Context as _, Result};
use bellhop_circuits::CircuitSpec;
use bellhop_plugin_sdk::{
    backend::{proof_msms_from_primitives, Backend, ProofMsms, ProvingBases},
    cast, cast_slice,
    strategy::{Assignment, Strategy},
    Capabilities, DeviceInfo, DeviceMemory, OpenRequest, PluginError,
};

use crate::{
    config::Config,
    params::Srs,
    plugins::{Backends, Plugin, Strategies},
    shadow::Shadowed,
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
    open_plugin(&Plugin::<Backends>::find(spec, plugin_dir)?, config, plugin_dir, device)
}

fn open_plugin(plugin: &Plugin<Backends>, config: &Config, plugin_dir: &Path, device: u32) -> Result<OpenedBackend> {
    let options = toml::to_string(&config.backend.options)?;
    let request = OpenRequest { device, threads: config.backend.threads, options: options.into() };
    let backend = plugin.open(&request)?;
    let name = format!("{} ({})", plugin.info.name, plugin.source);
    let mut opened = match &config.backend.shadow {
        None => OpenedBackend::new(backend, name, plugin.info.capabilities),
        Some(shadow) => {
            let reference = Plugin::<Backends>::find(shadow, plugin_dir).context("[backend] shadow")?;
            let request = OpenRequest { device: 0, threads: config.backend.threads, options: "".into() };
            let opened = reference.open(&request).context("[backend] shadow")?;
            let shadow_name = format!("{} ({})", reference.info.name, reference.source);
            // Whole-batch proofs have no reference to compare: shadowed, a backend proves
            // one proof at a time.
            let capabilities = plugin.info.capabilities.without(Capabilities::PROVE_BATCH);
            let name = format!("{name} shadowed by {shadow_name}");
            OpenedBackend::new(Box::new(Shadowed::new(backend, opened, shadow_name)), name, capabilities)
        }
    };
    if !config.backend.proof_msms {
        opened.capabilities = opened.capabilities.without(Capabilities::PROOF_MSMS);
    }
    opened.device = plugin.info.devices.iter().find(|d| d.index == device).cloned();
    Ok(opened)
}

impl OpenedBackend {
    /// `backend`, named `name`, with the capabilities its plugin lists; for a backend made
    /// in place rather than opened from a plugin (tests, benches).
    pub fn new(backend: Box<dyn Backend>, name: impl Into<String>, capabilities: Capabilities) -> Self {
        Self { backend, name: name.into(), capabilities, device: None, kept: Mutex::new(Vec::new()) }
    }

    /// Whether it proves whole batches in one call ([`Capabilities::PROVE_BATCH`]).
    pub fn proves_whole_batches(&self) -> bool {
        self.capabilities.contains(Capabilities::PROVE_BATCH)
    }

    /// h and the five MSMs of one proof: the backend's own call where it offers one
    /// ([`Capabilities::PROOF_MSMS`], unless `[backend] proof_msms = false`), else the
    /// SDK's [`proof_msms_from_primitives`] over its primitives (a plugin built before
    /// ABI 1.4 has no such call).
    pub fn proof_msms(&self, bases: ProvingBases<'_>, assignment: &Assignment) -> Result<ProofMsms, PluginError> {
        if self.capabilities.contains(Capabilities::PROOF_MSMS) {
            self.backend.proof_msms(bases, assignment)
        } else {
            proof_msms_from_primitives(self.backend.as_ref(), bases, assignment)
        }
    }

    /// Opens the configured backend on `device`. With `[backend] fallback`, a backend that
    /// cannot be loaded, or that lists no device `device`, gives way (with a warning) to the
    /// fallback, opened on its device 0 without the configured backend's options; any
    /// other failure (options refused, a listed device that fails to open) is an error.
    pub fn open(config: &Config, plugin_dir: &Path, device: u32) -> Result<Self> {
        let Some(fallback) = &config.backend.fallback else {
            return open_backend_named(&config.backend.plugin, config, plugin_dir, device);
        };
        let unavailable = match Plugin::<Backends>::find(&config.backend.plugin, plugin_dir) {
            Ok(plugin) if plugin.info.devices.iter().any(|d| d.index == device) => {
                return open_plugin(&plugin, config, plugin_dir, device);
            }
            Ok(plugin) => format!("it lists {} device(s), none with index {device}", plugin.info.devices.len()),
            Err(e) => format!("{:#}", anyhow::Error::from(e)),
        };
        tracing::warn!(
            "backend `{}` is unavailable ({unavailable}); falling back to `{fallback}`",
            config.backend.plugin
        );
        let fallback_config = Config {
            backend: crate::config::BackendConfig { options: toml::Table::new(), ..config.backend.clone() },
            ..config.clone()
        };
        open_backend_named(fallback, &fallback_config, plugin_dir, 0).with_context(|| {
            format!(
                "backend `{}` is unavailable ({unavailable}), and its fallback `{fallback}` too",
                config.backend.plugin
            )
        })
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

    /// Checks that the device computes: a G1 MSM of 64 terms whose sum is known, where the
    /// backend has `msm_g1`. An error says what failed or which answer was wrong.
    pub fn check(&self) -> Result<()> {
        if !self.capabilities.contains(Capabilities::MSM_G1) {
            return Ok(());
        }
        use group::{Curve, Group};
        let g = blstrs::G1Projective::generator();
        let terms = 1..=64u64;
        let bases: Vec<blstrs::G1Affine> = terms.clone().map(|i| (g * blstrs::Scalar::from(i)).to_affine()).collect();
        let scalars: Vec<blstrs::Scalar> = terms.clone().map(|i| blstrs::Scalar::from(7 * i + 3)).collect();
        let expected = g * blstrs::Scalar::from(terms.map(|i| i * (7 * i + 3)).sum::<u64>());
        let sum = self
            .backend
            .msm_g1(cast_slice(&bases), cast_slice(&scalars))
            .with_context(|| format!("backend {}: a check MSM of 64 terms failed", self.name))?;
        anyhow::ensure!(
            cast::<_, blstrs::G1Projective>(sum) == expected,
            "backend {}: a check MSM of 64 terms gave a wrong sum",
            self.name
        );
        Ok(())
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
    let srs = Srs::read(&params_path(config, spec, explicit)?, &spec.to_string(), false)?;
    crate::synthetic_params::refuse_for(&srs, spec)?;
    Ok(Arc::new(srs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(toml: &str, device: u32) -> Result<OpenedBackend> {
        OpenedBackend::open(&Config::parse(toml).unwrap(), Path::new("no-plugin-dir"), device)
    }

    #[test]
    fn the_fallback_is_for_a_backend_that_cannot_load_or_lacks_the_device() {
        // Cannot load: the fallback opens on its own device 0, whatever was asked for.
        let opened = open("[backend]\nplugin = \"no-such-backend\"\nfallback = \"cpu\"\n", 3).unwrap();
        assert!(opened.name.starts_with("cpu") && opened.device.as_ref().unwrap().index == 0, "{}", opened.name);
        // Loads, but lists no device 3.
        let opened = open("[backend]\nplugin = \"cpu\"\nfallback = \"cpu\"\n", 3).unwrap();
        assert_eq!(opened.device.as_ref().unwrap().index, 0);
        // Options the configured backend refuses are an error, not a reason to fall back.
        let refused = "[backend]\nplugin = \"cpu\"\nfallback = \"cpu\"\n[backend.options]\nwindows = 4\n";
        let e = format!("{:#}", open(refused, 0).err().expect("the cpu backend takes no options"));
        assert!(e.contains("bad options: [backend.options]: unknown field `windows`"), "{e}");
        // Without a fallback, the configured backend's own error.
        let e = format!("{:#}", open("[backend]\nplugin = \"no-such-backend\"\n", 0).err().unwrap());
        assert!(e.contains("no-such-backend"), "{e}");
    }
}
