//! Where plugins keep their caches, and how they write them.

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

/// Writes `bytes` to `path` through a temporary file beside it and a rename, creating the
/// directory if needed, so that a reader (another process too) sees the old file or the
/// whole new one, never part of it.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::{fs, io::Write};
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_replace_whole_files() {
        let dir = std::env::temp_dir().join(format!("bellhop-dirs-test-{}", std::process::id()));
        let path = dir.join("sub").join("file.bin");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file is left");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
