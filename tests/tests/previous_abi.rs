//! Plugins built before `bellhop-plugin-api` was split into the frozen ABI crate and the
//! SDK still load. The template backend is built from the source of [`PREVIOUS`] (ABI 1.3,
//! the last commit before the split) into this build's target directory, so that cargo
//! reuses the dependencies already built (a strategy would pull in the circuits, whose
//! build tools are built with other features outside this workspace: minutes more), and
//! this build's `bellhop conformance` loads it and checks every primitive.

use std::{
    path::Path,
    process::{Command, Stdio},
};

use bellhop_conformance::cannot_check_here;
use bellhop_tests::{build_dir, built_library};

/// The last commit whose plugins were built against the unsplit `bellhop-plugin-api`.
const PREVIOUS: &str = "8822e7d6686c38c3dcc5cbd571d4d73543bf38e1";

/// The backend built from [`PREVIOUS`]: its manifest, package and lib name there, and the
/// lib name it gets here so that it does not overwrite this build's template.
const MANIFEST: &str = "backends/template/Cargo.toml";
const PACKAGE: &str = "bellhop-backend-template";
const LIB: &str = "bellhop_backend_template";
const RENAMED: &str = "previous_abi_backend_template";

#[test]
fn a_backend_built_before_the_split_still_loads() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the tests crate is in the workspace");
    let known = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["cat-file", "-e", &format!("{PREVIOUS}^{{commit}}")])
        .status()
        .is_ok_and(|s| s.success());
    if !known {
        cannot_check_here(&format!(
            "commit {PREVIOUS} is not in this checkout's history (a shallow clone? `git fetch --unshallow` fetches it)"
        ));
        return;
    }

    let source = build_dir().join("previous-abi-source");
    let _ = std::fs::remove_dir_all(&source);
    std::fs::create_dir_all(&source).unwrap();
    let mut archive =
        Command::new("git").arg("-C").arg(repo).args(["archive", PREVIOUS]).stdout(Stdio::piped()).spawn().unwrap();
    let untar = Command::new("tar").arg("-xC").arg(&source).stdin(archive.stdout.take().unwrap()).status().unwrap();
    assert!(archive.wait().unwrap().success() && untar.success(), "extracting {PREVIOUS} failed");

    let manifest = source.join(MANIFEST);
    let text = std::fs::read_to_string(&manifest).unwrap();
    let lib = format!("name = \"{LIB}\"");
    assert!(text.contains(&lib), "{MANIFEST} at {PREVIOUS} names no lib `{LIB}`");
    std::fs::write(&manifest, text.replace(&lib, &format!("name = \"{RENAMED}\""))).unwrap();

    // The old source is built as it was written, not linted by this build's clippy.
    let target = build_dir().parent().unwrap().to_path_buf();
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(&source)
        .args(["build", "--locked", "-p", PACKAGE, "--target-dir"])
        .arg(target)
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .status();
    assert!(status.unwrap().success(), "building {PACKAGE} of {PREVIOUS} failed");

    let backend = built_library(RENAMED);
    let out = Command::new(build_dir().join("bellhop"))
        .arg("conformance")
        .arg(&backend)
        .env("BELLHOP_PLUGIN_DIR", build_dir())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && report.contains(" passed, 0 failed"),
        "the backend built from {PREVIOUS} failed conformance:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
