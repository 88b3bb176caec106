//! Requests as Curio's Go code builds them (`lib/ffi/cuzk_funcs.go`, Curio e0294b0): its
//! request ids, priorities and fields around a payload, for the daemon's compatibility
//! tests. Only the payload (`curio::Request`) comes from Bellhop's own builder.

use bellhop_filecoin::curio;
use bellhop_proto::v1::{Priority, SubmitProofRequest};

/// Go's `fmt.Sprintf("%d", b)` of a byte slice: `[1 2 3]`.
pub fn go_decimal_bytes(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(u8::to_string).collect();
    format!("[{}]", items.join(" "))
}

/// Go's `fmt.Sprintf("%x", b)` of a byte slice.
pub fn go_hex_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn request(payload: &curio::Request, request_id: String, sector_size: u64, priority: Priority) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id,
        proof_kind: payload.proof_kind.wire(),
        sector_size,
        registered_proof: payload.registered_proof,
        priority: priority.into(),
        vanilla_proof: payload.vanilla_proof.clone(),
        vanilla_proofs: payload.vanilla_proofs.clone(),
        sector_number: payload.sector_number,
        miner_id: payload.miner_id,
        randomness: payload.randomness.clone(),
        partition_index: payload.partition_index,
        comm_r_old: payload.comm_r_old.clone(),
        comm_r_new: payload.comm_r_new.clone(),
        comm_d_new: payload.comm_d_new.clone(),
    }
}

/// `WindowPoStCuzk`: one partition of a deadline, which Curio's WindowPoSt task always
/// proves as partition 0 (`tasks/window/compute_do.go`), so every partition of a deadline
/// sends the same id: `wdpost-<miner>-<partIdx>-<randomness[:8] as %d>`.
pub fn window_post(payload: &curio::Request, sector_size: u64) -> SubmitProofRequest {
    let part_idx = 0u32;
    let id = format!("wdpost-{}-{part_idx}-{}", payload.miner_id, go_decimal_bytes(&payload.randomness[..8]));
    let mut submit = request(payload, id, sector_size, Priority::High);
    submit.partition_index = part_idx;
    submit
}

/// `WinningPoStCuzk`: `winpost-<miner>-<randomness[:8] as %x>`, CRITICAL.
pub fn winning_post(payload: &curio::Request, sector_size: u64) -> SubmitProofRequest {
    let id = format!("winpost-{}-{}", payload.miner_id, go_hex_bytes(&payload.randomness[..8]));
    request(payload, id, sector_size, Priority::Critical)
}

/// `PoRepSnarkCuzk`: `porep-<miner>-<sector>`, NORMAL.
pub fn porep(payload: &curio::Request, sector_size: u64) -> SubmitProofRequest {
    let id = format!("porep-{}-{}", payload.miner_id, payload.sector_number);
    request(payload, id, sector_size, Priority::Normal)
}

/// `ProveUpdateCuzk`: `snap-<miner>-<sector>`, NORMAL.
pub fn snap(payload: &curio::Request, sector_size: u64) -> SubmitProofRequest {
    let id = format!("snap-{}-{}", payload.miner_id, payload.sector_number);
    request(payload, id, sector_size, Priority::Normal)
}
