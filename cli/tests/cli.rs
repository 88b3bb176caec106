//! The `bellhop` binary as an operator runs it.

use std::process::Command;

fn bellhop(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bellhop")).args(args).env_remove("BELLHOP_PLUGIN_DIR").output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn plugins_lists_the_embedded_and_the_built_cpu_backend() {
    let (ok, out) = bellhop(&["plugins"]);
    assert!(ok, "{out}");
    let cpu_rows: Vec<&str> = out.lines().filter(|l| l.starts_with("backend") && l.contains(" cpu ")).collect();
    assert!(cpu_rows.iter().any(|l| l.ends_with("embedded")), "{out}");
    assert!(
        cpu_rows.iter().any(|l| l.contains("libbellhop_backend_cpu")),
        "built plugin listed beside the binary:\n{out}"
    );
    assert!(out.contains("msm_g1,msm_g2,ntt,compute_h"), "{out}");
    assert!(out.contains("device 0:"), "{out}");
}

#[test]
fn plugins_json_is_machine_readable() {
    let (ok, out) = bellhop(&["plugins", "--json"]);
    assert!(ok, "{out}");
    let abi = format!("\"abi\": \"{}\"", bellhop_plugin_sdk::ABI_VERSION);
    assert!(out.contains("\"kind\": \"backend\"") && out.contains(&abi), "{out}");
}

