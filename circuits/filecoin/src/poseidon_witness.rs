//! The witness of neptune's Poseidon circuit (`neptune::circuit::poseidon_hash`, which
//! filecoin-proofs' Poseidon hashers use), computed on plain field elements.
//!
//! Between S-boxes the circuit keeps its state as linear combinations, and builds them
//! even when the constraint system only wants the witness. [`poseidon`] allocates the same
//! variables (each S-box's input where it is not a variable yet, then its square, fourth
//! power and output; at the end the hash) with the same values, in the same order, and
//! builds nothing else. The tests hold it to the gadget.

use bellpepper_core::{num::AllocatedNum, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use neptune::poseidon::{Arity, PoseidonConstants};

/// An element of the permutation's state: its value, and whether the circuit holds it as
/// a variable (the preimage, an S-box's output) or as a linear combination of them.
#[derive(Clone, Copy)]
struct Elt {
    value: Scalar,
    allocated: bool,
}

/// The circuit's permutation, round by round, allocating what it allocates.
struct Permutation<'a, CS, A: Arity<Scalar>> {
    cs: &'a mut CS,
    constants: &'a PoseidonConstants<Scalar, A>,
    state: Vec<Elt>,
    /// The next of `compressed_round_constants`.
    offset: usize,
    /// Rounds done, which choose the MDS matrix.
    round: usize,
}

impl<CS: ConstraintSystem<Scalar>, A: Arity<Scalar>> Permutation<'_, CS, A> {
    fn alloc(&mut self, value: Scalar) -> Result<Scalar, SynthesisError> {
        AllocatedNum::alloc(&mut *self.cs, || Ok(value))?;
        Ok(value)
    }

    /// `ensure_allocated`: a linear combination becomes a variable.
    fn input(&mut self, e: Elt) -> Result<Scalar, SynthesisError> {
        if e.allocated {
            return Ok(e.value);
        }
        self.alloc(e.value)
    }

    /// `quintic_s_box` (`pre` none) and `quintic_s_box_pre_add`: ((l + pre)^5) + post, with
    /// (l + pre)^2, its square and the result allocated.
    fn s_box(&mut self, e: Elt, pre: Option<Scalar>, post: Option<Scalar>) -> Result<Elt, SynthesisError> {
        let l = self.input(e)? + pre.unwrap_or(Scalar::ZERO);
        let l2 = self.alloc(l.square())?;
        let l4 = self.alloc(l2.square())?;
        let value = self.alloc(l4 * l + post.unwrap_or(Scalar::ZERO))?;
        Ok(Elt { value, allocated: true })
    }

    fn keys(&mut self, take: bool) -> Option<Vec<Scalar>> {
        let width = self.state.len();
        take.then(|| {
            let keys = self.constants.compressed_round_constants[self.offset..self.offset + width].to_vec();
            self.offset += width;
            keys
        })
    }

    fn full_round(&mut self, first: bool, last: bool) -> Result<(), SynthesisError> {
        let pre = self.keys(first);
        let post = self.keys(first || !last);
        for i in 0..self.state.len() {
            let (pre, post) = (pre.as_ref().map(|k| k[i]), post.as_ref().map(|k| k[i]));
            self.state[i] = match (first, i) {
                // The domain tag is a constant: its S-box allocates nothing.
                (true, 0) => {
                    let l = self.state[0].value + pre.unwrap_or(Scalar::ZERO);
                    Elt { value: l.square().square() * l + post.unwrap_or(Scalar::ZERO), allocated: false }
                }
                _ => self.s_box(self.state[i], pre, post)?,
            };
        }
        self.mix();
        Ok(())
    }

    fn partial_round(&mut self) -> Result<(), SynthesisError> {
        let key = self.constants.compressed_round_constants[self.offset];
        self.offset += 1;
        self.state[0] = self.s_box(self.state[0], None, Some(key))?;
        self.mix();
        Ok(())
    }

    /// `product_mds`: the pre-sparse matrix before the partial rounds, the sparse ones
    /// during them, the MDS matrix otherwise; every element a linear combination after.
    fn mix(&mut self) {
        let c = self.constants;
        let sparse_offset = c.half_full_rounds - 1;
        let values: Vec<Scalar> = self.state.iter().map(|e| e.value).collect();
        let dense = |matrix: &[Vec<Scalar>]| -> Vec<Scalar> {
            (0..values.len()).map(|j| values.iter().zip(matrix).map(|(v, row)| *v * row[j]).sum()).collect()
        };
        let mixed = if self.round == sparse_offset {
            dense(&c.pre_sparse_matrix)
        } else if self.round > sparse_offset && self.round < c.half_full_rounds + c.partial_rounds {
            let sparse = &c.sparse_matrixes[self.round - sparse_offset - 1];
            let first = values.iter().zip(&sparse.w_hat).map(|(v, w)| *v * w).sum();
            std::iter::once(first)
                .chain((1..values.len()).map(|j| values[j] + values[0] * sparse.v_rest[j - 1]))
                .collect()
        } else {
            dense(&c.mds_matrices.m)
        };
        self.state = mixed.into_iter().map(|value| Elt { value, allocated: false }).collect();
        self.round += 1;
    }
}

