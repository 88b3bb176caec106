//! Bellhop's CUDA backend, in the supraseal/sppark style.
//!
//! - MSM on G1 and G2: sppark's Pippenger (`msm_t`), scalars in Montgomery form as they
//!   arrive; bases the host promised to keep (`keep_bases`, ABI 1.1: the parameters) are
//!   uploaded once and stay resident on the GPU, so a proof uploads only its scalars.
//! - NTTs: sppark's NTT (the same roots as bellperson, coset generator 7).
//! - `compute_h`: a, b and c are uploaded once, each on its own stream; iNTT, coset NTT,
//!   `(a·b - c) / Z` and the coset iNTT run on the GPU; only h comes back.
//! - `proof_msms` (ABI 1.4): h and the five MSMs of a proof with the data kept on the GPU.
//!   a, b and c go up unpadded and h stays there for its MSM. Meanwhile the variables go up
//!   on a stream of their own, and the A and B scalars are gathered there from the
//!   densities. Each part is timed with GPU events.
//!
//! Two variants come from this crate as separate plugins: `cuda` (transfers straight from
//! pageable memory) and `cuda-pinned` (through page-locked staging buffers), so that
//! `bellhop ab` can compare them in one process. Option (`[backend.options]`):
//! - `register_host_memory = true` page-locks a proof's a, b, c and aux in place for its
//!   `proof_msms` call (cudaHostRegister), so that they upload asynchronously at the bus's
//!   speed, and bases that stream (below) for as long as they are kept. The four are locked
//!   at once on threads of their own, each going up as soon as it is locked, and unlocked
//!   as soon as it is up, while the MSMs run; what the call still waits for is timed as
//!   `page_locks`. Host memory the host keeps for its proofs (`keep_host_memory`, ABI 1.6)
//!   is locked once, when kept, and unlocked when released: its proofs lock nothing.
//!   `lock_each_proof = true` declines to keep it, so that every proof locks its own (the
//!   cost of locking, measured against keeping).
//! - `device_memory = "20GiB"` bounds the GPU memory the process takes on the card: the
//!   CUDA context (what is in use when the backend opens, at most 1 GiB), the kept bases
//!   and a call's buffers (default: the card's free memory when opened, for the last two). Bases are kept on the GPU while
//!   they and a proof's buffers fit it; beyond it they stay in host memory and each MSM
//!   streams them through the GPU in chunks sized to what is left (`proof_msms` then holds
//!   only what each MSM reads, and reports the MSMs' time as `streamed`), so a 32 GiB
//!   PoRep proves on a 16-24 GiB card. Too small for even that: an out-of-memory error
//!   naming what needed how much.
//! - `stream_chunk_points = N`: the bases always stream, at most N in a chunk (for tuning
//!   and tests).

mod ffi;

use std::{marker::PhantomData, num::NonZeroUsize, ptr::NonNull, time::Duration};

pub use bellhop_cuda_devices::{check_device, cuda_result, gpu_memory, gpus};
use bellhop_plugin_sdk::{
    backend::{Backend, BackendPlugin, NttDirection, ProofMsms, ProvingBases},
    options,
    selection::Selection,
    strategy::Assignment,
    types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective},
    Capabilities, Description, DeviceMemory, ErrorKind, OpenRequest, PhaseTiming, PluginError,
};

/// A build of the backend: its plugin name and how it moves data across PCIe.
pub trait Variant: Send + Sync + 'static {
    /// The plugin's name.
    const NAME: &'static str;
    /// Whether host buffers go through page-locked staging.
    const PINNED: bool;
}

/// Transfers straight from the caller's (pageable) memory.
pub enum Pageable {}

/// Transfers through page-locked staging buffers.
pub enum Pinned {}

impl Variant for Pageable {
    const NAME: &'static str = "cuda";
    const PINNED: bool = false;
}

impl Variant for Pinned {
    const NAME: &'static str = "cuda-pinned";
    const PINNED: bool = true;
}

