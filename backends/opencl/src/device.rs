//! OpenCL devices: enumeration across every platform, and one opened device with its
//! compiled program (from the cache where it can be) and the kernels' launchers.

use std::{
    path::Path,
    ptr,
    sync::{Mutex, PoisonError},
    time::Instant,
};

use blstrs::{Fp, Fp2, G1Affine, G2Affine, Scalar};
use ec_gpu::GpuName;
use ec_gpu_gen::SourceBuilder;
use opencl3::{
    command_queue::CommandQueue,
    context::Context,
    device::{Device, CL_DEVICE_TYPE_ALL},
    kernel::{ExecuteKernel, Kernel},
    memory::{Buffer, CL_MEM_READ_WRITE},
    platform::{get_platforms, Platform},
    program::Program,
    types::{cl_device_id, CL_BLOCKING},
};

use crate::cache::{self, ProgramKey};

/// Build options of the program (part of its cache key).
const BUILD_OPTIONS: &str = "";

/// Bellhop's own kernels beside ec-gpu-gen's FFT and multiexp, for Fr (`FIELD`).
const EXTRA_SOURCE: &str = r"
// values[i] <- values[i] * scale * g^i
KERNEL void FIELD_bellhop_scale_powers(GLOBAL FIELD* values, uint n, FIELD scale, FIELD g) {
  const uint i = GET_GLOBAL_ID();
  if(i >= n) return;
  values[i] = FIELD_mul(values[i], FIELD_mul(scale, FIELD_pow(g, i)));
}

// a[i] <- (a[i] * b[i] - c[i]) * z_inv
KERNEL void FIELD_bellhop_h_pointwise(GLOBAL FIELD* a, GLOBAL FIELD* b, GLOBAL FIELD* c, uint n, FIELD z_inv) {
  const uint i = GET_GLOBAL_ID();
  if(i >= n) return;
  a[i] = FIELD_mul(FIELD_sub(FIELD_mul(a[i], b[i]), c[i]), z_inv);
}
";

/// The program's source: ec-gpu-gen's FFT for Fr and multiexp for G1 and G2 (64-bit limbs,
/// as bellperson builds it for OpenCL), then Bellhop's kernels; the same text in every
/// process, so that it can be the program cache's key as it is. ec-gpu-gen's builder keeps
/// fields and multiexps in `HashSet`s and emits them in another order in each process, so
/// each part is built alone here and the parts are joined in a fixed order, the way the
/// builder joins its sections: common code, fields, extension fields, FFTs, multiexps.
pub fn source() -> String {
    let built = |builder: SourceBuilder| builder.build_64_bit_limbs();
    // An empty builder gives the common code and five section separators.
    let common = built(SourceBuilder::new());
    let common = &common[..common.len() - 5 * SEPARATOR.len()];
    // The text of a builder's output between what comes `before` it and `after` it.
    let part = |builder: SourceBuilder, before: usize, after: usize| {
        let out = built(builder);
        out[common.len() + SEPARATOR.len() + before..out.len() - after].to_string()
    };
    let sep = SEPARATOR.len();
    let fr = part(SourceBuilder::new().add_field::<Scalar>(), 0, 4 * sep);
    let fp = part(SourceBuilder::new().add_field::<Fp>(), 0, 4 * sep);
    let fp2 = part(SourceBuilder::new().add_field::<Fp2>(), fp.len() + sep, 3 * sep);
    let fft = part(SourceBuilder::new().add_fft::<Scalar>(), fr.len() + 2 * sep, 2 * sep);
    let msm_g1 = part(SourceBuilder::new().add_multiexp::<G1Affine, Fp>(), fp.len() + fr.len() + 3 * sep, sep);
    let msm_g2 = part(
        SourceBuilder::new().add_multiexp::<G2Affine, Fp2>(),
        fp.len() + fr.len() + 2 * sep + fp2.len() + sep,
        sep,
    );
    let extra = EXTRA_SOURCE.replace("FIELD", &Scalar::name());
    [common.to_string(), fr + &fp, fp2, fft, msm_g1 + &msm_g2, extra].join(SEPARATOR)
}

/// What ec-gpu-gen's builder puts between the sections of its output.
const SEPARATOR: &str = "\n\n";

/// One OpenCL device of one platform.
#[derive(Clone, Debug)]
pub struct DeviceEntry {
    /// The platform's name (e.g. `NVIDIA CUDA`, `Portable Computing Language`).
    pub platform: String,
    /// The device's name.
    pub name: String,
    id: cl_device_id,
    platform_version: String,
}

// SAFETY: a cl_device_id is an opaque handle that OpenCL lets any thread use.
unsafe impl Send for DeviceEntry {}
// SAFETY: as for Send; the entry is never mutated through the handle.
unsafe impl Sync for DeviceEntry {}