#[test]
fn a_bad_config_key_is_named() {
    let dir = std::env::temp_dir().join(format!("bellhop-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("bellhop.toml");
    std::fs::write(&config, "[backend]\nplugn = \"cpu\"\n").unwrap();
    let (ok, out) = bellhop(&["--config", config.to_str().unwrap(), "plugins"]);
    assert!(!ok);
    assert!(out.contains("unknown field `plugn`") && out.contains("bellhop.toml"), "{out}");
}

#[test]
fn prove_writes_a_proof_that_bellpersons_verifier_accepts() {
    use bellperson::groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
    use blstrs::{Bls12, Scalar};

    let dir = std::env::temp_dir().join(format!("bellhop-cli-prove-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let params = dir.join("chain.params");
    let (proof_path, inputs_path) = (dir.join("proof.bin"), dir.join("inputs.txt"));
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();

    let (ok, out) = bellhop(&["params", "gen", "chain:300", "--out", &path(&params), "--seed", "5"]);
    assert!(ok && out.contains("insecure"), "{out}");
    let (ok, out) = bellhop(&[
        "prove",
        "chain:300",
        "--params",
        &path(&params),
        "--seed",
        "7",
        "--out",
        &path(&proof_path),
        "--inputs",
        &path(&inputs_path),
        "--print-inputs",
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("msms") && out.contains("each verified"), "phase table printed:\n{out}");

    // An outside verifier: bellperson's, with the vk of the file `params gen` wrote and
    // the public inputs as printed.
    let proof_bytes = std::fs::read(&proof_path).unwrap();
    assert_eq!(proof_bytes.len(), 192);
    let proof = Proof::<Bls12>::read(&proof_bytes[..]).unwrap();
    let vk = VerifyingKey::<Bls12>::read(std::fs::File::open(&params).unwrap()).unwrap();
    let printed = out.lines().find_map(|l| l.strip_prefix("proof 0 public inputs: ")).expect("inputs printed");
    let inputs: Vec<Scalar> = printed
        .split_whitespace()
        .map(|h| {
            let hex = h.strip_prefix("0x").unwrap();
            let bytes: Vec<u8> = (0..32).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect();
            Scalar::from_bytes_be(&bytes.try_into().unwrap()).unwrap()
        })
        .collect();
    assert_eq!(inputs.len(), 1);
    assert!(verify_proof(&prepare_verifying_key(&vk), &proof, &inputs).unwrap());
    // A wrong public input is rejected.
    assert!(!verify_proof(&prepare_verifying_key(&vk), &proof, &[inputs[0] + Scalar::from(1u64)]).unwrap());

    let (ok, out) = bellhop(&[
        "verify",
        "--params",
        &path(&params),
        "--proof",
        &path(&proof_path),
        "--inputs",
        &path(&inputs_path),
    ]);
    assert!(ok && out.contains("proof 0: valid"), "{out}");
    std::fs::write(&inputs_path, format!("{}\n", printed.replace('a', "b").replace('3', "4"))).unwrap();
    let (ok, out) = bellhop(&[
        "verify",
        "--params",
        &path(&params),
        "--proof",
        &path(&proof_path),
        "--inputs",
        &path(&inputs_path),
    ]);
    assert!(!ok && out.contains("proof 0: INVALID"), "{out}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn prove_without_parameters_says_how_to_make_them() {
    let (ok, out) = bellhop(&["prove", "chain:123", "--params", "/nonexistent/chain.params"]);
    assert!(!ok);
    assert!(
        out.contains("/nonexistent/chain.params does not exist") && out.contains("bellhop params gen chain:123"),
        "{out}"
    );
}

#[test]
fn an_unknown_backend_is_named_with_what_exists() {
    let dir = std::env::temp_dir().join(format!("bellhop-cli-backend-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("bellhop.toml");
    std::fs::write(&config, "[backend]\nplugin = \"cdua\"\n").unwrap();
    let (ok, out) = bellhop(&["--config", config.to_str().unwrap(), "prove", "chain:10"]);
    assert!(!ok);
    assert!(out.contains("no backend plugin named `cdua`") && out.contains("available backends: cpu"), "{out}");
}

#[test]
fn ab_synthesis_only_needs_no_parameters() {
    let dir = std::env::temp_dir().join(format!("bellhop-cli-ab-{}", std::process::id()));
    let report = dir.join("report");
    let args = ["ab", "chain:300", "--synthesis-only", "--runs", "12", "--params", "/nonexistent/chain.params"];
    let (ok, out) =
        bellhop(&[&args[..], &["--set-b", "synthesis.threads=1", "--report", report.to_str().unwrap()]].concat());
    assert!(ok, "{out}");
    assert!(out.contains("synthesis only (no proving)") && out.contains("| synthesis |"), "{out}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(report.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["synthesis_only"], true);
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 24);
    assert!(runs.iter().all(|r| r["seconds"].get("synthesis").is_some() && r["seconds"].get("msm_h").is_none()));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn params_gen_replaces_no_file_and_keeps_out_of_filecoin_proofs_directory() {
    let dir = std::env::temp_dir().join(format!("bellhop-cli-params-{}", std::process::id()));
    let published = dir.join("filecoin-proof-parameters");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&published).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_bellhop"))
            .args(args)
            .env("FIL_PROOFS_PARAMETER_CACHE", &published)
            .current_dir(&dir)
            .output()
            .unwrap();
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let gen = |extra: &[&str]| run(&[&["params", "gen", "chain:8", "--seed", "1"], extra].concat());
    // `[params] dir` defaults to FIL_PROOFS_PARAMETER_CACHE: insecure Filecoin parameters
    // and SRS, which its verifiers would trust, are not written there without --dir.
    for refused in [&["params", "gen", "window-post:2KiB"][..], &["params", "srs"]] {
        let (ok, out) = run(refused);
        assert!(!ok && out.contains("filecoin-proofs' parameter directory") && out.contains("--dir"), "{out}");
    }
    assert_eq!(std::fs::read_dir(&published).unwrap().count(), 0);
    // A catalog circuit's file is nothing filecoin-proofs reads.
    let (ok, out) = gen(&[]);
    assert!(ok, "{out}");
    assert_eq!(std::fs::read_dir(&published).unwrap().count(), 1);
    let (ok, out) = run(&["params", "srs", "--dir", published.to_str().unwrap(), "--proofs", "4"]);
    assert!(ok && out.contains("v28-fil-inner-product-v1.srs"), "{out}");
    assert_eq!(std::fs::read_dir(&published).unwrap().count(), 2);
    // An existing file is replaced only with --force.
    let file = dir.join("chain.params");
    std::fs::write(&file, b"an operator's file").unwrap();
    let (ok, out) = gen(&["--out", file.to_str().unwrap()]);
    assert!(!ok && out.contains("exists") && out.contains("--force"), "{out}");
    assert_eq!(std::fs::read(&file).unwrap(), b"an operator's file");
    let (ok, out) = gen(&["--out", file.to_str().unwrap(), "--force"]);
    assert!(ok, "{out}");
    assert_ne!(std::fs::read(&file).unwrap(), b"an operator's file");
}

#[test]
fn conformance_time_at_out_of_range_is_refused() {
    let (ok, out) = bellhop(&["conformance", "cpu", "--time-at", "64"]);
    assert!(!ok && out.contains("--time-at") && out.contains("1..=28"), "{out}");
}

#[test]
fn proving_with_verification_off_warns_first() {
    let dir = std::env::temp_dir().join(format!("bellhop-cli-unverified-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (params, config) = (dir.join("chain.params"), dir.join("bellhop.toml"));
    std::fs::write(&config, "[pipeline]\nverify = false\n").unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let (ok, out) = bellhop(&["params", "gen", "chain:8", "--out", &path(&params), "--seed", "1", "--force"]);
    assert!(ok, "{out}");
    let (ok, out) = bellhop(&["--config", &path(&config), "prove", "chain:8", "--params", &path(&params)]);
    assert!(ok && out.contains("verify is off"), "{out}");
}

/// `prove` synthesizes its first batch while it reads the parameters: with a batch of two
/// and three proofs, every lookahead gives the same bytes, each proof verified.
#[test]
fn prove_gives_the_same_proofs_whatever_the_lookahead() {
    let dir = std::env::temp_dir().join(format!("bellhop-cli-first-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let params = dir.join("chain.params");
    let (ok, out) = bellhop(&["params", "gen", "chain:40", "--out", &path(&params), "--seed", "2", "--force"]);
    assert!(ok, "{out}");
    let proofs: Vec<Vec<u8>> = [0, 1, 2]
        .iter()
        .map(|lookahead| {
            let (config, out_path) = (dir.join(format!("{lookahead}.toml")), dir.join(format!("{lookahead}.proofs")));
            std::fs::write(&config, format!("[pipeline]\nlookahead = {lookahead}\n")).unwrap();
            let (ok, out) = bellhop(&[
                "--config",
                &path(&config),
                "prove",
                "chain:40",
                "--params",
                &path(&params),
                "--count",
                "3",
                "--batch",
                "2",
                "--insecure-blinding-seed",
                "9",
                "--out",
                &path(&out_path),
            ]);
            assert!(ok && out.contains("3 proof(s) in") && out.contains("each verified"), "{out}");
            std::fs::read(&out_path).unwrap()
        })
        .collect();
    assert_eq!(proofs[0].len(), 3 * 192);
    assert!(proofs.iter().all(|p| *p == proofs[0]), "the lookahead changed the proofs");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn params_check_finds_a_point_off_the_curve() {
    let dir = std::env::temp_dir().join(format!("bellhop-cli-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let params = dir.join("chain.params");
    let path = params.to_str().unwrap();
    let (ok, out) = bellhop(&["params", "gen", "chain:8", "--out", path, "--seed", "1", "--force"]);
    assert!(ok, "{out}");
    let (ok, out) = bellhop(&["params", "check", "chain:8", "--params", path]);
    assert!(ok && out.contains("on the curve and in their subgroups"), "{out}");
    // The last byte of the last point (b_g2's): its y coordinate no longer fits x.
    let mut bytes = std::fs::read(&params).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&params, bytes).unwrap();
    let (ok, out) = bellhop(&["params", "check", "chain:8", "--params", path]);
    assert!(!ok && out.contains("b_g2"), "{out}");
}

/// `bellhop install` puts the binary and its plugins where the unit it writes runs them;
/// the installed binary, through its link, finds the installed plugins; a second install
/// keeps the operator's config.
#[test]
fn install_puts_binary_plugins_unit_and_config_where_the_unit_finds_them() {
    let root = std::env::temp_dir().join(format!("bellhop-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let [prefix, etc, units] = ["usr", "etc/bellhop", "systemd"].map(|d| root.join(d));
    let args = |extra: &[&'static str]| -> Vec<String> {
        let base = ["install", "--prefix", prefix.to_str().unwrap(), "--config-dir", etc.to_str().unwrap()];
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let mut first = args(&["--systemd-dir"]);
    first.push(units.display().to_string());
    let (ok, out) = bellhop(&first.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{out}");
    let lib = prefix.join("lib/bellhop");
    assert!(lib.join("bellhop").is_file() && lib.join("libbellhop_backend_cpu.so").is_file(), "{out}");
    let unit = std::fs::read_to_string(units.join("bellhop.service")).unwrap();
    let exec = format!(
        "ExecStart={} --config {} serve",
        prefix.join("bin/bellhop").display(),
        etc.join("bellhop.toml").display()
    );
    assert!(unit.contains(&exec), "{unit}");
    let config = std::fs::read_to_string(etc.join("bellhop.toml")).unwrap();
    assert!(config.contains("plugin = \"cuda\"") && config.contains("strategy = \"pce\""), "{config}");

    let installed =
        Command::new(prefix.join("bin/bellhop")).arg("plugins").env_remove("BELLHOP_PLUGIN_DIR").output().unwrap();
    let listed = String::from_utf8_lossy(&installed.stdout);
    assert!(installed.status.success(), "{listed}");
    let plugin = lib.join("libbellhop_strategy_pce.so").display().to_string();
    assert!(listed.contains(&plugin), "the installed binary finds the installed plugins:\n{listed}");

    std::fs::write(etc.join("bellhop.toml"), "# the operator's\n").unwrap();
    let (ok, out) = bellhop(&args(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok && out.contains("kept"), "{out}");
    assert_eq!(std::fs::read_to_string(etc.join("bellhop.toml")).unwrap(), "# the operator's\n");
    std::fs::remove_dir_all(&root).unwrap();
}

/// `bench` proves on the daemon's engine in process: warm-up and measured proofs, a row of
/// phases per measured proof, `--batch` as `[pipeline] batch` (two proofs synthesized in
/// one call), the seconds per proof after warm-up.
#[test]
fn bench_reports_every_measured_proof_and_its_phases() {
    let dir = std::env::temp_dir().join(format!("bellhop-cli-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let params = dir.join("chain.params");
    let (ok, out) = bellhop(&["params", "gen", "chain:64", "--out", &path(&params), "--seed", "3", "--force"]);
    assert!(ok, "{out}");
    let out = Command::new(env!("CARGO_BIN_EXE_bellhop"))
        .args([
            "bench",
            "chain:64",
            "--params",
            &path(&params),
            "--runs",
            "4",
            "--warmup",
            "2",
            "--batch",
            "2",
            "--json",
        ])
        .env_remove("BELLHOP_PLUGIN_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["runs"].as_u64(), report["warmup"].as_u64(), report["batch"].as_u64()),
        (Some(4), Some(2), Some(2))
    );
    let rows = report["per_partition"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "a row per measured proof: {report}");
    for row in rows {
        for phase in ["synthesis", "msms", "msms.h", "msms.msm_h", "msms.msm_b_g2", "verify"] {
            assert!(row[phase].as_f64().is_some_and(|s| s > 0.0), "{phase} of {row}");
        }
    }
    assert!(report["seconds_per_proof_after_warmup"].as_f64().is_some_and(|s| s > 0.0), "{report}");
    assert_eq!(report["strategy"], "baseline (embedded)");
}