/// The `cuda` plugin.
pub type Cuda = CudaBackend<Pageable>;
/// The `cuda-pinned` plugin.
pub type CudaPinned = CudaBackend<Pinned>;

/// `[backend.options]` of the CUDA backends.
#[derive(serde::Deserialize, Debug, Default, Clone, Copy)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Page-lock each proof's a, b, c and aux in place for its `proof_msms` call, and the
    /// bases that stream while they are kept.
    pub register_host_memory: bool,
    /// With `register_host_memory`, lock and unlock every proof's a, b, c and aux for its
    /// call even where the host would keep them for later proofs (`keep_host_memory`
    /// declined): the cost of page-locking, measured against keeping.
    pub lock_each_proof: bool,
    /// The most GPU memory this process takes on the card (`"20GiB"`): the CUDA context
    /// (the memory in use when the backend opens, at most 1 GiB), kept bases and a call's
    /// buffers; `None`: the card's free memory when opened, for the bases and buffers.
    #[serde(deserialize_with = "options::optional_size")]
    pub device_memory: Option<u64>,
    /// Stream the bases always, at most this many in one MSM chunk; `None`: only those the
    /// budget cannot keep, in chunks as large as it allows.
    pub stream_chunk_points: Option<NonZeroUsize>,
}

/// The most of the card's memory in use when the backend opens that an explicit
/// `device_memory` counts as this process's CUDA context.
const CONTEXT_AT_MOST: u64 = 1 << 30;

/// An opened GPU.
pub struct CudaBackend<V: Variant> {
    ctx: NonNull<ffi::Context>,
    device: u32,
    lock_each_proof: bool,
    variant: PhantomData<V>,
}

// SAFETY: the C++ context serializes every call on it with its own mutex, and owns no
// thread-affine state (sppark selects the device on each call).
unsafe impl<V: Variant> Send for CudaBackend<V> {}
// SAFETY: as for Send: all access through `&self` goes through the context's mutex.
unsafe impl<V: Variant> Sync for CudaBackend<V> {}

impl<V: Variant> Drop for CudaBackend<V> {
    fn drop(&mut self) {
        // SAFETY: `ctx` came from `bellhop_cuda_open` and is closed exactly once, here.
        unsafe { ffi::bellhop_cuda_close(self.ctx.as_ptr()) }
    }
}

impl<V: Variant> CudaBackend<V> {
    /// Opens GPU `device` with `options`.
    pub fn new(device: u32, options: Options) -> Result<Self, PluginError> {
        check_device(V::NAME, device)?;
        // The CUDA context exists once the memory is read, so what is in use now counts
        // against an explicit budget (at most CONTEXT_AT_MOST: more is other processes').
        let memory = gpu_memory(device)?;
        let budget = match options.device_memory {
            Some(bytes) => bytes.saturating_sub((memory.total_bytes - memory.free_bytes).min(CONTEXT_AT_MOST)),
            None => memory.free_bytes,
        };
        let budget = usize::try_from(budget).unwrap_or(usize::MAX);
        let chunk_cap = options.stream_chunk_points.map_or(0, NonZeroUsize::get);
        let register = options.register_host_memory;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: `ctx` is a valid out-pointer; the device index was checked above.
        let error = unsafe { ffi::bellhop_cuda_open(device as i32, V::PINNED, register, budget, chunk_cap, &mut ctx) };
        cuda_result("open", error)?;
        let ctx = NonNull::new(ctx)
            .ok_or_else(|| PluginError::new(ErrorKind::INTERNAL, "open returned no context and no error"))?;
        Ok(Self { ctx, device, lock_each_proof: options.lock_each_proof, variant: PhantomData })
    }
}

