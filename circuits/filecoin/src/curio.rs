//! Curio's proving requests, as cuzk's `SubmitProofRequest` carries them, decoded into
//! Bellhop's circuits and inputs (cuzk's `cuzk-core/src/prover.rs` is the reference for
//! every conversion):
//! - PoRep C2: `vanilla_proof` is Curio's C1 wrapper, JSON `{"SectorNum", "Phase1Out"
//!   (base64 of filecoin-proofs-api's C1 output JSON), "SectorSize"}`, with `sector_number`
//!   and `miner_id`; the C1 output's own registered proof picks the graph;
//! - WinningPoSt and WindowPoSt: `vanilla_proofs` are bincode `FallbackPoStSectorProof`s,
//!   one per sector (a WindowPoSt request is one partition's sectors), with `randomness`,
//!   `miner_id` and `registered_proof` (Go's `abi.RegisteredPoStProof` numbering);
//! - SnapDeals: `vanilla_proofs` are bincode `PartitionProof`s, one per partition, with the
//!   raw 32-byte `comm_r_old`, `comm_r_new`, `comm_d_new` and `registered_proof`
//!   (`abi.RegisteredUpdateProof`).
//!
//! [`Request`] is such a request; as JSON (a request file, a list of them) it is what
//! `bellhop fil` writes and `bellhop client` sends. [`Request::decode`] checks it field by
//! field and turns it into a circuit, the input Bellhop proves it from and its partition count.

use filecoin_hashers::{sha256::Sha256Hasher, Domain, Hasher};
use filecoin_proofs::{FallbackPoStSectorProof, PartitionProof, PoStConfig, SectorUpdateConfig, TreeRHasher};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use storage_proofs_core::{api_version::ApiVersion, merkle::MerkleTreeTrait};
use storage_proofs_porep::stacked::generate_replica_id;

use crate::{
    input::{self, porep_config, post_config, CurioC1, PostInput, PostSector, SealProof, SnapInput, Typed},
    make::SealedSector,
    FilecoinError, FilecoinSpec, Kind, SectorSize,
};

/// What a request asks for (cuzk's `ProofKind`, by its protobuf names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProofKind {
    /// PoRep C2 (`POREP_SEAL_COMMIT`, 1).
    PorepSealCommit,
    /// SnapDeals (`SNAP_DEALS_UPDATE`, 2).
    SnapDealsUpdate,
    /// One WindowPoSt partition (`WINDOW_POST_PARTITION`, 3).
    WindowPostPartition,
    /// WinningPoSt (`WINNING_POST`, 4).
    WinningPost,
}

impl ProofKind {
    /// The kind of a protobuf `ProofKind` value, if it names one.
    pub fn from_wire(value: i32) -> Option<Self> {
        match value {
            1 => Some(Self::PorepSealCommit),
            2 => Some(Self::SnapDealsUpdate),
            3 => Some(Self::WindowPostPartition),
            4 => Some(Self::WinningPost),
            _ => None,
        }
    }

    /// Its protobuf value.
    pub fn wire(self) -> i32 {
        match self {
            Self::PorepSealCommit => 1,
            Self::SnapDealsUpdate => 2,
            Self::WindowPostPartition => 3,
            Self::WinningPost => 4,
        }
    }

    /// The circuit kind that proves it.
    pub fn circuit_kind(self) -> Kind {
        match self {
            Self::PorepSealCommit => Kind::Porep,
            Self::SnapDealsUpdate => Kind::Snap,
            Self::WindowPostPartition => Kind::WindowPost,
            Self::WinningPost => Kind::WinningPost,
        }
    }
}

