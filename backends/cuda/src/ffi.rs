//! The C ABI of `cuda/bellhop_cuda.cu`.

use bellhop_plugin_sdk::types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use sppark::Error;

/// An opened GPU on the C++ side (`struct bellhop_cuda`).
#[repr(C)]
pub(crate) struct Context {
    _private: [u8; 0],
}

/// `struct bellhop_h_timings`: GPU milliseconds of each part of `compute_h`.
#[repr(C)]
#[derive(Default)]
pub(crate) struct HTimings {
    pub upload_ntt_ms: f32,
    pub pointwise_ms: f32,
    pub intt_ms: f32,
    pub download_ms: f32,
}

/// `struct bellhop_selection`: which of a proof's variables (inputs, then aux) an MSM
/// takes ([`crate::selection::Selection`]).
#[repr(C)]
pub(crate) struct Selection {
    pub words: *const u64,
    pub offsets: *const u64,
    pub count: usize,
}

/// `struct bellhop_proof_input`: one proof's assignment and its bases, in host memory.
#[repr(C)]
pub(crate) struct ProofInput {
    pub a: *const Fr,
    pub b: *const Fr,
    pub c: *const Fr,
    pub constraints: usize,
    pub lg_n: u32,
    pub inputs: *const Fr,
    pub ninputs: usize,
    pub aux: *const Fr,
    pub naux: usize,
    pub select_a: Selection,
    pub select_b: Selection,
    pub h_bases: *const G1Affine,
    pub l_bases: *const G1Affine,
    pub a_bases: *const G1Affine,
    pub b_g1_bases: *const G1Affine,
    pub b_g2_bases: *const G2Affine,
}

/// The parts of `bellhop_cuda_proof_msms` that `ProofOutput::ms` times, in its order.
pub(crate) const PROOF_PARTS: [&str; 11] = [
    "h.upload_ntt",
    "h.pointwise",
    "h.intt",
    "variables",
    "msm_h",
    "msm_l",
    "msm_a",
    "msm_b_g1",
    "msm_b_g2",
    "page_locks",
    "call",
];

/// The five MSMs' places in [`PROOF_PARTS`].
pub(crate) const MSM_PARTS: std::ops::Range<usize> = 4..9;

/// `struct bellhop_proof_output`: the five MSM results and the milliseconds of each part
/// (GPU time, but for `page_locks` and `call`, which are host time).
#[repr(C)]
#[derive(Default)]
pub(crate) struct ProofOutput {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
    pub ms: [f32; PROOF_PARTS.len()],
    /// Whether the bases streamed from host memory (the budget held too little to keep them).
    pub streamed: bool,
}

extern "C" {
    pub(crate) fn bellhop_cuda_open(
        device: i32,
        pinned: bool,
        register_host: bool,
        budget: usize,
        chunk_cap: usize,
        out: *mut *mut Context,
    ) -> Error;
    pub(crate) fn bellhop_cuda_close(ctx: *mut Context);
    pub(crate) fn bellhop_cuda_msm_g1(
        ctx: *mut Context,
        out: *mut G1Projective,
        points: *const G1Affine,
        npoints: usize,
        scalars: *const Fr,
    ) -> Error;
    pub(crate) fn bellhop_cuda_msm_g2(
        ctx: *mut Context,
        out: *mut G2Projective,
        points: *const G2Affine,
        npoints: usize,
        scalars: *const Fr,
    ) -> Error;
    pub(crate) fn bellhop_cuda_keep_g1(ctx: *mut Context, points: *const G1Affine, npoints: usize) -> Error;
    pub(crate) fn bellhop_cuda_keep_g2(ctx: *mut Context, points: *const G2Affine, npoints: usize) -> Error;
    pub(crate) fn bellhop_cuda_release(ctx: *mut Context);
    pub(crate) fn bellhop_cuda_keep_host(
        ctx: *mut Context,
        ranges: *const *const Fr,
        lens: *const usize,
        n: usize,
        kept: *mut bool,
    ) -> Error;
    pub(crate) fn bellhop_cuda_release_host(ctx: *mut Context, ranges: *const *const Fr, n: usize);
    pub(crate) fn bellhop_cuda_ntt(ctx: *mut Context, values: *mut Fr, lg_n: u32, inverse: i32, coset: i32) -> Error;
    pub(crate) fn bellhop_cuda_compute_h(
        ctx: *mut Context,
        a: *mut Fr,
        b: *const Fr,
        c: *const Fr,
        lg_n: u32,
        timings: *mut HTimings,
    ) -> Error;
    pub(crate) fn bellhop_cuda_proof_msms(ctx: *mut Context, input: *const ProofInput, out: *mut ProofOutput) -> Error;
}
