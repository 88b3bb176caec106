//! What Filecoin circuits read, as JSON:
//! - `porep`: a C1 output, as filecoin-proofs serializes it (`SealCommitPhase1Output`; the
//!   graph is then StackedDrg<size>V1_1's with API version 1.2.0, as `bellhop fil seal`
//!   seals) or as filecoin-proofs-api does (with its `registered_proof`, whose graph and API
//!   version are used), bare or in Curio's and lotus-bench's wrapper (`{"SectorNum",
//!   "Phase1Out": base64 of the C1 JSON, "SectorSize"}`).
//! - `winning-post`, `window-post`: a [`PostInput`] (`bellhop fil winning-post` /
//!   `window-post` write one): the public data (randomness, prover id, sectors with
//!   their comm_r) and filecoin-proofs' vanilla proofs of those sectors.
//! - `snap`: a [`SnapInput`] (`bellhop fil snap`): the three commitments and the vanilla
//!   partition proofs.
//!
//! - `synthetic-porep`: a synthetic C1 output ([`crate::synthetic`]), which `porep` refuses.
//!
//! Before a circuit is built its vanilla proofs are checked against the public data with
//! filecoin-proofs' vanilla verifiers, so a mismatch is an error, never an unsatisfied
//! circuit or a wrong proof: a PoRep's or a SnapDeals' once for the whole job when it is
//! prepared ([`Input::prepare`]: one input per partition, its own vanilla proofs alone). The one
//! exception is `synthetic-porep`, whose circuit is unsatisfied by design and which only
//! benchmarks take.

use std::collections::BTreeMap;

use anyhow::Context as _;
use base64::Engine as _;
use blstrs::Scalar;
use filecoin_hashers::{sha256::Sha256Hasher, Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, get_num_partition_for_fallback_post, parameters, partition_vanilla_proofs, Commitment,
    FallbackPoStSectorProof, PartitionProof, PoRepConfig, PoStConfig, PoStType, SealCommitPhase1Output,
    SectorShape32GiB, SectorShape64GiB, SectorShapeBase, SectorUpdateConfig, Ticket, TreeRHasher, VanillaSealProof,
    WINDOW_POST_CHALLENGE_COUNT, WINDOW_POST_SECTOR_COUNT, WINNING_POST_CHALLENGE_COUNT, WINNING_POST_SECTOR_COUNT,
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use storage_proofs_core::{
    api_version::{ApiFeature, ApiVersion},
    compound_proof::{self, CompoundProof},
    merkle::{MerkleProofTrait, MerkleTreeTrait},
    proof::ProofScheme,
    sector::SectorId,
};
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector};
use storage_proofs_update::{EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound};

use crate::{
    aggregate::Aggregation, porep::PorepCircuit, synthetic, FilecoinCircuit, FilecoinError, FilecoinSpec, Instance,
    Kind, SectorSize,
};

/// The API version `bellhop fil` seals and proves window PoSt and SnapDeals with.
pub const API_VERSION: ApiVersion = ApiVersion::V1_2_0;

/// One sector of a PoSt: its id and replica commitment.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PostSector {
    /// The sector number.
    pub id: u64,
    /// comm_r, as filecoin-proofs' `Commitment`.
    pub comm_r: Commitment,
}

/// The input of `winning-post` and `window-post`: the public data and the vanilla proofs.
#[derive(Debug, Serialize, Deserialize)]
#[serde(bound(serialize = "", deserialize = ""))]
pub struct PostInput<Tree: 'static + MerkleTreeTrait> {
    /// The circuit it is for, e.g. `window-post:2KiB`.
    pub circuit: String,
    /// The API version the challenges were drawn with (e.g. `1.2.0`).
    pub api_version: String,
    /// The challenge randomness.
    pub randomness: [u8; 32],
    /// The prover id.
    pub prover_id: [u8; 32],
    /// The sectors, as the verifier knows them (window: in ascending id order).
    pub sectors: Vec<PostSector>,
    /// filecoin-proofs' vanilla proofs, one per sector, in the order of `sectors`.
    pub vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
}

/// The input of `snap`: the commitments and the vanilla partition proofs.
#[derive(Serialize, Deserialize)]
#[serde(bound(serialize = "", deserialize = ""))]
pub struct SnapInput<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    /// The circuit it is for, e.g. `snap:2KiB`.
    pub circuit: String,
    /// comm_r of the sector before the update (its sector key).
    pub comm_r_old: Commitment,
    /// comm_r after the update.
    pub comm_r_new: Commitment,
    /// comm_d of the new data.
    pub comm_d_new: Commitment,
    /// filecoin-proofs' vanilla proofs, one per partition.
    pub partition_proofs: Vec<PartitionProof<Tree>>,
}

/// Curio's (and lotus-bench's) C1 output: filecoin-proofs-api's C1 JSON, base64-encoded
/// (Go encodes `[]byte` so), with the sector's number and size.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CurioC1 {
    /// The sector number (lotus-bench may leave it out).
    #[serde(default)]
    pub sector_num: u64,
    /// The C1 output JSON, base64.
    pub phase1_out: String,
    /// The sector size in bytes.
    pub sector_size: u64,
}

impl CurioC1 {
    /// `phase1` (a C1 output's JSON) wrapped as Curio sends it, for sector `sector_num`.
    pub fn new(sector_num: u64, size: SectorSize, phase1: &[u8]) -> Self {
        Self {
            sector_num,
            phase1_out: base64::engine::general_purpose::STANDARD.encode(phase1),
            sector_size: size.bytes(),
        }
    }

    /// The C1 output's JSON it wraps.
    pub fn phase1(&self) -> Result<Vec<u8>, String> {
        base64::engine::general_purpose::STANDARD
            .decode(self.phase1_out.trim())
            .map_err(|e| format!("Phase1Out is not base64: {e}"))
    }
}

/// filecoin-proofs-api's C1 output: filecoin-proofs' fields, the registered seal proof,
/// and the vanilla proofs tagged with their sector shape (`{"StackedDrg2KiBV1": [...]}`).
#[derive(Serialize, Deserialize)]
#[serde(bound(serialize = "", deserialize = ""))]
struct ApiC1<Tree: 'static + MerkleTreeTrait> {
    registered_proof: String,
    vanilla_proofs: BTreeMap<String, Vec<Vec<VanillaSealProof<Tree>>>>,
    comm_r: Commitment,
    comm_d: Commitment,
    replica_id: <Tree::Hasher as Hasher>::Domain,
    seed: Ticket,
    ticket: Ticket,
}

