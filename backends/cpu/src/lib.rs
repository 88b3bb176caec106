//! Bellhop's CPU backend.
//!
//! - MSM on G1 and G2: Pippenger, its windows split across this backend's own rayon pool
//!   (and the points too when there are more threads than windows), each window's buckets
//!   filled by batch-affine additions (C over blst's field arithmetic, `csrc/`), each
//!   window's sum then shifted into place; blst's own Pippenger below 1,024 points.
//! - NTTs over Fr: an in-place radix-2 transform with cached twiddle tables, parallel
//!   across blocks or, in the last stages, within them.
//! - `compute_h`: the whole FFT part of Groth16 with the scalings fused into single passes.
//!
//! The host embeds it as the default backend; `plugin/` exports it as a `cdylib`.

mod msm;
mod ntt;

use std::sync::Arc;

use bellhop_plugin_sdk::{
    backend::{Backend, BackendPlugin, NttDirection},
    cast, cast_slice, cast_slice_mut,
    options::NoOptions,
    pool,
    types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective},
    Capabilities, Description, DeviceInfo, DeviceMemory, ErrorKind, OpenRequest, PhaseTiming, PluginError,
};
use blstrs::Scalar;

/// An opened CPU backend: a sized thread pool (shared by the instances of this size) and
/// the twiddle cache.
pub struct CpuBackend {
    pool: Arc<rayon::ThreadPool>,
    twiddles: ntt::Twiddles,
}

impl CpuBackend {
    /// Opens the backend on `threads` worker threads (0: one per core).
    pub fn new(threads: usize) -> Result<Self, PluginError> {
        Ok(Self { pool: pool::shared("bellhop-cpu", threads)?, twiddles: ntt::Twiddles::default() })
    }

    fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }
}

impl Backend for CpuBackend {
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
        let sum = self.pool.install(|| msm::msm::<msm::G1>(cast_slice(bases), scalars, self.threads()));
        Ok(cast(sum))
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
        let sum = self.pool.install(|| msm::msm::<msm::G2>(cast_slice(bases), scalars, self.threads()));
        Ok(cast(sum))
    }

    fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
        let log_n = values.len().trailing_zeros();
        let values: &mut [Scalar] = cast_slice_mut(values);
        self.pool.install(|| self.twiddles.ntt(values, log_n, direction));
        Ok(())
    }

    fn compute_h(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr]) -> Result<Vec<PhaseTiming>, PluginError> {
        let log_n = a.len().trailing_zeros();
        let (a, b, c) = (cast_slice_mut(a), cast_slice_mut(b), cast_slice_mut(c));
        Ok(self.pool.install(|| self.twiddles.compute_h(a, b, c, log_n)))
    }

    fn memory(&self) -> Result<DeviceMemory, PluginError> {
        host_memory()
    }
}

/// The host's memory: `MemTotal` and `MemAvailable` of /proc/meminfo.
fn host_memory() -> Result<DeviceMemory, PluginError> {
    let info = std::fs::read_to_string("/proc/meminfo")
        .map_err(|e| PluginError::new(ErrorKind::UNSUPPORTED, format!("memory: cannot read /proc/meminfo: {e}")))?;
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .ok_or_else(|| PluginError::new(ErrorKind::UNSUPPORTED, format!("memory: no {name} in /proc/meminfo")))
    };
    Ok(DeviceMemory { total_bytes: field("MemTotal:")?, free_bytes: field("MemAvailable:")? })
}

impl BackendPlugin for CpuBackend {
    type Options = NoOptions;

    fn describe() -> Description {
        Description {
            name: "cpu".into(),
            description: "CPU: blst Pippenger MSM, rayon radix-2 NTT".into(),
            capabilities: Capabilities::MSM_G1 | Capabilities::MSM_G2 | Capabilities::NTT | Capabilities::COMPUTE_H,
            devices: vec![this_machine()],
        }
    }

    fn open(request: &OpenRequest, _: NoOptions) -> Result<Self, PluginError> {
        if request.device != 0 {
            return Err(PluginError::new(
                ErrorKind::NO_DEVICE,
                format!(
                    "device {} does not exist: the cpu backend has one device, 0; set [backend] device = 0",
                    request.device
                ),
            ));
        }
        Self::new(request.threads as usize)
    }
}

/// The one device: this machine's CPUs and memory.
fn this_machine() -> DeviceInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let name = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").and_then(|rest| rest.split_once(':')).map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    let compute_units = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    DeviceInfo { index: 0, name: name.into(), memory_bytes, compute_units }
}

#[cfg(test)]
mod tests {
    use super::*;

    bellhop_conformance::conformance_tests!(cpu, CpuBackend::new(2).unwrap());

    // More threads than Pippenger's windows: the MSMs' tiles also split the points.
    bellhop_conformance::conformance_tests!(cpu_48_threads, CpuBackend::new(48).unwrap());

    /// The CPU backend's primitives with the provided `compute_h`, built from its `ntt`.
    struct ProvidedComputeH(CpuBackend);

    impl Backend for ProvidedComputeH {
        fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
            self.0.msm_g1(bases, scalars)
        }

        fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
            self.0.msm_g2(bases, scalars)
        }

        fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
            self.0.ntt(values, direction)
        }
    }

    bellhop_conformance::conformance_tests!(provided_compute_h, ProvidedComputeH(CpuBackend::new(2).unwrap()));

    #[test]
    fn unknown_options_and_devices_are_refused() {
        use bellhop_plugin_sdk::backend::open_embedded;
        let request = |device, options: &str| OpenRequest { device, threads: 1, options: options.into() };
        let e = open_embedded::<CpuBackend>(&request(3, "")).err().unwrap();
        assert_eq!(e.kind, ErrorKind::NO_DEVICE);
        assert!(e.message.contains("device 3 does not exist"), "{e}");
        let e = open_embedded::<CpuBackend>(&request(0, "windows = 4")).err().unwrap();
        assert_eq!(e.kind, ErrorKind::OPTIONS);
        assert!(e.message.contains("[backend.options]: ") && e.message.contains("unknown field `windows`"), "{e}");
        assert!(open_embedded::<CpuBackend>(&request(0, "")).is_ok());
    }
}
