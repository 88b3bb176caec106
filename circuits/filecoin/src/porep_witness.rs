//! PoRep C2's witness without building its hashes' constraints.
//!
//! Under a witness generator (`ConstraintSystem::is_witness_generator`), a PoRep circuit
//! allocates what filecoin-proofs' `StackedCircuit` allocates, in its order, with its
//! gadgets, except for its hashes: each challenge's labels (SHA-256 over the replica id,
//! the node and 37 parents: most of the circuit) and each level of its comm_d path (a
//! binary SHA-256 tree, 30 levels at 32 GiB) come from [`sha256_witness`], its columns'
//! hashes and the levels of its paths in trees C and R from [`poseidon_witness`], which
//! compute the same variables on plain bits and field elements. Nothing is enforced there,
//! so no constraint changes; the tests hold the assignment to the gadgets' own, value for
//! value.

use std::marker::PhantomData;

use bellpepper_core::{
    boolean::{AllocatedBit, Boolean},
    num::AllocatedNum,
    ConstraintSystem, SynthesisError,
};
use bellperson::gadgets::multipack;
use blstrs::Scalar;
use ff::PrimeField;
use filecoin_hashers::{
    poseidon::PoseidonHasher, sha256::Sha256Hasher, HashFunction, Hasher, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2,
    POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8,
};
use serde::Deserialize;
use storage_proofs_core::{
    gadgets::{constraint, encode::encode, insertion::insert, uint64::UInt64},
    merkle::{MerkleProof, MerkleProofTrait, MerkleTreeTrait},
    util::reverse_bit_numbering,
};
use storage_proofs_porep::stacked;

use crate::{
    porep::PorepHead,
    poseidon_witness::poseidon,
    sha256_witness::{self, Bit},
};

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// A Merkle path, leaf to root: at each level the siblings and the node's index among
/// them (`MerkleProof::as_options`: the base tree's levels, then its sub-tree's and top's).
type Path = Vec<(Vec<Option<Scalar>>, Option<usize>)>;

/// A column of the replica (one label a layer) and its path in tree C.
struct Column {
    rows: Vec<Scalar>,
    path: Path,
}

/// One challenge's private values, as `StackedCircuit`'s proof of it holds them.
pub(crate) struct Challenge {
    node: u64,
    data_leaf: Scalar,
    comm_d_path: Path,
    comm_r_last_path: Path,
    comm_c_path: Path,
    drg_parents: Vec<Column>,
    exp_parents: Vec<Column>,
}

/// serde's view of filecoin-proofs' vanilla column openings, whose fields it keeps private
/// (the C1 output carries them in this form).
#[derive(Deserialize)]
#[serde(bound = "P: serde::de::DeserializeOwned, D: serde::de::DeserializeOwned")]
struct ReplicaColumnsSerde<P, D> {
    c_x: ColumnSerde<P, D>,
    drg_parents: Vec<ColumnSerde<P, D>>,
    exp_parents: Vec<ColumnSerde<P, D>>,
}

#[derive(Deserialize)]
#[serde(bound = "P: serde::de::DeserializeOwned, D: serde::de::DeserializeOwned")]
struct ColumnSerde<P, D> {
    column: RowsSerde<D>,
    inclusion_proof: P,
}

#[derive(Deserialize)]
#[serde(bound = "D: serde::de::DeserializeOwned")]
struct RowsSerde<D> {
    _index: u32,
    rows: Vec<D>,
    _h: PhantomData<()>,
}

impl Challenge {
    /// The challenge's values from its vanilla proof.
    pub(crate) fn new<Tree: 'static + MerkleTreeTrait>(
        proof: &stacked::Proof<Tree, Sha256Hasher>,
    ) -> anyhow::Result<Self> {
        // Its trees C and R are hashed as Poseidon trees below.
        anyhow::ensure!(
            <Tree::Hasher as Hasher>::name() == PoseidonHasher::name(),
            "PoRep's trees C and R are Poseidon trees, not {}",
            <Tree::Hasher as Hasher>::name()
        );
        let columns: ReplicaColumnsSerde<TreeProof<Tree>, Domain<Tree>> =
            bincode::deserialize(&bincode::serialize(&proof.replica_column_proofs)?)?;
        let column = |c: ColumnSerde<TreeProof<Tree>, Domain<Tree>>| Column {
            rows: c.column.rows.into_iter().map(Into::into).collect(),
            path: c.inclusion_proof.as_options(),
        };
        Ok(Self {
            node: proof.comm_d_proofs.path_index() as u64,
            data_leaf: proof.comm_d_proofs.leaf().into(),
            comm_d_path: proof.comm_d_proofs.as_options(),
            comm_r_last_path: proof.comm_r_last_proof.as_options(),
            comm_c_path: columns.c_x.inclusion_proof.as_options(),
            drg_parents: columns.drg_parents.into_iter().map(column).collect(),
            exp_parents: columns.exp_parents.into_iter().map(column).collect(),
        })
    }
}

