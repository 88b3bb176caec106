//! The constraint system that records what Groth16 needs: bellperson's `ProvingAssignment`.

use bellhop_plugin_sdk::{cast_vec, strategy::Assignment, strategy::Density};
use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::parts::{append_past_head, differs_in, Join};

/// A growable density bitmap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    fn with_capacity(bits: usize) -> Self {
        Self { words: Vec::with_capacity(bits.div_ceil(64)), len: 0 }
    }

    fn push_unset(&mut self) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        self.len += 1;
    }

    /// Marks variable `i` as used.
    pub fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// The 64 bits from bit `i` on (zeros past the end).
    fn word_at(&self, i: usize) -> u64 {
        let (word, shift) = (i / 64, i % 64);
        let low = self.words.get(word).map_or(0, |w| w >> shift);
        let high = if shift == 0 { 0 } else { self.words.get(word + 1).map_or(0, |w| w << (64 - shift)) };
        low | high
    }

    /// Joins `piece`, a piece's bitmap that begins with the `head` bits of this one: marks
    /// the head's variables it uses, then appends its bits past the head.
    fn join(&mut self, head: usize, piece: &Bits) {
        for i in (0..head).filter(|&i| piece.get(i)) {
            self.set(i);
        }
        let mut from = head;
        while from < piece.len {
            let count = (piece.len - from).min(64);
            let bits = piece.word_at(from) & (u64::MAX >> (64 - count));
            let shift = self.len % 64;
            if shift == 0 {
                self.words.push(bits);
            } else {
                *self.words.last_mut().expect("a partial word") |= bits << shift;
                if shift + count > 64 {
                    self.words.push(bits >> (64 - shift));
                }
            }
            self.len += count;
            from += count;
        }
    }

    fn into_density(self) -> Density {
        Density { words: self.words.into(), len: self.len as u64 }
    }
}

/// Which query of a constraint a linear combination is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// A.
    A,
    /// B.
    B,
    /// C.
    C,
}

/// How a [`ProvingCs`] evaluates the linear combinations of each constraint: the one
/// place strategies differ inside the constraint system.
pub trait Evaluate: Send {
    /// `sum coeff * value` over `lc`'s terms, marking in the densities (where given) the
    /// variables with a nonzero coefficient, as bellperson does.
    fn eval(
        &mut self,
        query: Query,
        lc: &LinearCombination<Scalar>,
        input_density: Option<&mut Bits>,
        aux_density: Option<&mut Bits>,
        inputs: &[Scalar],
        aux: &[Scalar],
    ) -> Scalar;
}

/// bellperson's evaluation: straight over the combination's terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Direct;

impl Evaluate for Direct {
    fn eval(
        &mut self,
        _: Query,
        lc: &LinearCombination<Scalar>,
        input_density: Option<&mut Bits>,
        aux_density: Option<&mut Bits>,
        inputs: &[Scalar],
        aux: &[Scalar],
    ) -> Scalar {
        eval(lc, input_density, aux_density, inputs, aux)
    }
}

/// How much to reserve up front; see the `presized` strategy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capacity {
    /// Constraints, input constraints included.
    pub constraints: usize,
    /// Public inputs, the constant one included.
    pub inputs: usize,
    /// Private variables.
    pub aux: usize,
}

/// Records, per constraint, the A, B and C evaluations at the witness, the assignment,
/// and which variables A and B use — exactly as bellperson 0.27's `ProvingAssignment`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProvingCs<E = Direct> {
    a: Vec<Scalar>,
    b: Vec<Scalar>,
    c: Vec<Scalar>,
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    a_aux_density: Bits,
    b_input_density: Bits,
    b_aux_density: Bits,
    evaluator: E,
}

/// `sum coeff * value` over the nonzero terms of `lc`, marking the variables it uses.
pub fn eval(
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut Bits>,
    mut aux_density: Option<&mut Bits>,
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&index, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            acc += if *coeff == Scalar::ONE { inputs[index] } else { inputs[index] * coeff };
            if let Some(d) = input_density.as_deref_mut() {
                d.set(index);
            }
        }
    }
    for (&index, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            acc += if *coeff == Scalar::ONE { aux[index] } else { aux[index] * coeff };
            if let Some(d) = aux_density.as_deref_mut() {
                d.set(index);
            }
        }
    }
    acc
}

impl<E: Evaluate> ProvingCs<E> {
    /// An empty system with room reserved for `capacity`.
    pub fn with_capacity(capacity: Capacity, evaluator: E) -> Self {
        Self {
            a: Vec::with_capacity(capacity.constraints),
            b: Vec::with_capacity(capacity.constraints),
            c: Vec::with_capacity(capacity.constraints),
            inputs: Vec::with_capacity(capacity.inputs),
            aux: Vec::with_capacity(capacity.aux),
            a_aux_density: Bits::with_capacity(capacity.aux),
            b_input_density: Bits::with_capacity(capacity.inputs),
            b_aux_density: Bits::with_capacity(capacity.aux),
            evaluator,
        }
    }

