//! Groth16 parameters in bellperson's file format: read memory-mapped and decoded in
//! parallel, checked against the circuit they are used for, and written atomically.
//!
//! The format (bellperson's `Parameters::write`): the verifying key (alpha_g1, beta_g1,
//! beta_g2, gamma_g2, delta_g1, delta_g2 as uncompressed points, then `ic` as a big-endian
//! u32 count and points), then the sections h, l, a, b_g1 (G1) and b_g2 (G2), each a
//! count and uncompressed points. Real Filecoin `.params` files are of this format.

use std::{
    fs::File,
    io,
    path::{Path, PathBuf},
};

use bellhop_circuits::{CircuitShape, CircuitSpec};
use bellhop_plugin_sdk::strategy::Assignment;
use bellperson::groth16::{self, prepare_verifying_key, PreparedVerifyingKey, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::UncompressedEncoding;
use rayon::prelude::*;

const G1_BYTES: usize = 96;
const G2_BYTES: usize = 192;
/// alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2.
const VK_FIXED_BYTES: usize = 3 * G1_BYTES + 3 * G2_BYTES;

/// A parameter file that cannot be used. Each message names the file and the fix.
#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    /// The file is missing or unreadable.
    #[error(
        "cannot open parameter file `{}`: {error}; generate it with `bellhop params {} {circuit}`",
        .path.display(),
        if circuit.starts_with("synthetic-") { "synthetic" } else { "gen" }
    )]
    Open {
        /// The file.
        path: PathBuf,
        /// The circuit it was looked up for.
        circuit: String,
        /// Why.
        error: io::Error,
    },
    /// The file ends before a section does.
    #[error(
        "parameter file `{}` is truncated: section `{section}` needs bytes up to offset {needed}, \
         but the file has {actual}; regenerate or re-download it",
        .path.display()
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// The section that does not fit.
        section: &'static str,
        /// The offset the section ends at.
        needed: u64,
        /// The file's length.
        actual: u64,
    },
    /// Bytes after the last section.
    #[error("parameter file `{}` has {extra} bytes after its last section; it is not a bellperson parameter file", .path.display())]
    Trailing {
        /// The file.
        path: PathBuf,
        /// How many.
        extra: u64,
    },
    /// A point that does not decode.
    #[error(
        "parameter file `{}` is corrupt: point {index} of section `{section}` is not a valid curve point \
         (off the curve, or outside its prime-order subgroup); regenerate or re-download it",
        .path.display()
    )]
    BadPoint {
        /// The file.
        path: PathBuf,
        /// The section.
        section: &'static str,
        /// The point's index in it.
        index: usize,
    },
    /// Parameters of another circuit.
    #[error(
        "parameter file `{}` does not fit circuit {circuit}: {mismatch}; \
         these are parameters for another circuit — generate matching ones with `bellhop params gen {circuit}`",
        .path.display()
    )]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// The circuit.
        circuit: String,
        /// What differs.
        mismatch: String,
    },
    /// Synthetic parameters for a circuit that is proved for real.
    #[error(
        "parameter file `{}` holds SYNTHETIC parameters (`bellhop params synthetic`), whose proofs verify against \
         nothing; {circuit} needs real ones: the published file, or `bellhop params gen {circuit}`",
        .path.display()
    )]
    Synthetic {
        /// The file.
        path: PathBuf,
        /// The circuit.
        circuit: String,
    },
    /// Writing failed.
    #[error("cannot write parameter file `{}`: {error}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
}

/// Decoded Groth16 parameters, resident in host memory in the backends' layout.
pub struct Srs {
    /// The file they came from.
    pub path: PathBuf,
    /// The verifying key.
    pub vk: VerifyingKey<Bls12>,
    /// The verifying key, prepared for pairing checks.
    pub pvk: PreparedVerifyingKey<Bls12>,
    /// Bases of h: `domain size - 1` of them.
    pub h: Vec<G1Affine>,
    /// Bases of the aux variables' L query.
    pub l: Vec<G1Affine>,
    /// A query: inputs, then the aux variables A uses.
    pub a: Vec<G1Affine>,
    /// B query in G1: the inputs B uses, then the aux variables B uses.
    pub b_g1: Vec<G1Affine>,
    /// B query in G2, as `b_g1`.
    pub b_g2: Vec<G2Affine>,
}

