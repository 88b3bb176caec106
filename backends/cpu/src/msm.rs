//! Multi-scalar multiplication: blst's Pippenger, split into chunks across the pool.

use bellhop_plugin_sdk::{cast_slice, types::Fr};
use blst::{
    blst_fr, blst_p1, blst_p1_add_or_double, blst_p1_affine, blst_p1s_mult_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof, blst_p2, blst_p2_add_or_double, blst_p2_affine, blst_p2s_mult_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof, blst_scalar, blst_scalar_from_fr,
};
use rayon::prelude::*;

/// Below this many points per chunk, splitting costs more than it saves.
const MIN_CHUNK: usize = 1 << 10;

/// The bit length of Fr's modulus: scalars are canonical and below it.
const SCALAR_BITS: usize = 255;

/// A blst curve group, as far as Pippenger needs it.
pub(crate) trait PippengerCurve {
    type Affine: Sync;
    type Point: Default + Copy + Send;

    /// Single-threaded Pippenger over `points` and canonical `scalars` of equal length > 0.
    fn pippenger(points: &[Self::Affine], scalars: &[blst_scalar]) -> Self::Point;

    /// `acc += other`.
    fn add(acc: &mut Self::Point, other: &Self::Point);
}

macro_rules! pippenger_curve {
    ($name:ident, $affine:ty, $point:ty, $mult:ident, $scratch:ident, $add:ident) => {
        pub(crate) struct $name;

        impl PippengerCurve for $name {
            type Affine = $affine;
            type Point = $point;

            fn pippenger(points: &[$affine], scalars: &[blst_scalar]) -> $point {
                debug_assert!(!points.is_empty() && points.len() == scalars.len());
                let mut out = <$point>::default();
                // Passing one pointer followed by null tells blst the points (and the
                // scalars) are one contiguous array.
                let points_arg: [*const $affine; 2] = [points.as_ptr(), std::ptr::null()];
                let scalars_arg: [*const u8; 2] = [scalars.as_ptr().cast::<u8>(), std::ptr::null()];
                // SAFETY: blst reads `points.len()` affine points and as many 32-byte
                // scalars (`blst_scalar` is `[u8; 32]`) from the contiguous arrays above,
                // which outlive the call; the scratch buffer has the size blst asks for.
                unsafe {
                    let mut scratch = vec![0u64; $scratch(points.len()).div_ceil(8)];
                    $mult(
                        &mut out,
                        points_arg.as_ptr(),
                        points.len(),
                        scalars_arg.as_ptr(),
                        SCALAR_BITS,
                        scratch.as_mut_ptr(),
                    );
                }
                out
            }

            fn add(acc: &mut $point, other: &$point) {
                let lhs = *acc;
                // SAFETY: all three pointers are to valid, initialised points.
                unsafe { $add(acc, &lhs, other) };
            }
        }
    };
}

pippenger_curve!(
    G1,
    blst_p1_affine,
    blst_p1,
    blst_p1s_mult_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof,
    blst_p1_add_or_double
);
pippenger_curve!(
    G2,
    blst_p2_affine,
    blst_p2,
    blst_p2s_mult_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof,
    blst_p2_add_or_double
);

/// `sum_i scalars[i] * points[i]` with `chunks` independent Pippenger runs in parallel on
/// the current rayon pool. Lengths must be equal (checked by the caller).
pub(crate) fn msm<C: PippengerCurve>(points: &[C::Affine], scalars: &[Fr], chunks: usize) -> C::Point {
    let n = points.len();
    if n == 0 {
        return C::Point::default();
    }
    let chunk = n.div_ceil(chunks.max(1)).max(MIN_CHUNK);
    let scalars: &[blst_fr] = cast_slice(scalars);
    points
        .par_chunks(chunk)
        .zip(scalars.par_chunks(chunk))
        .map(|(points, scalars)| C::pippenger(points, &canonical(scalars)))
        .reduce(C::Point::default, |mut acc, part| {
            C::add(&mut acc, &part);
            acc
        })
}

/// Montgomery-form scalars to blst's canonical little-endian bytes.
fn canonical(scalars: &[blst_fr]) -> Vec<blst_scalar> {
    scalars
        .iter()
        .map(|fr| {
            let mut out = blst_scalar::default();
            // SAFETY: both pointers are to valid, initialised values.
            unsafe { blst_scalar_from_fr(&mut out, fr) };
            out
        })
        .collect()
}