impl DeviceEntry {
    /// The program cache's key of `source` on this device: its platform, name, vendor,
    /// versions and driver, the build options and the exact source.
    pub fn program_key(&self, source: &str) -> ProgramKey {
        let device = self.device();
        let identity = [
            self.platform.clone(),
            self.platform_version.clone(),
            self.name.clone(),
            device.vendor().unwrap_or_default(),
            device.version().unwrap_or_default(),
            device.driver_version().unwrap_or_default(),
        ];
        ProgramKey::new(&identity.iter().map(String::as_str).collect::<Vec<_>>(), BUILD_OPTIONS, source)
    }

    /// The device.
    pub fn device(&self) -> Device {
        Device::new(self.id)
    }
}

/// Serializes enumerating and opening devices: PoCL's first platform and device queries
/// are not safe to make from several threads at once (seen: a crash in clGetDeviceInfo
/// when two threads enumerated at the same time).
static SETUP: Mutex<()> = Mutex::new(());

/// Every device of every OpenCL platform, in platform order. No platform (no ICD loader
/// configuration, no driver) is an empty list, not an error.
pub fn devices() -> Vec<DeviceEntry> {
    let _setup = SETUP.lock().unwrap_or_else(PoisonError::into_inner);
    let platforms: Vec<Platform> = get_platforms().unwrap_or_default();
    platforms
        .iter()
        .flat_map(|platform| {
            let name = platform.name().unwrap_or_default();
            let version = platform.version().unwrap_or_default();
            platform.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default().into_iter().map(move |id| DeviceEntry {
                platform: name.clone(),
                name: Device::new(id).name().unwrap_or_default(),
                id,
                platform_version: version.clone(),
            })
        })
        .collect()
}

/// An OpenCL error of `call`, as text.
pub fn cl_error(call: &str, e: impl std::fmt::Display) -> String {
    format!("{call}: OpenCL error {e}")
}

/// Where the opened device's program came from, and what went wrong on the way.
#[derive(Debug, Default)]
pub struct ProgramOrigin {
    /// Whether the program was compiled from source (not found in, or not usable from, the cache).
    pub compiled: bool,
    /// Seconds spent compiling or loading the program.
    pub seconds: f64,
    /// Problems with the cache that were worked around (a file rebuilt, a write that failed).
    pub warnings: Vec<String>,
}

/// An opened device: context, queue and the built program.
pub struct Gpu {
    /// The device.
    pub device: Device,
    context: Context,
    queue: CommandQueue,
    program: Program,
}

impl Gpu {
    /// Opens `entry`, taking the program from `cache_dir` or compiling (and caching) it.
    pub fn open(entry: &DeviceEntry, cache_dir: &Path) -> Result<(Self, ProgramOrigin), String> {
        let _setup = SETUP.lock().unwrap_or_else(PoisonError::into_inner);
        let device = entry.device();
        let context = Context::from_device(&device).map_err(|e| cl_error("clCreateContext", e))?;
        let queue = CommandQueue::create_default_with_properties(&context, 0, 0)
            .map_err(|e| cl_error("clCreateCommandQueue", e))?;
        let start = Instant::now();
        let source = source();
        let key = entry.program_key(&source);
        let mut origin = ProgramOrigin::default();
        let cached = match cache::read(cache_dir, &key) {
            Ok(found) => found,
            Err(why) => {
                origin.warnings.push(format!(
                    "OpenCL program cache file {} is unusable: {why}; rebuilding it",
                    cache::path(cache_dir, &key).display()
                ));
                None
            }
        };
        let from_cache = cached.and_then(|binary| match build_from_binary(&context, entry.id, &binary) {
            Ok(program) => Some(program),
            Err(why) => {
                origin.warnings.push(format!(
                    "OpenCL program cache file {} did not load on {}: {why}; rebuilding it",
                    cache::path(cache_dir, &key).display(),
                    entry.name
                ));
                None
            }
        });
        let program = match from_cache {
            Some(program) => program,
            None => {
                origin.compiled = true;
                let program = build_from_source(&context, entry.id, &source)?;
                match program.get_binaries().map_err(|e| e.to_string()).and_then(|mut binaries| {
                    let binary = binaries.pop().filter(|b| !b.is_empty()).ok_or("the driver returned no binary")?;
                    cache::write(cache_dir, &key, &binary).map_err(|e| e.to_string())
                }) {
                    Ok(()) => {}
                    Err(why) => origin.warnings.push(format!(
                        "cannot cache the OpenCL program in {}: {why}; the next process compiles it again",
                        cache_dir.display()
                    )),
                }
                program
            }
        };
        origin.seconds = start.elapsed().as_secs_f64();
        Ok((Self { device, context, queue, program }, origin))
    }

    /// A new device buffer of `len` elements (at least one, as OpenCL refuses empty buffers).
    pub fn buffer<T>(&self, len: usize) -> Result<Buffer<T>, String> {
        // SAFETY: no host pointer is given, so OpenCL allocates the buffer itself.
        unsafe { Buffer::create(&self.context, CL_MEM_READ_WRITE, len.max(1), ptr::null_mut()) }
            .map_err(|e| cl_error(&format!("clCreateBuffer ({len} elements)"), e))
    }

