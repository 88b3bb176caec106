//! Field and curve types as they cross the ABI: BLS12-381 in blst's own layout.
//!
//! Elements are in Montgomery form, as little-endian 64-bit limbs, exactly as blst stores
//! them (`blst_fr`, `blst_fp`, `blst_fp2`, `blst_p1_affine`, `blst_p1`, ...). blstrs' types
//! are `repr(transparent)` over those structs, so slices convert both ways without a copy
//! (the SDK's `cast_slice`); the layouts are asserted there at compile time.
//!
//! The point at infinity is encoded as blst encodes it: all-zero coordinates in affine
//! form, `z = 0` in projective (Jacobian) form.

use abi_stable::StableAbi;

/// An element of the scalar field Fr: 4 limbs, Montgomery form.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fr(pub [u64; 4]);

/// An element of the base field Fp: 6 limbs, Montgomery form.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fp(pub [u64; 6]);

/// An element of Fp2 = Fp[u] / (u^2 + 1): `c0 + c1 * u`.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fp2 {
    /// The real part.
    pub c0: Fp,
    /// The coefficient of `u`.
    pub c1: Fp,
}

/// A G1 point in affine coordinates; all-zero is the point at infinity.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct G1Affine {
    /// x coordinate.
    pub x: Fp,
    /// y coordinate.
    pub y: Fp,
}

/// A G1 point in Jacobian coordinates; `z = 0` is the point at infinity.
///
/// Equal points have many encodings: compare them after conversion to affine form.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default)]
pub struct G1Projective {
    /// X.
    pub x: Fp,
    /// Y.
    pub y: Fp,
    /// Z.
    pub z: Fp,
}

/// A G2 point in affine coordinates; all-zero is the point at infinity.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct G2Affine {
    /// x coordinate.
    pub x: Fp2,
    /// y coordinate.
    pub y: Fp2,
}

/// A G2 point in Jacobian coordinates; `z = 0` is the point at infinity.
///
/// Equal points have many encodings: compare them after conversion to affine form.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default)]
pub struct G2Projective {
    /// X.
    pub x: Fp2,
    /// Y.
    pub y: Fp2,
    /// Z.
    pub z: Fp2,
}

/// A Groth16 proof: the points A, B and C in affine form, in this order (supraseal-c2's
/// `groth16_proof` has the same layout).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Proof {
    /// A.
    pub a: G1Affine,
    /// B.
    pub b: G2Affine,
    /// C.
    pub c: G1Affine,
}
