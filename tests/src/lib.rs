//! Helpers for the integration tests: where the built plugin files are.
//!
//! The tests load the real `.so` files that `cargo build --workspace` puts in the target
//! directory; `scripts/test.sh` builds them before it runs the tests.

pub mod curio;
pub mod daemon;

use std::path::PathBuf;

/// The directory cargo put the plugins and the `bellhop` binary in (`target/debug`).
pub fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    // target/debug/deps/<test> -> target/debug
    exe.parent().and_then(|deps| deps.parent()).expect("tests run from target/<profile>/deps").to_path_buf()
}

/// The built shared library of lib name `lib_name`, e.g. `bellhop_backend_cpu`.
pub fn built_library(lib_name: &str) -> PathBuf {
    let path = build_dir().join(format!("{}{lib_name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX));
    assert!(
        path.exists(),
        "{} is not built: run `scripts/test.sh`, which builds every plugin before the tests",
        path.display()
    );
    path
}
