//! Bellhop's OpenCL backend: ec-gpu-gen's kernels run through opencl3 on any OpenCL
//! platform and vendor (PoCL on a CPU included).
//!
//! - MSM on G1 and G2: ec-gpu-gen's bucket multiexp, one work item per (window, group of
//!   bases); the windows are combined on the host. Bases the host promised to keep
//!   (`keep_bases`, ABI 1.1) are uploaded once and stay on the device.
//! - NTTs: ec-gpu-gen's radix FFT (natural order in and out) with Bellhop's kernel for the
//!   `1/n` and coset factors.
//! - `compute_h`: a, b and c are uploaded once; the transforms and `(a·b - c) / Z` run on
//!   the device; only h comes back.
//!
//! The compiled program is cached per platform, device, driver version and source (see
//! [`cache`]); a process that finds it skips the compile, which takes minutes on some drivers.
//!
//! Options (`[backend.options]`): `device_name` picks the first device whose name contains
//! it (case-insensitive) instead of `[backend] device`; `cache_dir` is the program cache
//! (default `$BELLHOP_CACHE_DIR/opencl`, else `~/.cache/bellhop/opencl`).

pub mod cache;
mod device;

use std::{
    path::{Path, PathBuf},
    sync::{Mutex, PoisonError},
    time::Instant,
};

use bellhop_plugin_sdk::{
    backend::{Backend, BackendPlugin, NttDirection},
    cast, cast_slice, cast_slice_mut,
    types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective},
    Capabilities, Description, DeviceInfo, ErrorKind, OpenRequest, PhaseTiming, PluginError,
};
use blstrs::Scalar;
use ec_gpu::GpuName;
use ff::{Field, PrimeField};
use group::{prime::PrimeCurveAffine, Group};
use opencl3::memory::Buffer;
use rayon::prelude::*;
use serde::Deserialize;

use device::Gpu;
pub use device::{devices, source, DeviceEntry, ProgramOrigin};

/// The plugin's name.
pub const NAME: &str = "opencl";

/// Work items per group of the multiexp kernel.
const MSM_GROUP_SIZE: usize = 128;
/// The largest multiexp window (2^10 buckets per work item).
const MAX_WINDOW: usize = 10;
/// Bits of an Fr exponent as the multiexp kernel reads them.
const EXPONENT_BITS: usize = 256;
/// The largest radix of one FFT pass (2^8).
const MAX_LOG2_RADIX: u32 = 8;
/// The largest work group of the FFT kernel (2^7).
const MAX_LOG2_FFT_GROUP: u32 = 7;

/// Bases kept on the device for the host's promised slice `ptr..ptr+len`.
struct Kept<A> {
    ptr: usize,
    len: usize,
    buffer: Buffer<A>,
}

impl<A> Kept<A> {
    /// The device copy of `bases` among `kept`: one kept at the same address, at least as long.
    fn find<'a>(kept: &'a [Self], bases: &[A]) -> Option<&'a Buffer<A>> {
        kept.iter().find(|k| k.ptr == bases.as_ptr() as usize && k.len >= bases.len()).map(|k| &k.buffer)
    }
}

/// Device state; every call takes the lock, as OpenCL kernels are not shareable between threads.
struct State {
    gpu: Gpu,
    kept_g1: Vec<Kept<blstrs::G1Affine>>,
    kept_g2: Vec<Kept<blstrs::G2Affine>>,
}

/// An opened OpenCL device.
pub struct OpenCl {
    entry: DeviceEntry,
    origin: ProgramOrigin,
    work_units: usize,
    max_alloc: u64,
    /// The device's global memory, which kept bases share with every MSM's buffers.
    memory: u64,
    state: Mutex<State>,
}

fn described(entry: &DeviceEntry) -> String {
    format!("{} ({})", entry.name.trim(), entry.platform.trim())
}

/// The devices as `describe` lists them.
fn device_infos(entries: &[DeviceEntry]) -> Vec<DeviceInfo> {
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let device = entry.device();
            DeviceInfo {
                index: index as u32,
                name: described(entry).as_str().into(),
                memory_bytes: device.global_mem_size().unwrap_or(0),
                compute_units: device.max_compute_units().unwrap_or(0),
            }
        })
        .collect()
}

