//! A plugin built before `bellhop-plugin-api` was split into the frozen ABI crate and the
//! SDK still loads: `tests/fixtures/previous-abi/template-abi-1.3.so` is the template
//! backend built from the source of the last commit before the split (ABI 1.3; rebuilt by
//! `scripts/previous-abi-plugin.sh`), and this build's `bellhop conformance` loads it and
//! checks every primitive.

use std::{path::Path, process::Command};

use bellhop_host::plugins::{Backends, Plugin};
use bellhop_plugin_sdk::AbiVersion;
use bellhop_tests::build_dir;

/// The last commit whose plugins were built against the unsplit `bellhop-plugin-api`, as
/// the fixture's build info names it (12 digits).
const PREVIOUS: &str = "8822e7d6686c";

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/previous-abi/template-abi-1.3.so")
}

#[test]
fn the_fixture_was_built_from_the_previous_source() {
    let plugin = Plugin::<Backends>::load(&fixture()).unwrap();
    assert_eq!(plugin.info.abi, AbiVersion { major: 1, minor: 3 });
    assert_eq!(plugin.info.build.git_revision.as_ref().map(|r| r.as_str()).into_option(), Some(PREVIOUS));
    assert_eq!(plugin.info.build.profile.as_str(), "release");
}

#[test]
fn a_backend_built_before_the_split_passes_conformance() {
    let out = Command::new(build_dir().join("bellhop"))
        .arg("conformance")
        .arg(fixture())
        .env("BELLHOP_PLUGIN_DIR", build_dir())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && report.contains(" passed, 0 failed"),
        "the template built from {PREVIOUS} failed conformance:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
