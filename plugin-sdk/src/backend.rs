//! The backend seam: MSM, NTT and `compute_h` over zero-copy slices.
//!
//! A backend author implements [`Backend`] (three required calls: `msm_g1`, `msm_g2`,
//! `ntt`) and [`BackendPlugin`] (how to describe and open it, and its typed options), then
//! exports it:
//!
//! ```ignore
//! bellhop_plugin_sdk::export_backend!(my_crate::MyBackend);
//! ```
//!
//! The host sees every backend, embedded or loaded, as a [`BackendBox`]: the seam, which
//! implements [`Backend`] by calling across the ABI. On the plugin's side of it every call
//! is checked against the contract (lengths, powers of two, batch shapes) before the
//! backend sees it, and panics come back as errors; [`seam`] puts a backend value behind
//! the same checks.

use abi_stable::{
    sabi_trait,
    std_types::{RResult, RSlice, RSliceMut, RStr, RVec},
};

use serde::de::DeserializeOwned;

pub use bellhop_plugin_api::backend::{
    BackendBox, BackendModule, BackendModuleRef, BackendObject, BackendObject_TO, NttDirection, ProofMsms, ProvingBases,
};

use crate::{
    guard::guard,
    strategy::Assignment,
    types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective, Proof},
    BuildInfo, Description, DeviceMemory, OpenRequest, PhaseTiming, PluginError, PluginInfo, PluginKind,
};

/// The calls of an opened backend. All inputs are borrowed; nothing is copied across the ABI.
///
/// Behind the seam ([`BackendBox`], [`seam`]) a backend only sees inputs that meet the
/// contract written on each call: it need not check them again.
pub trait Backend: Send + Sync {
    /// `sum_i scalars[i] * bases[i]` on G1. The lengths are equal; empty gives infinity.
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError>;

    /// `sum_i scalars[i] * bases[i]` on G2. The lengths are equal; empty gives infinity.
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError>;

    /// Transforms `values` in place. The length is a power of two (1 included) up to
    /// `2^FR_TWO_ADICITY`: `values.len().trailing_zeros()` is its log2.
    fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError>;

