//! The plugins compiled into the `bellhop` binary: the CPU backend and the baseline strategy,
//! opened behind the same panic guard and ABI objects as loaded plugins.

use bellhop_cpu::CpuBackend;
use bellhop_plugin_api::{
    backend::{self, Backend},
    build_info,
    strategy::{self, Strategy},
};
use bellhop_strategy_baseline::Baseline;

use crate::plugins::{Backends, Plugin, Strategies};

/// The embedded CPU backend, named `cpu`.
pub(crate) fn cpu_backend() -> Plugin<Backends> {
    Plugin::embedded(backend::info::<CpuBackend>(build_info!()), |request| {
        backend::open_embedded::<CpuBackend>(request).map(|b| Box::new(b) as Box<dyn Backend>)
    })
}

/// The embedded strategies: `baseline`.
pub(crate) fn strategies() -> Vec<Plugin<Strategies>> {
    vec![Plugin::embedded(strategy::info::<Baseline>(build_info!()), |request| {
        strategy::open_embedded::<Baseline>(request).map(|s| Box::new(s) as Box<dyn Strategy>)
    })]
}
