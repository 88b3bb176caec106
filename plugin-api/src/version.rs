//! The plugin ABI version and the rules for changing it.
//!
//! The ABI version is `major.minor`. A host loads a plugin of its own major whose minor
//! is the host's or newer: `abi_stable` lets a plugin's objects and modules have more
//! fields than the host knows (the host ignores them), but not fewer, so a plugin built
//! before a minor bump must be rebuilt for hosts of the new minor.
//!
//! **A minor version may** (and must, when it does any of these, bump the minor):
//! - append fields to the end of a root module (`BackendModule`, `StrategyModule`), after
//!   the field marked `#[sabi(last_prefix_field)]`; an older host ignores them;
//! - append methods to the end of a `#[sabi_trait]` object, each with a default body (a
//!   no-op, or an [`ErrorKind::UNSUPPORTED`](crate::ErrorKind::UNSUPPORTED) error), so that
//!   a plugin that does not implement them still answers once rebuilt;
//! - add [`Capabilities`](crate::Capabilities) bits and [`ErrorKind`](crate::ErrorKind)
//!   values (both are plain integers, so an older host shows unknown ones by number).
//!
//! **A major version is needed** for anything else: changing, reordering or removing a
//! field, method, argument or type; changing what a value means (Montgomery form, the
//! encoding of the point at infinity, the coset generator); changing the
//! [`PluginHeader`](crate::PluginHeader), which is frozen for all versions so that any host
//! can read any plugin's version.
//!
//! `abi_stable` enforces the same rule on the root module: it refuses another major
//! version and checks the layout of every type that crosses.
//!
//! History:
//! - 1.0: `msm_g1`, `msm_g2`, `ntt`, `compute_h`; strategies' `synthesize`.
//! - 1.1: `Backend::keep_bases` / `release_bases` (the host's promise that the parameter
//!   bases stay put, so a GPU backend keeps them resident).
//! - 1.2: `Backend::prove_batch` and [`Capabilities::PROVE_BATCH`](crate::Capabilities):
//!   whole proofs of a batch in one fused call (supraseal-c2).
//! - 1.3: `Backend::memory`: the opened device's total and free memory, for the daemon's
//!   status.
//! - 1.4: `Backend::proof_msms` and [`Capabilities::PROOF_MSMS`](crate::Capabilities): h
//!   and the five MSMs of a proof in one call, so that a GPU backend keeps the data on
//!   its device between them.
//! - 1.5: [`ErrorKind::OUT_OF_MEMORY`](crate::ErrorKind::OUT_OF_MEMORY), told apart from a
//!   failing device.
//! - 1.6: `Strategy::synthesize_into` (a, b, c and aux written into buffers the host
//!   lends) and `Backend::keep_host_memory` / `release_host_memory` (the host's promise
//!   that those buffers stay allocated, so a GPU backend keeps them page-locked).

use std::fmt;

use abi_stable::{sabi_types::VersionStrings, StableAbi};

/// A plugin ABI version: plugins load when `major` matches the host's.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AbiVersion {
    /// Incompatible changes bump this.
    pub major: u32,
    /// Compatible additions bump this.
    pub minor: u32,
}

/// The ABI version this crate defines.
pub const ABI_VERSION: AbiVersion = AbiVersion { major: 1, minor: 6 };

/// [`ABI_VERSION`] as `abi_stable` version strings, for the root modules.
pub(crate) const ABI_VERSION_STRINGS: VersionStrings = VersionStrings::new("1.6.0");

impl AbiVersion {
    /// Whether a plugin built for `self` can be loaded by a host speaking `host`: the same
    /// major, and a minor no older than the host's.
    pub const fn loads_into(self, host: AbiVersion) -> bool {
        self.major == host.major && self.minor >= host.minor
    }
}

impl fmt::Display for AbiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_strings_match_abi_version() {
        let expected = format!("{}.{}.0", ABI_VERSION.major, ABI_VERSION.minor);
        assert_eq!(ABI_VERSION_STRINGS.version.as_str(), expected);
    }

    #[test]
    fn same_major_and_no_older_minor() {
        let host = AbiVersion { major: 1, minor: 5 };
        assert!(AbiVersion { major: 1, minor: 5 }.loads_into(host));
        assert!(AbiVersion { major: 1, minor: 9 }.loads_into(host));
        assert!(!AbiVersion { major: 1, minor: 3 }.loads_into(host));
        assert!(!AbiVersion { major: 2, minor: 4 }.loads_into(host));
    }
}
