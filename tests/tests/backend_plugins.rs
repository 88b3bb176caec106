//! Every backend plugin the build made, as `bellhop plugins --json` lists them (not a list
//! kept here): each passes `bellhop conformance` on its device 0 or, listing no device on
//! this machine, says so and refuses to open with a clear error. And what the CPU plugin,
//! a real `.so`, says of itself across the ABI.

use std::{path::Path, process::Command};

use bellhop_conformance::cannot_check_here;
use bellhop_host::plugins::{Backends, Plugin, Source};
use bellhop_plugin_sdk::{ErrorKind, OpenRequest, ABI_VERSION};
use bellhop_tests::{build_dir, built_library};

/// Runs the built `bellhop` with the build directory as its plugin directory: (success,
/// stdout, stderr).
fn bellhop(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(build_dir().join("bellhop"))
        .args(args)
        .env("BELLHOP_PLUGIN_DIR", build_dir())
        .output()
        .expect("the bellhop binary is built");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn every_built_backend_passes_conformance_or_refuses_clearly() {
    let (ok, listing, errors) = bellhop(&["plugins", "--json"]);
    assert!(ok, "{listing}{errors}");
    let listing: serde_json::Value = serde_json::from_str(&listing).unwrap();
    let built: Vec<(&str, &str, bool)> = listing["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "backend" && p["source"] != "embedded")
        .map(|p| {
            (p["name"].as_str().unwrap(), p["source"].as_str().unwrap(), !p["devices"].as_array().unwrap().is_empty())
        })
        .collect();
    for expected in ["cpu", "cuda", "cuda-pinned", "cuda-supraseal", "opencl", "template"] {
        assert!(
            built.iter().any(|(name, ..)| *name == expected),
            "{expected} is not among the built backends {built:?}"
        );
    }
    for (name, source, lists_devices) in built {
        if !lists_devices {
            cannot_check_here(&format!("{name} lists no device on this machine: checking that it refuses to open"));
            let plugin = Plugin::<Backends>::load(Path::new(source)).unwrap();
            let e = plugin.open(&OpenRequest { device: 0, threads: 1, options: "".into() }).err().unwrap();
            assert_eq!(e.error.kind, ErrorKind::NO_DEVICE, "{name}: {e}");
            assert!(e.error.message.contains("fallback"), "{name}'s refusal names the fix: {e}");
            continue;
        }
        let (ok, report, errors) = bellhop(&["conformance", source]);
        assert!(ok && report.contains(" passed, 0 failed"), "{name} failed conformance:\n{report}{errors}");
    }
}

#[test]
fn the_cpu_plugin_crosses_the_abi() {
    let path = built_library("bellhop_backend_cpu");
    let plugin = Plugin::<Backends>::load(&path).unwrap();
    assert_eq!(plugin.source, Source::File(path));
    assert_eq!(plugin.info.abi, ABI_VERSION);
    assert_eq!(plugin.info.devices.len(), 1);
    let backend = plugin.open(&OpenRequest { device: 0, threads: 2, options: "".into() }).unwrap();
    // ABI 1.3: the host's memory, across the boundary.
    let memory = backend.memory().unwrap();
    assert!(memory.total_bytes > 0 && memory.free_bytes > 0 && memory.free_bytes <= memory.total_bytes, "{memory:?}");
}