    /// A new device buffer holding a copy of `data`.
    pub fn upload<T>(&self, data: &[T]) -> Result<Buffer<T>, String> {
        let mut buffer = self.buffer(data.len())?;
        self.write(&mut buffer, data)?;
        Ok(buffer)
    }

    /// Copies `data` into the start of `buffer`, waiting until it is done.
    pub fn write<T>(&self, buffer: &mut Buffer<T>, data: &[T]) -> Result<(), String> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: the write is blocking, so `data` outlives it; callers size `buffer` for it.
        unsafe { self.queue.enqueue_write_buffer(buffer, CL_BLOCKING, 0, data, &[]) }
            .map(drop)
            .map_err(|e| cl_error("clEnqueueWriteBuffer", e))
    }

    /// Copies the start of `buffer` into `out`, waiting until it is done.
    pub fn read<T>(&self, buffer: &Buffer<T>, out: &mut [T]) -> Result<(), String> {
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: the read is blocking, so `out` outlives it; callers size `buffer` for it.
        unsafe { self.queue.enqueue_read_buffer(buffer, CL_BLOCKING, 0, out, &[]) }
            .map(drop)
            .map_err(|e| cl_error("clEnqueueReadBuffer", e))
    }

    /// Waits for every queued command.
    pub fn finish(&self) -> Result<(), String> {
        self.queue.finish().map_err(|e| cl_error("clFinish", e))
    }

    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Result<Kernel, String> {
        Kernel::create(&self.program, name).map_err(|e| cl_error(&format!("clCreateKernel({name})"), e))
    }

    /// Enqueues `kernel` on `work_items` items in groups of `group_size` (or the driver's
    /// choice); `set_args` sets its arguments in order.
    pub fn launch(
        &self,
        kernel: &Kernel,
        work_items: usize,
        group_size: Option<usize>,
        set_args: impl FnOnce(&mut ExecuteKernel<'_>),
    ) -> Result<(), String> {
        let mut launch = ExecuteKernel::new(kernel);
        set_args(&mut launch);
        launch.set_global_work_size(work_items);
        if let Some(size) = group_size {
            launch.set_local_work_size(size);
        }
        // SAFETY: the arguments were set by `set_args` to match the kernel's signature
        // (checked by the conformance suite), and every buffer argument outlives the
        // queue's next finish, which the callers wait for before dropping them.
        unsafe { launch.enqueue_nd_range(&self.queue) }.map(drop).map_err(|e| {
            cl_error(&format!("clEnqueueNDRangeKernel({})", kernel.function_name().unwrap_or_default()), e)
        })
    }
}

fn build_log(program: &Program, device: cl_device_id) -> String {
    let log = program.get_build_log(device).unwrap_or_default();
    // The head of the log names the first error; a whole log can run to megabytes.
    let head: String = log.trim().chars().take(4000).collect();
    if head.len() < log.trim().len() {
        format!("{head}…")
    } else {
        head
    }
}

fn build_from_source(context: &Context, device: cl_device_id, source: &str) -> Result<Program, String> {
    let program = Program::create_from_source(context, source).map_err(|e| cl_error("clCreateProgramWithSource", e))?;
    build(program, device)
}

fn build_from_binary(context: &Context, device: cl_device_id, binary: &[u8]) -> Result<Program, String> {
    // SAFETY: `device` belongs to `context` (the context was created from it).
    let program = unsafe { Program::create_from_binary(context, &[device], &[binary]) }
        .map_err(|e| cl_error("clCreateProgramWithBinary", e))?;
    build(program, device)
}

/// Builds `program` for `device`; a failure carries the head of the build log.
fn build(mut program: Program, device: cl_device_id) -> Result<Program, String> {
    program
        .build(&[device], BUILD_OPTIONS)
        .map_err(|e| format!("{}; build log:\n{}", cl_error("clBuildProgram", e), build_log(&program, device)))?;
    Ok(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_lines(source: &str) -> Vec<&str> {
        let mut lines: Vec<&str> = source.lines().collect();
        lines.sort_unstable();
        lines
    }

    #[test]
    fn the_source_is_the_same_text_every_time_and_the_builder_s_program() {
        // Each builder has new HashSets, so its order can differ between calls as between
        // processes; the source must not.
        let sources: Vec<String> = (0..8).map(|_| source()).collect();
        assert!(sources.windows(2).all(|w| w[0] == w[1]));
        let builder = SourceBuilder::new()
            .add_fft::<Scalar>()
            .add_multiexp::<G1Affine, Fp>()
            .add_multiexp::<G2Affine, Fp2>()
            .append_source(EXTRA_SOURCE.replace("FIELD", &Scalar::name()))
            .build_64_bit_limbs();
        assert_eq!(sorted_lines(&sources[0]), sorted_lines(&builder), "the parts are the builder's, reordered");
        assert_eq!(sources[0].len(), builder.len());
    }
}
