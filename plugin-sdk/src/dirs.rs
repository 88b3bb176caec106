//! Where plugins keep their caches, and how they write them. A cache is trusted only as
//! far as who can write it: cache directories belong to the user, and no file is written
//! through a name someone else placed.

use std::{
    ffi::OsString,
    io,
    path::{Path, PathBuf},
};

/// The cache directory of `kind` (e.g. `pce`, `opencl`): `$BELLHOP_CACHE_DIR/<kind>`, else
/// `$XDG_CACHE_HOME/bellhop/<kind>`, else `~/.cache/bellhop/<kind>`; empty variables count
/// as unset. There is no shared fallback such as `/tmp`: with none set, an error says so.
/// The directory is created (see [`private_dir`]) and checked.
pub fn cache_dir(kind: &str) -> io::Result<PathBuf> {
    let dir = cache_dir_in(kind, |name| std::env::var_os(name))?;
    private_dir(&dir)?;
    Ok(dir)
}

fn cache_dir_in(kind: &str, var: impl Fn(&str) -> Option<OsString>) -> io::Result<PathBuf> {
    let env = |name| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    env("BELLHOP_CACHE_DIR")
        .map(|d| d.join(kind))
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("bellhop").join(kind)))
        .or_else(|| env("HOME").map(|d| d.join(".cache").join("bellhop").join(kind)))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no cache directory for {kind}: set BELLHOP_CACHE_DIR (or XDG_CACHE_HOME, or HOME)"),
            )
        })
}

/// Creates `dir` and its missing parents, readable by the user alone (mode 0700), and
/// checks that it is owned by the user running this process and that no one else may
/// write it; a directory that fails the check is refused with a message that says why.
pub fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let meta = std::fs::metadata(dir)?;
    // SAFETY: geteuid takes no arguments, has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    let refuse = |why: String| {
        Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("directory {} {why}; refused", dir.display())))
    };
    if meta.uid() != user {
        return refuse(format!("belongs to user {}, not to this process's user {user}", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return refuse(format!("is writable by other users (mode {:o}): chmod go-w it", meta.mode() & 0o777));
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename, creating the
/// directory if needed, so that a reader (another process too) sees the old file or the
/// whole new one, never part of it. The temporary file is created afresh: a file or link
/// already at its name is removed, never written through.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::{fs, io::Write};
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    match fs::remove_file(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let result = (|| {
        let mut file = fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
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
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bellhop-dirs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn atomic_writes_replace_whole_files() {
        let dir = scratch("atomic");
        let path = dir.join("sub").join("file.bin");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file is left");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_link_planted_at_the_temporary_name_is_not_written_through() {
        let dir = scratch("link");
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, b"not yours").unwrap();
        let path = dir.join("cache.bin");
        std::os::unix::fs::symlink(&victim, dir.join(format!("cache.bin.tmp.{}", std::process::id()))).unwrap();
        write_atomically(&path, b"entry").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"not yours");
        assert_eq!(std::fs::read(&path).unwrap(), b"entry");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn there_is_no_shared_fallback_cache_directory() {
        let unset = |_: &str| None;
        let e = cache_dir_in("pce", unset).unwrap_err().to_string();
        assert!(e.contains("set BELLHOP_CACHE_DIR"), "{e}");
        let home = |name: &str| (name == "HOME").then(|| OsString::from("/home/op"));
        assert_eq!(cache_dir_in("pce", home).unwrap(), Path::new("/home/op/.cache/bellhop/pce"));
    }

    #[test]
    fn cache_directories_are_private_and_the_user_s() {
        let dir = scratch("private").join("a").join("b");
        private_dir(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = private_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("writable by other users") && e.contains("chmod go-w"), "{e}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        // SAFETY: as in `private_dir`.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
            let e = private_dir(&dir).unwrap_err().to_string();
            assert!(e.contains("belongs to user 65534"), "{e}");
        } else {
            eprintln!("not root: a cache directory of another user is not checked here (chown needs root)");
        }
    }
}
