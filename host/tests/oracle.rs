//! Correctness oracle: with fixed r and s, Bellhop's proofs are byte-identical to
//! bellperson 0.27's, and they verify; parameters that do not fit are refused clearly.

use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicUsize, Ordering},
};

use bellhop_circuits::CircuitSpec;
use bellhop_cpu::CpuBackend;
use bellhop_host::{
    config::Config,
    params::{self, Srs},
    pipeline::{self, PipelineOptions, Randomness},
    prover::Blinding,
    session::{OpenedBackend, Session},
    shadow::Shadowed,
};
use bellhop_plugin_sdk::{
    backend::{Backend, NttDirection},
    cast,
    strategy::{Job, Strategy, Synthesis},
    types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective},
    Capabilities, PhaseTiming, PluginError,
};
use bellperson::groth16::{create_proof, generate_random_parameters, Parameters};
use blstrs::{Bls12, Scalar};
use ff::Field;
use group::Group as _;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bellhop-oracle-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Parameters for `spec` from a fixed seed, written in bellperson's format.
fn params_for(spec: &CircuitSpec, dir: &Path) -> (Parameters<Bls12>, PathBuf) {
    let params = generate_random_parameters::<Bls12, _, _>(
        spec.synthetic(0).expect("a synthetic circuit").circuit,
        &mut ChaCha20Rng::seed_from_u64(11),
    )
    .unwrap();
    let path = dir.join(spec.params_file_name().unwrap());
    params::write(&params, &path).unwrap();
    (params, path)
}

fn blinding(i: u64) -> Blinding {
    Blinding { r: Scalar::from(1000 + i) * Scalar::from(0x1234_5678_9abc_def0u64), s: Scalar::from(77 + i).square() }
}

fn bellperson_bytes(params: &Parameters<Bls12>, spec: &CircuitSpec, seed: u64, b: Blinding) -> Vec<u8> {
    let proof = create_proof(spec.synthetic(seed).expect("a synthetic circuit").circuit, params, b.r, b.s).unwrap();
    let mut bytes = Vec::new();
    proof.write(&mut bytes).unwrap();
    bytes
}

fn bellhop_bytes(session: &Session, srs: &Srs, spec: &CircuitSpec, seeds: &[u64]) -> Vec<Vec<u8>> {
    let jobs: Vec<Vec<Job>> = seeds
        .iter()
        .map(|&seed| vec![Job { circuit: spec.to_string().into(), seed, input: Default::default() }])
        .collect();
    let options =
        PipelineOptions { verify: true, randomness: Randomness::Fixed(seeds.iter().map(|&s| blinding(s)).collect()) };
    let proved = pipeline::run(&session.backend, session.strategy.as_ref(), srs, jobs, &options, &|_| {}).unwrap();
    proved.iter().map(|p| p.proof_bytes()).collect()
}