    /// Synthesizes `circuit` as bellperson's prover does: [`Self::begin`], the circuit,
    /// [`Self::finish`].
    pub fn synthesize<C: Circuit<Scalar>>(
        circuit: C,
        capacity: Capacity,
        evaluator: E,
    ) -> Result<Self, SynthesisError> {
        let mut cs = Self::begin(capacity, evaluator)?;
        circuit.synthesize(&mut cs)?;
        Ok(cs.finish())
    }

    /// A system ready for a circuit: the constant one allocated as input 0.
    pub fn begin(capacity: Capacity, evaluator: E) -> Result<Self, SynthesisError> {
        let mut cs = Self::with_capacity(capacity, evaluator);
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        Ok(cs)
    }

    /// Ends synthesis as bellperson's prover does: one constraint `input * 0 = 0` per input.
    pub fn finish(mut self) -> Self {
        for i in 0..self.inputs.len() {
            self.enforce(|| "input", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
        }
        self
    }

    /// The sizes this system reached.
    pub fn size(&self) -> Capacity {
        Capacity { constraints: self.a.len(), inputs: self.inputs.len(), aux: self.aux.len() }
    }

    /// The assignment as it crosses the ABI (the vectors move, nothing is copied).
    pub fn into_assignment(self) -> Assignment {
        self.into_parts().0
    }

    /// The assignment and the evaluator (with whatever it recorded).
    pub fn into_parts(self) -> (Assignment, E) {
        let assignment = Assignment {
            a: cast_vec(self.a).into(),
            b: cast_vec(self.b).into(),
            c: cast_vec(self.c).into(),
            inputs: cast_vec(self.inputs).into(),
            aux: cast_vec(self.aux).into(),
            a_aux_density: self.a_aux_density.into_density(),
            b_input_density: self.b_input_density.into_density(),
            b_aux_density: self.b_aux_density.into_density(),
        };
        (assignment, self.evaluator)
    }
}

impl<E: Evaluate> Join for ProvingCs<E> {
    fn sizes(&self) -> Capacity {
        self.size()
    }

    fn differs(&self, head: Capacity, piece: &Self) -> Option<String> {
        differs_in(&self.inputs, head.inputs, &piece.inputs, "inputs")
            .or_else(|| differs_in(&self.aux, head.aux, &piece.aux, "aux values"))
            .or_else(|| differs_in(&self.a, head.constraints, &piece.a, "A evaluations"))
            .or_else(|| differs_in(&self.b, head.constraints, &piece.b, "B evaluations"))
            .or_else(|| differs_in(&self.c, head.constraints, &piece.c, "C evaluations"))
    }

    fn join(&mut self, head: Capacity, pieces: Vec<Self>) {
        let past = |size: fn(&Capacity) -> usize| -> usize {
            pieces.iter().map(|piece| size(&piece.size()) - size(&head)).sum()
        };
        let (inputs, aux, constraints) = (past(|s| s.inputs), past(|s| s.aux), past(|s| s.constraints));
        self.inputs.reserve_exact(inputs);
        self.aux.reserve_exact(aux);
        for values in [&mut self.a, &mut self.b, &mut self.c] {
            values.reserve_exact(constraints);
        }
        // Piece by piece, each freed once copied: memory holds about one assignment, not two.
        for piece in pieces {
            append_past_head(&mut self.inputs, head.inputs, &piece.inputs);
            append_past_head(&mut self.aux, head.aux, &piece.aux);
            append_past_head(&mut self.a, head.constraints, &piece.a);
            append_past_head(&mut self.b, head.constraints, &piece.b);
            append_past_head(&mut self.c, head.constraints, &piece.c);
            self.a_aux_density.join(head.aux, &piece.a_aux_density);
            self.b_aux_density.join(head.aux, &piece.b_aux_density);
            self.b_input_density.join(head.inputs, &piece.b_input_density);
        }
    }
}

impl<E: Evaluate> ConstraintSystem<Scalar> for ProvingCs<E> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        self.a_aux_density.push_unset();
        self.b_aux_density.push_unset();
        Ok(Variable(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        self.b_input_density.push_unset();
        Ok(Variable(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let (a, b, c) = (a(LinearCombination::zero()), b(LinearCombination::zero()), c(LinearCombination::zero()));
        let (inputs, aux, e) = (&self.inputs, &self.aux, &mut self.evaluator);
        // Inputs have full density in A: every input gets an `input * 0 = 0` constraint.
        let a = e.eval(Query::A, &a, None, Some(&mut self.a_aux_density), inputs, aux);
        let b = e.eval(Query::B, &b, Some(&mut self.b_input_density), Some(&mut self.b_aux_density), inputs, aux);
        let c = e.eval(Query::C, &c, None, None, inputs, aux);
        self.a.push(a);
        self.b.push(b);
        self.c.push(c);
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
