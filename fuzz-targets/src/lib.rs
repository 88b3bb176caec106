//! The fuzz targets' bodies. Each takes arbitrary bytes and must return, with an error or
//! without; a panic that escapes it is a crash. (A panic the code under test catches
//! itself is not: filecoin-proofs' vanilla verifiers run behind such a guard, which turns
//! their panics on malformed proofs into errors.) `fuzz/` runs them under libFuzzer
//! (`scripts/fuzz.sh N`); this crate's tests run each over its seed corpus
//! (`fuzz/corpus/<target>/`) and mutations of it, in CI.

use std::{
    path::Path,
    sync::{Mutex, Once},
};

use bellhop_filecoin::{FilecoinSpec, Kind, SectorSize};
use bellhop_proto::v1 as pb;
use prost::Message as _;

/// A fuzz target: arbitrary bytes in, nothing out.
pub type Target = fn(&[u8]);

/// Every target, by the name of its corpus directory and of its libFuzzer binary.
pub const TARGETS: &[(&str, Target)] = &[
    ("params_file", params_file),
    ("filecoin_input", filecoin_input),
    ("config", config),
    ("submit_request", submit_request),
];

/// The message of the last panic, kept by the hook `run` installs instead of printing it.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Runs `target` on `data`: `Err` with the panic's message and place if a panic escapes it.
/// Panics caught inside are neither failures nor printed.
pub fn run(target: Target, data: &[u8]) -> Result<(), String> {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        std::panic::set_hook(Box::new(|info| *LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = info.to_string()))
    });
    std::panic::catch_unwind(|| target(data)).map_err(|_| LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()).clone())
}

/// `run` for libFuzzer: a panic that escapes `target` is printed and aborts the process,
/// which libFuzzer reports as a crash and keeps the input of.
pub fn fuzz(target: Target, data: &[u8]) {
    if let Err(panic) = run(target, data) {
        eprintln!("a panic escaped the target: {panic}");
        std::process::abort();
    }
}

/// A parameter file, in bellperson's format: section counts, then every point decoded and
/// checked (on the curve, in the subgroup).
pub fn params_file(data: &[u8]) {
    let path = Path::new("fuzzed.params");
    let _ = bellhop_host::params::Shape::from_bytes(data, path);
    let _ = bellhop_host::params::Srs::from_bytes(data, path, true);
}

/// The kinds `filecoin_input`'s first byte picks from.
pub const FILECOIN_KINDS: [Kind; 5] =
    [Kind::Porep, Kind::Snap, Kind::WinningPost, Kind::WindowPost, Kind::SyntheticPorep];

/// A Filecoin input (PoRep C1 output, PoSt or SnapDeals vanilla proofs) of a 2 KiB sector,
/// its kind picked by the first byte (`FILECOIN_KINDS`): parsed, then the public inputs and
/// the circuit of its first partitions built from it (which checks its vanilla proofs).
pub fn filecoin_input(data: &[u8]) {
    let Some((&kind, input)) = data.split_first() else { return };
    let spec =
        FilecoinSpec { kind: FILECOIN_KINDS[usize::from(kind) % FILECOIN_KINDS.len()], sector_size: SectorSize::Kib2 };
    let Ok(partitions) = spec.partitions(input) else { return };
    for partition in 0..partitions.min(2) {
        let _ = spec.public_inputs(input, partition);
        let _ = spec.instance(input, partition);
    }
}

/// A config file.
pub fn config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = bellhop_host::config::Config::parse(text);
    }
}

/// A `SubmitProofRequest` as it arrives on the wire: protobuf, then the daemon's checks and
/// decoding of its payload in Curio's formats.
pub fn submit_request(data: &[u8]) {
    if let Ok(request) = pb::SubmitProofRequest::decode(data) {
        let _ = bellhop_server::decode_submit(request);
    }
}

/// Requests of `bellhop fil request` (Curio's payloads, as JSON) encoded as on the wire:
/// seeds for `submit_request`.
pub fn encode_requests(json: &[u8]) -> serde_json::Result<Vec<Vec<u8>>> {
    let requests: Vec<bellhop_filecoin::curio::Request> = serde_json::from_slice(json)?;
    Ok(requests
        .iter()
        .map(|r| bellhop_server::client::submit_request(r, "seed", pb::Priority::Normal).encode_to_vec())
        .collect())
}
