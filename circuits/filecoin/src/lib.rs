//! Filecoin's circuits for Bellhop, from filecoin-proofs 19.1 and storage-proofs-* 19.1
//! (the same bellperson and bellpepper-core as Bellhop's):
//! - `porep:SIZE`: PoRep C2, one circuit per partition, from a C1 output;
//! - `winning-post:SIZE` and `window-post:SIZE`: fallback PoSt, from vanilla proofs;
//! - `snap:SIZE`: EmptySectorUpdate (SnapDeals), from vanilla partition proofs;
//! - `synthetic-porep:SIZE`: PoRep C2's circuit from a [`synthetic`] C1 output, for
//!   benchmarks of sizes that cannot be sealed here (its proofs prove nothing);
//!
//! for sector sizes 2KiB, 8MiB, 512MiB, 32GiB and 64GiB. A circuit is built the way
//! filecoin-proofs' own `*_with_vanilla` provers build it (`CompoundProof::circuit` for
//! partition k; PoRep's also cut at its challenges, [`porep`], PoSt's at its sectors), so its proofs, concatenated in partition order, are what filecoin-proofs'
//! verifiers take. Inputs are JSON ([`input`]); [`make`] produces real ones with
//! filecoin-proofs (a sealed sector, PoSt and SnapDeals vanilla proofs), [`verify`] checks
//! proofs with filecoin-proofs' verifiers, [`reference`] runs filecoin-proofs' own provers, and [`FilecoinSpec::param_identifier`] names
//! the parameter files as filecoin-proofs does (`v28-<identifier>.params` / `.vk`).

pub mod aggregate;
#[cfg(test)]
mod allocations;
pub mod curio;
pub mod input;
pub mod make;
pub mod porep;
mod porep_witness;
mod poseidon_witness;
pub mod reference;
pub mod sha256_witness;
pub mod synthetic;
pub mod verify;

use std::{fmt, path::Path, str::FromStr, sync::OnceLock};

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use filecoin_proofs::{SectorShape32GiB, SectorShape64GiB, SectorShapeBase};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_post::fallback::{FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::{EmptySectorUpdateCircuit, EmptySectorUpdateCompound};

pub use input::{Input, JobInputs};
use porep::{PorepCircuit, PorepHead};
pub use storage_proofs_core::api_version::ApiFeature;

/// Points filecoin-proofs at Bellhop's directories: parameters
/// (`FIL_PROOFS_PARAMETER_CACHE`, where its verifiers read `.vk` files) and the SDR parent
/// cache (`FIL_PROOFS_PARENT_CACHE`, unless set). filecoin-proofs reads its settings once,
/// on first use, so only the first call counts; it returns the parameter directory in
/// force, which differs from `params` if an earlier call set another.
pub fn set_directories(params: &Path, parents: &Path) -> &'static Path {
    static PARAMS: OnceLock<std::path::PathBuf> = OnceLock::new();
    PARAMS.get_or_init(|| {
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params);
        if std::env::var_os("FIL_PROOFS_PARENT_CACHE").is_none() {
            std::env::set_var("FIL_PROOFS_PARENT_CACHE", parents);
        }
        params.to_path_buf()
    })
}

/// The parameter directory filecoin-proofs reads from its own settings
/// (`FIL_PROOFS_PARAMETER_CACHE`, else its default), where its verifiers trust the `.vk`
/// files they find. Like [`set_directories`], only the first use of its settings counts.
pub fn filecoin_proofs_parameter_dir() -> std::path::PathBuf {
    storage_proofs_core::parameter_cache::parameter_cache_dir()
}

/// What a Filecoin circuit proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// PoRep C2 (`porep`).
    Porep,
    /// WinningPoSt (`winning-post`).
    WinningPost,
    /// WindowPoSt (`window-post`).
    WindowPost,
    /// EmptySectorUpdate, SnapDeals (`snap`).
    Snap,
    /// PoRep C2 from a synthetic C1 output (`synthetic-porep`), for benchmarks only.
    SyntheticPorep,
}