    /// The FFT part of Groth16, in place. `a`, `b`, `c` hold the constraint evaluations
    /// padded with zeros to one power-of-two length `n`. Afterwards `a[..n-1]` holds
    /// the coefficients of `h = (A·B - C) / Z`; `b` and `c` are scratch.
    ///
    /// The provided method is that definition, built from [`Backend::ntt`]: inverse NTT of
    /// each, forward coset NTT of each, `(a·b - c) / Z` pointwise with `Z = g^n - 1`
    /// (constant on the coset), inverse coset NTT. A backend overrides it to fuse the
    /// passes or keep the data on its device. Returns the sub-phase timings.
    fn compute_h(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr]) -> Result<Vec<PhaseTiming>, PluginError> {
        compute_h_with_ntt(self, a, b, c)
    }

    /// ABI 1.1. The host promises that every slice in `g1` and `g2` stays alive and
    /// unchanged until [`Backend::release_bases`] or the backend's drop, so a backend may
    /// copy them to its device once and use the copy for later MSMs over the same slice
    /// (the same address; the same or a shorter length). A hint: the default keeps nothing.
    fn keep_bases(&self, g1: &[&[G1Affine]], g2: &[&[G2Affine]]) -> Result<(), PluginError> {
        let _ = (g1, g2);
        Ok(())
    }

    /// ABI 1.1. Ends the promises of every [`Backend::keep_bases`] call.
    fn release_bases(&self) -> Result<(), PluginError> {
        Ok(())
    }
    /// ABI 1.2. Whole Groth16 proofs of `assignments` (one circuit shape, each well
    /// formed, one `r` and one `s` per assignment) in one fused call. The host calls it
    /// only on backends whose description lists
    /// [`Capabilities::PROVE_BATCH`](crate::Capabilities): `params` is the path of the
    /// parameter file (bellperson's format) the host proves with, and `r[i]`, `s[i]` blind
    /// proof `i`. The proofs must equal the host's own for the same `r` and `s`. The
    /// default is an [`ErrorKind::UNSUPPORTED`](crate::ErrorKind) error.
    fn prove_batch(
        &self,
        params: &str,
        assignments: &[&Assignment],
        r: &[Fr],
        s: &[Fr],
    ) -> Result<Vec<Proof>, PluginError> {
        let _ = (params, assignments, r, s);
        Err(PluginError::unsupported("prove_batch"))
    }

    /// ABI 1.3. The opened device's memory now, total and free (for status reports). It
    /// must answer at once, even while another call is running on the device. The
    /// default is an [`ErrorKind::UNSUPPORTED`](crate::ErrorKind) error.
    fn memory(&self) -> Result<DeviceMemory, PluginError> {
        Err(PluginError::unsupported("memory"))
    }

    /// ABI 1.4. h and the five MSMs of one Groth16 proof in one call, so that a device
    /// backend keeps the data on its device between them: with `n` the power of two at or
    /// above `assignment.a.len()`, and a, b, c padded with zeros to it,
    /// - `h`: the `n - 1` coefficients of `(A·B - C) / Z` ([`Backend::compute_h`]) times
    ///   the first `n - 1` of `bases.h`;
    /// - `l`: `aux` times `bases.l`;
    /// - `a`: the inputs, then the aux values `a_aux_density` marks, times `bases.a`;
    /// - `b_g1`, `b_g2`: the inputs `b_input_density` marks, then the aux values
    ///   `b_aux_density` marks, times `bases.b_g1` and `bases.b_g2`.
    ///
    /// Behind the seam the assignment is well formed and each base list holds at least
    /// as many points as its scalars (a backend uses the first ones); `timings` name the
    /// parts. The default is [`proof_msms_from_primitives`]; a backend whose description
    /// lists [`Capabilities::PROOF_MSMS`](crate::Capabilities) has a call of its own.
    fn proof_msms(&self, bases: ProvingBases<'_>, assignment: &Assignment) -> Result<ProofMsms, PluginError> {
        proof_msms_from_primitives(self, bases, assignment)
    }

    /// ABI 1.6. The host promises that every range in `ranges` stays allocated (it may
    /// write into it between calls, never during one that reads it) until
    /// [`Backend::release_host_memory`] names it, so a device backend may page-lock it once
    /// for all the proofs that read it. Returns whether the backend keeps them: the host
    /// then reuses the ranges for later proofs rather than freeing them. The default keeps
    /// nothing.
    fn keep_host_memory(&self, ranges: &[&[Fr]]) -> Result<bool, PluginError> {
        let _ = ranges;
        Ok(false)
    }

    /// ABI 1.6. Ends the [`Backend::keep_host_memory`] promise of each range; the host
    /// frees them afterwards.
    fn release_host_memory(&self, ranges: &[&[Fr]]) -> Result<(), PluginError> {
        let _ = ranges;
        Ok(())
    }
}

/// [`Backend::compute_h`] built from [`Backend::ntt`], as its definition reads; the provided
/// method. The pointwise pass runs on the calling thread.
#[cfg(feature = "blstrs")]
pub fn compute_h_with_ntt<B: Backend + ?Sized>(
    backend: &B,
    a: &mut [Fr],
    b: &mut [Fr],
    c: &mut [Fr],
) -> Result<Vec<PhaseTiming>, PluginError> {
    use ff::{Field, PrimeField};
    use std::time::Instant;

    let start = Instant::now();
    for values in [&mut *a, &mut *b, &mut *c] {
        backend.ntt(values, NttDirection::Inverse)?;
        backend.ntt(values, NttDirection::CosetForward)?;
    }
    let to_coset = PhaseTiming::new("to_coset", start.elapsed());

    let start = Instant::now();
    let g = blstrs::Scalar::MULTIPLICATIVE_GENERATOR;
    let z_inverse = (g.pow_vartime([a.len() as u64]) - blstrs::Scalar::ONE)
        .invert()
        .into_option()
        .ok_or_else(|| PluginError::invalid_input("compute_h: g^n = 1, so Z vanishes on the coset"))?;
    let (b, c): (&[blstrs::Scalar], &[blstrs::Scalar]) = (crate::cast_slice(b), crate::cast_slice(c));
    for ((a, b), c) in crate::cast_slice_mut::<Fr, blstrs::Scalar>(a).iter_mut().zip(b).zip(c) {
        *a = (*a * b - c) * z_inverse;
    }
    let pointwise = PhaseTiming::new("pointwise", start.elapsed());

    let start = Instant::now();
    backend.ntt(a, NttDirection::CosetInverse)?;
    Ok(vec![to_coset, pointwise, PhaseTiming::new("from_coset", start.elapsed())])
}

