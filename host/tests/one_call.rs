//! A backend's `proof_msms` (ABI 1.4): the pipeline uses it for each proof when the backend
//! lists `PROOF_MSMS` (else the SDK's call made of its primitives), gets the same proofs as
//! through the primitives, records the call as phase `msms` with the backend's parts as its
//! sub-phases, and refuses a wrong point.

mod common;

use bellhop_cpu::CpuBackend;
use bellhop_host::{
    phases::{PhaseLayer, PhaseLog},
    pipeline::{self, PipelineError, ProvedJob},
    prover::ProveError,
    session::OpenedBackend,
};
use bellhop_plugin_sdk::Capabilities;
use common::{baseline, one_call_cpu::one_call, two_batches};
use tracing_subscriber::layer::SubscriberExt;

#[test]
fn one_call_gives_the_primitives_proofs_and_its_phase() {
    let dir = tempfile::tempdir().unwrap();
    let (srs, batches, options) = two_batches(dir.path());
    let cpu = OpenedBackend::new(Box::new(CpuBackend::new(2).unwrap()), "cpu", Capabilities::MSM_G1);
    let plain = pipeline::run(&cpu, &baseline(), &srs, batches.clone(), &options, &|_| {}).unwrap();

    let backend = one_call(false);
    let log = PhaseLog::default();
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(log.clone()));
    let proved = tracing::subscriber::with_default(subscriber, || {
        pipeline::run(&backend, &baseline(), &srs, batches, &options, &|_| {}).unwrap()
    });
    let bytes = |v: &[ProvedJob]| v.iter().map(|p| p.proof_bytes()).collect::<Vec<_>>();
    assert_eq!(bytes(&proved), bytes(&plain));
    let records = log.take();
    let count = |phase: &str| records.iter().filter(|r| r.phase == phase).count();
    assert_eq!((count("msms"), count("msms.msm_a"), count("verify")), (4, 4, 4), "{records:?}");
    assert_eq!(count("msms.msm_h"), 0, "the backend's own call, not the SDK's: {records:?}");
}

#[test]
fn a_wrong_point_from_one_call_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (srs, batches, options) = two_batches(dir.path());
    let e = pipeline::run(&one_call(true), &baseline(), &srs, batches, &options, &|_| {}).unwrap_err();
    match &e {
        PipelineError::Prove { index: 0, error: ProveError::BadPoint { phase: "msm_l", group: "G1", .. } } => {}
        other => panic!("unexpected {other}"),
    }
}