/// Whether a C1 JSON names its registered proof (filecoin-proofs-api's form), and whether
/// it is a synthetic input (its notice), read in one pass.
#[derive(Deserialize)]
struct RegisteredProbe {
    registered_proof: Option<String>,
    bellhop_synthetic: Option<serde::de::IgnoredAny>,
}

/// Filecoin's registered seal proofs, as filecoin-proofs-api names and numbers them: the
/// name's suffix after `StackedDrg<size>`, the number of its 2KiB entry (each size after
/// it in the order of [`SectorSize::ALL`]), its API version and its feature.
const REGISTERED_SEAL_PROOFS: [(&str, u64, ApiVersion, Option<ApiFeature>); 4] = [
    ("V1", 0, ApiVersion::V1_0_0, None),
    ("V1_1", 5, ApiVersion::V1_1_0, None),
    ("V1_1_Feat_SyntheticPoRep", 10, ApiVersion::V1_1_0, Some(ApiFeature::SyntheticPoRep)),
    ("V1_2_Feat_NonInteractivePoRep", 15, ApiVersion::V1_2_0, Some(ApiFeature::NonInteractivePoRep)),
];

/// The graph and challenges a sector was sealed with: its registered proof's porep id, API
/// version and feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealProof {
    /// The porep id (the registered proof's number, little-endian, then zeros).
    pub porep_id: [u8; 32],
    /// The API version.
    pub api_version: ApiVersion,
    /// SyntheticPoRep (its challenges drawn from the synthetic ones of PreCommit), or none.
    pub feature: Option<ApiFeature>,
}

impl SealProof {
    /// What `bellhop fil seal` seals with by default: StackedDrg<size>V1_1's id, API
    /// version 1.2.0.
    pub fn bellhop(size: SectorSize) -> Self {
        Self { porep_id: size.porep_id(), api_version: API_VERSION, feature: None }
    }

    /// StackedDrg<size>V1_1, or with `feature` its registered variant.
    pub fn registered(size: SectorSize, feature: Option<ApiFeature>) -> Self {
        // Past V1, which has no features.
        let (_, first, api_version, _) =
            *REGISTERED_SEAL_PROOFS[1..].iter().find(|entry| entry.3 == feature).expect("every feature is registered");
        let mut porep_id = [0; 32];
        porep_id[..8].copy_from_slice(&(first + size.index()).to_le_bytes());
        Self { porep_id, api_version, feature }
    }

    /// The registered seal proof named `name` (filecoin-proofs-api's `RegisteredSealProof`),
    /// if Bellhop proves it: StackedDrg<size>V1 (API 1.0.0), V1_1 (1.1.0),
    /// V1_1_Feat_SyntheticPoRep (1.1.0) and V1_2_Feat_NonInteractivePoRep (1.2.0) for
    /// every size.
    pub fn named(name: &str) -> Result<(SectorSize, Self), String> {
        for size in SectorSize::ALL {
            for (suffix, first, api_version, feature) in REGISTERED_SEAL_PROOFS {
                if name != format!("StackedDrg{size}{suffix}") {
                    continue;
                }
                let mut porep_id = [0; 32];
                porep_id[..8].copy_from_slice(&(first + size.index()).to_le_bytes());
                return Ok((size, Self { porep_id, api_version, feature }));
            }
        }
        Err(format!(
            "registered proof `{name}` is not one Bellhop proves: StackedDrg<size>V1, V1_1, \
             V1_1_Feat_SyntheticPoRep and V1_2_Feat_NonInteractivePoRep for 2KiB, 8MiB, 512MiB, 32GiB and 64GiB"
        ))
    }

    /// Whether its proof is the SnarkPack aggregate of its partitions' proofs
    /// (NonInteractivePoRep) rather than their concatenation.
    pub fn aggregated(&self) -> bool {
        self.feature == Some(ApiFeature::NonInteractivePoRep)
    }

    /// Its registered proof's name for sector size `size`.
    pub fn name(&self, size: SectorSize) -> anyhow::Result<String> {
        let mut id = [0u8; 8];
        id.copy_from_slice(&self.porep_id[..8]);
        let number = u64::from_le_bytes(id);
        REGISTERED_SEAL_PROOFS
            .iter()
            .find(|(_, first, _, feature)| {
                first + size.index() == number && *feature == self.feature && self.porep_id[8..] == [0; 24]
            })
            .map(|(suffix, ..)| format!("StackedDrg{size}{suffix}"))
            .ok_or_else(|| anyhow::anyhow!("porep id {number} is no registered seal proof of {size} sectors"))
    }

    /// filecoin-proofs' configuration of a C2 of this graph for `size`.
    pub fn config(&self, size: SectorSize) -> anyhow::Result<PoRepConfig> {
        PoRepConfig::new_groth16_with_features(
            size.bytes(),
            self.porep_id,
            self.api_version,
            self.feature.into_iter().collect(),
        )
    }
}

/// A PoRep C1 output and the graph it was sealed with.
pub struct Porep<Tree: 'static + MerkleTreeTrait> {
    /// The C1 output.
    pub c1: SealCommitPhase1Output<Tree>,
    /// Its registered proof's graph.
    pub seal: SealProof,
    /// Whether it is synthetic (its vanilla proofs are then not checked: they prove nothing).
    pub synthetic: bool,
    /// For one partition of a prepared job: which, of how many; `c1` then holds only its
    /// vanilla proofs, which were checked with the whole job's.
    pub prepared: Option<Prepared>,
}

/// What the jobs of one input read ([`Input::prepare`]).
#[derive(Debug, Default)]
pub struct JobInputs {
    /// One input per partition (a PoRep's and a SnapDeals' partitions, each with its own
    /// vanilla proofs); `None`: each partition reads the whole input (PoSt).
    pub partitions: Option<Vec<Vec<u8>>>,
    /// A NonInteractivePoRep's public data, with which
    /// [`FilecoinSpec::job_proof`](crate::FilecoinSpec::job_proof) aggregates its
    /// partitions' proofs; `None` where the job's proof is their concatenation.
    pub aggregation: Option<Vec<u8>>,
}

/// One partition of a job whose input was prepared ([`Input::prepare`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The partition.
    pub partition: usize,
    /// The job's partitions.
    pub partitions: usize,
}

/// What a prepared partition's input starts with: `bellhop-prepared-partition K N real|synthetic\n`,
/// then the C1 output of that partition alone in filecoin-proofs-api's form. No C1 JSON
/// starts so, and [`Input::parse`] refuses it from anyone but [`Input::parse_prepared`].
const PREPARED: &[u8] = b"bellhop-prepared-partition ";