fn no_device(message: String) -> PluginError {
    PluginError::new(ErrorKind::NO_DEVICE, message)
}

/// Picks the device: by `name` (case-insensitive substring) if given, else by `index`.
fn choose(entries: Vec<DeviceEntry>, index: u32, name: Option<&str>) -> Result<DeviceEntry, PluginError> {
    if entries.is_empty() {
        return Err(no_device(
            "the opencl backend found no OpenCL device: no platform is registered with the ICD loader. \
             Install a driver (scripts/opencl-runtime.sh installs PoCL, which runs on the CPU; for NVIDIA, \
             list libnvidia-opencl.so.1 in an .icd file under OCL_ICD_VENDORS), or set [backend] fallback = \"cpu\""
                .into(),
        ));
    }
    let list = entries.iter().enumerate().map(|(i, e)| format!("{i}: {}", described(e))).collect::<Vec<_>>().join("; ");
    match name {
        Some(name) => {
            let wanted = name.to_lowercase();
            entries.into_iter().find(|e| described(e).to_lowercase().contains(&wanted)).ok_or_else(|| {
                no_device(format!(
                    "no OpenCL device's name contains \"{name}\" ([backend.options] device_name); the devices are {list}"
                ))
            })
        }
        None => {
            let count = entries.len();
            entries.into_iter().nth(index as usize).ok_or_else(|| {
                no_device(format!(
                    "OpenCL device {index} does not exist: this machine has {count} ({list}); set [backend] device \
                     or [backend.options] device_name"
                ))
            })
        }
    }
}

impl OpenCl {
    /// Opens `entry`, with the compiled program cached in `cache_dir`.
    pub fn new(entry: DeviceEntry, cache_dir: &Path) -> Result<Self, PluginError> {
        let (gpu, origin) = Gpu::open(&entry, cache_dir)
            .map_err(|e| PluginError::device(format!("cannot open OpenCL device {}: {e}", described(&entry))))?;
        let compute_units =
            gpu.device.max_compute_units().map_err(|e| PluginError::device(device::cl_error("clGetDeviceInfo", e)))?;
        let max_alloc =
            gpu.device.max_mem_alloc_size().map_err(|e| PluginError::device(device::cl_error("clGetDeviceInfo", e)))?;
        let memory =
            gpu.device.global_mem_size().map_err(|e| PluginError::device(device::cl_error("clGetDeviceInfo", e)))?;
        Ok(Self {
            entry,
            origin,
            work_units: MSM_GROUP_SIZE * compute_units.max(1) as usize,
            max_alloc,
            memory,
            state: Mutex::new(State { gpu, kept_g1: Vec::new(), kept_g2: Vec::new() }),
        })
    }

    /// Where the program came from (cache or compiler) and the cache's warnings.
    pub fn program_origin(&self) -> &ProgramOrigin {
        &self.origin
    }

