//! filecoin-proofs' own provers (`seal_commit_phase2`, `generate_*_post_with_vanilla`,
//! `generate_empty_sector_update_proof_with_vanilla`) on the same inputs and parameter
//! files, for comparison with Bellhop. They read the parameters from the parameter cache
//! (see [`crate::set_directories`]) and prove on the CPU (no GPU features are built).

use anyhow::{bail, Result};
use filecoin_proofs::{
    generate_empty_sector_update_proof_with_vanilla, generate_window_post_with_vanilla,
    generate_winning_post_with_vanilla, seal_commit_phase2, TreeRHasher,
};
use storage_proofs_core::{merkle::MerkleTreeTrait, sector::SectorId};

use crate::{
    input::{porep_config, post_config, Typed},
    make::SealedSector,
    FilecoinSpec, Input, Kind,
};

/// filecoin-proofs' proof of `spec` from `input`: the partition proofs concatenated.
/// PoRep's C2 needs the sector's ids, so `sector` is required for `porep`.
pub fn prove(spec: FilecoinSpec, input: &[u8], sector: Option<&SealedSector>) -> Result<Vec<u8>> {
    crate::input::with_typed!(Input::parse(spec, input)?, typed => prove_with(spec, typed, sector))
}

fn prove_with<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    input: Typed<Tree>,
    sector: Option<&SealedSector>,
) -> Result<Vec<u8>> {
    match input {
        Typed::Porep(porep) => {
            let Some(sector) = sector else {
                bail!(
                    "filecoin-proofs' C2 needs the sector's prover and sector ids: give its directory (--sector DIR)"
                );
            };
            let config = porep.seal.config(spec.sector_size)?;
            Ok(seal_commit_phase2::<Tree>(&config, porep.c1, sector.prover_id, SectorId::from(sector.sector_id))?.proof)
        }
        Typed::Post(post) => {
            let mut config = post_config(spec)?;
            config.api_version = post.api_version.parse()?;
            let prove = match spec.kind {
                Kind::WinningPost => generate_winning_post_with_vanilla::<Tree>,
                _ => generate_window_post_with_vanilla::<Tree>,
            };
            prove(&config, &post.randomness, post.prover_id, post.vanilla_proofs)
        }
        Typed::Snap(snap, _) => {
            let config = porep_config(spec.sector_size)?;
            Ok(generate_empty_sector_update_proof_with_vanilla::<Tree>(
                &config,
                snap.partition_proofs,
                snap.comm_r_old,
                snap.comm_r_new,
                snap.comm_d_new,
            )?
            .0)
        }
    }
}