/// One proving request with Curio's payload (the fields of cuzk's `SubmitProofRequest`
/// that say what to prove). As JSON: field names as in the protobuf, bytes in base64.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// What to prove.
    pub proof_kind: ProofKind,
    /// PoSt and SnapDeals: the registered proof in Go's `abi` numbering (PoRep: unused,
    /// the C1 output names its own).
    #[serde(default)]
    pub registered_proof: u64,
    /// PoRep: Curio's C1 wrapper JSON.
    #[serde(default, with = "base64_bytes", skip_serializing_if = "Vec::is_empty")]
    pub vanilla_proof: Vec<u8>,
    /// PoSt: one bincode `FallbackPoStSectorProof` per sector; SnapDeals: one bincode
    /// `PartitionProof` per partition.
    #[serde(default, with = "base64_list", skip_serializing_if = "Vec::is_empty")]
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// PoRep: the sector number.
    #[serde(default)]
    pub sector_number: u64,
    /// The miner's actor id; the prover id is made from it ([`prover_id`]).
    #[serde(default)]
    pub miner_id: u64,
    /// PoSt: the 32-byte challenge randomness.
    #[serde(default, with = "base64_bytes", skip_serializing_if = "Vec::is_empty")]
    pub randomness: Vec<u8>,
    /// WindowPoSt: the partition of the deadline these sectors are.
    #[serde(default)]
    pub partition_index: u32,
    /// SnapDeals: comm_r before the update.
    #[serde(default, with = "base64_bytes", skip_serializing_if = "Vec::is_empty")]
    pub comm_r_old: Vec<u8>,
    /// SnapDeals: comm_r after the update.
    #[serde(default, with = "base64_bytes", skip_serializing_if = "Vec::is_empty")]
    pub comm_r_new: Vec<u8>,
    /// SnapDeals: comm_d of the new data.
    #[serde(default, with = "base64_bytes", skip_serializing_if = "Vec::is_empty")]
    pub comm_d_new: Vec<u8>,
}

impl Request {
    /// An empty request of `kind`, to fill in.
    pub fn new(proof_kind: ProofKind) -> Self {
        Self {
            proof_kind,
            registered_proof: 0,
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            sector_number: 0,
            miner_id: 0,
            randomness: Vec::new(),
            partition_index: 0,
            comm_r_old: Vec::new(),
            comm_r_new: Vec::new(),
            comm_d_new: Vec::new(),
        }
    }
}

/// A request that cannot be proved as it is: the field at fault and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {why}")]
pub struct PayloadError {
    /// The request field at fault, e.g. `vanilla_proofs[2]`.
    pub field: String,
    /// What is wrong with it, and what would be right.
    pub why: String,
}

fn bad(field: impl Into<String>, why: impl Into<String>) -> PayloadError {
    PayloadError { field: field.into(), why: why.into() }
}

/// What a request proves: the circuit, the input Bellhop proves it from (the circuit's
/// own input format) and how many partitions (proofs) that makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The circuit, e.g. `window-post:2KiB`.
    pub spec: FilecoinSpec,
    /// The circuit's input.
    pub input: Vec<u8>,
    /// Its partitions; the proof returned is theirs, 192 bytes each, in order.
    pub partitions: usize,
}

/// The prover id of miner `miner_id`, as Curio (Go's `toProverID`) makes it: the payload
/// of the miner's ID address, the actor id as an unsigned LEB128 varint, left-aligned.
pub fn prover_id(miner_id: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    let mut rest = miner_id;
    for byte in &mut id {
        *byte = (rest & 0x7f) as u8;
        rest >>= 7;
        if rest == 0 {
            break;
        }
        *byte |= 0x80;
    }
    id
}

/// The miner whose [`prover_id`] `prover_id` is, if it is one.
pub fn miner_id(prover_id: &[u8; 32]) -> Option<u64> {
    let mut value = 0u64;
    for (i, byte) in prover_id.iter().take(10).enumerate() {
        value |= u64::from(byte & 0x7f).checked_shl(7 * i as u32)?;
        if byte & 0x80 == 0 {
            return (self::prover_id(value) == *prover_id).then_some(value);
        }
    }
    None
}