/// Without the `blstrs` feature there is no field arithmetic to build `compute_h` from.
#[cfg(not(feature = "blstrs"))]
pub fn compute_h_with_ntt<B: Backend + ?Sized>(
    _backend: &B,
    _a: &mut [Fr],
    _b: &mut [Fr],
    _c: &mut [Fr],
) -> Result<Vec<PhaseTiming>, PluginError> {
    Err(PluginError::unsupported("compute_h (the provided method needs the `blstrs` feature)"))
}

/// Refuses a [`Backend::prove_batch`] call whose blinding lists do not match its
/// assignments, whose assignments are of different sizes, or one of whose assignments is
/// malformed ([`Assignment::check_shape`]) ([`ErrorKind::INVALID_INPUT`](crate::ErrorKind)).
/// The seam checks every call; a backend that hands the assignments to unsafe code checks
/// again, so that its safety does not rest on how it was called.
pub fn check_prove_batch(assignments: &[&Assignment], r: &[Fr], s: &[Fr]) -> Result<(), PluginError> {
    if r.len() != assignments.len() || s.len() != assignments.len() {
        return Err(PluginError::invalid_input(format!(
            "prove_batch: {} assignments but {} values of r and {} of s; one pair is needed per proof",
            assignments.len(),
            r.len(),
            s.len()
        )));
    }
    let shape = |a: &Assignment| (a.a.len(), a.b.len(), a.c.len(), a.inputs.len(), a.aux.len());
    if let Some(first) = assignments.first() {
        if let Some(other) = assignments.iter().find(|a| shape(a) != shape(first)) {
            return Err(PluginError::invalid_input(format!(
                "prove_batch: the assignments are of different shapes ({:?} and {:?}: A, B, C, inputs, aux); \
                 a batch must be of one circuit shape",
                shape(first),
                shape(other)
            )));
        }
    }
    if let Some((i, why)) = assignments.iter().enumerate().find_map(|(i, a)| a.check_shape().err().map(|e| (i, e))) {
        return Err(PluginError::invalid_input(format!("prove_batch: assignment {i} is malformed: {why}")));
    }
    Ok(())
}

/// The 2-adicity of Fr: NTTs take lengths up to `2^FR_TWO_ADICITY`.
pub const FR_TWO_ADICITY: u32 = 32;

/// Refuses an MSM whose bases and scalars differ in length ([`ErrorKind::INVALID_INPUT`](crate::ErrorKind)).
fn check_msm_lengths(call: &str, bases: usize, scalars: usize) -> Result<(), PluginError> {
    if bases == scalars {
        Ok(())
    } else {
        Err(PluginError::invalid_input(format!(
            "{call}: {bases} bases but {scalars} scalars; the lengths must be equal"
        )))
    }
}

/// Refuses an NTT of length `n` unless it is a power of two up to `2^FR_TWO_ADICITY`
/// ([`ErrorKind::INVALID_INPUT`](crate::ErrorKind)); returns its log2.
fn ntt_log2(n: usize) -> Result<u32, PluginError> {
    if !n.is_power_of_two() {
        return Err(PluginError::invalid_input(format!("NTT length {n} is not a power of two")));
    }
    let log_n = n.trailing_zeros();
    if log_n > FR_TWO_ADICITY {
        return Err(PluginError::invalid_input(format!(
            "NTT length 2^{log_n} exceeds Fr's 2-adicity 2^{FR_TWO_ADICITY}"
        )));
    }
    Ok(log_n)
}