fn alloc<CS: ConstraintSystem<Scalar>>(cs: &mut CS, value: Scalar) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    AllocatedNum::alloc(cs, || Ok(value))
}

/// How a level of a Merkle path hashes its row of nodes.
type HashRow<CS> = fn(&mut CS, &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError>;

/// The inclusion of `leaf` under `root` by `path`, as `PoRCircuit` checks it for
/// `StackedCircuit`: at each level the node's index bits, its siblings and their row in
/// order, hashed by `hash`; then the index bits packed into public inputs and the root
/// compared.
fn enforce_inclusion<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    path: Path,
    root: &AllocatedNum<Scalar>,
    leaf: &AllocatedNum<Scalar>,
    hash: HashRow<CS>,
) -> Result<(), SynthesisError> {
    let mut cur = leaf.clone();
    let mut index_bits = Vec::new();
    for (siblings, index) in path {
        let index = index.ok_or(SynthesisError::AssignmentMissing)?;
        let arity = siblings.len() + 1;
        if !arity.is_power_of_two() {
            return Err(SynthesisError::Unsatisfiable);
        }
        let bits = (0..arity.trailing_zeros())
            .map(|i| Ok(Boolean::from(AllocatedBit::alloc(&mut *cs, Some((index >> i) & 1 == 1))?)))
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        let siblings = siblings
            .into_iter()
            .map(|sibling| alloc(cs, sibling.ok_or(SynthesisError::AssignmentMissing)?))
            .collect::<Result<Vec<_>, _>>()?;
        let row = insert(cs, &cur, &bits, &siblings)?;
        index_bits.extend(bits);
        cur = hash(cs, &row)?;
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)?;
    constraint::equal(cs, || "root", &cur, root);
    Ok(())
}

/// `Sha256Function::hash_multi_leaf_circuit`: each number's [`byte_bits`], hashed on plain
/// bits.
fn sha256_row<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    row: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let mut message = Vec::with_capacity(row.len() * 256);
    for num in row {
        message.extend(byte_bits(cs, num)?);
    }
    hash_bits(cs, &message)
}

/// `num`'s bits (allocated, as `to_bits_le` allocates them), padded to whole bytes and
/// numbered within each byte the other way round (`reverse_bit_numbering`), as SHA-256
/// takes a number in filecoin-proofs.
fn byte_bits<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    num: &AllocatedNum<Scalar>,
) -> Result<Vec<Bit>, SynthesisError> {
    reverse_bit_numbering(num.to_bits_le(&mut *cs)?).iter().map(Bit::of).collect()
}

/// `PoseidonFunction::hash_multi_leaf_circuit`: Poseidon of the row, with the constants of
/// its arity (trees C and R have levels of 2, 4 and 8).
fn poseidon_row<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    row: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    match row.len() {
        2 => poseidon(cs, row, &POSEIDON_CONSTANTS_2),
        4 => poseidon(cs, row, &POSEIDON_CONSTANTS_4),
        8 => poseidon(cs, row, &POSEIDON_CONSTANTS_8),
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// The Poseidon hash of a column, as `StackedCircuit` computes it.
fn hash_column<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    column: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    match column.len() {
        2 => poseidon(cs, column, &POSEIDON_CONSTANTS_2),
        11 => poseidon(cs, column, &POSEIDON_CONSTANTS_11),
        // filecoin-proofs has no other layer count.
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// What a PoRep circuit's witness is computed from: its head's values and its challenges.
pub(crate) struct Witness<Tree: 'static + MerkleTreeTrait> {
    pub(crate) head: PorepHead<Tree>,
    pub(crate) challenges: Vec<Challenge>,
}

/// The witness of the whole circuit (the head, then each challenge), in `cs`, which must
/// be a witness generator.
pub(crate) fn synthesize<Tree: 'static + MerkleTreeTrait, CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    witness: Witness<Tree>,
) -> Result<(), SynthesisError> {
    debug_assert!(cs.is_witness_generator());
    let Witness { head, challenges } = witness;
    let replica_id = alloc(cs, head.replica_id.into())?;
    replica_id.inputize(&mut *cs)?;
    let replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(&mut *cs)?);
    let comm_d = alloc(cs, head.comm_d.into())?;
    comm_d.inputize(&mut *cs)?;
    let comm_r = alloc(cs, head.comm_r.into())?;
    comm_r.inputize(&mut *cs)?;
    let comm_r_last = alloc(cs, head.comm_r_last.into())?;
    let comm_c = alloc(cs, head.comm_c.into())?;
    let hash = <Tree::Hasher as Hasher>::Function::hash2_circuit(&mut *cs, &comm_c, &comm_r_last)?;
    constraint::equal(cs, || "comm_r", &comm_r, &hash);

    let replica_id_bits = replica_id_bits.iter().map(Bit::of).collect::<Result<Vec<_>, _>>()?;
    for challenge in challenges {
        prove_challenge(cs, challenge, &comm_d, &comm_c, &comm_r_last, &replica_id_bits)?;
    }
    Ok(())
}

