//! The on-disk cache of recordings: one file per circuit shape, versioned, checksummed
//! and written atomically. A file that is truncated, corrupt, of another format version
//! or of another circuit is reported and never used.
//!
//! Layout (little-endian): magic `BHPCE\0\0\0`, format version (u32), shape digest (32
//! bytes), inputs, aux, coefficient count (u64 each), the coefficients (32-byte reprs),
//! then A, B, C (each: rows, nonzeros as u64; row pointers u64; columns u32;
//! coefficient indices u32), then the three densities (bit count u64, words u64), and
//! last a SHA-256 of everything before it.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use bellhop_plugin_sdk::strategy::Density;
use blstrs::Scalar;
use ff::PrimeField;
use sha2::{Digest, Sha256};

use crate::recording::{Csr, Recording, INPUT};

const MAGIC: [u8; 8] = *b"BHPCE\0\0\0";
/// Bump when the layout or the meaning of a recording changes.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The digest that ties a file to one circuit shape, one format, and the circuits' build:
/// the catalog's source and the locked versions of the crates it depends on (build.rs).
pub(crate) fn shape_digest(circuit: &str) -> [u8; 32] {
    Sha256::new()
        .chain_update(b"bellhop-pce\0")
        .chain_update(FORMAT_VERSION.to_le_bytes())
        .chain_update(env!("BELLHOP_PCE_CIRCUITS_DIGEST").as_bytes())
        .chain_update(b"\0")
        .chain_update(circuit.as_bytes())
        .finalize()
        .into()
}

/// The cache file of `circuit` in `dir`.
pub(crate) fn path(dir: &Path, circuit: &str) -> PathBuf {
    let safe: String = circuit.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    dir.join(format!("{safe}.pce"))
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn encode(recording: &Recording, circuit: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&shape_digest(circuit));
    put_u64(&mut out, recording.num_inputs as u64);
    put_u64(&mut out, recording.num_aux as u64);
    put_u64(&mut out, recording.table.len() as u64);
    for c in &recording.table {
        out.extend_from_slice(&c.to_repr());
    }
    for m in [&recording.a, &recording.b, &recording.c] {
        put_u64(&mut out, (m.row_ptr.len() - 1) as u64);
        put_u64(&mut out, m.cols.len() as u64);
        m.row_ptr.iter().for_each(|p| put_u64(&mut out, *p));
        m.cols.iter().for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
        m.coeffs.iter().for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
    }
    for d in [&recording.a_aux_density, &recording.b_input_density, &recording.b_aux_density] {
        put_u64(&mut out, d.len);
        d.words.iter().for_each(|w| put_u64(&mut out, *w));
    }
    let checksum: [u8; 32] = Sha256::digest(&out).into();
    out.extend_from_slice(&checksum);
    out
}

/// Writes `recording` for `circuit` into `dir`, atomically.
pub(crate) fn write(dir: &Path, circuit: &str, recording: &Recording) -> io::Result<()> {
    bellhop_plugin_sdk::dirs::write_atomically(&path(dir, circuit), &encode(recording, circuit))
}

/// Reads the recording of `circuit` from `dir`: `Ok(None)` if there is none, `Err` with
/// the reason if the file is unusable.
pub(crate) fn read(dir: &Path, circuit: &str) -> Result<Option<Recording>, String> {
    let bytes = match fs::read(path(dir, circuit)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    decode(&bytes, circuit).map(Some)
}

/// A bounds-checked reader over the file's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or("it is truncated")?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn len(&mut self) -> Result<usize, String> {
        usize::try_from(self.u64()?).map_err(|_| "a length does not fit in memory".to_string())
    }

    fn u32s(&mut self, n: usize) -> Result<Vec<u32>, String> {
        let bytes = self.take(n.checked_mul(4).ok_or("it is corrupt (a length overflows)")?)?;
        Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect())
    }

    fn u64s(&mut self, n: usize) -> Result<Vec<u64>, String> {
        let bytes = self.take(n.checked_mul(8).ok_or("it is corrupt (a length overflows)")?)?;
        Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
    }
}

fn decode(bytes: &[u8], circuit: &str) -> Result<Recording, String> {
    if bytes.len() < MAGIC.len() + 4 + 32 + 32 || bytes[..8] != MAGIC {
        return Err("it is not a pce cache file (or is truncated)".into());
    }
    let (body, checksum) = bytes.split_at(bytes.len() - 32);
    let mut r = Reader { bytes: body, at: 8 };
    let version = r.u32()?;
    if version != FORMAT_VERSION {
        return Err(format!("it is of format version {version}, this strategy writes {FORMAT_VERSION} (stale)"));
    }
    if r.take(32)? != shape_digest(circuit) {
        return Err(format!(
            "it was recorded for another circuit than {circuit}, or by a build of other circuit code or \
             dependency versions (stale)"
        ));
    }
    if Sha256::digest(body).as_slice() != checksum {
        return Err("its checksum does not match (corrupt or truncated)".into());
    }
    let (num_inputs, num_aux, table_len) = (r.len()?, r.len()?, r.len()?);
    let table = (0..table_len)
        .map(|_| {
            let repr: [u8; 32] = r.take(32)?.try_into().expect("32 bytes");
            Option::from(Scalar::from_repr(repr)).ok_or_else(|| "it holds a coefficient out of range".to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut matrices = Vec::with_capacity(3);
    for _ in 0..3 {
        let (rows, nonzeros) = (r.len()?, r.len()?);
        let row_ptr = r.u64s(rows.checked_add(1).ok_or("it is corrupt")?)?;
        let (cols, coeffs) = (r.u32s(nonzeros)?, r.u32s(nonzeros)?);
        let consistent = row_ptr.first() == Some(&0)
            && row_ptr.last() == Some(&(nonzeros as u64))
            && row_ptr.windows(2).all(|w| w[0] <= w[1])
            && cols.iter().all(|&c| {
                if c & INPUT != 0 {
                    ((c & !INPUT) as usize) < num_inputs
                } else {
                    (c as usize) < num_aux
                }
            })
            && coeffs.iter().all(|&c| (c as usize) < table.len());
        if !consistent {
            return Err("its matrices are inconsistent (corrupt)".into());
        }
        matrices.push(Csr { row_ptr, cols, coeffs });
    }
    let mut density = || -> Result<Density, String> {
        let len = r.u64()?;
        let words = r.u64s(usize::try_from(len.div_ceil(64)).map_err(|_| "it is corrupt")?)?;
        Ok(Density { words: words.into(), len })
    };
    let (a_aux_density, b_input_density, b_aux_density) = (density()?, density()?, density()?);
    if r.at != body.len() {
        return Err("it has trailing bytes (corrupt)".into());
    }
    let rows = matrices[0].row_ptr.len();
    if matrices.iter().any(|m| m.row_ptr.len() != rows)
        || a_aux_density.len != num_aux as u64
        || b_aux_density.len != num_aux as u64
        || b_input_density.len != num_inputs as u64
    {
        return Err("its parts disagree on the circuit's size (corrupt)".into());
    }
    let c = matrices.pop().expect("three matrices");
    let b = matrices.pop().expect("three matrices");
    let a = matrices.pop().expect("three matrices");
    Ok(Recording { num_inputs, num_aux, table, a, b, c, a_aux_density, b_input_density, b_aux_density })
}