impl Kind {
    /// The names specs take.
    pub const NAMES: [&'static str; 5] = ["porep", "winning-post", "window-post", "snap", "synthetic-porep"];

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "porep" => Some(Self::Porep),
            "winning-post" => Some(Self::WinningPost),
            "window-post" => Some(Self::WindowPost),
            "snap" => Some(Self::Snap),
            "synthetic-porep" => Some(Self::SyntheticPorep),
            _ => None,
        }
    }

    /// Its name in specs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Porep => "porep",
            Self::WinningPost => "winning-post",
            Self::WindowPost => "window-post",
            Self::Snap => "snap",
            Self::SyntheticPorep => "synthetic-porep",
        }
    }
}

/// A sector size Bellhop knows Filecoin's shapes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SectorSize {
    /// 2 KiB (test networks).
    Kib2,
    /// 8 MiB (test networks).
    Mib8,
    /// 512 MiB (test networks).
    Mib512,
    /// 32 GiB (mainnet; a PoRep C2 peaked at 78.5 GiB of host memory, docs/BENCHMARKS.md).
    Gib32,
    /// 64 GiB (mainnet; its trees have one more binary level than 32 GiB's).
    Gib64,
}

impl SectorSize {
    /// Every size, smallest first.
    pub const ALL: [SectorSize; 5] = [Self::Kib2, Self::Mib8, Self::Mib512, Self::Gib32, Self::Gib64];

    /// The size in bytes.
    pub fn bytes(self) -> u64 {
        match self {
            Self::Kib2 => filecoin_proofs::SECTOR_SIZE_2_KIB,
            Self::Mib8 => filecoin_proofs::SECTOR_SIZE_8_MIB,
            Self::Mib512 => filecoin_proofs::SECTOR_SIZE_512_MIB,
            Self::Gib32 => filecoin_proofs::SECTOR_SIZE_32_GIB,
            Self::Gib64 => filecoin_proofs::SECTOR_SIZE_64_GIB,
        }
    }

    /// The size of `bytes`, if Bellhop knows it.
    pub fn from_bytes(bytes: u64) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.bytes() == bytes)
    }

    /// Its place in Go's and filecoin-proofs-api's numberings of registered proofs, which
    /// list the sizes in this order (`StackedDrg2KiBV1` 0 ... `StackedDrg64GiBV1` 4).
    pub fn index(self) -> u64 {
        Self::ALL.iter().position(|s| *s == self).expect("every size is listed") as u64
    }

    /// The registered seal proof id (StackedDrg<size>V1_1) as filecoin-proofs takes it:
    /// little-endian in the first 8 bytes.
    pub fn porep_id(self) -> [u8; 32] {
        let mut porep_id = [0; 32];
        porep_id[..8].copy_from_slice(&(5 + self.index()).to_le_bytes());
        porep_id
    }
}

impl fmt::Display for SectorSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Kib2 => "2KiB",
            Self::Mib8 => "8MiB",
            Self::Mib512 => "512MiB",
            Self::Gib32 => "32GiB",
            Self::Gib64 => "64GiB",
        })
    }
}

impl FromStr for SectorSize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|size| size.to_string().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown sector size `{s}`: Bellhop knows 2KiB, 8MiB, 512MiB, 32GiB and 64GiB"))
    }
}

/// A Filecoin circuit: what it proves, for which sector size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FilecoinSpec {
    /// What it proves.
    pub kind: Kind,
    /// The sector size.
    pub sector_size: SectorSize,
}

impl fmt::Display for FilecoinSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.name(), self.sector_size)
    }
}

