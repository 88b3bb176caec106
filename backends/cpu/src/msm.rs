//! Multi-scalar multiplication: Pippenger's windows (and, when there are fewer windows
//! than threads, chunks of the points) split across the pool, each window's buckets filled
//! by batch-affine additions (`csrc/batch_affine.c`); blst's own Pippenger below a chunk.

use bellhop_plugin_sdk::{cast_slice, types::Fr};
use blst::{
    blst_fr, blst_p1, blst_p1_add_or_double, blst_p1_affine, blst_p1_double, blst_p1s_mult_pippenger,
    blst_p1s_mult_pippenger_scratch_sizeof, blst_p2, blst_p2_add_or_double, blst_p2_affine, blst_p2_double,
    blst_p2s_mult_pippenger, blst_p2s_mult_pippenger_scratch_sizeof, blst_scalar, blst_scalar_from_fr,
};
use rayon::prelude::*;

/// Below this many points per chunk, splitting costs more than it saves.
const MIN_CHUNK: usize = 1 << 10;

/// The bit length of Fr's modulus: scalars are canonical and below it.
const SCALAR_BITS: usize = 255;

/// Pippenger's windows of `window` bits over the scalars: one past the top bit too,
/// where the top window's Booth digit carries (a tile of no bits but that carry when
/// `window` divides the scalars' bits).
fn windows(window: usize) -> usize {
    SCALAR_BITS / window + 1
}

extern "C" {
    /// One window of Pippenger (blst's `blst_p1s_tile_pippenger` contract, contiguous
    /// arrays) with batch-affine buckets; `scratch` holds `..._scratch_sizeof(window)` bytes.
    fn bellhop_p1s_tile_batch_affine(
        ret: *mut blst_p1,
        points: *const blst_p1_affine,
        npoints: usize,
        scalars: *const u8,
        nbits: usize,
        scratch: *mut u64,
        bit0: usize,
        window: usize,
    );
    fn bellhop_p1s_tile_batch_affine_scratch_sizeof(window: usize) -> usize;
    /// As `bellhop_p1s_tile_batch_affine`, on G2.
    fn bellhop_p2s_tile_batch_affine(
        ret: *mut blst_p2,
        points: *const blst_p2_affine,
        npoints: usize,
        scalars: *const u8,
        nbits: usize,
        scratch: *mut u64,
        bit0: usize,
        window: usize,
    );
    fn bellhop_p2s_tile_batch_affine_scratch_sizeof(window: usize) -> usize;
}

/// A blst curve group, as far as Pippenger needs it.
pub(crate) trait PippengerCurve {
    type Affine: Sync;
    type Point: Default + Copy + Send;

    /// blst's single-threaded Pippenger over `points` and canonical `scalars` of equal
    /// length > 0: for MSMs too small to split.
    fn pippenger(points: &[Self::Affine], scalars: &[blst_scalar]) -> Self::Point;

    /// `sum_i s_i * points[i]`, `s_i` the Booth digit of bits `bit0 .. bit0 + window` of
    /// `scalars[i]` (one of Pippenger's windows; the top one may be cut short by the
    /// scalars' end, which blst handles), over equal lengths > 0.
    fn tile(points: &[Self::Affine], scalars: &[blst_scalar], bit0: usize, window: usize) -> Self::Point;

    /// `acc += other`.
    fn add(acc: &mut Self::Point, other: &Self::Point);

    /// `acc = 2 acc`.
    fn double(acc: &mut Self::Point);
}

/// blst's arguments for one contiguous array of points and one of scalars: a pointer
/// to each, followed by null.
fn contiguous<A>(points: &[A], scalars: &[blst_scalar]) -> ([*const A; 2], [*const u8; 2]) {
    ([points.as_ptr(), std::ptr::null()], [scalars.as_ptr().cast::<u8>(), std::ptr::null()])
}