/// The witness of `neptune::circuit::poseidon_hash(cs, preimage, constants)`: the same
/// variables, in the same order, allocated in `cs`; returns the hash's. For a constraint
/// system that only computes the witness: nothing is enforced.
pub fn poseidon<CS: ConstraintSystem<Scalar>, A: Arity<Scalar>>(
    cs: &mut CS,
    preimage: &[AllocatedNum<Scalar>],
    constants: &PoseidonConstants<Scalar, A>,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    if preimage.len() != A::to_usize() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut state = vec![Elt { value: constants.domain_tag, allocated: false }];
    for num in preimage {
        state.push(Elt { value: num.get_value().ok_or(SynthesisError::AssignmentMissing)?, allocated: true });
    }
    let mut permutation = Permutation { cs, constants, state, offset: 0, round: 0 };
    let half = constants.full_rounds / 2;
    permutation.full_round(true, false)?;
    for _ in 1..half {
        permutation.full_round(false, false)?;
    }
    for _ in 0..constants.partial_rounds {
        permutation.partial_round()?;
    }
    for _ in 1..half {
        permutation.full_round(false, false)?;
    }
    permutation.full_round(false, true)?;
    // The last mix leaves every element a linear combination: the hash is allocated.
    let hash = permutation.state[1].value;
    AllocatedNum::alloc(cs, || Ok(hash))
}

#[cfg(test)]
mod tests {
    use filecoin_hashers::{POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::allocations::Allocations;

    fn check<A: Arity<Scalar>>(constants: &PoseidonConstants<Scalar, A>, rng: &mut ChaCha8Rng) {
        let mut cs = Allocations::new(true);
        let preimage: Vec<AllocatedNum<Scalar>> = (0..A::to_usize())
            .map(|_| AllocatedNum::alloc(&mut cs, || Ok(Scalar::random(&mut *rng))).unwrap())
            .collect();
        let mut ours = cs.clone();
        let hash = neptune::circuit::poseidon_hash(&mut cs, preimage.clone(), constants).unwrap();
        let native = poseidon(&mut ours, &preimage, constants).unwrap();
        assert_eq!(ours.aux.len(), cs.aux.len(), "arity {}: allocation count", A::to_usize());
        assert!(ours.aux == cs.aux, "arity {}: an allocation differs", A::to_usize());
        assert_eq!(native.get_value(), hash.get_value());
    }

    #[test]
    fn allocates_what_the_gadget_allocates() {
        let rng = &mut ChaCha8Rng::seed_from_u64(23);
        check(&POSEIDON_CONSTANTS_2, rng);
        check(&POSEIDON_CONSTANTS_4, rng);
        check(&POSEIDON_CONSTANTS_8, rng);
        check(&POSEIDON_CONSTANTS_11, rng);
    }
}
