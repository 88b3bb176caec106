//! The CUDA GPUs on this machine, as sppark sees them (Volta or newer, cooperative
//! launch): their list, their memory, and the errors of CUDA calls. A crate of its own, with
//! no kernels, so that a plugin linking another sppark-based library (cuda-supraseal links
//! supraseal-c2) can list GPUs without the CUDA backend's kernels, which would define
//! sppark's kernels a second time.

use bellhop_plugin_sdk::{DeviceInfo, DeviceMemory, ErrorKind, PluginError};
use sppark::Error;

/// `struct bellhop_gpu_info` of `cuda/devices.cu`.
#[repr(C)]
struct GpuInfo {
    name: [u8; 256],
    memory_bytes: usize,
    sm_count: u32,
}

extern "C" {
    fn bellhop_cuda_device_count() -> usize;
    fn bellhop_cuda_device_info(index: usize, out: *mut GpuInfo) -> Error;
    fn bellhop_cuda_device_memory(index: usize, free: *mut usize, total: *mut usize) -> Error;
}

/// `cudaErrorMemoryAllocation`.
const CUDA_OUT_OF_MEMORY: i32 = 2;

/// The result of CUDA call `call`: its error, if any, as an [`ErrorKind::OUT_OF_MEMORY`]
/// error when the device had no room, else an [`ErrorKind::DEVICE`] one. sppark's
/// `CUDA_OK` reports a CUDA error negated, so either sign is read.
pub fn cuda_result(call: &str, error: Error) -> Result<(), PluginError> {
    match error.code {
        0 => Ok(()),
        code if code.abs() == CUDA_OUT_OF_MEMORY => Err(PluginError::out_of_memory(format!(
            "{call}: CUDA error {}: {error}; free device memory (fewer kept parameter sets, no other process on \
             the GPU) or prove on a larger card",
            error.code
        ))),
        code => Err(PluginError::device(format!("{call}: CUDA error {code}: {error}"))),
    }
}

/// The GPUs sppark can use (Volta or newer, cooperative launch).
pub fn gpus() -> Vec<DeviceInfo> {
    // SAFETY: takes no arguments; returns 0 when there is no driver or device.
    let count = unsafe { bellhop_cuda_device_count() };
    (0..count)
        .filter_map(|index| {
            let mut info = GpuInfo { name: [0; 256], memory_bytes: 0, sm_count: 0 };
            // SAFETY: `info` is a valid, writable GpuInfo; `index` is below the count.
            let error = unsafe { bellhop_cuda_device_info(index, &mut info) };
            (error.code == 0).then(|| {
                let len = info.name.iter().position(|&b| b == 0).unwrap_or(info.name.len());
                DeviceInfo {
                    index: index as u32,
                    name: String::from_utf8_lossy(&info.name[..len]).as_ref().into(),
                    memory_bytes: info.memory_bytes as u64,
                    compute_units: info.sm_count,
                }
            })
        })
        .collect()
}

/// GPU `device`'s memory now, total and free.
pub fn gpu_memory(device: u32) -> Result<DeviceMemory, PluginError> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: both out-pointers are valid and writable; the index is checked on the C side.
    let error = unsafe { bellhop_cuda_device_memory(device as usize, &mut free, &mut total) };
    cuda_result("memory", error)?;
    Ok(DeviceMemory { total_bytes: total as u64, free_bytes: free as u64 })
}

/// Refuses to open GPU `device` for backend `name` unless it exists, with the fix in the message.
pub fn check_device(name: &str, device: u32) -> Result<(), PluginError> {
    let count = gpus().len();
    if count == 0 {
        return Err(PluginError::new(
            ErrorKind::NO_DEVICE,
            format!(
                "the {name} backend found no CUDA GPU on this machine (none visible, or no NVIDIA driver); \
                 use [backend] plugin = \"cpu\", or set [backend] fallback = \"cpu\""
            ),
        ));
    }
    if device as usize >= count {
        return Err(PluginError::new(
            ErrorKind::NO_DEVICE,
            format!("GPU {device} does not exist: this machine has {count} (0 to {}); set [backend] device", count - 1),
        ));
    }
    Ok(())
}