/// Refuses a [`Backend::proof_msms`] call whose assignment is malformed or whose bases
/// are fewer than its scalars.
pub fn check_proof_msms(bases: &ProvingBases<'_>, assignment: &Assignment) -> Result<(), PluginError> {
    assignment
        .check_shape()
        .map_err(|why| PluginError::invalid_input(format!("proof_msms: the assignment is malformed: {why}")))?;
    let domain = assignment.a.len().next_power_of_two();
    ntt_log2(domain)?;
    let b = assignment.b_input_density.count() + assignment.b_aux_density.count();
    let needed = [
        ("h", bases.h.len(), domain - 1),
        ("l", bases.l.len(), assignment.aux.len()),
        ("a", bases.a.len(), assignment.inputs.len() + assignment.a_aux_density.count()),
        ("b_g1", bases.b_g1.len(), b),
        ("b_g2", bases.b_g2.len(), b),
    ];
    for (name, have, need) in needed {
        if have < need {
            return Err(PluginError::invalid_input(format!(
                "proof_msms: {have} {name} bases for {need} scalars; the parameters are not this circuit's"
            )));
        }
    }
    Ok(())
}

/// Refuses [`Backend::compute_h`] inputs unless they have one power-of-two length.
fn check_compute_h(a: usize, b: usize, c: usize) -> Result<(), PluginError> {
    if b != a || c != a {
        return Err(PluginError::invalid_input(format!(
            "compute_h: a, b and c must have one length; got {a}, {b} and {c}"
        )));
    }
    ntt_log2(a).map(drop)
}

/// How a backend is described and opened; implemented next to [`Backend`] by authors.
pub trait BackendPlugin: Backend + Sized + 'static {
    /// Its `[backend.options]`: a `serde` struct with `#[serde(deny_unknown_fields)]`
    /// (see [`crate::options`]), or [`NoOptions`](crate::options::NoOptions).
    type Options: DeserializeOwned;

    /// Name, capabilities and devices. Must not fail on a machine without the device.
    fn describe() -> Description;

    /// Opens device `request.device` with the options the operator set, already parsed
    /// (`request.options` still holds their text).
    fn open(request: &OpenRequest, options: Self::Options) -> Result<Self, PluginError>;
}

/// A [`Backend`] wrapped so that every call catches panics.
struct Exported<T>(T);

impl<T: Backend> BackendObject for Exported<T> {
    fn msm_g1(&self, bases: RSlice<'_, G1Affine>, scalars: RSlice<'_, Fr>) -> RResult<G1Projective, PluginError> {
        guard("msm_g1", || {
            check_msm_lengths("msm_g1", bases.len(), scalars.len())?;
            self.0.msm_g1(bases.as_slice(), scalars.as_slice())
        })
    }

    fn msm_g2(&self, bases: RSlice<'_, G2Affine>, scalars: RSlice<'_, Fr>) -> RResult<G2Projective, PluginError> {
        guard("msm_g2", || {
            check_msm_lengths("msm_g2", bases.len(), scalars.len())?;
            self.0.msm_g2(bases.as_slice(), scalars.as_slice())
        })
    }

    fn ntt(&self, mut values: RSliceMut<'_, Fr>, direction: NttDirection) -> RResult<(), PluginError> {
        guard("ntt", || {
            ntt_log2(values.len())?;
            self.0.ntt(values.as_mut_slice(), direction)
        })
    }

    fn compute_h(
        &self,
        mut a: RSliceMut<'_, Fr>,
        mut b: RSliceMut<'_, Fr>,
        mut c: RSliceMut<'_, Fr>,
    ) -> RResult<RVec<PhaseTiming>, PluginError> {
        guard("compute_h", || {
            check_compute_h(a.len(), b.len(), c.len())?;
            self.0.compute_h(a.as_mut_slice(), b.as_mut_slice(), c.as_mut_slice()).map(RVec::from)
        })
    }

    fn keep_bases(
        &self,
        g1: RSlice<'_, RSlice<'_, G1Affine>>,
        g2: RSlice<'_, RSlice<'_, G2Affine>>,
    ) -> RResult<(), PluginError> {
        guard("keep_bases", || {
            let g1: Vec<&[G1Affine]> = g1.iter().map(RSlice::as_slice).collect();
            let g2: Vec<&[G2Affine]> = g2.iter().map(RSlice::as_slice).collect();
            self.0.keep_bases(&g1, &g2)
        })
    }

