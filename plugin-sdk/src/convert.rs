//! Zero-copy conversion between the ABI types and their layout twins in blstrs and blst.

/// Marks `Self` and `T` as the same bytes: same size, same alignment, and the same
/// meaning for every bit pattern the program produces.
///
/// # Safety
/// Implementors guarantee that a `Self` may be reinterpreted as a `T` and back. Only the
/// impls in this module exist, each checked by compile-time size and alignment assertions.
pub unsafe trait SameLayout<T>: Copy {}

#[cfg(feature = "blstrs")]
mod twins {
    use super::SameLayout;
    use crate::types::{Fp, Fp2, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
    use std::mem::{align_of, size_of};

    /// Declares `$ours` and each `$theirs` layout twins, in both directions, after
    /// asserting equal size and alignment at compile time.
    macro_rules! twins {
        ($ours:ty => $($theirs:ty),+) => {$(
            const _: () = assert!(size_of::<$ours>() == size_of::<$theirs>());
            const _: () = assert!(align_of::<$ours>() == align_of::<$theirs>());
            // SAFETY: blst's structs are `repr(C)` arrays of 64-bit limbs in the order the
            // ABI types declare them; blstrs' are `repr(transparent)` over blst's; the size
            // and alignment are asserted just above.
            unsafe impl SameLayout<$theirs> for $ours {}
            // SAFETY: as above, in the other direction.
            unsafe impl SameLayout<$ours> for $theirs {}
        )+};
    }

    twins!(Fr => blstrs::Scalar, blst::blst_fr);
    twins!(Fp => blst::blst_fp);
    twins!(Fp2 => blst::blst_fp2);
    twins!(G1Affine => blstrs::G1Affine, blst::blst_p1_affine);
    twins!(G1Projective => blstrs::G1Projective, blst::blst_p1);
    twins!(G2Affine => blstrs::G2Affine, blst::blst_p2_affine);
    twins!(G2Projective => blstrs::G2Projective, blst::blst_p2);
}

/// Reinterprets a value as its layout twin.
#[cfg(feature = "blstrs")]
pub fn cast<A: SameLayout<B>, B>(value: A) -> B {
    // SAFETY: `SameLayout` guarantees equal size, alignment and meaning.
    unsafe { std::mem::transmute_copy(&value) }
}

/// Reinterprets a slice as a slice of its layout twin, without copying.
#[cfg(feature = "blstrs")]
pub fn cast_slice<A: SameLayout<B>, B>(values: &[A]) -> &[B] {
    // SAFETY: `SameLayout` guarantees equal size and alignment, so the same pointer and
    // length describe the same bytes as a `[B]`; the lifetime is carried over.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<B>(), values.len()) }
}

/// Reinterprets a mutable slice as a mutable slice of its layout twin, without copying.
#[cfg(feature = "blstrs")]
pub fn cast_slice_mut<A: SameLayout<B>, B>(values: &mut [A]) -> &mut [B] {
    // SAFETY: as in `cast_slice`; the exclusive borrow is carried over, so no alias exists.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<B>(), values.len()) }
}

/// Reinterprets a vector as a vector of its layout twin, reusing its allocation.
#[cfg(feature = "blstrs")]
pub fn cast_vec<A: SameLayout<B>, B>(values: Vec<A>) -> Vec<B> {
    let mut values = std::mem::ManuallyDrop::new(values);
    // SAFETY: equal size and alignment (`SameLayout`) mean the allocation has the layout
    // a `Vec<B>` of the same capacity expects; ownership moves from `values`, which is
    // never dropped.
    unsafe { Vec::from_raw_parts(values.as_mut_ptr().cast::<B>(), values.len(), values.capacity()) }
}

#[cfg(all(test, feature = "blstrs"))]
mod tests {
    use super::*;
    use crate::types::{Fr, G1Affine, G1Projective, G2Affine};
    use ff::Field;
    use group::{prime::PrimeCurveAffine, Curve, Group};

    #[test]
    fn round_trips_preserve_values() {
        let s = blstrs::Scalar::from(123_456_789u64);
        let ours: Fr = cast(s);
        assert_eq!(cast::<Fr, blstrs::Scalar>(ours), s);
        assert_eq!(blstrs::Scalar::ONE, cast(cast::<_, Fr>(blstrs::Scalar::ONE)));

        let p = (blstrs::G1Projective::generator() * s).to_affine();
        let ours: G1Affine = cast(p);
        assert_eq!(cast::<G1Affine, blstrs::G1Affine>(ours), p);
        let q: G1Projective = cast(blstrs::G1Projective::generator());
        assert_eq!(cast::<G1Projective, blstrs::G1Projective>(q), blstrs::G1Projective::generator());
    }

    #[test]
    fn infinity_is_all_zero_in_affine_form() {
        assert_eq!(cast::<_, G1Affine>(blstrs::G1Affine::identity()), G1Affine::default());
        assert_eq!(cast::<_, G2Affine>(blstrs::G2Affine::identity()), G2Affine::default());
    }

    #[test]
    fn slices_are_views() {
        let v = vec![blstrs::Scalar::ONE, blstrs::Scalar::ZERO];
        let ours: &[Fr] = cast_slice(&v);
        assert_eq!(ours.as_ptr() as usize, v.as_ptr() as usize);
        assert_eq!(ours[1], Fr::default());
    }
}
