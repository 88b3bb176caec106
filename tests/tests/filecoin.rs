//! Filecoin's circuits end to end: a 2 KiB sector sealed by filecoin-proofs, PoSt vanilla
//! proofs from it, proved by Bellhop with every strategy, accepted by filecoin-proofs' own
//! verifiers; identical assignments from every strategy; clear errors for bad inputs.

use std::{
    fs,
    path::{Path, PathBuf},
    sync::OnceLock,
};

use base64::Engine as _;
use bellhop_circuits::CircuitSpec;
use bellhop_filecoin::{curio, make, synthetic, verify, ApiFeature, FilecoinSpec, Kind, SectorSize};
use bellhop_host::{
    config::Config,
    params::{self, Srs},
    pipeline::{self, PipelineOptions, Randomness},
    session::{load_params, Session},
};
use bellhop_plugin_sdk::{cast_slice, strategy::Job};
use bellhop_tests::{build_dir, built_library};
use bellperson::groth16::generate_random_parameters;
use blstrs::{Bls12, Scalar};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Three sealed 2 KiB sectors and the inputs made from them.
struct Fixture {
    params: PathBuf,
    winning: Vec<u8>,
    /// Three sectors: two partitions of two (the last padded).
    window: Vec<u8>,
    snap: Vec<u8>,
    c1: Vec<u8>,
    /// The C1 output of a fourth sector, sealed with StackedDrg2KiBV1_1_Feat_SyntheticPoRep.
    synthetic_porep_c1: Vec<u8>,
    synthetic_porep_sector: make::SealedSector,
    /// The C1 output of a fifth, sealed with StackedDrg2KiBV1_2_Feat_NonInteractivePoRep.
    ni_porep_c1: Vec<u8>,
    ni_porep_sector: make::SealedSector,
}

fn spec(kind: Kind) -> FilecoinSpec {
    FilecoinSpec { kind, sector_size: SectorSize::Kib2 }
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = build_dir().join(format!("filecoin-{}", std::process::id()));
        let params = dir.join("params");
        bellhop_filecoin::set_directories(&params, &dir.join("parents"));
        let sectors: Vec<PathBuf> = (1..=3)
            .map(|seed| {
                let sector = dir.join(format!("sector-{seed}"));
                make::seal(&sector, SectorSize::Kib2, seed, 1, None).unwrap();
                sector
            })
            .collect();
        let synthetic_porep = dir.join("sector-synthetic-porep");
        let synthetic_porep_sector =
            make::seal(&synthetic_porep, SectorSize::Kib2, 4, 1, Some(ApiFeature::SyntheticPoRep)).unwrap();
        let ni_porep = dir.join("sector-ni-porep");
        let ni_porep_sector =
            make::seal(&ni_porep, SectorSize::Kib2, 5, 1, Some(ApiFeature::NonInteractivePoRep)).unwrap();
        Fixture {
            ni_porep_sector,
            ni_porep_c1: fs::read(ni_porep.join(make::C1_FILE)).unwrap(),
            synthetic_porep_sector,
            synthetic_porep_c1: fs::read(synthetic_porep.join(make::C1_FILE)).unwrap(),
            winning: make::post(spec(Kind::WinningPost), &sectors, 7).unwrap(),
            window: make::post(spec(Kind::WindowPost), &sectors, 8).unwrap(),
            snap: make::snap(&sectors[2], 9).unwrap(),
            c1: fs::read(sectors[0].join(make::C1_FILE)).unwrap(),
            params,
        }
    })
}

/// The strategies: the embedded baseline, the loaded plugins, and the baseline without
/// parallel parts.
fn strategies(pce_cache: &Path) -> Vec<Config> {
    let mut configs = vec![Config::default()];
    for name in ["presized", "smallvec", "pce"] {
        let mut config = Config::default();
        config.synthesis.strategy = built_library(&format!("bellhop_strategy_{name}")).display().to_string();
        if name == "pce" {
            config.synthesis.options.insert("cache_dir".into(), pce_cache.display().to_string().into());
        }
        configs.push(config);
    }
    // The baseline with PoRep's challenges on one thread, as bellperson synthesizes them.
    let mut sequential = Config::default();
    sequential.synthesis.options.insert("parallel_parts".into(), false.into());
    configs.push(sequential);
    configs
}

