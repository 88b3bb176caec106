#!/usr/bin/env bash
# Builds what scripts/gpu-bench.sh runs on the GPU machine (which has no Rust) and copies
# it into .device-bundle/: the release `bellhop`, every plugin, the CUDA crate's GPU test.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/cuda-toolchain.sh)"
cargo build --release --locked --workspace --exclude bellhop-tests --exclude bellhop-benches
test_bin=$(cargo test --release --locked -p bellhop-cuda --test gpu --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu":
        print(m["executable"])')
rm -rf .device-bundle && mkdir -p .device-bundle
cp target/release/bellhop target/release/libbellhop_*.so .device-bundle/
cp "$test_bin" .device-bundle/cuda-gpu-tests
cp scripts/gpu-bench.sh .device-bundle/
du -sh .device-bundle
