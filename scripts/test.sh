#!/usr/bin/env bash
# The test command: formatting, then every target built once with clippy's lints (warnings
# are errors), then all tests. The integration tests load the real plugin files, so the
# build comes first.
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
    # No device code runs here, so it is built for one architecture (see the script).
    export NVCC="$PWD/scripts/nvcc-one-arch.sh"
fi

start=$SECONDS
step() { echo "== $1 (at $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s)"; }

step "rustfmt"
cargo fmt --all --check

# Clippy's driver compiles the workspace's own crates in place of rustc, so one build both
# lints and produces what the tests run (`cargo clippy` would check every crate a second
# time). The same two variables stay set for `cargo test`, or it would rebuild everything.
export RUSTC_WORKSPACE_WRAPPER
RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver) || {
    echo "error: clippy-driver not found; install it with: rustup component add clippy" >&2
    exit 1
}
export CLIPPY_ARGS=-Dwarnings

step "build every target, linted"
cargo build --workspace --all-targets --locked

step "tests"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"
step "done"
# One closing line for the whole run, summed over every test binary.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed/) p += $(i-1); if ($i ~ /^failed/) f += $(i-1) } }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
