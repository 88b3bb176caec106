//! Real inputs, made deterministically from a seed with filecoin-proofs: a sealed sector
//! (add_piece, PC1, PC2, C1) with its C1 output, PoSt vanilla proofs of sealed sectors,
//! and a SnapDeals update with its vanilla partition proofs (`bellhop fil`).

use std::{
    fs::{self, File},
    io::Cursor,
    path::{Path, PathBuf},
};

use anyhow::{bail, ensure, Context as _, Result};
use filecoin_proofs::{
    add_piece, encode_into, generate_fallback_sector_challenges, generate_partition_proofs,
    generate_single_vanilla_proof, generate_synth_proofs, generate_winning_post_sector_challenge, seal_commit_phase1,
    seal_pre_commit_phase1, seal_pre_commit_phase2, Commitment, PaddedBytesAmount, PieceInfo, PrivateReplicaInfo,
    SectorUpdateConfig, TreeRHasher, UnpaddedBytesAmount,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use storage_proofs_core::{api_version::ApiFeature, merkle::MerkleTreeTrait, sector::SectorId};

use crate::{
    input::{porep_config, post_config, Porep, PostInput, PostSector, SealProof, SnapInput},
    FilecoinSpec, Kind, SectorSize,
};

/// The sealed sector's description in its directory.
pub const SECTOR_FILE: &str = "sector.json";
/// The C1 output in a sealed sector's directory.
pub const C1_FILE: &str = "c1.json";
const STAGED: &str = "staged";
const SEALED: &str = "sealed";
const CACHE: &str = "cache";
const UPDATE_STAGED: &str = "update-staged";
const UPDATED: &str = "updated";
const UPDATE_CACHE: &str = "update-cache";

/// What later steps (PoSt, SnapDeals, verification) need of a sealed sector.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SealedSector {
    /// `2KiB`, `8MiB`, ...
    pub sector_size: String,
    /// The sector number.
    pub sector_id: u64,
    /// The prover (miner) id.
    pub prover_id: [u8; 32],
    /// The PreCommit ticket.
    pub ticket: [u8; 32],
    /// The interactive seed of C1.
    pub seed: [u8; 32],
    /// The registered proof id the graph is drawn with.
    pub porep_id: [u8; 32],
    /// comm_r.
    pub comm_r: Commitment,
    /// comm_d.
    pub comm_d: Commitment,
}

impl SealedSector {
    /// Reads `dir/sector.json`.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(SECTOR_FILE);
        let text = fs::read(&path).with_context(|| {
            format!("{} is not a sealed sector's directory (bellhop fil seal makes one)", dir.display())
        })?;
        serde_json::from_slice(&text).with_context(|| format!("{} is damaged", path.display()))
    }

    /// Its sector size.
    pub fn size(&self) -> Result<SectorSize> {
        self.sector_size.parse().map_err(anyhow::Error::msg)
    }
}

/// 32 random bytes that are a canonical field element (filecoin-proofs requires that of
/// prover ids and randomness).
fn field_bytes(rng: &mut impl Rng) -> [u8; 32] {
    let mut bytes: [u8; 32] = rng.gen();
    bytes[31] &= 0x3f;
    bytes
}

/// Random data filling a sector, written as an fr32-padded piece to `path`.
fn piece(rng: &mut impl Rng, size: SectorSize, path: &Path) -> Result<PieceInfo> {
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(size.bytes()));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill(&mut data[..]);
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let (info, _) = add_piece(Cursor::new(data), file, unpadded, &[])?;
    Ok(info)
}

fn writing(path: &Path) -> impl Fn(std::io::Error) -> anyhow::Error + '_ {
    move |e| anyhow::Error::new(e).context(format!("writing {}", path.display()))
}

