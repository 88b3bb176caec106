//! A backend's `proof_msms` (ABI 1.4): the pipeline uses it for each proof when the backend
//! lists `PROOF_MSMS`, gets the same proofs as through the primitives, records the call as
//! phase `msms` with the backend's parts as its sub-phases, and refuses a wrong point.

mod common;

use bellhop_cpu::CpuBackend;
use bellhop_host::{
    phases::{PhaseLayer, PhaseLog},
    pipeline::{self, PipelineError, ProvedJob},
    prover::{MsmCalls, ProveError},
    session::OpenedBackend,
};
use bellhop_plugin_sdk::{
    backend::{Backend, NttDirection, ProofMsms, ProvingBases},
    selection::Selection,
    strategy::Assignment,
    types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective},
    Capabilities, PhaseTiming, PluginError,
};
use common::{baseline, two_batches};
use tracing_subscriber::layer::SubscriberExt;

/// The CPU backend with a `proof_msms` made of its own primitives, its A and B scalars
/// gathered from the SDK's selections as a device backend gathers them; with `corrupt`,
/// one whose `l` is off the curve.
struct OneCallCpu {
    cpu: CpuBackend,
    corrupt: bool,
}

impl Backend for OneCallCpu {
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
        self.cpu.msm_g1(bases, scalars)
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
        self.cpu.msm_g2(bases, scalars)
    }

    fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
        self.cpu.ntt(values, direction)
    }

    fn proof_msms(&self, bases: ProvingBases<'_>, x: &Assignment) -> Result<ProofMsms, PluginError> {
        let domain = x.a.len().next_power_of_two();
        let padded =
            |v: &[Fr]| v.iter().copied().chain(std::iter::repeat(Fr::default())).take(domain).collect::<Vec<_>>();
        let (mut a, mut b, mut c) = (padded(&x.a), padded(&x.b), padded(&x.c));
        self.cpu.compute_h(&mut a, &mut b, &mut c)?;
        let variables: Vec<Fr> = x.inputs.iter().chain(x.aux.iter()).copied().collect();
        let gathered = |s: &Selection| {
            (0..variables.len())
                .filter(|&i| s.words[i / 64] >> (i % 64) & 1 == 1)
                .map(|i| variables[i])
                .collect::<Vec<_>>()
        };
        let (a_scalars, b_scalars) = (gathered(&Selection::a_query(x)), gathered(&Selection::b_query(x)));
        let prefix = |bases: &[G1Affine], n: usize| bases[..n].to_vec();
        let mut l = self.cpu.msm_g1(&bases.l[..x.aux.len()], &x.aux)?;
        if self.corrupt {
            l.y = l.x;
        }
        Ok(ProofMsms {
            h: self.cpu.msm_g1(&bases.h[..domain - 1], &a[..domain - 1])?,
            l,
            a: self.cpu.msm_g1(&prefix(&bases.a, a_scalars.len()), &a_scalars)?,
            b_g1: self.cpu.msm_g1(&prefix(&bases.b_g1, b_scalars.len()), &b_scalars)?,
            b_g2: self.cpu.msm_g2(&bases.b_g2[..b_scalars.len()], &b_scalars)?,
            timings: vec![PhaseTiming::new("msm_a", std::time::Duration::from_millis(1))].into(),
        })
    }
}

fn one_call(corrupt: bool) -> OpenedBackend {
    let backend = OneCallCpu { cpu: CpuBackend::new(2).unwrap(), corrupt };
    let capabilities = Capabilities::MSM_G1 | Capabilities::MSM_G2 | Capabilities::NTT | Capabilities::PROOF_MSMS;
    // Behind the seam, as a loaded plugin is: its checks run on every call.
    OpenedBackend::new(Box::new(bellhop_plugin_sdk::backend::seam(backend)), "one-call-cpu", capabilities)
}

#[test]
fn one_call_gives_the_primitives_proofs_and_its_phase() {
    let dir = tempfile::tempdir().unwrap();
    let (srs, batches, options) = two_batches(dir.path());
    let cpu = OpenedBackend::new(Box::new(CpuBackend::new(2).unwrap()), "cpu", Capabilities::MSM_G1);
    assert_eq!(cpu.msm_calls(), MsmCalls::Primitives);
    let plain = pipeline::run(&cpu, &baseline(), &srs, batches.clone(), &options, &|_| {}).unwrap();

    let backend = one_call(false);
    assert_eq!(backend.msm_calls(), MsmCalls::OneCall);
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
    assert_eq!(count("h") + count("msm_a"), 0, "no primitive phases: {records:?}");
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