/// Why a Filecoin circuit could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FilecoinError {
    /// The input is not what the circuit reads.
    #[error("{spec}: the input is not {expected}: {why}")]
    Input {
        /// The circuit.
        spec: FilecoinSpec,
        /// What the circuit reads.
        expected: &'static str,
        /// What is wrong.
        why: String,
    },
    /// The input is for another sector size.
    #[error("{spec}: the input is for {found} sectors; prove it as {kind}:{found} (with that circuit's parameters)", kind = spec.kind.name())]
    SectorSize {
        /// The circuit.
        spec: FilecoinSpec,
        /// The input's sector size (as written, e.g. `8MiB` or `4096 bytes`).
        found: String,
    },
    /// A synthetic input where a real one is proved.
    #[error(
        "{spec}: the input is a synthetic C1 output (bellhop fil synthetic-c1): its vanilla proofs prove no \
         sector, so it is not proved; benchmark it with `bellhop bench synthetic-porep:{size} --input FILE`",
        size = spec.sector_size
    )]
    Synthetic {
        /// The circuit.
        spec: FilecoinSpec,
    },
    /// The vanilla proofs do not prove the public data they come with.
    #[error("{spec}: the vanilla proofs do not match their public data ({why}); make them again from the sector")]
    Mismatch {
        /// The circuit.
        spec: FilecoinSpec,
        /// What does not match.
        why: String,
    },
    /// A partition past the input's last.
    #[error("{spec}: partition {index} asked for, the input has {count}")]
    Partition {
        /// The circuit.
        spec: FilecoinSpec,
        /// The partition asked for.
        index: usize,
        /// Partitions in the input.
        count: usize,
    },
    /// A NonInteractivePoRep's partition proofs could not be made its proof.
    #[error("{spec}: aggregating the partitions' proofs: {why}")]
    Aggregate {
        /// The circuit.
        spec: FilecoinSpec,
        /// What went wrong, and what to do.
        why: String,
    },
    /// filecoin-proofs refused.
    #[error("{spec}: {error:#}")]
    Filecoin {
        /// The circuit.
        spec: FilecoinSpec,
        /// filecoin-proofs' error.
        error: anyhow::Error,
    },
}

/// The tree shape filecoin-proofs uses for a sector size (`SectorShapeBase` for 2KiB,
/// 8MiB and 512MiB; `SectorShape32GiB`, `SectorShape64GiB`), as the type `$tree` in `$body`.
macro_rules! with_tree {
    ($size:expr, $tree:ident => $body:expr) => {
        match $size {
            $crate::SectorSize::Gib32 => {
                type $tree = filecoin_proofs::SectorShape32GiB;
                $body
            }
            $crate::SectorSize::Gib64 => {
                type $tree = filecoin_proofs::SectorShape64GiB;
                $body
            }
            _ => {
                type $tree = filecoin_proofs::SectorShapeBase;
                $body
            }
        }
    };
}
pub(crate) use with_tree;