/// Seals sector number `seed` of `size` in `dir` (which must be empty or absent) with
/// data, ticket and interactive seed drawn from `seed`, for miner `miner` (its prover id
/// made as Curio makes it; a PoSt proves sectors of one miner); writes `sector.json` and
/// the C1 output `c1.json` there and returns the sector. With `feature`, the sector is
/// sealed with that registered proof (StackedDrg<size>V1_1_Feat_SyntheticPoRep: its
/// synthetic proofs made after PreCommit; StackedDrg<size>V1_2_Feat_NonInteractivePoRep:
/// its challenges drawn without the interactive seed, more partitions) and `c1.json` is
/// filecoin-proofs-api's, naming it.
pub fn seal(dir: &Path, size: SectorSize, seed: u64, miner: u64, feature: Option<ApiFeature>) -> Result<SealedSector> {
    if matches!(size, SectorSize::Gib32 | SectorSize::Gib64) {
        bail!(
            "sealing {size} sectors is out of reach here (hours and hundreds of GB of memory and disk); seal 2KiB, \
             8MiB or 512MiB"
        );
    }
    if dir.exists() && fs::read_dir(dir)?.next().is_some() {
        bail!("{} is not empty: seal into a new directory", dir.display());
    }
    let cache = dir.join(CACHE);
    fs::create_dir_all(&cache).map_err(writing(&cache))?;
    let rng = &mut ChaCha8Rng::seed_from_u64(seed);
    let staged = dir.join(STAGED);
    let piece = piece(rng, size, &staged)?;
    let sealed = dir.join(SEALED);
    File::create(&sealed).map_err(writing(&sealed))?;
    let (ticket, interactive) = (rng.gen(), field_bytes(rng));
    let prover_id = crate::curio::prover_id(miner);
    let sector_id = SectorId::from(seed);
    let proof = match feature {
        None => SealProof::bellhop(size),
        Some(_) => SealProof::registered(size, feature),
    };
    let config = proof.config(size)?;
    crate::with_tree!(size, Tree => {
        let phase1 = seal_pre_commit_phase1::<_, _, _, Tree>(&config, &cache, &staged, &sealed, prover_id, sector_id, ticket, std::slice::from_ref(&piece))?;
        let pre_commit = seal_pre_commit_phase2(&config, phase1, &cache, &sealed)?;
        if feature == Some(ApiFeature::SyntheticPoRep) {
            generate_synth_proofs::<_, Tree>(&config, &cache, &sealed, prover_id, sector_id, ticket, pre_commit.clone(), std::slice::from_ref(&piece))?;
        }
        let sector = SealedSector {
            sector_size: size.to_string(),
            sector_id: seed,
            prover_id,
            ticket,
            seed: interactive,
            porep_id: config.porep_id,
            comm_r: pre_commit.comm_r,
            comm_d: pre_commit.comm_d,
        };
        let c1 = seal_commit_phase1::<_, Tree>(&config, &cache, &sealed, prover_id, sector_id, ticket, interactive, pre_commit, &[piece])?;
        let c1 = match feature {
            None => serde_json::to_vec(&c1)?,
            Some(_) => Porep { c1, seal: proof, synthetic: false, prepared: None }.to_api_json(size, &proof.name(size)?),
        };
        let c1_path = dir.join(C1_FILE);
        fs::write(&c1_path, c1).map_err(writing(&c1_path))?;
        let sector_path = dir.join(SECTOR_FILE);
        fs::write(&sector_path, serde_json::to_vec_pretty(&sector)?).map_err(writing(&sector_path))?;
        Ok(sector)
    })
}

/// PoSt vanilla proofs of the sealed sectors in `dirs` (WinningPoSt: the one its
/// challenge picks), with randomness drawn from `seed`: the input of `spec`, as JSON.
pub fn post(spec: FilecoinSpec, dirs: &[PathBuf], seed: u64) -> Result<Vec<u8>> {
    crate::with_tree!(spec.sector_size, Tree => Ok(serde_json::to_vec(&post_of::<Tree>(spec, dirs, seed)?)?))
}

