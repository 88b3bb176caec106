//! Host memory a backend keeps (ABI 1.6): the pipeline synthesizes later proofs into the
//! assignments the backend keeps, with the same proofs, and releases every kept one, on
//! the error path too. (A test binary of its own: its tests record no phases, and
//! tracing's callsite interest is shared with the tests that do.)

mod common;

use std::sync::{Arc, Mutex};

use bellhop_circuits::CircuitSpec;
use bellhop_host::{
    params::Srs,
    pipeline::{self, PipelineError, PipelineOptions, ProvedJob, Randomness},
    prover::Blinding,
};
use bellhop_plugin_sdk::strategy::Job;
use blstrs::Scalar;
use common::{
    baseline, job,
    one_call_cpu::{one_call, one_call_keeping, Keeper},
    two_batches,
};

/// Four batches of two `poseidon-merkle:3` jobs, so that the later ones can reuse what the
/// first ones spent.
fn four_batches(dir: &std::path::Path) -> (Srs, Vec<Vec<Job>>, PipelineOptions) {
    let (srs, mut batches, options) = two_batches(dir);
    let spec: CircuitSpec = "poseidon-merkle:3".parse().unwrap();
    batches.push(vec![job(&spec, 5), job(&spec, 6)]);
    batches.push(vec![job(&spec, 7), job(&spec, 8)]);
    let blindings = (0..8u64).map(|i| Blinding { r: Scalar::from(10 + i), s: Scalar::from(20 + i) }).collect();
    (srs, batches, PipelineOptions { randomness: Randomness::Fixed(blindings), ..options })
}

/// Sorted, so that kept and released compare as sets.
fn sorted(ranges: &Mutex<Vec<Vec<usize>>>) -> Vec<Vec<usize>> {
    let mut ranges = ranges.lock().unwrap().clone();
    ranges.sort();
    ranges
}

#[test]
fn kept_host_memory_is_reused_with_the_same_proofs_and_released() {
    let dir = tempfile::tempdir().unwrap();
    let (srs, batches, options) = four_batches(dir.path());
    let plain = pipeline::run(&one_call(false), &baseline(), &srs, batches.clone(), &options, &|_| {}).unwrap();

    let keeper = Arc::new(Keeper::default());
    let backend = one_call_keeping(false, Some(keeper.clone()));
    let proved = pipeline::run(&backend, &baseline(), &srs, batches, &options, &|_| {}).unwrap();
    let bytes = |v: &[ProvedJob]| v.iter().map(|p| p.proof_bytes()).collect::<Vec<_>>();
    assert_eq!(bytes(&proved), bytes(&plain), "synthesized into reused buffers, the proofs are the same");

    let (kept, released) = (sorted(&keeper.kept), sorted(&keeper.released));
    let in_kept = *keeper.proofs_in_kept.lock().unwrap();
    assert!(in_kept >= 2, "the last batch, at least, is proved in kept memory: {in_kept} of 8");
    assert!(kept.len() < 8, "kept buffers are reused, not each proof's kept anew: {} kept", kept.len());
    assert_eq!(kept, released, "every kept assignment is released once the run ends");
}

#[test]
fn kept_host_memory_is_released_when_a_proof_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (srs, batches, options) = four_batches(dir.path());
    let keeper = Arc::new(Keeper::default());
    let e = pipeline::run(&one_call_keeping(true, Some(keeper.clone())), &baseline(), &srs, batches, &options, &|_| {})
        .unwrap_err();
    assert!(matches!(e, PipelineError::Prove { index: 0, .. }), "unexpected {e}");
    assert_eq!(sorted(&keeper.kept), sorted(&keeper.released), "what was kept is released on the error path too");
}