macro_rules! pippenger_curve {
    (
        $name:ident,
        $affine:ty,
        $point:ty,
        $mult:ident,
        $scratch:ident,
        $tile:ident,
        $scratch_tile:ident,
        $add:ident,
        $double:ident
    ) => {
        pub(crate) struct $name;

        impl PippengerCurve for $name {
            type Affine = $affine;
            type Point = $point;

            fn pippenger(points: &[$affine], scalars: &[blst_scalar]) -> $point {
                debug_assert!(!points.is_empty() && points.len() == scalars.len());
                let mut out = <$point>::default();
                let (points_arg, scalars_arg) = contiguous(points, scalars);
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

            fn tile(points: &[$affine], scalars: &[blst_scalar], bit0: usize, window: usize) -> $point {
                debug_assert!(!points.is_empty() && points.len() == scalars.len());
                debug_assert!((1..=20).contains(&window) && bit0 <= SCALAR_BITS);
                let mut out = <$point>::default();
                // SAFETY: the tile reads `points.len()` affine points and as many 32-byte
                // scalars (`blst_scalar` is `[u8; 32]`) from the two slices, which outlive
                // the call, and writes only `out` and the scratch, which has the size it
                // asks for a window of `window` bits, 8-byte aligned as its parts need.
                unsafe {
                    let mut scratch = vec![0u64; $scratch_tile(window).div_ceil(8)];
                    $tile(
                        &mut out,
                        points.as_ptr(),
                        points.len(),
                        scalars.as_ptr().cast::<u8>(),
                        SCALAR_BITS,
                        scratch.as_mut_ptr(),
                        bit0,
                        window,
                    );
                }
                out
            }

            fn add(acc: &mut $point, other: &$point) {
                let lhs = *acc;
                // SAFETY: all three pointers are to valid, initialised points.
                unsafe { $add(acc, &lhs, other) };
            }

            fn double(acc: &mut $point) {
                let value = *acc;
                // SAFETY: both pointers are to valid, initialised points.
                unsafe { $double(acc, &value) };
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
    bellhop_p1s_tile_batch_affine,
    bellhop_p1s_tile_batch_affine_scratch_sizeof,
    blst_p1_add_or_double,
    blst_p1_double
);
pippenger_curve!(
    G2,
    blst_p2_affine,
    blst_p2,
    blst_p2s_mult_pippenger,
    blst_p2s_mult_pippenger_scratch_sizeof,
    bellhop_p2s_tile_batch_affine,
    bellhop_p2s_tile_batch_affine_scratch_sizeof,
    blst_p2_add_or_double,
    blst_p2_double
);

/// How an MSM of `n` points is split over `threads`: Pippenger's window in bits, and the
/// point chunks each window's tiles cover. Each tile costs about its points plus its
/// buckets (2^window); the plan with the least work on the busiest thread wins.
fn plan(n: usize, threads: usize) -> (usize, usize) {
    let threads = threads.max(1);
    let mut best = (usize::MAX, 1, 1);
    for window in 4..=20usize {
        let windows = windows(window);
        let chunks = threads.div_ceil(windows).min(n.div_ceil(MIN_CHUNK)).max(1);
        let tiles_per_thread = (windows * chunks).div_ceil(threads);
        let cost = tiles_per_thread * (n.div_ceil(chunks) + (1 << window));
        if cost < best.0 {
            best = (cost, window, chunks);
        }
    }
    (best.1, best.2)
}

/// `sum_i scalars[i] * points[i]` on the current rayon pool of `threads`: Pippenger's
/// windows (times chunks of the points, when there are fewer windows than threads) as
/// tiles in parallel, then each window's sum shifted into place. Lengths must be equal
/// (checked by the caller).
pub(crate) fn msm<C: PippengerCurve>(points: &[C::Affine], scalars: &[Fr], threads: usize) -> C::Point {
    let n = points.len();
    if n == 0 {
        return C::Point::default();
    }
    let scalars: Vec<blst_scalar> =
        cast_slice::<Fr, blst_fr>(scalars).par_chunks(MIN_CHUNK).flat_map_iter(canonical).collect();
    if n < MIN_CHUNK {
        return C::pippenger(points, &scalars);
    }
    let (window, chunks) = plan(n, threads);
    windowed::<C>(points, &scalars, window, chunks)
}

/// `sum_i scalars[i] * points[i]` by Pippenger's windows of `window` bits, each window's
/// points in `chunks`, as tiles in parallel; lengths equal and > 0.
fn windowed<C: PippengerCurve>(
    points: &[C::Affine],
    scalars: &[blst_scalar],
    window: usize,
    chunks: usize,
) -> C::Point {
    let chunk = points.len().div_ceil(chunks);
    let sums: Vec<C::Point> = (0..windows(window))
        .into_par_iter()
        .map(|w| {
            points
                .par_chunks(chunk)
                .zip(scalars.par_chunks(chunk))
                .map(|(points, scalars)| C::tile(points, scalars, w * window, window))
                .reduce(C::Point::default, |mut acc, part| {
                    C::add(&mut acc, &part);
                    acc
                })
        })
        .collect();
    // sum_w 2^(w·window) sums[w], from the top window down.
    let mut total = C::Point::default();
    for sum in sums.iter().rev() {
        for _ in 0..window {
            C::double(&mut total);
        }
        C::add(&mut total, sum);
    }
    total
}

/// Montgomery-form scalars to blst's canonical little-endian bytes.
fn canonical(scalars: &[blst_fr]) -> impl Iterator<Item = blst_scalar> + '_ {
    scalars.iter().map(|fr| {
        let mut out = blst_scalar::default();
        // SAFETY: both pointers are to valid, initialised values.
        unsafe { blst_scalar_from_fr(&mut out, fr) };
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use blst::{blst_p1_is_equal, blst_p1s_tile_pippenger, blst_p2_is_equal, blst_p2s_tile_pippenger};
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
    use group::Group;

    /// Multipliers of the generator for the degenerate inputs: a point, itself, its
    /// negation, the identity, and points repeated so one bucket sees them all in a row.
    const DEGENERATE: [i64; 8] = [5, 5, -5, 0, 7, 5, -7, 7];

    /// Pseudo-random 255-bit scalars (xorshift), from `seed`.
    fn scalars(n: usize, seed: u64) -> Vec<blst_scalar> {
        let mut state = seed | 1;
        (0..n)
            .map(|_| {
                let mut out = blst_scalar::default();
                for chunk in out.b.chunks_mut(8) {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    chunk.copy_from_slice(&state.to_le_bytes());
                }
                out.b[31] &= 0x7f;
                out
            })
            .collect()
    }

    /// Stamps the tile tests for one group: batch-affine tiles against blst's own tiles,
    /// every window of the scalars, on random and on degenerate inputs.
    macro_rules! tile_tests {
        ($module:ident, $curve:ident, $projective:ident, $rs_affine:ident, $affine:ty, $point:ty, $blst_tile:ident, $scratch:ident, $eq:ident) => {
            mod $module {
                use super::*;

                fn points(multipliers: impl Iterator<Item = i64>) -> Vec<$affine> {
                    multipliers
                        .map(|k| {
                            let p = $projective::generator() * Scalar::from(k.unsigned_abs());
                            *$rs_affine::from(if k < 0 { -p } else { p }).as_ref()
                        })
                        .collect()
                }

                fn blst_tile(points: &[$affine], scalars: &[blst_scalar], bit0: usize, window: usize) -> $point {
                    let mut out = <$point>::default();
                    let (points_arg, scalars_arg) = contiguous(points, scalars);
                    // SAFETY: as in `PippengerCurve::tile` of blst's own tiles.
                    unsafe {
                        let mut scratch = vec![0u64; ($scratch(0) << (window - 1)).div_ceil(8)];
                        $blst_tile(
                            &mut out,
                            points_arg.as_ptr(),
                            points.len(),
                            scalars_arg.as_ptr(),
                            SCALAR_BITS,
                            scratch.as_mut_ptr(),
                            bit0,
                            window,
                        );
                    }
                    out
                }

                fn assert_tiles_match(points: &[$affine], scalars: &[blst_scalar], case: &str) {
                    for window in [4, 9, 13] {
                        for bit0 in (0..=SCALAR_BITS).step_by(window) {
                            let ours = $curve::tile(points, scalars, bit0, window);
                            let theirs = blst_tile(points, scalars, bit0, window);
                            // SAFETY: both pointers are to valid, initialised points.
                            let equal = unsafe { $eq(&ours, &theirs) };
                            assert!(equal, "{case}: window {window} at bit {bit0} differs from blst's tile");
                        }
                    }
                }

                #[test]
                fn batch_affine_tiles_are_blsts_on_random_inputs() {
                    let points = points((1..=1500).map(|k| k * 7919 + 3));
                    assert_tiles_match(&points, &scalars(points.len(), 1), "random");
                    // Each scalar three times in a row: the third finds its bucket's addition
                    // queued, so hundreds of buckets overflow and are folded back in batches.
                    let thrice: Vec<blst_scalar> =
                        scalars(points.len() / 3, 6).into_iter().flat_map(|s| [s.clone(), s.clone(), s]).collect();
                    assert_tiles_match(&points, &thrice, "each scalar thrice");
                }

                #[test]
                fn windowed_msm_is_blsts_pippenger_for_every_window() {
                    // Windows 5, 15 and 17 divide the scalars' 255 bits: the carry out of
                    // the top window then needs a tile of its own.
                    let points = points((1..=1100).map(|k| k * 104_729 + 11));
                    let scalars = scalars(points.len(), 5);
                    let expected = $curve::pippenger(&points, &scalars);
                    for window in [4, 5, 9, 13, 15, 16, 17] {
                        for chunks in [1, 3] {
                            let ours = windowed::<$curve>(&points, &scalars, window, chunks);
                            // SAFETY: both pointers are to valid, initialised points.
                            let equal = unsafe { $eq(&ours, &expected) };
                            assert!(equal, "window {window}, {chunks} chunks: differs from blst's Pippenger");
                        }
                    }
                }

                #[test]
                fn batch_affine_tiles_are_blsts_on_degenerate_inputs() {
                    let points = points(DEGENERATE.iter().copied().cycle().take(600));
                    // Every point in one bucket: each batch holds one addition, the rest overflow.
                    let same = vec![scalars(1, 2).remove(0); points.len()];
                    assert_tiles_match(&points, &same, "one bucket");
                    // P + P, P + (-P) and the identity among random buckets.
                    assert_tiles_match(&points, &scalars(points.len(), 3), "repeated points");
                    // Zero scalars, and the all-ones digits of the largest 255-bit scalar.
                    let mut edges = scalars(points.len(), 4);
                    for (i, scalar) in edges.iter_mut().enumerate() {
                        match i % 3 {
                            0 => *scalar = blst_scalar::default(),
                            1 => scalar.b = [0xff; 32],
                            _ => {}
                        }
                        scalar.b[31] &= 0x7f;
                    }
                    assert_tiles_match(&points, &edges, "zero and largest scalars");
                }
            }
        };
    }

    tile_tests!(
        g1,
        G1,
        G1Projective,
        G1Affine,
        blst_p1_affine,
        blst_p1,
        blst_p1s_tile_pippenger,
        blst_p1s_mult_pippenger_scratch_sizeof,
        blst_p1_is_equal
    );
    tile_tests!(
        g2,
        G2,
        G2Projective,
        G2Affine,
        blst_p2_affine,
        blst_p2,
        blst_p2s_tile_pippenger,
        blst_p2s_mult_pippenger_scratch_sizeof,
        blst_p2_is_equal
    );

    #[test]
    fn plans_split_windows_first_and_points_only_past_them() {
        // Two threads: far more windows than threads, so whole windows.
        let (window, chunks) = plan(1 << 16, 2);
        assert_eq!(chunks, 1);
        assert!((12..=16).contains(&window), "window {window}");
        // Many threads over many points: the points are split too.
        let (window, chunks) = plan(1 << 20, 64);
        assert!(chunks > 1 && windows(window) * chunks >= 64, "window {window}, chunks {chunks}");
        // Never chunks below the smallest worth splitting.
        assert_eq!(plan(MIN_CHUNK, 64).1, 1);
    }
}
