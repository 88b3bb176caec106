//! The SDK for `bellhop` plugins: write a backend or a strategy as a plain Rust trait and
//! export it as a shared library the host loads.
//!
//! - a **backend** ([`backend::Backend`]: `msm_g1`, `msm_g2` and `ntt` required,
//!   `compute_h` provided) over slices of the `repr(C)` field and curve types in
//!   [`types`], which convert without copying to blstrs' ([`cast_slice`]);
//! - a **strategy** ([`strategy::Strategy`]) that synthesizes circuit jobs into
//!   [`strategy::Assignment`]s.
//!
//! [`export_backend!`] and [`export_strategy!`] put the plugin behind the seam: every call
//! is checked against the contract before the plugin sees it, its options are parsed into
//! its typed `Options`, and panics come back as [`PluginError`]s. What crosses the boundary
//! is defined, and frozen, in the ABI crate (`bellhop-plugin-sdk`), which this crate
//! re-exports; the SDK itself may change without a new ABI version.

pub mod backend;
pub mod build;
mod convert;
mod description;
pub mod dirs;
mod guard;
pub mod options;
pub mod pool;
pub mod selection;
pub mod strategy;

pub use bellhop_plugin_api::{
    types, version, AbiVersion, BuildInfo, Capabilities, DeviceInfo, DeviceMemory, ErrorKind, OpenRequest, PhaseTiming,
    PluginError, PluginHeader, PluginInfo, PluginKind, ABI_VERSION, PLUGIN_HEADER_SYMBOL, PLUGIN_MAGIC,
};
pub use convert::SameLayout;
#[cfg(feature = "blstrs")]
pub use convert::{cast, cast_slice, cast_slice_mut, cast_vec};
pub use description::Description;
pub use guard::panic_message;

/// Re-exports used by the export macros; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use abi_stable;
}