    /// The device, as `describe` names it.
    pub fn device_name(&self) -> String {
        described(&self.entry)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses a buffer of `count` elements of `T` that the device cannot allocate in one piece.
    fn check_alloc<T>(&self, what: &str, count: usize) -> Result<(), PluginError> {
        let bytes = (count as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        if bytes > self.max_alloc {
            return Err(PluginError::device(format!(
                "{what} needs one buffer of {bytes} bytes; {} allocates at most {} bytes at once",
                described(&self.entry),
                self.max_alloc
            )));
        }
        Ok(())
    }

    /// `sum scalars[i] * bases[i]`, with the bases taken from the kept copy if there is one.
    fn msm<A>(
        &self,
        bases: &[A],
        scalars: &[Scalar],
        kept: impl Fn(&State) -> Option<&Buffer<A>>,
    ) -> Result<A::Curve, PluginError>
    where
        A: PrimeCurveAffine<Scalar = Scalar> + GpuName + Send + Sync,
        A::Curve: Send,
    {
        let n = bases.len();
        if n == 0 {
            return Ok(A::Curve::identity());
        }
        // The kernel has no case for a base at infinity (blst's all-zero affine point), so
        // such terms get a zero exponent, which the kernel skips.
        let exponents: Vec<[u8; 32]> = bases
            .par_iter()
            .zip(scalars.par_iter())
            .map(|(base, scalar)| if bool::from(base.is_identity()) { [0; 32] } else { scalar.to_repr() })
            .collect();
        let window = (((n.div_ceil(self.work_units)) as f64).log2() as usize + 2).min(MAX_WINDOW);
        let windows = EXPONENT_BITS.div_ceil(window);
        let groups = (self.work_units / windows).max(1);
        let threads = windows * groups;
        let buckets = threads << window;
        self.check_alloc::<A>("the MSM's bases", n)?;
        self.check_alloc::<A::Curve>("the MSM's buckets", buckets)?;

        let state = self.lock();
        let gpu = &state.gpu;
        let temporary;
        let bases_buffer = match kept(&state) {
            Some(buffer) => buffer,
            None => {
                temporary = gpu.upload(bases).map_err(PluginError::device)?;
                &temporary
            }
        };
        let exponents = gpu.upload(&exponents).map_err(PluginError::device)?;
        let bucket_buffer = gpu.buffer::<A::Curve>(buckets).map_err(PluginError::device)?;
        let results = gpu.buffer::<A::Curve>(threads).map_err(PluginError::device)?;
        let kernel = gpu.kernel(&format!("{}_multiexp", A::name())).map_err(PluginError::device)?;
        let (n32, groups32, windows32, window32) = (n as u32, groups as u32, windows as u32, window as u32);
        gpu.launch(&kernel, threads.div_ceil(MSM_GROUP_SIZE) * MSM_GROUP_SIZE, Some(MSM_GROUP_SIZE), |k| {
            // SAFETY: the argument types match the multiexp kernel's signature (bases,
            // buckets, results, exponents, n, num_groups, num_windows, window_size).
            unsafe {
                k.set_arg(bases_buffer)
                    .set_arg(&bucket_buffer)
                    .set_arg(&results)
                    .set_arg(&exponents)
                    .set_arg(&n32)
                    .set_arg(&groups32)
                    .set_arg(&windows32)
                    .set_arg(&window32);
            }
        })
        .map_err(PluginError::device)?;
        let mut partial = vec![A::Curve::identity(); threads];
        gpu.read(&results, &mut partial).map_err(PluginError::device)?;
        drop(state);

        // Window 0 holds the most significant bits.
        let mut acc = A::Curve::identity();
        let mut bits = 0;
        for w in 0..windows {
            let width = window.min(EXPONENT_BITS - bits);
            for _ in 0..width {
                acc = acc.double();
            }
            for g in 0..groups {
                acc += partial[g * windows + w];
            }
            bits += width;
        }
        Ok(acc)
    }
}

/// The primitive `2^log_n`-th root of unity, as bellperson's `EvaluationDomain` takes it.
fn omega(log_n: u32) -> Scalar {
    Scalar::ROOT_OF_UNITY.pow_vartime([1u64 << (Scalar::S - log_n)])
}

fn inverse(x: Scalar) -> Scalar {
    x.invert().expect("roots of unity, n and g are non-zero")
}

/// Transforms on device buffers of length `2^log_n`.
struct Transforms<'a> {
    gpu: &'a Gpu,
    log_n: u32,
}

impl Transforms<'_> {
    fn n(&self) -> usize {
        1 << self.log_n
    }

