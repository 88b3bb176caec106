//! Radix-2 NTTs over Fr on the current rayon pool, and the FFT part of Groth16.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use bellhop_plugin_sdk::{backend::NttDirection, PhaseTiming};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Work items smaller than this stay on one thread.
const MIN_PAR: usize = 1 << 11;

/// A twiddle table's key: `log2(n)` and whether it holds powers of `ω^-1`.
type TableKey = (u32, bool);

/// Twiddle tables `ω^0 .. ω^(n/2-1)` (or of `ω^-1`), cached per size and direction.
#[derive(Default)]
pub(crate) struct Twiddles(Mutex<HashMap<TableKey, Arc<Vec<Scalar>>>>);

impl Twiddles {
    fn get(&self, log_n: u32, inverse: bool) -> Arc<Vec<Scalar>> {
        let mut cache = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        cache
            .entry((log_n, inverse))
            .or_insert_with(|| {
                let omega = omega(log_n);
                let base = if inverse { omega.invert().expect("roots of unity are nonzero") } else { omega };
                Arc::new(powers(base, Scalar::ONE, (1usize << log_n) / 2))
            })
            .clone()
    }
}

/// The primitive `2^log_n`-th root of unity bellperson's `EvaluationDomain` uses.
fn omega(log_n: u32) -> Scalar {
    (log_n..Scalar::S).fold(Scalar::ROOT_OF_UNITY, |w, _| w.square())
}

/// `[start, start·base, start·base^2, ...]`, `len` of them, computed in parallel.
fn powers(base: Scalar, start: Scalar, len: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; len];
    scale_by_powers(&mut out, base, start, |slot, factor| *slot = factor);
    out
}

/// Calls `apply(v[i], start·base^i)` for every element, in parallel chunks.
fn scale_by_powers(values: &mut [Scalar], base: Scalar, start: Scalar, apply: impl Fn(&mut Scalar, Scalar) + Sync) {
    values.par_chunks_mut(MIN_PAR).enumerate().for_each(|(chunk, values)| {
        let mut factor = start * base.pow_vartime([(chunk * MIN_PAR) as u64]);
        for v in values {
            apply(v, factor);
            factor *= base;
        }
    });
}

fn multiply_by_powers(values: &mut [Scalar], base: Scalar, start: Scalar) {
    scale_by_powers(values, base, start, |v, factor| *v *= factor);
}

/// Reorders `values` by bit-reversed index.
fn bit_reverse(values: &mut [Scalar]) {
    let n = values.len();
    let shift = usize::BITS - n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits().checked_shr(shift).unwrap_or(0);
        if i < j {
            values.swap(i, j);
        }
    }
}

/// In-place unscaled radix-2 transform with the given twiddle table (`n/2` powers).
fn transform(values: &mut [Scalar], twiddles: &[Scalar]) {
    let n = values.len();
    if n <= 1 {
        return;
    }
    bit_reverse(values);
    let butterflies = |lo: &mut [Scalar], hi: &mut [Scalar], first: usize, step: usize| {
        for (j, (l, h)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
            let t = *h * twiddles[(first + j) * step];
            *h = *l - t;
            *l += t;
        }
    };
    let mut half = 1;
    while half < n {
        let step = n / (2 * half);
        if step >= rayon::current_num_threads() * 4 || n < MIN_PAR {
            // Many blocks: one block per task.
            values.par_chunks_mut(2 * half).with_min_len(MIN_PAR / (2 * half) + 1).for_each(|block| {
                let (lo, hi) = block.split_at_mut(half);
                butterflies(lo, hi, 0, step);
            });
        } else {
            // Few, large blocks: split each block's butterflies.
            for block in values.chunks_mut(2 * half) {
                let (lo, hi) = block.split_at_mut(half);
                lo.par_chunks_mut(MIN_PAR)
                    .zip(hi.par_chunks_mut(MIN_PAR))
                    .enumerate()
                    .for_each(|(i, (lo, hi))| butterflies(lo, hi, i * MIN_PAR, step));
            }
        }
        half *= 2;
    }
}

impl Twiddles {
    /// Applies `direction` to `values` (length `2^log_n`).
    pub(crate) fn ntt(&self, values: &mut [Scalar], log_n: u32, direction: NttDirection) {
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        match direction {
            NttDirection::Forward => transform(values, &self.get(log_n, false)),
            NttDirection::CosetForward => {
                multiply_by_powers(values, g, Scalar::ONE);
                transform(values, &self.get(log_n, false));
            }
            NttDirection::Inverse => {
                transform(values, &self.get(log_n, true));
                let n_inv = n_inverse(log_n);
                values.par_iter_mut().with_min_len(MIN_PAR).for_each(|v| *v *= n_inv);
            }
            NttDirection::CosetInverse => {
                transform(values, &self.get(log_n, true));
                multiply_by_powers(values, g.invert().expect("g is nonzero"), n_inverse(log_n));
            }
        }
    }

    /// `h = (A·B - C) / Z` in coefficient form, in `a[..n-1]`; see `Backend::compute_h`.
    pub(crate) fn compute_h(
        &self,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
        log_n: u32,
    ) -> Vec<PhaseTiming> {
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let n_inv = n_inverse(log_n);
        let (forward, inverse) = (self.get(log_n, false), self.get(log_n, true));
        let mut timings = Vec::with_capacity(3);

        // Evaluations on <ω> -> coefficients -> evaluations on g<ω>. The 1/n of the
        // inverse transform and the coset shift are one pass of scaling.
        let start = Instant::now();
        for values in [&mut *a, &mut *b, &mut *c] {
            transform(values, &inverse);
            multiply_by_powers(values, g, n_inv);
            transform(values, &forward);
        }
        timings.push(PhaseTiming::new("to_coset", start.elapsed()));

        let start = Instant::now();
        a.par_iter_mut()
            .zip(b.par_iter())
            .zip(c.par_iter())
            .with_min_len(MIN_PAR)
            .for_each(|((a, b), c)| *a = *a * b - c);
        timings.push(PhaseTiming::new("pointwise", start.elapsed()));

        // Back to coefficients: Z = g^n - 1 on the whole coset, folded into the scaling.
        let start = Instant::now();
        let z_inv = (g.pow_vartime([1u64 << log_n]) - Scalar::ONE).invert().expect("g is not a root of unity");
        transform(a, &inverse);
        multiply_by_powers(a, g.invert().expect("g is nonzero"), n_inv * z_inv);
        timings.push(PhaseTiming::new("from_coset", start.elapsed()));
        timings
    }
}

fn n_inverse(log_n: u32) -> Scalar {
    Scalar::from(1u64 << log_n).invert().expect("n is below the modulus")
}
