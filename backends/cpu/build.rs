//! Compiles `csrc/batch_affine.c` against blst's internal headers, which blst's build
//! script hands to its dependents as `DEP_BLST_C_SRC`.

fn main() {
    println!("cargo:rerun-if-changed=csrc");
    let blst_src = std::env::var("DEP_BLST_C_SRC").expect("blst's build script sets DEP_BLST_C_SRC");
    let mut cc = cc::Build::new();
    cc.include(&blst_src);
    // blst's field arithmetic is assembly under the names blst chose when it was built:
    // the ADX ones (`mulx_mont_384`) where it detected ADX on the build host, as here.
    #[cfg(target_arch = "x86_64")]
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") && std::is_x86_feature_detected!("adx") {
        cc.define("__ADX__", None);
    }
    if std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch != "x86_64" && arch != "aarch64") {
        cc.define("__BLST_NO_ASM__", None);
    }
    cc.opt_level(2)
        .flag_if_supported("-mno-avx")
        .flag_if_supported("-fno-builtin")
        .flag_if_supported("-Wno-unused-function")
        .file("csrc/batch_affine.c")
        .compile("bellhop_batch_affine");
}
