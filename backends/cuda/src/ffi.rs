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

extern "C" {
    pub(crate) fn bellhop_cuda_open(device: i32, pinned: bool, out: *mut *mut Context) -> Error;
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
    pub(crate) fn bellhop_cuda_ntt(ctx: *mut Context, values: *mut Fr, lg_n: u32, inverse: i32, coset: i32) -> Error;
    pub(crate) fn bellhop_cuda_compute_h(
        ctx: *mut Context,
        a: *mut Fr,
        b: *const Fr,
        c: *const Fr,
        lg_n: u32,
        timings: *mut HTimings,
    ) -> Error;
}
