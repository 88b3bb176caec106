//! The strategy's side of the ABI: jobs in, Groth16 assignments out.
//!
//! bellpepper's `ConstraintSystem` is generic and closure-based, so circuits cannot
//! cross a dynamic-library boundary. A strategy plugin links the circuit catalog itself
//! and takes [`Job`]s that name a circuit; it returns one [`Assignment`] per job. Every
//! strategy must return the identical assignment for the same job; only speed and memory
//! differ. Authors implement the SDK's `Strategy` trait, which builds the object here.

use abi_stable::{
    library::RootModule,
    sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RBox, RResult, RResult::RErr, RSlice, RSliceMut, RString, RVec},
    StableAbi,
};

use crate::{types::Fr, version::ABI_VERSION_STRINGS, OpenRequest, PhaseTiming, PluginError, PluginInfo};

/// One circuit instance to synthesize.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// A circuit of the catalog, e.g. `chain:65536` or `sha256-merkle:10`.
    pub circuit: RString,
    /// The seed its witness is derived from; for a circuit that reads `input` (Filecoin's),
    /// the partition of the input to prove.
    pub seed: u64,
    /// Extra input the circuit reads (e.g. a Filecoin C1 output); empty for most.
    pub input: RVec<u8>,
}

/// A density bitmap: bit `i` (LSB-first within each word) says whether variable `i` is
/// used in the query. Bits past `len` are zero.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    /// The bits, 64 to a word.
    pub words: RVec<u64>,
    /// The number of variables.
    pub len: u64,
}

impl Density {
    /// Whether variable `i` is used.
    pub fn get(&self, i: usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// The number of variables used.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Builds a bitmap of `len` variables from the indices of the used ones.
    pub fn from_bits(bits: impl IntoIterator<Item = bool>) -> Self {
        let mut words = Vec::new();
        let mut len = 0u64;
        for bit in bits {
            if len % 64 == 0 {
                words.push(0u64);
            }
            if bit {
                *words.last_mut().expect("pushed above") |= 1 << (len % 64);
            }
            len += 1;
        }
        Self { words: words.into(), len }
    }
}

/// What Groth16 needs of a synthesized circuit, as bellperson's `ProvingAssignment` holds it.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, Default, PartialEq, Eq)]
pub struct Assignment {
    /// The A query evaluated at the witness, one entry per constraint (input constraints
    /// included), not yet padded.
    pub a: RVec<Fr>,
    /// The B query evaluated at the witness.
    pub b: RVec<Fr>,
    /// The C query evaluated at the witness.
    pub c: RVec<Fr>,
    /// Public inputs; `inputs[0]` is the constant one.
    pub inputs: RVec<Fr>,
    /// Private (auxiliary) variables.
    pub aux: RVec<Fr>,
    /// Which aux variables appear in A.
    pub a_aux_density: Density,
    /// Which inputs appear in B.
    pub b_input_density: Density,
    /// Which aux variables appear in B.
    pub b_aux_density: Density,
}

impl Assignment {
    /// Checks the shape every consumer of an assignment relies on: A, B and C of one
    /// length, at least one constraint, and each density bitmap exactly as long as the
    /// variables it marks (its words covering its bits) with no bit set past them. A
    /// backend reading the bitmaps by their lengths, as supraseal-c2 does, is then in bounds.
    pub fn check_shape(&self) -> Result<(), String> {
        let (a, b, c) = (self.a.len(), self.b.len(), self.c.len());
        if a != b || b != c {
            return Err(format!("A, B and C have {a}, {b} and {c} entries; they must be of one length"));
        }
        if a == 0 {
            return Err("it has no constraints".into());
        }
        let densities = [
            ("A-aux", &self.a_aux_density, self.aux.len()),
            ("B-input", &self.b_input_density, self.inputs.len()),
            ("B-aux", &self.b_aux_density, self.aux.len()),
        ];
        for (name, density, variables) in densities {
            if density.len != variables as u64 || density.words.len() != variables.div_ceil(64) {
                return Err(format!(
                    "the {name} density marks {} variables in {} words, but there are {variables}",
                    density.len,
                    density.words.len()
                ));
            }
            if variables % 64 != 0 && density.words.last().is_some_and(|w| w >> (variables % 64) != 0) {
                return Err(format!("the {name} density has bits set past its {variables} variables"));
            }
        }
        Ok(())
    }
}

/// What one `synthesize` call returns, as it crosses the ABI.
#[repr(C)]
#[derive(StableAbi, Debug)]
pub struct Synthesized {
    /// One assignment per job.
    pub assignments: RVec<Assignment>,
    /// The strategy's sub-phase timings.
    pub timings: RVec<PhaseTiming>,
    /// Warnings for the operator.
    pub warnings: RVec<RString>,
}

/// Memory the host lends a strategy to synthesize one job into (ABI 1.6): A, B and C of
/// one length, as many as the job's constraints, and its aux variables, each exactly as
/// long as the job needs. The host keeps these buffers across jobs (a GPU backend keeps
/// them page-locked), so a strategy writes every element and never reallocates.
#[repr(C)]
#[derive(StableAbi, Debug)]
pub struct AssignmentBuffers<'a> {
    /// The A query evaluated at the witness.
    pub a: RSliceMut<'a, Fr>,
    /// The B query evaluated at the witness.
    pub b: RSliceMut<'a, Fr>,
    /// The C query evaluated at the witness.
    pub c: RSliceMut<'a, Fr>,
    /// The private (auxiliary) variables.
    pub aux: RSliceMut<'a, Fr>,
}