/// The sector size and API version of a `RegisteredPoStProof` (Go's numbering: Winning
/// V1 0-4, Window V1 5-9, Window V1_1 10-14, which filecoin-proofs-api proves as V1_2,
/// API 1.2.0; each run of five in the order of [`SectorSize::ALL`]).
fn post_proof(kind: Kind, value: u64) -> Result<(SectorSize, ApiVersion), String> {
    let (first, version) = match (kind, value) {
        (Kind::WinningPost, 0..=4) => (0, ApiVersion::V1_0_0),
        (Kind::WindowPost, 5..=9) => (5, ApiVersion::V1_0_0),
        (Kind::WindowPost, 10..=14) => (10, ApiVersion::V1_2_0),
        (Kind::WinningPost, _) => {
            return Err(format!("{value} is not a WinningPoSt proof (0-4: StackedDrgWinning<size>V1)"))
        }
        _ => {
            return Err(format!("{value} is not a WindowPoSt proof (10-14: StackedDrgWindow<size>V1_1, or 5-9 for V1)"))
        }
    };
    Ok((SectorSize::ALL[(value - first) as usize], version))
}

/// The sector size of a `RegisteredUpdateProof` (0-4: StackedDrg<size>V1).
fn update_proof(value: u64) -> Result<SectorSize, String> {
    SectorSize::ALL.get(value as usize).copied().ok_or_else(|| {
        format!("{value} is not a SnapDeals proof (0-4: StackedDrg<size>V1 for 2KiB, 8MiB, 512MiB, 32GiB, 64GiB)")
    })
}

/// cuzk's name for the parameter set of `spec` (`porep-32g`, `wpost-2k`, `winning-512m`,
/// `snap-8m`), as `GetStatus`, `PreloadSRS` and `EvictSRS` use it (and Bellhop's own
/// `synthetic-porep-32g`, which cuzk never sends).
pub fn cuzk_circuit_id(spec: FilecoinSpec) -> String {
    let kind = match spec.kind {
        Kind::Porep => "porep",
        Kind::SyntheticPorep => "synthetic-porep",
        Kind::Snap => "snap",
        Kind::WindowPost => "wpost",
        Kind::WinningPost => "winning",
    };
    let size = match spec.sector_size {
        SectorSize::Kib2 => "2k",
        SectorSize::Mib8 => "8m",
        SectorSize::Mib512 => "512m",
        SectorSize::Gib32 => "32g",
        SectorSize::Gib64 => "64g",
    };
    format!("{kind}-{size}")
}

/// The circuit cuzk's parameter-set name `id` stands for, if it names one Bellhop proves
/// (not the benchmark-only `synthetic-porep`).
pub fn from_cuzk_circuit_id(id: &str) -> Option<FilecoinSpec> {
    SectorSize::ALL
        .into_iter()
        .flat_map(|sector_size| {
            Kind::NAMES.map(|name| FilecoinSpec { kind: Kind::from_name(name).expect("listed"), sector_size })
        })
        .filter(|spec| spec.kind != Kind::SyntheticPorep)
        .find(|spec| cuzk_circuit_id(*spec) == id)
}

/// The Go numbering of the `RegisteredPoStProof` of `spec` (a PoSt circuit), as Curio
/// sends it today (WindowPoSt V1_1).
pub fn post_proof_number(spec: FilecoinSpec) -> u64 {
    let index = spec.sector_size.index();
    match spec.kind {
        Kind::WinningPost => index,
        _ => 10 + index,
    }
}

/// The Go numbering of the `RegisteredUpdateProof` of sector size `size`.
pub fn update_proof_number(size: SectorSize) -> u64 {
    size.index()
}

fn bytes32(field: &str, bytes: &[u8]) -> Result<[u8; 32], PayloadError> {
    bytes.try_into().map_err(|_| bad(field, format!("must be 32 bytes, got {}", bytes.len())))
}

