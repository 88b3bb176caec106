//! CPU primitives, Bellhop against bellperson 0.27 (and blst's own MSM), in the same run:
//! MSM on G1 at 2^12..2^18 points, on G2 at 2^12..2^16, and the forward NTT at 2^12..2^20.
//!
//! `cargo bench -p bellhop-benches --bench primitives`; `scripts/bench-ratios.py` turns
//! the results into the ratio table of docs/BENCHMARKS.md.

use std::sync::Arc;

use bellhop_benches::{bases, scalars};
use bellhop_cpu::CpuBackend;
use bellhop_plugin_sdk::{backend::Backend, backend::NttDirection, cast, cast_slice, cast_slice_mut, types};
use bellperson::domain::EvaluationDomain;
use blstrs::{G1Affine, G2Affine, Scalar};
use criterion::{black_box, criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use ec_gpu_gen::{
    multiexp_cpu::{multiexp_cpu, FullDensity},
    threadpool::Worker,
};
use ff::PrimeField;
use group::prime::PrimeCurveAffine;

/// `group`: Bellhop's CPU MSM (`bellhop`, through the backend) against bellperson's and
/// blst's own (`blst` prepares its inputs and returns the timed call) over the same bases
/// and scalars, at 2^`log_n` points for each of `sizes`.
fn msm<G>(
    c: &mut Criterion,
    group: &str,
    sizes: &[u32],
    bellhop: impl Fn(&CpuBackend, &[G], &[Scalar]) -> G::Curve,
    blst: impl Fn(&[G], &[Scalar]) -> Box<dyn Fn()>,
) where
    G: PrimeCurveAffine<Scalar = Scalar>,
{
    let backend = CpuBackend::new(0).expect("a thread pool");
    let worker = Worker::new();
    let max = 1 << sizes.iter().max().copied().unwrap_or(0);
    let all_bases: Vec<G> = bases(max, 1);
    let all_scalars = scalars(max, 2);
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    for &log_n in sizes {
        let n = 1usize << log_n;
        let (points, exps) = (&all_bases[..n], &all_scalars[..n]);
        group.bench_with_input(BenchmarkId::new("bellhop-cpu", log_n), &n, |b, _| {
            b.iter(|| bellhop(&backend, points, exps))
        });
        // bellperson's prover converts scalars and wraps bases once, outside its MSMs.
        let shared_bases = Arc::new(points.to_vec());
        let reprs = Arc::new(exps.iter().map(|s| s.to_repr()).collect::<Vec<_>>());
        group.bench_with_input(BenchmarkId::new("bellperson", log_n), &n, |b, _| {
            b.iter(|| {
                multiexp_cpu::<FullDensity, _, G, _>(&worker, (shared_bases.clone(), 0), FullDensity, reprs.clone())
                    .wait()
                    .expect("valid input")
            })
        });
        // blst's multi-threaded Pippenger (XYZZ buckets), bases and scalar bytes prepared
        // outside the timed call.
        let call = blst(points, exps);
        group.bench_with_input(BenchmarkId::new("blst", log_n), &n, |b, _| b.iter(&call));
    }
    group.finish();
}

/// Scalars as blst's Pippenger reads them: 32 little-endian bytes each, one array.
fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
    scalars.iter().flat_map(Scalar::to_bytes_le).collect()
}

fn msm_g1(c: &mut Criterion) {
    msm::<G1Affine>(
        c,
        "msm_g1",
        &[12, 14, 16, 18],
        |backend, points, exps| cast(backend.msm_g1(cast_slice(points), cast_slice(exps)).expect("valid input")),
        |points, exps| {
            let projective: Vec<types::G1Projective> = points.iter().map(|p| cast(p.to_curve())).collect();
            let (points, scalars) = (blst::p1_affines::from(cast_slice(&projective)), scalar_bytes(exps));
            Box::new(move || {
                black_box(points.mult(&scalars, 255));
            })
        },
    );
}

fn msm_g2(c: &mut Criterion) {
    msm::<G2Affine>(
        c,
        "msm_g2",
        &[12, 14, 16],
        |backend, points, exps| cast(backend.msm_g2(cast_slice(points), cast_slice(exps)).expect("valid input")),
        |points, exps| {
            let projective: Vec<types::G2Projective> = points.iter().map(|p| cast(p.to_curve())).collect();
            let (points, scalars) = (blst::p2_affines::from(cast_slice(&projective)), scalar_bytes(exps));
            Box::new(move || {
                black_box(points.mult(&scalars, 255));
            })
        },
    );
}

fn ntt(c: &mut Criterion) {
    let backend = CpuBackend::new(0).expect("a thread pool");
    let worker = Worker::new();
    let mut group = c.benchmark_group("ntt");
    group.sample_size(10);
    for log_n in [12u32, 14, 16, 18, 20] {
        let values = scalars(1 << log_n, 3);
        group.bench_with_input(BenchmarkId::new("bellhop-cpu", log_n), &log_n, |b, _| {
            b.iter_batched_ref(
                || values.clone(),
                |v| backend.ntt(cast_slice_mut(v), NttDirection::Forward).expect("a power of two"),
                BatchSize::LargeInput,
            )
        });
        group.bench_with_input(BenchmarkId::new("bellperson", log_n), &log_n, |b, _| {
            b.iter_batched_ref(
                || EvaluationDomain::<Scalar>::from_coeffs(values.clone()).expect("a supported size"),
                |domain| domain.fft(&worker, &mut None).expect("the CPU FFT does not fail"),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, msm_g1, msm_g2, ntt);
criterion_main!(benches);