/// An opened strategy, FFI-safe; the host reaches it as a [`StrategyBox`].
#[sabi_trait]
pub trait StrategyObject: Send + Sync {
    /// Synthesizes each job; one assignment per job, in order.
    #[sabi(last_prefix_field)]
    fn synthesize(&self, jobs: RSlice<'_, Job>) -> RResult<Synthesized, PluginError>;

    /// As `synthesize`, with job `i`'s a, b, c and aux written into `into[i]` (one per job)
    /// and left empty in its assignment. ABI 1.6: a 1.5 plugin answers with this default.
    fn synthesize_into(
        &self,
        jobs: RSlice<'_, Job>,
        into: RSliceMut<'_, AssignmentBuffers<'_>>,
    ) -> RResult<Synthesized, PluginError> {
        let _ = (jobs, into);
        RErr(PluginError::unsupported("synthesize_into"))
    }
}

/// An opened strategy as it crosses the ABI.
pub type StrategyBox = StrategyObject_TO<'static, RBox<()>>;

/// The root module a strategy plugin exports.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = StrategyModuleRef)))]
#[sabi(missing_field(panic))]
pub struct StrategyModule {
    /// Describes the plugin.
    pub describe: extern "C" fn() -> RResult<PluginInfo, PluginError>,
    /// Opens the strategy.
    #[sabi(last_prefix_field)]
    pub open: extern "C" fn(request: &OpenRequest) -> RResult<StrategyBox, PluginError>,
}

impl RootModule for StrategyModuleRef {
    abi_stable::declare_root_module_statics! {StrategyModuleRef}
    const BASE_NAME: &'static str = "bellhop_strategy";
    const NAME: &'static str = "bellhop strategy";
    const VERSION_STRINGS: VersionStrings = ABI_VERSION_STRINGS;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two constraints, the constant one and one input, three aux variables.
    fn well_formed() -> Assignment {
        let zeros = |n| RVec::from(vec![Fr::default(); n]);
        Assignment {
            a: zeros(2),
            b: zeros(2),
            c: zeros(2),
            inputs: zeros(2),
            aux: zeros(3),
            a_aux_density: Density::from_bits([true, false, true]),
            b_input_density: Density::from_bits([true, true]),
            b_aux_density: Density::from_bits([false, false, true]),
        }
    }

    #[test]
    fn malformed_assignments_are_named() {
        assert_eq!(well_formed().check_shape(), Ok(()));
        let mut short_c = well_formed();
        short_c.c.pop();
        assert!(short_c.check_shape().unwrap_err().contains("2, 2 and 1 entries"));
        let empty = Assignment { a: RVec::new(), b: RVec::new(), c: RVec::new(), ..well_formed() };
        assert!(empty.check_shape().unwrap_err().contains("no constraints"));
        let mut long_bits = well_formed();
        long_bits.a_aux_density.len = 64 * 3;
        assert!(long_bits.check_shape().unwrap_err().contains("A-aux density marks 192 variables in 1 words"));
        let mut no_words = well_formed();
        no_words.b_aux_density.words = RVec::new();
        assert!(no_words.check_shape().unwrap_err().contains("B-aux density marks 3 variables in 0 words"));
        let mut stray = well_formed();
        stray.b_input_density.words[0] |= 1 << 5;
        assert!(stray.check_shape().unwrap_err().contains("B-input density has bits set past its 2 variables"));
    }

    #[test]
    fn density_bits_round_trip() {
        let bits = [true, false, true, true, false];
        let d = Density::from_bits(bits.iter().copied().chain(std::iter::repeat(false).take(70)));
        assert_eq!(d.len, 75);
        assert_eq!(d.words.len(), 2);
        assert_eq!(d.count(), 3);
        assert!(d.get(0) && !d.get(1) && d.get(3) && !d.get(74) && !d.get(200));
    }
}
