//! The plugin ABI version and the rules for changing it.
//!
//! The ABI version is `major.minor`. The host loads a plugin when the majors are equal;
//! the minor only tells what the plugin may offer beyond the first release of that major.
//!
//! **A minor version may** (and must, when it does any of these, bump the minor):
//! - append fields to the end of a root module (`BackendModule`, `StrategyModule`), after
//!   the field marked `#[sabi(last_prefix_field)]`; the host reads them as optional;
//! - append methods to the end of a `#[sabi_trait]` object, each with a default body that
//!   returns an [`ErrorKind::UNSUPPORTED`](crate::ErrorKind::UNSUPPORTED) error, so an
//!   older plugin still answers;
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
pub const ABI_VERSION: AbiVersion = AbiVersion { major: 1, minor: 0 };

/// [`ABI_VERSION`] as `abi_stable` version strings, for the root modules.
pub(crate) const ABI_VERSION_STRINGS: VersionStrings = VersionStrings::new("1.0.0");

impl AbiVersion {
    /// Whether a plugin built for `self` can be loaded by a host speaking `host`.
    pub const fn loads_into(self, host: AbiVersion) -> bool {
        self.major == host.major
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
    fn only_the_major_decides() {
        let host = AbiVersion { major: 1, minor: 3 };
        assert!(AbiVersion { major: 1, minor: 0 }.loads_into(host));
        assert!(AbiVersion { major: 1, minor: 9 }.loads_into(host));
        assert!(!AbiVersion { major: 2, minor: 0 }.loads_into(host));
    }
}
