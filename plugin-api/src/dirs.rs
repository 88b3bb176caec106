//! Where plugins keep their caches.

use std::path::PathBuf;

/// The cache directory of `kind` (e.g. `pce`, `opencl`): `$BELLHOP_CACHE_DIR/<kind>`, else
/// `$XDG_CACHE_HOME/bellhop/<kind>`, else `~/.cache/bellhop/<kind>`, else a directory under
/// the system's temporary directory. Empty variables count as unset.
pub fn cache_dir(kind: &str) -> PathBuf {
    let env = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    env("BELLHOP_CACHE_DIR")
        .map(|d| d.join(kind))
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("bellhop").join(kind)))
        .or_else(|| env("HOME").map(|d| d.join(".cache").join("bellhop").join(kind)))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("bellhop-{kind}")))
}