fn jobs(spec: FilecoinSpec, input: &[u8]) -> Vec<Job> {
    let partitions = spec.partitions(input).unwrap();
    (0..partitions as u64)
        .map(|k| Job { circuit: spec.to_string().into(), seed: k, input: input.to_vec().into() })
        .collect()
}

/// Proves every partition of `input` with `config`: the proofs concatenated.
fn prove(config: &Config, srs: &Srs, spec: FilecoinSpec, input: &[u8]) -> Vec<u8> {
    let session = Session::open(config, &build_dir()).unwrap();
    let options = PipelineOptions { verify: true, randomness: Randomness::Os };
    let proved =
        pipeline::run(&session.backend, session.strategy.as_ref(), srs, vec![jobs(spec, input)], &options, &|_| {})
            .unwrap();
    proved.iter().flat_map(|p| p.proof_bytes()).collect()
}

#[test]
fn post_proofs_of_every_strategy_are_accepted_by_filecoin_proofs() {
    let fixture = fixture();
    let pce_cache = build_dir().join(format!("filecoin-pce-{}", std::process::id()));
    for (kind, input) in [(Kind::WinningPost, &fixture.winning), (Kind::WindowPost, &fixture.window)] {
        let spec = spec(kind);
        let circuit = CircuitSpec::Filecoin(spec);
        let path = fixture.params.join(circuit.params_file_name().unwrap());
        let generated = generate_random_parameters::<Bls12, _, _>(
            circuit.setup_circuit().unwrap(),
            &mut ChaCha20Rng::seed_from_u64(3),
        )
        .unwrap();
        params::write_for_circuit(&circuit, &generated, &path).unwrap();
        let srs = Srs::read(&path, &spec.to_string(), false).unwrap();
        let partitions = spec.partitions(input).unwrap();
        assert_eq!(partitions, if kind == Kind::WindowPost { 2 } else { 1 });
        for config in strategies(&pce_cache) {
            let proofs = prove(&config, &srs, spec, input);
            assert_eq!(proofs.len(), 192 * partitions);
            assert!(
                verify::verify(spec, input, None, &proofs).unwrap(),
                "{spec} with {}: rejected by filecoin-proofs",
                config.synthesis.strategy
            );
            if partitions == 2 {
                // Partition order matters: swapped, the proofs are rejected.
                let swapped = [&proofs[192..], &proofs[..192]].concat();
                assert!(!verify::verify(spec, input, None, &swapped).unwrap_or(false));
            }
        }
    }
    fs::remove_dir_all(pce_cache).ok();
}

#[test]
fn filecoin_assignments_are_identical_across_strategies() {
    let fixture = fixture();
    let mut jobs_all = Vec::new();
    for (kind, input) in [
        (Kind::WinningPost, &fixture.winning),
        (Kind::WindowPost, &fixture.window),
        (Kind::Snap, &fixture.snap),
        (Kind::Porep, &fixture.c1),
    ] {
        jobs_all.extend(jobs(spec(kind), input));
    }
    let pce_cache = build_dir().join(format!("filecoin-pce-identical-{}", std::process::id()));
    let configs = strategies(&pce_cache);
    let synthesize = |config: &Config| {
        let session = Session::open(config, &build_dir()).unwrap();
        let result = session.strategy.synthesize(&jobs_all).unwrap();
        assert!(result.warnings.is_empty(), "{:?}", result.warnings);
        result.assignments
    };
    let expected = synthesize(&configs[0]);
    assert_eq!(expected.len(), 5);
    // The circuits' public inputs are the ones filecoin-proofs' verifiers compute, and their
    // sizes those measured with filecoin-proofs (constraints without bellperson's input
    // constraints; inputs with the constant one).
    for ((job, assignment), constraints) in
        jobs_all.iter().zip(&expected).zip([90_750, 21_866, 21_866, 1_705_039, 2_687_921])
    {
        let spec: CircuitSpec = job.circuit.parse().unwrap();
        let public = spec.instance(job.seed, &job.input).unwrap().public_inputs;
        let inputs: &[Scalar] = bellhop_plugin_sdk::cast_slice(&assignment.inputs[1..]);
        assert!(inputs == &public[..], "{spec} partition {}: public inputs differ", job.seed);
        println!(
            "{spec}: {} constraints, {} inputs",
            assignment.a.len() - assignment.inputs.len(),
            assignment.inputs.len()
        );
        assert_eq!(assignment.a.len() - assignment.inputs.len(), constraints, "{spec}");
    }
    assert_eq!(expected[4].inputs.len(), 40, "PoRep C2 2 KiB: 40 public inputs with the constant one");
    for config in &configs[1..] {
        assert!(synthesize(config) == expected, "{}: differs from baseline", config.synthesis.strategy);
    }
    // pce again: the replay of its recordings.
    assert!(synthesize(&configs[3]) == expected, "pce's replay differs from baseline");
    fs::remove_dir_all(pce_cache).ok();
}

