//! Every strategy plugin, loaded from its `.so`, produces the baseline's assignments.

use bellhop_host::plugins::{Plugin, Strategies};
use bellhop_plugin_api::{
    strategy::{Job, Strategy},
    OpenRequest,
};
use bellhop_tests::{build_dir, built_library};

fn open(name: &str, options: &str) -> Box<dyn Strategy> {
    let plugin = Plugin::<Strategies>::load(&built_library(&format!("bellhop_strategy_{name}"))).unwrap();
    assert_eq!(plugin.info.name.as_str(), name);
    plugin.open(&OpenRequest { device: 0, threads: 2, options: options.into() }).unwrap()
}

#[test]
fn all_strategies_produce_identical_assignments() {
    let jobs: Vec<Job> = [("chain:2000", 1), ("sha256-merkle:2", 2), ("poseidon-merkle:10", 3), ("chain:2000", 4)]
        .into_iter()
        .map(|(circuit, seed)| Job { circuit: circuit.into(), seed, input: Default::default() })
        .collect();
    let expected = open("baseline", "").synthesize(&jobs).unwrap().assignments;
    assert_eq!(expected.len(), jobs.len());
    for name in ["presized", "smallvec"] {
        let strategy = open(name, "");
        for round in 0..2 {
            let got = strategy.synthesize(&jobs).unwrap();
            assert!(got.assignments == expected, "{name}, round {round}: assignments differ from baseline");
        }
    }
    let cache = build_dir().join(format!("pce-cache-{}", std::process::id()));
    let options = format!("cache_dir = {:?}", cache.display().to_string());
    let pce = open("pce", &options);
    let first = pce.synthesize(&jobs).unwrap();
    assert!(first.warnings.is_empty(), "{:?}", first.warnings);
    assert!(first.assignments == expected, "pce's recording run differs from baseline");
    let replayed = pce.synthesize(&jobs).unwrap();
    assert!(replayed.assignments == expected, "pce's replay differs from baseline");
    let from_disk = open("pce", &options).synthesize(&jobs).unwrap();
    assert!(from_disk.assignments == expected, "pce's replay from the disk cache differs from baseline");
    std::fs::remove_dir_all(cache).ok();
}