/// A 32-byte value that must be a canonical field element (filecoin-proofs requires it of
/// randomness and commitments).
fn field32(field: &str, bytes: &[u8]) -> Result<[u8; 32], PayloadError> {
    let value = bytes32(field, bytes)?;
    if bool::from(blstrs::Scalar::from_bytes_le(&value).is_none()) {
        return Err(bad(
            field,
            "is not a BLS12-381 scalar below the field modulus (Curio clears the top bits of byte 31)",
        ));
    }
    Ok(value)
}

fn bincode_each<T: DeserializeOwned>(field: &str, items: &[Vec<u8>], what: &str) -> Result<Vec<T>, PayloadError> {
    if items.is_empty() {
        return Err(bad(field, format!("is empty; it must hold {what}")));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            bincode::deserialize(bytes)
                .map_err(|e| bad(format!("{field}[{i}]"), format!("is not a bincode {what}: {e}")))
        })
        .collect()
}

impl Request {
    /// Checks the request field by field and decodes it into the circuit that proves it
    /// and that circuit's input. The vanilla proofs themselves are checked against their
    /// public data later, when each partition's circuit is built.
    pub fn decode(&self) -> Result<Decoded, PayloadError> {
        match self.proof_kind {
            ProofKind::PorepSealCommit => self.porep(),
            ProofKind::WinningPost | ProofKind::WindowPostPartition => {
                let kind = self.proof_kind.circuit_kind();
                let (size, version) =
                    post_proof(kind, self.registered_proof).map_err(|e| bad("registered_proof", e))?;
                let spec = FilecoinSpec { kind, sector_size: size };
                crate::with_tree!(size, Tree => self.post::<Tree>(spec, version))
            }
            ProofKind::SnapDealsUpdate => {
                let size = update_proof(self.registered_proof).map_err(|e| bad("registered_proof", e))?;
                crate::with_tree!(size, Tree => self.snap::<Tree>(FilecoinSpec { kind: Kind::Snap, sector_size: size }))
            }
        }
    }

    fn porep(&self) -> Result<Decoded, PayloadError> {
        let field = "vanilla_proof";
        if self.vanilla_proof.is_empty() {
            return Err(bad(
                field,
                "is empty; it must hold Curio's C1 output JSON {\"SectorNum\", \"Phase1Out\", \"SectorSize\"}",
            ));
        }
        let wrapper: input::CurioC1 = serde_json::from_slice(&self.vanilla_proof).map_err(|e| {
            bad(field, format!("is not Curio's C1 output JSON {{\"SectorNum\", \"Phase1Out\", \"SectorSize\"}}: {e}"))
        })?;
        let size = SectorSize::from_bytes(wrapper.sector_size).ok_or_else(|| {
            bad(
                field,
                format!(
                    "SectorSize {} is not a sector size Bellhop proves (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)",
                    wrapper.sector_size
                ),
            )
        })?;
        let spec = FilecoinSpec { kind: Kind::Porep, sector_size: size };
        let parsed = match input::Input::parse(spec, &self.vanilla_proof) {
            Err(FilecoinError::Synthetic { .. }) => return Self::synthetic_porep(size, &wrapper),
            parsed => parsed.map_err(|e| bad(field, e.to_string()))?,
        };
        let c1 = parsed.porep_public().ok_or_else(|| bad(field, "holds no PoRep C1 output"))?;
        // The prover and sector must be the ones the replica was sealed for: otherwise the
        // proof would be valid for the C1 output but rejected on chain.
        let replica_id = generate_replica_id::<TreeRHasher, _>(
            &prover_id(self.miner_id),
            self.sector_number,
            &c1.ticket,
            <Sha256Hasher as Hasher>::Domain::try_from_bytes(&c1.comm_d)
                .map_err(|_| bad(field, "comm_d is not a field element"))?,
            &c1.porep_id,
        );
        if replica_id != c1.replica_id {
            return Err(bad(
                "sector_number",
                format!(
                    "sector {} of miner {} is not the sector this C1 output was sealed for (its replica id differs); \
                     send the sector number and miner id it was sealed with",
                    self.sector_number, self.miner_id
                ),
            ));
        }
        let partitions = parsed.partitions(spec).map_err(|e| bad(field, e.to_string()))?;
        Ok(Decoded { spec, input: self.vanilla_proof.clone(), partitions })
    }

