//! `sha256-merkle:DEPTH`: a Merkle inclusion proof hashed with SHA-256 (bellpepper's
//! constraints, built by [`crate::sha256`]).
//!
//! Each level hashes the 64 bytes `left || right`; the current node's side is a private
//! bit. The root is the public input, packed into two field elements.

use bellpepper::gadgets::multipack;
use bellpepper_core::{
    boolean::{AllocatedBit, Boolean},
    ConstraintSystem, SynthesisError,
};
use blstrs::Scalar;
use rand::{Rng, RngCore};
use sha2::{Digest, Sha256};

use crate::sha256::sha256;

/// A leaf and its path: per level, the sibling and whether the current node is the right child.
pub struct Sha256Merkle {
    leaf: [u8; 32],
    path: Vec<([u8; 32], bool)>,
}

impl Sha256Merkle {
    pub(crate) fn random(depth: usize, rng: &mut impl RngCore) -> Self {
        Self { leaf: rng.gen(), path: (0..depth).map(|_| (rng.gen(), rng.gen())).collect() }
    }

    fn root(&self) -> [u8; 32] {
        self.path.iter().fold(self.leaf, |node, (sibling, is_right)| {
            let (left, right) = if *is_right { (sibling, &node) } else { (&node, sibling) };
            Sha256::new().chain_update(left).chain_update(right).finalize().into()
        })
    }

    /// The root, packed as the circuit packs it.
    pub(crate) fn public_inputs(&self) -> Vec<Scalar> {
        multipack::compute_multipacking(&multipack::bytes_to_bits(&self.root()))
    }

    pub(crate) fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut node = alloc_bits(cs.namespace(|| "leaf"), &self.leaf)?;
        for (level, (sibling, is_right)) in self.path.iter().enumerate() {
            let cs = &mut cs.namespace(|| format!("level {level}"));
            let right_side = Boolean::from(AllocatedBit::alloc(cs.namespace(|| "side"), Some(*is_right))?);
            let sibling = alloc_bits(cs.namespace(|| "sibling"), sibling)?;
            let mut preimage = Vec::with_capacity(512);
            // left = side ? sibling : node; right = side ? node : sibling.
            for (i, (n, s)) in node.iter().zip(&sibling).enumerate() {
                preimage.push(Boolean::sha256_ch(cs.namespace(|| format!("left {i}")), &right_side, s, n)?);
            }
            for (i, (n, s)) in node.iter().zip(&sibling).enumerate() {
                preimage.push(Boolean::sha256_ch(cs.namespace(|| format!("right {i}")), &right_side, n, s)?);
            }
            node = sha256(cs.namespace(|| "hash"), &preimage)?;
        }
        multipack::pack_into_inputs(cs.namespace(|| "root"), &node)
    }
}

/// Allocates the bits of `bytes`, most significant first, as SHA-256 reads them.
fn alloc_bits<CS: ConstraintSystem<Scalar>>(mut cs: CS, bytes: &[u8]) -> Result<Vec<Boolean>, SynthesisError> {
    multipack::bytes_to_bits(bytes)
        .into_iter()
        .enumerate()
        .map(|(i, bit)| Ok(Boolean::from(AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(bit))?)))
        .collect()
}