    fn release_bases(&self) -> RResult<(), PluginError> {
        guard("release_bases", || self.0.release_bases())
    }
    fn prove_batch(
        &self,
        params: RStr<'_>,
        assignments: RSlice<'_, &Assignment>,
        r: RSlice<'_, Fr>,
        s: RSlice<'_, Fr>,
    ) -> RResult<RVec<Proof>, PluginError> {
        guard("prove_batch", || {
            check_prove_batch(assignments.as_slice(), r.as_slice(), s.as_slice())?;
            self.0.prove_batch(params.as_str(), assignments.as_slice(), r.as_slice(), s.as_slice()).map(RVec::from)
        })
    }

    fn memory(&self) -> RResult<DeviceMemory, PluginError> {
        guard("memory", || self.0.memory())
    }

    fn proof_msms(&self, bases: ProvingBases<'_>, assignment: &Assignment) -> RResult<ProofMsms, PluginError> {
        guard("proof_msms", || {
            check_proof_msms(&bases, assignment)?;
            self.0.proof_msms(bases, assignment)
        })
    }

    fn keep_host_memory(&self, ranges: RSlice<'_, RSlice<'_, Fr>>) -> RResult<bool, PluginError> {
        guard("keep_host_memory", || {
            let ranges: Vec<&[Fr]> = ranges.iter().map(RSlice::as_slice).collect();
            self.0.keep_host_memory(&ranges)
        })
    }

    fn release_host_memory(&self, ranges: RSlice<'_, RSlice<'_, Fr>>) -> RResult<(), PluginError> {
        guard("release_host_memory", || {
            let ranges: Vec<&[Fr]> = ranges.iter().map(RSlice::as_slice).collect();
            self.0.release_host_memory(&ranges)
        })
    }
}

impl Backend for BackendBox {
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
        BackendObject_TO::msm_g1(self, bases.into(), scalars.into()).into()
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
        BackendObject_TO::msm_g2(self, bases.into(), scalars.into()).into()
    }

    fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
        BackendObject_TO::ntt(self, values.into(), direction).into()
    }

    fn compute_h(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr]) -> Result<Vec<PhaseTiming>, PluginError> {
        BackendObject_TO::compute_h(self, a.into(), b.into(), c.into()).into_result().map(RVec::into_vec)
    }

    fn keep_bases(&self, g1: &[&[G1Affine]], g2: &[&[G2Affine]]) -> Result<(), PluginError> {
        let g1: Vec<RSlice<'_, G1Affine>> = g1.iter().map(|&s| s.into()).collect();
        let g2: Vec<RSlice<'_, G2Affine>> = g2.iter().map(|&s| s.into()).collect();
        BackendObject_TO::keep_bases(self, g1.as_slice().into(), g2.as_slice().into()).into()
    }

    fn release_bases(&self) -> Result<(), PluginError> {
        BackendObject_TO::release_bases(self).into()
    }
    fn prove_batch(
        &self,
        params: &str,
        assignments: &[&Assignment],
        r: &[Fr],
        s: &[Fr],
    ) -> Result<Vec<Proof>, PluginError> {
        BackendObject_TO::prove_batch(self, params.into(), assignments.into(), r.into(), s.into())
            .into_result()
            .map(RVec::into_vec)
    }

    fn memory(&self) -> Result<DeviceMemory, PluginError> {
        BackendObject_TO::memory(self).into()
    }

    fn proof_msms(&self, bases: ProvingBases<'_>, assignment: &Assignment) -> Result<ProofMsms, PluginError> {
        BackendObject_TO::proof_msms(self, bases, assignment).into()
    }

    fn keep_host_memory(&self, ranges: &[&[Fr]]) -> Result<bool, PluginError> {
        let ranges: Vec<RSlice<'_, Fr>> = ranges.iter().map(|&r| r.into()).collect();
        BackendObject_TO::keep_host_memory(self, ranges.as_slice().into()).into()
    }

    fn release_host_memory(&self, ranges: &[&[Fr]]) -> Result<(), PluginError> {
        let ranges: Vec<RSlice<'_, Fr>> = ranges.iter().map(|&r| r.into()).collect();
        BackendObject_TO::release_host_memory(self, ranges.as_slice().into()).into()
    }
}

/// The [`PluginInfo`] of backend `T` built as `build`; used by [`export_backend!`] and by
/// hosts that embed a backend.
pub fn info<T: BackendPlugin>(build: BuildInfo) -> PluginInfo {
    T::describe().into_info(PluginKind::BACKEND, build)
}

