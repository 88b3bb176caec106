//! Synthetic PoRep C1 outputs, for measuring a sector size that cannot be sealed here
//! (`synthetic-porep:32GiB`): vanilla proofs of the real shape (every challenge the
//! seed's public data draws, every Merkle path, column and labeling proof of the length
//! and arity the circuit reads), with every hash and label drawn from a seed. The
//! circuit built from them has the real constraint system and real arithmetic, so it
//! costs what a real sector's does; but its witness satisfies nothing and its proofs
//! prove nothing.
//!
//! A synthetic file says so at its top (`bellhop_synthetic`). `porep:SIZE` refuses it
//! (and its vanilla proofs would not verify anyway); only `synthetic-porep:SIZE`, which
//! `bellhop bench` takes and `bellhop prove` and the daemon refuse, reads it.

use filecoin_hashers::{sha256::Sha256Hasher, Domain, HashFunction, Hasher};
use filecoin_proofs::{SealCommitPhase1Output, TreeRHasher, VanillaSealProof};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use storage_proofs_core::{
    drgraph::Graph,
    merkle::{MerkleProof, MerkleTreeTrait},
};
use storage_proofs_porep::stacked::{
    self, Column, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof, TOTAL_PARENTS,
};
use typenum::Unsigned;

use crate::{input, with_tree, FilecoinError, FilecoinSpec, Kind, SectorSize};

/// What a synthetic file says of itself, at its top.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Notice {
    /// The circuit it is for, e.g. `synthetic-porep:32GiB`.
    pub circuit: String,
    /// The seed its field elements were drawn from.
    pub seed: u64,
    /// What it is, for a person who opens the file.
    pub note: String,
}

/// A synthetic C1 output as written: the notice, then the C1 output in filecoin-proofs'
/// form (`input` reads it back as a JSON value).
#[derive(Serialize)]
#[serde(bound(serialize = ""))]
struct SyntheticC1<Tree: 'static + MerkleTreeTrait> {
    bellhop_synthetic: Notice,
    c1: SealCommitPhase1Output<Tree>,
}

/// A JSON object's notice, if it has one (its other fields are skipped).
#[derive(Deserialize)]
pub(crate) struct Probe {
    pub(crate) bellhop_synthetic: Option<Notice>,
}

/// Whether `bytes` are a synthetic input (JSON with a `bellhop_synthetic` notice).
pub fn is_synthetic(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Probe>(bytes).is_ok_and(|probe| probe.bellhop_synthetic.is_some())
}

/// Checks that the synthetic `input` has the shape of one [`porep_c1`] makes for `size`
/// (every object's fields, every array's length) and that every Merkle path index is
/// within its level's arity: what the circuit indexes without checking. Says where it
/// differs.
pub(crate) fn check_shape(size: SectorSize, input: &serde_json::Value) -> Result<(), String> {
    let made = porep_c1_value(size, 0).map_err(|e| e.to_string())?;
    same_shape(&input["c1"], &made["c1"]).map_err(|mut mismatch| {
        mismatch.path.push("c1".into());
        mismatch.path.reverse();
        format!("{} {}", mismatch.path.concat(), mismatch.why)
    })
}

/// Where (innermost first) and how an input's shape differs from a made one's.
struct Mismatch {
    path: Vec<String>,
    why: String,
}

impl Mismatch {
    fn new(why: String) -> Self {
        Self { path: Vec::new(), why }
    }

    fn within(mut self, segment: String) -> Self {
        self.path.push(segment);
        self
    }
}

