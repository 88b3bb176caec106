//! The synthesis seam: circuit jobs in, Groth16 assignments out.
//!
//! bellpepper's `ConstraintSystem` is generic and closure-based, so circuits cannot
//! cross a dynamic-library boundary. A strategy plugin links the circuit catalog itself
//! and takes [`Job`]s that name a circuit; it returns one [`Assignment`] per job. Every
//! strategy must return the identical assignment for the same job; only speed and memory
//! differ.

use abi_stable::{
    sabi_trait,
    std_types::{RResult, RSlice, RString},
};

use serde::de::DeserializeOwned;

pub use bellhop_plugin_api::strategy::{
    Assignment, Density, Job, StrategyBox, StrategyModule, StrategyModuleRef, StrategyObject, StrategyObject_TO,
    Synthesized,
};

use crate::{guard::guard, BuildInfo, Description, OpenRequest, PhaseTiming, PluginError, PluginInfo, PluginKind};

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

/// The calls of an opened strategy.
pub trait Strategy: Send + Sync {
    /// Synthesizes each job; the result has one assignment per job, in order.
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError>;
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
        guard("synthesize", || {
            let out = self.0.synthesize(jobs.as_slice())?;
            Ok(Synthesized {
                assignments: out.assignments.into(),
                timings: out.timings.into(),
                warnings: out.warnings.into_iter().map(RString::from).collect(),
            })
        })
    }
}

impl Strategy for StrategyBox {
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError> {
        let out = StrategyObject_TO::synthesize(self, jobs.into()).into_result()?;
        Ok(Synthesis {
            assignments: out.assignments.into_vec(),
            timings: out.timings.into_vec(),
            warnings: out.warnings.into_iter().map(String::from).collect(),
        })
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