impl<Tree: 'static + MerkleTreeTrait> Porep<Tree> {
    /// The job's partitions (a prepared partition's input holds one of them).
    fn partitions(&self) -> usize {
        self.prepared.map_or(self.c1.vanilla_proofs.len(), |p| p.partitions)
    }

    /// The C1 output in filecoin-proofs-api's form with `vanilla_proofs` in place of its
    /// own, `registered_proof` naming the graph.
    fn api(
        &self,
        size: SectorSize,
        registered_proof: &str,
        vanilla_proofs: Vec<Vec<VanillaSealProof<Tree>>>,
    ) -> ApiC1<Tree> {
        let c1 = &self.c1;
        ApiC1 {
            registered_proof: registered_proof.into(),
            vanilla_proofs: BTreeMap::from([(format!("StackedDrg{size}V1"), vanilla_proofs)]),
            comm_r: c1.comm_r,
            comm_d: c1.comm_d,
            replica_id: c1.replica_id,
            seed: c1.seed,
            ticket: c1.ticket,
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Porep<Tree> {
    fn public(&self) -> PorepPublic {
        PorepPublic {
            replica_id: self.c1.replica_id,
            comm_d: self.c1.comm_d,
            ticket: self.c1.ticket,
            porep_id: self.seal.porep_id,
        }
    }

    /// The C1 output in filecoin-proofs-api's form, as Curio and lotus-bench hold it, with
    /// `registered_proof` (StackedDrg<size>V1 or V1_1) naming the graph it was sealed with.
    pub fn to_api_json(&self, size: SectorSize, registered_proof: &str) -> Vec<u8> {
        let api = self.api(size, registered_proof, self.c1.vanilla_proofs.clone());
        serde_json::to_vec(&api).expect("C1 outputs serialize")
    }
}

/// What PoRep's public inputs are made of, and what the sector's ids must reproduce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PorepPublic {
    /// The replica id.
    pub replica_id: <TreeRHasher as Hasher>::Domain,
    /// comm_d.
    pub comm_d: Commitment,
    /// The PreCommit ticket.
    pub ticket: Ticket,
    /// The graph's porep id.
    pub porep_id: [u8; 32],
}

/// A parsed input for one tree shape.
pub enum Typed<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    /// A C1 output.
    Porep(Box<Porep<Tree>>),
    /// PoSt public data and vanilla proofs.
    Post(PostInput<Tree>),
    /// SnapDeals commitments and vanilla proofs; for one partition of a prepared job,
    /// which, and its vanilla proof alone.
    Snap(SnapInput<Tree>, Option<Prepared>),
}

/// One partition of a SnapDeals input, written as a [`SnapInput`] holding its vanilla
/// proof alone.
#[derive(Serialize)]
#[serde(bound = "")]
struct SnapPartition<'a, Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    circuit: &'a str,
    comm_r_old: &'a Commitment,
    comm_r_new: &'a Commitment,
    comm_d_new: &'a Commitment,
    partition_proofs: [&'a PartitionProof<Tree>; 1],
}

/// A parsed input of a Filecoin circuit.
pub enum Input {
    /// For 2 KiB, 8 MiB and 512 MiB sectors.
    Base(Typed<SectorShapeBase>),
    /// For 32 GiB sectors.
    Gib32(Typed<SectorShape32GiB>),
    /// For 64 GiB sectors.
    Gib64(Typed<SectorShape64GiB>),
}

/// `$body` with `$typed` bound to the [`Typed`] input inside `$input`, whatever its shape.
macro_rules! with_typed {
    ($input:expr, $typed:ident => $body:expr) => {
        match $input {
            $crate::input::Input::Base($typed) => $body,
            $crate::input::Input::Gib32($typed) => $body,
            $crate::input::Input::Gib64($typed) => $body,
        }
    };
}
pub(crate) use with_typed;

/// The expected input of a kind, for error messages.
fn expected(kind: Kind) -> &'static str {
    match kind {
        Kind::Porep => "a C1 output (SealCommitPhase1Output JSON, or lotus-bench's {\"Phase1Out\": ...})",
        Kind::SyntheticPorep => "a synthetic C1 output (bellhop fil synthetic-c1)",
        Kind::WinningPost | Kind::WindowPost => {
            "PoSt vanilla proofs with their public data (bellhop fil winning-post / window-post)"
        }
        Kind::Snap => "SnapDeals vanilla partition proofs with their commitments (bellhop fil snap)",
    }
}

impl Input {
    /// Parses `bytes` as the input of `spec`. A prepared partition's input is not one.
    pub fn parse(spec: FilecoinSpec, bytes: &[u8]) -> Result<Self, FilecoinError> {
        if bytes.starts_with(PREPARED) {
            return Err(FilecoinError::Input {
                spec,
                expected: expected(spec.kind),
                why: "it is one partition of a job Bellhop prepared, not an input".into(),
            });
        }
        Self::parse_prepared(spec, bytes)
    }

    /// Parses `bytes` as the input of `spec`, or as one partition of a prepared job (the
    /// jobs' inputs inside Bellhop).
    pub(crate) fn parse_prepared(spec: FilecoinSpec, bytes: &[u8]) -> Result<Self, FilecoinError> {
        if bytes.is_empty() {
            return Err(FilecoinError::Input {
                spec,
                expected: expected(spec.kind),
                why: "no input was given (prove Filecoin circuits with --input FILE)".into(),
            });
        }
        Ok(match spec.sector_size {
            SectorSize::Gib32 => Input::Gib32(Typed::parse(spec, bytes)?),
            SectorSize::Gib64 => Input::Gib64(Typed::parse(spec, bytes)?),
            SectorSize::Kib2 | SectorSize::Mib8 | SectorSize::Mib512 => Input::Base(Typed::parse(spec, bytes)?),
        })
    }

    /// How many partitions (so proofs) the input makes.
    pub fn partitions(&self, spec: FilecoinSpec) -> Result<usize, FilecoinError> {
        with_typed!(self, typed => typed.partitions(spec))
    }

    /// What its jobs read: a PoRep's and a SnapDeals' partitions each get a prepared input
    /// with their own vanilla proofs, all of which are checked here, once for the job (a
    /// synthetic PoRep's were shape-checked when parsed), and a NonInteractivePoRep its
    /// public data to aggregate with; nothing for PoSt.
    pub fn prepare(&self, spec: FilecoinSpec) -> Result<JobInputs, FilecoinError> {
        with_typed!(self, typed => typed.prepare(spec))
    }

