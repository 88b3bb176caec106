//! A circuit shape's constraint matrices, how they are recorded, and how a witness is
//! turned into the A, B and C evaluations with them.

use std::collections::HashMap;

use bellhop_plugin_sdk::{
    cast_slice, cast_slice_mut, cast_vec,
    strategy::{Assignment, Buffers, Density},
    types::Fr,
};
use bellhop_synthesis_kit::{append_past_head, differs_in, eval, Bits, Capacity, Evaluate, Join, Query};
use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Column tag for public inputs; other columns are aux variables.
pub(crate) const INPUT: u32 = 1 << 31;

/// Rows per parallel work item of the sparse products.
const ROWS_PER_TASK: usize = 4096;

/// One sparse matrix in compressed sparse row form; coefficients are indices into the
/// recording's table of distinct coefficients (index 0 is one, which needs no multiply).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Csr {
    pub(crate) row_ptr: Vec<u64>,
    pub(crate) cols: Vec<u32>,
    pub(crate) coeffs: Vec<u32>,
}

impl Csr {
    fn new() -> Self {
        Self { row_ptr: vec![0], cols: Vec::new(), coeffs: Vec::new() }
    }

    /// `M · z` where `z` is the inputs, then the aux variables, each with its [`Kind`].
    fn multiply(&self, table: &[Scalar], inputs: (&[Scalar], &[Kind]), aux: (&[Scalar], &[Kind])) -> Vec<Scalar> {
        // Each row written once, by the task that computes it (no zero-filled vector first:
        // `vec!` of a field element writes it on one thread).
        let mut out = Vec::with_capacity(self.rows());
        (0..self.rows())
            .into_par_iter()
            .with_min_len(ROWS_PER_TASK)
            .map(|row| self.row(row, table, inputs, aux))
            .collect_into_vec(&mut out);
        out
    }

    /// [`Csr::multiply`] into `out`, which has a place for every row.
    fn multiply_into(
        &self,
        table: &[Scalar],
        inputs: (&[Scalar], &[Kind]),
        aux: (&[Scalar], &[Kind]),
        out: &mut [Scalar],
    ) {
        out.par_iter_mut()
            .with_min_len(ROWS_PER_TASK)
            .enumerate()
            .for_each(|(row, value)| *value = self.row(row, table, inputs, aux));
    }

    fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// Row `row` of `M · z`.
    fn row(&self, row: usize, table: &[Scalar], inputs: (&[Scalar], &[Kind]), aux: (&[Scalar], &[Kind])) -> Scalar {
        let (start, end) = (self.row_ptr[row] as usize, self.row_ptr[row + 1] as usize);
        let mut acc = Scalar::ZERO;
        for (&col, &coeff) in self.cols[start..end].iter().zip(&self.coeffs[start..end]) {
            let ((values, kinds), i) =
                if col & INPUT != 0 { (inputs, (col & !INPUT) as usize) } else { (aux, col as usize) };
            // Boolean-heavy circuits: most values are 0 or 1, which need no multiply
            // and no load of the value itself.
            match (kinds[i], coeff) {
                (Kind::Zero, _) => {}
                (Kind::One, 0) => acc += Scalar::ONE,
                (Kind::One, c) => acc += table[c as usize],
                (Kind::Other, 0) => acc += values[i],
                (Kind::Other, c) => acc += values[i] * table[c as usize],
            }
        }
        acc
    }
}

/// What a witness value is, as far as multiplying by it goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Zero,
    One,
    Other,
}

fn kinds(values: &[Scalar]) -> Vec<Kind> {
    values
        .par_iter()
        .with_min_len(ROWS_PER_TASK)
        .map(|v| {
            // Equality of limbs, not `is_zero`'s constant-time comparison: a witness is
            // no secret from its prover.
            if *v == Scalar::ZERO {
                Kind::Zero
            } else if *v == Scalar::ONE {
                Kind::One
            } else {
                Kind::Other
            }
        })
        .collect()
}

/// Everything about a circuit shape that does not depend on its witness.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    pub(crate) num_inputs: usize,
    pub(crate) num_aux: usize,
    pub(crate) table: Vec<Scalar>,
    pub(crate) a: Csr,
    pub(crate) b: Csr,
    pub(crate) c: Csr,
    pub(crate) a_aux_density: Density,
    pub(crate) b_input_density: Density,
    pub(crate) b_aux_density: Density,
}

