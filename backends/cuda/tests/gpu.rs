//! Conformance of both CUDA variants on a GPU, and of `cuda` with its host memory
//! registered; on every machine, the clear refusal of a GPU that is not there.

use bellhop_cuda::{gpus, CudaBackend, Pageable, Pinned, Variant};
use bellhop_plugin_sdk::{
    backend::{open_embedded, BackendBox},
    ErrorKind, OpenRequest, PluginError,
};

fn open<V: Variant>(device: u32) -> Result<BackendBox, PluginError> {
    open_with::<V>(device, "")
}

fn open_with<V: Variant>(device: u32, options: &str) -> Result<BackendBox, PluginError> {
    open_embedded::<CudaBackend<V>>(&OpenRequest { device, threads: 0, options: options.into() })
}

bellhop_conformance::conformance_tests!(cuda, open::<Pageable>(0).unwrap(), skip_unless = !gpus().is_empty());
bellhop_conformance::conformance_tests!(cuda_pinned, open::<Pinned>(0).unwrap(), skip_unless = !gpus().is_empty());
bellhop_conformance::conformance_tests!(
    cuda_registered,
    open_with::<Pageable>(0, "register_host_memory = true").unwrap(),
    skip_unless = !gpus().is_empty()
);

/// Without a GPU, open says so and names the fix; with one, the device past the last is
/// refused and device 0 reports its memory.
fn absent_devices_are_refused_clearly<V: Variant>() {
    let count = gpus().len() as u32;
    let error = open::<V>(count).err().expect("a device past the last must be refused");
    assert_eq!(error.kind, ErrorKind::NO_DEVICE);
    if count == 0 {
        assert!(error.message.contains("found no CUDA GPU"), "{error}");
        assert!(error.message.contains("fallback"), "the message should name the fix: {error}");
        return;
    }
    let memory = open::<V>(0).unwrap().memory().unwrap();
    assert!(memory.total_bytes == gpus()[0].memory_bytes && memory.free_bytes <= memory.total_bytes, "{memory:?}");
}

#[test]
fn cuda_refuses_absent_devices_clearly() {
    absent_devices_are_refused_clearly::<Pageable>();
}

#[test]
fn cuda_pinned_refuses_absent_devices_clearly() {
    absent_devices_are_refused_clearly::<Pinned>();
}
