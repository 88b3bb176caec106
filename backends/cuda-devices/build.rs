//! Compiles `cuda/devices.cu` (the GPU list, no kernels) with nvcc through sppark's build helper.

fn main() {
    println!("cargo:rerun-if-changed=cuda");
    // sppark's own build script finds nvcc and says so through `links` metadata.
    if std::env::var("DEP_SPPARK_TARGET").as_deref() != Ok("cuda") {
        eprintln!(
            "error: Bellhop's CUDA backends need nvcc 13 on PATH when sppark is built. Install it with\n\
             \n    eval \"$(scripts/cuda-toolchain.sh)\"\n\n\
             (NVIDIA's compiler wheels from PyPI; no GPU needed), then `cargo clean -p sppark` and build again."
        );
        std::process::exit(1);
    }
    // No device debug code (`-G`, which cc adds in debug builds): it triples nvcc's time.
    sppark::build::ccmd().debug(false).file("cuda/devices.cu").compile("bellhop_cuda_devices");
}
