//! The plugins compiled into the `bellhop` binary: the CPU backend and the baseline strategy.

use bellhop_cpu::CpuBackend;
use bellhop_plugin_api::{
    backend::{self, Backend, BackendPlugin},
    build_info,
};

use crate::plugins::{Backends, Plugin, Strategies};

/// The embedded CPU backend, named `cpu`.
pub(crate) fn cpu_backend() -> Plugin<Backends> {
    Plugin::embedded(backend::info::<CpuBackend>(build_info!()), |request| {
        CpuBackend::open(request).map(|b| Box::new(b) as Box<dyn Backend>)
    })
}

/// The embedded strategies.
pub(crate) fn strategies() -> Vec<Plugin<Strategies>> {
    Vec::new()
}
