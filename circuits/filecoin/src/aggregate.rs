//! NonInteractivePoRep's proof: its partitions' Groth16 proofs aggregated with SnarkPack,
//! as filecoin-proofs' `seal_commit_phase2` makes it, by filecoin-proofs itself
//! (`aggregate_seal_commit_proofs`, version 2), and checked by its verifier before it is
//! returned. Aggregating reads the SnarkPack SRS (`v28-fil-inner-product-v1.srs`) and the
//! circuit's verifying key from the parameter directory.

use bellperson::groth16::aggregate::AggregateVersion;
use filecoin_hashers::{sha256::Sha256Hasher, Hasher};
use filecoin_proofs::{
    aggregate_seal_commit_proofs, verify_aggregate_seal_commit_proofs, Commitment, SealCommitOutput, Ticket,
    TreeRHasher, SINGLE_PARTITION_PROOF_LEN,
};
use serde::{Deserialize, Serialize};
use storage_proofs_core::{compound_proof::CompoundProof, merkle::MerkleTreeTrait};
use storage_proofs_porep::stacked::StackedCompound;

use crate::{
    input::{porep_public_params, stacked_public_inputs, SealProof},
    FilecoinError, FilecoinSpec,
};

/// The SRS file filecoin-proofs aggregates with, in the parameter directory.
pub const SRS_FILE: &str = "v28-fil-inner-product-v1.srs";

/// What a NonInteractivePoRep's aggregate is made of besides its partitions' proofs: the
/// public data of its C1 output (JSON, made when its job is prepared).
#[derive(Serialize, Deserialize)]
pub(crate) struct Aggregation {
    pub(crate) registered_proof: String,
    pub(crate) comm_r: Commitment,
    pub(crate) comm_d: Commitment,
    pub(crate) replica_id: <TreeRHasher as Hasher>::Domain,
    pub(crate) seed: Ticket,
}

/// The job's proof of a NonInteractivePoRep of `spec` from its partitions' proofs
/// (`proofs`, 192 bytes each, in partition order) and its [`Aggregation`] (`aggregation`):
/// their SnarkPack aggregate, accepted by filecoin-proofs' verifier.
pub fn aggregate(spec: FilecoinSpec, aggregation: &[u8], proofs: &[u8]) -> Result<Vec<u8>, FilecoinError> {
    let fail = |why: String| FilecoinError::Aggregate { spec, why };
    let aggregation: Aggregation =
        serde_json::from_slice(aggregation).map_err(|e| fail(format!("its public data is damaged ({e})")))?;
    let (size, seal) = SealProof::named(&aggregation.registered_proof).map_err(fail)?;
    if size != spec.sector_size {
        return Err(FilecoinError::SectorSize { spec, found: size.to_string() });
    }
    crate::with_tree!(size, Tree => aggregate_with::<Tree>(spec, &aggregation, seal, proofs))
}

fn aggregate_with<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    spec: FilecoinSpec,
    aggregation: &Aggregation,
    seal: SealProof,
    proofs: &[u8],
) -> Result<Vec<u8>, FilecoinError> {
    let fail = |why: String| FilecoinError::Aggregate { spec, why };
    let config = seal.config(spec.sector_size).map_err(|e| fail(format!("{e:#}")))?;
    let partitions = usize::from(config.partitions);
    if proofs.len() != partitions * SINGLE_PARTITION_PROOF_LEN {
        return Err(fail(format!(
            "{} bytes of partition proofs, {} proofs of {SINGLE_PARTITION_PROOF_LEN} bytes expected",
            proofs.len(),
            partitions
        )));
    }
    let Aggregation { comm_r, comm_d, replica_id, seed, .. } = *aggregation;
    let output = SealCommitOutput { proof: proofs.to_vec() };
    let aggregate = aggregate_seal_commit_proofs::<Tree>(&config, &[comm_r], &[seed], &[output], AggregateVersion::V2)
        .map_err(|e| {
            fail(format!(
                "filecoin-proofs could not aggregate them: {e:#} (it reads the SnarkPack SRS {SRS_FILE} and the \
                 circuit's .vk from the parameter directory: fetch them with the parameters)"
            ))
        })?;
    let public =
        stacked_public_inputs::<Tree>(replica_id, &comm_d, &comm_r, seed).map_err(|e| fail(format!("{e:#}")))?;
    let pp = porep_public_params::<Tree>(&config).map_err(|e| fail(format!("{e:#}")))?;
    let inputs = (0..partitions)
        .map(|k| StackedCompound::<Tree, Sha256Hasher>::generate_public_inputs(&public, &pp.vanilla_params, Some(k)))
        .collect::<anyhow::Result<Vec<_>>>()
        .map_err(|e| fail(format!("{e:#}")))?;
    let accepted = verify_aggregate_seal_commit_proofs::<Tree>(
        &config,
        aggregate.clone(),
        &[comm_r],
        &[seed],
        inputs,
        AggregateVersion::V2,
    )
    .map_err(|e| fail(format!("filecoin-proofs' verifier failed on it: {e:#}")))?;
    if !accepted {
        return Err(fail("filecoin-proofs' verifier rejected the aggregate".into()));
    }
    Ok(aggregate)
}

/// A SnarkPack SRS for aggregating up to `proofs` proofs, serialized as filecoin-proofs
/// reads [`SRS_FILE`], from random toxic waste drawn from `rng` (INSECURE: for development
/// and tests; operators fetch the published file).
pub fn insecure_srs(proofs: usize, rng: &mut impl rand::RngCore) -> std::io::Result<Vec<u8>> {
    let srs = bellperson::groth16::aggregate::setup_fake_srs::<blstrs::Bls12, _>(rng, proofs);
    let mut bytes = Vec::new();
    srs.write(&mut bytes)?;
    Ok(bytes)
}