/// One challenge, as `StackedCircuit`'s proof of it synthesizes it.
fn prove_challenge<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    challenge: Challenge,
    comm_d: &AllocatedNum<Scalar>,
    comm_c: &AllocatedNum<Scalar>,
    comm_r_last: &AllocatedNum<Scalar>,
    replica_id: &[Bit],
) -> Result<(), SynthesisError> {
    let data_leaf = alloc(cs, challenge.data_leaf)?;
    enforce_inclusion(cs, challenge.comm_d_path, comm_d, &data_leaf, sha256_row)?;

    let drg_parents = open_columns(cs, challenge.drg_parents, comm_c)?;
    let exp_parents = open_columns(cs, challenge.exp_parents, comm_c)?;
    let layers = drg_parents.first().map_or(0, Vec::len);

    let node = UInt64::alloc(&mut *cs, Some(challenge.node))?;
    node.pack_into_input(&mut *cs)?;
    let node_bits = node.to_bits_be().iter().map(Bit::of).collect::<Result<Vec<_>, _>>()?;

    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        // Layer 1 has the DRG parents only; later layers the expander parents too, one layer back.
        let mut parents = Vec::new();
        let drg = drg_parents.iter().map(|rows| &rows[layer - 1]);
        let exp = exp_parents.iter().filter(|_| layer > 1).map(|rows| &rows[layer - 2]);
        for num in drg.chain(exp) {
            parents.push(byte_bits(cs, num)?);
        }
        labels.push(label(cs, replica_id, &parents, layer as u32, &node_bits)?);
    }

    let key = labels.last().ok_or(SynthesisError::Unsatisfiable)?;
    let encoded = encode(&mut *cs, key, &data_leaf)?;
    enforce_inclusion(cs, challenge.comm_r_last_path, comm_r_last, &encoded, poseidon_row)?;
    let column_hash = hash_column(cs, &labels)?;
    enforce_inclusion(cs, challenge.comm_c_path, comm_c, &column_hash, poseidon_row)
}

/// The parents' columns allocated, each hashed and its inclusion in tree C checked.
fn open_columns<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    parents: Vec<Column>,
    comm_c: &AllocatedNum<Scalar>,
) -> Result<Vec<Vec<AllocatedNum<Scalar>>>, SynthesisError> {
    parents
        .into_iter()
        .map(|parent| {
            let rows = parent.rows.iter().map(|&row| alloc(cs, row)).collect::<Result<Vec<_>, _>>()?;
            let hash = hash_column(cs, &rows)?;
            enforce_inclusion(cs, parent.path, comm_c, &hash, poseidon_row)?;
            Ok(rows)
        })
        .collect()
}

/// Parents a label hashes: the layer's parents repeated to 37, as SDR's labeling does.
const LABEL_PARENTS: usize = 37;

/// `create_label_circuit`: SHA-256 of the replica id, the layer and node, and the parents
/// repeated to [`LABEL_PARENTS`], each padded to 32 bytes; packed into one number.
fn label<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    replica_id: &[Bit],
    parents: &[Vec<Bit>],
    layer: u32,
    node: &[Bit],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let pad = |bits: &mut Vec<Bit>, to: usize| {
        while bits.len() % to != 0 {
            bits.push(Bit::Const(false));
        }
    };
    let mut message = replica_id.to_vec();
    pad(&mut message, 256);
    message.extend((0..32).rev().map(|i| Bit::Const((layer >> i) & 1 == 1)));
    message.extend_from_slice(node);
    pad(&mut message, 512);
    for parent in parents.iter().cycle().take(LABEL_PARENTS) {
        message.extend_from_slice(parent);
        pad(&mut message, 256);
    }

    hash_bits(cs, &message)
}

