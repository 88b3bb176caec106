//! The synthesis seam: circuit jobs in, Groth16 assignments out.
//!
//! bellpepper's `ConstraintSystem` is generic and closure-based, so circuits cannot
//! cross a dynamic-library boundary. A strategy plugin links the circuit catalog itself
//! and takes [`Job`]s that name a circuit; it returns one [`Assignment`] per job. Every
//! strategy must return the identical assignment for the same job; only speed and memory
//! differ.

use abi_stable::{
    sabi_trait,
    std_types::{RResult, RSlice, RSliceMut, RString, RVec},
};

use serde::de::DeserializeOwned;

pub use bellhop_plugin_api::strategy::{
    Assignment, AssignmentBuffers, Density, Job, StrategyBox, StrategyModule, StrategyModuleRef, StrategyObject,
    StrategyObject_TO, Synthesized,
};

use crate::{
    guard::guard, types::Fr, BuildInfo, Description, OpenRequest, PhaseTiming, PluginError, PluginInfo, PluginKind,
};

/// What one `synthesize` call returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Synthesis {
    /// One assignment per job, in order.
    pub assignments: Vec<Assignment>,
    /// The strategy's own sub-phase timings for the batch.
    pub timings: Vec<PhaseTiming>,
    /// Things the operator should know (e.g. a corrupt cache that was rebuilt); the host
    /// logs them as warnings, since plugins cannot reach its log.
    pub warnings: Vec<String>,
}

/// Memory lent to synthesize one job into ([`Strategy::synthesize_into`]).
#[derive(Debug)]
pub struct Buffers<'a> {
    /// The A query's evaluations, one per constraint.
    pub a: &'a mut [Fr],
    /// The B query's, as long as `a`.
    pub b: &'a mut [Fr],
    /// The C query's, as long as `a`.
    pub c: &'a mut [Fr],
    /// The aux variables.
    pub aux: &'a mut [Fr],
}

impl Buffers<'_> {
    /// Checks that these buffers are of the sizes of job `index`, which has `constraints`
    /// constraints and `aux` aux variables (an `INVALID_INPUT` error naming both if not).
    pub fn check_fits(&self, index: usize, constraints: usize, aux: usize) -> Result<(), PluginError> {
        if self.a.len() == constraints && self.aux.len() == aux {
            return Ok(());
        }
        Err(PluginError::invalid_input(format!(
            "job {index}: the buffers lent for it hold {} constraints and {} aux variables, but its circuit has \
             {constraints} and {aux}; lend buffers of the job's own sizes",
            self.a.len(),
            self.aux.len()
        )))
    }

    /// Moves a, b, c and aux of `assignment`, job `index`, into these buffers, leaving
    /// them empty in it.
    pub fn take_from(&mut self, index: usize, assignment: &mut Assignment) -> Result<(), PluginError> {
        self.check_fits(index, assignment.a.len(), assignment.aux.len())?;
        for (into, from) in [
            (&mut *self.a, &mut assignment.a),
            (&mut *self.b, &mut assignment.b),
            (&mut *self.c, &mut assignment.c),
            (&mut *self.aux, &mut assignment.aux),
        ] {
            into.copy_from_slice(from);
            *from = RVec::new();
        }
        Ok(())
    }
}

/// The calls of an opened strategy.
pub trait Strategy: Send + Sync {
    /// Synthesizes each job; the result has one assignment per job, in order.
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError>;

