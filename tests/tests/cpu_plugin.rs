//! The CPU backend built as a real `.so`, loaded with dlopen, passes conformance.

use bellhop_conformance::{run, seed_from_env};
use bellhop_host::plugins::{Backends, Plugin, Source};
use bellhop_plugin_api::{OpenRequest, ABI_VERSION};
use bellhop_tests::built_library;

#[test]
fn cpu_plugin_passes_conformance() {
    let path = built_library("bellhop_backend_cpu");
    let plugin = Plugin::<Backends>::load(&path).unwrap();
    assert_eq!(plugin.source, Source::File(path));
    assert_eq!(plugin.info.abi, ABI_VERSION);
    assert_eq!(plugin.info.devices.len(), 1);
    let backend = plugin.open(&OpenRequest { device: 0, threads: 2, options: "".into() }).unwrap();
    let report = run(backend.as_ref(), seed_from_env());
    println!("{report}");
    assert!(report.passed(), "{report}");
    assert!(report.results.len() > 100, "the full kit ran");
    // ABI 1.3: the host's memory, across the boundary.
    let memory = backend.memory().unwrap();
    assert!(memory.total_bytes > 0 && memory.free_bytes > 0 && memory.free_bytes <= memory.total_bytes, "{memory:?}");
}
