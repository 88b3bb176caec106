//! A backend's fused `prove_batch` (ABI 1.2): the pipeline uses it for whole batches when
//! the backend lists `PROVE_BATCH`, gets the same proofs as through the primitives,
//! verifies them, times the phase, and reports a failing fused call as that phase's error.

mod common;

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use bellhop_cpu::CpuBackend;
use bellhop_host::{
    dealloc::Dealloc,
    params::Srs,
    phases::{PhaseLayer, PhaseLog},
    pipeline::{self, PipelineError},
    prover::{self, Blinding, ProveError},
    recycler::Recycler,
    session::OpenedBackend,
};
use bellhop_plugin_sdk::{
    backend::{check_prove_batch, Backend},
    cast,
    strategy::{Assignment, Strategy},
    types::{Fr, Proof},
    Capabilities, ErrorKind, PluginError,
};
use common::{baseline, two_batches};
use tracing_subscriber::layer::SubscriberExt;

/// The CPU backend with a fused `prove_batch` made of the host's own prover, so its proofs
/// are known; or, with `fail`, one whose fused call fails.
struct FusedCpu {
    cpu: CpuBackend,
    calls: Arc<AtomicUsize>,
    fail: bool,
}

impl Backend for FusedCpu {
    bellhop_plugin_sdk::forward_primitives!(cpu);
    fn prove_batch(
        &self,
        params: &str,
        assignments: &[&Assignment],
        r: &[Fr],
        s: &[Fr],
    ) -> Result<Vec<Proof>, PluginError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.fail {
            return Err(PluginError::new(ErrorKind::DEVICE, "the device fell over"));
        }
        check_prove_batch(assignments, r, s)?;
        let srs = Srs::read(std::path::Path::new(params), "fused", false).unwrap();
        let dealloc = Dealloc::new();
        let reference = cpu();
        Ok(assignments
            .iter()
            .zip(r.iter().zip(s))
            .map(|(a, (r, s))| {
                let blinding = Blinding { r: cast(*r), s: cast(*s) };
                let (p, _) =
                    prover::prove(&reference, &srs, (*a).clone(), blinding, "fused", &Recycler::off(&dealloc)).unwrap();
                Proof { a: cast(p.a), b: cast(p.b), c: cast(p.c) }
            })
            .collect())
    }
}

/// The fused backend as the pipeline gets it, and its count of fused calls.
fn fused(fail: bool) -> (OpenedBackend, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let backend = FusedCpu { cpu: CpuBackend::new(2).unwrap(), calls: calls.clone(), fail };
    let all = Capabilities::MSM_G1 | Capabilities::MSM_G2 | Capabilities::NTT | Capabilities::PROVE_BATCH;
    (OpenedBackend::new(Box::new(backend), "fused-cpu", all), calls)
}

/// The CPU backend as the pipeline gets it.
fn cpu() -> OpenedBackend {
    OpenedBackend::new(Box::new(CpuBackend::new(2).unwrap()), "cpu", Capabilities::MSM_G1 | Capabilities::NTT)
}

#[test]
fn fused_batches_give_the_primitives_proofs() {
    let dir = tempfile::tempdir().unwrap();
    let (srs, batches, options) = two_batches(dir.path());
    let strategy: &dyn Strategy = &baseline();
    let plain = pipeline::run(&cpu(), strategy, &srs, batches.clone(), &options, &|_| {}).unwrap();

    let (backend, calls) = fused(false);
    let log = PhaseLog::default();
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(log.clone()));
    let proved = tracing::subscriber::with_default(subscriber, || {
        pipeline::run(&backend, strategy, &srs, batches, &options, &|_| {}).unwrap()
    });
    assert_eq!(calls.load(Ordering::Relaxed), 2, "one fused call per batch");
    let bytes = |v: &[bellhop_host::pipeline::ProvedJob]| v.iter().map(|p| p.proof_bytes()).collect::<Vec<_>>();
    assert_eq!(bytes(&proved), bytes(&plain));
    assert_eq!(
        proved.iter().map(|p| &p.public_inputs).collect::<Vec<_>>(),
        plain.iter().map(|p| &p.public_inputs).collect::<Vec<_>>()
    );
    let records = log.take();
    let fused_phases: Vec<_> =
        records.iter().filter(|r| r.phase == "prove_batch").map(|r| (r.first, r.count)).collect();
    assert_eq!(fused_phases, [(0, 2), (2, 2)]);
    assert_eq!(records.iter().filter(|r| r.phase == "verify").count(), 4, "every fused proof is verified");
}

#[test]
fn a_failing_fused_call_names_its_phase() {
    let dir = tempfile::tempdir().unwrap();
    let (srs, batches, options) = two_batches(dir.path());
    let (backend, _) = fused(true);
    let e = pipeline::run(&backend, &baseline(), &srs, batches, &options, &|_| {}).unwrap_err();
    match &e {
        PipelineError::Prove { index: 0, error: ProveError::Backend { phase: "prove_batch", error } } => {
            assert_eq!(error.kind, ErrorKind::DEVICE)
        }
        other => panic!("unexpected {other}"),
    }
    assert!(e.to_string().contains("phase prove_batch") && e.to_string().contains("fell over"), "{e}");
}

#[test]
fn prove_batch_inputs_are_checked() {
    let a = Assignment::default();
    let e = check_prove_batch(&[&a, &a], &[Fr::default()], &[Fr::default(); 2]).unwrap_err();
    assert!(e.message.contains("2 assignments but 1 values of r"), "{e}");
    let mut b = Assignment::default();
    b.aux.push(Fr::default());
    let e = check_prove_batch(&[&a, &b], &[Fr::default(); 2], &[Fr::default(); 2]).unwrap_err();
    assert!(e.message.contains("one circuit shape"), "{e}");
}

#[test]
fn backends_without_it_show_no_prove_batch_phase() {
    let dir = tempfile::tempdir().unwrap();
    let (srs, batches, options) = two_batches(dir.path());
    assert!(!cpu().proves_whole_batches() && fused(false).0.proves_whole_batches());
    let log = PhaseLog::default();
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(log.clone()));
    tracing::subscriber::with_default(subscriber, || {
        pipeline::run(&cpu(), &baseline(), &srs, batches, &options, &|_| {}).unwrap()
    });
    assert!(log.take().iter().all(|r| r.phase != "prove_batch"));
}

/// The capability is the one source of truth: a backend that lists `PROVE_BATCH` and then
/// does not implement it gets an error naming the call, not a silent change of path.
#[test]
fn a_backend_that_lists_prove_batch_must_implement_it() {
    let dir = tempfile::tempdir().unwrap();
    let (srs, batches, options) = two_batches(dir.path());
    let claims = OpenedBackend::new(Box::new(CpuBackend::new(2).unwrap()), "claims", Capabilities::PROVE_BATCH);
    let e = pipeline::run(&claims, &baseline(), &srs, batches, &options, &|_| {}).unwrap_err();
    assert!(e.to_string().contains("does not implement `prove_batch`"), "{e}");
}
