//! Synthetic Groth16 parameters, for benchmarks of circuits whose real parameters cannot
//! be had here (`synthetic-porep:32GiB`: the published file is about 47 GB): every section
//! of the length the circuit's shape needs, in bellperson's file format, its points cycled
//! from a pool of distinct random ones. A proof with them does the work a real file's
//! would: an MSM adds each base into a bucket's running sum, whichever base it is. Proofs
//! made with them verify against nothing.

use std::{io::Write, path::Path};

use bellhop_circuits::CircuitSpec;
use bellperson::groth16::{prepare_verifying_key, VerifyingKey};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use crate::params::{write_atomically, ParamsError, Shape, Srs};

/// Distinct G1 points in the pool; G2 has a quarter as many.
const G1_POOL: usize = 1 << 16;

/// The points synthetic parameters are made of: the verifying key and the pools their
/// sections cycle through.
struct Pools {
    vk: VerifyingKey<Bls12>,
    g1: Vec<G1Affine>,
    g2: Vec<G2Affine>,
}

impl Pools {
    fn new(shape: &Shape, seed: u64) -> Self {
        let longest_g1 = [shape.inputs, shape.h, shape.l, shape.a, shape.b_g1].into_iter().max().unwrap_or(0);
        let g1: Vec<G1Affine> = pool(seed, longest_g1.clamp(1, G1_POOL), G1Projective::generator());
        let g2: Vec<G2Affine> = pool(seed.wrapping_add(1), shape.b_g2.clamp(1, G1_POOL / 4), G2Projective::generator());
        let vk = VerifyingKey::<Bls12> {
            // The mark of synthetic parameters (see `is_synthetic`).
            alpha_g1: G1Affine::generator(),
            beta_g1: G1Affine::generator(),
            beta_g2: g2[0],
            gamma_g2: g2[g2.len() / 2],
            delta_g1: g1[g1.len() - 1],
            delta_g2: g2[g2.len() - 1],
            ic: cycled(&g1, shape.inputs),
        };
        Self { vk, g1, g2 }
    }
}

/// `count` points cycled from `pool`.
fn cycled<P: Copy + Send + Sync>(pool: &[P], count: usize) -> Vec<P> {
    (0..count).into_par_iter().map(|i| pool[i % pool.len()]).collect()
}

/// Writes synthetic parameters of `shape` to `path` atomically, points drawn from `seed`.
/// Returns the file's size in bytes.
pub fn write(shape: &Shape, seed: u64, path: &Path) -> Result<u64, ParamsError> {
    let Pools { vk, g1, g2 } = Pools::new(shape, seed);
    let g1_bytes: Vec<u8> = g1.iter().flat_map(|p| p.to_uncompressed()).collect();
    let g2_bytes: Vec<u8> = g2.iter().flat_map(|p| p.to_uncompressed()).collect();
    write_atomically(path, |out| {
        vk.write(&mut *out)?;
        for count in [shape.h, shape.l, shape.a, shape.b_g1] {
            section(out, count, &g1_bytes, 96)?;
        }
        section(out, shape.b_g2, &g2_bytes, 192)
    })?;
    std::fs::metadata(path).map(|m| m.len()).map_err(|error| ParamsError::Write { path: path.into(), error })
}

/// The synthetic parameters [`write`] writes for `shape` and `seed`, point for point,
/// made in memory instead: for a machine whose disk cannot spare the file (47 GB for
/// `synthetic-porep:32GiB`), and without a file's reading. `circuit` names them.
pub fn in_memory(shape: &Shape, seed: u64, circuit: &CircuitSpec) -> Srs {
    let Pools { vk, g1, g2 } = Pools::new(shape, seed);
    Srs {
        path: format!("<synthetic parameters of {circuit}, in memory>").into(),
        pvk: prepare_verifying_key(&vk),
        vk,
        h: cycled(&g1, shape.h),
        l: cycled(&g1, shape.l),
        a: cycled(&g1, shape.a),
        b_g1: cycled(&g1, shape.b_g1),
        b_g2: cycled(&g2, shape.b_g2),
    }
}

/// Whether `srs` are synthetic parameters: their verifying key's alpha and beta in G1
/// are both the generator, which no generated key's are but by a 2^-255 chance.
pub fn is_synthetic(srs: &Srs) -> bool {
    srs.vk.alpha_g1 == G1Affine::generator() && srs.vk.beta_g1 == G1Affine::generator()
}

/// Fails if `srs` are synthetic parameters and `circuit` is not benchmark-only: proofs
/// with them verify against nothing.
pub fn refuse_for(srs: &Srs, circuit: &CircuitSpec) -> Result<(), ParamsError> {
    if is_synthetic(srs) && !circuit.benchmark_only() {
        return Err(ParamsError::Synthetic { path: srs.path.clone(), circuit: circuit.to_string() });
    }
    Ok(())
}