    /// For a PoRep input: what its public inputs are made of.
    pub fn porep_public(&self) -> Option<PorepPublic> {
        with_typed!(self, typed => match typed {
            Typed::Porep(porep) => Some(porep.public()),
            _ => None,
        })
    }

    pub(crate) fn instance(&self, spec: FilecoinSpec, partition: usize) -> Result<Instance, FilecoinError> {
        let (circuit, public_inputs) = self.build(spec, partition, Build::Instance)?;
        Ok(Instance { circuit: circuit.expect("an instance is built with its circuit"), public_inputs })
    }

    /// Partition `partition`'s public inputs as filecoin-proofs' verifier computes them,
    /// from the public data alone: no vanilla proof is read and no circuit is built.
    pub(crate) fn public_inputs(&self, spec: FilecoinSpec, partition: usize) -> Result<Vec<Scalar>, FilecoinError> {
        Ok(self.build(spec, partition, Build::PublicInputs)?.1)
    }

    fn build(
        &self,
        spec: FilecoinSpec,
        k: usize,
        build: Build,
    ) -> Result<(Option<FilecoinCircuit>, Vec<Scalar>), FilecoinError> {
        with_typed!(self, typed => typed.build(spec, k, build))
    }
}

/// What to make of a partition: its instance (the vanilla proofs checked against the
/// public data, then the circuit built from them, with its public inputs), or its public
/// inputs alone.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Build {
    Instance,
    PublicInputs,
}

/// The sector size a Merkle proof's tree has, from the arities along its path.
fn proven_sector_bytes(proof: &impl MerkleProofTrait) -> u64 {
    proof.path().iter().map(|(siblings, _)| siblings.len() as u64 + 1).product::<u64>() * 32
}

fn json<T: DeserializeOwned>(spec: FilecoinSpec, bytes: &[u8]) -> Result<T, FilecoinError> {
    serde_json::from_slice(bytes).map_err(|e| FilecoinError::Input {
        spec,
        expected: expected(spec.kind),
        why: format!("{e}{}", if e.is_eof() { " (truncated?)" } else { "" }),
    })
}

fn from_value<T: DeserializeOwned>(spec: FilecoinSpec, value: serde_json::Value) -> Result<T, FilecoinError> {
    serde_json::from_value(value).map_err(|e| FilecoinError::Input {
        spec,
        expected: expected(spec.kind),
        why: e.to_string(),
    })
}

