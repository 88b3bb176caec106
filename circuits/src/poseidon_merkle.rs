//! `poseidon-merkle:DEPTH`: a binary Merkle path hashed with neptune's Poseidon gadget.

use std::sync::OnceLock;

use bellpepper_core::{
    boolean::{AllocatedBit, Boolean},
    num::AllocatedNum,
    ConstraintSystem, SynthesisError,
};
use blstrs::Scalar;
use ff::Field;
use generic_array::typenum::U2;
use neptune::{circuit::poseidon_hash, poseidon::PoseidonConstants, Poseidon};
use rand::{Rng, RngCore};

fn constants() -> &'static PoseidonConstants<Scalar, U2> {
    static CONSTANTS: OnceLock<PoseidonConstants<Scalar, U2>> = OnceLock::new();
    CONSTANTS.get_or_init(PoseidonConstants::new)
}

/// A leaf and its path: per level, the sibling and whether the current node is the right child.
pub struct PoseidonMerkle {
    leaf: Scalar,
    path: Vec<(Scalar, bool)>,
}

impl PoseidonMerkle {
    pub(crate) fn random(depth: usize, rng: &mut impl RngCore) -> Self {
        let leaf = Scalar::random(&mut *rng);
        let path = (0..depth).map(|_| (Scalar::random(&mut *rng), rng.gen())).collect();
        Self { leaf, path }
    }

    /// The root.
    pub(crate) fn public_inputs(&self) -> Vec<Scalar> {
        let root = self.path.iter().fold(self.leaf, |node, &(sibling, is_right)| {
            let pair = if is_right { [sibling, node] } else { [node, sibling] };
            Poseidon::new_with_preimage(&pair, constants()).hash()
        });
        vec![root]
    }

    pub(crate) fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut node = AllocatedNum::alloc(cs.namespace(|| "leaf"), || Ok(self.leaf))?;
        for (level, &(sibling, is_right)) in self.path.iter().enumerate() {
            let cs = &mut cs.namespace(|| format!("level {level}"));
            let sibling = AllocatedNum::alloc(cs.namespace(|| "sibling"), || Ok(sibling))?;
            let right_side = Boolean::from(AllocatedBit::alloc(cs.namespace(|| "side"), Some(is_right))?);
            let (left, right) =
                AllocatedNum::conditionally_reverse(cs.namespace(|| "order"), &node, &sibling, &right_side)?;
            node = poseidon_hash(cs.namespace(|| "hash"), vec![left, right], constants())?;
        }
        node.inputize(cs.namespace(|| "root"))
    }
}