/// `Sha256Function::hash_circuit`: SHA-256 of `message` on plain bits, the digest's bits
/// numbered within each byte the other way round and the first 254 packed into one number.
fn hash_bits<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    message: &[Bit],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let digest = sha256_witness::sha256(cs, message)?;
    let bits = digest.chunks(8).flat_map(|byte| byte.iter().rev()).take(Scalar::CAPACITY as usize);
    let mut repr = [0u8; 32];
    for (i, bit) in bits.enumerate() {
        repr[i / 8] |= u8::from(bit.value()) << (i % 8);
    }
    // 254 bits are below the modulus.
    let value = Option::from(Scalar::from_repr(repr)).ok_or(SynthesisError::Unsatisfiable)?;
    alloc(cs, value)
}

#[cfg(test)]
mod tests {
    use bellpepper_core::Circuit;

    use crate::{allocations::Allocations, make, FilecoinCircuit, FilecoinSpec, Kind, SectorSize};

    /// A sealed 2 KiB sector's PoRep circuit, whole and in its parts: as a witness
    /// generator (labels on plain bits) it allocates what the gadgets allocate.
    #[test]
    fn porep_witness_is_the_gadgets() {
        let dir = tempfile::tempdir().unwrap();
        crate::set_directories(&dir.path().join("params"), &dir.path().join("parents"));
        make::seal(&dir.path().join("sector"), SectorSize::Kib2, 3, 1, None).unwrap();
        let c1 = std::fs::read(dir.path().join("sector").join(make::C1_FILE)).unwrap();
        let spec = FilecoinSpec { kind: Kind::Porep, sector_size: SectorSize::Kib2 };
        let synthesize = |circuit: FilecoinCircuit, generator: bool| {
            let mut cs = Allocations::new(generator);
            circuit.synthesize(&mut cs).unwrap();
            (cs.inputs, cs.aux)
        };
        let whole = || spec.instance(&c1, 0).unwrap().circuit;
        let gadgets = synthesize(whole(), false);
        let witness = synthesize(whole(), true);
        assert_eq!(witness.0, gadgets.0, "public inputs");
        assert_eq!(witness.1.len(), gadgets.1.len(), "aux count");
        if let Some(i) = (0..gadgets.1.len()).find(|&i| witness.1[i] != gadgets.1[i]) {
            panic!("aux variable {i} of {} differs", gadgets.1.len());
        }
        let Ok((_, pieces)) = Box::new(whole()).into_parts() else { panic!("PoRep is not cut at its challenges") };
        let Ok((_, again)) = Box::new(whole()).into_parts() else { unreachable!() };
        for (i, (piece, same)) in pieces.into_iter().zip(again).enumerate() {
            assert!(synthesize(piece, true) == synthesize(same, false), "challenge {i}'s piece differs");
        }
    }

    /// Partition 0 of a synthetic C1 output, as a witness generator and with the gadgets:
    /// the same assignment. At 2 KiB by default; `BELLHOP_WITNESS_SIZE=512MiB` (or 32GiB)
    /// checks it at a real sector's tree depths (minutes, and gigabytes of memory).
    #[test]
    fn synthetic_porep_witness_is_the_gadgets() {
        let size = std::env::var("BELLHOP_WITNESS_SIZE").map_or(SectorSize::Kib2, |s| s.parse().unwrap());
        let spec = FilecoinSpec { kind: Kind::SyntheticPorep, sector_size: size };
        let c1 = crate::synthetic::porep_c1(size, 9).unwrap();
        let synthesize = |generator: bool| {
            let start = std::time::Instant::now();
            let mut cs = Allocations::new(generator);
            spec.instance(&c1, 0).unwrap().circuit.synthesize(&mut cs).unwrap();
            (cs.inputs, cs.aux, start.elapsed())
        };
        let (inputs, aux, gadgets) = synthesize(false);
        let (witness_inputs, witness_aux, witness) = synthesize(true);
        eprintln!(
            "{spec} partition 0: {} variables; with the gadgets {gadgets:.2?}, as a witness {witness:.2?}",
            aux.len()
        );
        assert_eq!(witness_inputs, inputs, "public inputs");
        assert_eq!(witness_aux.len(), aux.len(), "aux count");
        if let Some(i) = (0..aux.len()).find(|&i| witness_aux[i] != aux[i]) {
            panic!("aux variable {i} of {} differs", aux.len());
        }
    }
}