fn check_circuit(spec: FilecoinSpec, circuit: &str) -> Result<(), FilecoinError> {
    if circuit == spec.to_string() {
        return Ok(());
    }
    match circuit.split_once(':') {
        Some((kind, size)) if kind == spec.kind.name() => Err(FilecoinError::SectorSize { spec, found: size.into() }),
        _ => {
            Err(FilecoinError::Input { spec, expected: expected(spec.kind), why: format!("it was made for {circuit}") })
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Typed<Tree>
where
    FilecoinCircuit: From<PorepCircuit<Tree>> + From<FallbackPoStCircuit<Tree>> + From<EmptySectorUpdateCircuit<Tree>>,
{
    fn parse(spec: FilecoinSpec, bytes: &[u8]) -> Result<Self, FilecoinError> {
        let size_mismatch = |bytes: u64| -> Result<(), FilecoinError> {
            if bytes == spec.sector_size.bytes() {
                return Ok(());
            }
            match SectorSize::from_bytes(bytes) {
                Some(found) => Err(FilecoinError::SectorSize { spec, found: found.to_string() }),
                None => Err(FilecoinError::Input {
                    spec,
                    expected: "vanilla proofs of a sealed sector",
                    why: format!("a Merkle path has the shape of a {bytes}-byte tree, which no sector has"),
                }),
            }
        };
        if let Some(rest) = bytes.strip_prefix(PREPARED) {
            return Self::parse_partition(spec, rest);
        }
        Ok(match spec.kind {
            Kind::SyntheticPorep => {
                // One parse: the notice, the shape check and the C1 output read the value.
                let mut file: serde_json::Value = json(spec, bytes)?;
                let Some(notice) = file.get_mut("bellhop_synthetic").map(serde_json::Value::take) else {
                    return Err(FilecoinError::Input {
                        spec,
                        expected: expected(spec.kind),
                        why: format!("it is not synthetic; prove a real C1 output as porep:{}", spec.sector_size),
                    });
                };
                check_circuit(spec, &from_value::<synthetic::Notice>(spec, notice)?.circuit)?;
                // Its vanilla proofs are not verified, which would catch a malformed one:
                // its shape is checked against a file made afresh instead.
                synthetic::check_shape(spec.sector_size, &file).map_err(|why| FilecoinError::Input {
                    spec,
                    expected: expected(spec.kind),
                    why: format!("it is damaged ({why}); make it again with `bellhop fil synthetic-c1`"),
                })?;
                let c1 = from_value(spec, file.get_mut("c1").map(serde_json::Value::take).unwrap_or_default())?;
                Typed::Porep(Box::new(Porep {
                    c1,
                    seal: SealProof::bellhop(spec.sector_size),
                    synthetic: true,
                    prepared: None,
                }))
            }
            Kind::Porep => {
                let not_input = |why: String| FilecoinError::Input { spec, expected: expected(spec.kind), why };
                let inner = match serde_json::from_slice::<CurioC1>(bytes) {
                    Ok(wrapper) => {
                        size_mismatch(wrapper.sector_size)?;
                        wrapper.phase1().map_err(not_input)?
                    }
                    Err(_) => bytes.to_vec(),
                };
                let probe = json::<RegisteredProbe>(spec, &inner)?;
                if probe.bellhop_synthetic.is_some() {
                    return Err(FilecoinError::Synthetic { spec });
                }
                let porep = match probe.registered_proof {
                    Some(name) => {
                        let (size, seal) = SealProof::named(&name).map_err(not_input)?;
                        size_mismatch(size.bytes())?;
                        let api: ApiC1<Tree> = json(spec, &inner)?;
                        let mut tagged = api.vanilla_proofs.into_iter();
                        let shape = format!("StackedDrg{size}V1");
                        let vanilla_proofs = match (tagged.next(), tagged.next()) {
                            (Some((tag, proofs)), None) if tag == shape => proofs,
                            _ => return Err(not_input(format!("its vanilla_proofs are not tagged {shape} alone"))),
                        };
                        let ApiC1 { comm_r, comm_d, replica_id, seed, ticket, .. } = api;
                        let c1 = SealCommitPhase1Output { vanilla_proofs, comm_r, comm_d, replica_id, seed, ticket };
                        Porep { c1, seal, synthetic: false, prepared: None }
                    }
                    None => Porep {
                        c1: json(spec, &inner)?,
                        seal: SealProof::bellhop(spec.sector_size),
                        synthetic: false,
                        prepared: None,
                    },
                };
                let first = porep
                    .c1
                    .vanilla_proofs
                    .first()
                    .and_then(|p| p.first())
                    .ok_or_else(|| not_input("it holds no vanilla proofs".into()))?;
                size_mismatch(proven_sector_bytes(&first.comm_d_proofs))?;
                Typed::Porep(Box::new(porep))
            }
            Kind::WinningPost | Kind::WindowPost => {
                let post: PostInput<Tree> = json(spec, bytes)?;
                check_circuit(spec, &post.circuit)?;
                if let Some(proof) = post.vanilla_proofs.first() {
                    if let Some(inclusion) =
                        proof.vanilla_proof.sectors.first().and_then(|s| s.inclusion_proofs.first())
                    {
                        size_mismatch(proven_sector_bytes(inclusion))?;
                    }
                }
                Typed::Post(post)
            }
            Kind::Snap => {
                let snap: SnapInput<Tree> = json(spec, bytes)?;
                check_circuit(spec, &snap.circuit)?;
                if let Some(challenge) = snap.partition_proofs.first().and_then(|p| p.challenge_proofs.first()) {
                    size_mismatch(proven_sector_bytes(&challenge.proof_r_old))?;
                }
                Typed::Snap(snap, None)
            }
        })
    }

    /// One partition of a prepared PoRep job: `K N real|synthetic`, a newline, and that
    /// partition's C1 output in filecoin-proofs-api's form.
    fn parse_partition(spec: FilecoinSpec, bytes: &[u8]) -> Result<Self, FilecoinError> {
        let bad = |why: &str| FilecoinError::Input {
            spec,
            expected: expected(spec.kind),
            why: format!("a prepared partition's input is damaged ({why})"),
        };
        let end = bytes.iter().position(|&b| b == b'\n').ok_or_else(|| bad("no header"))?;
        let header = std::str::from_utf8(&bytes[..end]).map_err(|_| bad("its header is not text"))?;
        let fields: Vec<&str> = header.split(' ').collect();
        let [partition, partitions, kind] = fields[..] else { return Err(bad("its header is not `K N kind`")) };
        let number = |text: &str| text.parse::<usize>().map_err(|_| bad("a partition is not a number"));
        let prepared = Prepared { partition: number(partition)?, partitions: number(partitions)? };
        if prepared.partition >= prepared.partitions {
            return Err(bad("its partition is past the job's"));
        }
        if (kind, spec.kind) == ("snap", Kind::Snap) {
            let snap: SnapInput<Tree> = json(spec, &bytes[end + 1..])?;
            check_circuit(spec, &snap.circuit)?;
            if snap.partition_proofs.len() != 1 {
                return Err(bad("it holds other than one partition's vanilla proof"));
            }
            return Ok(Typed::Snap(snap, Some(prepared)));
        }
        let synthetic = match (kind, spec.kind) {
            ("real", Kind::Porep) => false,
            ("synthetic", Kind::SyntheticPorep) => true,
            _ => return Err(bad(&format!("it is a {kind} PoRep's, not {spec}'s"))),
        };
        let api: ApiC1<Tree> = json(spec, &bytes[end + 1..])?;
        let (size, seal) = SealProof::named(&api.registered_proof).map_err(|e| bad(&e))?;
        if size != spec.sector_size {
            return Err(FilecoinError::SectorSize { spec, found: size.to_string() });
        }
        let ApiC1 { mut vanilla_proofs, comm_r, comm_d, replica_id, seed, ticket, .. } = api;
        let vanilla_proofs = vanilla_proofs.pop_first().map(|(_, proofs)| proofs).unwrap_or_default();
        if vanilla_proofs.len() != 1 || prepared.partition >= prepared.partitions {
            return Err(bad("it holds other than one partition's vanilla proofs"));
        }
        let c1 = SealCommitPhase1Output { vanilla_proofs, comm_r, comm_d, replica_id, seed, ticket };
        Ok(Typed::Porep(Box::new(Porep { c1, seal, synthetic, prepared: Some(prepared) })))
    }

    fn prepare(&self, spec: FilecoinSpec) -> Result<JobInputs, FilecoinError> {
        let porep = match self {
            Typed::Porep(porep) => porep,
            Typed::Snap(snap, None) => {
                return Ok(JobInputs { partitions: Some(snap_partitions(spec, snap)?), aggregation: None })
            }
            Typed::Snap(_, Some(_)) | Typed::Post(_) => return Ok(JobInputs::default()),
        };
        let partitions = self.partitions(spec)?;
        let (public, pp) = porep_public(spec, porep)?;
        if !porep.synthetic {
            porep_vanilla_check(spec, porep, &public, &pp)?;
        }
        let kind = if porep.synthetic { "synthetic" } else { "real" };
        let name = porep.seal.name(spec.sector_size).map_err(fil(spec))?;
        let inputs = (0..partitions)
            .map(|k| {
                let api = porep.api(spec.sector_size, &name, vec![porep.c1.vanilla_proofs[k].clone()]);
                let mut bytes = PREPARED.to_vec();
                bytes.extend_from_slice(format!("{k} {partitions} {kind}\n").as_bytes());
                serde_json::to_writer(&mut bytes, &api).expect("C1 outputs serialize");
                bytes
            })
            .collect();
        let aggregation = porep.seal.aggregated().then(|| {
            let c1 = &porep.c1;
            let aggregation = Aggregation {
                registered_proof: name,
                comm_r: c1.comm_r,
                comm_d: c1.comm_d,
                replica_id: c1.replica_id,
                seed: c1.seed,
            };
            serde_json::to_vec(&aggregation).expect("public data serializes")
        });
        Ok(JobInputs { partitions: Some(inputs), aggregation })
    }

    fn partitions(&self, spec: FilecoinSpec) -> Result<usize, FilecoinError> {
        match self {
            Typed::Porep(porep) => Ok(porep.partitions()),
            Typed::Post(post) => match spec.kind {
                Kind::WindowPost => {
                    Ok(get_num_partition_for_fallback_post(&post_config(spec).map_err(fil(spec))?, post.sectors.len()))
                }
                _ => Ok(1),
            },
            Typed::Snap(snap, prepared) => Ok(prepared.map_or(snap.partition_proofs.len(), |p| p.partitions)),
        }
    }

    fn build(
        &self,
        spec: FilecoinSpec,
        k: usize,
        build: Build,
    ) -> Result<(Option<FilecoinCircuit>, Vec<Scalar>), FilecoinError> {
        match self {
            Typed::Porep(porep) => porep_instance(spec, porep, k, build),
            Typed::Post(post) => post_instance(spec, post, k, build),
            Typed::Snap(snap, prepared) => snap_instance(spec, snap, *prepared, k, build),
        }
    }
}

fn fil(spec: FilecoinSpec) -> impl Fn(anyhow::Error) -> FilecoinError {
    move |error| FilecoinError::Filecoin { spec, error }
}

fn mismatch(spec: FilecoinSpec, why: impl Into<String>) -> FilecoinError {
    FilecoinError::Mismatch { spec, why: why.into() }
}

/// Runs one of filecoin-proofs' vanilla verifiers, which index the proofs they are given
/// without checking them (a Merkle path's sibling index past its arity panics there): a
/// panic is a mismatch error instead.
fn vanilla_checked<T>(spec: FilecoinSpec, verifier: impl FnOnce() -> T) -> Result<T, FilecoinError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(verifier)).map_err(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        mismatch(spec, format!("filecoin-proofs' vanilla verifier could not read them ({message})"))
    })
}

