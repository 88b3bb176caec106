//! The shape of a circuit's constraint system, counted from its blank circuit without a
//! witness: how many constraints and variables it has, and which variables A and B use.
//! That fixes the length of every query of its Groth16 parameters.

use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

/// Sizes of a constraint system as bellperson's prover synthesizes it: the constant one
/// as input 0, the circuit, then one `input * 0 = 0` constraint per input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CircuitShape {
    /// Constraints, the input constraints included.
    pub constraints: usize,
    /// Public inputs, the constant one included.
    pub inputs: usize,
    /// Private (aux) variables.
    pub aux: usize,
    /// Aux variables with a nonzero coefficient in some A (every input is in A).
    pub a_aux: usize,
    /// Inputs with a nonzero coefficient in some B.
    pub b_inputs: usize,
    /// Aux variables with a nonzero coefficient in some B.
    pub b_aux: usize,
}

impl CircuitShape {
    /// Counts `circuit`, which may be blank (its values are never asked for).
    pub fn of<C: Circuit<Scalar>>(circuit: C) -> Result<Self, SynthesisError> {
        let mut cs = Counter::default();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        for i in 0..cs.inputs {
            cs.enforce(|| "input", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
        }
        Ok(CircuitShape {
            constraints: cs.constraints,
            inputs: cs.inputs,
            aux: cs.aux,
            a_aux: cs.a_aux.count(),
            b_inputs: cs.b_inputs.count(),
            b_aux: cs.b_aux.count(),
        })
    }

    /// The evaluation domain: the constraints rounded up to a power of two.
    pub fn domain(&self) -> usize {
        self.constraints.max(1).next_power_of_two()
    }
}

/// Which indices are set, growing as they are.
#[derive(Default)]
struct BitSet(Vec<u64>);

impl BitSet {
    fn set(&mut self, i: usize) {
        let word = i / 64;
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (i % 64);
    }

    fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
}

#[derive(Default)]
struct Counter {
    constraints: usize,
    inputs: usize,
    aux: usize,
    a_aux: BitSet,
    b_inputs: BitSet,
    b_aux: BitSet,
}

/// Marks the variables `lc` uses with a nonzero coefficient.
fn mark(lc: &LinearCombination<Scalar>, inputs: Option<&mut BitSet>, aux: &mut BitSet) {
    if let Some(inputs) = inputs {
        lc.iter_inputs().filter(|(_, c)| !bool::from(c.is_zero())).for_each(|(&i, _)| inputs.set(i));
    }
    lc.iter_aux().filter(|(_, c)| !bool::from(c.is_zero())).for_each(|(&i, _)| aux.set(i));
}

impl ConstraintSystem<Scalar> for Counter {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        mark(&a(LinearCombination::zero()), None, &mut self.a_aux);
        mark(&b(LinearCombination::zero()), Some(&mut self.b_inputs), &mut self.b_aux);
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}
