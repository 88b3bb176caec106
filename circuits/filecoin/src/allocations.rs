//! A constraint system for tests that keeps what is allocated, in order, and enforces
//! nothing: a witness generator or not, so that both of a circuit's paths can be compared.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

#[derive(Clone)]
pub(crate) struct Allocations {
    pub(crate) inputs: Vec<Scalar>,
    pub(crate) aux: Vec<Scalar>,
    generator: bool,
}

impl Allocations {
    /// An empty system (the constant one allocated) that says it is a witness generator
    /// if `generator`.
    pub(crate) fn new(generator: bool) -> Self {
        Self { inputs: vec![Scalar::ONE], aux: Vec::new(), generator }
    }
}

impl ConstraintSystem<Scalar> for Allocations {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
    }

    fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_witness_generator(&self) -> bool {
        self.generator
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        let (aux, inputs) = (self.aux.len(), self.inputs.len());
        self.aux.resize(aux + aux_n, Scalar::ZERO);
        self.inputs.resize(inputs + inputs_n, Scalar::ZERO);
        (&mut self.aux[aux..], &mut self.inputs[inputs..])
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.allocate_empty(0, n).1
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.allocate_empty(n, 0).0
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }
}
