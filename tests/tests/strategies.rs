//! Every strategy plugin the build made (as the host lists them, not a list kept here),
//! loaded from its `.so`, produces the baseline's assignments.

use bellhop_host::plugins::{file_name, names, Plugin, Strategies};
use bellhop_plugin_sdk::{OpenRequest, PluginKind};
use bellhop_tests::build_dir;

#[test]
fn every_built_strategy_produces_the_baselines_assignments() {
    // pce keeps its recordings under BELLHOP_CACHE_DIR; this is the process's only test.
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("BELLHOP_CACHE_DIR", cache.path());
    let built: Vec<(String, std::path::PathBuf)> = names::<Strategies>(&build_dir())
        .into_iter()
        .map(|name| (build_dir().join(file_name(PluginKind::STRATEGY, &name)), name))
        .filter(|(path, _)| path.exists())
        .map(|(path, name)| (name, path))
        .collect();
    for expected in ["baseline", "pce", "presized", "smallvec"] {
        assert!(built.iter().any(|(n, _)| n == expected), "{expected} is not among the built strategies {built:?}");
    }
    for (name, path) in &built {
        let plugin = Plugin::<Strategies>::load(path).unwrap();
        assert_eq!(plugin.info.name.as_str(), name);
        let strategy = plugin.open(&OpenRequest { device: 0, threads: 2, options: "".into() }).unwrap();
        bellhop_synthesis_kit::assert_same_as_baseline(name, strategy.as_ref());
    }
}