#[test]
fn porep_and_post_synthesized_in_parts_are_the_whole_circuits() {
    let fixture = fixture();
    let synthetic = synthetic::porep_c1(SectorSize::Kib2, 6).unwrap();
    let bench = FilecoinSpec { kind: Kind::SyntheticPorep, sector_size: SectorSize::Kib2 };
    let pool = bellhop_synthesis_kit::thread_pool("bellhop-filecoin-parts-test", 2).unwrap();
    for (spec, input) in [(spec(Kind::Porep), &fixture.c1), (bench, &synthetic)] {
        let circuit = CircuitSpec::Filecoin(spec);
        let Ok(parts) = circuit.instance(0, input).unwrap().circuit.into_parts() else {
            panic!("{spec} is not cut at its challenges")
        };
        assert_eq!(parts.pieces.len(), 2, "{spec}: one piece per challenge");
        let job = Job { circuit: spec.to_string().into(), seed: 0, input: input.to_vec().into() };
        let whole = bellhop_synthesis_kit::synthesize_directly(circuit, &job).unwrap();
        let in_parts = pool.install(|| bellhop_synthesis_kit::synthesize_in_parallel(circuit, &job)).unwrap();
        assert!(in_parts == whole, "{spec}: synthesized in parts, the assignment differs from the whole circuit's");
    }
    // PoSt is cut at its sectors: WindowPoSt's partition 0 holds two, WinningPoSt's
    // circuit one a challenge (66), in pieces of two.
    for (kind, input, pieces) in [(Kind::WindowPost, &fixture.window, 2), (Kind::WinningPost, &fixture.winning, 33)] {
        let circuit = CircuitSpec::Filecoin(spec(kind));
        let Ok(parts) = circuit.instance(0, input).unwrap().circuit.into_parts() else {
            panic!("{circuit} is not cut at its sectors")
        };
        assert_eq!(parts.pieces.len(), pieces, "{circuit}");
        let job = Job { circuit: circuit.to_string().into(), seed: 0, input: input.to_vec().into() };
        let whole = bellhop_synthesis_kit::synthesize_directly(circuit, &job).unwrap();
        let in_parts = pool.install(|| bellhop_synthesis_kit::synthesize_in_parallel(circuit, &job)).unwrap();
        assert!(in_parts == whole, "{circuit}: synthesized in parts, the assignment differs from the whole circuit's");
    }

    // pce replays a synthetic input, whose witness satisfies none of the circuit's checks,
    // instead of taking the recording for a stale one and recording again.
    let pce_cache = build_dir().join(format!("filecoin-pce-synthetic-{}", std::process::id()));
    let session = Session::open(&strategies(&pce_cache)[3], &build_dir()).unwrap();
    let jobs = [Job { circuit: bench.to_string().into(), seed: 0, input: synthetic.clone().into() }];
    let recorded = session.strategy.synthesize(&jobs).unwrap();
    let replayed = session.strategy.synthesize(&jobs).unwrap();
    assert!(replayed.warnings.is_empty(), "{:?}", replayed.warnings);
    assert!(replayed.timings.iter().any(|t| t.name.as_str() == "replay_witness_cpu" && t.nanos > 0), "it replayed");
    assert!(replayed.assignments == recorded.assignments, "pce's replay of {bench} differs from its recording");
    fs::remove_dir_all(pce_cache).ok();
}