    /// A synthetic C1 output in Curio's wrapper ([`requests`] of `synthetic-porep:SIZE`):
    /// the benchmark-only `synthetic-porep`, which the daemon proves only to be measured,
    /// returning no proof. No sector and miner are checked: it was sealed for none.
    fn synthetic_porep(size: SectorSize, wrapper: &CurioC1) -> Result<Decoded, PayloadError> {
        let field = "vanilla_proof";
        let spec = FilecoinSpec { kind: Kind::SyntheticPorep, sector_size: size };
        let input = wrapper.phase1().map_err(|why| bad(field, why))?;
        let parsed = input::Input::parse(spec, &input).map_err(|e| bad(field, e.to_string()))?;
        let partitions = parsed.partitions(spec).map_err(|e| bad(field, e.to_string()))?;
        Ok(Decoded { spec, input, partitions })
    }

    fn post<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        &self,
        spec: FilecoinSpec,
        version: ApiVersion,
    ) -> Result<Decoded, PayloadError> {
        let randomness = field32("randomness", &self.randomness)?;
        let proofs: Vec<FallbackPoStSectorProof<Tree>> =
            bincode_each("vanilla_proofs", &self.vanilla_proofs, "FallbackPoStSectorProof of this sector size")?;
        let config: PoStConfig = post_config(spec).map_err(|e| bad("registered_proof", format!("{e:#}")))?;
        if proofs.len() > config.sector_count {
            return Err(bad(
                "vanilla_proofs",
                format!(
                    "holds {} sectors; a {} partition proves at most {} (send one request per partition)",
                    proofs.len(),
                    spec,
                    config.sector_count
                ),
            ));
        }
        let sectors = proofs
            .iter()
            .map(|p| PostSector {
                id: u64::from(p.sector_id),
                comm_r: p.comm_r.into_bytes().try_into().expect("32 bytes"),
            })
            .collect();
        let post = PostInput {
            circuit: spec.to_string(),
            api_version: version.to_string(),
            randomness,
            prover_id: prover_id(self.miner_id),
            sectors,
            vanilla_proofs: proofs,
        };
        Ok(Decoded { spec, input: serde_json::to_vec(&post).expect("PoSt inputs serialize"), partitions: 1 })
    }

    fn snap<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        &self,
        spec: FilecoinSpec,
    ) -> Result<Decoded, PayloadError> {
        let comm_r_old = field32("comm_r_old", &self.comm_r_old)?;
        let comm_r_new = field32("comm_r_new", &self.comm_r_new)?;
        let comm_d_new = field32("comm_d_new", &self.comm_d_new)?;
        let partition_proofs: Vec<PartitionProof<Tree>> =
            bincode_each("vanilla_proofs", &self.vanilla_proofs, "SnapDeals PartitionProof of this sector size")?;
        let config = porep_config(spec.sector_size).map_err(|e| bad("registered_proof", format!("{e:#}")))?;
        let partitions = usize::from(SectorUpdateConfig::from_porep_config(&config).update_partitions);
        if partition_proofs.len() != partitions {
            return Err(bad(
                "vanilla_proofs",
                format!("holds {} partition proofs; {spec} has {partitions} partitions", partition_proofs.len()),
            ));
        }
        let snap = SnapInput { circuit: spec.to_string(), comm_r_old, comm_r_new, comm_d_new, partition_proofs };
        Ok(Decoded { spec, input: serde_json::to_vec(&snap).expect("SnapDeals inputs serialize"), partitions })
    }
}