    /// `data <- DFT_omega(data)`; `tmp` is scratch of the same length (the two may trade places).
    fn fft(&self, data: &mut Buffer<Scalar>, tmp: &mut Buffer<Scalar>, omega: Scalar) -> Result<(), String> {
        if self.log_n == 0 {
            return Ok(());
        }
        let (n, log_n) = (self.n(), self.log_n);
        let max_deg = log_n.min(MAX_LOG2_RADIX);
        let twiddle = omega.pow_vartime([(n >> max_deg) as u64]);
        let pq: Vec<Scalar> =
            std::iter::successors(Some(Scalar::ONE), |p| Some(p * twiddle)).take((1 << max_deg) >> 1).collect();
        let omegas: Vec<Scalar> = std::iter::successors(Some(omega), |w| Some(w.square())).take(32).collect();
        let pq = self.gpu.upload(&pq)?;
        let omegas = self.gpu.upload(&omegas)?;
        let kernel = self.gpu.kernel(&format!("{}_radix_fft", Scalar::name()))?;
        let (mut log_p, n32) = (0u32, n as u32);
        while log_p < log_n {
            let deg = max_deg.min(log_n - log_p);
            let group = 1usize << (deg - 1).min(MAX_LOG2_FFT_GROUP);
            let local_bytes = std::mem::size_of::<Scalar>() << deg;
            self.gpu.launch(&kernel, (n >> deg) * group, Some(group), |k| {
                // SAFETY: the arguments match the radix_fft kernel's signature (source,
                // destination, pq, omegas, local scratch, n, lgp, deg, max_deg).
                unsafe {
                    k.set_arg(&*data)
                        .set_arg(&*tmp)
                        .set_arg(&pq)
                        .set_arg(&omegas)
                        .set_arg_local_buffer(local_bytes)
                        .set_arg(&n32)
                        .set_arg(&log_p)
                        .set_arg(&deg)
                        .set_arg(&max_deg);
                }
            })?;
            std::mem::swap(data, tmp);
            log_p += deg;
        }
        // The launches above read pq and omegas; finish before they are dropped.
        self.gpu.finish()
    }

    /// `data[i] <- data[i] * scale * g^i`.
    fn scale_powers(&self, data: &Buffer<Scalar>, scale: Scalar, g: Scalar) -> Result<(), String> {
        let kernel = self.gpu.kernel(&format!("{}_bellhop_scale_powers", Scalar::name()))?;
        let n32 = self.n() as u32;
        self.gpu.launch(&kernel, self.n(), None, |k| {
            // SAFETY: the arguments match bellhop_scale_powers(values, n, scale, g).
            unsafe {
                k.set_arg(data).set_arg(&n32).set_arg(&scale).set_arg(&g);
            }
        })
    }

    /// Applies `direction` to `data`.
    fn ntt(&self, data: &mut Buffer<Scalar>, tmp: &mut Buffer<Scalar>, direction: NttDirection) -> Result<(), String> {
        let w = omega(self.log_n);
        let n_inv = inverse(Scalar::from(self.n() as u64));
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        match direction {
            NttDirection::Forward => self.fft(data, tmp, w),
            NttDirection::Inverse => {
                self.fft(data, tmp, inverse(w))?;
                self.scale_powers(data, n_inv, Scalar::ONE)
            }
            NttDirection::CosetForward => {
                self.scale_powers(data, Scalar::ONE, g)?;
                self.fft(data, tmp, w)
            }
            NttDirection::CosetInverse => {
                self.fft(data, tmp, inverse(w))?;
                self.scale_powers(data, n_inv, inverse(g))
            }
        }
    }

    /// Inverse NTT, then forward coset NTT, with the `1/n` and coset factors in one pass.
    fn to_coset(&self, data: &mut Buffer<Scalar>, tmp: &mut Buffer<Scalar>) -> Result<(), String> {
        let w = omega(self.log_n);
        self.fft(data, tmp, inverse(w))?;
        self.scale_powers(data, inverse(Scalar::from(self.n() as u64)), Scalar::MULTIPLICATIVE_GENERATOR)?;
        self.fft(data, tmp, w)
    }
}

