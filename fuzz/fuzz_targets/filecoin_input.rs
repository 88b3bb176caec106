#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bellhop_fuzz_targets::fuzz(bellhop_fuzz_targets::filecoin_input, data));
