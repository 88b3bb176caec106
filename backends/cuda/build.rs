//! Compiles `cuda/bellhop_cuda.cu` with nvcc through sppark's build helper.

fn main() {
    println!("cargo:rerun-if-changed=cuda");
    // Without nvcc, bellhop-cuda-devices (a dependency, built first) has refused already.
    let mut nvcc = sppark::build::ccmd();
    // Optimised device code in every profile: nvcc's device debug info (`-G`, which cc adds
    // in debug builds) turns off device optimisation and triples the compile time.
    nvcc.debug(false);
    nvcc.define("FEATURE_BLS12_381", None);
    // sppark's host-side field code calls blst's assembly under the names blst chose when
    // it was built: the ADX ones (`mulx_mont_384`) where blst detected ADX, as it does here.
    #[cfg(target_arch = "x86_64")]
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") && std::is_x86_feature_detected!("adx") {
        nvcc.define("__ADX__", None);
    }
    // Hopper (H100, H200) as native code, so the first call needs no JIT compile.
    nvcc.flag("-gencode").flag("arch=compute_90,code=sm_90");
    nvcc.file("cuda/bellhop_cuda.cu").compile("bellhop_cuda");
}