/// The requests Curio would send to prove `spec` from `input` (Bellhop's input of that
/// circuit, as `bellhop fil` writes it): PoRep C2 one (which needs the sector's
/// `sector.json` for its number), WinningPoSt and SnapDeals one, WindowPoSt one per
/// partition. The prover id must be a miner's ([`prover_id`]), as `bellhop fil seal` makes it.
/// `synthetic-porep` makes a PoRep request as Curio's are shaped, for measuring the daemon
/// (`[daemon] synthetic_benchmarks`): the synthetic file in Curio's wrapper, for no sector.
pub fn requests(spec: FilecoinSpec, input: &[u8], sector: Option<&SealedSector>) -> anyhow::Result<Vec<Request>> {
    let parsed = input::Input::parse(spec, input)?;
    if spec.kind == Kind::SyntheticPorep {
        let wrapper = CurioC1::new(0, spec.sector_size, input);
        return Ok(vec![porep_request(&wrapper, &SealProof::bellhop(spec.sector_size))?]);
    }
    input::with_typed!(parsed, typed => requests_of(spec, typed, sector))
}

/// Curio's PoRep request of `wrapper`, sealed with `seal` (its number as Curio sends it,
/// `sn.ProofType`; the C1 output names it again, and that is read).
fn porep_request(wrapper: &CurioC1, seal: &SealProof) -> anyhow::Result<Request> {
    let mut request = Request::new(ProofKind::PorepSealCommit);
    request.vanilla_proof = serde_json::to_vec(wrapper)?;
    request.registered_proof = u64::from_le_bytes(seal.porep_id[..8].try_into().expect("8 bytes"));
    Ok(request)
}

fn miner_of(prover: &[u8; 32]) -> anyhow::Result<u64> {
    miner_id(prover).ok_or_else(|| {
        anyhow::anyhow!(
            "the prover id is not a miner's (Curio makes it from a miner id); seal with bellhop fil seal --miner"
        )
    })
}

fn requests_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    input: Typed<Tree>,
    sector: Option<&SealedSector>,
) -> anyhow::Result<Vec<Request>> {
    match input {
        Typed::Porep(porep) => {
            let sector = sector.ok_or_else(|| {
                anyhow::anyhow!(
                    "a PoRep request needs the sector's number and miner: give its directory (--sector DIR)"
                )
            })?;
            let phase1 = porep.to_api_json(spec.sector_size, &porep.seal.name(spec.sector_size)?);
            let mut request = porep_request(&CurioC1::new(sector.sector_id, spec.sector_size, &phase1), &porep.seal)?;
            request.sector_number = sector.sector_id;
            request.miner_id = miner_of(&sector.prover_id)?;
            Ok(vec![request])
        }
        Typed::Post(post) => {
            let config = post_config(spec)?;
            let kind =
                if spec.kind == Kind::WinningPost { ProofKind::WinningPost } else { ProofKind::WindowPostPartition };
            let miner = miner_of(&post.prover_id)?;
            post.vanilla_proofs
                .chunks(config.sector_count)
                .enumerate()
                .map(|(k, proofs)| {
                    let mut request = Request::new(kind);
                    request.registered_proof = post_proof_number(spec);
                    request.vanilla_proofs = proofs.iter().map(bincode::serialize).collect::<Result<_, _>>()?;
                    request.miner_id = miner;
                    request.randomness = post.randomness.to_vec();
                    request.partition_index = k as u32;
                    Ok(request)
                })
                .collect()
        }
        Typed::Snap(snap, _) => {
            let mut request = Request::new(ProofKind::SnapDealsUpdate);
            request.registered_proof = update_proof_number(spec.sector_size);
            request.vanilla_proofs = snap.partition_proofs.iter().map(bincode::serialize).collect::<Result<_, _>>()?;
            request.comm_r_old = snap.comm_r_old.to_vec();
            request.comm_r_new = snap.comm_r_new.to_vec();
            request.comm_d_new = snap.comm_d_new.to_vec();
            Ok(vec![request])
        }
    }
}