/// A PoRep or SnapDeals job is prepared once: each partition's input holds its own vanilla
/// proofs, synthesizes as that partition of the whole input does, stands for no other
/// partition and is no job's input; the whole job's vanilla proofs are checked when it is
/// prepared.
#[test]
fn prepared_porep_and_snap_partitions_are_the_whole_inputs_and_nothing_else() {
    let fixture = fixture();
    let synthetic = synthetic::porep_c1(SectorSize::Kib2, 6).unwrap();
    let bench = FilecoinSpec { kind: Kind::SyntheticPorep, sector_size: SectorSize::Kib2 };
    for (spec, input) in [(spec(Kind::Porep), &fixture.c1), (bench, &synthetic), (spec(Kind::Snap), &fixture.snap)] {
        let circuit = CircuitSpec::Filecoin(spec);
        let prepared = circuit.prepare(input).unwrap().partitions.expect("prepared per partition");
        assert_eq!(prepared.len(), spec.partitions(input).unwrap());
        for (k, own) in prepared.iter().enumerate() {
            let job =
                |input: &[u8]| Job { circuit: spec.to_string().into(), seed: k as u64, input: input.to_vec().into() };
            let whole = bellhop_synthesis_kit::synthesize_directly(circuit, &job(input)).unwrap();
            let alone = bellhop_synthesis_kit::synthesize_directly(circuit, &job(own)).unwrap();
            assert!(alone == whole, "{spec} partition {k}: its prepared input synthesizes otherwise");
            assert_eq!(circuit.public_inputs(k as u64, own).unwrap(), circuit.public_inputs(k as u64, input).unwrap());
            let Err(other) = spec.instance(own, k + 1) else { panic!("{spec}: partition {k}'s input proved another") };
            assert!(other.to_string().contains("partition"), "{other}");
            let refused = spec.partitions(own).unwrap_err().to_string();
            assert!(refused.contains("one partition of a job Bellhop prepared"), "{refused}");
        }
    }
    // Vanilla proofs that do not match their public data are refused as the job is prepared.
    let changed = edited(&fixture.c1, |v| v["comm_r"][0] = (v["comm_r"][0].as_u64().unwrap() ^ 1).into());
    let e = spec(Kind::Porep).prepare(&changed).expect_err("refused").to_string();
    assert!(e.contains("do not match their public data"), "{e}");
    let changed = edited(&fixture.snap, |v| v["comm_r_new"][0] = (v["comm_r_new"][0].as_u64().unwrap() ^ 1).into());
    let e = spec(Kind::Snap).prepare(&changed).expect_err("refused").to_string();
    assert!(e.contains("do not verify against comm_r_old, comm_r_new and comm_d_new"), "{e}");
    // PoSt requests are one partition each, read whole.
    assert!(spec(Kind::WindowPost).prepare(&fixture.window).unwrap().partitions.is_none());
}

/// Each of `prepared` (the partition inputs of `c1`) synthesizes a witness that satisfies
/// its circuit, with the public inputs filecoin-proofs' verifier computes from `c1`.
fn assert_partitions_satisfied(spec: FilecoinSpec, c1: &[u8], prepared: &[Vec<u8>]) {
    let circuit = CircuitSpec::Filecoin(spec);
    for (k, own) in prepared.iter().enumerate() {
        let job = Job { circuit: spec.to_string().into(), seed: k as u64, input: own.clone().into() };
        let assignment = bellhop_synthesis_kit::synthesize_directly(circuit, &job).unwrap();
        let [a, b, c]: [&[Scalar]; 3] = [&assignment.a, &assignment.b, &assignment.c].map(|v| cast_slice(v));
        let unsatisfied = (0..a.len()).find(|&i| a[i] * b[i] != c[i]);
        assert_eq!(unsatisfied, None, "partition {k}: a constraint is unsatisfied");
        let inputs: &[Scalar] = cast_slice(&assignment.inputs);
        assert_eq!(inputs[1..], circuit.public_inputs(k as u64, c1).unwrap(), "partition {k}'s public inputs");
    }
}

