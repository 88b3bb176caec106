//! `chain:N`: N squarings `x_{i+1} = x_i^2 + i`; `x_N` is the public output.

use bellpepper_core::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand::RngCore;

/// A chain of `length` squaring constraints from a private start.
pub struct Chain {
    length: usize,
    start: Scalar,
}

impl Chain {
    pub(crate) fn random(length: usize, rng: &mut impl RngCore) -> Self {
        Self { length, start: Scalar::random(rng) }
    }

    /// The value of `x_N`.
    pub(crate) fn public_inputs(&self) -> Vec<Scalar> {
        let end = (0..self.length).fold(self.start, |x, i| x.square() + Scalar::from(i as u64));
        vec![end]
    }

    pub(crate) fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut value = self.start;
        let mut x = cs.alloc(|| "x0", || Ok(value))?;
        for i in 0..self.length {
            let step = Scalar::from(i as u64);
            value = value.square() + step;
            let next = if i + 1 == self.length {
                cs.alloc_input(|| "output", || Ok(value))?
            } else {
                cs.alloc(|| format!("x{}", i + 1), || Ok(value))?
            };
            cs.enforce(|| format!("square {i}"), |lc| lc + x, |lc| lc + x, |lc| lc + next - (step, CS::one()));
            x = next;
        }
        Ok(())
    }
}
