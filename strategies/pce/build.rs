//! Build info, and the digest of what shapes the circuits pce records: the catalog's
//! source and the locked version of every crate the catalog depends on. A recording made
//! by a build with another digest is never replayed.

use std::{
    collections::{BTreeSet, HashMap},
    fs,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

fn main() {
    bellhop_plugin_build::emit();
    let root = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("../..");
    let (lock, circuits) = (root.join("Cargo.lock"), root.join("circuits"));
    println!("cargo:rerun-if-changed={}", lock.display());
    println!("cargo:rerun-if-changed={}", circuits.display());
    let mut digest = Sha256::new();
    for package in locked_closure(&lock, "bellhop-circuits") {
        digest.update(package.as_bytes());
        digest.update(b"\n");
    }
    for file in source_files(&circuits) {
        digest.update(file.strip_prefix(&circuits).expect("below it").to_string_lossy().as_bytes());
        digest.update(fs::read(&file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display())));
    }
    let hex: String = digest.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=BELLHOP_PCE_CIRCUITS_DIGEST={hex}");
}

/// `name version source checksum` of `root` and of every package it depends on, as
/// Cargo.lock pins them, sorted.
fn locked_closure(lock: &Path, root: &str) -> BTreeSet<String> {
    let text = fs::read_to_string(lock).unwrap_or_else(|e| panic!("cannot read {}: {e}", lock.display()));
    let table: toml::Table = text.parse().unwrap_or_else(|e| panic!("{} is not TOML: {e}", lock.display()));
    let packages = table["package"].as_array().expect("Cargo.lock lists packages");
    let field = |p: &toml::Value, key: &str| p.get(key).and_then(|v| v.as_str()).unwrap_or("").to_string();
    let mut by_name: HashMap<String, Vec<&toml::Value>> = HashMap::new();
    for p in packages {
        by_name.entry(field(p, "name")).or_default().push(p);
    }
    // A dependency is `name` when one version is locked, else `name version`.
    let find = |dep: &str| -> &toml::Value {
        let mut words = dep.split(' ');
        let (name, version) = (words.next().unwrap_or(""), words.next());
        by_name[name].iter().find(|p| version.map_or(true, |v| field(p, "version") == v)).expect("locked")
    };
    let (mut seen, mut stack) = (BTreeSet::new(), vec![find(root)]);
    while let Some(p) = stack.pop() {
        let entry = ["name", "version", "source", "checksum"].map(|k| field(p, k)).join(" ");
        if seen.insert(entry) {
            let deps = p.get("dependencies").and_then(|d| d.as_array()).into_iter().flatten();
            stack.extend(deps.filter_map(|d| d.as_str()).map(find));
        }
    }
    seen
}

/// The Rust sources and manifests under `dir`, sorted.
fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") || path.ends_with("Cargo.toml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
