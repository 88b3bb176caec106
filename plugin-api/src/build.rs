//! Build information for plugins: a helper for `build.rs` and the [`build_info!`] macro.
//!
//! A plugin crate that wants its target triple, profile, features and git revision in
//! `bellhop plugins` calls [`emit`] from its build script; without it those fields read
//! `unknown`.
//!
//! [`build_info!`]: crate::build_info

use std::process::Command;

/// Emits `cargo:rustc-env` lines that [`build_info!`](crate::build_info) reads. Call it
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

/// The [`BuildInfo`](crate::BuildInfo) of the crate this macro is expanded in.
#[macro_export]
macro_rules! build_info {
    () => {
        $crate::BuildInfo {
            crate_name: env!("CARGO_PKG_NAME").into(),
            crate_version: env!("CARGO_PKG_VERSION").into(),
            features: option_env!("BELLHOP_BUILD_FEATURES").unwrap_or("").into(),
            target: option_env!("BELLHOP_BUILD_TARGET").unwrap_or("unknown").into(),
            profile: option_env!("BELLHOP_BUILD_PROFILE").unwrap_or("unknown").into(),
            git_revision: match option_env!("BELLHOP_BUILD_GIT") {
                Some(rev) => $crate::__private::abi_stable::std_types::ROption::RSome(rev.into()),
                None => $crate::__private::abi_stable::std_types::ROption::RNone,
            },
        }
    };
}