impl Recording {
    /// Why `witness` is not of the circuit this recording was made of, if its variable
    /// counts say so. (Constraints cannot be counted: witness-aware gadgets skip `enforce`.)
    pub(crate) fn mismatch(&self, witness: &WitnessCs) -> Option<String> {
        let (ours, theirs) = ((self.num_inputs, self.num_aux), (witness.inputs.len(), witness.aux.len()));
        (ours != theirs).then(|| {
            format!("it has {} inputs and {} aux variables, the circuit {} and {}", ours.0, ours.1, theirs.0, theirs.1)
        })
    }

    /// The number of constraints.
    pub(crate) fn constraints(&self) -> usize {
        self.a.rows()
    }

    /// The first constraint that a, b and c made with this recording do not satisfy
    /// (a·b ≠ c): a witness the recorded matrices do not fit, as a circuit changed since it
    /// was recorded gives.
    pub(crate) fn unsatisfied(a: &[Fr], b: &[Fr], c: &[Fr]) -> Option<usize> {
        let (a, b, c): (&[Scalar], &[Scalar], &[Scalar]) = (cast_slice(a), cast_slice(b), cast_slice(c));
        (0..a.len()).into_par_iter().find_first(|&i| a[i] * b[i] != c[i])
    }

    /// The assignment of the witness `(inputs, aux)`: a, b, c as sparse products, in new
    /// vectors or, where `into` is given (of this recording's sizes), written into it with
    /// aux and left empty in the assignment.
    pub(crate) fn assignment(
        &self,
        inputs: Vec<Scalar>,
        aux: Vec<Scalar>,
        into: Option<&mut Buffers<'_>>,
    ) -> Assignment {
        let (input_kinds, aux_kinds) = (kinds(&inputs), kinds(&aux));
        let (z_in, z_aux) = ((&inputs[..], &input_kinds[..]), (&aux[..], &aux_kinds[..]));
        let (a, b, c, aux) = match into {
            None => {
                let ((a, b), c) = rayon::join(
                    || {
                        rayon::join(
                            || self.a.multiply(&self.table, z_in, z_aux),
                            || self.b.multiply(&self.table, z_in, z_aux),
                        )
                    },
                    || self.c.multiply(&self.table, z_in, z_aux),
                );
                (cast_vec(a).into(), cast_vec(b).into(), cast_vec(c).into(), cast_vec(aux).into())
            }
            Some(into) => {
                let (a, b, c) = (cast_slice_mut(into.a), cast_slice_mut(into.b), cast_slice_mut(into.c));
                rayon::join(
                    || {
                        rayon::join(
                            || self.a.multiply_into(&self.table, z_in, z_aux, a),
                            || self.b.multiply_into(&self.table, z_in, z_aux, b),
                        )
                    },
                    || {
                        rayon::join(
                            || self.c.multiply_into(&self.table, z_in, z_aux, c),
                            || {
                                into.aux
                                    .par_chunks_mut(ROWS_PER_TASK)
                                    .zip(cast_slice::<Scalar, Fr>(&aux).par_chunks(ROWS_PER_TASK))
                                    .for_each(|(to, from)| to.copy_from_slice(from))
                            },
                        )
                    },
                );
                Default::default()
            }
        };
        Assignment {
            a,
            b,
            c,
            inputs: cast_vec(inputs).into(),
            aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        }
    }
}

/// Evaluates as the baseline does and records each row's nonzero terms.
pub(crate) struct Recorder {
    matrices: [Csr; 3],
    table: Vec<Scalar>,
    index: HashMap<[u8; 32], u32>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self { matrices: [Csr::new(), Csr::new(), Csr::new()], table: vec![Scalar::ONE], index: HashMap::new() }
    }
}

impl Recorder {
    fn coefficient(&mut self, c: &Scalar) -> u32 {
        if *c == Scalar::ONE {
            return 0;
        }
        let next = self.table.len() as u32;
        *self.index.entry(c.to_repr()).or_insert_with(|| {
            self.table.push(*c);
            next
        })
    }

