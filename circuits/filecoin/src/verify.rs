//! Proofs checked by filecoin-proofs' own verifiers (`verify_seal`, `verify_winning_post`,
//! `verify_window_post`, `verify_empty_sector_update_proof`), which read the circuit's
//! `v28-<identifier>.vk` from the parameter cache (see [`crate::set_directories`]).

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use filecoin_proofs::{
    verify_empty_sector_update_proof, verify_seal, verify_window_post, verify_winning_post, PublicReplicaInfo,
    TreeRHasher,
};
use storage_proofs_core::{merkle::MerkleTreeTrait, sector::SectorId};

use crate::{
    input::{porep_config, post_config, Typed},
    make::SealedSector,
    FilecoinSpec, Input, Kind,
};

/// Whether filecoin-proofs accepts `proof` (the partition proofs, 192 bytes each, in
/// order) for `spec` with `input`, which is read and checked as for proving. PoRep's
/// verifier needs the sector's ids, so `sector` (its `sector.json`) is required for `porep`.
pub fn verify(spec: FilecoinSpec, input: &[u8], sector: Option<&SealedSector>, proof: &[u8]) -> Result<bool> {
    crate::input::with_typed!(Input::parse(spec, input)?, typed => verify_with(spec, typed, sector, proof))
}

fn verify_with<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    input: Typed<Tree>,
    sector: Option<&SealedSector>,
    proof: &[u8],
) -> Result<bool> {
    match input {
        Typed::Porep(porep) => {
            let Some(sector) = sector else {
                bail!("verifying a PoRep proof needs the sector's prover and sector ids: give its directory (--sector DIR)");
            };
            let config = porep.seal.config(spec.sector_size)?;
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
        Typed::Post(post) => {
            let mut config = post_config(spec)?;
            config.api_version = post.api_version.parse()?;
            let replicas = post
                .sectors
                .iter()
                .map(|sector| Ok((SectorId::from(sector.id), PublicReplicaInfo::new(sector.comm_r)?)))
                .collect::<Result<BTreeMap<_, _>>>()?;
            if spec.kind == Kind::WinningPost {
                let replicas: Vec<_> = replicas.into_iter().collect();
                verify_winning_post::<Tree>(&config, &post.randomness, &replicas, post.prover_id, proof)
            } else {
                verify_window_post::<Tree>(&config, &post.randomness, &replicas, post.prover_id, proof)
            }
        }
        Typed::Snap(snap, _) => {
            let config = porep_config(spec.sector_size)?;
            verify_empty_sector_update_proof::<Tree>(&config, proof, snap.comm_r_old, snap.comm_r_new, snap.comm_d_new)
        }
    }
}