#[doc(hidden)]
pub fn __describe<T: BackendPlugin>(build: BuildInfo) -> RResult<PluginInfo, PluginError> {
    guard("describe", || Ok(info::<T>(build)))
}

/// `backend` behind the seam a loaded plugin has: every call checked against the contract
/// and its panics caught, so that a host embedding it, or a test, sees what the host sees
/// of a loaded one.
pub fn seam<T: Backend + 'static>(backend: T) -> BackendBox {
    BackendObject_TO::from_value(Exported(backend), sabi_trait::TD_Opaque)
}

/// Opens backend `T` behind the seam a loaded plugin has ([`seam`]), its options parsed.
pub fn open_embedded<T: BackendPlugin>(request: &OpenRequest) -> Result<BackendBox, PluginError> {
    __open::<T>(request).into_result()
}

#[doc(hidden)]
pub extern "C" fn __open<T: BackendPlugin>(request: &OpenRequest) -> RResult<BackendBox, PluginError> {
    guard("open", || {
        let options = crate::options::parse("[backend.options]", &request.options)?;
        T::open(request, options).map(seam)
    })
}

#[doc(hidden)]
pub fn __module(
    describe: extern "C" fn() -> RResult<PluginInfo, PluginError>,
    open: extern "C" fn(&OpenRequest) -> RResult<BackendBox, PluginError>,
) -> BackendModuleRef {
    use abi_stable::prefix_type::PrefixTypeTrait;
    BackendModule { describe, open }.leak_into_prefix()
}

/// Exports a [`BackendPlugin`] from a `cdylib` crate: its header and its root module.
///
/// The crate must also depend on `abi_stable` (the root-module attribute names it).
#[macro_export]
macro_rules! export_backend {
    ($plugin:ty) => {
        /// The header the host reads first: magic, ABI version, kind.
        #[no_mangle]
        pub static BELLHOP_PLUGIN_HEADER: $crate::PluginHeader = $crate::PluginHeader::new($crate::PluginKind::BACKEND);

        /// The `abi_stable` root module of this backend.
        #[$crate::__private::abi_stable::export_root_module]
        pub fn bellhop_backend_module() -> $crate::backend::BackendModuleRef {
            extern "C" fn describe(
            ) -> $crate::__private::abi_stable::std_types::RResult<$crate::PluginInfo, $crate::PluginError> {
                $crate::backend::__describe::<$plugin>($crate::build_info!())
            }
            $crate::backend::__module(describe, $crate::backend::__open::<$plugin>)
        }
    };
}

/// [`Backend::proof_msms`] made of `backend`'s own primitives (`compute_h`, `msm_g1`,
/// `msm_g2`), the A and B scalars gathered from the [`Selection`]s in place: the provided
/// method, which a backend's own call is checked against. a, b and c are copied to be
/// padded (the assignment is borrowed); b's and c's copies are freed once h is computed.
/// `timings`: `h` (its parts as `h.<part>`), then each MSM by name (`msm_h` ... `msm_b_g2`).
///
/// [`Selection`]: crate::selection::Selection
pub fn proof_msms_from_primitives(
    backend: &(impl Backend + ?Sized),
    bases: ProvingBases<'_>,
    x: &Assignment,
) -> Result<ProofMsms, PluginError> {
    use std::time::Instant;

    use crate::selection::Selection;
    check_proof_msms(&bases, x)?;
    // Part `name`'s result, timed from `start`, its error named after it.
    fn part<T>(
        timings: &mut Vec<PhaseTiming>,
        name: &str,
        start: Instant,
        result: Result<T, PluginError>,
    ) -> Result<T, PluginError> {
        timings.push(PhaseTiming::new(name, start.elapsed()));
        result.map_err(|e| PluginError { message: format!("{name}: {}", e.message).into(), ..e })
    }
    let mut timings = Vec::new();
    let domain = x.a.len().next_power_of_two();
    let padded = |v: &[Fr]| {
        let mut padded = Vec::with_capacity(domain);
        padded.extend_from_slice(v);
        padded.resize(domain, Fr::default());
        padded
    };
    let start = Instant::now();
    let mut h = padded(&x.a);
    let parts = part(&mut timings, "h", start, backend.compute_h(&mut h, &mut padded(&x.b), &mut padded(&x.c)))?;
    let start = Instant::now();
    let msm_h = part(&mut timings, "msm_h", start, backend.msm_g1(&bases.h[..domain - 1], &h[..domain - 1]))?;
    drop(h);
    let start = Instant::now();
    let l = part(&mut timings, "msm_l", start, backend.msm_g1(&bases.l[..x.aux.len()], &x.aux))?;
    let start = Instant::now();
    let scalars = Selection::a_query(x).gather(&x.inputs, &x.aux);
    let a = part(&mut timings, "msm_a", start, backend.msm_g1(&bases.a[..scalars.len()], &scalars))?;
    let start = Instant::now();
    let scalars = Selection::b_query(x).gather(&x.inputs, &x.aux);
    let b_g1 = part(&mut timings, "msm_b_g1", start, backend.msm_g1(&bases.b_g1[..scalars.len()], &scalars))?;
    let start = Instant::now();
    let b_g2 = part(&mut timings, "msm_b_g2", start, backend.msm_g2(&bases.b_g2[..scalars.len()], &scalars))?;
    timings.extend(parts.into_iter().map(|t| PhaseTiming { name: format!("h.{}", t.name).into(), ..t }));
    Ok(ProofMsms { h: msm_h, l, a, b_g1, b_g2, timings: timings.into() })
}