/// Curio's SyntheticPoRep (`UseSyntheticPoRep`): a sector sealed with
/// StackedDrg2KiBV1_1_Feat_SyntheticPoRep proves as `porep:2KiB`. Each partition's witness
/// satisfies its circuit, whose public inputs are those filecoin-proofs' verifier computes
/// for that registered proof, so its proof verifies with any parameters of the circuit
/// (proved and checked by `verify_seal` in scripts/filecoin-e2e.sh: PoRep's parameters take
/// too long to make here). Read as the interactive proof, its vanilla proofs are refused.
#[test]
fn synthetic_porep_sectors_are_proved_as_porep() {
    let fixture = fixture();
    let c1 = &fixture.synthetic_porep_c1;
    let porep = spec(Kind::Porep);
    let circuit = CircuitSpec::Filecoin(porep);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(c1).unwrap()["registered_proof"],
        "StackedDrg2KiBV1_1_Feat_SyntheticPoRep"
    );
    let prepared = circuit.prepare(c1).unwrap().partitions.expect("a PoRep is prepared per partition");
    assert_eq!(prepared.len(), 1);
    assert_partitions_satisfied(porep, c1, &prepared);
    let interactive = edited(c1, |v| v["registered_proof"] = "StackedDrg2KiBV1_1".into());
    let e = porep.prepare(&interactive).expect_err("refused").to_string();
    assert!(e.contains("do not match their public data"), "{e}");
    // Curio's request for it (RegisteredProof 10, its C1 output wrapped) is taken.
    let [request] = &curio::requests(porep, c1, Some(&fixture.synthetic_porep_sector)).unwrap()[..] else {
        panic!("one request")
    };
    assert_eq!(request.registered_proof, 10);
    let decoded = request.decode().unwrap();
    assert_eq!((decoded.spec, decoded.partitions), (porep, 1));
}

/// Curio's NI-PoRep (StackedDrg2KiBV1_2_Feat_NonInteractivePoRep) proves as `porep:2KiB`:
/// 13 partitions of interactive PoRep's circuit (its parameters), each satisfied, with the
/// public inputs filecoin-proofs' verifier computes; the job's proof is their SnarkPack
/// aggregate, which needs the SRS and the circuit's verifying key (aggregated and checked
/// by `verify_seal` in scripts/filecoin-e2e.sh: PoRep's parameters take too long to make
/// here), and says so where they are missing.
#[test]
fn ni_porep_sectors_are_proved_as_porep_partitions_and_aggregated() {
    let fixture = fixture();
    let c1 = &fixture.ni_porep_c1;
    let porep = spec(Kind::Porep);
    let circuit = CircuitSpec::Filecoin(porep);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(c1).unwrap()["registered_proof"],
        "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep"
    );
    let prepared = circuit.prepare(c1).unwrap();
    let partitions = prepared.partitions.expect("a PoRep is prepared per partition");
    assert_eq!(partitions.len(), 13);
    assert_partitions_satisfied(porep, c1, &partitions);
    let aggregation = prepared.aggregation.expect("an NI-PoRep's proof is an aggregate");
    // Without the circuit's .vk (and the SRS) in the parameter directory: a clear error.
    let e = circuit.job_proof(Some(&aggregation), vec![0; 13 * 192]).unwrap_err().to_string();
    assert!(e.contains("aggregating") && e.contains("v28-fil-inner-product-v1.srs"), "{e}");
    let e = circuit.job_proof(Some(&aggregation), vec![0; 192]).unwrap_err().to_string();
    assert!(e.contains("13 proofs of 192 bytes expected"), "{e}");
    // Curio's request for it (RegisteredProof 15, its C1 output wrapped) is taken.
    let [request] = &curio::requests(porep, c1, Some(&fixture.ni_porep_sector)).unwrap()[..] else {
        panic!("one request")
    };
    assert_eq!(request.registered_proof, 15);
    let decoded = request.decode().unwrap();
    assert_eq!((decoded.spec, decoded.partitions), (porep, 13));
}

