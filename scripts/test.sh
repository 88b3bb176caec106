#!/usr/bin/env bash
# The test command: formatting and lints, every plugin and binary built, then all tests.
# The integration tests load the real plugin files, so the build comes first.
set -euo pipefail
cd "$(dirname "$0")/.."

# The CUDA plugins compile everywhere with NVIDIA's compiler wheels (installed once into a
# cache); their GPU tests check the clear refusal where there is no GPU.
eval "$(scripts/cuda-toolchain.sh)"
# The OpenCL plugin links the ICD loader; its tests run on PoCL where there is no GPU.
scripts/opencl-runtime.sh
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "note: no NVIDIA GPU here: the CUDA tests check that the plugins refuse clearly;" \
        "conformance on a GPU runs through scripts/gpu-bench.sh on the GPU machine"
fi

cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo build --workspace --locked

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"
# One closing line for the whole run, summed over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
