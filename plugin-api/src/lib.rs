//! The stable ABI between the `bellhop` host and its plugins.
//!
//! A plugin is a shared library of one of two kinds:
//! - a **backend** ([`backend`]): MSM on G1 and G2, NTTs and `compute_h`, over slices
//!   of the `repr(C)` field and curve types in [`types`];
//! - a **strategy** ([`strategy`]): synthesizes circuit jobs into [`strategy::Assignment`]s.
//!
//! Every plugin exports two symbols: a fixed-layout [`PluginHeader`] (magic, ABI version,
//! kind) that the host reads first, so that a wrong file, a wrong kind or an ABI mismatch
//! gets a clear error, and an `abi_stable` root module whose layout `abi_stable` checks on
//! load. Plugin authors implement a plain Rust trait and export it with
//! [`export_backend!`] or [`export_strategy!`]; the macros catch panics at the boundary and
//! turn them into [`PluginError`]s.
//!
//! See [`version`] for what a minor ABI version may add and what needs a major one.

pub mod backend;
pub mod build;
mod convert;
pub mod dirs;
mod error;
mod guard;
mod info;
pub mod options;
#[cfg(feature = "rayon")]
pub mod pool;
pub mod strategy;
pub mod types;
pub mod version;

pub use convert::SameLayout;
#[cfg(feature = "blstrs")]
pub use convert::{cast, cast_slice, cast_slice_mut, cast_vec};
pub use error::{ErrorKind, PluginError};
pub use guard::panic_message;
pub use info::{
    BuildInfo, Capabilities, Description, DeviceInfo, DeviceMemory, OpenRequest, PhaseTiming, PluginHeader, PluginInfo,
    PluginKind, PLUGIN_HEADER_SYMBOL, PLUGIN_MAGIC,
};
pub use version::{AbiVersion, ABI_VERSION};

/// Re-exports used by the export macros; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use abi_stable;
}