/// The error of partition 0 of `input` for `spec`, as text.
fn error(spec: FilecoinSpec, input: &[u8]) -> String {
    match spec.instance(input, 0) {
        Ok(_) => panic!("{spec}: a bad input was taken"),
        Err(e) => e.to_string(),
    }
}

/// `json` with `edit` applied to its value.
fn edited(json: &[u8], edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_slice(json).unwrap();
    edit(&mut value);
    serde_json::to_vec(&value).unwrap()
}

#[test]
fn bad_filecoin_inputs_get_clear_errors() {
    let fixture = fixture();
    let porep = spec(Kind::Porep);
    // Truncated and corrupt C1 outputs.
    let truncated = error(porep, &fixture.c1[..fixture.c1.len() / 2]);
    assert!(truncated.contains("is not a C1 output") && truncated.contains("truncated"), "{truncated}");
    let mut flipped = fixture.c1.clone();
    flipped[0] = b'#';
    assert!(error(porep, &flipped).contains("is not a C1 output"));
    let changed = edited(&fixture.c1, |v| v["comm_r"][0] = (v["comm_r"][0].as_u64().unwrap() ^ 1).into());
    let e = error(porep, &changed);
    assert!(e.contains("do not match their public data"), "{e}");
    assert!(error(porep, &[]).contains("--input FILE"));
    // lotus-bench's C2 input (the C1 JSON in base64) is read too, with its sector size.
    let lotus = |size: u64| {
        let phase1 = base64::engine::general_purpose::STANDARD.encode(&fixture.c1);
        serde_json::to_vec(&serde_json::json!({ "SectorNum": 1, "Phase1Out": phase1, "SectorSize": size })).unwrap()
    };
    assert!(porep.instance(&lotus(2048), 0).is_ok());
    let e = error(porep, &lotus(8 << 20));
    assert!(e.contains("the input is for 8MiB sectors"), "{e}");
    // A 2 KiB C1 for the 8 MiB circuit.
    let e = error(FilecoinSpec { kind: Kind::Porep, sector_size: SectorSize::Mib8 }, &fixture.c1);
    assert!(e.contains("the input is for 2KiB sectors") && e.contains("porep:2KiB"), "{e}");
    // Vanilla proofs that do not match their public data.
    let window = spec(Kind::WindowPost);
    let other_comm_r = edited(&fixture.window, |v| v["sectors"][0]["comm_r"][0] = 0.into());
    let e = error(window, &other_comm_r);
    assert!(e.contains("do not match their public data"), "{e}");
    let other_randomness =
        edited(&fixture.window, |v| v["randomness"][0] = (v["randomness"][0].as_u64().unwrap() ^ 1).into());
    let e = error(window, &other_randomness);
    assert!(e.contains("do not match their public data"), "{e}");
    // Crafted Merkle paths: a sibling short, an index past the arity, a level missing, one
    // level too many. Each is an error, not a panic.
    fn path(v: &mut serde_json::Value) -> &mut Vec<serde_json::Value> {
        v["vanilla_proofs"][0]["vanilla_proof"]["sectors"][0]["inclusion_proofs"][0]["data"]["Single"]["path"]["path"]
            .as_array_mut()
            .unwrap()
    }
    let crafted = [
        ("a sibling short", edited(&fixture.window, |v| drop(path(v)[0]["hashes"].as_array_mut().unwrap().pop()))),
        ("an index past the arity", edited(&fixture.window, |v| path(v)[0]["index"] = 9.into())),
        ("a level missing", edited(&fixture.window, |v| drop(path(v).pop()))),
        (
            "a level too many",
            edited(&fixture.window, |v| {
                let level = path(v)[0].clone();
                path(v).push(level);
            }),
        ),
    ];
    for (what, input) in crafted {
        let e = error(window, &input);
        assert!(e.contains("do not match their public data") || e.contains("which no sector has"), "{what}: {e}");
    }
    // An input for another circuit.
    let e = error(window, &fixture.winning);
    assert!(e.contains("it was made for winning-post:2KiB"), "{e}");
    let e = error(spec(Kind::Snap), &fixture.window);
    assert!(e.contains("is not SnapDeals vanilla partition proofs"), "{e}");
    // A missing parameter file: the message names the file filecoin-proofs would use.
    let mut config = Config::default();
    config.params.dir = build_dir().join("no-such-params");
    let e = load_params(&config, &CircuitSpec::Filecoin(porep), None).err().unwrap().to_string();
    assert!(e.contains("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-"), "{e}");
    assert!(e.contains("bellhop params gen porep:2KiB"), "{e}");
    // PoRep's verifier needs the sector's ids.
    assert!(verify::verify(porep, &fixture.c1, None, &[0; 192]).unwrap_err().to_string().contains("--sector"));
}

