//! Conformance of both CUDA variants on a GPU, of `cuda` with its host memory registered
//! and of `cuda` with a device memory budget too small to keep the bases (streamed in
//! chunks); on every machine, the options' parsing and the clear refusal of a GPU that is
//! not there.

use bellhop_cuda::{gpu_memory, gpus, CudaBackend, Options, Pageable, Pinned, Variant};
use bellhop_plugin_sdk::{
    backend::{open_embedded, BackendBox},
    options, ErrorKind, OpenRequest, PluginError,
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
// With a chunk size set every MSM streams its bases: 100 points split the larger shapes'
// MSMs, and 12 MiB beside the CUDA context holds one G2 chunk's buckets beside a proof's
// buffers.
bellhop_conformance::conformance_tests!(
    cuda_streamed,
    open_with::<Pageable>(0, &streamed("stream_chunk_points = 100")).unwrap(),
    skip_unless = !gpus().is_empty()
);
bellhop_conformance::conformance_tests!(
    cuda_streamed_registered,
    open_with::<Pageable>(0, &streamed("stream_chunk_points = 100\nregister_host_memory = true")).unwrap(),
    skip_unless = !gpus().is_empty()
);

/// `options` with a `device_memory` of 12 MiB more than GPU 0 has in use now (the
/// context, which the budget counts).
fn streamed(options: &str) -> String {
    let memory = gpu_memory(0).unwrap();
    let budget = memory.total_bytes - memory.free_bytes + (12 << 20);
    format!("device_memory = \"{budget}\"\n{options}")
}

#[test]
fn device_memory_options_parse_and_refuse_clearly() {
    let parse = |text: &str| options::parse::<Options>("[backend.options]", text);
    let options = parse("device_memory = \"20GiB\"\nstream_chunk_points = 4096").unwrap();
    assert_eq!(options.device_memory, Some(20 << 30));
    assert_eq!(options.stream_chunk_points.map(|n| n.get()), Some(4096));
    assert_eq!(parse("").unwrap().device_memory, None, "default: the card's free memory");
    let e = parse("device_memory = \"20 GB of it\"").unwrap_err();
    assert!(e.kind == ErrorKind::OPTIONS && e.message.contains("not a size such as"), "{e}");
    let e = parse("device_memory = \"0\"").unwrap_err();
    assert!(e.message.contains("a size of zero"), "{e}");
    let e = parse("stream_chunk_points = 0").unwrap_err();
    assert!(e.message.contains("nonzero"), "{e}");
}

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
