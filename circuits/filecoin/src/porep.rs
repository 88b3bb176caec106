//! PoRep C2's circuit for one partition, whole and cut at its challenges.
//!
//! filecoin-proofs' `StackedCircuit` allocates a head (the replica id, comm_d and comm_r
//! as public inputs, comm_r_last and comm_c, and the check comm_r = H(comm_c,
//! comm_r_last)), then one sub-circuit per challenge that reads only the head's variables
//! and its own. So the circuit of the head and one challenge, synthesized for each
//! challenge apart, holds every constraint of the whole circuit: what
//! `bellhop_synthesis_kit` joins into the whole circuit's assignment, on many threads.
//!
//! A witness generator gets the same witness with the labels' SHA-256 computed on plain
//! bits ([`crate::porep_witness`]).

use anyhow::Context as _;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use filecoin_hashers::{sha256::Sha256Hasher, Hasher};
use storage_proofs_core::{compound_proof::CompoundProof, merkle::MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

use crate::porep_witness::{self, Challenge, Witness};

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type DataDomain = <Sha256Hasher as Hasher>::Domain;
type Stacked<Tree> = StackedCircuit<Tree, Sha256Hasher>;

/// One partition of PoRep C2: filecoin-proofs' `StackedCircuit` as its
/// `CompoundProof::circuit` builds it, and (with a witness) the same circuit cut into its
/// head and one circuit per challenge (see [`PorepCircuit::into_parts`]).
pub struct PorepCircuit<Tree: 'static + MerkleTreeTrait> {
    whole: Stacked<Tree>,
    /// What a witness generator computes the witness from; none in a blank circuit.
    witness: Option<Box<Witness<Tree>>>,
    /// Per challenge, the circuit of the head and that challenge; none in a blank circuit
    /// or in one of these.
    pieces: Vec<Stacked<Tree>>,
}

/// What `StackedCircuit` synthesizes before its first challenge, as a circuit of its own.
pub struct PorepHead<Tree: 'static + MerkleTreeTrait> {
    pub(crate) replica_id: Domain<Tree>,
    pub(crate) comm_d: DataDomain,
    pub(crate) comm_r: Domain<Tree>,
    pub(crate) comm_r_last: Domain<Tree>,
    pub(crate) comm_c: Domain<Tree>,
}

// By hand: a derive would ask `Tree` to be `Copy`; the domains are.
impl<Tree: 'static + MerkleTreeTrait> Clone for PorepHead<Tree> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Tree: 'static + MerkleTreeTrait> Copy for PorepHead<Tree> {}

impl<Tree: 'static + MerkleTreeTrait> PorepCircuit<Tree> {
    /// Partition `k`'s circuit from its vanilla proofs (one per challenge), as filecoin-proofs builds it.
    pub(crate) fn new(
        public: &stacked::PublicInputs<Domain<Tree>, DataDomain>,
        vanilla: &[stacked::Proof<Tree, Sha256Hasher>],
        params: &stacked::PublicParams<Tree>,
        k: usize,
    ) -> anyhow::Result<Self> {
        let circuit = |proofs: Vec<stacked::Proof<Tree, Sha256Hasher>>| {
            <StackedCompound<Tree, Sha256Hasher> as CompoundProof<StackedDrg<'_, Tree, Sha256Hasher>, _>>::circuit(
                public,
                (),
                &proofs,
                params,
                Some(k),
            )
        };
        // The whole circuit's checks (proofs given, one comm_r_last and comm_c among them)
        // hold the head below to what each challenge's circuit begins with.
        let whole = circuit(vanilla.to_vec())?;
        let pieces = vanilla.iter().map(|proof| circuit(vec![proof.clone()])).collect::<anyhow::Result<_>>()?;
        let tau = public.tau.as_ref().context("PoRep's public inputs have no comm_d and comm_r")?;
        let head = PorepHead {
            replica_id: public.replica_id,
            comm_d: tau.comm_d,
            comm_r: tau.comm_r,
            comm_r_last: vanilla[0].comm_r_last(),
            comm_c: vanilla[0].comm_c(),
        };
        let challenges = vanilla.iter().map(Challenge::new).collect::<anyhow::Result<_>>()?;
        Ok(Self { whole, witness: Some(Box::new(Witness { head, challenges })), pieces })
    }

    /// The circuit without a witness, for parameter generation.
    pub(crate) fn blank(params: &stacked::PublicParams<Tree>) -> Self {
        let whole = <StackedCompound<Tree, Sha256Hasher> as CompoundProof<_, _>>::blank_circuit(params);
        Self { whole, witness: None, pieces: Vec::new() }
    }

    /// The head and, per challenge, the circuit of the head and that challenge: synthesized
    /// apart, joined in order after the head, they are the whole circuit's synthesis. A
    /// blank circuit is not cut.
    pub fn into_parts(self) -> Result<(PorepHead<Tree>, Vec<Self>), Self> {
        match self {
            Self { witness: Some(witness), pieces, .. } if !pieces.is_empty() => {
                let Witness { head, challenges } = *witness;
                let pieces = pieces
                    .into_iter()
                    .zip(challenges)
                    .map(|(whole, challenge)| {
                        let witness = Some(Box::new(Witness { head, challenges: vec![challenge] }));
                        Self { whole, witness, pieces: Vec::new() }
                    })
                    .collect();
                Ok((head, pieces))
            }
            blank_or_piece => Err(blank_or_piece),
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for PorepCircuit<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self.witness {
            Some(witness) if cs.is_witness_generator() => porep_witness::synthesize(cs, *witness),
            _ => self.whole.synthesize(cs),
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for PorepHead<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        Stacked::<Tree>::synthesize(
            cs,
            Some(self.replica_id),
            Some(self.comm_d),
            Some(self.comm_r),
            Some(self.comm_r_last),
            Some(self.comm_c),
            Vec::new(),
        )
    }
}