/// Every object's keys and every array's length, recursively: what a JSON value holds,
/// whatever its numbers.
fn json_shape(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(map) => {
            let fields: Vec<String> = map.iter().map(|(k, v)| format!("{k}:{}", json_shape(v))).collect();
            format!("{{{}}}", fields.join(","))
        }
        serde_json::Value::Array(items) => {
            format!("[{};{}]", items.len(), items.iter().map(json_shape).collect::<Vec<_>>().join(","))
        }
        serde_json::Value::Number(_) => "n".into(),
        other => other.to_string(),
    }
}

/// A synthetic 2 KiB C1 output has a real one's shape (every path, column and label of the
/// same length), its circuit the real one's constraint system, and only the benchmark
/// circuit takes it.
#[test]
fn synthetic_porep_input_has_the_real_shape_and_is_refused_for_proofs() {
    let fixture = fixture();
    let synthetic = synthetic::porep_c1(SectorSize::Kib2, 5).unwrap();
    assert!(synthetic::is_synthetic(&synthetic) && !synthetic::is_synthetic(&fixture.c1));
    let file: serde_json::Value = serde_json::from_slice(&synthetic).unwrap();
    let real: serde_json::Value = serde_json::from_slice(&fixture.c1).unwrap();
    assert_eq!(json_shape(&file["c1"]), json_shape(&real), "the synthetic C1 output's shape differs from a real one's");

    // The same constraint system: sizes and densities of the prover's assignment, public
    // inputs, and the shape synthetic parameters are written for.
    let bench = FilecoinSpec { kind: Kind::SyntheticPorep, sector_size: SectorSize::Kib2 };
    let porep = spec(Kind::Porep);
    let session = Session::open(&Config::default(), &build_dir()).unwrap();
    let job = |spec: FilecoinSpec, input: &[u8]| Job { circuit: spec.to_string().into(), seed: 0, input: input.into() };
    let assignments =
        session.strategy.synthesize(&[job(porep, &fixture.c1), job(bench, &synthetic)]).unwrap().assignments;
    let sizes = |a: &bellhop_plugin_sdk::strategy::Assignment| {
        (
            a.a.len(),
            a.inputs.len(),
            a.aux.len(),
            a.a_aux_density.count(),
            a.b_input_density.count(),
            a.b_aux_density.count(),
        )
    };
    assert_eq!(sizes(&assignments[0]), sizes(&assignments[1]));
    let shape = CircuitSpec::Filecoin(bench).shape().unwrap();
    assert_eq!(
        sizes(&assignments[1]),
        (shape.constraints, shape.inputs, shape.aux, shape.a_aux, shape.b_inputs, shape.b_aux)
    );
    assert_eq!(bench.partitions(&synthetic).unwrap(), porep.partitions(&fixture.c1).unwrap());

    // Where proofs are made for real, it is refused: by its notice, and without it by
    // filecoin-proofs' vanilla verifier.
    let e = error(porep, &synthetic);
    assert!(e.contains("synthetic C1 output") && e.contains("bellhop bench synthetic-porep:2KiB"), "{e}");
    let e = error(porep, &serde_json::to_vec(&file["c1"]).unwrap());
    assert!(e.contains("do not match their public data"), "{e}");
    let wrapped = serde_json::to_vec(&serde_json::json!({
        "SectorNum": 1, "SectorSize": 2048,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&synthetic),
    }))
    .unwrap();
    assert!(error(porep, &wrapped).contains("synthetic C1 output"));
    let e = error(bench, &fixture.c1);
    assert!(e.contains("it is not synthetic") && e.contains("porep:2KiB"), "{e}");
    // A damaged synthetic input is an error, not a panic in the circuit.
    let e = error(bench, &synthetic[..synthetic.len() / 2]);
    assert!(e.contains("truncated"), "{e}");
    let proof = |v: &mut serde_json::Value| v["c1"]["vanilla_proofs"][0][0].take();
    let damaged = [
        edited(&synthetic, |v| drop(proof(v)["labeling_proofs"].as_array_mut().unwrap().pop())),
        edited(&synthetic, |v| {
            v["c1"]["vanilla_proofs"][0][0]["comm_r_last_proof"]["data"]["Single"]["path"]["path"][0]["index"] =
                9.into()
        }),
        edited(&synthetic, |v| drop(v["c1"]["vanilla_proofs"].as_array_mut().unwrap().pop())),
    ];
    for input in damaged {
        let e = error(bench, &input);
        assert!(e.contains("is damaged") && e.contains("bellhop fil synthetic-c1"), "{e}");
    }
    let e = CircuitSpec::Filecoin(bench).refuse_benchmark_only().unwrap_err().to_string();
    assert!(e.contains("for benchmarks only"), "{e}");
    assert!(CircuitSpec::Filecoin(bench).params_file_name().unwrap().starts_with("bellhop-synthetic-porep"));
}