fn post_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    dirs: &[PathBuf],
    seed: u64,
) -> Result<PostInput<Tree>> {
    ensure!(matches!(spec.kind, Kind::WinningPost | Kind::WindowPost), "{spec} is not a PoSt circuit");
    ensure!(!dirs.is_empty(), "no sectors given");
    let mut sectors = dirs.iter().map(|dir| Ok((SealedSector::read(dir)?, dir.clone()))).collect::<Result<Vec<_>>>()?;
    let prover_id = sectors[0].0.prover_id;
    for (sector, dir) in &sectors {
        ensure!(sector.prover_id == prover_id, "{} has another prover id than {}", dir.display(), dirs[0].display());
        ensure!(
            sector.size()? == spec.sector_size,
            "{} is a {} sector; {spec} proves {} sectors",
            dir.display(),
            sector.sector_size,
            spec.sector_size
        );
    }
    // The verifier takes the sectors in ascending id order.
    sectors.sort_by_key(|(sector, _)| sector.sector_id);
    let config = post_config(spec)?;
    let randomness = field_bytes(&mut ChaCha8Rng::seed_from_u64(seed));
    if spec.kind == Kind::WinningPost {
        let picked =
            generate_winning_post_sector_challenge::<Tree>(&config, &randomness, sectors.len() as u64, prover_id)?;
        sectors = picked.iter().map(|&i| sectors[i as usize].clone()).collect();
    }
    let ids: Vec<SectorId> = sectors.iter().map(|(s, _)| SectorId::from(s.sector_id)).collect();
    let challenges = generate_fallback_sector_challenges::<Tree>(&config, &randomness, &ids, prover_id)?;
    let mut vanilla_proofs = Vec::with_capacity(sectors.len());
    for ((sector, dir), id) in sectors.iter().zip(&ids) {
        let replica = PrivateReplicaInfo::<Tree>::new(dir.join(SEALED), sector.comm_r, dir.join(CACHE))?;
        vanilla_proofs.push(generate_single_vanilla_proof::<Tree>(&config, *id, &replica, &challenges[id])?);
    }
    Ok(PostInput {
        circuit: spec.to_string(),
        api_version: config.api_version.to_string(),
        randomness,
        prover_id,
        sectors: sectors.iter().map(|(s, _)| PostSector { id: s.sector_id, comm_r: s.comm_r }).collect(),
        vanilla_proofs,
    })
}

/// A SnapDeals update of the sealed sector in `dir` with new data drawn from `seed`
/// (the updated replica is written beside it), and its vanilla partition proofs: the
/// input of `snap:SIZE`, as JSON.
pub fn snap(dir: &Path, seed: u64) -> Result<Vec<u8>> {
    let sector = SealedSector::read(dir)?;
    crate::with_tree!(sector.size()?, Tree => Ok(serde_json::to_vec(&snap_of::<Tree>(dir, &sector, seed)?)?))
}

fn snap_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    dir: &Path,
    sector: &SealedSector,
    seed: u64,
) -> Result<SnapInput<Tree>> {
    let size = sector.size()?;
    let config = SectorUpdateConfig::from_porep_config(&porep_config(size)?);
    let rng = &mut ChaCha8Rng::seed_from_u64(seed);
    let staged = dir.join(UPDATE_STAGED);
    let piece = piece(rng, size, &staged)?;
    let (updated, update_cache) = (dir.join(UPDATED), dir.join(UPDATE_CACHE));
    for path in [&updated, &update_cache] {
        ensure!(!path.exists(), "{} exists: this sector was updated before; seal a new one", path.display());
    }
    fs::create_dir_all(&update_cache).map_err(writing(&update_cache))?;
    File::create(&updated).and_then(|f| f.set_len(size.bytes())).map_err(writing(&updated))?;
    let (sealed, cache) = (dir.join(SEALED), dir.join(CACHE));
    let encoded = encode_into::<Tree>(&config, &updated, &update_cache, &sealed, &cache, &staged, &[piece])?;
    let partition_proofs = generate_partition_proofs::<Tree>(
        config,
        sector.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &sealed,
        &cache,
        &updated,
        &update_cache,
    )?;
    Ok(SnapInput {
        circuit: FilecoinSpec { kind: Kind::Snap, sector_size: size }.to_string(),
        comm_r_old: sector.comm_r,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        partition_proofs,
    })
}
