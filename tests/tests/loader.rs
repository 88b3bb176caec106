//! The loader's errors, each asserted by its message, against real files.

use bellhop_host::plugins::{Backends, Plugin, Source, Strategies};
use bellhop_plugin_sdk::{types::Fr, ErrorKind, OpenRequest, ABI_VERSION};
use bellhop_tests::{build_dir, built_library};

fn load_error<S: bellhop_host::plugins::Seam>(path: &std::path::Path) -> String {
    match Plugin::<S>::load(path) {
        Ok(_) => panic!("{} loaded, but it must be refused", path.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn missing_file() {
    let path = build_dir().join("libbellhop_backend_nothing_here.so");
    let e = load_error::<Backends>(&path);
    assert!(e.contains("does not exist") && e.contains("nothing_here"), "{e}");
}

#[test]
fn unknown_name_lists_what_exists() {
    let e = Plugin::<Backends>::find("cdua", &build_dir()).err().expect("no such backend").to_string();
    assert!(e.contains("no backend plugin named `cdua`"), "{e}");
    assert!(e.contains("libbellhop_backend_cdua"), "{e}");
    assert!(e.contains("available backends: cpu"), "{e}");
}

#[test]
fn listing_names_loads_no_library() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = build_dir().join("listing-test-files");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("libbellhop_backend_listed_only.so");
    std::fs::copy(built_library("bellhop_backend_cpu"), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let future = dir.join("libbellhop_backend_from_the_future.so");
    std::fs::copy(built_library("fixture_future_abi"), &future).unwrap();
    std::fs::set_permissions(&future, std::fs::Permissions::from_mode(0o755)).unwrap();

    let e = Plugin::<Backends>::find("cdua", &dir).err().expect("no such backend").to_string();
    assert!(e.contains("available backends: cpu, listed-only."), "another ABI is not listed: {e}");
    assert!(bellhop_host::plugins::read_kind(&copy).unwrap() == bellhop_plugin_sdk::PluginKind::BACKEND);
    let mapped = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(!mapped.contains("listed_only") && !mapped.contains("from_the_future"), "a listed file was loaded");
}

#[test]
fn not_a_shared_library() {
    let dir = build_dir().join("loader-test-files");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("libbellhop_backend_text.so");
    std::fs::write(&path, "this is a text file, not an ELF object\n").unwrap();
    let e = load_error::<Backends>(&path);
    assert!(e.contains("is not a loadable shared library"), "{e}");
}

#[test]
fn shared_library_that_is_not_a_plugin() {
    let e = load_error::<Backends>(&built_library("fixture_not_a_plugin"));
    assert!(e.contains("is a shared library but not a Bellhop plugin"), "{e}");
    assert!(e.contains("exports no BELLHOP_PLUGIN_HEADER"), "{e}");
}

#[test]
fn backend_where_a_strategy_is_expected() {
    let e = load_error::<Strategies>(&built_library("bellhop_backend_cpu"));
    assert!(e.contains("is a backend plugin, but a strategy is expected here"), "{e}");
    assert!(e.contains("[backend] plugin"), "{e}");
}

#[test]
fn abi_version_mismatch() {
    let e = load_error::<Backends>(&built_library("fixture_future_abi"));
    assert!(e.contains(&format!("was built for plugin ABI 99.0, but this bellhop speaks ABI {ABI_VERSION}")), "{e}");
    assert!(e.contains("rebuild the plugin against this bellhop-plugin-sdk"), "{e}");
}

#[test]
fn open_of_a_device_that_does_not_exist() {
    let plugin = Plugin::<Backends>::load(&built_library("bellhop_backend_cpu")).unwrap();
    let request = OpenRequest { device: 7, threads: 1, options: "".into() };
    let e = plugin.open(&request).err().expect("device 7 does not exist").to_string();
    assert!(e.contains("backend `cpu`") && e.contains("could not open device 7"), "{e}");
    assert!(e.contains("device 7 does not exist: the cpu backend has one device, 0"), "{e}");
}

#[test]
fn open_with_an_unknown_option() {
    let plugin = Plugin::<Backends>::load(&built_library("bellhop_backend_cpu")).unwrap();
    let request = OpenRequest { device: 0, threads: 1, options: "pinned = true".into() };
    let e = plugin.open(&request).err().expect("the cpu backend takes no options");
    assert_eq!(e.error.kind, ErrorKind::OPTIONS);
    assert!(e.to_string().contains("unknown field `pinned`"), "{e}");
}

#[test]
fn panics_stop_at_the_boundary() {
    let plugin = Plugin::<Backends>::load(&built_library("fixture_panicking_backend")).unwrap();
    let backend = plugin.open(&OpenRequest { device: 0, threads: 1, options: "".into() }).unwrap();
    for _ in 0..2 {
        let e = backend.msm_g1(&[], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::PANIC);
        assert!(e.message.contains("panicked in `msm_g1`: msm_g1 exploded on purpose"), "{e}");
    }
    let one = || [Fr::default()];
    let e = backend.compute_h(&mut one(), &mut one(), &mut one()).unwrap_err();
    assert!(e.message.contains("compute_h exploded on purpose"), "{e}");
}

#[test]
fn loading_twice_gives_the_same_plugin() {
    let path = built_library("bellhop_backend_cpu");
    let a = Plugin::<Backends>::load(&path).unwrap();
    let b = Plugin::<Backends>::find(path.to_str().unwrap(), &build_dir()).unwrap();
    assert_eq!(a.source, Source::File(path));
    assert_eq!(a.source, b.source);
    assert_eq!(a.info.name.as_str(), "cpu");
}

#[test]
fn strategy_where_a_backend_is_expected() {
    let e = load_error::<Backends>(&built_library("bellhop_strategy_baseline"));
    assert!(e.contains("is a strategy plugin, but a backend is expected here"), "{e}");
    assert!(e.contains("[synthesis] strategy"), "{e}");
}

#[test]
fn a_plugin_file_others_may_write_is_refused_through_a_link_too() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = build_dir().join("loader-test-files");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("libbellhop_backend_open_to_all.so");
    std::fs::copy(built_library("bellhop_backend_cpu"), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o777)).unwrap();
    // The check is of the file a link names, which is the file loaded.
    let link = dir.join("libbellhop_backend_link.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&copy, &link).unwrap();
    for path in [&copy, &link] {
        let e = load_error::<Backends>(path);
        assert!(e.contains("is writable by other users") && e.contains("chmod go-w"), "{e}");
        assert!(e.contains("open_to_all"), "the message names the file the link resolves to: {e}");
    }
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(Plugin::<Backends>::load(&link).unwrap().info.name.as_str(), "cpu");
}

#[test]
fn a_plugin_file_another_user_owns_is_refused() {
    let dir = build_dir().join("loader-test-files");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("libbellhop_backend_owned_by_nobody.so");
    std::fs::copy(built_library("bellhop_backend_cpu"), &copy).unwrap();
    // Giving a file away takes root.
    if std::os::unix::fs::chown(&copy, Some(65534), None).is_err() {
        eprintln!("note: not root here, so a plugin file owned by another user could not be made; not checked");
        return;
    }
    let e = load_error::<Backends>(&copy);
    assert!(e.contains("belongs to user 65534") && e.contains("chown root"), "{e}");
    std::os::unix::fs::chown(&copy, Some(0), None).unwrap();
    assert_eq!(Plugin::<Backends>::load(&copy).unwrap().info.name.as_str(), "cpu");
}