impl Backend for OpenCl {
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
        let bases: &[blstrs::G1Affine] = cast_slice(bases);
        let out = self.msm(bases, cast_slice(scalars), |state| Kept::find(&state.kept_g1, bases))?;
        Ok(cast(out))
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
        let bases: &[blstrs::G2Affine] = cast_slice(bases);
        let out = self.msm(bases, cast_slice(scalars), |state| Kept::find(&state.kept_g2, bases))?;
        Ok(cast(out))
    }

    fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
        let log_n = values.len().ilog2();
        if log_n == 0 {
            // Every direction maps a single value to itself.
            return Ok(());
        }
        self.check_alloc::<Scalar>("the NTT", values.len())?;
        let values: &mut [Scalar] = cast_slice_mut(values);
        let state = self.lock();
        let gpu = &state.gpu;
        let mut run = || -> Result<(), String> {
            let mut data = gpu.upload(values)?;
            let mut tmp = gpu.buffer::<Scalar>(values.len())?;
            Transforms { gpu, log_n }.ntt(&mut data, &mut tmp, direction)?;
            gpu.read(&data, values)
        };
        run().map_err(|e| PluginError::device(format!("ntt: {e}")))
    }

    fn compute_h(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr]) -> Result<Vec<PhaseTiming>, PluginError> {
        // One power-of-two length behind the seam; the shortest bounds what the kernels read.
        let log_n = a.len().min(b.len()).min(c.len()).ilog2();
        self.check_alloc::<Scalar>("compute_h", a.len())?;
        let (a, b, c): (&mut [Scalar], &[Scalar], &[Scalar]) = (cast_slice_mut(a), cast_slice(b), cast_slice(c));
        let state = self.lock();
        let gpu = &state.gpu;
        let mut timings = Vec::new();
        let mut clock = Instant::now();
        let mut lap = |name: &'static str| {
            timings.push(PhaseTiming::new(name, clock.elapsed()));
            clock = Instant::now();
        };
        let mut run = || -> Result<(), String> {
            let t = Transforms { gpu, log_n };
            let mut buffers = [gpu.upload(a)?, gpu.upload(b)?, gpu.upload(c)?];
            let mut tmp = gpu.buffer::<Scalar>(a.len())?;
            lap("upload");
            for buffer in &mut buffers {
                t.to_coset(buffer, &mut tmp)?;
            }
            gpu.finish()?;
            lap("ntt");
            let z = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([t.n() as u64]) - Scalar::ONE;
            let z_inv = inverse(z);
            let kernel = gpu.kernel(&format!("{}_bellhop_h_pointwise", Scalar::name()))?;
            let n32 = t.n() as u32;
            let [ha, hb, hc] = &buffers;
            gpu.launch(&kernel, t.n(), None, |k| {
                // SAFETY: the arguments match bellhop_h_pointwise(a, b, c, n, z_inv).
                unsafe {
                    k.set_arg(ha).set_arg(hb).set_arg(hc).set_arg(&n32).set_arg(&z_inv);
                }
            })?;
            gpu.finish()?;
            lap("pointwise");
            let [h, _, _] = &mut buffers;
            t.ntt(h, &mut tmp, NttDirection::CosetInverse)?;
            gpu.finish()?;
            lap("intt");
            gpu.read(h, a)?;
            lap("download");
            Ok(())
        };
        run().map_err(|e| PluginError::device(format!("compute_h: {e}")))?;
        Ok(timings)
    }

    /// Keeps the bases where they fit beside what is kept already in three quarters of the
    /// device's memory (the rest is the MSMs' room); a set that does not is not kept, and
    /// its MSMs upload it.
    fn keep_bases(&self, g1: &[&[G1Affine]], g2: &[&[G2Affine]]) -> Result<(), PluginError> {
        let mut state = self.lock();
        let (g1_size, g2_size) = (std::mem::size_of::<G1Affine>(), std::mem::size_of::<G2Affine>());
        let kept = state.kept_g1.iter().map(|k| k.len * g1_size).sum::<usize>()
            + state.kept_g2.iter().map(|k| k.len * g2_size).sum::<usize>();
        let more =
            g1.iter().map(|b| size_of_val(*b)).sum::<usize>() + g2.iter().map(|b| size_of_val(*b)).sum::<usize>();
        if (kept + more) as u64 > self.memory / 4 * 3 {
            return Ok(());
        }
        for bases in g1 {
            let bases: &[blstrs::G1Affine] = cast_slice(bases);
            self.check_alloc::<blstrs::G1Affine>("keeping G1 bases", bases.len())?;
            let buffer = state.gpu.upload(bases).map_err(PluginError::device)?;
            state.kept_g1.push(Kept { ptr: bases.as_ptr() as usize, len: bases.len(), buffer });
        }
        for bases in g2 {
            let bases: &[blstrs::G2Affine] = cast_slice(bases);
            self.check_alloc::<blstrs::G2Affine>("keeping G2 bases", bases.len())?;
            let buffer = state.gpu.upload(bases).map_err(PluginError::device)?;
            state.kept_g2.push(Kept { ptr: bases.as_ptr() as usize, len: bases.len(), buffer });
        }
        Ok(())
    }

    fn release_bases(&self) -> Result<(), PluginError> {
        let mut state = self.lock();
        state.kept_g1.clear();
        state.kept_g2.clear();
        Ok(())
    }
}