/// Inside an `impl Backend for T`: `msm_g1`, `msm_g2`, `ntt` and `compute_h` forwarded to
/// the backend in `self.$field`, for a backend that adds calls of its own (a fused proof,
/// kept host memory) over another backend's primitives.
#[macro_export]
macro_rules! forward_primitives {
    ($field:ident) => {
        fn msm_g1(
            &self,
            bases: &[$crate::types::G1Affine],
            scalars: &[$crate::types::Fr],
        ) -> ::std::result::Result<$crate::types::G1Projective, $crate::PluginError> {
            $crate::backend::Backend::msm_g1(&self.$field, bases, scalars)
        }

        fn msm_g2(
            &self,
            bases: &[$crate::types::G2Affine],
            scalars: &[$crate::types::Fr],
        ) -> ::std::result::Result<$crate::types::G2Projective, $crate::PluginError> {
            $crate::backend::Backend::msm_g2(&self.$field, bases, scalars)
        }

        fn ntt(
            &self,
            values: &mut [$crate::types::Fr],
            direction: $crate::backend::NttDirection,
        ) -> ::std::result::Result<(), $crate::PluginError> {
            $crate::backend::Backend::ntt(&self.$field, values, direction)
        }

        fn compute_h(
            &self,
            a: &mut [$crate::types::Fr],
            b: &mut [$crate::types::Fr],
            c: &mut [$crate::types::Fr],
        ) -> ::std::result::Result<::std::vec::Vec<$crate::PhaseTiming>, $crate::PluginError> {
            $crate::backend::Backend::compute_h(&self.$field, a, b, c)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[cfg(feature = "blstrs")]
    #[test]
    fn the_two_adicity_is_frs() {
        use ff::PrimeField;
        assert_eq!(FR_TWO_ADICITY, blstrs::Scalar::S);
    }

    /// A backend that trusts the seam with everything.
    struct Trusting;

    impl Backend for Trusting {
        fn msm_g1(&self, _: &[G1Affine], _: &[Fr]) -> Result<G1Projective, PluginError> {
            panic!("the seam let an MSM through")
        }

        fn msm_g2(&self, _: &[G2Affine], _: &[Fr]) -> Result<G2Projective, PluginError> {
            panic!("the seam let an MSM through")
        }

        fn ntt(&self, _: &mut [Fr], _: NttDirection) -> Result<(), PluginError> {
            panic!("the seam let an NTT through")
        }
    }

    #[test]
    fn the_seam_refuses_broken_contracts_before_the_backend_sees_them() {
        let boxed = seam(Trusting);
        let backend: &dyn Backend = &boxed;
        let e = backend.msm_g1(&[G1Affine::default(); 2], &[Fr::default(); 3]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::INVALID_INPUT);
        assert!(e.message.contains("msm_g1: 2 bases but 3 scalars"), "{e}");
        let e = backend.msm_g2(&[], &[Fr::default()]).unwrap_err();
        assert!(e.message.contains("msm_g2: 0 bases but 1 scalars"), "{e}");
        for n in [0, 3, 12] {
            let e = backend.ntt(&mut vec![Fr::default(); n], NttDirection::Forward).unwrap_err();
            assert_eq!(e.kind, ErrorKind::INVALID_INPUT, "length {n}: {e}");
        }
        let (mut a, mut b, mut c) = (vec![Fr::default(); 8], vec![Fr::default(); 8], vec![Fr::default(); 4]);
        let e = backend.compute_h(&mut a, &mut b, &mut c).unwrap_err();
        assert!(e.message.contains("got 8, 8 and 4"), "{e}");
        let e = backend.prove_batch("p", &[], &[Fr::default()], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::INVALID_INPUT, "{e}");
        // What meets the contract reaches the backend (and its panic comes back as an error).
        let e = backend.ntt(&mut [Fr::default(); 4], NttDirection::Forward).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PANIC, "{e}");
    }

    #[test]
    fn the_seam_refuses_proof_msms_calls_that_break_the_contract() {
        use crate::strategy::Density;
        let boxed = seam(Trusting);
        let backend: &dyn Backend = &boxed;
        let assignment = Assignment {
            a: vec![Fr::default(); 3].into(),
            b: vec![Fr::default(); 3].into(),
            c: vec![Fr::default(); 3].into(),
            inputs: vec![Fr::default(); 2].into(),
            aux: vec![Fr::default(); 5].into(),
            a_aux_density: Density::from_bits([true, false, true, true, false]),
            b_input_density: Density::from_bits([true, true]),
            b_aux_density: Density::from_bits([false; 5]),
        };
        let (g1, g2) = ([G1Affine::default(); 5], [G2Affine::default(); 2]);
        let bases = ProvingBases {
            h: g1[..3].into(),
            l: g1[..5].into(),
            a: g1[..5].into(),
            b_g1: g1[..2].into(),
            b_g2: g2[..2].into(),
        };
        assert!(check_proof_msms(&bases, &assignment).is_ok());
        let short = [
            (ProvingBases { h: g1[..2].into(), ..bases }, "2 h bases for 3 scalars"),
            (ProvingBases { l: g1[..4].into(), ..bases }, "4 l bases for 5 scalars"),
            (ProvingBases { a: g1[..4].into(), ..bases }, "4 a bases for 5 scalars"),
            (ProvingBases { b_g2: g2[..1].into(), ..bases }, "1 b_g2 bases for 2 scalars"),
        ];
        for (bases, expected) in short {
            let e = backend.proof_msms(bases, &assignment).unwrap_err();
            assert!(e.kind == ErrorKind::INVALID_INPUT && e.message.contains(expected), "{e}");
        }
        let mut malformed = assignment.clone();
        malformed.c.pop();
        let e = backend.proof_msms(bases, &malformed).unwrap_err();
        assert!(e.kind == ErrorKind::INVALID_INPUT && e.message.contains("malformed"), "{e}");
        // What meets the contract reaches the backend, whose provided call runs its
        // primitives (and the NTT's panic comes back as an error).
        assert_eq!(backend.proof_msms(bases, &assignment).unwrap_err().kind, ErrorKind::PANIC);
    }

    #[test]
    fn input_checks_refuse_what_no_backend_can_take() {
        assert_eq!(ntt_log2(1).unwrap(), 0);
        assert_eq!(ntt_log2(1024).unwrap(), 10);
        for n in [0, 3, 1023, 1 << 33] {
            assert_eq!(ntt_log2(n).unwrap_err().kind, ErrorKind::INVALID_INPUT, "length {n}");
        }
        assert!(check_compute_h(8, 8, 8).is_ok());
        let e = check_compute_h(8, 8, 4).unwrap_err();
        assert!(e.message.contains("got 8, 8 and 4"), "{e}");
        assert!(check_msm_lengths("msm_g1", 2, 2).is_ok());
        assert!(check_msm_lengths("msm_g1", 2, 3).unwrap_err().message.contains("2 bases but 3 scalars"));
    }
}