fn same_shape(input: &serde_json::Value, made: &serde_json::Value) -> Result<(), Mismatch> {
    use serde_json::Value;
    match (input, made) {
        (Value::Object(input), Value::Object(made)) => {
            if input.len() != made.len() || made.keys().any(|k| !input.contains_key(k)) {
                let (has, wants) = (input.keys().collect::<Vec<_>>(), made.keys().collect::<Vec<_>>());
                return Err(Mismatch::new(format!("has fields {has:?}, not {wants:?}")));
            }
            if let (Some(index), Some(Value::Array(hashes))) = (input.get("index"), input.get("hashes")) {
                if !index.as_u64().is_some_and(|i| i <= hashes.len() as u64) {
                    let why = format!("is {index}, past the level's arity {}", hashes.len() + 1);
                    return Err(Mismatch::new(why).within(".index".into()));
                }
            }
            made.iter()
                .try_for_each(|(key, made)| same_shape(&input[key], made).map_err(|m| m.within(format!(".{key}"))))
        }
        (Value::Array(input), Value::Array(made)) => {
            if input.len() != made.len() {
                return Err(Mismatch::new(format!("has {} items, not {}", input.len(), made.len())));
            }
            input
                .iter()
                .zip(made)
                .enumerate()
                .try_for_each(|(i, (input, made))| same_shape(input, made).map_err(|m| m.within(format!("[{i}]"))))
        }
        (Value::Number(_), Value::Number(_))
        | (Value::String(_), Value::String(_))
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Null, Value::Null) => Ok(()),
        _ => Err(Mismatch::new("is not of the kind a synthetic input has there".into())),
    }
}

/// A synthetic C1 output for PoRep of `size`, as JSON: every partition, every challenge
/// the public data (drawn from `seed`) selects, with hashes, labels and parents drawn
/// from `seed`.
pub fn porep_c1(size: SectorSize, seed: u64) -> Result<Vec<u8>, FilecoinError> {
    Ok(serde_json::to_vec(&porep_c1_value(size, seed)?).expect("JSON values serialize"))
}

/// [`porep_c1`] as a JSON value.
fn porep_c1_value(size: SectorSize, seed: u64) -> Result<serde_json::Value, FilecoinError> {
    let spec = FilecoinSpec { kind: Kind::SyntheticPorep, sector_size: size };
    with_tree!(size, Tree => porep_c1_of::<Tree>(size, seed).map_err(|error| FilecoinError::Filecoin { spec, error }))
}

fn porep_c1_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    size: SectorSize,
    seed: u64,
) -> anyhow::Result<serde_json::Value> {
    let rng = &mut ChaCha8Rng::seed_from_u64(seed);
    let config = input::porep_config(size)?;
    let pp = input::porep_public_params::<Tree>(&config)?.vanilla_params;
    let replica_id = <TreeRHasher as Hasher>::Domain::random(rng);
    // The sector's trees' roots, shared by every proof into them (the circuit checks so),
    // and comm_r made of them as the sealer makes it.
    let roots = Roots {
        comm_d: <Sha256Hasher as Hasher>::Domain::random(rng),
        comm_c: <TreeRHasher as Hasher>::Domain::random(rng),
        comm_r_last: <TreeRHasher as Hasher>::Domain::random(rng),
    };
    let comm_d = roots.comm_d;
    let comm_r = <TreeRHasher as Hasher>::Function::hash2(&roots.comm_c, &roots.comm_r_last);
    let interactive_seed = <TreeRHasher as Hasher>::Domain::random(rng).into_bytes();
    let ticket = <TreeRHasher as Hasher>::Domain::random(rng).into_bytes();
    let public = stacked::PublicInputs {
        replica_id,
        seed: Some(interactive_seed.clone().try_into().expect("a domain element is 32 bytes")),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
    };
    let nodes = pp.graph.size();
    let vanilla_proofs = (0..usize::from(config.partitions))
        .map(|k| {
            let challenges = public.challenges(&pp.challenges, nodes, Some(k));
            challenges.into_iter().map(|challenge| challenge_proof::<Tree>(rng, &pp, &roots, challenge)).collect()
        })
        .collect::<anyhow::Result<Vec<Vec<_>>>>()?;
    let c1 = SealCommitPhase1Output::<Tree> {
        vanilla_proofs,
        comm_r: comm_r.into_bytes().try_into().expect("32 bytes"),
        comm_d: comm_d.into_bytes().try_into().expect("32 bytes"),
        replica_id,
        seed: interactive_seed.try_into().expect("32 bytes"),
        ticket: ticket.try_into().expect("32 bytes"),
    };
    let circuit = FilecoinSpec { kind: Kind::SyntheticPorep, sector_size: size }.to_string();
    let note = format!(
        "SYNTHETIC: vanilla proofs of the shape of a {size} sector's, with field elements drawn from seed {seed}; \
         they prove no sector and proofs made from them prove nothing. For benchmarks only: bellhop bench {circuit}"
    );
    let file = SyntheticC1 { bellhop_synthetic: Notice { circuit, seed, note }, c1 };
    Ok(serde_json::to_value(&file)?)
}

