//! Proofs checked by filecoin-proofs' own verifiers (`verify_seal`, `verify_winning_post`,
//! `verify_window_post`, `verify_empty_sector_update_proof`), which read the circuit's
//! `v28-<identifier>.vk` from the parameter cache (see [`crate::set_directories`]).

use std::collections::BTreeMap;

use anyhow::{bail, Context as _, Result};
use filecoin_proofs::{
    verify_empty_sector_update_proof, verify_seal, verify_window_post, verify_winning_post, PublicReplicaInfo,
    TreeRHasher,
};
use storage_proofs_core::{merkle::MerkleTreeTrait, sector::SectorId};

use crate::{
    input::{porep_config, post_config, PostInput, SnapInput},
    make::SealedSector,
    with_tree, FilecoinSpec, Kind,
};

/// Whether filecoin-proofs accepts `proof` (the partition proofs, 192 bytes each, in
/// order) for `spec` with `input`. PoRep's verifier needs the sector's ids, so `sector`
/// (its `sector.json`) is required for `porep`.
pub fn verify(spec: FilecoinSpec, input: &[u8], sector: Option<&SealedSector>, proof: &[u8]) -> Result<bool> {
    with_tree!(spec.sector_size, Tree => verify_with::<Tree>(spec, input, sector, proof))
}

fn verify_with<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    input: &[u8],
    sector: Option<&SealedSector>,
    proof: &[u8],
) -> Result<bool> {
    match spec.kind {
        Kind::Porep => {
            let Some(sector) = sector else {
                bail!("verifying a PoRep proof needs the sector's prover and sector ids: give its directory (--sector DIR)");
            };
            let config = porep_config(spec.sector_size, Some(sector.porep_id), None)?;
            verify_seal::<Tree>(
                &config,
                sector.comm_r,
                sector.comm_d,
                sector.prover_id,
                SectorId::from(sector.sector_id),
                sector.ticket,
                sector.seed,
                proof,
            )
        }
        Kind::WinningPost | Kind::WindowPost => {
            let post: PostInput<Tree> = serde_json::from_slice(input).context("the PoSt input")?;
            let mut config = post_config(spec)?;
            config.api_version = post.api_version.parse()?;
            let mut replicas = BTreeMap::new();
            for sector in &post.sectors {
                replicas.insert(SectorId::from(sector.id), PublicReplicaInfo::new(sector.comm_r)?);
            }
            if spec.kind == Kind::WinningPost {
                let replicas: Vec<_> = replicas.into_iter().collect();
                verify_winning_post::<Tree>(&config, &post.randomness, &replicas, post.prover_id, proof)
            } else {
                verify_window_post::<Tree>(&config, &post.randomness, &replicas, post.prover_id, proof)
            }
        }
        Kind::Snap => {
            let snap: SnapInput<Tree> = serde_json::from_slice(input).context("the SnapDeals input")?;
            let config = porep_config(spec.sector_size, None, None)?;
            verify_empty_sector_update_proof::<Tree>(&config, proof, snap.comm_r_old, snap.comm_r_new, snap.comm_d_new)
        }
    }
}
