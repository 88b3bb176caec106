//! Build information for Bellhop plugins, recorded by their build scripts: call [`emit`]
//! from `build.rs`, and `bellhop_plugin_sdk::build_info!()` (which the export macros use)
//! reads it, so that `bellhop plugins` shows the target, profile, features and git
//! revision a plugin was built with; without it those fields read `unknown`. A crate of its
//! own, without dependencies, so that build scripts do not compile the ABI a second time.

use std::process::Command;

/// Emits `cargo:rustc-env` lines that `bellhop_plugin_sdk::build_info!` reads. Call it
/// from a plugin's `build.rs`.
pub fn emit() {
    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=BELLHOP_BUILD_TARGET={}", env("TARGET"));
    println!("cargo:rustc-env=BELLHOP_BUILD_PROFILE={}", env("PROFILE"));
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| k.strip_prefix("CARGO_FEATURE_").map(|f| f.to_lowercase().replace('_', "-")))
        .collect();
    features.sort();
    println!("cargo:rustc-env=BELLHOP_BUILD_FEATURES={}", features.join(","));
    if let Some(rev) = git(&["rev-parse", "--short=12", "HEAD"]) {
        println!("cargo:rustc-env=BELLHOP_BUILD_GIT={rev}");
    }
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/refs/heads");
    }
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
