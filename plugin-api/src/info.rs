//! What a plugin says about itself: its header, description, devices and build.

use std::fmt;

use abi_stable::{
    std_types::{ROption, RString, RVec},
    StableAbi,
};

use crate::{AbiVersion, ABI_VERSION};

/// The 8 bytes every [`PluginHeader`] starts with.
pub const PLUGIN_MAGIC: [u8; 8] = *b"BELLHOP\0";

/// The exported symbol holding a plugin's [`PluginHeader`].
pub const PLUGIN_HEADER_SYMBOL: &[u8] = b"BELLHOP_PLUGIN_HEADER\0";

/// A plugin's kind, as a plain integer (the header's layout is frozen).
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PluginKind(pub u32);

impl PluginKind {
    /// A compute backend: MSM, NTT, `compute_h`.
    pub const BACKEND: Self = Self(1);
    /// A synthesis strategy: jobs in, assignments out.
    pub const STRATEGY: Self = Self(2);

    /// `backend`, `strategy` or `unknown kind N`.
    pub fn name(self) -> String {
        match self {
            Self::BACKEND => "backend".into(),
            Self::STRATEGY => "strategy".into(),
            Self(n) => format!("unknown kind {n}"),
        }
    }
}

impl fmt::Display for PluginKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl fmt::Debug for PluginKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The first thing the host reads from a plugin, before `abi_stable` checks anything.
///
/// Its layout is frozen across all ABI versions: it is how a host learns that a file is a
/// Bellhop plugin at all, of which kind, and for which ABI version.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PluginHeader {
    /// Always [`PLUGIN_MAGIC`].
    pub magic: [u8; 8],
    /// The ABI version the plugin was built against.
    pub abi: AbiVersion,
    /// Backend or strategy.
    pub kind: PluginKind,
}

impl PluginHeader {
    /// The header of a plugin of `kind` built against this crate's [`ABI_VERSION`].
    pub const fn new(kind: PluginKind) -> Self {
        Self { magic: PLUGIN_MAGIC, abi: ABI_VERSION, kind }
    }
}

/// Capability flags: what a backend can do beyond the required primitives.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Capabilities(pub u64);

impl Capabilities {
    /// Multi-scalar multiplication on G1.
    pub const MSM_G1: Self = Self(1);
    /// Multi-scalar multiplication on G2.
    pub const MSM_G2: Self = Self(1 << 1);
    /// Forward, inverse and coset NTTs over Fr.
    pub const NTT: Self = Self(1 << 2);
    /// The whole FFT part of Groth16 in one call.
    pub const COMPUTE_H: Self = Self(1 << 3);
    /// Runs on an accelerator.
    pub const GPU: Self = Self(1 << 4);
    /// Synthesis in parallel across the jobs of a batch (strategies).
    pub const PARALLEL_BATCH: Self = Self(1 << 5);
    /// Whole proofs of a batch in one call (`Backend::prove_batch`, ABI 1.2).
    pub const PROVE_BATCH: Self = Self(1 << 6);
    /// h and the five MSMs of a proof in one call (`Backend::proof_msms`, ABI 1.4).
    pub const PROOF_MSMS: Self = Self(1 << 7);

    const NAMES: [(Self, &'static str); 8] = [
        (Self::MSM_G1, "msm_g1"),
        (Self::MSM_G2, "msm_g2"),
        (Self::NTT, "ntt"),
        (Self::COMPUTE_H, "compute_h"),
        (Self::GPU, "gpu"),
        (Self::PARALLEL_BATCH, "parallel_batch"),
        (Self::PROVE_BATCH, "prove_batch"),
        (Self::PROOF_MSMS, "proof_msms"),
    ];

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// These flags with those of `other` cleared.
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// The names of the set flags; unknown bits show as `bit N`.
    pub fn names(self) -> Vec<String> {
        let mut names: Vec<String> =
            Self::NAMES.iter().filter(|(flag, _)| self.contains(*flag)).map(|(_, name)| name.to_string()).collect();
        let known = Self::NAMES.iter().fold(0, |acc, (flag, _)| acc | flag.0);
        let unknown = self.0 & !known;
        names.extend((0..64).filter(|bit| unknown & (1 << bit) != 0).map(|bit| format!("bit {bit}")));
        names
    }
}

impl std::ops::BitOr for Capabilities {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.names().join(","))
    }
}

/// A device's memory now (ABI 1.3, `Backend::memory`).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceMemory {
    /// All of it, in bytes.
    pub total_bytes: u64,
    /// What is free now, in bytes.
    pub free_bytes: u64,
}

/// One device a backend can open.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The index `open` takes.
    pub index: u32,
    /// Human-readable name, e.g. the CPU model or `NVIDIA H200`.
    pub name: RString,
    /// Device memory in bytes (host memory for CPU backends).
    pub memory_bytes: u64,
    /// Cores, SMs or compute units.
    pub compute_units: u32,
}

/// How and from what a plugin was built. Filled in by the SDK's `build_info!`.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// The plugin crate's name.
    pub crate_name: RString,
    /// The plugin crate's version.
    pub crate_version: RString,
    /// Enabled cargo features, comma-separated.
    pub features: RString,
    /// The target triple.
    pub target: RString,
    /// `debug` or `release`.
    pub profile: RString,
    /// The git revision of the source, when it was built from a git checkout.
    pub git_revision: ROption<RString>,
}

/// A plugin's self-description, as `bellhop plugins` shows it.
#[repr(C)]
#[derive(StableAbi, Clone, Debug)]
pub struct PluginInfo {
    /// Backend or strategy.
    pub kind: PluginKind,
    /// The name operators use in the config (`cpu`, `cuda-pinned`, `pce`).
    pub name: RString,
    /// One line saying what it is.
    pub description: RString,
    /// The ABI version the plugin was built against.
    pub abi: AbiVersion,
    /// How it was built.
    pub build: BuildInfo,
    /// What it can do.
    pub capabilities: Capabilities,
    /// The devices it can open (empty for strategies).
    pub devices: RVec<DeviceInfo>,
}

/// What the host asks of `open`.
#[repr(C)]
#[derive(StableAbi, Clone, Debug)]
pub struct OpenRequest {
    /// The device index (see [`PluginInfo::devices`]).
    pub device: u32,
    /// Worker threads the plugin may use; 0 means all cores. Each plugin has its own
    /// thread pools, so the host sizes them to avoid oversubscribing cores.
    pub threads: u32,
    /// The operator's options table (`[backend.options]` or `[synthesis.options]`), as
    /// TOML text; the export macros parse it into the plugin's `Options`, refusing unknown
    /// keys with [`ErrorKind::OPTIONS`](crate::ErrorKind::OPTIONS).
    pub options: RString,
}

/// A sub-phase timing measured inside a plugin, since plugins cannot reach the host's
/// tracing subscriber.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct PhaseTiming {
    /// The sub-phase, e.g. `intt` or `coset_ntt`.
    pub name: RString,
    /// Its wall time in nanoseconds.
    pub nanos: u64,
}

impl PhaseTiming {
    /// A timing named `name` of `elapsed`.
    pub fn new(name: &str, elapsed: std::time::Duration) -> Self {
        Self { name: name.into(), nanos: elapsed.as_nanos().try_into().unwrap_or(u64::MAX) }
    }
}
