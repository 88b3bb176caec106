//! The compiled-program cache: one file per (platform, device, driver, source, build
//! options), versioned, checksummed and written atomically. A file that is truncated,
//! corrupt, of another format version or of another key is reported and rebuilt, never used.
//!
//! Layout: magic `BHOCLPG\0`, format version (u32 LE), key (32 bytes), binary length
//! (u64 LE), the binary, then a SHA-256 of everything before it.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

const MAGIC: [u8; 8] = *b"BHOCLPG\0";
/// Bump when the layout of a cache file changes.
const FORMAT_VERSION: u32 = 1;

/// What identifies a compiled program: everything that changes the binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramKey(pub [u8; 32]);

impl ProgramKey {
    /// The key of `source` built with `options` for a device; `identity` names the
    /// platform, the device and its driver version.
    pub fn new(identity: &[&str], options: &str, source: &str) -> Self {
        let mut hash = Sha256::new().chain_update(b"bellhop-opencl-program\0");
        for part in identity.iter().chain([&options, &source]) {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part.as_bytes());
        }
        Self(hash.finalize().into())
    }

    fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The cache file of `key` in `dir`.
pub fn path(dir: &Path, key: &ProgramKey) -> PathBuf {
    dir.join(format!("{}.clbin", key.hex()))
}

/// Reads the binary cached for `key`: `Ok(None)` if there is no file, an error naming what
/// is wrong with a file that exists but cannot be used.
pub fn read(dir: &Path, key: &ProgramKey) -> Result<Option<Vec<u8>>, String> {
    let bytes = match fs::read(path(dir, key)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    decode(&bytes, key).map(Some)
}

fn decode(bytes: &[u8], key: &ProgramKey) -> Result<Vec<u8>, String> {
    const HEADER: usize = 8 + 4 + 32 + 8;
    if bytes.len() < HEADER + 32 {
        return Err(format!("truncated ({} bytes)", bytes.len()));
    }
    if bytes[..8] != MAGIC {
        return Err("not a bellhop OpenCL program cache file".into());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(format!("format version {version}, this build reads {FORMAT_VERSION}"));
    }
    let len = u64::from_le_bytes(bytes[44..52].try_into().expect("8 bytes"));
    if (bytes.len() - HEADER - 32) as u64 != len {
        return Err(format!(
            "truncated: the header promises {len} bytes of program, the file holds {}",
            bytes.len() - HEADER - 32
        ));
    }
    let (body, checksum) = bytes.split_at(bytes.len() - 32);
    if Sha256::digest(body).as_slice() != checksum {
        return Err("checksum does not match (corrupt)".into());
    }
    if bytes[12..44] != key.0 {
        return Err("built for another device, driver or source".into());
    }
    Ok(body[HEADER..].to_vec())
}

fn encode(binary: &[u8], key: &ProgramKey) -> Vec<u8> {
    let mut out = Vec::with_capacity(binary.len() + 84);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&key.0);
    out.extend_from_slice(&(binary.len() as u64).to_le_bytes());
    out.extend_from_slice(binary);
    let checksum: [u8; 32] = Sha256::digest(&out).into();
    out.extend_from_slice(&checksum);
    out
}

/// Writes `binary` for `key` into `dir`, atomically, so a reader never sees half a file.
pub fn write(dir: &Path, key: &ProgramKey, binary: &[u8]) -> io::Result<()> {
    bellhop_plugin_sdk::dirs::write_atomically(&path(dir, key), &encode(binary, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(source: &str) -> ProgramKey {
        ProgramKey::new(&["platform", "device", "driver 1"], "-O", source)
    }

    #[test]
    fn round_trips_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        let k = key("kernel void f() {}");
        assert_eq!(read(dir.path(), &k), Ok(None));
        write(dir.path(), &k, b"binary").unwrap();
        assert_eq!(read(dir.path(), &k), Ok(Some(b"binary".to_vec())));

        let good = fs::read(path(dir.path(), &k)).unwrap();
        let damaged = |bytes: Vec<u8>| decode(&bytes, &k).unwrap_err();
        assert!(damaged(good[..good.len() - 5].to_vec()).contains("truncated"));
        assert!(damaged(good[..20].to_vec()).contains("truncated"));
        let mut flipped = good.clone();
        flipped[60] ^= 1;
        assert!(damaged(flipped).contains("checksum"));
        let mut version = good.clone();
        version[8] = 9;
        assert!(damaged(version).contains("format version 9"));
        // A valid file of another key (say, copied from another machine).
        let other = encode(b"binary", &key("other source"));
        assert!(damaged(other).contains("another device"));
    }

    #[test]
    fn keys_differ_by_every_part() {
        let base = ProgramKey::new(&["p", "d", "1"], "-O", "s");
        assert_ne!(base, ProgramKey::new(&["p", "d", "2"], "-O", "s"));
        assert_ne!(base, ProgramKey::new(&["p", "d", "1"], "", "s"));
        assert_ne!(base, ProgramKey::new(&["p", "d", "1"], "-O", "t"));
        // Parts are length-prefixed, so moving a character between parts changes the key.
        assert_ne!(ProgramKey::new(&["pd", ""], "", ""), ProgramKey::new(&["p", "d"], "", ""));
    }
}