impl<V: Variant> Backend for CudaBackend<V> {
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
        let n = bases.len().min(scalars.len());
        let mut out = G1Projective::default();
        // SAFETY: both slices hold at least `n` elements (equal lengths behind the seam) in
        // the layouts sppark expects (blst affine points, Montgomery scalars); `out` is a
        // writable Jacobian point.
        let error =
            unsafe { ffi::bellhop_cuda_msm_g1(self.ctx.as_ptr(), &mut out, bases.as_ptr(), n, scalars.as_ptr()) };
        cuda_result("msm_g1", error).map(|()| out)
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
        let n = bases.len().min(scalars.len());
        let mut out = G2Projective::default();
        // SAFETY: as in msm_g1, for G2.
        let error =
            unsafe { ffi::bellhop_cuda_msm_g2(self.ctx.as_ptr(), &mut out, bases.as_ptr(), n, scalars.as_ptr()) };
        cuda_result("msm_g2", error).map(|()| out)
    }

    fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
        // Behind the seam the length is a power of two; `ilog2` never rounds it up.
        let lg_n = values.len().ilog2();
        let (inverse, coset) = match direction {
            NttDirection::Forward => (0, 0),
            NttDirection::Inverse => (1, 0),
            NttDirection::CosetForward => (0, 1),
            NttDirection::CosetInverse => (1, 1),
        };
        // SAFETY: `values` holds at least 2^lg_n writable scalars.
        let error = unsafe { ffi::bellhop_cuda_ntt(self.ctx.as_ptr(), values.as_mut_ptr(), lg_n, inverse, coset) };
        cuda_result("ntt", error)
    }

    fn compute_h(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr]) -> Result<Vec<PhaseTiming>, PluginError> {
        // One power-of-two length behind the seam; the shortest bounds what is touched.
        let lg_n = a.len().min(b.len()).min(c.len()).ilog2();
        let mut t = ffi::HTimings::default();
        // SAFETY: a, b and c each hold at least 2^lg_n scalars; only `a` is written.
        let error = unsafe {
            ffi::bellhop_cuda_compute_h(self.ctx.as_ptr(), a.as_mut_ptr(), b.as_ptr(), c.as_ptr(), lg_n, &mut t)
        };
        cuda_result("compute_h", error)?;
        let ms = |v: f32| Duration::from_secs_f64(f64::from(v) / 1e3);
        Ok(vec![
            PhaseTiming::new("upload_ntt", ms(t.upload_ntt_ms)),
            PhaseTiming::new("pointwise", ms(t.pointwise_ms)),
            PhaseTiming::new("intt", ms(t.intt_ms)),
            PhaseTiming::new("download", ms(t.download_ms)),
        ])
    }

    fn proof_msms(&self, bases: ProvingBases<'_>, assignment: &Assignment) -> Result<ProofMsms, PluginError> {
        let (select_a, select_b) = (Selection::a_query(assignment), Selection::b_query(assignment));
        let ffi_selection =
            |s: &Selection| ffi::Selection { words: s.words.as_ptr(), offsets: s.offsets.as_ptr(), count: s.count };
        let input = ffi::ProofInput {
            a: assignment.a.as_ptr(),
            b: assignment.b.as_ptr(),
            c: assignment.c.as_ptr(),
            constraints: assignment.a.len(),
            lg_n: assignment.a.len().next_power_of_two().ilog2(),
            inputs: assignment.inputs.as_ptr(),
            ninputs: assignment.inputs.len(),
            aux: assignment.aux.as_ptr(),
            naux: assignment.aux.len(),
            select_a: ffi_selection(&select_a),
            select_b: ffi_selection(&select_b),
            h_bases: bases.h.as_ptr(),
            l_bases: bases.l.as_ptr(),
            a_bases: bases.a.as_ptr(),
            b_g1_bases: bases.b_g1.as_ptr(),
            b_g2_bases: bases.b_g2.as_ptr(),
        };
        let mut out = ffi::ProofOutput::default();
        // SAFETY: behind the seam the assignment is well formed (a, b and c of one length,
        // each density covering its variables) and every base list holds at least as many
        // points as its MSM takes; the selections cover inputs and aux (their words, and
        // an offset per word) and live to the end of the call; `out` is writable.
        let error = unsafe { ffi::bellhop_cuda_proof_msms(self.ctx.as_ptr(), &input, &mut out) };
        cuda_result("proof_msms", error)?;
        let ms = |ms: f32| Duration::from_secs_f64(f64::from(ms) / 1e3);
        let mut timings =
            ffi::PROOF_PARTS.iter().zip(out.ms).map(|(name, t)| PhaseTiming::new(name, ms(t))).collect::<Vec<_>>();
        if out.streamed {
            timings.push(PhaseTiming::new("streamed", ms(out.ms[ffi::MSM_PARTS].iter().sum())));
        }
        Ok(ProofMsms { h: out.h, l: out.l, a: out.a, b_g1: out.b_g1, b_g2: out.b_g2, timings: timings.into() })
    }

    fn keep_bases(&self, g1: &[&[G1Affine]], g2: &[&[G2Affine]]) -> Result<(), PluginError> {
        for bases in g1 {
            // SAFETY: a live slice of blst-layout affine points (sppark's affine_t) that
            // the host promised to leave alive and unchanged until release_bases or drop.
            let error = unsafe { ffi::bellhop_cuda_keep_g1(self.ctx.as_ptr(), bases.as_ptr(), bases.len()) };
            cuda_result("keep_bases", error)?;
        }
        for bases in g2 {
            // SAFETY: as for G1, with G2 affine points.
            let error = unsafe { ffi::bellhop_cuda_keep_g2(self.ctx.as_ptr(), bases.as_ptr(), bases.len()) };
            cuda_result("keep_bases", error)?;
        }
        Ok(())
    }

    fn release_bases(&self) -> Result<(), PluginError> {
        // SAFETY: `ctx` is open; the call takes the context's lock.
        unsafe { ffi::bellhop_cuda_release(self.ctx.as_ptr()) };
        Ok(())
    }

    fn memory(&self) -> Result<DeviceMemory, PluginError> {
        gpu_memory(self.device)
    }

    fn keep_host_memory(&self, ranges: &[&[Fr]]) -> Result<bool, PluginError> {
        if self.lock_each_proof {
            return Ok(false);
        }
        let (starts, lens): (Vec<*const Fr>, Vec<usize>) = ranges.iter().map(|r| (r.as_ptr(), r.len())).unzip();
        let mut kept = false;
        // SAFETY: `starts` and `lens` are `ranges.len()` long and describe live slices,
        // which the host promised to keep allocated until release_host_memory names them
        // (or the context is closed, which unlocks what is left); `kept` is writable.
        let error = unsafe {
            ffi::bellhop_cuda_keep_host(self.ctx.as_ptr(), starts.as_ptr(), lens.as_ptr(), starts.len(), &mut kept)
        };
        cuda_result("keep_host_memory", error).map(|()| kept)
    }

    fn release_host_memory(&self, ranges: &[&[Fr]]) -> Result<(), PluginError> {
        let starts: Vec<*const Fr> = ranges.iter().map(|r| r.as_ptr()).collect();
        // SAFETY: `starts` holds `ranges.len()` addresses, which the call only compares
        // with those it keeps; it takes the context's lock.
        unsafe { ffi::bellhop_cuda_release_host(self.ctx.as_ptr(), starts.as_ptr(), starts.len()) };
        Ok(())
    }
}

impl<V: Variant> BackendPlugin for CudaBackend<V> {
    type Options = Options;

    fn describe() -> Description {
        let transfers = if V::PINNED { "pinned staging" } else { "pageable transfers" };
        Description {
            name: V::NAME.into(),
            description: format!(
                "CUDA (sppark): MSM G1/G2, NTT, compute_h and whole proofs' MSMs on the GPU, resident bases; {transfers}"
            ),
            capabilities: Capabilities::MSM_G1
                | Capabilities::MSM_G2
                | Capabilities::NTT
                | Capabilities::COMPUTE_H
                | Capabilities::PROOF_MSMS
                | Capabilities::GPU,
            devices: gpus(),
        }
    }

    fn open(request: &OpenRequest, options: Options) -> Result<Self, PluginError> {
        Self::new(request.device, options)
    }
}
