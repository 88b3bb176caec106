//! CPU primitives, Bellhop against bellperson 0.27, in the same run:
//! MSM on G1 at 2^12..2^18 points and the forward NTT at 2^12..2^20.
//!
//! `cargo bench -p bellhop-benches --bench primitives`; `scripts/bench-ratios.py` turns
//! the results into the ratio table of docs/BENCHMARKS.md.

use std::sync::Arc;

use bellhop_benches::{bases, scalars};
use bellhop_cpu::CpuBackend;
use bellhop_plugin_sdk::{backend::Backend, backend::NttDirection, cast_slice, cast_slice_mut};
use bellperson::domain::EvaluationDomain;
use blstrs::{G1Affine, Scalar};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use ec_gpu_gen::{
    multiexp_cpu::{multiexp_cpu, FullDensity},
    threadpool::Worker,
};
use ff::PrimeField;

fn msm_g1(c: &mut Criterion) {
    let backend = CpuBackend::new(0).expect("a thread pool");
    let worker = Worker::new();
    let max = 1 << 18;
    let all_bases: Vec<G1Affine> = bases(max, 1);
    let all_scalars = scalars(max, 2);
    let mut group = c.benchmark_group("msm_g1");
    group.sample_size(10);
    for log_n in [12u32, 14, 16, 18] {
        let n = 1usize << log_n;
        let (points, exps) = (&all_bases[..n], &all_scalars[..n]);
        group.bench_with_input(BenchmarkId::new("bellhop-cpu", log_n), &n, |b, _| {
            b.iter(|| backend.msm_g1(cast_slice(points), cast_slice(exps)).expect("valid input"))
        });
        // bellperson's prover converts scalars and wraps bases once, outside its MSMs.
        let shared_bases = Arc::new(points.to_vec());
        let reprs = Arc::new(exps.iter().map(|s| s.to_repr()).collect::<Vec<_>>());
        group.bench_with_input(BenchmarkId::new("bellperson", log_n), &n, |b, _| {
            b.iter(|| {
                multiexp_cpu::<FullDensity, _, G1Affine, _>(
                    &worker,
                    (shared_bases.clone(), 0),
                    FullDensity,
                    reprs.clone(),
                )
                .wait()
                .expect("valid input")
            })
        });
    }
    group.finish();
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

criterion_group!(benches, msm_g1, ntt);
criterion_main!(benches);
