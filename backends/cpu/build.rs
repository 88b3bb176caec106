//! Compiles `csrc/batch_affine.c` against blst's internal headers, which blst's build
//! script hands to its dependents as `DEP_BLST_C_SRC`.

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=csrc");
    let blst_src = env::var("DEP_BLST_C_SRC").expect("blst's build script sets DEP_BLST_C_SRC");
    let mut cc = cc::Build::new();
    cc.include(&blst_src);
    blst_assembly(&mut cc);
    cc.opt_level(2)
        .flag_if_supported("-mno-avx")
        .flag_if_supported("-fno-builtin")
        .flag_if_supported("-Wno-unused-function")
        .file("csrc/batch_affine.c")
        .compile("bellhop_batch_affine");
}

/// The defines that pick blst's field arithmetic, chosen as blst's own build script
/// chooses them without its `portable` and `force-adx` features (this workspace enables
/// neither), so that the C here calls the assembly blst was built with: the ADX names
/// (`mulx_mont_384`) where the target's features (with `target-cpu` in the flags) or else
/// the build host have ADX.
fn blst_assembly(cc: &mut cc::Build) {
    let var = |name: &str| env::var(name).unwrap_or_default();
    match var("CARGO_CFG_TARGET_ARCH").as_str() {
        "x86_64" => {}
        "aarch64" => return,
        _ => {
            cc.define("__BLST_NO_ASM__", None);
            return;
        }
    }
    if var("CARGO_CFG_TARGET_ENV") == "sgx" {
        cc.define("__ADX__", None);
    } else if var("CARGO_ENCODED_RUSTFLAGS").contains("target-cpu=") {
        let features = var("CARGO_CFG_TARGET_FEATURE");
        let features: Vec<&str> = features.split(',').collect();
        if !features.contains(&"ssse3") {
            cc.define("__BLST_PORTABLE__", None);
        } else if features.contains(&"adx") {
            cc.define("__ADX__", None);
        }
    } else {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("adx") {
            cc.define("__ADX__", None);
        }
    }
}