/// Reads big-endian u32 section counts and slices sections out of the mapped file.
struct Cursor<'a> {
    bytes: &'a [u8],
    offset: usize,
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, section: &'static str, len: usize) -> Result<&'a [u8], ParamsError> {
        let end =
            self.offset.checked_add(len).filter(|&end| end <= self.bytes.len()).ok_or(ParamsError::Truncated {
                path: self.path.to_path_buf(),
                section,
                needed: self.offset as u64 + len as u64,
                actual: self.bytes.len() as u64,
            })?;
        let out = &self.bytes[self.offset..end];
        self.offset = end;
        Ok(out)
    }

    fn count(&mut self, section: &'static str) -> Result<usize, ParamsError> {
        let bytes = self.take(section, 4)?;
        Ok(u32::from_be_bytes(bytes.try_into().expect("took 4 bytes")) as usize)
    }

    fn section(&mut self, section: &'static str, point_bytes: usize) -> Result<&'a [u8], ParamsError> {
        let count = self.count(section)?;
        self.take(section, count.saturating_mul(point_bytes))
    }
}

/// The sizes of a parameter file's sections: what proving with it takes in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Public inputs, the constant one included (`vk.ic`).
    pub inputs: usize,
    /// Bases of h: the domain size less one.
    pub h: usize,
    /// Bases of the aux variables' L query.
    pub l: usize,
    /// The A query.
    pub a: usize,
    /// The B query in G1.
    pub b_g1: usize,
    /// The B query in G2.
    pub b_g2: usize,
}

impl From<CircuitShape> for Shape {
    /// The section sizes parameters of a circuit of `shape` have.
    fn from(shape: CircuitShape) -> Self {
        let b = shape.b_inputs + shape.b_aux;
        Self {
            inputs: shape.inputs,
            h: shape.domain() - 1,
            l: shape.aux,
            a: shape.inputs + shape.a_aux,
            b_g1: b,
            b_g2: b,
        }
    }
}

impl Shape {
    /// The section sizes of the file at `path` (of `circuit`, for messages), read from its
    /// counts without decoding a point.
    pub fn read(path: &Path, circuit: &str) -> Result<Self, ParamsError> {
        let open = |error| ParamsError::Open { path: path.to_path_buf(), circuit: circuit.into(), error };
        let file = File::open(path).map_err(open)?;
        // SAFETY: as in `Srs::read`: a read-only map of a file that is replaced, not
        // modified, and only its count words are read.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(open)?;
        Self::from_bytes(&map, path)
    }

    /// The section sizes of a parameter file's `bytes` (read from `path`, for messages).
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self, ParamsError> {
        let mut cursor = Cursor { bytes, offset: 0, path };
        cursor.take("vk", VK_FIXED_BYTES)?;
        let mut count = |section, bytes| cursor.section(section, bytes).map(|s| s.len() / bytes);
        Ok(Self {
            inputs: count("vk.ic", G1_BYTES)?,
            h: count("h", G1_BYTES)?,
            l: count("l", G1_BYTES)?,
            a: count("a", G1_BYTES)?,
            b_g1: count("b_g1", G1_BYTES)?,
            b_g2: count("b_g2", G2_BYTES)?,
        })
    }

    /// The bytes its bases take once decoded.
    pub fn resident_bytes(&self) -> u64 {
        let g1 = self.h + self.l + self.a + self.b_g1;
        (g1 * std::mem::size_of::<G1Affine>() + self.b_g2 * std::mem::size_of::<G2Affine>()) as u64
    }