fn check_byte_identical(spec: &str) {
    let spec: CircuitSpec = spec.parse().unwrap();
    let dir = scratch_dir(&spec.to_string().replace(':', "-"));
    let (params, path) = params_for(&spec, &dir);
    let srs = Srs::read(&path, &spec.to_string(), true).unwrap();
    let session = Session::open(&Config::default(), &dir).unwrap();
    let seeds = [3u64, 4];
    let ours = bellhop_bytes(&session, &srs, &spec, &seeds);
    for (seed, ours) in seeds.iter().zip(&ours) {
        let theirs = bellperson_bytes(&params, &spec, *seed, blinding(*seed));
        assert_eq!(ours.len(), 192);
        assert_eq!(ours, &theirs, "{spec} seed {seed}: proof bytes differ from bellperson's");
    }
    assert_ne!(ours[0], ours[1], "different witnesses give different proofs");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn chain_matches_bellperson() {
    check_byte_identical("chain:1000");
}

#[test]
fn sha256_merkle_matches_bellperson() {
    check_byte_identical("sha256-merkle:1");
}

#[test]
fn poseidon_merkle_matches_bellperson() {
    check_byte_identical("poseidon-merkle:6");
}

#[test]
fn parameters_of_another_circuit_are_refused() {
    let dir = scratch_dir("mismatch");
    let (_, path) = params_for(&"chain:500".parse().unwrap(), &dir);
    let srs = Srs::read(&path, "chain:600", false).unwrap();
    let session = Session::open(&Config::default(), &dir).unwrap();
    let jobs = vec![vec![Job { circuit: "chain:600".into(), seed: 1, input: Default::default() }]];
    let options = PipelineOptions { verify: true, randomness: Randomness::Os };
    let e = pipeline::run(&session.backend, session.strategy.as_ref(), &srs, jobs, &options, &|_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not fit circuit chain:600"), "{e}");
    assert!(e.contains("bellhop params gen chain:600"), "{e}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn truncated_and_corrupt_files_are_refused() {
    let dir = scratch_dir("truncated");
    let (_, path) = params_for(&"chain:300".parse().unwrap(), &dir);
    let bytes = std::fs::read(&path).unwrap();

    let truncated = dir.join("truncated.params");
    std::fs::write(&truncated, &bytes[..bytes.len() - 1000]).unwrap();
    let e = Srs::read(&truncated, "chain:300", false).err().unwrap().to_string();
    assert!(e.contains("is truncated") && e.contains("section `b_g2`"), "{e}");

    // The first point of section h: after the vk's six points, `ic` (2 points: the
    // constant one and the output) with its count, and h's count.
    let first_h = 3 * 96 + 3 * 192 + 4 + 2 * 96 + 4;
    let mut corrupt = bytes.clone();
    corrupt[first_h + 10] ^= 0x40;
    let corrupt_path = dir.join("corrupt.params");
    std::fs::write(&corrupt_path, &corrupt).unwrap();
    let e = Srs::read(&corrupt_path, "chain:300", false).err().unwrap().to_string();
    assert!(e.contains("is corrupt: point 0 of section `h`"), "{e}");

    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 7]);
    let longer_path = dir.join("longer.params");
    std::fs::write(&longer_path, &longer).unwrap();
    let e = Srs::read(&longer_path, "chain:300", false).err().unwrap().to_string();
    assert!(e.contains("has 7 bytes after its last section"), "{e}");

    let missing = Srs::read(&dir.join("nope.params"), "chain:300", false).err().unwrap().to_string();
    assert!(
        missing.contains("cannot open parameter file") && missing.contains("bellhop params gen chain:300"),
        "{missing}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn fixed_blinding_is_never_reused() {
    let dir = scratch_dir("blinding");
    let (_, path) = params_for(&"chain:50".parse().unwrap(), &dir);
    let srs = Srs::read(&path, "chain:50", false).unwrap();
    let session = Session::open(&Config::default(), &dir).unwrap();
    let job = |seed| vec![Job { circuit: "chain:50".into(), seed, input: Default::default() }];
    let options = PipelineOptions { verify: true, randomness: Randomness::Fixed(vec![blinding(1)]) };
    let e = pipeline::run(&session.backend, session.strategy.as_ref(), &srs, vec![job(1), job(2)], &options, &|_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("proof 1 has no fixed r and s: 1 pairs were given"), "{e}");
    std::fs::remove_dir_all(dir).ok();
}

/// The CPU backend with the first G1 MSM of each proof (msm_h) answered wrongly: with a
/// point of G1 that is not the sum, or with a point that is not on the curve.
struct Lying {
    honest: CpuBackend,
    off_curve: bool,
    calls: AtomicUsize,
}

impl Backend for Lying {
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
        let sum = self.honest.msm_g1(bases, scalars)?;
        if self.calls.fetch_add(1, Ordering::Relaxed) % 4 != 0 {
            return Ok(sum);
        }
        if self.off_curve {
            return Ok(G1Projective { y: sum.x, ..sum });
        }
        let shifted: blstrs::G1Projective = cast::<_, blstrs::G1Projective>(sum) + blstrs::G1Projective::generator();
        Ok(cast(shifted))
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
        self.honest.msm_g2(bases, scalars)
    }

    fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
        self.honest.ntt(values, direction)
    }

    fn compute_h(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr]) -> Result<Vec<PhaseTiming>, PluginError> {
        self.honest.compute_h(a, b, c)
    }
}

