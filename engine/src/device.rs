//! The engine's devices: the backend opened on each configured device, proving one
//! partition at a time. A failure of the device (a backend error or panic, a proof that
//! does not verify) is told apart from a failure of the job, so that the partition can be
//! retried on another device.

use std::{
    collections::HashSet,
    panic::{catch_unwind, AssertUnwindSafe},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use bellhop_host::{
    config::Config,
    dealloc::Dealloc,
    params::Srs,
    pipeline::{ProvedJob, Randomness},
    plugins::{Backends, Plugin},
    prover::{self, ProveError},
    session::OpenedBackend,
};
use bellhop_plugin_sdk::{strategy::Assignment, Capabilities, ErrorKind};

/// One configured device.
pub(crate) struct Device {
    /// Its place in `[backend] devices`.
    pub(crate) ordinal: usize,
    /// The index the backend was opened with.
    pub(crate) index: u32,
    /// Its name as the backend describes it.
    pub(crate) name: String,
    /// The backend's name and source.
    pub(crate) backend_name: String,
    /// Its memory as described.
    pub(crate) memory_bytes: u64,
    /// The opened backend; none if it failed to open.
    pub(crate) backend: Result<OpenedBackend, String>,
    /// Parameter sets it had no room to keep, so warned about once.
    crowded: Mutex<HashSet<PathBuf>>,
}

/// Why a partition was not proved.
#[derive(Debug)]
pub(crate) enum Fault {
    /// The device failed: retry the partition on another one.
    Device(String),
    /// The job cannot be proved (its parameters do not fit it, say).
    Job(String),
}

/// Opens the backend on every device of `[backend] devices` (without it: `[backend]
/// device` if set, else every device the backend describes, else device 0). A device that
/// fails to open is kept, marked down; if every one fails, the first error is returned.
pub(crate) fn open_all(config: &Config, plugin_dir: &Path) -> anyhow::Result<Vec<Device>> {
    let indices = match (&config.backend.devices, config.backend.device) {
        (Some(indices), _) if !indices.is_empty() => indices.clone(),
        (Some(_), _) => anyhow::bail!("[backend] devices is empty: list at least one device, or leave it out"),
        (None, Some(device)) => vec![device],
        (None, None) => {
            let described: Vec<u32> = Plugin::<Backends>::find(&config.backend.plugin, plugin_dir)
                .map(|plugin| plugin.info.devices.iter().map(|d| d.index).collect())
                .unwrap_or_default();
            if described.is_empty() {
                vec![0]
            } else {
                described
            }
        }
    };
    let mut devices = Vec::new();
    for (ordinal, index) in indices.into_iter().enumerate() {
        let backend = OpenedBackend::open(config, plugin_dir, index).map_err(|e| format!("{e:#}"));
        let (name, backend_name, memory_bytes) = match &backend {
            Ok(b) => (
                b.device.as_ref().map_or_else(|| b.name.clone(), |d| d.name.to_string()),
                b.name.clone(),
                b.device.as_ref().map_or(0, |d| d.memory_bytes),
            ),
            Err(e) => {
                tracing::warn!("device {index} is down: {e}");
                (format!("device {index}"), config.backend.plugin.clone(), 0)
            }
        };
        devices.push(Device { ordinal, index, name, backend_name, memory_bytes, backend, crowded: Mutex::default() });
    }
    if devices.iter().all(|d| d.backend.is_err()) {
        let first = devices.iter().find_map(|d| d.backend.as_ref().err()).cloned().unwrap_or_default();
        anyhow::bail!("no device could be opened: {first}");
    }
    Ok(devices)
}

impl Device {
    fn backend(&self) -> Result<&OpenedBackend, Fault> {
        self.backend.as_ref().map_err(|e| Fault::Device(e.clone()))
    }

    /// Lets the backend keep `srs`'s bases where its free memory allows (it uploads them
    /// for every proof otherwise).
    pub(crate) fn keep(&self, srs: &Arc<Srs>) -> anyhow::Result<()> {
        let backend = self.backend.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        if backend.keeps(srs) {
            return Ok(());
        }
        if backend.capabilities.contains(Capabilities::GPU) {
            if let Some(memory) = backend.memory() {
                // Kept bases take their size on the device, and MSMs need room beside them.
                if memory.free_bytes < srs.resident_bytes() + srs.resident_bytes() / 4 {
                    if self.crowded.lock().unwrap_or_else(|p| p.into_inner()).insert(srs.path.clone()) {
                        tracing::warn!(
                            "device {} has {} MiB free, too little to keep the bases of {} ({} MiB): they are \
                             uploaded for every proof",
                            self.ordinal,
                            memory.free_bytes >> 20,
                            srs.path.display(),
                            srs.resident_bytes() >> 20
                        );
                    }
                    return Ok(());
                }
            }
        }
        backend.keep_bases(srs)
    }

    /// Stops keeping `srs`'s bases.
    pub(crate) fn release(&self, srs: &Arc<Srs>) {
        if let Ok(backend) = &self.backend {
            if let Err(e) = backend.release(srs) {
                tracing::warn!("device {}: {e:#}", self.ordinal);
            }
        }
    }

    /// The device's memory now, as its backend reports it.
    pub(crate) fn memory(&self) -> Option<bellhop_plugin_sdk::DeviceMemory> {
        self.backend.as_ref().ok().and_then(OpenedBackend::memory)
    }

    /// Proves `assignment` of `circuit` with `srs` and verifies it (if `verify`); its
    /// 192 bytes.
    pub(crate) fn prove(
        &self,
        circuit: &str,
        srs: &Arc<Srs>,
        assignment: Assignment,
        verify: bool,
        dealloc: &Dealloc,
    ) -> Result<Vec<u8>, Fault> {
        let backend = self.backend()?;
        if let Err(e) = self.keep(srs) {
            tracing::warn!("device {} could not keep the bases of {}: {e:#}", self.ordinal, srs.path.display());
        }
        let blinding = Randomness::Os.blinding(0).map_err(|e| Fault::Job(e.to_string()))?;
        let proved = catch_unwind(AssertUnwindSafe(|| {
            let public_inputs = prover::public_inputs(&assignment);
            if backend.proves_whole_batches() {
                prover::check_inputs(srs, &assignment, circuit)?;
                let mut proofs =
                    prover::prove_whole_batch(backend.as_ref(), srs, &[&assignment], std::slice::from_ref(&blinding))?;
                dealloc.drop_later(assignment);
                return Ok((proofs.remove(0), public_inputs));
            }
            prover::prove(backend.as_ref(), backend.msm_calls(), srs, assignment, blinding, circuit, dealloc)
        }))
        .map_err(|panic| {
            Fault::Device(format!("the backend panicked: {}", bellhop_plugin_sdk::panic_message(&*panic)))
        })?;
        let (proof, public_inputs) = proved.map_err(fault)?;
        if verify {
            catch_unwind(AssertUnwindSafe(|| prover::verify(srs, &proof, &public_inputs, circuit)))
                .map_err(|panic| {
                    Fault::Job(format!("verifying the proof panicked: {}", bellhop_plugin_sdk::panic_message(&*panic)))
                })?
                .map_err(fault)?;
        }
        Ok(ProvedJob { index: 0, circuit: circuit.into(), proof, public_inputs }.proof_bytes())
    }
}

/// Whether a proof error is the device's or the job's: a backend that refuses its input
/// or options, or does not support what was asked, would refuse it on any device.
fn fault(error: ProveError) -> Fault {
    match &error {
        ProveError::Backend { error: e, .. }
            if [ErrorKind::INVALID_INPUT, ErrorKind::UNSUPPORTED, ErrorKind::OPTIONS].contains(&e.kind) =>
        {
            Fault::Job(error.to_string())
        }
        ProveError::Backend { .. } | ProveError::BadPoint { .. } => Fault::Device(error.to_string()),
        // A witness that does not satisfy its circuit fails verification on every device,
        // so it must not take the devices down one by one.
        ProveError::Unverified { .. }
        | ProveError::Params(_)
        | ProveError::Malformed { .. }
        | ProveError::OtherStatement { .. }
        | ProveError::SubvertedParameters
        | ProveError::Verifier { .. } => Fault::Job(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use bellhop_plugin_sdk::PluginError;

    use super::*;

    #[test]
    fn refused_input_and_unverified_proofs_are_the_job_s_fault_and_a_failing_device_the_device_s() {
        let backend = |kind| ProveError::Backend { phase: "msm", error: PluginError::new(kind, "why") };
        for kind in [ErrorKind::INVALID_INPUT, ErrorKind::UNSUPPORTED, ErrorKind::OPTIONS] {
            assert!(matches!(fault(backend(kind)), Fault::Job(_)));
        }
        for kind in [ErrorKind::DEVICE, ErrorKind::NO_DEVICE, ErrorKind::PANIC, ErrorKind::INTERNAL] {
            assert!(matches!(fault(backend(kind)), Fault::Device(_)));
        }
        assert!(matches!(fault(ProveError::Unverified { circuit: "chain:1024".into() }), Fault::Job(_)));
    }
}
