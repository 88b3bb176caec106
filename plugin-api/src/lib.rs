//! The frozen ABI between the `bellhop` host and its plugins: what crosses the boundary
//! and nothing else. Plugin authors use the SDK (`bellhop-plugin-sdk`), which builds these
//! objects from plain Rust traits and re-exports everything here.
//!
//! A plugin is a shared library of one of two kinds:
//! - a **backend** ([`backend`]): MSM on G1 and G2, NTTs and `compute_h`, over slices
//!   of the `repr(C)` field and curve types in [`types`];
//! - a **strategy** ([`strategy`]): synthesizes circuit jobs into [`strategy::Assignment`]s.
//!
//! Every plugin exports two symbols: a fixed-layout [`PluginHeader`] (magic, ABI version,
//! kind) that the host reads first, so that a wrong file, a wrong kind or an ABI mismatch
//! gets a clear error, and an `abi_stable` root module whose layout `abi_stable` checks on
//! load.
//!
//! `abi_stable` checks each type by its name and by this crate's package name and version:
//! the crate keeps the name `bellhop-plugin-api`, and its types their names, for as long
//! as the major ABI version is 1. See [`version`] for what a minor version may add and
//! what needs a major one.

pub mod backend;
mod error;
mod info;
pub mod strategy;
pub mod types;
pub mod version;

pub use error::{ErrorKind, PluginError};
pub use info::{
    BuildInfo, Capabilities, DeviceInfo, DeviceMemory, OpenRequest, PhaseTiming, PluginHeader, PluginInfo, PluginKind,
    PLUGIN_HEADER_SYMBOL, PLUGIN_MAGIC,
};
pub use version::{AbiVersion, ABI_VERSION};