/// `count` distinct random points of the group `generator` generates, affine.
fn pool<P, A>(seed: u64, count: usize, generator: P) -> Vec<A>
where
    P: Curve<AffineRepr = A> + std::ops::Mul<Scalar, Output = P> + Send + Sync + Copy,
    A: Default + Clone + Send,
{
    let projective: Vec<P> = (0..count as u64)
        .into_par_iter()
        .map(|i| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            rng.set_stream(i);
            generator * Scalar::random(&mut rng)
        })
        .collect();
    let mut affine = vec![A::default(); count];
    P::batch_normalize(&projective, &mut affine);
    affine
}

/// A section: its big-endian u32 count, then `count` points cycled from `pool`, the
/// uncompressed encodings of points of `point_bytes` each, concatenated.
fn section(out: &mut impl Write, count: usize, pool: &[u8], point_bytes: usize) -> std::io::Result<()> {
    let count32 = u32::try_from(count)
        .map_err(|_| std::io::Error::other(format!("{count} points do not fit bellperson's u32 section count")))?;
    out.write_all(&count32.to_be_bytes())?;
    let mut left = count;
    while left > 0 {
        let n = left.min(pool.len() / point_bytes);
        out.write_all(&pool[..n * point_bytes])?;
        left -= n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bellperson::groth16::generate_random_parameters;

    use super::*;
    use crate::params::{self, Srs};

    /// The sections a circuit's counted shape asks for are those of its real parameters,
    /// and synthetic parameters of that shape read back as valid points of that shape.
    #[test]
    fn synthetic_parameters_have_the_real_shape() {
        let dir = tempfile::tempdir().unwrap();
        for circuit in ["chain:500", "poseidon-merkle:2"] {
            let spec: CircuitSpec = circuit.parse().unwrap();
            let real_path = dir.path().join("real.params");
            let real = generate_random_parameters::<Bls12, _, _>(
                spec.setup_circuit().unwrap(),
                &mut ChaCha20Rng::seed_from_u64(1),
            )
            .unwrap();
            params::write(&real, &real_path).unwrap();
            let shape = Shape::from(spec.shape().unwrap());
            assert_eq!(shape, Shape::read(&real_path, circuit).unwrap(), "{circuit}");

            let synthetic_path = dir.path().join("synthetic.params");
            let bytes = write(&shape, 7, &synthetic_path).unwrap();
            assert_eq!(bytes, std::fs::metadata(&real_path).unwrap().len(), "{circuit}: same size as the real file");
            let synthetic = Srs::read(&synthetic_path, circuit, true).unwrap();
            assert_eq!(synthetic.shape(), shape, "{circuit}");
            assert!(is_synthetic(&synthetic) && !is_synthetic(&Srs::read(&real_path, circuit, false).unwrap()));
            let made = in_memory(&shape, 7, &spec);
            assert!(
                made.vk == synthetic.vk
                    && (&made.h, &made.l, &made.a, &made.b_g1, &made.b_g2)
                        == (&synthetic.h, &synthetic.l, &synthetic.a, &synthetic.b_g1, &synthetic.b_g2),
                "{circuit}: in memory, not the file's points"
            );
            let e = refuse_for(&synthetic, &spec).unwrap_err().to_string();
            assert!(e.contains("SYNTHETIC") && e.contains(circuit), "{e}");
        }
    }

    /// The host memory model (`Shape::partitions_within`) against the peaks measured with
    /// the 32 GiB PoRep circuit on the H200 (docs/BENCHMARKS.md, "32 GiB PoRep by
    /// simulation"): it must not promise room that was not there.
    #[test]
    fn the_memory_model_covers_the_measured_32gib_peaks() {
        // synthetic-porep:32GiB as `bellhop params synthetic` counted it; B's inputs: the one.
        let shape =
            Shape { inputs: 328, h: (1 << 27) - 1, l: 130_169_893, a: 129_753_620, b_g1: 33_112_282, b_g2: 33_112_282 };
        let gib = |n: f64| (n * (1u64 << 30) as f64) as u64;
        let peak = |held: u64| shape.resident_bytes() + held * shape.assignment_bytes() + shape.proving_bytes();
        // Synthesized partitions held at once (batch x (lookahead + 1)) and the peak RSS:
        // batches 3 and 4 one thread a partition, lookahead 0; batches 1 and 2 in parts,
        // lookahead 1, the baseline (one proof and sustained at batch 2) and pce (batch 1).
        let peaks = [(3, 95.2), (4, 111.8), (2, 69.0), (4, 86.1), (4, 90.0), (2, 78.5)];
        for (held, measured) in peaks.map(|(held, peak)| (held, gib(peak))) {
            assert!(
                peak(held) >= measured,
                "{held} partitions held: the model says {} bytes, {measured} were measured",
                peak(held)
            );
        }
        let within = |budget| shape.partitions_within(gib(budget));
        assert_eq!((within(64.0), within(96.0), within(120.0), within(256.0)), (0, 2, 3, 12));
    }
}