/// The roots of a sector's trees: of its data (tree d), its columns (tree c) and its
/// replica (tree r_last).
struct Roots {
    comm_d: <Sha256Hasher as Hasher>::Domain,
    comm_c: <TreeRHasher as Hasher>::Domain,
    comm_r_last: <TreeRHasher as Hasher>::Domain,
}

/// The vanilla proof of one challenge: what filecoin-proofs' prover would open there.
fn challenge_proof<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    rng: &mut ChaCha8Rng,
    pp: &stacked::PublicParams<Tree>,
    roots: &Roots,
    challenge: usize,
) -> anyhow::Result<VanillaSealProof<Tree>> {
    let graph = &pp.graph;
    let nodes = graph.size();
    let layers = pp.num_layers;
    let column = |rng: &mut ChaCha8Rng, node: u32| -> anyhow::Result<_> {
        let rows = (0..layers).map(|_| <TreeRHasher as Hasher>::Domain::random(rng)).collect();
        ColumnProof::from_column(Column::new(node, rows)?, tree_proof::<Tree>(rng, nodes, node as usize, roots.comm_c))
    };
    let mut drg_parents = vec![0; graph.base_graph().degree()];
    graph.base_parents(challenge, &mut drg_parents)?;
    let mut exp_parents = vec![0; graph.expansion_degree()];
    graph.expanded_parents(challenge, &mut exp_parents)?;
    let replica_column_proofs = ReplicaColumnProof {
        c_x: column(rng, challenge as u32)?,
        drg_parents: drg_parents.iter().map(|&p| column(rng, p)).collect::<anyhow::Result<_>>()?,
        exp_parents: exp_parents.iter().map(|&p| column(rng, p)).collect::<anyhow::Result<_>>()?,
    };
    let parents = |rng: &mut ChaCha8Rng| -> Vec<_> {
        (0..TOTAL_PARENTS).map(|_| <TreeRHasher as Hasher>::Domain::random(rng)).collect()
    };
    let labeling_proofs =
        (1..=layers).map(|layer| LabelingProof::new(layer as u32, challenge as u64, parents(rng))).collect();
    let encoding_proof = EncodingProof::new(layers as u32, challenge as u64, parents(rng));
    let depth = nodes.trailing_zeros() as usize;
    let comm_d_path = (0..depth)
        .map(|level| (vec![<Sha256Hasher as Hasher>::Domain::random(rng)], (challenge >> level) & 1))
        .collect();
    let comm_d_proofs =
        MerkleProof::from_parts(<Sha256Hasher as Hasher>::Domain::random(rng), roots.comm_d, comm_d_path);
    Ok(VanillaSealProof::<Tree> {
        comm_d_proofs,
        comm_r_last_proof: tree_proof::<Tree>(rng, nodes, challenge, roots.comm_r_last),
        replica_column_proofs,
        labeling_proofs,
        encoding_proof,
    })
}

/// An inclusion proof of leaf `index` in a tree of `Tree`'s shape over `nodes` leaves,
/// with root `root`: base levels, then the sub-tree and top-tree levels where the shape
/// has them.
fn tree_proof<Tree: MerkleTreeTrait<Hasher = TreeRHasher>>(
    rng: &mut ChaCha8Rng,
    nodes: usize,
    index: usize,
    root: <TreeRHasher as Hasher>::Domain,
) -> MerkleProof<TreeRHasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity> {
    let (base, sub, top) = (Tree::Arity::to_usize(), Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize());
    let base_nodes = nodes / sub.max(1) / top.max(1);
    let mut path = Vec::new();
    let mut level = |rng: &mut ChaCha8Rng, arity: usize, digit: usize| {
        path.push(((1..arity).map(|_| <TreeRHasher as Hasher>::Domain::random(rng)).collect(), digit));
    };
    let (mut within, mut width) = (index % base_nodes, 1);
    while width < base_nodes {
        level(rng, base, within % base);
        within /= base;
        width *= base;
    }
    if sub > 0 {
        level(rng, sub, (index / base_nodes) % sub);
    }
    if top > 0 {
        level(rng, top, index / base_nodes / sub);
    }
    MerkleProof::from_parts(<TreeRHasher as Hasher>::Domain::random(rng), root, path)
}