/// The PoRep configuration of `size` that `bellhop fil seal` seals with by default
/// ([`SealProof::bellhop`]), whose parameters every PoRep of that size proves with.
pub fn porep_config(size: SectorSize) -> anyhow::Result<PoRepConfig> {
    SealProof::bellhop(size).config(size)
}

/// The compound public parameters of PoRep C2 for `config`.
pub fn porep_public_params<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> anyhow::Result<compound_proof::PublicParams<'static, StackedDrg<'static, Tree, Sha256Hasher>>> {
    StackedCompound::<Tree, Sha256Hasher>::setup(&compound_proof::SetupParams {
        vanilla_params: parameters::setup_params(config)?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    })
}

/// The PoSt configuration of a `winning-post` or `window-post` spec.
pub fn post_config(spec: FilecoinSpec) -> anyhow::Result<PoStConfig> {
    let size = spec.sector_size.bytes();
    Ok(match spec.kind {
        Kind::WinningPost => PoStConfig {
            sector_size: size.into(),
            challenge_count: WINNING_POST_CHALLENGE_COUNT,
            sector_count: WINNING_POST_SECTOR_COUNT,
            typ: PoStType::Winning,
            priority: false,
            // The vanilla path of filecoin-proofs 19.1 draws WinningPoSt challenges that
            // its own verifier does not accept with 1.2.0; the parameters are the same.
            api_version: ApiVersion::V1_1_0,
        },
        Kind::WindowPost => PoStConfig {
            sector_size: size.into(),
            challenge_count: WINDOW_POST_CHALLENGE_COUNT,
            sector_count: *WINDOW_POST_SECTOR_COUNT
                .read()
                .map_err(|_| anyhow::anyhow!("filecoin-proofs' sector count table is poisoned"))?
                .get(&size)
                .with_context(|| format!("no WindowPoSt sector count for {size}-byte sectors"))?,
            typ: PoStType::Window,
            priority: false,
            api_version: API_VERSION,
        },
        _ => anyhow::bail!("{spec} is not a PoSt circuit"),
    })
}

/// The compound public parameters of a PoSt spec with `partitions` partitions.
pub fn post_public_params<Tree: 'static + MerkleTreeTrait>(
    spec: FilecoinSpec,
    partitions: usize,
) -> anyhow::Result<compound_proof::PublicParams<'static, FallbackPoSt<'static, Tree>>> {
    let config = post_config(spec)?;
    let vanilla_params = match spec.kind {
        Kind::WinningPost => parameters::winning_post_setup_params(&config)?,
        _ => parameters::window_post_setup_params(&config),
    };
    FallbackPoStCompound::<Tree>::setup(&compound_proof::SetupParams {
        vanilla_params,
        partitions: (partitions > 1).then_some(partitions),
        priority: false,
    })
}

/// The compound public parameters of SnapDeals for `size`.
pub fn snap_public_params<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    size: SectorSize,
) -> anyhow::Result<compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>> {
    let config = SectorUpdateConfig::from_porep_config(&porep_config(size)?);
    EmptySectorUpdateCompound::<Tree>::setup(&compound_proof::SetupParams {
        vanilla_params: storage_proofs_update::SetupParams { sector_bytes: size.bytes() },
        partitions: Some(usize::from(config.update_partitions)),
        priority: false,
    })
}

fn porep_instance<Tree: 'static + MerkleTreeTrait>(
    spec: FilecoinSpec,
    porep: &Porep<Tree>,
    k: usize,
    build: Build,
) -> Result<(Option<FilecoinCircuit>, Vec<Scalar>), FilecoinError>
where
    FilecoinCircuit: From<PorepCircuit<Tree>>,
{
    let (public, pp) = porep_public(spec, porep)?;
    // A prepared partition holds its own vanilla proofs alone, checked with the job's.
    let proofs = match porep.prepared {
        Some(prepared) if prepared.partition != k => {
            return Err(FilecoinError::Partition { spec, index: k, count: prepared.partitions })
        }
        Some(_) => &porep.c1.vanilla_proofs[0],
        None => &porep.c1.vanilla_proofs[k],
    };
    let inputs = StackedCompound::<Tree, Sha256Hasher>::generate_public_inputs(&public, &pp.vanilla_params, Some(k))
        .map_err(fil(spec))?;
    if build == Build::PublicInputs {
        return Ok((None, inputs));
    }
    if !porep.synthetic && porep.prepared.is_none() {
        porep_vanilla_check(spec, porep, &public, &pp)?;
    }
    let circuit = PorepCircuit::new(&public, proofs, &pp.vanilla_params, k).map_err(fil(spec))?;
    Ok((Some(circuit.into()), inputs))
}

/// PoRep's public inputs.
type PorepPublicInputs<Tree> =
    stacked::PublicInputs<<<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain, <Sha256Hasher as Hasher>::Domain>;

/// PoRep's compound public parameters.
type PorepParams<Tree> = compound_proof::PublicParams<'static, StackedDrg<'static, Tree, Sha256Hasher>>;

/// A PoRep's public inputs and compound parameters, its partition count checked.
fn porep_public<Tree: 'static + MerkleTreeTrait>(
    spec: FilecoinSpec,
    porep: &Porep<Tree>,
) -> Result<(PorepPublicInputs<Tree>, PorepParams<Tree>), FilecoinError> {
    let Porep { c1, seal, .. } = porep;
    let config = seal.config(spec.sector_size).map_err(fil(spec))?;
    let partitions = porep.partitions();
    if partitions != usize::from(config.partitions) {
        return Err(mismatch(
            spec,
            format!("{partitions} partitions of vanilla proofs, {spec} has {}", usize::from(config.partitions)),
        ));
    }
    let public = stacked_public_inputs::<Tree>(c1.replica_id, &c1.comm_d, &c1.comm_r, c1.seed).map_err(fil(spec))?;
    let pp = porep_public_params::<Tree>(&config).map_err(fil(spec))?;
    Ok((public, pp))
}

