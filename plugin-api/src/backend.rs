//! The backend's side of the ABI: the transform directions, the FFI-safe object the host
//! calls ([`BackendBox`]) and the root module a backend plugin exports.
//!
//! Authors do not implement these directly: the SDK (`bellhop-plugin-sdk`) builds them from
//! its `Backend` trait, with the contract checks and panic guards at the seam.

use abi_stable::{
    library::RootModule,
    sabi_trait,
    sabi_types::VersionStrings,
    std_types::{
        RBox, RResult,
        RResult::{RErr, ROk},
        RSlice, RSliceMut, RStr, RVec,
    },
    StableAbi,
};

use crate::{
    strategy::Assignment,
    types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective, Proof},
    version::ABI_VERSION_STRINGS,
    DeviceMemory, OpenRequest, PhaseTiming, PluginError, PluginInfo,
};

/// Which transform an NTT call applies to a slice of length `n = 2^k`, with `ω` the
/// primitive `n`-th root of unity `ROOT_OF_UNITY^(2^(S-k))` and `g` Fr's
/// `MULTIPLICATIVE_GENERATOR` (7), as bellperson's `EvaluationDomain` defines them.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NttDirection {
    /// `v_i <- sum_j v_j ω^(ij)`.
    Forward,
    /// The inverse of `Forward` (including the `1/n` factor).
    Inverse,
    /// Evaluation on the coset `g·<ω>`: `v_i <- sum_j v_j g^j ω^(ij)`.
    CosetForward,
    /// The inverse of `CosetForward`.
    CosetInverse,
}

/// An opened backend, FFI-safe; the host reaches it as a [`BackendBox`]. The contract of
/// each call (what the SDK checks before a backend sees it) is written on the SDK's
/// `Backend` trait, whose methods these mirror.
#[sabi_trait]
pub trait BackendObject: Send + Sync {
    /// `sum_i scalars[i] * bases[i]` on G1; equal lengths.
    fn msm_g1(&self, bases: RSlice<'_, G1Affine>, scalars: RSlice<'_, Fr>) -> RResult<G1Projective, PluginError>;

    /// `sum_i scalars[i] * bases[i]` on G2; equal lengths.
    fn msm_g2(&self, bases: RSlice<'_, G2Affine>, scalars: RSlice<'_, Fr>) -> RResult<G2Projective, PluginError>;

    /// The transform `direction` in place; a power-of-two length up to 2^32.
    fn ntt(&self, values: RSliceMut<'_, Fr>, direction: NttDirection) -> RResult<(), PluginError>;

    /// The FFT part of Groth16 in place: `h = (A·B - C) / Z` into `a`.
    #[sabi(last_prefix_field)]
    fn compute_h(
        &self,
        a: RSliceMut<'_, Fr>,
        b: RSliceMut<'_, Fr>,
        c: RSliceMut<'_, Fr>,
    ) -> RResult<RVec<PhaseTiming>, PluginError>;

    /// The host's promise that these bases stay put until `release_bases`. ABI 1.1: a 1.0
    /// plugin answers with this default.
    fn keep_bases(
        &self,
        g1: RSlice<'_, RSlice<'_, G1Affine>>,
        g2: RSlice<'_, RSlice<'_, G2Affine>>,
    ) -> RResult<(), PluginError> {
        let _ = (g1, g2);
        ROk(())
    }

    /// Ends every `keep_bases` promise. ABI 1.1: a 1.0 plugin answers with this default.
    fn release_bases(&self) -> RResult<(), PluginError> {
        ROk(())
    }
    /// Whole proofs of a batch in one fused call. ABI 1.2.
    fn prove_batch(
        &self,
        params: RStr<'_>,
        assignments: RSlice<'_, &Assignment>,
        r: RSlice<'_, Fr>,
        s: RSlice<'_, Fr>,
    ) -> RResult<RVec<Proof>, PluginError> {
        let _ = (params, assignments, r, s);
        RErr(PluginError::unsupported("prove_batch"))
    }

    /// The opened device's total and free memory. ABI 1.3.
    fn memory(&self) -> RResult<DeviceMemory, PluginError> {
        RErr(PluginError::unsupported("memory"))
    }

    /// h and the five MSMs of one proof in one call. ABI 1.4.
    fn proof_msms(&self, bases: ProvingBases<'_>, assignment: &Assignment) -> RResult<ProofMsms, PluginError> {
        let _ = (bases, assignment);
        RErr(PluginError::unsupported("proof_msms"))
    }

    /// The host's promise that these ranges stay allocated until `release_host_memory`;
    /// whether the backend keeps them (page-locked). ABI 1.6: a 1.5 plugin keeps nothing.
    fn keep_host_memory(&self, ranges: RSlice<'_, RSlice<'_, Fr>>) -> RResult<bool, PluginError> {
        let _ = ranges;
        ROk(false)
    }

    /// Ends the `keep_host_memory` promise of each range. ABI 1.6.
    fn release_host_memory(&self, ranges: RSlice<'_, RSlice<'_, Fr>>) -> RResult<(), PluginError> {
        let _ = ranges;
        ROk(())
    }
}

/// The bases of a Groth16 proving key, as the host holds them (bellperson's `Parameters`
/// order): what [`BackendObject::proof_msms`] multiplies.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct ProvingBases<'a> {
    /// h: one per coefficient of h (the domain size less one).
    pub h: RSlice<'a, G1Affine>,
    /// l: one per aux variable.
    pub l: RSlice<'a, G1Affine>,
    /// The A query: the inputs, then the aux variables the A density marks.
    pub a: RSlice<'a, G1Affine>,
    /// The B query on G1: the inputs and then the aux variables the B densities mark.
    pub b_g1: RSlice<'a, G1Affine>,
    /// The B query on G2, as `b_g1`.
    pub b_g2: RSlice<'a, G2Affine>,
}

/// The five MSM results of one proof ([`BackendObject::proof_msms`]), with the timings of
/// its parts.
#[repr(C)]
#[derive(StableAbi, Clone, Debug)]
pub struct ProofMsms {
    /// `h · bases.h`.
    pub h: G1Projective,
    /// `aux · bases.l`.
    pub l: G1Projective,
    /// The A query's MSM.
    pub a: G1Projective,
    /// The B query's MSM on G1.
    pub b_g1: G1Projective,
    /// The B query's MSM on G2.
    pub b_g2: G2Projective,
    /// The parts' timings (`h`, `msm_a`, ...), as the backend measured them.
    pub timings: RVec<PhaseTiming>,
}

/// An opened backend as it crosses the ABI.
pub type BackendBox = BackendObject_TO<'static, RBox<()>>;

/// The root module a backend plugin exports.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = BackendModuleRef)))]
#[sabi(missing_field(panic))]
pub struct BackendModule {
    /// Describes the plugin and its devices.
    pub describe: extern "C" fn() -> RResult<PluginInfo, PluginError>,
    /// Opens a device.
    #[sabi(last_prefix_field)]
    pub open: extern "C" fn(request: &OpenRequest) -> RResult<BackendBox, PluginError>,
}

impl RootModule for BackendModuleRef {
    abi_stable::declare_root_module_statics! {BackendModuleRef}
    const BASE_NAME: &'static str = "bellhop_backend";
    const NAME: &'static str = "bellhop backend";
    const VERSION_STRINGS: VersionStrings = ABI_VERSION_STRINGS;
}
