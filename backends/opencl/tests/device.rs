//! The OpenCL backend on this machine's OpenCL devices (PoCL in CI): conformance, and the
//! compiled-program cache (cold, warm, corrupt). Without any OpenCL device, the clear refusal.

use bellhop_conformance::{run_suite, Suite};
use bellhop_opencl::{cache, devices, DeviceEntry, OpenCl};
use bellhop_plugin_sdk::{
    backend::{open_embedded, seam, BackendPlugin},
    ErrorKind, OpenRequest,
};

/// The device the tests use: the one whose name contains `BELLHOP_OPENCL_DEVICE`, else the first.
fn device() -> Option<DeviceEntry> {
    let all = devices();
    match std::env::var("BELLHOP_OPENCL_DEVICE") {
        Ok(name) => {
            let wanted = name.to_lowercase();
            let found = all.into_iter().find(|d| format!("{} {}", d.name, d.platform).to_lowercase().contains(&wanted));
            Some(found.unwrap_or_else(|| panic!("no OpenCL device matches BELLHOP_OPENCL_DEVICE={name}")))
        }
        Err(_) => all.into_iter().next(),
    }
}

fn skipped() -> bool {
    if device().is_some() {
        return false;
    }
    bellhop_conformance::cannot_check_here(
        "opencl conformance needs an OpenCL device and this machine has none (scripts/opencl-runtime.sh installs \
         PoCL); checking the refusal instead",
    );
    let request = OpenRequest { device: 0, threads: 0, options: "".into() };
    let error = open_embedded::<OpenCl>(&request).err().expect("open must fail without a device");
    assert_eq!(error.kind, ErrorKind::NO_DEVICE);
    assert!(error.message.contains("found no OpenCL device") && error.message.contains("fallback"), "{error}");
    true
}

/// The conformance suites on the chosen device, with a program cache the four tests share.
fn conformance_backend() -> OpenCl {
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("opencl-conformance-cache");
    std::fs::create_dir_all(&cache).unwrap();
    OpenCl::new(device().unwrap(), &cache).unwrap()
}

bellhop_conformance::conformance_tests!(opencl, conformance_backend(), skip_unless = device().is_some());

#[test]
fn program_cache_is_used_and_rebuilt_when_damaged() {
    if skipped() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let entry = device().unwrap();
    let cold = OpenCl::new(entry.clone(), dir.path()).unwrap();
    assert!(cold.program_origin().compiled, "an empty cache compiles");
    assert!(cold.program_origin().warnings.is_empty(), "{:?}", cold.program_origin().warnings);
    drop(cold);
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "one program file: {files:?}");

    let warm = OpenCl::new(entry.clone(), dir.path()).unwrap();
    assert!(!warm.program_origin().compiled, "a warm cache loads the binary: {:?}", warm.program_origin());
    assert!(warm.program_origin().warnings.is_empty(), "{:?}", warm.program_origin().warnings);
    drop(warm);

    // Truncated, then a flipped byte: each is reported, rebuilt, and the rebuilt file works.
    let good = std::fs::read(&files[0]).unwrap();
    for (damage, expected) in [(good[..good.len() / 2].to_vec(), "truncated"), (flipped(&good), "checksum")] {
        std::fs::write(&files[0], damage).unwrap();
        let rebuilt = OpenCl::new(entry.clone(), dir.path()).unwrap();
        let warnings = &rebuilt.program_origin().warnings;
        assert!(rebuilt.program_origin().compiled);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("is unusable") && warnings[0].contains(expected), "{warnings:?}");
        assert!(warnings[0].contains("rebuilding it"), "{warnings:?}");
        let rebuilt = seam(rebuilt);
        let report = run_suite(&rebuilt, Suite::Ntt, 1);
        assert!(report.passed(), "{report}");
        drop(rebuilt);
        let again = OpenCl::new(entry.clone(), dir.path()).unwrap();
        assert!(!again.program_origin().compiled, "the rebuilt file is used: {:?}", again.program_origin());
        assert!(again.program_origin().warnings.is_empty(), "{:?}", again.program_origin().warnings);
    }
    let key_file = cache::path(dir.path(), &entry.program_key(&bellhop_opencl::source()));
    assert_eq!(files[0], key_file, "the file is named by the program's key");
}

fn flipped(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let middle = out.len() / 2;
    out[middle] ^= 0x40;
    out
}

#[test]
fn devices_are_chosen_by_name_or_index() {
    if skipped() {
        return;
    }
    let count = devices().len() as u32;
    let dir = tempfile::tempdir().unwrap();
    let options = |extra: &str| format!("cache_dir = {:?}\n{extra}", dir.path().display().to_string());
    let request = OpenRequest { device: count, threads: 0, options: options("").as_str().into() };
    let e = open_embedded::<OpenCl>(&request).err().unwrap();
    assert_eq!(e.kind, ErrorKind::NO_DEVICE);
    assert!(e.message.contains(&format!("device {count} does not exist")), "{e}");
    let request =
        OpenRequest { device: 0, threads: 0, options: options("device_name = \"no such device\"").as_str().into() };
    let e = open_embedded::<OpenCl>(&request).err().unwrap();
    assert!(e.message.contains("no OpenCL device's name contains \"no such device\""), "{e}");
    let name = device().unwrap().name;
    let request = OpenRequest {
        device: count + 5,
        threads: 0,
        options: options(&format!("device_name = {name:?}")).as_str().into(),
    };
    let options = bellhop_plugin_sdk::options::parse("[backend.options]", &request.options).unwrap();
    let backend = <OpenCl as BackendPlugin>::open(&request, options).unwrap();
    assert!(backend.device_name().contains(&name));
}