/// StackedDrg's public inputs of a sealed sector, as filecoin-proofs' verify_seal makes
/// them: its replica id, commitments (checked to be field elements) and seed.
pub(crate) fn stacked_public_inputs<Tree: MerkleTreeTrait>(
    replica_id: <Tree::Hasher as Hasher>::Domain,
    comm_d: &Commitment,
    comm_r: &Commitment,
    seed: Ticket,
) -> anyhow::Result<PorepPublicInputs<Tree>> {
    Ok(stacked::PublicInputs {
        replica_id,
        tau: Some(stacked::Tau {
            comm_d: as_safe_commitment::<<Sha256Hasher as Hasher>::Domain, _>(comm_d, "comm_d")?,
            comm_r: as_safe_commitment(comm_r, "comm_r")?,
        }),
        k: None,
        seed: Some(seed),
    })
}

/// Checks every partition's vanilla proofs of a whole PoRep C1 output against its public
/// data: StackedDrg verifies only all partitions together (its single-partition `verify`
/// is unimplemented).
fn porep_vanilla_check<Tree: 'static + MerkleTreeTrait>(
    spec: FilecoinSpec,
    porep: &Porep<Tree>,
    public: &PorepPublicInputs<Tree>,
    pp: &PorepParams<Tree>,
) -> Result<(), FilecoinError> {
    let vanilla = &porep.c1.vanilla_proofs;
    if !vanilla_checked(spec, || {
        StackedDrg::<Tree, Sha256Hasher>::verify_all_partitions(&pp.vanilla_params, public, vanilla)
    })?
    .map_err(fil(spec))?
    {
        return Err(mismatch(
            spec,
            "they do not verify against comm_r, comm_d, replica id and seed, with the graph of the C1 output's \
             registered proof (StackedDrg<size>V1_1 where it names none)",
        ));
    }
    Ok(())
}

fn post_instance<Tree: 'static + MerkleTreeTrait>(
    spec: FilecoinSpec,
    post: &PostInput<Tree>,
    k: usize,
    build: Build,
) -> Result<(Option<FilecoinCircuit>, Vec<Scalar>), FilecoinError>
where
    FilecoinCircuit: From<FallbackPoStCircuit<Tree>>,
{
    let api_version: ApiVersion = post.api_version.parse().map_err(|e| FilecoinError::Input {
        spec,
        expected: expected(spec.kind),
        why: format!("api_version `{}`: {e}", post.api_version),
    })?;
    let mut config = post_config(spec).map_err(fil(spec))?;
    config.api_version = api_version;
    if spec.kind == Kind::WinningPost && post.sectors.len() != config.sector_count {
        return Err(mismatch(
            spec,
            format!("WinningPoSt proves {} sector, the input has {}", config.sector_count, post.sectors.len()),
        ));
    }
    if post.sectors.len() != post.vanilla_proofs.len() {
        return Err(mismatch(
            spec,
            format!("{} sectors, {} vanilla proofs", post.sectors.len(), post.vanilla_proofs.len()),
        ));
    }
    let mut sectors = Vec::with_capacity(post.sectors.len());
    for (sector, proof) in post.sectors.iter().zip(&post.vanilla_proofs) {
        let comm_r = as_safe_commitment(&sector.comm_r, "comm_r").map_err(fil(spec))?;
        if proof.sector_id != SectorId::from(sector.id) || proof.comm_r != comm_r {
            return Err(mismatch(
                spec,
                format!(
                    "the vanilla proof of sector {} is not for sector {} and its comm_r",
                    u64::from(proof.sector_id),
                    sector.id
                ),
            ));
        }
        sectors.push(PublicSector { id: SectorId::from(sector.id), comm_r });
    }
    let public = fallback::PublicInputs {
        randomness: as_safe_commitment(&post.randomness, "randomness").map_err(fil(spec))?,
        prover_id: as_safe_commitment(&post.prover_id, "prover_id").map_err(fil(spec))?,
        sectors,
        k: None,
    };
    let partitions = match spec.kind {
        Kind::WindowPost => get_num_partition_for_fallback_post(&config, post.sectors.len()),
        _ => 1,
    };
    let pp = post_public_params::<Tree>(spec, partitions).map_err(fil(spec))?;
    // The inputs as filecoin-proofs' verifier computes them: WinningPoSt's one sector
    // stands for all of its challenge slots.
    let verifier_public = match spec.kind {
        Kind::WinningPost => fallback::PublicInputs {
            sectors: vec![public.sectors[0].clone(); pp.vanilla_params.sector_count],
            ..public.clone()
        },
        _ => public.clone(),
    };
    let inputs = FallbackPoStCompound::<Tree>::generate_public_inputs(&verifier_public, &pp.vanilla_params, Some(k))
        .map_err(fil(spec))?;
    if build == Build::PublicInputs {
        return Ok((None, inputs));
    }
    // filecoin-proofs verifies the partitioned vanilla proofs against the public data.
    let partitioned = vanilla_checked(spec, || {
        partition_vanilla_proofs(&config, &pp.vanilla_params, &public, partitions, &post.vanilla_proofs)
    })?
    .map_err(|e| mismatch(spec, format!("{e:#}")))?;
    let circuit = FallbackPoStCompound::<Tree>::circuit(
        &public,
        Default::default(),
        &partitioned[k],
        &pp.vanilla_params,
        Some(k),
    )
    .map_err(fil(spec))?;
    Ok((Some(circuit.into()), inputs))
}

/// SnapDeals' parameters and `snap`'s public data, refused unless it has `given` of the
/// partitions its size has.
fn snap_public<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    snap: &SnapInput<Tree>,
    given: usize,
) -> Result<
    (compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>, storage_proofs_update::PublicInputs),
    FilecoinError,