/// `[backend.options]` of the opencl backend.
#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Picks the device whose name (or platform) contains this, instead of `[backend] device`.
    device_name: Option<String>,
    /// Where compiled programs are cached (default: the user's cache directory).
    cache_dir: Option<PathBuf>,
}

impl Options {
    /// The program cache directory, made private to this user.
    fn cache_dir(&self) -> Result<PathBuf, PluginError> {
        match &self.cache_dir {
            None => bellhop_plugin_sdk::dirs::cache_dir(NAME),
            Some(dir) => bellhop_plugin_sdk::dirs::private_dir(dir).map(|()| dir.clone()),
        }
        .map_err(|e| PluginError::new(ErrorKind::OPTIONS, format!("the program cache: {e}")))
    }
}

impl BackendPlugin for OpenCl {
    type Options = Options;

    fn describe() -> Description {
        Description {
            name: NAME.into(),
            description: "OpenCL (ec-gpu-gen kernels, any platform): MSM G1/G2, NTT, compute_h on the device, \
                          resident bases, compiled-program cache"
                .into(),
            capabilities: Capabilities::MSM_G1
                | Capabilities::MSM_G2
                | Capabilities::NTT
                | Capabilities::COMPUTE_H
                | Capabilities::GPU,
            devices: device_infos(&devices()),
        }
    }

    fn open(request: &OpenRequest, options: Options) -> Result<Self, PluginError> {
        let cache_dir = options.cache_dir()?;
        let entry = choose(devices(), request.device, options.device_name.as_deref())?;
        let backend = Self::new(entry, &cache_dir)?;
        let origin = backend.program_origin();
        for warning in &origin.warnings {
            eprintln!("warning: {warning}");
        }
        if origin.compiled {
            eprintln!(
                "note: compiled the OpenCL program for {} in {:.1} s (cached in {})",
                backend.device_name(),
                origin.seconds,
                cache_dir.display()
            );
        }
        Ok(backend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked() {
        let parse = |text| bellhop_plugin_sdk::options::parse::<Options>("[backend.options]", text);
        let o = parse("device_name = \"H200\"\ncache_dir = \"/x\"").unwrap();
        assert_eq!(o.device_name.as_deref(), Some("H200"));
        assert_eq!(o.cache_dir, Some(PathBuf::from("/x")));
        let e = parse("device = 1").err().unwrap();
        assert_eq!(e.kind, ErrorKind::OPTIONS);
        assert!(e.message.contains("unknown field `device`, expected `device_name` or `cache_dir`"), "{e}");
        let e = parse("device_name = 3").err().unwrap();
        assert!(e.message.contains("invalid type: integer `3`, expected a string"), "{e}");
    }

    #[test]
    fn no_device_names_the_fix() {
        let e = choose(Vec::new(), 0, None).err().unwrap();
        assert_eq!(e.kind, ErrorKind::NO_DEVICE);
        assert!(e.message.contains("opencl-runtime.sh") && e.message.contains("fallback"), "{e}");
    }

    #[test]
    fn the_source_has_every_kernel() {
        let source = source();
        for kernel in ["_radix_fft", "_bellhop_scale_powers", "_bellhop_h_pointwise"] {
            assert!(source.contains(&format!("{}{kernel}", Scalar::name())), "{kernel}");
        }
        for point in [blstrs::G1Affine::name(), blstrs::G2Affine::name()] {
            assert!(source.contains(&format!("{point}_multiexp")), "{point}");
        }
    }
}