    /// The bytes one proof with these parameters holds at most on the host: its
    /// assignment and what proving it adds.
    pub fn proof_bytes(&self) -> u64 {
        self.assignment_bytes() + self.proving_bytes()
    }

    /// The bytes a synthesized partition holds on the host until it is proved: A, B and C
    /// (at most the domain each), the aux and input assignments.
    pub fn assignment_bytes(&self) -> u64 {
        (3 * (self.h as u64 + 1) + self.l as u64 + self.inputs as u64) * 32
    }

    /// The bytes proving one partition adds while it runs: h, a copy of the aux
    /// assignment, and the A and B scalars gathered for their MSMs.
    pub fn proving_bytes(&self) -> u64 {
        (self.h as u64 + 1 + self.l as u64 + self.a as u64 + self.b_g1 as u64) * 32
    }

    /// How many synthesized partitions fit in `budget` bytes beside these parameters
    /// (resident) and one partition being proved.
    pub fn partitions_within(&self, budget: u64) -> u64 {
        budget.saturating_sub(self.resident_bytes() + self.proving_bytes()) / self.assignment_bytes()
    }
}

/// Decodes uncompressed points in parallel; `checked` adds the subgroup check.
fn decode<G>(path: &Path, section: &'static str, bytes: &[u8], checked: bool) -> Result<Vec<G>, ParamsError>
where
    G: UncompressedEncoding + Send,
{
    let size = std::mem::size_of::<G::Uncompressed>();
    bytes
        .par_chunks_exact(size)
        .enumerate()
        .map(|(index, chunk)| {
            let bad = || ParamsError::BadPoint { path: path.to_path_buf(), section, index };
            let mut repr = G::Uncompressed::default();
            repr.as_mut().copy_from_slice(chunk);
            let point = if checked { G::from_uncompressed(&repr) } else { G::from_uncompressed_unchecked(&repr) };
            Option::from(point).ok_or_else(bad)
        })
        .collect()
}

impl Srs {
    /// Reads the parameter file at `path` for `circuit` (named in errors), memory-mapped
    /// and decoded in parallel. `checked` also checks that every point is in its subgroup.
    pub fn read(path: &Path, circuit: &str, checked: bool) -> Result<Self, ParamsError> {
        let open = |error| ParamsError::Open { path: path.to_path_buf(), circuit: circuit.into(), error };
        let file = File::open(path).map_err(open)?;
        // SAFETY: the map is read-only and lives only inside this function; parameter
        // files are not modified while in use (they are written to a temporary name and
        // renamed into place), so the bytes cannot change under the decoder.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(open)?;
        Self::from_bytes(&map, path, checked)
    }

    /// Decodes a parameter file's `bytes` (read from `path`, for messages), in parallel;
    /// `checked` also checks that every point is in its subgroup.
    pub fn from_bytes(bytes: &[u8], path: &Path, checked: bool) -> Result<Self, ParamsError> {
        let mut cursor = Cursor { bytes, offset: 0, path };

        let vk_fixed = cursor.take("vk", VK_FIXED_BYTES)?;
        let ic = cursor.section("vk.ic", G1_BYTES)?;
        let vk_end = cursor.offset;
        let h = cursor.section("h", G1_BYTES)?;
        let l = cursor.section("l", G1_BYTES)?;
        let a = cursor.section("a", G1_BYTES)?;
        let b_g1 = cursor.section("b_g1", G1_BYTES)?;
        let b_g2 = cursor.section("b_g2", G2_BYTES)?;
        if cursor.offset != bytes.len() {
            return Err(ParamsError::Trailing { path: path.into(), extra: (bytes.len() - cursor.offset) as u64 });
        }
        debug_assert_eq!(vk_fixed.len() + 4 + ic.len(), vk_end);

        let vk = VerifyingKey::<Bls12>::read(&bytes[..vk_end]).map_err(|_| ParamsError::BadPoint {
            path: path.into(),
            section: "vk",
            index: 0,
        })?;
        let (h, (l, (a, (b_g1, b_g2)))) = rayon::join(
            || decode(path, "h", h, checked),
            || {
                rayon::join(
                    || decode(path, "l", l, checked),
                    || {
                        rayon::join(
                            || decode(path, "a", a, checked),
                            || {
                                rayon::join(
                                    || decode(path, "b_g1", b_g1, checked),
                                    || decode(path, "b_g2", b_g2, checked),
                                )
                            },
                        )
                    },
                )
            },
        );
        let pvk = prepare_verifying_key(&vk);
        Ok(Self { path: path.into(), vk, pvk, h: h?, l: l?, a: a?, b_g1: b_g1?, b_g2: b_g2? })
    }

    /// The bytes its decoded points take in memory (the bases; the verifying key is small).
    pub fn resident_bytes(&self) -> u64 {
        self.shape().resident_bytes()
    }

    /// Its sections' sizes.
    pub fn shape(&self) -> Shape {
        Shape {
            inputs: self.vk.ic.len(),
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
            b_g2: self.b_g2.len(),
        }
    }

    /// Checks that these parameters were made for a circuit of `assignment`'s shape.
    pub fn check_fits(&self, assignment: &Assignment, circuit: &str) -> Result<(), ParamsError> {
        let domain = assignment.a.len().next_power_of_two();
        let inputs = assignment.inputs.len();
        let b_inputs = assignment.b_input_density.count();
        let b = b_inputs + assignment.b_aux_density.count();
        let checks = [
            ("public inputs (the constant one included)", "vk.ic", inputs, self.vk.ic.len()),
            ("h bases (domain size - 1)", "h", domain - 1, self.h.len()),
            ("private variables", "l", assignment.aux.len(), self.l.len()),
            ("A-query variables", "a", inputs + assignment.a_aux_density.count(), self.a.len()),
            ("B-query variables", "b_g1", b, self.b_g1.len()),
            ("B-query variables", "b_g2", b, self.b_g2.len()),
        ];
        for (what, section, circuit_has, params_have) in checks {
            if circuit_has != params_have {
                return Err(ParamsError::Mismatch {
                    path: self.path.clone(),
                    circuit: circuit.into(),
                    mismatch: format!(
                        "the circuit has {circuit_has} {what}, the parameters' `{section}` section has {params_have}"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Writes `params` to `path` atomically: to a temporary file beside it, then renamed.
pub fn write(params: &groth16::Parameters<Bls12>, path: &Path) -> Result<(), ParamsError> {
    write_atomically(path, |out| params.write(out))
}

/// Writes what `contents` writes to `path` atomically: to a temporary file beside it,
/// synced, then renamed.
pub(crate) fn write_atomically(
    path: &Path,
    contents: impl FnOnce(&mut io::BufWriter<File>) -> io::Result<()>,
) -> Result<(), ParamsError> {
    let fail = |error| ParamsError::Write { path: path.to_path_buf(), error };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let result = (|| {
        let mut out = io::BufWriter::with_capacity(1 << 22, File::create(&tmp)?);
        contents(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(fail)
}

/// Writes `params` of `circuit` to `path` (see [`write`]) and, for a Filecoin circuit, its
/// verifying key beside as `.vk`, where filecoin-proofs' verifiers read it. Returns the
/// `.vk` path if one was written.
pub fn write_for_circuit(
    circuit: &CircuitSpec,
    params: &groth16::Parameters<Bls12>,
    path: &Path,
) -> Result<Option<std::path::PathBuf>, ParamsError> {
    write(params, path)?;
    if !circuit.reads_input() {
        return Ok(None);
    }
    let vk = path.with_extension("vk");
    let mut bytes = Vec::new();
    params.vk.write(&mut bytes).expect("writing to a Vec does not fail");
    bellhop_plugin_sdk::dirs::write_atomically(&vk, &bytes)
        .map_err(|error| ParamsError::Write { path: vk.clone(), error })?;
    Ok(Some(vk))
}