> {
    let pp = snap_public_params::<Tree>(spec.sector_size).map_err(fil(spec))?;
    let config = SectorUpdateConfig::from_porep_config(&porep_config(spec.sector_size).map_err(fil(spec))?);
    let partitions = usize::from(config.update_partitions);
    if given != partitions {
        return Err(mismatch(spec, format!("{given} partition proofs, {spec} has {partitions}")));
    }
    let domain = |c: &Commitment, name: &str| {
        <TreeRHasher as Hasher>::Domain::try_from_bytes(c).with_context(|| format!("{name} is not a field element"))
    };
    let public = storage_proofs_update::PublicInputs {
        k: partitions,
        comm_r_old: domain(&snap.comm_r_old, "comm_r_old").map_err(fil(spec))?,
        comm_d_new: <Sha256Hasher as Hasher>::Domain::try_from_bytes(&snap.comm_d_new)
            .context("comm_d_new is not a field element")
            .map_err(fil(spec))?,
        comm_r_new: domain(&snap.comm_r_new, "comm_r_new").map_err(fil(spec))?,
        h: config.h,
    };
    Ok((pp, public))
}

/// Checks partition `k`'s vanilla proof `proof` as verify_all_partitions checks each one.
fn snap_vanilla_check<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    pp: &compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>,
    public: &storage_proofs_update::PublicInputs,
    k: usize,
    proof: &PartitionProof<Tree>,
) -> Result<(), FilecoinError> {
    let partition_public = EmptySectorUpdate::<Tree>::with_partition(public.clone(), Some(k));
    if !vanilla_checked(spec, || EmptySectorUpdate::<Tree>::verify(&pp.vanilla_params, &partition_public, proof))?
        .map_err(fil(spec))?
    {
        return Err(mismatch(spec, "they do not verify against comm_r_old, comm_r_new and comm_d_new"));
    }
    Ok(())
}

/// One input per partition of `snap`, each holding its partition's vanilla proof alone;
/// every partition's is checked here, once for the job.
fn snap_partitions<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    snap: &SnapInput<Tree>,
) -> Result<Vec<Vec<u8>>, FilecoinError> {
    let partitions = snap.partition_proofs.len();
    let (pp, public) = snap_public(spec, snap, partitions)?;
    for (k, proof) in snap.partition_proofs.iter().enumerate() {
        snap_vanilla_check(spec, &pp, &public, k, proof)?;
    }
    Ok((0..partitions)
        .map(|k| {
            let mut bytes = PREPARED.to_vec();
            bytes.extend_from_slice(format!("{k} {partitions} snap\n").as_bytes());
            let partition = SnapPartition {
                circuit: &snap.circuit,
                comm_r_old: &snap.comm_r_old,
                comm_r_new: &snap.comm_r_new,
                comm_d_new: &snap.comm_d_new,
                partition_proofs: [&snap.partition_proofs[k]],
            };
            serde_json::to_writer(&mut bytes, &partition).expect("SnapDeals inputs serialize");
            bytes
        })
        .collect())
}

fn snap_instance<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    snap: &SnapInput<Tree>,
    prepared: Option<Prepared>,
    k: usize,
    build: Build,
) -> Result<(Option<FilecoinCircuit>, Vec<Scalar>), FilecoinError>
where
    FilecoinCircuit: From<EmptySectorUpdateCircuit<Tree>>,
{
    let given = prepared.map_or(snap.partition_proofs.len(), |p| p.partitions);
    let (pp, public) = snap_public(spec, snap, given)?;
    // A prepared partition holds its own vanilla proof alone, checked with the job's.
    let proof = match prepared {
        Some(p) if p.partition != k => return Err(FilecoinError::Partition { spec, index: k, count: p.partitions }),
        Some(_) => &snap.partition_proofs[0],
        None => snap.partition_proofs.get(k).ok_or(FilecoinError::Partition { spec, index: k, count: given })?,
    };
    let inputs = EmptySectorUpdateCompound::<Tree>::generate_public_inputs(&public, &pp.vanilla_params, Some(k))
        .map_err(fil(spec))?;
    if build == Build::PublicInputs {
        return Ok((None, inputs));
    }
    if prepared.is_none() {
        snap_vanilla_check(spec, &pp, &public, k, proof)?;
    }
    let circuit = EmptySectorUpdateCompound::<Tree>::circuit(&public, (), proof, &pp.vanilla_params, Some(k))
        .map_err(fil(spec))?;
    Ok((Some(circuit.into()), inputs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Registered seal proofs as filecoin-proofs-api numbers and names them, and the
    /// parameters each proves with: SyntheticPoRep's are the interactive PoRep's.
    #[test]
    fn registered_seal_proofs_are_filecoin_proofs_apis() {
        let number = |seal: SealProof| u64::from_le_bytes(seal.porep_id[..8].try_into().unwrap());
        let (size, synthetic) = SealProof::named("StackedDrg32GiBV1_1_Feat_SyntheticPoRep").unwrap();
        assert_eq!(
            (size, number(synthetic), synthetic.feature),
            (SectorSize::Gib32, 13, Some(ApiFeature::SyntheticPoRep))
        );
        let (size, v1) = SealProof::named("StackedDrg64GiBV1").unwrap();
        assert_eq!((size, number(v1), v1.api_version), (SectorSize::Gib64, 4, ApiVersion::V1_0_0));
        assert_eq!(number(SealProof::named("StackedDrg2KiBV1_1").unwrap().1), 5);
        let (size, ni) = SealProof::named("StackedDrg32GiBV1_2_Feat_NonInteractivePoRep").unwrap();
        assert_eq!((size, number(ni), ni.api_version), (SectorSize::Gib32, 18, ApiVersion::V1_2_0));
        assert!(ni.aggregated() && !synthetic.aggregated());
        assert!(SealProof::named("StackedDrg4KiBV1_1").unwrap_err().contains("not one Bellhop proves"));
        for size in SectorSize::ALL {
            for (suffix, ..) in REGISTERED_SEAL_PROOFS {
                let name = format!("StackedDrg{size}{suffix}");
                let (read, seal) = SealProof::named(&name).unwrap();
                assert_eq!((read, seal.name(size).unwrap()), (size, name));
            }
            let synthetic = SealProof::registered(size, Some(ApiFeature::SyntheticPoRep));
            assert_eq!(synthetic.name(size).unwrap(), format!("StackedDrg{size}V1_1_Feat_SyntheticPoRep"));
            let identifier = |seal: SealProof| crate::with_tree!(size, Tree => seal.config(size).unwrap().get_cache_identifier::<Tree>().unwrap());
            assert_eq!(identifier(synthetic), identifier(SealProof::bellhop(size)), "{size}");
            // NonInteractivePoRep's partitions are interactive PoRep's circuit, more of them.
            let ni = SealProof::registered(size, Some(ApiFeature::NonInteractivePoRep));
            assert_eq!(identifier(ni), identifier(SealProof::bellhop(size)), "{size}");
        }
    }
}