/// Defines [`FilecoinCircuit`] with one variant per circuit type, its `synthesize`, and
/// `From` each circuit type.
macro_rules! filecoin_circuit {
    ($($(#[$doc:meta])* $variant:ident($circuit:ty)),* $(,)?) => {
        /// A Filecoin circuit with its witness (or blank, for parameter generation).
        pub enum FilecoinCircuit {
            $($(#[$doc])* $variant($circuit),)*
        }

        impl Circuit<Scalar> for FilecoinCircuit {
            fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
                match self {
                    $(Self::$variant(c) => c.synthesize(cs),)*
                }
            }
        }

        $(impl From<$circuit> for FilecoinCircuit {
            fn from(circuit: $circuit) -> Self {
                Self::$variant(circuit)
            }
        })*
    };
}
filecoin_circuit!(
    /// PoRep C2, one partition.
    Porep(PorepCircuit<SectorShapeBase>),
    /// PoRep C2 of a 32 GiB sector, one partition.
    Porep32GiB(PorepCircuit<SectorShape32GiB>),
    /// PoRep C2 of a 64 GiB sector, one partition.
    Porep64GiB(PorepCircuit<SectorShape64GiB>),
    /// The head of a PoRep C2 partition's circuit (see [`porep`]).
    PorepHead(PorepHead<SectorShapeBase>),
    /// The head of a 32 GiB PoRep C2 partition's circuit.
    PorepHead32GiB(PorepHead<SectorShape32GiB>),
    /// The head of a 64 GiB PoRep C2 partition's circuit.
    PorepHead64GiB(PorepHead<SectorShape64GiB>),
    /// Winning or Window PoSt, one partition.
    Post(FallbackPoStCircuit<SectorShapeBase>),
    /// Winning or Window PoSt over 32 GiB sectors, one partition.
    Post32GiB(FallbackPoStCircuit<SectorShape32GiB>),
    /// Winning or Window PoSt over 64 GiB sectors, one partition.
    Post64GiB(FallbackPoStCircuit<SectorShape64GiB>),
    /// EmptySectorUpdate, one partition.
    Snap(EmptySectorUpdateCircuit<SectorShapeBase>),
    /// EmptySectorUpdate of a 32 GiB sector, one partition.
    Snap32GiB(EmptySectorUpdateCircuit<SectorShape32GiB>),
    /// EmptySectorUpdate of a 64 GiB sector, one partition.
    Snap64GiB(EmptySectorUpdateCircuit<SectorShape64GiB>),
);

/// At most this many pieces of a PoSt partition: enough for every core, few enough that
/// joining them costs nothing against their synthesis.
const MAX_POST_PIECES: usize = 64;

/// A PoSt partition cut into pieces of whole sectors: its sectors are independent
/// sub-circuits, with no head before them.
fn cut_post<Tree: 'static + storage_proofs_core::merkle::MerkleTreeTrait>(
    circuit: FallbackPoStCircuit<Tree>,
) -> Result<(FilecoinCircuit, Vec<FilecoinCircuit>), FallbackPoStCircuit<Tree>>
where
    FilecoinCircuit: From<FallbackPoStCircuit<Tree>>,
{
    if circuit.sectors.len() < 2 {
        return Err(circuit);
    }
    let FallbackPoStCircuit { prover_id, mut sectors } = circuit;
    let per_piece = sectors.len().div_ceil(MAX_POST_PIECES);
    let mut pieces = Vec::new();
    while !sectors.is_empty() {
        let rest = sectors.split_off(per_piece.min(sectors.len()));
        pieces.push(FallbackPoStCircuit { prover_id, sectors }.into());
        sectors = rest;
    }
    Ok((FallbackPoStCircuit { prover_id, sectors: Vec::new() }.into(), pieces))
}

impl FilecoinCircuit {
    /// The circuit cut into a head and pieces, each piece the head again and one
    /// independent part, where its synthesis allows (PoRep's challenges, see [`porep`];
    /// PoSt's sectors); else itself.
    pub fn into_parts(self: Box<Self>) -> Result<(Self, Vec<Self>), Box<Self>> {
        fn cut<Tree: 'static + storage_proofs_core::merkle::MerkleTreeTrait>(
            circuit: PorepCircuit<Tree>,
        ) -> Result<(FilecoinCircuit, Vec<FilecoinCircuit>), PorepCircuit<Tree>>
        where
            FilecoinCircuit: From<PorepHead<Tree>> + From<PorepCircuit<Tree>>,
        {
            let (head, pieces) = circuit.into_parts()?;
            Ok((head.into(), pieces.into_iter().map(Into::into).collect()))
        }
        match *self {
            Self::Porep(circuit) => cut(circuit).map_err(|c| Box::new(Self::Porep(c))),
            Self::Porep32GiB(circuit) => cut(circuit).map_err(|c| Box::new(Self::Porep32GiB(c))),
            Self::Porep64GiB(circuit) => cut(circuit).map_err(|c| Box::new(Self::Porep64GiB(c))),
            Self::Post(circuit) => cut_post(circuit).map_err(|c| Box::new(Self::Post(c))),
            Self::Post32GiB(circuit) => cut_post(circuit).map_err(|c| Box::new(Self::Post32GiB(c))),
            Self::Post64GiB(circuit) => cut_post(circuit).map_err(|c| Box::new(Self::Post64GiB(c))),
            other => Err(Box::new(other)),
        }
    }
}

/// One partition's circuit with its witness, and its public inputs as filecoin-proofs'
/// verifier computes them (without the leading constant one).
pub struct Instance {
    /// The circuit.
    pub circuit: FilecoinCircuit,
    /// Its public inputs.
    pub public_inputs: Vec<Scalar>,
}

impl FilecoinSpec {
    /// The spec named `name` with size `size` (`porep`, `2KiB`), or why not.
    pub fn parse(name: &str, size: &str) -> Option<Result<Self, String>> {
        let kind = Kind::from_name(name)?;
        Some(size.parse().map(|sector_size| Self { kind, sector_size }))
    }

    fn filecoin(self, error: anyhow::Error) -> FilecoinError {
        FilecoinError::Filecoin { spec: self, error }
    }

    /// The identifier filecoin-proofs gives this circuit's parameters: files
    /// `v28-<identifier>.params` and `.vk` in the parameter cache.
    pub fn param_identifier(self) -> Result<String, FilecoinError> {
        with_tree!(self.sector_size, Tree => self.param_identifier_of::<Tree>()).map_err(|e| self.filecoin(e))
    }

    fn param_identifier_of<
        Tree: 'static + storage_proofs_core::merkle::MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>,
    >(
        self,
    ) -> anyhow::Result<String> {
        Ok(match self.kind {
            Kind::Porep => input::porep_config(self.sector_size)?.get_cache_identifier::<Tree>()?,
            Kind::SyntheticPorep => anyhow::bail!(
                "synthetic-porep has no published parameters: make synthetic ones with `bellhop params synthetic {self}`"
            ),
            Kind::WinningPost | Kind::WindowPost => input::post_config(self)?.get_cache_identifier::<Tree>()?,
            Kind::Snap => {
                use storage_proofs_core::parameter_cache::CacheableParameters;
                let params = storage_proofs_update::PublicParams::from_sector_size(self.sector_size.bytes());
                <EmptySectorUpdateCompound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(
                    &params,
                )
            }
        })
    }

    /// The circuit without a witness, for parameter generation.
    pub fn blank_circuit(self) -> Result<FilecoinCircuit, FilecoinError> {
        let size = self.sector_size;
        let blank = || -> anyhow::Result<FilecoinCircuit> {
            Ok(match self.kind {
                Kind::Porep | Kind::SyntheticPorep => with_tree!(size, Tree => {
                    let pp = input::porep_public_params::<Tree>(&input::porep_config(size)?)?;
                    PorepCircuit::<Tree>::blank(&pp.vanilla_params).into()
                }),
                Kind::WinningPost | Kind::WindowPost => with_tree!(size, Tree => {
                    let pp = input::post_public_params::<Tree>(self, 1)?;
                    <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp.vanilla_params).into()
                }),
                Kind::Snap => with_tree!(size, Tree => {
                    let pp = input::snap_public_params::<Tree>(size)?;
                    <EmptySectorUpdateCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp.vanilla_params).into()
                }),
            })
        };
        blank().map_err(|e| self.filecoin(e))
    }

    /// How many partitions, so proofs, `input` (see [`input`]) makes.
    pub fn partitions(self, input: &[u8]) -> Result<usize, FilecoinError> {
        Input::parse(self, input)?.partitions(self)
    }

    /// Partition `partition`'s circuit from `input` (see [`input`]).
    pub fn instance(self, input: &[u8], partition: usize) -> Result<Instance, FilecoinError> {
        self.partition_of(input, partition)?.instance(self, partition)
    }

    /// Partition `partition`'s public inputs, as filecoin-proofs' verifier computes them
    /// from `input`'s public data (its vanilla proofs are neither read nor checked): what
    /// a proof of that partition must be for.
    pub fn public_inputs(self, input: &[u8], partition: usize) -> Result<Vec<Scalar>, FilecoinError> {
        self.partition_of(input, partition)?.public_inputs(self, partition)
    }

    /// What the jobs that prove `input` read: one input per partition for a PoRep and a
    /// SnapDeals, each holding its partition's vanilla proofs alone, all of which are
    /// checked here once for the job, so that no partition parses or checks the others
    /// (none for PoSt, whose request is one partition); and a NonInteractivePoRep's
    /// public data, which [`job_proof`](Self::job_proof) aggregates with.
    pub fn prepare(self, input: &[u8]) -> Result<JobInputs, FilecoinError> {
        if !matches!(self.kind, Kind::Porep | Kind::SyntheticPorep | Kind::Snap) {
            return Ok(JobInputs::default());
        }
        Input::parse(self, input)?.prepare(self)
    }

    /// A job's proof from its partitions' proofs (`proofs`, in partition order): those
    /// proofs themselves, or with `aggregation` (a NonInteractivePoRep's, from
    /// [`prepare`](Self::prepare)) their SnarkPack aggregate, checked by filecoin-proofs'
    /// verifier.
    pub fn job_proof(self, aggregation: Option<&[u8]>, proofs: Vec<u8>) -> Result<Vec<u8>, FilecoinError> {
        match aggregation {
            Some(aggregation) => aggregate::aggregate(self, aggregation, &proofs),
            None => Ok(proofs),
        }
    }

    fn partition_of(self, input: &[u8], partition: usize) -> Result<Input, FilecoinError> {
        let input = Input::parse_prepared(self, input)?;
        let count = input.partitions(self)?;
        if partition >= count {
            return Err(FilecoinError::Partition { spec: self, index: partition, count });
        }
        Ok(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_print_and_sizes_parse() {
        let spec = FilecoinSpec::parse("window-post", "2kib").unwrap().unwrap();
        assert_eq!(spec.to_string(), "window-post:2KiB");
        assert!(FilecoinSpec::parse("chain", "2KiB").is_none());
        assert!(FilecoinSpec::parse("porep", "4KiB")
            .unwrap()
            .unwrap_err()
            .contains("2KiB, 8MiB, 512MiB, 32GiB and 64GiB"));
        assert_eq!(SectorSize::from_bytes(8 << 20), Some(SectorSize::Mib8));
    }

    /// The identifiers of the 2 KiB circuits are those of Filecoin's published parameters
    /// (storage-proofs-core's parameters.json).
    #[test]
    fn parameter_identifiers_are_filecoins() {
        let id = |kind| FilecoinSpec { kind, sector_size: SectorSize::Kib2 }.param_identifier().unwrap();
        assert_eq!(
            id(Kind::WinningPost),
            "proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-3ea05428c9d11689f23529cde32fd30aabd50f7d2c93657c1d3650bca3e8ea9e"
        );
        assert_eq!(
            id(Kind::WindowPost),
            "proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0170db1f394b35d995252228ee359194b13199d259380541dc529fb0099096b0"
        );
        assert_eq!(
            id(Kind::Porep),
            "stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f"
        );
        assert_eq!(
            id(Kind::Snap),
            "empty-sector-update-merkletree-poseidon_hasher-8-0-0-fb9e095bebdd77511c0269b967b4d87ba8b8a525edaa0e165de23ba454510194"
        );
        // Every kind and size names published parameters (32 and 64 GiB included: their
        // circuits take tens of GiB to prove, so only their names are checked here).
        let published = &storage_proofs_core::parameter_cache::PARAMETERS;
        for kind in [Kind::Porep, Kind::WinningPost, Kind::WindowPost, Kind::Snap] {
            for sector_size in SectorSize::ALL {
                let id = FilecoinSpec { kind, sector_size }.param_identifier().unwrap();
                for extension in ["params", "vk"] {
                    assert!(published.contains_key(&format!("v28-{id}.{extension}")), "{kind:?} {sector_size}: {id}");
                }
            }
        }
    }
}
