//! Synthesis of a circuit cut into parts (`bellhop_circuits::Parts`): its pieces on many
//! threads, then joined.

use bellhop_circuits::CircuitSpec;
use bellhop_plugin_sdk::{ErrorKind, PluginError};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use rayon::prelude::*;

use crate::{synthesis_failed, Capacity};

/// A constraint system into which a circuit's pieces are synthesized apart and joined.
pub trait Join: ConstraintSystem<Scalar> + Send + Sized {
    /// The inputs, aux variables and constraints it holds.
    fn sizes(&self) -> Capacity;

    /// How `piece` does not begin with this system's first `head` inputs, aux variables
    /// and constraints, if it does not.
    fn differs(&self, head: Capacity, piece: &Self) -> Option<String>;

    /// Appends what each of `pieces`, in order, holds beyond the `head` it begins with as
    /// this system does (see [`Join::differs`]), and marks the head's variables they use.
    fn join(&mut self, head: Capacity, pieces: Vec<Self>);
}

/// Synthesizes a circuit of `spec` cut into `head` and `pieces` (see
/// `bellhop_circuits::Parts`), each piece into a `begin()` system of its own on the current
/// rayon pool, checked to begin with the head, then joined in order: the system that
/// synthesizing the whole circuit into `begin()`'s would hold.
pub fn synthesize_in_parts<CS: Join, C: Circuit<Scalar> + Send>(
    spec: CircuitSpec,
    head: C,
    pieces: Vec<C>,
    begin: impl Fn() -> Result<CS, SynthesisError> + Sync,
) -> Result<CS, PluginError> {
    let mut head_cs = begin().map_err(|e| synthesis_failed(spec, e))?;
    head.synthesize(&mut head_cs).map_err(|e| synthesis_failed(spec, e))?;
    let sizes = head_cs.sizes();
    let mut pieces = pieces
        .into_par_iter()
        .map(|piece| {
            let mut piece_cs = begin()?;
            piece.synthesize(&mut piece_cs)?;
            Ok(piece_cs)
        })
        .collect::<Result<Vec<_>, SynthesisError>>()
        .map_err(|e| synthesis_failed(spec, e))?;
    for (i, piece) in pieces.iter().enumerate() {
        if let Some(why) = head_cs.differs(sizes, piece) {
            let message = format!("{spec}, synthesized in parts: piece {i} does not begin with the head ({why})");
            return Err(PluginError::new(ErrorKind::INTERNAL, message));
        }
    }
    // The first piece is the head and its part: the others join it.
    let rest = pieces.split_off(pieces.len().min(1));
    let mut cs = pieces.pop().unwrap_or(head_cs);
    cs.join(sizes, rest);
    Ok(cs)
}

/// How `values` do not begin with `whole`'s first `head` (`what` names them), if not.
pub fn differs_in(whole: &[Scalar], head: usize, values: &[Scalar], what: &str) -> Option<String> {
    (values.len() < head || values[..head] != whole[..head]).then(|| format!("its first {head} {what} differ"))
}

/// Appends `values` past their first `head` to `whole`, copying on the current rayon pool.
pub fn append_past_head(whole: &mut Vec<Scalar>, head: usize, values: &[Scalar]) {
    whole.par_extend(values[head..].par_iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Direct, ProvingCs};
    use bellpepper_core::Variable;

    /// A head of `head_aux` variables and parts of the sizes in `parts`, each with an input
    /// of its own and constraints that use the head's variables in A and B.
    struct Toy {
        head_aux: usize,
        head_value: u64,
        parts: Vec<usize>,
        which: Which,
    }

    #[derive(Clone, Copy)]
    enum Which {
        Whole,
        Head,
        Piece(usize),
    }

    impl Circuit<Scalar> for Toy {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc_input(|| "x", || Ok(Scalar::from(3)))?;
            let head = (0..self.head_aux)
                .map(|i| cs.alloc(|| "h", || Ok(Scalar::from(self.head_value + i as u64))))
                .collect::<Result<Vec<Variable>, _>>()?;
            cs.enforce(|| "x", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + x);
            let parts = match self.which {
                Which::Whole => 0..self.parts.len(),
                Which::Head => 0..0,
                Which::Piece(j) => j..j + 1,
            };
            for j in parts {
                let input = cs.alloc_input(|| "input", || Ok(Scalar::from(j as u64)))?;
                let mut previous = head[j % self.head_aux];
                for k in 0..self.parts[j] {
                    let v = cs.alloc(|| "v", || Ok(Scalar::from((1000 * j + k) as u64)))?;
                    cs.enforce(|| "chain", |lc| lc + previous + x, |lc| lc + v + input, |lc| lc + v);
                    previous = v;
                }
                let (a, b) = (head[7 * j % self.head_aux], head[(5 * j + 1) % self.head_aux]);
                cs.enforce(|| "head", |lc| lc + a, |lc| lc + b, |lc| lc);
            }
            Ok(())
        }
    }

    fn spec() -> CircuitSpec {
        "chain:1".parse().unwrap()
    }

    fn toy(which: Which, head_value: u64) -> Toy {
        Toy { head_aux: 70, head_value, parts: vec![0, 1, 63, 64, 65, 130, 3], which }
    }

    fn in_parts(head_value: u64) -> Result<ProvingCs, PluginError> {
        let pieces = (0..toy(Which::Whole, 0).parts.len()).map(|j| toy(Which::Piece(j), head_value)).collect();
        synthesize_in_parts(spec(), toy(Which::Head, 0), pieces, || ProvingCs::begin(Capacity::default(), Direct))
    }

    #[test]
    fn parts_joined_are_the_whole_circuit() {
        let whole = ProvingCs::synthesize(toy(Which::Whole, 0), Capacity::default(), Direct).unwrap();
        let joined = in_parts(0).unwrap().finish();
        assert_eq!(joined.size(), whole.size());
        assert_eq!(joined.into_assignment(), whole.into_assignment());
    }

    #[test]
    fn a_piece_with_another_head_is_refused() {
        let e = in_parts(1).err().unwrap();
        assert_eq!(e.kind, ErrorKind::INTERNAL);
        let expected =
            "chain:1, synthesized in parts: piece 0 does not begin with the head (its first 70 aux values differ)";
        assert!(e.message.contains(expected), "{e}");
    }
}
