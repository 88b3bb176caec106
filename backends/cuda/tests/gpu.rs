//! Conformance of both CUDA variants on a GPU; where there is none, the clear refusal.

use bellhop_conformance::{run_suite, seed_from_env, Suite};
use bellhop_cuda::{gpus, CudaBackend, Variant};
use bellhop_plugin_api::{backend::open_embedded, ErrorKind, OpenRequest};

fn check<V: Variant>() {
    if gpus().is_empty() {
        bellhop_conformance::cannot_check_here(&format!(
            "{} conformance needs a CUDA GPU and this machine has none; checking that it refuses clearly instead",
            V::NAME
        ));
        let request = OpenRequest { device: 0, threads: 0, options: "".into() };
        let error = open_embedded::<CudaBackend<V>>(&request).err().expect("open must fail without a GPU");
        assert_eq!(error.kind, ErrorKind::NO_DEVICE);
        assert!(error.message.contains("found no CUDA GPU"), "{error}");
        assert!(error.message.contains("fallback"), "the message should name the fix: {error}");
        return;
    }
    let request = OpenRequest { device: 0, threads: 0, options: "".into() };
    let backend = open_embedded::<CudaBackend<V>>(&request).unwrap();
    let seed = seed_from_env();
    for suite in Suite::ALL {
        let report = run_suite(&backend, suite, seed);
        println!("{} {suite:?}:\n{report}", V::NAME);
        assert!(report.passed(), "{} failed {suite:?} conformance:\n{report}", V::NAME);
    }
    let memory = backend.memory().unwrap();
    assert!(memory.total_bytes == gpus()[0].memory_bytes && memory.free_bytes <= memory.total_bytes, "{memory:?}");
    let request = OpenRequest { device: gpus().len() as u32, threads: 0, options: "".into() };
    let error = open_embedded::<CudaBackend<V>>(&request).err().expect("a device past the last must be refused");
    assert_eq!(error.kind, ErrorKind::NO_DEVICE);
}

#[test]
fn cuda_conforms_or_refuses_clearly() {
    check::<bellhop_cuda::Pageable>();
}

#[test]
fn cuda_pinned_conforms_or_refuses_clearly() {
    check::<bellhop_cuda::Pinned>();
}