    /// The recording, given the densities the constraint system ended with.
    pub(crate) fn finish(self, num_inputs: usize, num_aux: usize, assignment: &Assignment) -> Recording {
        let [a, b, c] = self.matrices;
        Recording {
            num_inputs,
            num_aux,
            table: self.table,
            a,
            b,
            c,
            a_aux_density: assignment.a_aux_density.clone(),
            b_input_density: assignment.b_input_density.clone(),
            b_aux_density: assignment.b_aux_density.clone(),
        }
    }
}

impl Evaluate for Recorder {
    fn eval(
        &mut self,
        query: Query,
        lc: &LinearCombination<Scalar>,
        input_density: Option<&mut Bits>,
        aux_density: Option<&mut Bits>,
        inputs: &[Scalar],
        aux: &[Scalar],
    ) -> Scalar {
        let mut terms = Vec::new();
        for (&i, c) in lc.iter_inputs().filter(|(_, c)| !bool::from(c.is_zero())) {
            terms.push((i as u32 | INPUT, self.coefficient(c)));
        }
        for (&i, c) in lc.iter_aux().filter(|(_, c)| !bool::from(c.is_zero())) {
            terms.push((i as u32, self.coefficient(c)));
        }
        let m = &mut self.matrices[query as usize];
        for (col, coeff) in terms {
            m.cols.push(col);
            m.coeffs.push(coeff);
        }
        m.row_ptr.push(m.cols.len() as u64);
        eval(lc, input_density, aux_density, inputs, aux)
    }
}

/// A constraint system that only computes the witness: `enforce` does nothing, and it
/// says so to gadgets (`is_witness_generator`). bellpepper's `WitnessCS` is the same but
/// cannot be presized and hands out its vectors only as copies.
pub(crate) struct WitnessCs {
    pub(crate) inputs: Vec<Scalar>,
    pub(crate) aux: Vec<Scalar>,
}

impl WitnessCs {
    /// Computes the witness of `circuit` with room for `recording`'s variables.
    pub(crate) fn synthesize<C: bellpepper_core::Circuit<Scalar>>(
        circuit: C,
        recording: &Recording,
    ) -> Result<Self, SynthesisError> {
        let mut cs = Self::begin(recording.num_inputs, recording.num_aux)?;
        circuit.synthesize(&mut cs)?;
        Ok(cs)
    }

    /// A system with room for `inputs` and `aux` values, the constant one allocated.
    pub(crate) fn begin(inputs: usize, aux: usize) -> Result<Self, SynthesisError> {
        let mut cs = Self { inputs: Vec::with_capacity(inputs), aux: Vec::with_capacity(aux) };
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        Ok(cs)
    }
}

impl Join for WitnessCs {
    fn sizes(&self) -> Capacity {
        Capacity { constraints: 0, inputs: self.inputs.len(), aux: self.aux.len() }
    }

    fn differs(&self, head: Capacity, piece: &Self) -> Option<String> {
        differs_in(&self.inputs, head.inputs, &piece.inputs, "inputs")
            .or_else(|| differs_in(&self.aux, head.aux, &piece.aux, "aux values"))
    }

    fn join(&mut self, head: Capacity, pieces: Vec<Self>) {
        self.inputs.reserve_exact(pieces.iter().map(|piece| piece.inputs.len() - head.inputs).sum());
        self.aux.reserve_exact(pieces.iter().map(|piece| piece.aux.len() - head.aux).sum());
        for piece in pieces {
            append_past_head(&mut self.inputs, head.inputs, &piece.inputs);
            append_past_head(&mut self.aux, head.aux, &piece.aux);
        }
    }
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable(Index::Input(self.inputs.len() - 1)))
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

    /// Gadgets may skip building constraints here (neptune's Poseidon, the catalog's SHA-256).
    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        let (aux_start, inputs_start) = (self.aux.len(), self.inputs.len());
        self.aux.resize(aux_start + aux_n, Scalar::ZERO);
        self.inputs.resize(inputs_start + inputs_n, Scalar::ZERO);
        (&mut self.aux[aux_start..], &mut self.inputs[inputs_start..])
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