mod base64_bytes {
    use base64::{engine::general_purpose::STANDARD, Engine as _};
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text.trim()).map_err(|e| serde::de::Error::custom(format!("not base64: {e}")))
    }
}

mod base64_list {
    use base64::{engine::general_purpose::STANDARD, Engine as _};
    use serde::{ser::SerializeSeq, Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(items: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(items.len()))?;
        for item in items {
            seq.serialize_element(&STANDARD.encode(item))?;
        }
        seq.end()
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|text| STANDARD.decode(text.trim()).map_err(|e| serde::de::Error::custom(format!("not base64: {e}"))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_ids_are_leb128_miner_ids() {
        assert_eq!(&prover_id(1000)[..3], &[0xe8, 0x07, 0]);
        assert_eq!(&prover_id(0)[..2], &[0, 0]);
        assert_eq!(&prover_id(127)[..2], &[0x7f, 0]);
        assert_eq!(&prover_id(128)[..2], &[0x80, 0x01]);
        for miner in [0, 1, 127, 128, 1000, 1 << 40, u64::MAX] {
            assert_eq!(miner_id(&prover_id(miner)), Some(miner));
        }
        assert_eq!(miner_id(&[0xff; 32]), None);
        let mut trailing = prover_id(5);
        trailing[20] = 1;
        assert_eq!(miner_id(&trailing), None);
    }

    #[test]
    fn registered_proofs_follow_go_numbering() {
        assert_eq!(post_proof(Kind::WinningPost, 0), Ok((SectorSize::Kib2, ApiVersion::V1_0_0)));
        assert_eq!(post_proof(Kind::WinningPost, 3), Ok((SectorSize::Gib32, ApiVersion::V1_0_0)));
        assert_eq!(post_proof(Kind::WindowPost, 13), Ok((SectorSize::Gib32, ApiVersion::V1_2_0)));
        assert_eq!(post_proof(Kind::WindowPost, 5), Ok((SectorSize::Kib2, ApiVersion::V1_0_0)));
        assert!(post_proof(Kind::WindowPost, 3).unwrap_err().contains("not a WindowPoSt proof"));
        assert_eq!(post_proof(Kind::WinningPost, 4), Ok((SectorSize::Gib64, ApiVersion::V1_0_0)));
        assert_eq!(post_proof(Kind::WindowPost, 9), Ok((SectorSize::Gib64, ApiVersion::V1_0_0)));
        assert_eq!(post_proof(Kind::WindowPost, 14), Ok((SectorSize::Gib64, ApiVersion::V1_2_0)));
        assert!(post_proof(Kind::WindowPost, 15).unwrap_err().contains("not a WindowPoSt proof"));
        assert_eq!(update_proof(1), Ok(SectorSize::Mib8));
        assert_eq!(update_proof(4), Ok(SectorSize::Gib64));
        assert!(update_proof(9).is_err());
        for size in SectorSize::ALL {
            let window = FilecoinSpec { kind: Kind::WindowPost, sector_size: size };
            let winning = FilecoinSpec { kind: Kind::WinningPost, sector_size: size };
            assert_eq!(post_proof(Kind::WindowPost, post_proof_number(window)).unwrap().0, size);
            assert_eq!(post_proof(Kind::WinningPost, post_proof_number(winning)).unwrap().0, size);
            assert_eq!(update_proof(update_proof_number(size)), Ok(size));
        }
    }

    #[test]
    fn cuzk_circuit_ids_round_trip() {
        assert_eq!(cuzk_circuit_id(FilecoinSpec { kind: Kind::Porep, sector_size: SectorSize::Gib32 }), "porep-32g");
        assert_eq!(
            from_cuzk_circuit_id("wpost-2k"),
            Some(FilecoinSpec { kind: Kind::WindowPost, sector_size: SectorSize::Kib2 })
        );
        assert_eq!(
            from_cuzk_circuit_id("porep-64g"),
            Some(FilecoinSpec { kind: Kind::Porep, sector_size: SectorSize::Gib64 })
        );
        assert_eq!(from_cuzk_circuit_id("porep-128g"), None);
        for size in SectorSize::ALL {
            for name in Kind::NAMES {
                let spec = FilecoinSpec { kind: Kind::from_name(name).unwrap(), sector_size: size };
                let proved = spec.kind != Kind::SyntheticPorep;
                assert_eq!(from_cuzk_circuit_id(&cuzk_circuit_id(spec)), proved.then_some(spec));
            }
        }
    }

    #[test]
    fn requests_read_as_protobuf_names_and_base64() {
        let json = r#"{"proof_kind":"WINNING_POST","registered_proof":0,"miner_id":1000,
                       "randomness":"AAEC","vanilla_proofs":["AQID"]}"#;
        let request: Request = serde_json::from_str(json).unwrap();
        assert_eq!(request.proof_kind, ProofKind::WinningPost);
        assert_eq!(request.randomness, [0, 1, 2]);
        assert_eq!(request.vanilla_proofs, [vec![1, 2, 3]]);
        assert_eq!(serde_json::from_slice::<Request>(&serde_json::to_vec(&request).unwrap()).unwrap(), request);
        let typo = r#"{"proof_kind":"WINNING_POST","miner":1}"#;
        assert!(serde_json::from_str::<Request>(typo).unwrap_err().to_string().contains("unknown field `miner`"));
    }

    #[test]
    fn bad_fields_are_named() {
        let field = |r: &Request| r.decode().unwrap_err().field;
        let mut winning = Request::new(ProofKind::WinningPost);
        winning.randomness = vec![0; 31];
        assert_eq!(field(&winning), "randomness");
        winning.randomness = vec![0xff; 32];
        assert_eq!(field(&winning), "randomness");
        winning.randomness = vec![0; 32];
        assert_eq!(field(&winning), "vanilla_proofs");
        winning.vanilla_proofs = vec![vec![1, 2, 3]];
        assert_eq!(field(&winning), "vanilla_proofs[0]");
        winning.registered_proof = 7;
        assert_eq!(field(&winning), "registered_proof");
        let porep = Request::new(ProofKind::PorepSealCommit);
        assert_eq!(field(&porep), "vanilla_proof");
        let mut garbage = porep.clone();
        garbage.vanilla_proof = b"{\"SectorNum\":1".to_vec();
        assert_eq!(field(&garbage), "vanilla_proof");
        let mut snap = Request::new(ProofKind::SnapDealsUpdate);
        snap.comm_r_old = vec![0; 32];
        assert_eq!(field(&snap), "comm_r_new");
    }

    /// A synthetic C1 output in Curio's PoRep request is the benchmark-only circuit, never
    /// `porep`, whatever sector it names; for another size it is refused.
    #[test]
    fn synthetic_porep_requests_decode_as_the_benchmark() {
        let spec = FilecoinSpec { kind: Kind::SyntheticPorep, sector_size: SectorSize::Kib2 };
        let synthetic = crate::synthetic::porep_c1(SectorSize::Kib2, 3).unwrap();
        let [mut request] = <[Request; 1]>::try_from(requests(spec, &synthetic, None).unwrap()).unwrap();
        assert_eq!(request.proof_kind, ProofKind::PorepSealCommit);
        request.sector_number = 17;
        request.miner_id = 1000;
        let decoded = request.decode().unwrap();
        assert_eq!((decoded.spec, decoded.partitions), (spec, 1));
        assert_eq!(decoded.input, synthetic);
        let mut wrapper: CurioC1 = serde_json::from_slice(&request.vanilla_proof).unwrap();
        wrapper.sector_size = SectorSize::Mib8.bytes();
        request.vanilla_proof = serde_json::to_vec(&wrapper).unwrap();
        let refused = request.decode().unwrap_err();
        assert_eq!(refused.field, "vanilla_proof");
    }
}
