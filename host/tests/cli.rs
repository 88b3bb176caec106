//! The `bellhop` binary as an operator runs it.

use std::process::Command;

fn bellhop(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bellhop"))
        .args(args)
        .env_remove("BELLHOP_PLUGIN_DIR")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn plugins_lists_the_embedded_and_the_built_cpu_backend() {
    let (ok, out) = bellhop(&["plugins"]);
    assert!(ok, "{out}");
    let cpu_rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("backend") && l.contains(" cpu "))
        .collect();
    assert!(cpu_rows.iter().any(|l| l.ends_with("embedded")), "{out}");
    assert!(
        cpu_rows
            .iter()
            .any(|l| l.contains("libbellhop_backend_cpu")),
        "built plugin listed beside the binary:\n{out}"
    );
    assert!(out.contains("msm_g1,msm_g2,ntt,compute_h"), "{out}");
    assert!(out.contains("device 0:"), "{out}");
}

#[test]
fn plugins_json_is_machine_readable() {
    let (ok, out) = bellhop(&["plugins", "--json"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("\"kind\": \"backend\"") && out.contains("\"abi\": \"1.0\""),
        "{out}"
    );
}

#[test]
fn a_bad_config_key_is_named() {
    let dir = std::env::temp_dir().join(format!("bellhop-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("bellhop.toml");
    std::fs::write(&config, "[backend]\nplugn = \"cpu\"\n").unwrap();
    let (ok, out) = bellhop(&["--config", config.to_str().unwrap(), "plugins"]);
    assert!(!ok);
    assert!(
        out.contains("unknown field `plugn`") && out.contains("bellhop.toml"),
        "{out}"
    );
}