/// ProofShare's requests (Curio's `tasks/proofshare/task_prove.go`) are proved as Curio's
/// own are. Its PoRep payload is the C1 output as Go re-marshals it (`json.Marshal` of
/// Curio's `Commit1OutRaw`, its bytes other than filecoin-proofs' own; approximated here by
/// re-serializing it with other spacing) in the same wrapper, under ids of its own
/// (`ps-porep-MINER-NUMBER-TASK`): it decodes, and prepares into byte-identical partition
/// inputs, so into the same circuits. Its SnapDeals request leaves SectorSize unset, a field
/// Bellhop never reads (the size comes from the registered proof).
#[test]
fn proofshare_porep_payloads_prepare_as_curios_own() {
    let fixture = fixture();
    let porep = spec(Kind::Porep);
    let requests = curio::requests(porep, &fixture.synthetic_porep_c1, Some(&fixture.synthetic_porep_sector)).unwrap();
    let [own] = &requests[..] else { panic!("one request") };
    let base64 = base64::engine::general_purpose::STANDARD;
    let mut wrapper: serde_json::Value = serde_json::from_slice(&own.vanilla_proof).unwrap();
    let c1 = base64.decode(wrapper["Phase1Out"].as_str().unwrap()).unwrap();
    let remarshaled = serde_json::to_vec_pretty(&serde_json::from_slice::<serde_json::Value>(&c1).unwrap()).unwrap();
    assert_ne!(remarshaled, c1, "other bytes");
    wrapper["Phase1Out"] = base64.encode(&remarshaled).into();
    let shared = curio::Request { vanilla_proof: serde_json::to_vec(&wrapper).unwrap(), ..own.clone() };
    let (own, shared) = (own.decode().unwrap(), shared.decode().unwrap());
    assert_eq!((shared.spec, shared.partitions), (own.spec, own.partitions));
    let prepare =
        |decoded: &curio::Decoded| CircuitSpec::Filecoin(decoded.spec).prepare(&decoded.input).unwrap().partitions;
    assert!(prepare(&shared) == prepare(&own), "ProofShare's payload prepares into other partition inputs");
}
