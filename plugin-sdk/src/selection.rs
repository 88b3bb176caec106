//! The A and B queries' scalars as selections over a proof's variables (its inputs, then
//! its aux values), for a device backend's [`proof_msms`](crate::backend::Backend::proof_msms)
//! to gather where the variables lie: one thread per variable writes it, if marked, to
//! `offsets[word] + (marked bits of its word below it)`, or for the host to gather
//! ([`Selection::gather`]).

use rayon::prelude::*;

use crate::{
    strategy::{Assignment, Density},
    types::Fr,
};

/// Density words per task of [`Selection::gather`]: 16,384 variables.
const GATHER_WORDS: usize = 256;

/// Which of the variables an MSM takes, in order.
pub struct Selection {
    /// Bit `i` marks variable `i`, 64 to a word.
    pub words: Vec<u64>,
    /// The marked variables before each word.
    pub offsets: Vec<u64>,
    /// The marked variables.
    pub count: usize,
}

impl Selection {
    /// The A query's scalars: every input, then the aux values the A density marks.
    pub fn a_query(assignment: &Assignment) -> Self {
        let inputs = Density::from_bits(assignment.inputs.iter().map(|_| true));
        Self::of(&inputs, &assignment.a_aux_density)
    }

    /// The B query's scalars: the inputs and then the aux values the B densities mark.
    pub fn b_query(assignment: &Assignment) -> Self {
        Self::of(&assignment.b_input_density, &assignment.b_aux_density)
    }

    /// `inputs`' bits followed by `aux`'s; neither has a bit set past its length.
    fn of(inputs: &Density, aux: &Density) -> Self {
        let (first, len) = (inputs.len as usize, inputs.len as usize + aux.len as usize);
        let mut words = vec![0u64; len.div_ceil(64)];
        words[..inputs.words.len()].copy_from_slice(&inputs.words);
        let (base, shift) = (first / 64, first % 64);
        for (i, &word) in aux.words.iter().enumerate() {
            words[base + i] |= word << shift;
            if shift != 0 && word >> (64 - shift) != 0 {
                words[base + i + 1] |= word >> (64 - shift);
            }
        }
        let mut count = 0u64;
        let offsets = words
            .iter()
            .map(|word| {
                let before = count;
                count += u64::from(word.count_ones());
                before
            })
            .collect();
        Self { words, offsets, count: count as usize }
    }

    /// The marked variables' values in order, the variables being `inputs` then `aux` (the
    /// assignment the selection was made of), gathered in parallel without copying the
    /// variables: each task copies the values of its words to its own part of the output.
    pub fn gather(&self, inputs: &[Fr], aux: &[Fr]) -> Vec<Fr> {
        let mut out = Vec::new();
        out.par_extend(rayon::iter::repeat_n(Fr::default(), self.count));
        let mut rest = out.as_mut_slice();
        let parts: Vec<&mut [Fr]> = (0..self.words.len())
            .step_by(GATHER_WORDS)
            .map(|first| {
                let end = self.offsets.get(first + GATHER_WORDS).map_or(self.count, |&o| o as usize);
                let (part, tail) = std::mem::take(&mut rest).split_at_mut(end - self.offsets[first] as usize);
                rest = tail;
                part
            })
            .collect();
        self.words.par_chunks(GATHER_WORDS).zip(parts).enumerate().for_each(|(task, (words, part))| {
            let mut next = part.iter_mut();
            for (w, &word) in words.iter().enumerate() {
                let first = (task * GATHER_WORDS + w) * 64;
                let mut word = word;
                while word != 0 {
                    let i = first + word.trailing_zeros() as usize;
                    *next.next().expect("counted") = match i.checked_sub(inputs.len()) {
                        None => inputs[i],
                        Some(j) => aux[j],
                    };
                    word &= word - 1;
                }
            }
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the GPU's gather kernel does with a selection, on the host.
    fn gather_like_the_kernel(selection: &Selection, values: &[u64]) -> Vec<u64> {
        let mut out = vec![u64::MAX; selection.count];
        for (i, &value) in values.iter().enumerate() {
            let word = selection.words[i / 64];
            let bit = i % 64;
            if word >> bit & 1 == 1 {
                let below = (word & ((1u64 << bit) - 1)).count_ones() as u64;
                out[(selection.offsets[i / 64] + below) as usize] = value;
            }
        }
        out
    }

    #[test]
    fn selections_take_the_marked_variables_in_order() {
        // A xorshift, for densities without a dependency.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut coin = move |p: f64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 11) as f64) < p * (1u64 << 53) as f64
        };
        for inputs in [1, 2, 63, 64, 65, 130] {
            for aux in [0, 1, 63, 64, 65, 200, 1000, 16_383, 16_385, 40_000] {
                for density in [0.0, 0.3, 1.0] {
                    let mut bits = |n: usize| -> Vec<bool> { (0..n).map(|_| coin(density)).collect() };
                    let (b_in, a_aux, b_aux) = (bits(inputs), bits(aux), bits(aux));
                    let assignment = Assignment {
                        inputs: vec![Default::default(); inputs].into(),
                        aux: vec![Default::default(); aux].into(),
                        a_aux_density: Density::from_bits(a_aux.iter().copied()),
                        b_input_density: Density::from_bits(b_in.iter().copied()),
                        b_aux_density: Density::from_bits(b_aux.iter().copied()),
                        ..Default::default()
                    };
                    let values: Vec<u64> = (0..(inputs + aux) as u64).collect();
                    let marked = |leading: &[bool], trailing: &[bool]| -> Vec<u64> {
                        leading.iter().chain(trailing).zip(&values).filter(|(m, _)| **m).map(|(_, v)| *v).collect()
                    };
                    let case = format!("{inputs} inputs, {aux} aux, density {density}");
                    let a = Selection::a_query(&assignment);
                    assert_eq!(gather_like_the_kernel(&a, &values), marked(&vec![true; inputs], &a_aux), "A, {case}");
                    let b = Selection::b_query(&assignment);
                    assert_eq!(gather_like_the_kernel(&b, &values), marked(&b_in, &b_aux), "B, {case}");
                    // The host's gather, over the inputs and the aux values apart.
                    let fr = |v: &[u64]| v.iter().map(|&v| Fr([v, 0, 0, 0])).collect::<Vec<_>>();
                    let (ins, auxs) = (fr(&values[..inputs]), fr(&values[inputs..]));
                    assert_eq!(a.gather(&ins, &auxs), fr(&marked(&vec![true; inputs], &a_aux)), "A gathered, {case}");
                    assert_eq!(b.gather(&ins, &auxs), fr(&marked(&b_in, &b_aux)), "B gathered, {case}");
                    assert_eq!(a.words.len(), (inputs + aux).div_ceil(64), "{case}");
                }
            }
        }
    }
}