    /// ABI 1.6. As [`Strategy::synthesize`], with job `i`'s a, b, c and aux written into
    /// `into[i]` and left empty in its assignment. Behind the seam there is one buffer per
    /// job, its a, b and c of one length; a strategy refuses buffers of other sizes than
    /// its job's ([`Buffers::check_fits`]). The provided method synthesizes and copies; a
    /// strategy overrides it to write in place.
    fn synthesize_into(&self, jobs: &[Job], into: &mut [Buffers<'_>]) -> Result<Synthesis, PluginError> {
        let mut out = self.synthesize(jobs)?;
        for (index, (assignment, buffers)) in out.assignments.iter_mut().zip(into).enumerate() {
            buffers.take_from(index, assignment)?;
        }
        Ok(out)
    }
}

/// Refuses a `synthesize_into` call whose buffers do not match its jobs: one per job, A, B
/// and C of one length in each ([`ErrorKind::INVALID_INPUT`](crate::ErrorKind)).
fn check_buffers(jobs: usize, into: &[AssignmentBuffers<'_>]) -> Result<(), PluginError> {
    if into.len() != jobs {
        return Err(PluginError::invalid_input(format!(
            "synthesize_into: {jobs} jobs but {} buffers; lend one per job",
            into.len()
        )));
    }
    if let Some(i) = into.iter().position(|b| b.b.len() != b.a.len() || b.c.len() != b.a.len()) {
        let b = &into[i];
        return Err(PluginError::invalid_input(format!(
            "synthesize_into: buffer {i} holds A, B and C of {}, {} and {} entries; they must be of one length",
            b.a.len(),
            b.b.len(),
            b.c.len()
        )));
    }
    Ok(())
}

impl Synthesis {
    fn into_abi(self) -> Synthesized {
        Synthesized {
            assignments: self.assignments.into(),
            timings: self.timings.into(),
            warnings: self.warnings.into_iter().map(RString::from).collect(),
        }
    }

    fn from_abi(out: Synthesized) -> Self {
        Self {
            assignments: out.assignments.into_vec(),
            timings: out.timings.into_vec(),
            warnings: out.warnings.into_iter().map(String::from).collect(),
        }
    }
}

/// How a strategy is described and opened; implemented next to [`Strategy`] by authors.
pub trait StrategyPlugin: Strategy + Sized + 'static {
    /// Its `[synthesis.options]`: a `serde` struct with `#[serde(deny_unknown_fields)]`
    /// (see [`crate::options`]), or [`NoOptions`](crate::options::NoOptions).
    type Options: DeserializeOwned;

    /// Name and capabilities.
    fn describe() -> Description;

    /// Opens the strategy with the options the operator set, already parsed, on
    /// `request.threads` threads.
    fn open(request: &OpenRequest, options: Self::Options) -> Result<Self, PluginError>;
}

struct Exported<T>(T);

impl<T: Strategy> StrategyObject for Exported<T> {
    fn synthesize(&self, jobs: RSlice<'_, Job>) -> RResult<Synthesized, PluginError> {
        guard("synthesize", || self.0.synthesize(jobs.as_slice()).map(Synthesis::into_abi))
    }

    fn synthesize_into(
        &self,
        jobs: RSlice<'_, Job>,
        mut into: RSliceMut<'_, AssignmentBuffers<'_>>,
    ) -> RResult<Synthesized, PluginError> {
        guard("synthesize_into", || {
            check_buffers(jobs.len(), &into)?;
            let mut buffers: Vec<Buffers<'_>> = into
                .iter_mut()
                .map(|b| Buffers {
                    a: b.a.as_mut_slice(),
                    b: b.b.as_mut_slice(),
                    c: b.c.as_mut_slice(),
                    aux: b.aux.as_mut_slice(),
                })
                .collect();
            self.0.synthesize_into(jobs.as_slice(), &mut buffers).map(Synthesis::into_abi)
        })
    }
}

impl Strategy for StrategyBox {
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError> {
        StrategyObject_TO::synthesize(self, jobs.into()).into_result().map(Synthesis::from_abi)
    }