/// One chain:300 proof to make in `dir`: its parameters, the embedded cpu backend and
/// baseline strategy, the job, and fixed blinding.
struct OneProof {
    dir: PathBuf,
    srs: Srs,
    session: Session,
    jobs: Vec<Vec<Job>>,
    options: PipelineOptions,
}

fn one_proof(name: &str) -> OneProof {
    let spec: CircuitSpec = "chain:300".parse().unwrap();
    let dir = scratch_dir(name);
    let (_, path) = params_for(&spec, &dir);
    let srs = Srs::read(&path, &spec.to_string(), true).unwrap();
    let session = Session::open(&Config::default(), &dir).unwrap();
    let jobs = vec![vec![Job { circuit: spec.to_string().into(), seed: 1, input: Default::default() }]];
    let options = PipelineOptions { verify: true, randomness: Randomness::Fixed(vec![blinding(1)]) };
    OneProof { dir, srs, session, jobs, options }
}

#[test]
fn a_backend_that_answers_wrongly_gets_no_proof_out() {
    let OneProof { dir, srs, session, jobs, options } = one_proof("lying");
    for off_curve in [false, true] {
        let lying = Lying { honest: CpuBackend::new(2).unwrap(), off_curve, calls: AtomicUsize::new(0) };
        let lying = OpenedBackend::new(Box::new(lying), "lying", Capabilities::default());
        let out = pipeline::run(&lying, session.strategy.as_ref(), &srs, jobs.clone(), &options, &|_| {
            panic!("a wrong proof was handed out")
        });
        let e = out.map(|_| ()).expect_err("the proof is withheld").to_string();
        if off_curve {
            assert!(e.contains("G1 point that is not on the curve in phase msm_h"), "{e}");
        } else {
            assert!(e.contains("does not verify"), "{e}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// `[backend] shadow`: the lying backend run beside the CPU backend fails at its first
/// wrong answer, named by part and primitive, before any proof is made.
#[test]
fn a_shadow_names_the_phase_where_a_backend_first_diverges() {
    let OneProof { dir, srs, session, jobs, options } = one_proof("shadowed");
    let lying = Lying { honest: CpuBackend::new(2).unwrap(), off_curve: false, calls: AtomicUsize::new(0) };
    let shadowed = Shadowed::new(Box::new(lying), Box::new(CpuBackend::new(2).unwrap()), "cpu");
    let backend = OpenedBackend::new(Box::new(shadowed), "lying shadowed by cpu", Capabilities::default());
    let out =
        pipeline::run(&backend, session.strategy.as_ref(), &srs, jobs, &options, &|_| panic!("a proof was handed out"));
    let e = out.map(|_| ()).expect_err("the first divergence stops the proof").to_string();
    assert!(
        e.contains("phase msms") && e.contains("msm_h: msm_g1 of") && e.contains("against the shadow backend cpu"),
        "{e}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// The baseline strategy, with the first public input of every assignment changed: a
/// proof of another statement, which would verify against the inputs it claims.
struct OtherStatement<'a>(&'a dyn Strategy);

impl Strategy for OtherStatement<'_> {
    fn synthesize(&self, jobs: &[Job]) -> Result<Synthesis, PluginError> {
        let mut synthesis = self.0.synthesize(jobs)?;
        for assignment in &mut synthesis.assignments {
            let changed: blstrs::Scalar = cast::<Fr, blstrs::Scalar>(assignment.inputs[1]) + Scalar::ONE;
            assignment.inputs[1] = cast(changed);
        }
        Ok(synthesis)
    }
}

#[test]
fn an_assignment_of_other_public_inputs_gets_no_proof_out() {
    let OneProof { dir, srs, session, jobs, options } = one_proof("other-statement");
    let lying = OtherStatement(session.strategy.as_ref());
    let out = pipeline::run(&session.backend, &lying, &srs, jobs, &options, &|_| {
        panic!("a proof of another statement was handed out")
    });
    let e = out.map(|_| ()).expect_err("the proof is withheld").to_string();
    assert!(e.contains("other public inputs than the circuit's own") && e.contains("public input 0 differs"), "{e}");
    std::fs::remove_dir_all(dir).ok();
}
