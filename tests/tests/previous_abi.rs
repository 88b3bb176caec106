//! A plugin built for an older minor ABI is refused, with a message naming both versions
//! and the fix. `tests/fixtures/previous-abi/template-abi-1.3.so` is the template backend
//! built from the source of the last commit before `bellhop-plugin-api` was split into the
//! frozen ABI crate and the SDK (ABI 1.3; rebuilt by `scripts/previous-abi-plugin.sh`).
//! Hosts of ABI 1.3 load it and pass it through conformance; this host speaks a newer
//! minor (1.4 added `proof_msms`), and `abi_stable` cannot load a plugin of an older minor, so the host
//! refuses it by its header first.

use std::{path::Path, process::Command};

use bellhop_host::plugins::{Backends, LoadError, Plugin};
use bellhop_plugin_sdk::{AbiVersion, ABI_VERSION};
use bellhop_tests::build_dir;

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/previous-abi/template-abi-1.3.so")
}

#[test]
fn a_plugin_of_an_older_minor_abi_is_refused_by_its_header() {
    match Plugin::<Backends>::load(&fixture()) {
        Err(e @ LoadError::AbiMismatch { found, host, .. }) => {
            assert_eq!((found, host), (AbiVersion { major: 1, minor: 3 }, ABI_VERSION));
            let message = e.to_string();
            assert!(message.contains("ABI 1.3") && message.contains("rebuild the plugin"), "{message}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a plugin of ABI 1.3 was loaded by a host of ABI {ABI_VERSION}"),
    }
}

#[test]
fn conformance_says_why_it_cannot_check_it() {
    let out = Command::new(build_dir().join("bellhop"))
        .arg("conformance")
        .arg(fixture())
        .env("BELLHOP_PLUGIN_DIR", build_dir())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("built for plugin ABI 1.3"), "{stderr}");
}