    fn synthesize_into(&self, jobs: &[Job], into: &mut [Buffers<'_>]) -> Result<Synthesis, PluginError> {
        let mut buffers: Vec<AssignmentBuffers<'_>> = into
            .iter_mut()
            .map(|b| AssignmentBuffers {
                a: (&mut *b.a).into(),
                b: (&mut *b.b).into(),
                c: (&mut *b.c).into(),
                aux: (&mut *b.aux).into(),
            })
            .collect();
        StrategyObject_TO::synthesize_into(self, jobs.into(), buffers.as_mut_slice().into())
            .into_result()
            .map(Synthesis::from_abi)
    }
}

/// The [`PluginInfo`] of strategy `T` built as `build`.
pub fn info<T: StrategyPlugin>(build: BuildInfo) -> PluginInfo {
    T::describe().into_info(PluginKind::STRATEGY, build)
}

#[doc(hidden)]
pub fn __describe<T: StrategyPlugin>(build: BuildInfo) -> RResult<PluginInfo, PluginError> {
    guard("describe", || Ok(info::<T>(build)))
}

/// Opens strategy `T` behind the panic guard and ABI object a loaded plugin has, so that a
/// host embedding it sees its panics as errors just as it would a loaded one's.
pub fn open_embedded<T: StrategyPlugin>(request: &OpenRequest) -> Result<StrategyBox, PluginError> {
    __open::<T>(request).into_result()
}

#[doc(hidden)]
pub extern "C" fn __open<T: StrategyPlugin>(request: &OpenRequest) -> RResult<StrategyBox, PluginError> {
    guard("open", || {
        let options = crate::options::parse("[synthesis.options]", &request.options)?;
        T::open(request, options).map(|s| StrategyObject_TO::from_value(Exported(s), sabi_trait::TD_Opaque))
    })
}

#[doc(hidden)]
pub fn __module(
    describe: extern "C" fn() -> RResult<PluginInfo, PluginError>,
    open: extern "C" fn(&OpenRequest) -> RResult<StrategyBox, PluginError>,
) -> StrategyModuleRef {
    use abi_stable::prefix_type::PrefixTypeTrait;
    StrategyModule { describe, open }.leak_into_prefix()
}

/// Exports a [`StrategyPlugin`] from a `cdylib` crate: its header and its root module.
///
/// The crate must also depend on `abi_stable` (the root-module attribute names it).
#[macro_export]
macro_rules! export_strategy {
    ($plugin:ty) => {
        /// The header the host reads first: magic, ABI version, kind.
        #[no_mangle]
        pub static BELLHOP_PLUGIN_HEADER: $crate::PluginHeader =
            $crate::PluginHeader::new($crate::PluginKind::STRATEGY);

        /// The `abi_stable` root module of this strategy.
        #[$crate::__private::abi_stable::export_root_module]
        pub fn bellhop_strategy_module() -> $crate::strategy::StrategyModuleRef {
            extern "C" fn describe(
            ) -> $crate::__private::abi_stable::std_types::RResult<$crate::PluginInfo, $crate::PluginError> {
                $crate::strategy::__describe::<$plugin>($crate::build_info!())
            }
            $crate::strategy::__module(describe, $crate::strategy::__open::<$plugin>)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Capabilities, ErrorKind};

    struct Panicking;

    impl Strategy for Panicking {
        fn synthesize(&self, _: &[Job]) -> Result<Synthesis, PluginError> {
            panic!("a bug in the strategy")
        }
    }

    impl StrategyPlugin for Panicking {
        type Options = crate::options::NoOptions;

        fn describe() -> Description {
            Description {
                name: "panicking".into(),
                description: String::new(),
                capabilities: Capabilities(0),
                devices: Vec::new(),
            }
        }

        fn open(_: &OpenRequest, _: Self::Options) -> Result<Self, PluginError> {
            Ok(Panicking)
        }
    }

    #[test]
    fn an_embedded_strategy_panics_into_an_error() {
        let request = OpenRequest { device: 0, threads: 0, options: "".into() };
        let strategy = open_embedded::<Panicking>(&request).unwrap();
        let e = Strategy::synthesize(&strategy, &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PANIC);
        assert!(e.message.contains("a bug in the strategy"), "{e}");
    }
}
