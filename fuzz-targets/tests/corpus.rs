//! Each fuzz target over its seed corpus and a fixed number of mutations of each seed
//! (flipped, inserted and removed bytes, truncations), from a fixed RNG seed: the brief
//! run CI makes of every target. `scripts/fuzz.sh N` runs them under libFuzzer.

use std::path::PathBuf;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MUTATIONS_PER_SEED: usize = 1000;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the seed corpus {} is missing: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no seeds", dir.display());
    files.into_iter().map(|path| (path.clone(), std::fs::read(path).unwrap())).collect()
}

fn mutate(seed: &[u8], rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let at = rng.gen_range(0..=out.len());
        match rng.gen_range(0..4) {
            0 if at < out.len() => out[at] ^= 1 << rng.gen_range(0..8),
            1 => out.insert(at, rng.gen()),
            2 if at < out.len() => {
                out.remove(at);
            }
            _ => out.truncate(at),
        }
    }
    out
}

fn run(name: &str) {
    let (_, target) = bellhop_fuzz_targets::TARGETS.iter().find(|(n, _)| *n == name).expect("a target");
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for (path, seed) in corpus(name) {
        bellhop_fuzz_targets::run(*target, &seed)
            .unwrap_or_else(|panic| panic!("{name}: {panic}, on {}", path.display()));
        for i in 0..MUTATIONS_PER_SEED {
            let input = mutate(&seed, &mut rng);
            if let Err(panic) = bellhop_fuzz_targets::run(*target, &input) {
                let kept = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-crash-{i}"));
                std::fs::write(&kept, &input).unwrap();
                panic!("{name}: {panic}, on mutation {i} of {}; the input is in {}", path.display(), kept.display());
            }
        }
    }
}

macro_rules! corpus_tests {
    ($($target:ident),*) => {
        $(#[test] fn $target() { run(stringify!($target)); })*
        #[test]
        fn every_target_has_a_test() {
            let names: Vec<&str> = bellhop_fuzz_targets::TARGETS.iter().map(|(n, _)| *n).collect();
            assert_eq!(names, [$(stringify!($target)),*]);
        }
    };
}

corpus_tests!(params_file, filecoin_input, config, submit_request);
